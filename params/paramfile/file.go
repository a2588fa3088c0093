package paramfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/kerntune/kerntune/params/families"
)

// SchemaVersion is the version of hardware_params.json this package reads and writes.
const SchemaVersion = 1

// DefaultFileName is the file name the tuner writes and the loader looks for.
const DefaultFileName = "hardware_params.json"

// File is a parsed hardware_params.json.
type File struct {
	SchemaVersion int                `json:"schema_version"`
	Generator     string             `json:"generator,omitempty"`
	Devices       map[string]*Device `json:"devices"`
}

// Device holds everything tuned on one device.
type Device struct {
	Backend string `json:"backend"`
	// Space is the kind of parameter space the device's entries use (cpu,
	// gpu), as the backend that tuned them declares it; absent from files
	// written before the field, where the backend's name gives it (Kind).
	Space        string                       `json:"space,omitempty"`
	Name         string                       `json:"name"`
	Family       string                       `json:"family"`
	ComputeUnits int                          `json:"compute_units"`
	TunedAt      string                       `json:"tuned_at,omitempty"`
	Facts        map[string]float64           `json:"facts,omitempty"`
	Kernels      map[string]map[string]*Entry `json:"kernels"`
}

// Kind is the kind of parameter space the device's entries use: its
// Space, or for a record without one families.SpaceKind of its backend.
func (d *Device) Kind() string {
	if d.Space != "" {
		return d.Space
	}
	return families.SpaceKind(d.Backend)
}

// Entry is the tuned result for one family on one shape class or exact shape.
// Its key in Device.Kernels[family] is "<dtype>/<class>" or "<dtype>/<dims joined by x>".
type Entry struct {
	Params   map[string]int `json:"params"`
	MedianUS float64        `json:"median_us,omitempty"` // absent: not measured
	IQRUS    float64        `json:"iqr_us"`
	MinUS    float64        `json:"min_us,omitempty"`
	Samples  int            `json:"samples"`
	// ShapeMedianUS holds the median per shape of Shapes; MedianUS is their sum.
	ShapeMedianUS []float64        `json:"shape_median_us,omitempty"`
	Default       *Reference       `json:"default,omitempty"`
	Baseline      *Baseline        `json:"baseline,omitempty"`
	Shapes        [][]int          `json:"shapes"`
	Candidates    CandidateCounts  `json:"candidates"`
	Strategy      string           `json:"strategy,omitempty"`
	Roofline      *RooflineSummary `json:"roofline,omitempty"`

	// Evaluations is how many distinct candidates the search measured, and
	// Stopped why it stopped before the strategy finished ("budget spent",
	// "evaluation budget spent", "interrupted"), or empty.
	Evaluations int    `json:"evaluations,omitempty"`
	Stopped     string `json:"stopped,omitempty"`

	// Use tells applications which implementation to call: UseBaseline
	// when the baseline (Baseline.Name) measured faster than the tuned
	// kernel beyond noise, UseTuned otherwise; empty (older files, or no
	// decision) reads as UseTuned.
	Use string `json:"use,omitempty"`
	// ShapeUse, when present, is Use per shape of Shapes (one value each,
	// in order): the tuner writes it when the baseline's per-shape times
	// route some of the entry's shapes otherwise than Use does. A query for
	// exactly one of Shapes takes its value; any other shape of the class
	// takes Use.
	ShapeUse []string `json:"shape_use,omitempty"`

	// FastMath says, where the backend makes it a choice (metal), whether
	// the kernels were compiled with fast math (kerntune tune
	// --metal-fast-math). Absent for other backends and in entries written
	// before it was recorded.
	FastMath *bool `json:"fast_math,omitempty"`

	// MathMode says, for metal, the math mode the kernels were compiled
	// with: "safe" (the default, as MLX), "relaxed" or "fast" (kerntune
	// tune --metal-math-mode), set as MLX sets it on the macOS that ran
	// them. Absent for other backends and in entries written before it
	// was recorded (those were compiled with fastMathEnabled, see
	// FastMath).
	MathMode string `json:"math_mode,omitempty"`

	// Drift is what the tuner's drift guard saw: it re-times the default
	// (the anchor) every few candidates and measures again what was
	// measured while the device's speed drifted (thermal throttling).
	// Absent when the guard never ran.
	Drift *DriftSummary `json:"drift,omitempty"`
	// NoHarm, when set, says how the no-harm rule changed the choice: the
	// candidate fastest over the entry's shapes was slower than the default
	// beyond noise on one of them, so another (or the default) was chosen.
	NoHarm string `json:"no_harm,omitempty"`
	// Time says where the entry's tuning time went (kerntune tune); absent
	// in entries written before it was recorded and in merged-in files
	// that lack it.
	Time *TuneTime `json:"time,omitempty"`
}

