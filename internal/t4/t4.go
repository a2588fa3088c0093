package t4

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kerntune/kerntune/internal/trace"
	"github.com/kerntune/kerntune/params/paramfile"
)

// SchemaVersion is the version of the T4 results schema written.
const SchemaVersion = "1.0.0"

// TimeUnit is metadata.timeunit as Kernel Tuner writes it since late 2024
// (before, "miliseconds"; Parse reads both); every time is in
// milliseconds.
const TimeUnit = "milliseconds"

// File is a T4 results document.
type File struct {
	SchemaVersion string   `json:"schema_version"`
	Metadata      Metadata `json:"metadata"`
	Results       []Result `json:"results"`
}

// Metadata is the document's metadata; readers need only TimeUnit.
type Metadata struct {
	TimeUnit  string `json:"timeunit"`
	Generator string `json:"generator,omitempty"`
	Source    string `json:"source,omitempty"`
}

// Result is one configuration's outcome.
type Result struct {
	Timestamp string `json:"timestamp,omitempty"`
	// Configuration holds each parameter's value as JSON (numbers, or
	// strings in other tools' files).
	Configuration map[string]json.RawMessage `json:"configuration"`
	Times         Times                      `json:"times"`
	// Invalidity is correct, compile, runtime, correctness, constraints or timeout.
	Invalidity   string        `json:"invalidity"`
	Correctness  float64       `json:"correctness"`
	Measurements []Measurement `json:"measurements"`
	Objectives   []string      `json:"objectives"`
	// Entry says which kerntune entry the configuration belongs to; T4
	// readers ignore fields they do not know.
	Entry *Entry `json:"kerntune_entry,omitempty"`
}

// Times are the recorded times of a result, in milliseconds (kerntune
// writes none of them).
type Times struct {
	Compilation *float64  `json:"compilation,omitempty"`
	Runtimes    []float64 `json:"runtimes,omitempty"`
}

// Measurement is a named value: a number, or a failure name as Kernel
// Tuner writes for an invalid configuration.
type Measurement struct {
	Name  string          `json:"name"`
	Value json.RawMessage `json:"value"`
	Unit  string          `json:"unit"`
}

// Entry names the kerntune entry of a result.
type Entry struct {
	Device string `json:"device"`
	Kernel string `json:"kernel"`
	Key    string `json:"key"`
	Role   string `json:"role,omitempty"` // "winner" or "default" when exported from the params file alone
}

// Parse decodes T4 results; a time unit other than milliseconds (spelled
// "milliseconds", Kernel Tuner's older "miliseconds", or "ms") is an
// error.
func Parse(data []byte) (*File, error) {
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("T4 results: %w", err)
	}
	if u := strings.ToLower(f.Metadata.TimeUnit); u != "" && u != "ms" && !strings.HasPrefix(u, "mil") {
		return nil, fmt.Errorf("metadata.timeunit %q: only milliseconds are supported", u)
	}
	return &f, nil
}

// Is reports why data (gzip-compressed or not) is not a T4 results
// document: not JSON, or without its schema_version and results. Commands
// that write T4 files replace only those.
func Is(data []byte) error {
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		if data, err = io.ReadAll(io.LimitReader(zr, paramfile.MaxFileSize)); err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	var version string
	var results []json.RawMessage
	if json.Unmarshal(doc["schema_version"], &version) != nil || version == "" {
		return errors.New(`no schema_version string such as "1.0.0"`)
	}
	if json.Unmarshal(doc["results"], &results) != nil || results == nil {
		return errors.New("no results array")
	}
	return nil
}

// Time is the result's recorded time: the value of its "time" measurement
// (milliseconds, or a failure name), else, for an invalid result, its
// invalidity as a JSON string; nil when there is neither.
func (r *Result) Time() json.RawMessage {
	var tv json.RawMessage
	for _, m := range r.Measurements {
		if m.Name == "time" {
			tv = m.Value
		}
	}
	if r.Invalidity != "" && r.Invalidity != "correct" && tv == nil {
		tv = json.RawMessage(strconv.Quote(r.Invalidity))
	}
	return tv
}

