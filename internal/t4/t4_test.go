package t4

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/trace"
	"github.com/kerntune/kerntune/params/paramfile"
)

func testParams() *paramfile.File {
	entry := func(bn int, us float64, defBN int, defUS float64) *paramfile.Entry {
		return &paramfile.Entry{Params: map[string]int{"BN": bn}, MedianUS: us,
			Default: &paramfile.Reference{Params: map[string]int{"BN": defBN}, MedianUS: defUS}}
	}
	return &paramfile.File{Devices: map[string]*paramfile.Device{
		"cpu:b": {TunedAt: "2026-01-02T03:04:05Z", Kernels: map[string]map[string]*paramfile.Entry{
			"gemv_nt": {"f32/tiny": entry(64, 40, 16, 80), "f32/mid": entry(8, 90, 8, 91)}}},
		"cpu:a": {TunedAt: "not a time", Kernels: map[string]map[string]*paramfile.Entry{
			"softmax": {"f32/short": entry(4, 2, 1, 3)}}},
	}}
}

func TestFromParams(t *testing.T) {
	tests := []struct {
		name string
		sel  Select
		want []string // device kernel key role of each result, in order
	}{
		{"all", Select{}, []string{"cpu:a softmax f32/short winner", "cpu:a softmax f32/short default",
			"cpu:b gemv_nt f32/mid winner", "cpu:b gemv_nt f32/tiny winner", "cpu:b gemv_nt f32/tiny default"}},
		{"one device", Select{Device: "cpu:b", Key: "f32/tiny"}, []string{"cpu:b gemv_nt f32/tiny winner", "cpu:b gemv_nt f32/tiny default"}},
		{"nothing", Select{Kernel: "nope"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := FromParams(testParams(), tt.sel, "kerntune test")
			var got []string
			for _, r := range doc.Results {
				got = append(got, strings.Join([]string{r.Entry.Device, r.Entry.Kernel, r.Entry.Key, r.Entry.Role}, " "))
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || doc.Results == nil {
				t.Errorf("results %q, want %q", got, tt.want)
			}
		})
	}
	doc := FromParams(testParams(), Select{Device: "cpu:b", Key: "f32/tiny"}, "kerntune test")
	w := doc.Results[0]
	if w.Timestamp != "2026-01-02 03:04:05.000000+00:00" || string(w.Configuration["BN"]) != "64" || w.Correctness != 1 || string(w.Time()) != "0.04" {
		t.Errorf("winner %+v: want Kernel Tuner's timestamp, BN 64, correct, 0.04 ms", w)
	}
	if doc.SchemaVersion != SchemaVersion || doc.Metadata.TimeUnit != TimeUnit || doc.Metadata.Generator != "kerntune test" {
		t.Errorf("header %+v", doc)
	}
}

func TestFromTraceInvalidity(t *testing.T) {
	recs := []trace.Record{
		{Device: "cpu:b", Kernel: "gemv_nt", DType: "f32", Key: "f32/tiny", Params: map[string]int{"BN": 64}, MedianUS: 40, Samples: 9},
		{Device: "cpu:b", Kernel: "gemv_nt", DType: "f32", Key: "f32/tiny", Params: map[string]int{"BN": 8}, Err: "verification: relative error 1"},
		{Device: "cpu:b", Kernel: "gemv_nt", DType: "f32", Key: "f32/tiny", Params: map[string]int{"BN": 4}, Err: "build: too many registers"},
		{Device: "cpu:x", Kernel: "gemv_nt", DType: "f32", Key: "f32/tiny", Params: map[string]int{"BN": 2}, Err: "crashed"},
		{Device: "cpu:b", Kernel: "gemv_nt", DType: "f32", Key: "f32/mid", Params: map[string]int{"BN": 2}, MedianUS: 1},
	}
	doc := FromTrace(testParams(), recs, "run.jsonl", Select{Key: "f32/tiny"}, "kerntune test")
	want := []struct{ invalidity, time, ts string }{
		{"correct", "0.04", "2026-01-02 03:04:05.000000+00:00"},
		{"correctness", `"InvalidConfig"`, "2026-01-02 03:04:05.000000+00:00"},
		{"compile", `"CompilationFailedConfig"`, "2026-01-02 03:04:05.000000+00:00"},
		{"runtime", `"RuntimeFailedConfig"`, ""}, // a device the params file lacks
	}
	if len(doc.Results) != len(want) || doc.Metadata.Source != "trace run.jsonl" {
		t.Fatalf("%d results from %q, want %d", len(doc.Results), doc.Metadata.Source, len(want))
	}
	for i, w := range want {
		r := doc.Results[i]
		if r.Invalidity != w.invalidity || string(r.Time()) != w.time || r.Timestamp != w.ts || (r.Correctness == 1) != (w.invalidity == "correct") {
			t.Errorf("result %d: %s %s %q correctness %g; want %s %s %q", i, r.Invalidity, r.Time(), r.Timestamp, r.Correctness, w.invalidity, w.time, w.ts)
		}
	}
}

// What Encode writes, Parse reads back the same, gzip-compressed or not.
func TestEncodeParse(t *testing.T) {
	doc := FromParams(testParams(), Select{}, "kerntune test")
	for _, gz := range []bool{false, true} {
		data, err := doc.Encode(gz)
		if err != nil {
			t.Fatal(err)
		}
		if gz {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("not gzip: %v", err)
			}
			if data, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.HasSuffix(data, []byte("}\n")) || !bytes.Contains(data, []byte(`"times": {}`)) {
			t.Errorf("encoding:\n%s", data)
		}
		back, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := json.Marshal(back)
		first, _ := json.Marshal(doc)
		if !bytes.Equal(again, first) {
			t.Errorf("round trip changed the document:\n%s\n%s", first, again)
		}
	}
}

// Kernel Tuner spells milliseconds "milliseconds" since late 2024 and
// "miliseconds" before: both are read, and the new spelling is written.
func TestTimeUnit(t *testing.T) {
	if TimeUnit != "milliseconds" {
		t.Errorf("TimeUnit %q, want Kernel Tuner's milliseconds", TimeUnit)
	}
	data, err := FromParams(testParams(), Select{}, "kerntune test").Encode(false)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"timeunit": "milliseconds"`)) {
		t.Errorf("written metadata lacks timeunit milliseconds:\n%.300s", data)
	}
	for _, u := range []string{"milliseconds", "miliseconds", "ms", ""} {
		doc := `{"schema_version": "1.0.0", "metadata": {"timeunit": "` + u + `"}, "results": []}`
		if _, err := Parse([]byte(doc)); err != nil {
			t.Errorf("timeunit %q: %v", u, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct{ data, want string }{
		{`{"metadata": {"timeunit": "seconds"}, "results": []}`, `metadata.timeunit "seconds"`},
		{`{"results": 3}`, "T4 results"},
	} {
		if _, err := Parse([]byte(tt.data)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%s) = %v, want an error with %q", tt.data, err, tt.want)
		}
	}
}
