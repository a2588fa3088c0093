package ktcache

import (
	"bytes"
	"compress/gzip"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/t4"
	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/internal/trace"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/search"
)

// A classic cache with an integer, a string-valued and a float parameter,
// one compile failure and one runtime failure.
const synthClassic = `{
 "device_name": "Test GPU", "kernel_name": "k",
 "tune_params_keys": ["bx", "method", "f"],
 "tune_params": {"bx": [32, 64], "method": ["a", "b"], "f": [0.5, 1.5]},
 "cache": {
  "32,a,0.5": {"bx": 32, "method": "a", "f": 0.5, "time": 2.0, "times": [1.0, 3.0], "compile_time": 500},
  "64,a,0.5": {"bx": 64, "method": "a", "f": 0.5, "time": 1.5, "times": [1.5, 1.5, 1.5]},
  "32,b,1.5": {"bx": 32, "method": "b", "f": 1.5, "time": "CompilationFailedConfig", "compile_time": 100},
  "64,b,1.5": {"bx": 64, "method": "b", "f": 1.5, "time": "RuntimeFailedConfig"}
 }
}`

const synthT4 = `{"metadata": {"timeunit": "miliseconds"}, "schema_version": "1.0.0", "results": [
 {"configuration": {"bx": 32, "ty": 1}, "times": {"compilation": 800, "runtimes": [2, 4]}, "invalidity": "correct",
  "measurements": [{"name": "time", "value": 3.0, "unit": ""}]},
 {"configuration": {"bx": 64, "ty": 1}, "times": {"compilation": 700}, "invalidity": "runtime",
  "measurements": [{"name": "time", "value": "RuntimeFailedConfig", "unit": ""}]},
 {"configuration": {"bx": 16, "ty": 2}, "times": {"compilation": 600, "runtimes": [1]}, "invalidity": "correct",
  "measurements": [{"name": "time", "value": 1.0, "unit": ""}]}
]}`