// Select picks the entries to write; an empty field matches every value.
type Select struct{ Device, Kernel, Key string }

func (s Select) match(device, kernel, key string) bool {
	return (s.Device == "" || s.Device == device) && (s.Kernel == "" || s.Kernel == kernel) && (s.Key == "" || s.Key == key)
}

func newFile(generator, source string) *File {
	return &File{SchemaVersion: SchemaVersion, Metadata: Metadata{TimeUnit: TimeUnit, Generator: generator, Source: source}, Results: []Result{}}
}

// FromParams is the winner and the default (where it differs) of every
// entry of pf that sel matches, ordered by device, kernel and key.
func FromParams(pf *paramfile.File, sel Select, generator string) *File {
	doc := newFile(generator, "params file (winner and default of each entry)")
	for _, dk := range sortedKeys(pf.Devices) {
		d := pf.Devices[dk]
		ts := timestamp(d.TunedAt)
		for _, fam := range sortedKeys(d.Kernels) {
			for _, ek := range sortedKeys(d.Kernels[fam]) {
				if !sel.match(dk, fam, ek) {
					continue
				}
				e := d.Kernels[fam][ek]
				doc.Results = append(doc.Results, resultOf(e.Params, e.MedianUS, "", ts, Entry{dk, fam, ek, "winner"}))
				if e.Default != nil && e.Default.MedianUS > 0 && !paramfile.SameParams(e.Default.Params, e.Params) {
					doc.Results = append(doc.Results, resultOf(e.Default.Params, e.Default.MedianUS, "", ts, Entry{dk, fam, ek, "default"}))
				}
			}
		}
	}
	return doc
}

// FromTrace is every record of a trace (tracePath, for the metadata) that
// sel matches, in order, failed ones with their invalidity; timestamps come
// from pf's devices.
func FromTrace(pf *paramfile.File, recs []trace.Record, tracePath string, sel Select, generator string) *File {
	doc := newFile(generator, "trace "+tracePath)
	for _, r := range recs {
		if !sel.match(r.Device, r.Kernel, r.EntryKey()) {
			continue
		}
		ts := ""
		if d := pf.Devices[r.Device]; d != nil {
			ts = timestamp(d.TunedAt)
		}
		doc.Results = append(doc.Results, resultOf(r.Params, r.MedianUS, r.Err, ts, Entry{Device: r.Device, Kernel: r.Kernel, Key: r.EntryKey()}))
	}
	return doc
}

// timestamp converts RFC 3339 to the form Kernel Tuner writes.
func timestamp(rfc string) string {
	t, err := time.Parse(time.RFC3339, rfc)
	if err != nil {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05.000000-07:00")
}

// invalidity maps a kerntune failure reason to T4's invalidity names and
// the value Kernel Tuner records as the time of such a result.
func invalidity(err string) (invalidity, value string) {
	switch {
	case err == "":
		return "correct", ""
	case strings.HasPrefix(err, "build"):
		return "compile", "CompilationFailedConfig"
	case strings.HasPrefix(err, "verification"):
		return "correctness", "InvalidConfig"
	}
	return "runtime", "RuntimeFailedConfig"
}

func resultOf(cfg map[string]int, medianUS float64, err, ts string, e Entry) Result {
	inv, failed := invalidity(err)
	r := Result{Timestamp: ts, Configuration: map[string]json.RawMessage{}, Invalidity: inv,
		Objectives: []string{"time"}, Entry: &e}
	for k, v := range cfg {
		r.Configuration[k] = json.RawMessage(strconv.Itoa(v))
	}
	if inv == "correct" {
		r.Correctness = 1
		ms, _ := json.Marshal(medianUS / 1000)
		r.Measurements = []Measurement{{Name: "time", Value: ms, Unit: "ms"}}
	} else {
		r.Measurements = []Measurement{{Name: "time", Value: json.RawMessage(strconv.Quote(failed)), Unit: ""}}
	}
	return r
}

// Encode is the document as indented JSON with a final newline, gzip
// compressed when gz is set.
func (f *File) Encode(gz bool) ([]byte, error) {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	data = append(data, '\n')
	if !gz {
		return data, nil
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
