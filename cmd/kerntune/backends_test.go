package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/tuner"
	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/metal"
)

// --metal-fast-math configures the metal backend only: with another
// backend it is a usage error naming the flag, on every command that takes it.
func TestMetalFastMathRefusedElsewhere(t *testing.T) {
	t.Parallel()
	checkBackendFlag(t, []string{"--metal-fast-math"}, "--metal-fast-math applies to the metal backend only; this run uses cpu")
}

// checkBackendFlag checks a backend option's flag: every command that
// opens a backend takes it, and tune, verify and bench on the cpu backend
// refuse it before any work (exit 2, the output holding want; tune writes
// no --out).
func checkBackendFlag(t *testing.T, flag []string, want string) {
	t.Helper()
	for _, c := range backendCommands() {
		if c.Flags().Lookup(strings.TrimPrefix(flag[0], "--")) == nil {
			t.Errorf("%s does not take %s", c.Name(), flag[0])
		}
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "p.json")
	for _, args := range [][]string{
		{"tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "2x3", "--budget", "1s", "--out", out},
		{"verify", "--backend", "cpu", "--kernel", "softmax", "--sample", "1000"},
		{"bench", "--backend", "cpu", "--kernel", "softmax", "--shape", "2x3", "--samples", "1", "--params", filepath.Join(dir, "none.json")},
	} {
		wantExit(t, append(args, flag...), exitUsage, want)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("tune wrote --out although it refused %s", flag[0])
	}
}

// The worker process gets the same backend options as the parent.
func TestMetalFastMathReachesWorker(t *testing.T) {
	if got := (backendOptionsOf(map[string]string{"metal-fast-math": "true"})).args(); !slices.Equal(got, []string{"--metal-fast-math"}) {
		t.Errorf("args() = %q", got)
	}
	if got := (backendOptions{}).args(); len(got) != 0 {
		t.Errorf("default args() = %q, want none", got)
	}
}

// A Metal entry records whether it was tuned with fast math, from the
// backend's fact; other backends' entries do not carry the field. The
// written file keeps it and still validates against the schema.
func TestFastMathRecordedInEntry(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	for _, c := range []struct {
		name  string
		info  device.DeviceInfo
		want  *bool
		field string // in the written JSON; "" = absent
	}{
		{"metal, fast math", device.DeviceInfo{Backend: "metal", Facts: map[string]float64{"fast_math": 1}}, &yes, `"fast_math": true`},
		{"metal, default", device.DeviceInfo{Backend: "metal", Facts: map[string]float64{"fast_math": 0}}, &no, `"fast_math": false`},
		{"metal without the fact", device.DeviceInfo{Backend: "metal", Facts: map[string]float64{}}, nil, ""},
		{"cpu", device.DeviceInfo{Backend: "cpu", Facts: map[string]float64{"fast_math": 1}}, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &paramfile.Entry{Params: map[string]int{"TG": 128}, MedianUS: 10, Shapes: [][]int{{1, 896, 896}}}
			tuner.RecordBackendOptions(c.info, e)
			if (e.FastMath == nil) != (c.want == nil) || (e.FastMath != nil && *e.FastMath != *c.want) {
				t.Fatalf("FastMath = %v, want %v", e.FastMath, c.want)
			}
			path, raw, dev, key := writeTestEntry(t, c.info, e)
			var doc struct {
				Devices map[string]struct {
					Kernels map[string]map[string]map[string]json.RawMessage `json:"kernels"`
				} `json:"devices"`
			}
			testutil.DecodeJSON(t, raw, &doc)
			field, has := doc.Devices[dev].Kernels["gemv_nt"][key]["fast_math"]
			if c.field != "" && (!has || `"fast_math": `+string(field) != c.field) {
				t.Errorf("written entry has fast_math %s, want %s:\n%s", field, c.field, raw)
			}
			if c.field == "" && has {
				t.Errorf("written entry has fast_math %s, want none:\n%s", field, raw)
			}
			if err := testutil.Validate(testutil.SchemaFile(t, filepath.Join("..", "..", "params", "schema.json")), raw); err != nil {
				t.Errorf("schema rejects the file: %v", err)
			}
			f, err := paramfile.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := f.Devices[dev].Kernels["gemv_nt"][key]
			if got == nil || (got.FastMath == nil) != (c.want == nil) || (got.FastMath != nil && *got.FastMath != *c.want) {
				t.Errorf("read back %+v", got)
			}
		})
	}
}

