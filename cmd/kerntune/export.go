package main

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/internal/trace"
	"github.com/kerntune/kerntune/params"
)

func init() { commands = append(commands, newExportCmd) }

// t4File is the T4 ("open autotuning results") format Kernel Tuner writes
// and reads: schema_version "1.0.0", metadata.timeunit, and one result per
// configuration with configuration, times, invalidity, correctness,
// measurements and objectives.
type t4File struct {
	SchemaVersion string     `json:"schema_version"`
	Metadata      t4Metadata `json:"metadata"`
	Results       []t4Result `json:"results"`
}

type t4Metadata struct {
	TimeUnit  string `json:"timeunit"` // Kernel Tuner spells it "miliseconds"
	Generator string `json:"generator,omitempty"`
	Source    string `json:"source,omitempty"`
}

type t4Result struct {
	Timestamp     string          `json:"timestamp,omitempty"`
	Configuration map[string]int  `json:"configuration"`
	Times         map[string]any  `json:"times"`
	Invalidity    string          `json:"invalidity"`
	Correctness   int             `json:"correctness"`
	Measurements  []t4Measurement `json:"measurements"`
	Objectives    []string        `json:"objectives"`
	// Entry says which kerntune entry the configuration belongs to; T4
	// readers ignore fields they do not know.
	Entry t4Entry `json:"kerntune_entry"`
}

type t4Entry struct {
	Device string `json:"device"`
	Kernel string `json:"kernel"`
	Key    string `json:"key"`
	Role   string `json:"role,omitempty"` // "winner" or "default" when exported from the params file alone
}

type t4Measurement struct {
	Name  string `json:"name"`
	Value any    `json:"value"` // a number, or a failure name as Kernel Tuner writes
	Unit  string `json:"unit"`
}

type exportFlags struct {
	t4                  bool
	out, tracePath      string
	device, kernel, key string
}