// DriftSummary is an entry's record of the drift guard.
type DriftSummary struct {
	// Checks is how often the anchor was re-timed; Events how many of
	// those found it more than the limit (10 %) off its reference.
	Checks int `json:"checks"`
	Events int `json:"events"`
	// MaxPct is the largest drift of the anchor from its reference, in
	// percent of the reference, over all checks.
	MaxPct float64 `json:"max_pct"`
	// Remeasured counts the candidates whose samples since the last good
	// check were discarded and measured again after a drift event.
	Remeasured int `json:"remeasured"`
	// Settled counts events after which the anchor did not come back to
	// its reference after the cool-downs: its new speed became the reference.
	Settled int `json:"settled,omitempty"`
	// WaitedS is the time spent idle, cooling down, in seconds.
	WaitedS float64 `json:"waited_s,omitempty"`
}

// TuneTime is where the wall time of tuning one entry went, in seconds.
// Setup, compile, verify, measure, search, journal and other are disjoint
// and add up to the wall time; device is the time the device was busy running the
// entry's kernels: timed samples and warm-up runs (measure) plus the runs
// that produced outputs for verification (part of verify). Idle is wall
// minus device, and BusyPct is 100·device/wall.
type TuneTime struct {
	WallS float64 `json:"wall_s"`
	// SetupS: drawing the inputs, the float64 reference, loading them on
	// the device, enumerating the space.
	SetupS float64 `json:"setup_s"`
	// CompileS: waiting for candidates to be built (compiles a pool ran
	// ahead, while the device worked, are not counted).
	CompileS float64 `json:"compile_s"`
	// VerifyS: running candidates for their outputs and comparing those
	// with the reference.
	VerifyS float64 `json:"verify_s"`
	// MeasureS: warm-up runs and timed samples, of the search and of the
	// final timing.
	MeasureS float64 `json:"measure_s"`
	// SearchS: the strategy choosing what to measure (its model, its
	// bookkeeping).
	SearchS float64 `json:"search_s"`
	// JournalS: appending measurements to the journal and syncing it.
	JournalS float64 `json:"journal_s"`
	// OtherS: the rest (logging, progress, bookkeeping).
	OtherS  float64 `json:"other_s"`
	DeviceS float64 `json:"device_s"`
	IdleS   float64 `json:"idle_s"`
	BusyPct float64 `json:"busy_pct"`
	// CacheHits and Compiled count the entry's kernels the backend loaded
	// from its compile cache and those it compiled (cache misses), where
	// the backend has a compile cache that is on; absent otherwise.
	CacheHits int `json:"cache_hits,omitempty"`
	Compiled  int `json:"compiled,omitempty"`
}

// timeFields lists TuneTime's JSON fields with their destinations, in the
// order they are checked when parsing.
func (t *TuneTime) timeFields() []struct {
	key string
	dst *float64
} {
	return []struct {
		key string
		dst *float64
	}{
		{"wall_s", &t.WallS}, {"setup_s", &t.SetupS}, {"compile_s", &t.CompileS}, {"verify_s", &t.VerifyS},
		{"measure_s", &t.MeasureS}, {"search_s", &t.SearchS}, {"journal_s", &t.JournalS}, {"other_s", &t.OtherS},
		{"device_s", &t.DeviceS}, {"idle_s", &t.IdleS}, {"busy_pct", &t.BusyPct},
	}
}

// Values of Entry.Use and of <PREFIX>_<FAMILY>_USE.
const (
	UseBaseline = "baseline"
	UseTuned    = "tuned"
)

// Reference is the un-tuned default configuration and its time.
type Reference struct {
	Params   map[string]int `json:"params"`
	MedianUS float64        `json:"median_us,omitempty"`
}

// Baseline is a vendor or library implementation timed in the same harness.
type Baseline struct {
	Name     string  `json:"name"`
	MedianUS float64 `json:"median_us,omitempty"`
	// ShapeMedianUS is the baseline's median per shape of the entry's
	// Shapes (absent in entries written before it was recorded).
	ShapeMedianUS []float64 `json:"shape_median_us,omitempty"`
}

// CandidateCounts says how much of the space the tuner saw.
type CandidateCounts struct {
	Valid    int `json:"valid"`
	Measured int `json:"measured"`
	Failed   int `json:"failed"`
}

// RooflineSummary relates the tuned time to the device's floors.
type RooflineSummary struct {
	Flops       float64 `json:"flops"`
	Bytes       float64 `json:"bytes"`
	GFLOPS      float64 `json:"gflops"`
	GBPS        float64 `json:"gbps"`
	PctOfFloor  float64 `json:"pct_of_floor"`
	BoundByData bool    `json:"memory_bound"`
}

// EntryKey builds the key of an entry: dtype and a class name or shape.
func EntryKey(dtype, classOrShape string) string { return dtype + "/" + classOrShape }

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// PathError is a problem at a JSON path of a params file.
type PathError struct {
	File string // file name, or "" when parsed from bytes
	Path string // e.g. devices["cpu:x"].kernels.gemv_nt["f32/tiny"].params.BN
	Msg  string
}

