package main

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/params/paramfile"
)

// getFile is a params file with two amd64 CPUs.
const getFile = `{
  "schema_version": 1,
  "generator": "kerntune test",
  "devices": {
    "cpu:a": {"backend": "cpu", "name": "A", "family": "amd64", "compute_units": 2, "kernels": {
      "gemv_nt": {
        "f32/tiny":      {"params": {"BN": 64, "ROWS": 2, "UNROLL": 4, "THREADS": 2}, "median_us": 40.0, "iqr_us": 1.0, "samples": 30, "shapes": [[1, 896, 896]], "candidates": {"valid": 588, "measured": 100, "failed": 0}},
        "f32/1x896x896": {"params": {"BN": 16, "ROWS": 4, "UNROLL": 8, "THREADS": 1}, "median_us": 38.0, "iqr_us": 1.0, "samples": 30, "shapes": [[1, 896, 896]], "candidates": {"valid": 588, "measured": 588, "failed": 0}}
      }}},
    "cpu:b": {"backend": "cpu", "name": "B", "family": "amd64", "compute_units": 4, "kernels": {
      "gemv_nt": {"f32/mid": {"params": {"BN": 128, "ROWS": 1, "UNROLL": 2, "THREADS": 4}, "median_us": 900.0, "iqr_us": 9.0, "samples": 20, "shapes": [[1, 4096, 4096]], "candidates": {"valid": 588, "measured": 50, "failed": 0}}}}}
  }
}`

// wantUsageError runs kerntune with args and fails t unless it exits with
// exitUsage and its stderr mentions every string of want.
func wantUsageError(t *testing.T, args []string, want []string) {
	t.Helper()
	code, _, stderr := runIn(args...)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d; stderr: %s", code, exitUsage, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr %q does not mention %q", stderr, w)
		}
	}
}

// getEnv clears the variables get reads and writes the params file.
func getEnv(t *testing.T) string {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "KERNTUNE_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
	path := testutil.WriteFile(t, t.TempDir(), "hp.json", getFile)
	return path
}

// row finds "NAME VALUE SOURCE" in get's table.
func row(out, name string) []string {
	m := regexp.MustCompile(`(?m)^` + name + `\s+(\S+)\s+(\S+)$`).FindStringSubmatch(out)
	if m == nil {
		return nil
	}
	return m[1:]
}