func newExportCmd() *cobra.Command {
	var f exportFlags
	cmd := &cobra.Command{
		Use:   "export --t4 [FILE] [--trace FILE] [--out FILE]",
		Short: "Write tuning results in another tool's format (--t4: Kernel Tuner's T4 results)",
		Long: `export --t4 writes the T4 results format that Kernel Tuner's tooling reads
(schema_version "1.0.0", times in milliseconds). With --trace every measured
candidate of the trace becomes a result (failed ones with their invalidity:
compile, correctness or runtime); without it each entry of the params file
gives its winner and its default. Every result carries "kerntune_entry"
(device, kernel, key), so select one entry with --device, --kernel and --key
for tools that expect one tuning problem per file. --out ending in .gz is
gzip-compressed; the default is stdout.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !f.t4 {
				return usageErrorf("choose the format: --t4 (Kernel Tuner's T4 results) is the one supported")
			}
			path := params.DefaultFileName
			if len(args) == 1 {
				path = args[0]
			}
			pf, err := params.ReadFile(path)
			if errors.Is(err, os.ErrNotExist) {
				return usageErrorf("%s: no such file (run kerntune tune first, or name the file)", path)
			}
			if err != nil {
				return usageError{err}
			}
			var recs []trace.Record
			if f.tracePath != "" {
				if recs, err = trace.ReadFile(f.tracePath); err != nil {
					return usageErrorf("--trace %v", err)
				}
			}
			doc, err := toT4(pf, trace.Latest(recs), f)
			if err != nil {
				return err
			}
			return writeJSONOut(cmd.OutOrStdout(), f.out, doc)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.t4, "t4", false, "write Kernel Tuner's T4 results format")
	fl.StringVar(&f.out, "out", "", "output file (.gz: gzip); default stdout")
	fl.StringVar(&f.tracePath, "trace", "", "trace file (JSON lines from tune --trace): export every measured candidate")
	fl.StringVar(&f.device, "device", "", "export only this device key")
	fl.StringVar(&f.kernel, "kernel", "", "export only this kernel family")
	fl.StringVar(&f.key, "key", "", "export only this entry key, e.g. f32/tiny")
	return cmd
}

// t4Timestamp converts RFC 3339 to the form Kernel Tuner writes.
func t4Timestamp(rfc string) string {
	t, err := time.Parse(time.RFC3339, rfc)
	if err != nil {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05.000000-07:00")
}

// t4Invalidity maps a kerntune failure reason to T4's invalidity names.
func t4Invalidity(err string) (invalidity, value string) {
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

func t4Of(cfg map[string]int, medianUS float64, err, ts string, e t4Entry) t4Result {
	inv, failed := t4Invalidity(err)
	r := t4Result{Timestamp: ts, Configuration: cfg, Times: map[string]any{}, Invalidity: inv,
		Objectives: []string{"time"}, Entry: e}
	if inv == "correct" {
		r.Correctness = 1
		r.Measurements = []t4Measurement{{Name: "time", Value: medianUS / 1000, Unit: "ms"}}
	} else {
		r.Measurements = []t4Measurement{{Name: "time", Value: failed, Unit: ""}}
	}
	if r.Configuration == nil {
		r.Configuration = map[string]int{}
	}
	return r
}

func toT4(pf *params.File, recs []trace.Record, f exportFlags) (*t4File, error) {
	doc := &t4File{SchemaVersion: "1.0.0", Metadata: t4Metadata{TimeUnit: "miliseconds", Generator: "kerntune " + version()}, Results: []t4Result{}}
	keep := func(dev, kernel, key string) bool {
		return (f.device == "" || f.device == dev) && (f.kernel == "" || f.kernel == kernel) && (f.key == "" || f.key == key)
	}
	if len(recs) > 0 {
		doc.Metadata.Source = "trace " + f.tracePath
		for _, r := range recs {
			if !keep(r.Device, r.Kernel, r.EntryKey()) {
				continue
			}
			ts := ""
			if d := pf.Devices[r.Device]; d != nil {
				ts = t4Timestamp(d.TunedAt)
			}
			doc.Results = append(doc.Results, t4Of(r.Params, r.MedianUS, r.Err, ts,
				t4Entry{Device: r.Device, Kernel: r.Kernel, Key: r.EntryKey()}))
		}
	} else {
		doc.Metadata.Source = "params file (winner and default of each entry)"
		for _, dk := range sortedMapKeys(pf.Devices) {
			d := pf.Devices[dk]
			for _, fam := range sortedMapKeys(d.Kernels) {
				for _, ek := range sortedMapKeys(d.Kernels[fam]) {
					if !keep(dk, fam, ek) {
						continue
					}
					e := d.Kernels[fam][ek]
					ts := t4Timestamp(d.TunedAt)
					doc.Results = append(doc.Results, t4Of(e.Params, e.MedianUS, "", ts, t4Entry{dk, fam, ek, "winner"}))
					if e.Default != nil && e.Default.MedianUS > 0 && !sameParams(e.Default.Params, e.Params) {
						doc.Results = append(doc.Results, t4Of(e.Default.Params, e.Default.MedianUS, "", ts, t4Entry{dk, fam, ek, "default"}))
					}
				}
			}
		}
	}
	if len(doc.Results) == 0 {
		return nil, usageErrorf("nothing to export: no entry matches --device %q --kernel %q --key %q", f.device, f.kernel, f.key)
	}
	return doc, nil
}

func sameParams(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func sortedMapKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// writeJSONOut writes v as indented JSON to path (gzip when it ends in .gz),
// or to stdout when path is "" or "-".
func writeJSONOut(stdout io.Writer, path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if path == "" || path == "-" {
		_, err := stdout.Write(data)
		return err
	}
	if strings.HasSuffix(path, ".gz") {
		var buf strings.Builder
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(data); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		data = []byte(buf.String())
	}
	if err := params.WriteFileAtomic(path, data); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}