func (e *PathError) Error() string {
	src := e.File
	if src == "" {
		src = "params data"
	}
	if e.Path == "" {
		return fmt.Sprintf("%s: %s", src, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", src, e.Path, e.Msg)
}

// ReadFile reads and parses a params file. A missing file returns an error
// satisfying errors.Is(err, os.ErrNotExist).
func ReadFile(path string) (*File, error) {
	data, err := ReadParams(path)
	if err != nil {
		return nil, err
	}
	return parse(data, path)
}

// Parse parses params file bytes, checking the schema version and every
// field's type; errors are *PathError naming the JSON path.
func Parse(data []byte) (*File, error) { return parse(data, "") }

func parse(data []byte, name string) (*File, error) {
	f, _, err := ParseNoting(data, name)
	return f, err
}

// MathModes are the values of an entry's math_mode: MLX's metal_kernel
// compile_options math_mode.
var MathModes = []string{"safe", "relaxed", "fast"}

// Fields of the objects whose fields the loader reads; others are unknown
// (written by a newer kerntune, or by hand) and ignored with a warning.
// Fields of an entry's records (default, baseline, candidates, roofline,
// drift, time) and of facts describe the tuning run; the loader uses none
// of them, so unknown ones there are ignored without a word.
var (
	fileFields   = fieldSet("schema_version", "generator", "devices")
	deviceFields = fieldSet("backend", "space", "name", "family", "compute_units", "tuned_at", "facts", "kernels")
	entryFields  = fieldSet("params", "shape_use", "median_us", "iqr_us", "min_us", "samples", "shape_median_us", "default", "baseline",
		"shapes", "candidates", "strategy", "roofline", "evaluations", "stopped", "use", "fast_math", "math_mode", "drift", "no_harm", "time")
)

func fieldSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// unknownNote is one unknown field or parameter name, at the first path
// (in the order of sortedKeys at every level) where it occurs, with how
// many more objects of the same kind hold it: a file that a newer kerntune
// wrote may add a field to every entry, and one warning per entry would
// bury the others.
type unknownNote struct {
	path  string // JSON path of the first occurrence
	what  string // what is unknown: `field "variant"`, or the message for a parameter
	kind  string // "entry", "device" or "" (the top level), for the count
	more  int    // further occurrences
	param bool   // an unknown parameter: the entry's other parameters apply
}

// UnknownNotes gathers unknown names by kind and name, in order of first occurrence.
type UnknownNotes struct {
	list  []*unknownNote
	index map[string]*unknownNote
}

// Add notes an unknown name at path (the loader's parameters too).
func (u *UnknownNotes) Add(id, path, what, kind string, param bool) {
	if n := u.index[id]; n != nil {
		n.more++
		return
	}
	if u.index == nil {
		u.index = map[string]*unknownNote{}
	}
	n := &unknownNote{path: path, what: what, kind: kind, param: param}
	u.index[id] = n
	u.list = append(u.list, n)
}

// Warnings renders the notes for Loader.Warnings, e.g.
//
//	hardware_params.json: devices["cpu:x"].kernels.gemv_nt["f32/tiny"].variant: field "variant" is unknown to this loader and ignored (a newer kerntune may have written it); 2 more entries have it
func (u *UnknownNotes) Warnings(file string) []string {
	var out []string
	for _, n := range u.list {
		msg := n.what + " is unknown to this loader and ignored"
		if n.param {
			msg = n.what + "; ignored, the entry's other parameters apply"
		}
		msg = fmt.Sprintf("%s: %s (a newer kerntune may have written it)", describe(file, n.path), msg)
		switch {
		case n.more == 1:
			msg += fmt.Sprintf("; 1 more %s has it", n.kind)
		case n.more > 1:
			plural := map[string]string{"entry": "entries", "device": "devices"}[n.kind]
			msg += fmt.Sprintf("; %d more %s have it", n.more, plural)
		}
		out = append(out, msg)
	}
	return out
}

// emptyFileMsg is the error of an empty params file (one a failed copy or a
// full disk left), which says what the file must hold.
const emptyFileMsg = `not valid JSON: the file is empty (a params file is a JSON object: {"schema_version": 1, "devices": {...}}; kerntune tune writes one)`

// ParseNoting is Parse for the file name ("" for bytes), that also returns
// the unknown fields it ignored.
func ParseNoting(data []byte, name string) (*File, *UnknownNotes, error) {
	if len(bytes.Trim(data, " \t\r\n")) == 0 { // JSON's white space, as the Python loader
		return nil, nil, &PathError{File: name, Msg: emptyFileMsg}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, nil, &PathError{File: name, Msg: "not valid JSON: " + err.Error()}
	}
	// dec.More reports false for a stray ']' or '}', so ask for the next token instead.
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, &PathError{File: name, Msg: "not valid JSON: trailing data after the top-level value"}
	}
	w := walker{file: name}
	f := w.file1(root)
	if w.err != nil {
		return nil, nil, w.err
	}
	return f, &w.unknown, nil
}

// walker converts a decoded JSON tree into a File, recording the first
// error with its path, and the unknown fields it ignores.
type walker struct {
	file    string
	err     error
	unknown UnknownNotes
}

// noteUnknown records the fields of m that known does not list; kind is
// "entry", "device" or "" for the top level.
func (w *walker) noteUnknown(path string, m map[string]any, known map[string]bool, kind string) {
	for _, k := range sortedKeys(m) {
		if !known[k] {
			w.unknown.Add(kind+"\x00"+k, ChildPath(path, k), fmt.Sprintf("field %q", k), kind, false)
		}
	}
}

func (w *walker) fail(path, format string, args ...any) {
	if w.err == nil {
		w.err = &PathError{File: w.file, Path: path, Msg: fmt.Sprintf(format, args...)}
	}
}

func quoteKey(k string) string {
	b, _ := json.Marshal(k)
	return "[" + string(b) + "]"
}

// ChildPath joins a path and a key, using .key for identifiers and ["key"] otherwise.
func ChildPath(path, key string) string {
	if identRE.MatchString(key) {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	return path + quoteKey(key)
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func (w *walker) object(path string, v any) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		w.fail(path, "must be an object, got %s", typeName(v))
		return nil
	}
	return m
}

func (w *walker) str(path string, v any) string {
	s, ok := v.(string)
	if !ok {
		w.fail(path, "must be a string, got %s", typeName(v))
	}
	return s
}

// number reads a JSON number; what says what was wanted ("a number", "an integer").
func (w *walker) number(path string, v any, what string) (json.Number, bool) {
	n, ok := v.(json.Number)
	if !ok {
		w.fail(path, "must be %s, got %s", what, typeName(v))
	}
	return n, ok
}

func (w *walker) num(path string, v any) float64 {
	n, ok := w.number(path, v, "a number")
	if !ok {
		return 0
	}
	x, err := n.Float64()
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		w.fail(path, "must be a finite number, got %s", n)
		return 0
	}
	return x
}