func TestGetText(t *testing.T) {
	path := getEnv(t)
	t.Setenv("KERNTUNE_GEMV_NT_BN", "8")
	code, out, errOut := runIn("get", "--kernel", "gemv_nt", "--shape", "1x896x896", "--params", path, "--device", "cpu:a")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if errOut != "" {
		t.Errorf("stderr: %s", errOut)
	}
	for name, want := range map[string][]string{
		"BN":      {"8", "env:KERNTUNE_GEMV_NT_BN"},
		"ROWS":    {"4", "file:cpu:a/gemv_nt/f32/1x896x896"},
		"UNROLL":  {"8", "file:cpu:a/gemv_nt/f32/1x896x896"},
		"THREADS": {"1", "file:cpu:a/gemv_nt/f32/1x896x896"},
		"class":   nil,
	} {
		if want == nil {
			continue
		}
		if got := row(out, name); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v, want %v\n%s", name, got, want, out)
		}
	}
	for _, want := range []string{"class      tiny", "device     cpu:a  (--device)", "fallbacks  cpu:b", "PARAM    VALUE  SOURCE"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestGetAgreesWithLibrary is the acceptance check: get --json and
// the Go API resolve the same values and sources, for every precedence level.
func TestGetAgreesWithLibrary(t *testing.T) {
	path := getEnv(t)
	tests := []struct {
		name        string
		env         []string
		args        []string
		kernel      string
		shape       string
		opts        params.Options
		wantSources map[string]string
	}{
		{name: "env", env: []string{"KERNTUNE_GEMV_NT_UNROLL", "2"}, args: []string{"--device", "cpu:a"}, opts: params.Options{Device: "cpu:a"},
			kernel: "gemv_nt", shape: "1x896x896",
			wantSources: map[string]string{"BN": "file:cpu:a/gemv_nt/f32/1x896x896", "UNROLL": "env:KERNTUNE_GEMV_NT_UNROLL"}},
		{name: "exact", args: []string{"--device", "cpu:a"}, opts: params.Options{Device: "cpu:a"}, kernel: "gemv_nt", shape: "1x896x896",
			wantSources: map[string]string{"BN": "file:cpu:a/gemv_nt/f32/1x896x896"}},
		{name: "class", env: []string{"KERNTUNE_DEVICE", "cpu:a"}, kernel: "gemv_nt", shape: "1x512x1024",
			wantSources: map[string]string{"BN": "file:cpu:a/gemv_nt/f32/tiny"}},
		{name: "fallback", args: []string{"--device", "cpu:a"}, opts: params.Options{Device: "cpu:a"}, kernel: "gemv_nt", shape: "1x4096x2048",
			wantSources: map[string]string{"BN": "fallback:cpu:b/gemv_nt/f32/mid"}},
		{name: "fallback for a device not in the file", args: []string{"--device", "cpu:new", "--device-family", "amd64"},
			opts: params.Options{Device: "cpu:new", DeviceFamily: "amd64"}, kernel: "gemv_nt", shape: "1x896x896",
			wantSources: map[string]string{"BN": "fallback:cpu:a/gemv_nt/f32/1x896x896"}},
		{name: "default", args: []string{"--device", "cpu:b"}, opts: params.Options{Device: "cpu:b"}, kernel: "softmax", shape: "64x896",
			wantSources: map[string]string{"ROWS": "default", "THREADS": "default"}},
		{name: "gemm f16", args: []string{"--device", "cpu:b", "--dtype", "f16"}, opts: params.Options{Device: "cpu:b"}, kernel: "gemm_av", shape: "512x4864x896",
			wantSources: map[string]string{"MC": "default"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := 0; i+1 < len(tt.env); i += 2 {
				t.Setenv(tt.env[i], tt.env[i+1])
			}
			args := append([]string{"get", "--kernel", tt.kernel, "--shape", tt.shape, "--params", path, "--json"}, tt.args...)
			code, out, errOut := runIn(args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var got struct {
				Device, Kernel, DType, Class string
				Params                       map[string]params.Value
			}
			testutil.DecodeJSON(t, out, &got)
			tt.opts.Path = path
			l, err := params.Open(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			shape, _ := families.ParseShape(tt.shape)
			dtype := "f32"
			if len(tt.args) > 2 && tt.args[2] == "--dtype" {
				dtype = tt.args[3]
			}
			r, err := l.Resolve(tt.kernel, dtype, shape)
			if err != nil {
				t.Fatal(err)
			}
			if got.Device != r.Device || got.Kernel != r.Family || got.DType != r.DType || got.Class != r.Class || !reflect.DeepEqual(got.Params, r.Params) {
				t.Errorf("get:     %+v\nlibrary: %+v", got, r)
			}
			for name, src := range tt.wantSources {
				if got.Params[name].Source != src {
					t.Errorf("%s source %q, want %q", name, got.Params[name].Source, src)
				}
			}
		})
	}
}

func TestGetJSONShape(t *testing.T) {
	path := getEnv(t)
	t.Setenv("KERNTUNE_GEMV_NT_BN", "8")
	code, out, errOut := runIn("get", "--kernel", "gemv_nt", "--shape", "1x896x896", "--params", path, "--device", "cpu:a", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var m map[string]any
	testutil.DecodeJSON(t, out, &m)
	for _, k := range []string{"device", "kernel", "dtype", "class", "params"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no %q in %s", k, out)
		}
	}
	bn := m["params"].(map[string]any)["BN"]
	if !reflect.DeepEqual(bn, map[string]any{"value": 8.0, "source": "env:KERNTUNE_GEMV_NT_BN"}) {
		t.Errorf("BN = %v", bn)
	}
}

func TestGetFileLookup(t *testing.T) {
	path := getEnv(t)
	t.Run("KERNTUNE_PARAMS", func(t *testing.T) {
		t.Setenv("KERNTUNE_PARAMS", path)
		t.Setenv("KERNTUNE_DEVICE", "cpu:a")
		code, out, errOut := runIn("get", "--kernel", "gemv_nt", "--shape", "1x100x100")
		if code != 0 || !reflect.DeepEqual(row(out, "BN"), []string{"64", "file:cpu:a/gemv_nt/f32/tiny"}) {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		if !strings.Contains(out, "device     cpu:a  (env:KERNTUNE_DEVICE)") {
			t.Errorf("device line:\n%s", out)
		}
	})
	t.Run("working directory", func(t *testing.T) {
		dir := t.TempDir()
		t.Chdir(dir)
		testutil.WriteFile(t, dir, paramfile.DefaultFileName, string(testutil.ReadFile(t, path)))
		code, out, errOut := runIn("get", "--kernel", "gemv_nt", "--shape", "1x100x100", "--device", "cpu:a")
		if code != 0 || !reflect.DeepEqual(row(out, "BN"), []string{"64", "file:cpu:a/gemv_nt/f32/tiny"}) {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
	})
	t.Run("no file: defaults", func(t *testing.T) {
		t.Chdir(t.TempDir())
		code, out, errOut := runIn("get", "--kernel", "rmsnorm", "--shape", "64x896")
		if code != 0 || errOut != "" {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		for _, p := range []string{"ROWS", "UNROLL", "THREADS"} {
			if r := row(out, p); r == nil || r[1] != "default" {
				t.Errorf("%s: %v\n%s", p, r, out)
			}
		}
		if !strings.Contains(out, "hardware_params.json  (not found; defaults apply)") {
			t.Errorf("file line:\n%s", out)
		}
	})
	t.Run("named file missing: defaults and a warning", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "nope.json")
		code, out, errOut := runIn("get", "--kernel", "softmax", "--shape", "1x151936", "--params", missing, "--json")
		if code != 0 || !strings.Contains(errOut, "kerntune: warning: params file "+missing+" does not exist; built-in defaults apply") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		if !strings.Contains(out, `"source": "default"`) {
			t.Errorf("%s", out)
		}
	})
	t.Run("several devices, none chosen: warning", func(t *testing.T) {
		code, _, errOut := runIn("get", "--kernel", "gemv_nt", "--shape", "1x896x896", "--params", path)
		if code != 0 || !strings.Contains(errOut, "holds 2 devices and none was chosen") || !strings.Contains(errOut, `its devices: cpu:a (backend cpu, name "A", compute units 2, family amd64); cpu:b`) {
			t.Fatalf("exit %d\n%s", code, errOut)
		}
	})
	t.Run("unknown parameter variable: warning", func(t *testing.T) {
		t.Setenv("KERNTUNE_GEMV_NT_XX", "1")
		code, _, errOut := runIn("get", "--kernel", "gemv_nt", "--shape", "1x896x896", "--params", path, "--device", "cpu:a")
		if code != 0 || !strings.Contains(errOut, "kerntune: warning: KERNTUNE_GEMV_NT_XX has no effect: not a variable the loader reads: gemv_nt has no parameter XX") {
			t.Fatalf("exit %d\n%s", code, errOut)
		}
	})
}

func TestGetErrors(t *testing.T) {
	path := getEnv(t)
	broken := testutil.WriteFile(t, t.TempDir(), "broken.json", strings.Replace(getFile, `"BN": 64`, `"BN": 7`, 1))
	notJSON := testutil.WriteFile(t, t.TempDir(), "notjson.json", `{"schema_version": 1,`)
	base := []string{"get", "--params", path, "--device", "cpu:a"}
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no kernel", nil, []string{"--shape", "1x896x896"}, "--kernel and --shape are required"},
		{"no shape", nil, []string{"--kernel", "gemv_nt"}, "--kernel and --shape are required"},
		{"too few dims", nil, []string{"--kernel", "gemv_nt", "--shape", "1x896"}, "gemv_nt takes a shape of 3 dims (m×n×k), got 2"},
		{"zero dim", nil, []string{"--kernel", "gemv_nt", "--shape", "0x1x1"}, `--shape: shape "0x1x1": dim 1 is 0`},
		{"letters", nil, []string{"--kernel", "gemv_nt", "--shape", "ax2x3"}, `dim 1 ("a") is not a positive decimal integer`},
		{"overflow", nil, []string{"--kernel", "gemv_nt", "--shape", "1x99999999999x896"}, "exceeds the limit of 2147483647"},
		{"sign", nil, []string{"--kernel", "gemv_nt", "--shape", "1x-896x896"}, "not a positive decimal integer"},
		{"empty part", nil, []string{"--kernel", "gemv_nt", "--shape", "1xx896"}, "dim 2 is empty"},
		{"gemv with m > 1", nil, []string{"--kernel", "gemv_nt", "--shape", "4x896x896"}, "m must be 1"},
		{"unknown kernel", nil, []string{"--kernel", "gemv", "--shape", "1x896x896"}, `unknown kernel family "gemv" (known: ` + strings.Join(families.BuiltinNames(), ", ") + ")"},
		{"unknown dtype", nil, []string{"--kernel", "gemv_nt", "--shape", "1x896x896", "--dtype", "f64"}, `unknown dtype "f64"`},
		{"env not an integer", []string{"KERNTUNE_GEMV_NT_BN", "big"}, []string{"--kernel", "gemv_nt", "--shape", "1x896x896"},
			`KERNTUNE_GEMV_NT_BN="big": not a base-10 integer; gemv_nt BN on cpu backends allows 4, 8, 16, 32, 64, 128, 256`},
		{"env not allowed", []string{"KERNTUNE_GEMV_NT_ROWS", "3"}, []string{"--kernel", "gemv_nt", "--shape", "1x896x896"},
			`KERNTUNE_GEMV_NT_ROWS="3": not an allowed value of gemv_nt ROWS on cpu backends; allowed: 1, 2, 4`},
		{"param outside allowed values in the file", nil, []string{"--kernel", "gemv_nt", "--shape", "1x896x896", "--params", broken},
			broken + `: devices["cpu:a"].kernels.gemv_nt["f32/tiny"].params.BN: 7 is not an allowed value`},
		{"not JSON", nil, []string{"--kernel", "gemv_nt", "--shape", "1x896x896", "--params", notJSON}, notJSON + ": not valid JSON"},
		{"backend of another kind", nil, []string{"--kernel", "gemv_nt", "--shape", "1x896x896", "--backend", "cuda"}, `Options.Backend is "cuda" but device "cpu:a"`},
		{"env use not allowed", []string{"KERNTUNE_GEMV_NT_USE", "cpu"}, []string{"--kernel", "gemv_nt", "--shape", "1x896x896"},
			`KERNTUNE_GEMV_NT_USE="cpu": not an allowed value; KERNTUNE_GEMV_NT_USE chooses between the tuned gemv_nt kernel and the baseline; allowed: baseline, tuned`},
		{"negative compute units", nil, []string{"--kernel", "gemv_nt", "--shape", "1x896x896", "--compute-units", "-2"}, "--compute-units is -2"},
		{"unknown flag", nil, []string{"--kernel", "gemv_nt", "--shape", "1x896x896", "--bogus"}, "unknown flag: --bogus"},
		{"extra argument", nil, []string{"gemv_nt"}, `unknown command "gemv_nt" for "kerntune get"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := 0; i+1 < len(tt.env); i += 2 {
				t.Setenv(tt.env[i], tt.env[i+1])
			}
			code, out, errOut := runIn(append(append([]string{}, base...), tt.args...)...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if out != "" {
				t.Errorf("stdout: %s", out)
			}
			if !strings.HasPrefix(errOut, "kerntune: ") || !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr %q lacks %q", errOut, tt.want)
			}
		})
	}
}

// TestGetDeviceName: get finds a device by name, reports how, and shows the
// warning and the entry's use of the baseline, in text and JSON.
func TestGetDeviceName(t *testing.T) {
	getEnv(t)
	data := `{"schema_version": 1, "devices": {
	  "cuda:NVIDIA H100 80GB HBM3": {"backend": "cuda", "name": "NVIDIA H100 80GB HBM3", "family": "sm_90", "compute_units": 132, "kernels": {
	    "gemm_av": {"f16/large": {"params": {"BM": 64, "BN": 64, "TM": 4, "TN": 4}, "baseline": {"name": "cuBLAS", "median_us": 13.2}, "use": "baseline"}}}},
	  "metal:Apple M3 Max:40c": {"backend": "metal", "name": "Apple M3 Max", "family": "apple9", "compute_units": 40, "kernels": {}},
	  "metal:Apple M3 Max:30c": {"backend": "metal", "name": "Apple M3 Max", "family": "apple9", "compute_units": 30, "kernels": {}}}}`
	path := testutil.WriteFile(t, t.TempDir(), "merged.json", data)
	base := []string{"get", "--params", path, "--kernel", "gemm_av", "--dtype", "f16", "--shape", "512x4864x896"}

	code, out, errOut := runIn(append(base, "--device-name", "nvidia h100 80GB HBM3")...)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{`(?m)^device\s+cuda:NVIDIA H100 80GB HBM3  \(--device-name\)$`, `(?m)^matched\s+name$`,
		`(?m)^use\s+baseline \(baseline cuBLAS\)  \[file:cuda:NVIDIA H100 80GB HBM3/gemm_av/f16/large\]$`,
		`(?m)^BM\s+64\s+file:cuda:NVIDIA H100 80GB HBM3/gemm_av/f16/large$`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}

	t.Setenv("KERNTUNE_GEMM_AV_USE", "tuned")
	code, out, errOut = runIn(append(base, "--device-name", "Apple M3 Max", "--compute-units", "38", "--json")...)
	// No variant has 38 cores: the nearest applies, with a warning.
	nearest := "chose metal:Apple M3 Max:40c, the nearest in compute units"
	if code != 0 || !strings.Contains(errOut, nearest) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var got getOutput
	testutil.DecodeJSON(t, out, &got)
	if got.Device != "metal:Apple M3 Max:40c" || got.Matched != "name, nearest compute units (40 for 38)" || got.How != "Options.DeviceName" ||
		got.UseBaseline || got.UseSource != "env:KERNTUNE_GEMM_AV_USE" || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], nearest) {
		t.Errorf("got %+v", got)
	}

	os.Unsetenv("KERNTUNE_GEMM_AV_USE") // t.Setenv above restores it after the test
	t.Setenv("KERNTUNE_DEVICE_NAME", "Apple M4 Max")
	code, out, errOut = runIn(append(base, "--device-family", "apple9", "--backend", "metal", "--json")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	got = getOutput{}
	testutil.DecodeJSON(t, out, &got)
	wantWarn := `no device in ` + path + ` matches name "Apple M4 Max" (env:KERNTUNE_DEVICE_NAME) on backend metal; using fallback devices metal:Apple M3 Max:30c, metal:Apple M3 Max:40c (family apple9); its devices: cuda:NVIDIA H100 80GB HBM3`
	if got.Matched != "family apple9" || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], wantWarn) || !strings.Contains(errOut, "kerntune: warning: "+wantWarn) {
		t.Errorf("matched %q warnings %q stderr %q", got.Matched, got.Warnings, errOut)
	}
	if got.Params["BM"].Source != "default" || got.UseSource != "default" {
		t.Errorf("params %+v use source %q", got.Params, got.UseSource)
	}
}

// TestGetOnlyDeviceOfAnotherMachine: a file holding only another machine's
// device is not applied as "the only device"; get says so, naming both
// devices, in text and JSON.
func TestGetOnlyDeviceOfAnotherMachine(t *testing.T) {
	getEnv(t)
	data := `{"schema_version": 1, "devices": {
	  "metal:Apple M2:10c": {"backend": "metal", "name": "Apple M2", "family": "apple8", "compute_units": 10, "kernels": {
	    "softmax": {"f32/medium": {"params": {"TPR": 64}}}}}}}`
	path := testutil.WriteFile(t, t.TempDir(), "other.json", data)
	local := params.LocalDevice()
	code, out, errOut := runIn("get", "--params", path, "--kernel", "softmax", "--shape", "64x896", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var got getOutput
	testutil.DecodeJSON(t, out, &got)
	want := "the only device in " + path + `, metal:Apple M2:10c (backend metal, name "Apple M2", compute units 10, family apple8), is not the local device ` +
		local.Key + " (backend cpu"
	if got.Matched != params.MatchedNone || got.Device != "" || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], want) ||
		!strings.Contains(got.Warnings[0], "another backend; built-in defaults apply") || !strings.Contains(errOut, "kerntune: warning: "+want) {
		t.Errorf("matched %q device %q warnings %q\nstderr %s", got.Matched, got.Device, got.Warnings, errOut)
	}
	for name, v := range got.Params {
		if v.Source != params.SourceDefault {
			t.Errorf("%s from %s, want the default", name, v.Source)
		}
	}
}

// TestGetUnusedEnv: every KERNTUNE_ variable without effect on get's output
// is a warning saying why, on stderr and in --json's warnings and unused_env.
func TestGetUnusedEnv(t *testing.T) {
	path := getEnv(t)
	env := map[string]string{
		"KERNTUNE_GEMV_NT_BN": "8", "KERNTUNE_GEMV_NT_TG": "64", "KERNTUNE_GEMV_NT_XX": "1", "KERNTUNE_SOFTMAX_ROWS": "2",
		"KERNTUNE_PARAMS": "elsewhere.json", "KERNTUNE_DEVICE": "cpu:b",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	want := map[string]string{
		"KERNTUNE_GEMV_NT_TG":   "gemv_nt TG is a parameter of gpu backends, not of cpu ones (the device: cpu:a, backend cpu; its gemv_nt parameters: BN, ROWS, UNROLL, THREADS)",
		"KERNTUNE_GEMV_NT_XX":   "not a variable the loader reads: gemv_nt has no parameter XX",
		"KERNTUNE_SOFTMAX_ROWS": "it sets softmax ROWS; get resolves only gemv_nt",
		"KERNTUNE_PARAMS":       "not read: --params names the params file",
		"KERNTUNE_DEVICE":       "not read: --device names the device",
	}
	code, out, errOut := runIn("get", "--kernel", "gemv_nt", "--shape", "1x896x896", "--params", path, "--device", "cpu:a", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var got getOutput
	testutil.DecodeJSON(t, out, &got)
	if len(got.UnusedEnv) != len(want) || len(got.Warnings) != len(want) {
		t.Fatalf("unused %+v\nwarnings %q; want %d of each", got.UnusedEnv, got.Warnings, len(want))
	}
	for i, v := range got.UnusedEnv {
		if !strings.Contains(v.Why, want[v.Name]) || want[v.Name] == "" {
			t.Errorf("%s: why %q, want %q", v.Name, v.Why, want[v.Name])
		}
		line := v.Name + " has no effect: " + v.Why
		if got.Warnings[i] != line || !strings.Contains(errOut, "kerntune: warning: "+line+"\n") {
			t.Errorf("warning %q, want %q on stderr too:\n%s", got.Warnings[i], line, errOut)
		}
	}
	if got.Params["BN"].Source != "env:KERNTUNE_GEMV_NT_BN" {
		t.Errorf("BN from %s", got.Params["BN"].Source)
	}
}

// TestGetSpecBackend: docs/reference/specs.md's `kerntune get --spec examples/m1_gemv.json
// --kernel m1_gemv --shape 1x896x4864` resolves on a machine without a GPU: a
// spec kernel's backend comes from the spec when the device is not in the
// file; where it cannot, the message names --backend and the spec's backends.
func TestGetSpecBackend(t *testing.T) {
	getEnv(t)
	specPath, err := filepath.Abs(filepath.Join("..", "..", "examples", "m1_gemv.json"))
	if err != nil {
		t.Fatal(err)
	}
	local := params.LocalDevice()
	data := `{"schema_version": 1, "devices": {"` + local.Key + `": {"backend": "cpu", "name": "` + local.Name + `", "family": "` + local.Family + `", "compute_units": 1, "kernels": {}}}}`
	cpuFile := testutil.WriteFile(t, t.TempDir(), "cpu.json", data)
	t.Chdir(t.TempDir()) // no ./hardware_params.json
	base := []string{"get", "--spec", specPath, "--kernel", "m1_gemv", "--shape", "1x896x4864"}
	hint := "m1_gemv is a spec kernel for cuda, metal, opencl backends: name a device of one of them (--device, --device-name) or give --backend cuda|metal|opencl"
	for _, tt := range []struct {
		name    string
		env     []string
		args    []string
		code    int
		backend string
		bn      []string
		stderr  string
	}{
		{name: "as docs/reference/specs.md writes it", code: 0, backend: "cuda", bn: []string{"64", "default"}},
		{name: "with a variable", env: []string{"KERNTUNE_M1_GEMV_BN", "32"}, code: 0, backend: "cuda", bn: []string{"32", "env:KERNTUNE_M1_GEMV_BN"}},
		{name: "--backend opencl", args: []string{"--backend", "opencl"}, code: 0, backend: "opencl", bn: []string{"64", "default"}},
		{name: "--backend cpu", args: []string{"--backend", "cpu"}, code: exitUsage, stderr: hint},
		{name: "a CPU device of the file", args: []string{"--params", cpuFile}, code: exitUsage, stderr: hint},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for i := 0; i+1 < len(tt.env); i += 2 {
				t.Setenv(tt.env[i], tt.env[i+1])
			}
			code, out, errOut := runIn(append(append([]string{}, base...), tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tt.code, out, errOut)
			}
			if tt.code != 0 {
				if !strings.Contains(errOut, tt.stderr) {
					t.Errorf("stderr %q lacks %q", errOut, tt.stderr)
				}
				return
			}
			if runtime.GOOS == "darwin" && tt.backend == "cuda" {
				tt.backend = "metal"
			}
			if !regexp.MustCompile(`(?m)^backend\s+`+tt.backend+`$`).MatchString(out) || !reflect.DeepEqual(row(out, "BN"), tt.bn) || errOut != "" {
				t.Errorf("want backend %s, BN %v:\n%s\nstderr: %s", tt.backend, tt.bn, out, errOut)
			}
		})
	}
}

// A variable of the resolved family that is set but empty is ignored by
// both loaders; get says so instead of ignoring it without a word.
func TestGetNamesAnEmptyVariable(t *testing.T) {
	t.Setenv("KERNTUNE_SOFTMAX_ROWS", " ")
	code, _, errOut := runIn("get", "--kernel", "softmax", "--shape", "2x64", "--params", filepath.Join(t.TempDir(), "none.json"), "--backend", "cpu")
	if code != 0 || !strings.Contains(errOut, "KERNTUNE_SOFTMAX_ROWS has no effect: it is set but empty") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