func TestParseSynthetic(t *testing.T) {
	tests := []struct {
		name       string
		data       string
		params     int
		configs    int
		valid      int
		best       string
		bestTime   float64
		bestTimes  int
		values0    []int // values of the first parameter
		compileOf  string
		compileSec float64
		first      string // FirstValues: first listed (classic), smallest (T4; not recorded here)
	}{
		{"classic", synthClassic, 3, 4, 2, "bx=64,f=0,method=0", 1.5e-3, 3, []int{32, 64}, "bx=32,f=0,method=0", 0.5, "bx=32,f=0,method=0"},
		{"t4", synthT4, 2, 3, 2, "bx=16,ty=2", 1e-3, 1, []int{16, 32, 64}, "bx=32,ty=1", 0.8, "bx=16,ty=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Params) != tt.params || len(c.Configs) != tt.configs || c.ValidCount() != tt.valid {
				t.Fatalf("params %d configs %d valid %d, want %d %d %d", len(c.Params), len(c.Configs), c.ValidCount(), tt.params, tt.configs, tt.valid)
			}
			if got := c.Params[0].Values; len(got) != len(tt.values0) || got[0] != tt.values0[0] || got[len(got)-1] != tt.values0[len(got)-1] {
				t.Errorf("first parameter values %v, want %v", got, tt.values0)
			}
			if got := c.FirstValues().Key(); got != tt.first {
				t.Errorf("first values %s, want %s", got, tt.first)
			}
			b, ok := c.Best()
			if !ok || b.Candidate.Key() != tt.best || b.Time != tt.bestTime || len(b.Times) != tt.bestTimes {
				t.Errorf("best %+v, want %s at %g s with %d samples", b, tt.best, tt.bestTime, tt.bestTimes)
			}
			for _, cfg := range c.Configs {
				if !cfg.Valid && (cfg.Failure == "" || len(cfg.Times) != 0) {
					t.Errorf("invalid %s: failure %q, %d samples", cfg.Candidate.Key(), cfg.Failure, len(cfg.Times))
				}
				if got, ok := c.Lookup(cfg.Candidate); !ok || got != cfg {
					t.Errorf("Lookup(%s) does not find it", cfg.Candidate.Key())
				}
				if cfg.Candidate.Key() == tt.compileOf && cfg.CompileS != tt.compileSec {
					t.Errorf("%s compile time %g s, want %g", tt.compileOf, cfg.CompileS, tt.compileSec)
				}
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, data string }{
		{"not json", `{`},
		{"no cache", `{"tune_params": {}}`},
		{"value not in tune_params", `{"tune_params_keys":["a"],"tune_params":{"a":[1]},"cache":{"2":{"a":2,"time":1}}}`},
		{"key without params", `{"tune_params_keys":["a"],"tune_params":{},"cache":{}}`},
		{"all invalid", `{"tune_params_keys":["a"],"tune_params":{"a":[1]},"cache":{"1":{"a":1,"time":"InvalidConfig"}}}`},
		{"empty", `{"tune_params_keys":["a"],"tune_params":{"a":[1]},"cache":{}}`},
		{"time object", `{"tune_params_keys":["a"],"tune_params":{"a":[1]},"cache":{"1":{"a":1,"time":{}}}}`},
		{"seconds T4", `{"metadata":{"timeunit":"seconds"},"results":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse([]byte(tt.data)); err == nil {
				t.Errorf("Parse accepted %s", tt.data)
			}
		})
	}
}

func TestNonFiniteToNull(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a": 1.5}`, `{"a": 1.5}`},
		{`{"a": NaN, "b": [Infinity, -Infinity, 2]}`, `{"a": null, "b": [null, null, 2]}`},
		{`{"NaN": "Infinity", "k": "x\"NaN"}`, `{"NaN": "Infinity", "k": "x\"NaN"}`},
		{`{"k": "a\\", "t": NaN}`, `{"k": "a\\", "t": null}`},
	}
	for _, tt := range tests {
		if got := string(nonFiniteToNull([]byte(tt.in))); got != tt.want {
			t.Errorf("nonFiniteToNull(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// Python's json module writes NaN and Infinity; a cache holding them reads
// as if they were null.
func TestParseNonFinite(t *testing.T) {
	const classicNaN = `{
 "device_name": "GPU \"NaN\" Infinity", "kernel_name": "k",
 "tune_params_keys": ["bx"], "tune_params": {"bx": [1, 2, 3, 4]},
 "cache": {
  "1": {"bx": 1, "time": NaN, "times": [NaN]},
  "2": {"bx": 2, "time": 2.0, "times": [1.0, NaN, 3.0, Infinity], "GFLOP/s": NaN},
  "3": {"bx": 3, "time": -Infinity},
  "4": {"bx": 4, "time": 4.0, "times": [4.0], "GFLOP/s": Infinity}
 }
}`
	const t4NaN = `{"metadata": {"timeunit": "milliseconds"}, "results": [
 {"configuration": {"bx": 1}, "times": {"compilation": NaN, "runtimes": [NaN]}, "invalidity": "correct",
  "measurements": [{"name": "time", "value": NaN, "unit": ""}]},
 {"configuration": {"bx": 2}, "times": {"runtimes": [2, Infinity]}, "invalidity": "correct",
  "measurements": [{"name": "time", "value": 2.0, "unit": ""}]}
]}`
	tests := []struct {
		name    string
		data    string
		device  string
		valid   []string // keys of the valid configurations
		samples int      // samples of the best
	}{
		{"classic", classicNaN, `GPU "NaN" Infinity`, []string{"bx=2", "bx=4"}, 2},
		{"t4", t4NaN, "", []string{"bx=2"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if c.Device != tt.device {
				t.Errorf("device %q, want %q (strings must keep their NaN)", c.Device, tt.device)
			}
			var valid []string
			for _, cfg := range c.Configs {
				if cfg.Valid {
					valid = append(valid, cfg.Candidate.Key())
				} else if !strings.Contains(cfg.Failure, "not a number") {
					t.Errorf("%s: failure %q", cfg.Candidate.Key(), cfg.Failure)
				}
			}
			if strings.Join(valid, " ") != strings.Join(tt.valid, " ") {
				t.Errorf("valid %v, want %v", valid, tt.valid)
			}
			b, _ := c.Best()
			if b.Candidate.Key() != "bx=2" || len(b.Times) != tt.samples {
				t.Errorf("best %s with %d samples, want bx=2 with %d", b.Candidate.Key(), len(b.Times), tt.samples)
			}
		})
	}
}

func TestLoadGzip(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(synthClassic))
	zw.Close()
	gz := testutil.WriteFile(t, dir, "s.json.gz", buf.String())
	plain := testutil.WriteFile(t, dir, "s.json", synthClassic)
	for _, p := range []string{gz, plain} {
		c, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Configs) != 4 || c.Path != p {
			t.Errorf("%s: %d configs, path %q", p, len(c.Configs), c.Path)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

// What is not a cache is refused at its first byte, before it is read
// whole: a device that never ends (/dev/zero), an array, an empty file;
// leading white space is allowed.
func TestLoadNotACache(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string { return testutil.WriteFile(t, dir, name, text) }
	tests := []struct{ name, path, want string }{
		{"a device that never ends", "/dev/zero", `/dev/zero: not a Kernel Tuner cache (a JSON object, .json or .json.gz): it starts with '\x00'`},
		{"an array", write("a.json", " [1, 2]"), "it starts with '['"},
		{"empty", write("e.json", ""), "e.json: not a Kernel Tuner cache (a JSON object, .json or .json.gz): empty"},
		{"white space before the object", write("w.json", "\n\t "+synthClassic), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := os.Stat(tt.path); err != nil {
				t.Skip(err)
			}
			_, err := Load(tt.path)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load(%s): %v; want %q", tt.path, err, tt.want)
			}
		})
	}
}

// SharedCaches lists the Kernel Tuner caches of the shared test data: the
// directory named by KTDEV_KT_CACHES, else shared/testdata/kerneltuner next
// to the repository. Without them the test skips, unless
// KTDEV_REQUIRE_KT_CACHES is set.
func sharedCaches(t *testing.T) []string {
	t.Helper()
	dirs := []string{os.Getenv("KTDEV_KT_CACHES"), "../../../shared/testdata/kerneltuner", "../../shared/testdata/kerneltuner"}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if m, _ := filepath.Glob(filepath.Join(d, "*.json.gz")); len(m) > 0 {
			return m
		}
	}
	testutil.SkipUnlessRequired(t, "KTDEV_REQUIRE_KT_CACHES", "no Kernel Tuner caches (set KTDEV_KT_CACHES to their directory)")
	return nil
}

func TestSharedCaches(t *testing.T) {
	for _, p := range sharedCaches(t) {
		t.Run(filepath.Base(p), func(t *testing.T) {
			c, err := Load(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Params) == 0 || len(c.Configs) < 100 {
				t.Fatalf("%d parameters, %d configurations", len(c.Params), len(c.Configs))
			}
			for _, cfg := range c.Configs {
				if err := c.Space().Check(cfg.Candidate); err != nil {
					t.Fatalf("recorded configuration outside tune_params: %v", err)
				}
				if cfg.Valid && (len(cfg.Times) == 0 || cfg.Time <= 0) {
					t.Fatalf("valid %s without samples", cfg.Candidate.Key())
				}
			}
			b, _ := c.Best()
			t.Logf("%d params, %d configs (%d valid), best %.4g ms", len(c.Params), len(c.Configs), c.ValidCount(), b.Time*1e3)
		})
	}
}

// What kerntune export --t4 writes (package t4) loads as a cache: one
// format, one writer and one reader.
func TestParseExportedT4(t *testing.T) {
	recs := []trace.Record{
		{Device: "cpu:a", Kernel: "gemv_nt", DType: "f32", Key: "f32/tiny", Params: map[string]int{"BN": 64}, MedianUS: 40, Samples: 9},
		{Device: "cpu:a", Kernel: "gemv_nt", DType: "f32", Key: "f32/tiny", Params: map[string]int{"BN": 16}, MedianUS: 55.5, Samples: 3},
		{Device: "cpu:a", Kernel: "gemv_nt", DType: "f32", Key: "f32/tiny", Params: map[string]int{"BN": 8}, Err: "verification: wrong"},
	}
	data, err := t4.FromTrace(&paramfile.File{}, recs, "run.jsonl", t4.Select{}, "kerntune test").Encode(false)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	best, ok := c.Best()
	if len(c.Configs) != 3 || c.ValidCount() != 2 || !ok || best.Candidate["BN"] != 64 || math.Abs(best.Time-40e-6) > 1e-12 {
		t.Errorf("%d configs, %d valid, best %+v; want 3, 2, BN=64 at 40 µs", len(c.Configs), c.ValidCount(), best)
	}
	if cfg, ok := c.Lookup(search.Candidate{"BN": 8}); !ok || cfg.Valid || cfg.Failure != "InvalidConfig" {
		t.Errorf("failed configuration %+v", cfg)
	}
}

// A whole-file export holds several kerntune entries (here two shape
// classes whose configurations coincide): replay refuses it, naming
// kerntune export's --device, --kernel and --key for one of them, and
// takes the file of one entry.
func TestParseExportedT4SeveralEntries(t *testing.T) {
	recs := []trace.Record{
		{Device: "cpu:a", Kernel: "gemv_nt", DType: "f32", Key: "f32/tiny", Params: map[string]int{"BN": 64}, MedianUS: 40, Samples: 9},
		{Device: "cpu:a", Kernel: "gemv_nt", DType: "f32", Key: "f32/mid", Params: map[string]int{"BN": 64}, MedianUS: 90, Samples: 9},
		{Device: "cpu:a", Kernel: "softmax", DType: "f32", Key: "f32/mid", Params: map[string]int{"TPR": 32, "RPB": 2}, MedianUS: 9, Samples: 9},
	}
	data, err := t4.FromTrace(&paramfile.File{}, recs, "run.jsonl", t4.Select{}, "kerntune test").Encode(false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse(data)
	if err == nil || !strings.Contains(err.Error(), "3 kerntune entries") || !strings.Contains(err.Error(), "--device cpu:a --kernel gemv_nt --key f32/tiny") {
		t.Errorf("Parse of a three-entry export: %v; want an error naming --device, --kernel and --key", err)
	}
	one, err := t4.FromTrace(&paramfile.File{}, recs, "run.jsonl", t4.Select{Kernel: "gemv_nt", Key: "f32/mid"}, "kerntune test").Encode(false)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := Parse(one); err != nil || len(c.Configs) != 1 {
		t.Errorf("Parse of one entry: %v", err)
	}
}