// MaxMicros bounds every time in the file: a median of more than about
// eleven days is no measurement, and larger numbers break show's table.
const MaxMicros = 1e12

// micros reads a time in microseconds: finite, at most MaxMicros, and
// positive (a median, a minimum) or, with zero, not negative (a spread).
func (w *walker) micros(path string, v any, zero bool) float64 {
	x := w.num(path, v)
	if w.err != nil {
		return 0
	}
	switch {
	case zero && (x < 0 || x > MaxMicros):
		w.fail(path, "must be a number of microseconds from 0 to 1e12, got %s", v)
	case !zero && (x <= 0 || x > MaxMicros):
		w.fail(path, "must be a positive number of microseconds up to 1e12, got %s", v)
	}
	return x
}

// optionalMicros reads the optional times of m (micros: positive unless
// the key is iqr_us, a spread).
func (w *walker) optionalMicros(path string, m map[string]any, fields ...optional) {
	for _, f := range fields {
		if v, ok := m[f.key]; ok {
			*f.dst.(*float64) = w.micros(ChildPath(path, f.key), v, f.key == "iqr_us")
		}
	}
}

func (w *walker) integer(path string, v any) int {
	n, ok := w.number(path, v, "an integer")
	if !ok {
		return 0
	}
	x, err := n.Int64()
	if err != nil || x > math.MaxInt32 || x < math.MinInt32 {
		w.fail(path, "must be an integer between %d and %d, got %s", math.MinInt32, math.MaxInt32, n)
		return 0
	}
	return int(x)
}

func (w *walker) boolean(path string, v any) bool {
	b, ok := v.(bool)
	if !ok {
		w.fail(path, "must be a boolean, got %s", typeName(v))
	}
	return b
}

// array reads a JSON array; what names its elements in the message.
func (w *walker) array(path string, v any, what string) []any {
	arr, ok := v.([]any)
	if !ok {
		w.fail(path, "must be an array of %s, got %s", what, typeName(v))
	}
	return arr
}

// optional names an optional field of an object and where its value
// goes: a *string, *int or *float64.
type optional struct {
	key string
	dst any
}

// optionals sets the fields that m holds, in the order given, so that the
// first error reported does not depend on map order; absent fields are left
// as they are.
func (w *walker) optionals(path string, m map[string]any, fields ...optional) {
	for _, f := range fields {
		v, ok := m[f.key]
		if !ok {
			continue
		}
		p := ChildPath(path, f.key)
		switch dst := f.dst.(type) {
		case *string:
			*dst = w.str(p, v)
		case *int:
			*dst = w.integer(p, v)
		case *float64:
			*dst = w.num(p, v)
		default:
			panic(fmt.Sprintf("params: optional field %s has destination %T", p, f.dst))
		}
	}
}