// --allow-tf32 configures the cuda backend only, reaches the worker, and
// every command that opens a backend takes it.
func TestAllowTF32Flag(t *testing.T) {
	t.Parallel()
	checkBackendFlag(t, []string{"--allow-tf32"}, "--allow-tf32 applies to the cuda backend only; this run uses cpu")
	if got := (backendOptionsOf(map[string]string{"allow-tf32": "true", "metal-fast-math": "true"})).args(); !slices.Equal(got, []string{"--allow-tf32", "--metal-fast-math"}) {
		t.Errorf("args() = %q", got)
	}
}

// tune --where narrows the search (the entry's valid count shrinks) and
// refuses a malformed filter naming the flag.
func TestTuneWhere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "p.json")
	code, log := runCLI(t, "tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "4x64", "--budget", "4e", "--where", "THREADS=1", "--out", out, "-q")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, log)
	}
	f, err := paramfile.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, dev := range f.Devices {
		for _, e := range dev.Kernels["softmax"] {
			n++
			// The cpu space of softmax is ROWS(6)·UNROLL(4)·THREADS(7); THREADS=1 leaves 24.
			if e.Params["THREADS"] != 1 || e.Candidates.Valid > 24 {
				t.Errorf("winner %v of %d valid: --where THREADS=1 not applied", e.Params, e.Candidates.Valid)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d softmax entries written, want 1", n)
	}
	if code, log := runCLI(t, "tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "4x64", "--where", "THREADS", "--out", out); code != exitUsage || !strings.Contains(log, `--where "THREADS": want NAME=INTEGER`) {
		t.Errorf("malformed --where: exit %d:\n%s", code, log)
	}
}

// auto says why it passed over a backend this machine lacks (no CUDA
// device: a long driver message) only with -v; kerntune devices says it
// always.
func TestAutoSkipsQuietly(t *testing.T) {
	t.Parallel()
	var missing []string
	for _, n := range device.AutoOrder("") {
		b, err := device.Open(n)
		if err == nil {
			b.Close()
			break // auto stops here
		}
		if errors.Is(err, device.ErrUnavailable) {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		t.Skip("auto's first backend opens here: nothing is passed over")
	}
	for _, verbose := range []bool{false, true} {
		var log strings.Builder
		b, err := (*Factory)(nil).OpenBackend(backendRequest{Name: "auto", Log: &log, Verbose: verbose})
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		for _, n := range missing {
			said := strings.Contains(log.String(), "backend "+n+" not used: ")
			if said != verbose {
				t.Errorf("verbose %v: log %q; want the line about %s only with -v", verbose, log.String(), n)
			}
		}
	}
	code, out := runCLI(t, "devices")
	if code != 0 || !strings.Contains(out, missing[0]) {
		t.Errorf("devices (exit %d) does not say why %s is not used:\n%s", code, missing[0], out)
	}
}

// --metal-math-mode takes MLX's three math modes, reaches the worker,
// agrees with --metal-fast-math (its older spelling of fast), and applies
// to the metal backend only.
func TestMetalMathModeFlag(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		given map[string]string
		want  string
		bad   string
	}{
		{nil, "", ""},
		{map[string]string{"metal-math-mode": "safe"}, "safe", ""},
		{map[string]string{"metal-math-mode": "relaxed"}, "relaxed", ""},
		{map[string]string{"metal-fast-math": "true"}, "fast", ""},
		{map[string]string{"metal-fast-math": "false", "metal-math-mode": "relaxed"}, "relaxed", ""},
		{map[string]string{"metal-fast-math": "true", "metal-math-mode": "fast"}, "fast", ""},
		{map[string]string{"metal-fast-math": "true", "metal-math-mode": "safe"}, "", "--metal-fast-math is --metal-math-mode fast, but --metal-math-mode is safe"},
		{map[string]string{"metal-math-mode": "precise"}, "", "--metal-math-mode precise: want safe, relaxed or fast"},
	} {
		opts, err := backendOptionsOf(c.given).options()
		testutil.Outcome(t, fmt.Sprintf("%v", c.given), opts[metal.OptionMathMode], err, c.want, c.bad)
	}
	if got := (backendOptionsOf(map[string]string{"metal-math-mode": "relaxed"})).args(); !slices.Equal(got, []string{"--metal-math-mode", "relaxed"}) {
		t.Errorf("args() = %q", got)
	}
	checkBackendFlag(t, []string{"--metal-math-mode", "fast"}, "--metal-math-mode applies to the metal backend only")
	dir := t.TempDir()
	if code, log := runCLI(t, "tune", "--backend", "cpu", "--metal-math-mode", "precise", "--kernel", "softmax", "--shape", "2x3", "--budget", "1s", "--out", filepath.Join(dir, "p.json")); code != exitUsage || !strings.Contains(log, "want safe, relaxed or fast") {
		t.Errorf("an unknown math mode: exit %d, output:\n%s", code, log)
	}
}

// A Metal entry records the math mode from the backend's fact math_mode
// (MTLMathMode), beside fast_math; the written file keeps it, validates,
// and reads back.
func TestMathModeRecordedInEntry(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		info device.DeviceInfo
		want string
	}{
		{"safe", device.DeviceInfo{Backend: "metal", Facts: map[string]float64{"fast_math": 0, "math_mode": 0}}, "safe"},
		{"relaxed", device.DeviceInfo{Backend: "metal", Facts: map[string]float64{"fast_math": 0, "math_mode": 1}}, "relaxed"},
		{"fast", device.DeviceInfo{Backend: "metal", Facts: map[string]float64{"fast_math": 1, "math_mode": 2}}, "fast"},
		{"older facts", device.DeviceInfo{Backend: "metal", Facts: map[string]float64{"fast_math": 0}}, ""},
		{"cpu", device.DeviceInfo{Backend: "cpu", Facts: map[string]float64{"math_mode": 2}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &paramfile.Entry{Params: map[string]int{"TG": 128}, MedianUS: 10, Shapes: [][]int{{1, 896, 896}}}
			tuner.RecordBackendOptions(c.info, e)
			if e.MathMode != c.want {
				t.Fatalf("MathMode = %q, want %q", e.MathMode, c.want)
			}
			path, raw, dev, key := writeTestEntry(t, c.info, e)
			if err := testutil.Validate(testutil.SchemaFile(t, filepath.Join("..", "..", "params", "schema.json")), raw); err != nil {
				t.Errorf("schema rejects the file: %v", err)
			}
			f, err := paramfile.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Devices[dev].Kernels["gemv_nt"][key]; got == nil || got.MathMode != c.want {
				t.Errorf("read back %+v, want math_mode %q", got, c.want)
			}
		})
	}
}

// writeTestEntry writes e as the f16 gemv_nt entry of a test device with
// info's backend and facts, as tune writes it, and returns the file, its
// bytes, the device's key and the entry's key.
func writeTestEntry(t *testing.T, info device.DeviceInfo, e *paramfile.Entry) (path string, raw []byte, dev, key string) {
	t.Helper()
	k, err := kernels.Get("gemv_nt")
	if err != nil {
		t.Fatal(err)
	}
	info.Key, info.Name, info.Family = info.Backend+":test", "Test GPU", "test"
	path = filepath.Join(t.TempDir(), "hardware_params.json")
	res := &tuner.Result{Task: tuner.Task{Kernel: k, DType: kernels.F16, Cases: []kernels.Case{{Shape: []int{1, 896, 896}}}}, Entry: e}
	if _, err := tuner.WriteResult(path, false, false, info, "kerntune test", res); err != nil {
		t.Fatal(err)
	}
	return path, testutil.ReadFile(t, path), info.Key, res.Task.Key()
}