func (w *walker) file1(v any) *File {
	m := w.object("", v)
	if m == nil {
		return nil
	}
	f := &File{Devices: map[string]*Device{}}
	w.noteUnknown("", m, fileFields, "")
	sv, ok := m["schema_version"]
	if !ok {
		w.fail("schema_version", "missing (this reader understands schema_version %d)", SchemaVersion)
		return nil
	}
	f.SchemaVersion = w.integer("schema_version", sv)
	if w.err == nil && f.SchemaVersion != SchemaVersion {
		w.fail("schema_version", "is %d; this reader understands only %d", f.SchemaVersion, SchemaVersion)
		return nil
	}
	if g, ok := m["generator"]; ok {
		f.Generator = w.str("generator", g)
	}
	devs, ok := m["devices"]
	if !ok {
		w.fail("devices", "missing")
		return nil
	}
	dm := w.object("devices", devs)
	for _, key := range sortedKeys(dm) {
		p := ChildPath("devices", key)
		if key == "" {
			w.fail(p, "device key must not be empty")
		}
		f.Devices[key] = w.device(p, dm[key])
	}
	return f
}

func (w *walker) device(path string, v any) *Device {
	m := w.object(path, v)
	if m == nil {
		return nil
	}
	d := &Device{Kernels: map[string]map[string]*Entry{}}
	w.noteUnknown(path, m, deviceFields, "device")
	for _, req := range []string{"backend", "name", "family", "kernels"} {
		if _, ok := m[req]; !ok {
			w.fail(ChildPath(path, req), "missing")
		}
	}
	w.optionals(path, m,
		optional{"backend", &d.Backend}, optional{"name", &d.Name}, optional{"family", &d.Family},
		optional{"compute_units", &d.ComputeUnits}, optional{"tuned_at", &d.TunedAt},
		optional{"space", &d.Space},
	)
	if d.Space != "" && d.Space != families.SpaceCPU && d.Space != families.SpaceGPU {
		w.fail(ChildPath(path, "space"), "must be %s or %s, got %q", families.SpaceCPU, families.SpaceGPU, d.Space)
	}
	if v, ok := m["facts"]; ok {
		fp := ChildPath(path, "facts")
		fm := w.object(fp, v)
		d.Facts = map[string]float64{}
		for _, k := range sortedKeys(fm) {
			// Facts may hold strings (e.g. a driver version); only numbers are kept here.
			if n, ok := fm[k].(json.Number); ok {
				d.Facts[k] = w.num(ChildPath(fp, k), n)
			}
		}
	}
	if v, ok := m["kernels"]; ok {
		kp := ChildPath(path, "kernels")
		km := w.object(kp, v)
		for _, fam := range sortedKeys(km) {
			fp := ChildPath(kp, fam)
			em := w.object(fp, km[fam])
			entries := map[string]*Entry{}
			for _, ek := range sortedKeys(em) {
				ep := ChildPath(fp, ek)
				if i := strings.IndexByte(ek, '/'); i <= 0 || i == len(ek)-1 {
					w.fail(ep, "entry key must be <dtype>/<class> or <dtype>/<shape>")
				}
				entries[ek] = w.entry(ep, em[ek])
			}
			d.Kernels[fam] = entries
		}
	}
	return d
}

func (w *walker) paramMap(path string, v any) map[string]int {
	m := w.object(path, v)
	out := make(map[string]int, len(m))
	for _, k := range sortedKeys(m) {
		p := ChildPath(path, k)
		if !families.ValidParamName(k) {
			w.fail(p, "parameter name must be an upper-case identifier like BN or TG")
		}
		out[k] = w.integer(p, m[k])
	}
	return out
}

// drift reads an entry's drift summary; every field is optional.
func (w *walker) drift(path string, v any) *DriftSummary {
	m := w.object(path, v)
	d := &DriftSummary{}
	w.optionals(path, m,
		optional{"checks", &d.Checks}, optional{"events", &d.Events}, optional{"remeasured", &d.Remeasured},
		optional{"settled", &d.Settled}, optional{"max_pct", &d.MaxPct}, optional{"waited_s", &d.WaitedS},
	)
	return d
}

func (w *walker) entry(path string, v any) *Entry {
	m := w.object(path, v)
	if m == nil {
		return nil
	}
	e := &Entry{}
	w.noteUnknown(path, m, entryFields, "entry")
	pv, ok := m["params"]
	if !ok {
		w.fail(ChildPath(path, "params"), "missing")
		return e
	}
	e.Params = w.paramMap(ChildPath(path, "params"), pv)
	w.optionalMicros(path, m, optional{"median_us", &e.MedianUS}, optional{"iqr_us", &e.IQRUS}, optional{"min_us", &e.MinUS})
	w.optionals(path, m,
		optional{"samples", &e.Samples}, optional{"strategy", &e.Strategy}, optional{"evaluations", &e.Evaluations},
		optional{"stopped", &e.Stopped},
	)
	if v, ok := m["use"]; ok {
		up := ChildPath(path, "use")
		e.Use = w.str(up, v)
		if w.err == nil && e.Use != UseBaseline && e.Use != UseTuned {
			w.fail(up, "is %q; must be %q or %q", e.Use, UseBaseline, UseTuned)
		}
	}
	if v, ok := m["fast_math"]; ok {
		b := w.boolean(ChildPath(path, "fast_math"), v)
		e.FastMath = &b
	}
	if v, ok := m["math_mode"]; ok {
		mp := ChildPath(path, "math_mode")
		e.MathMode = w.str(mp, v)
		if w.err == nil && !slices.Contains(MathModes, e.MathMode) {
			w.fail(mp, "is %q; must be one of %s", e.MathMode, strings.Join(MathModes, ", "))
		}
	}
	w.optionals(path, m, optional{"no_harm", &e.NoHarm})
	if v, ok := m["drift"]; ok && v != nil {
		e.Drift = w.drift(ChildPath(path, "drift"), v)
	}
	if v, ok := m["time"]; ok && v != nil {
		tp := ChildPath(path, "time")
		tm := w.object(tp, v)
		e.Time = &TuneTime{}
		for _, f := range e.Time.timeFields() {
			x, ok := tm[f.key]
			if !ok {
				continue
			}
			fp := ChildPath(tp, f.key)
			*f.dst = w.num(fp, x)
			// The JSON text in messages, so that the Python loader's match.
			if w.err == nil && *f.dst < 0 {
				w.fail(fp, "must not be negative, got %s", x)
			}
			if w.err == nil && f.key == "busy_pct" && *f.dst > 100 {
				w.fail(fp, "must be at most 100, got %s", x)
			}
		}
		w.optionals(tp, tm, optional{"cache_hits", &e.Time.CacheHits}, optional{"compiled", &e.Time.Compiled})
		for _, c := range []struct {
			key string
			n   int
		}{{"cache_hits", e.Time.CacheHits}, {"compiled", e.Time.Compiled}} {
			if w.err == nil && c.n < 0 {
				w.fail(ChildPath(tp, c.key), "must not be negative, got %d", c.n)
			}
		}
	}
	if v, ok := m["shape_median_us"]; ok {
		sp := ChildPath(path, "shape_median_us")
		for i, x := range w.array(sp, v, "numbers") {
			e.ShapeMedianUS = append(e.ShapeMedianUS, w.micros(fmt.Sprintf("%s[%d]", sp, i), x, false))
		}
	}
	if v, ok := m["roofline"]; ok && v != nil {
		rp := ChildPath(path, "roofline")
		rm := w.object(rp, v)
		e.Roofline = &RooflineSummary{}
		w.optionals(rp, rm,
			optional{"flops", &e.Roofline.Flops}, optional{"bytes", &e.Roofline.Bytes}, optional{"gflops", &e.Roofline.GFLOPS},
			optional{"gbps", &e.Roofline.GBPS}, optional{"pct_of_floor", &e.Roofline.PctOfFloor},
		)
		if x, ok := rm["memory_bound"]; ok {
			e.Roofline.BoundByData = w.boolean(ChildPath(rp, "memory_bound"), x)
		}
	}
	if v, ok := m["default"]; ok && v != nil {
		dp := ChildPath(path, "default")
		dm := w.object(dp, v)
		e.Default = &Reference{}
		if pv, ok := dm["params"]; ok {
			e.Default.Params = w.paramMap(ChildPath(dp, "params"), pv)
		}
		w.optionalMicros(dp, dm, optional{"median_us", &e.Default.MedianUS})
	}
	if v, ok := m["baseline"]; ok && v != nil {
		bp := ChildPath(path, "baseline")
		bm := w.object(bp, v)
		e.Baseline = &Baseline{}
		w.optionals(bp, bm, optional{"name", &e.Baseline.Name})
		w.optionalMicros(bp, bm, optional{"median_us", &e.Baseline.MedianUS})
		if v, ok := bm["shape_median_us"]; ok {
			sp := ChildPath(bp, "shape_median_us")
			for i, x := range w.array(sp, v, "numbers") {
				e.Baseline.ShapeMedianUS = append(e.Baseline.ShapeMedianUS, w.micros(fmt.Sprintf("%s[%d]", sp, i), x, false))
			}
		}
	}
	if v, ok := m["shapes"]; ok {
		sp := ChildPath(path, "shapes")
		for i, s := range w.array(sp, v, "shapes") {
			ip := fmt.Sprintf("%s[%d]", sp, i)
			dims, isArr := s.([]any)
			if !isArr {
				w.fail(ip, "must be an array of integers, got %s", typeName(s))
				continue
			}
			shape := make([]int, len(dims))
			for j, d := range dims {
				shape[j] = w.integer(fmt.Sprintf("%s[%d]", ip, j), d)
			}
			e.Shapes = append(e.Shapes, shape)
		}
	}
	if v, ok := m["shape_use"]; ok {
		up := ChildPath(path, "shape_use")
		for i, x := range w.array(up, v, "strings") {
			ip := fmt.Sprintf("%s[%d]", up, i)
			u := w.str(ip, x)
			if w.err == nil && u != UseBaseline && u != UseTuned {
				w.fail(ip, "is %q; must be %q or %q", u, UseBaseline, UseTuned)
			}
			e.ShapeUse = append(e.ShapeUse, u)
		}
		if w.err == nil && len(e.ShapeUse) != len(e.Shapes) {
			w.fail(up, "has %d values; must have one per shape of \"shapes\" (%d)", len(e.ShapeUse), len(e.Shapes))
		}
	}
	if v, ok := m["candidates"]; ok {
		cp := ChildPath(path, "candidates")
		cm := w.object(cp, v)
		w.optionals(cp, cm,
			optional{"valid", &e.Candidates.Valid}, optional{"measured", &e.Candidates.Measured}, optional{"failed", &e.Candidates.Failed},
		)
	}
	return e
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// Merge returns existing (the bytes of a params file, or nil for none) with
// update's devices merged in: for every device in update its scalar fields
// and facts are set and its entries replace entries of the same family and
// key; every other device, family, entry and unknown field of existing is
// kept as it was. existing must parse as schema version 1. nil maps and
// slices of update are written as empty ones, and the result is parsed
// before it is returned, so Merge never yields a file that Parse rejects.
func Merge(existing []byte, update *File) ([]byte, error) {
	return mergeKeep(existing, update, nil)
}

// KeepFunc chooses, for an entry that both a file and an update hold (same
// device, family and key), which of the two stays: it returns old or new,
// both as decoded from JSON (json.Number for numbers).
type KeepFunc func(device, family, key string, old, new any) any

func mergeKeep(existing []byte, update *File, keep KeepFunc) ([]byte, error) {
	root := map[string]any{}
	if len(bytes.TrimSpace(existing)) > 0 {
		if _, err := Parse(existing); err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(existing))
		dec.UseNumber()
		if err := dec.Decode(&root); err != nil {
			return nil, err
		}
	}
	upd, err := toTree(update)
	if err != nil {
		return nil, err
	}
	if err := normalizeUpdate(upd); err != nil {
		return nil, err
	}
	root["schema_version"] = SchemaVersion
	if g, ok := upd["generator"]; ok {
		root["generator"] = g
	}
	devs, _ := root["devices"].(map[string]any)
	if devs == nil {
		devs = map[string]any{}
	}
	newDevs, _ := upd["devices"].(map[string]any)
	MergeDevices(devs, newDevs, keep)
	root["devices"] = devs
	out, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, err
	}
	if _, err := Parse(out); err != nil {
		return nil, fmt.Errorf("merged file would not be valid: %w", err)
	}
	return append(out, '\n'), nil
}

// MergeDevices merges the "devices" object src into dst, both as decoded
// from JSON (json.Number for numbers). A device new to dst is taken whole;
// for a device in both, facts are united (src wins), tuned_at keeps the
// newer time, other fields come from src, and every entry of src is put
// into dst, except that when dst already holds an entry for the same
// family and key, keep (when not nil) chooses which of the two stays.
// Merge uses it with keep nil; kerntune merge keeps the faster entry.
func MergeDevices(dst, src map[string]any, keep KeepFunc) {
	for dk, dv := range src {
		nd, _ := dv.(map[string]any)
		od, _ := dst[dk].(map[string]any)
		if od == nil {
			dst[dk] = nd
			continue
		}
		for field, val := range nd {
			switch field {
			case "facts":
				of, _ := od["facts"].(map[string]any)
				if of == nil {
					of = map[string]any{}
				}
				for k, x := range val.(map[string]any) {
					of[k] = x
				}
				od["facts"] = of
			case "kernels":
				ok, _ := od["kernels"].(map[string]any)
				if ok == nil {
					ok = map[string]any{}
				}
				for fam, entries := range val.(map[string]any) {
					oe, _ := ok[fam].(map[string]any)
					if oe == nil {
						oe = map[string]any{}
					}
					for ek, e := range entries.(map[string]any) {
						if prev, exists := oe[ek]; exists && keep != nil {
							e = keep(dk, fam, ek, prev, e)
						}
						oe[ek] = e
					}
					ok[fam] = oe
				}
				od["kernels"] = ok
			case "tuned_at":
				// RFC 3339 times in UTC sort as text.
				if old, isStr := od["tuned_at"].(string); !isStr || fmt.Sprint(val) > old {
					od["tuned_at"] = val
				}
			default:
				od[field] = val
			}
		}
	}
}

// normalizeUpdate turns the nulls that nil maps and slices of a File marshal
// to into empty objects and arrays where the format requires them, and
// rejects nil devices and entries, so that Merge's type assertions hold.
func normalizeUpdate(upd map[string]any) error {
	devs, _ := upd["devices"].(map[string]any)
	for key, d := range devs {
		dm, ok := d.(map[string]any)
		if !ok {
			return fmt.Errorf("merging: %s is nil", ChildPath("devices", key))
		}
		if f, ok := dm["facts"]; ok && f == nil {
			delete(dm, "facts")
		}
		kernels, _ := dm["kernels"].(map[string]any)
		if kernels == nil {
			kernels = map[string]any{}
			dm["kernels"] = kernels
		}
		for fam, entries := range kernels {
			em, _ := entries.(map[string]any)
			if em == nil {
				em = map[string]any{}
				kernels[fam] = em
			}
			for ek, e := range em {
				m, ok := e.(map[string]any)
				if !ok {
					return fmt.Errorf("merging: %s is nil", ChildPath(ChildPath(ChildPath(ChildPath("devices", key), "kernels"), fam), ek))
				}
				if m["params"] == nil {
					m["params"] = map[string]any{}
				}
				if m["shapes"] == nil {
					m["shapes"] = []any{}
				}
				if def, ok := m["default"].(map[string]any); ok && def["params"] == nil {
					def["params"] = map[string]any{}
				}
			}
		}
	}
	return nil
}

func toTree(f *File) (map[string]any, error) {
	b, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// LockSuffix names the sibling file MergeIntoFile locks: hardware_params.json.lock.
const LockSuffix = ".lock"

// ErrUnparsable marks an existing file that could not be parsed and so was not overwritten.
var ErrUnparsable = errors.New("existing file is not a valid params file; refusing to overwrite it (use --force to replace it)")

// MergeIntoFile merges update into the params file at path (created if
// missing) and writes it atomically: a temporary file in the same directory,
// synced, then renamed over path. An existing file that does not parse is
// left untouched and an error wrapping ErrUnparsable is returned, unless
// force is set, in which case it is replaced.
//
// Concurrent writers (several tuning runs, different devices or kernels)
// are serialised by an exclusive lock on path+".lock"; each reads and merges
// under the lock, so no writer's entries are lost.
func MergeIntoFile(path string, update *File, force bool) error {
	return MergeIntoFileKeep(path, update, force, nil)
}

// MergeIntoFileKeep is MergeIntoFile where keep, when not nil, chooses which
// entry stays when the file already holds one that update also holds. keep
// runs under the lock, against the file's content at that moment, so a
// decision cannot be undone by a concurrent writer.
func MergeIntoFileKeep(path string, update *File, force bool, keep KeepFunc) error {
	if err := CheckRegular(path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err) // before a lock file appears next to a device
	}
	unlock, err := lockFile(path + LockSuffix)
	if err != nil {
		return err
	}
	defer unlock()
	existing, err := ReadParams(path)
	var tooLarge *PathError // over MaxFileSize: it cannot be a params file
	switch {
	case errors.As(err, &tooLarge):
		if !force {
			return fmt.Errorf("%s: %w: %v", path, ErrUnparsable, err)
		}
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if existing != nil {
		if _, perr := Parse(existing); perr != nil {
			if !force {
				return fmt.Errorf("%s: %w: %v", path, ErrUnparsable, perr)
			}
			existing = nil
		}
	}
	// When keep keeps the file's entry for every entry of update, the file
	// is left as it is: a run that wrote nothing must not change its
	// tuned_at and facts.
	entries, kept := 0, 0
	for _, d := range update.Devices {
		for _, es := range d.Kernels {
			entries += len(es)
		}
	}
	if keep != nil {
		choose := keep
		keep = func(device, family, key string, old, new any) any {
			got := choose(device, family, key, old, new)
			if sameJSON(got, old) {
				kept++
			}
			return got
		}
	}
	out, err := mergeKeep(existing, update, keep)
	if err != nil {
		return fmt.Errorf("merging into %s: %w", path, err)
	}
	if existing != nil && entries > 0 && kept == entries {
		return nil
	}
	return WriteFileAtomic(path, out)
}

// sameJSON reports whether a and b encode alike.
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// WriteFileAtomic writes data to path through a synced temporary file and a rename,
// so readers see either the old or the new file, never a partial one.
//
// A path that exists and is not a regular file (a device such as
// /dev/full, a pipe, a directory) is refused with an error wrapping
// ErrNotRegular: the rename would replace it.
func WriteFileAtomic(path string, data []byte) error {
	if err := CheckRegular(path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	name := tmp.Name()
	fail := func(err error) error {
		tmp.Close()
		os.Remove(name)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(name)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// FileLabel names the file in messages: its path, or "params data" for bytes.
func FileLabel(file string) string {
	if file == "" {
		return "params data"
	}
	return file
}

func describe(file, path string) string { return FileLabel(file) + ": " + path }
