package params

import (
	"errors"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/params/paramfile"
)

// mergedFile is what `kerntune merge` makes of runs on several machines:
// two M3 Max variants, an M3 Pro, an H100, an H200 and two CPUs.
const mergedFile = `{
  "schema_version": 1,
  "devices": {
    "metal:Apple M3 Max:30c": {"backend": "metal", "name": "Apple M3 Max", "family": "apple9", "compute_units": 30, "kernels": {
      "gemv_nt": {"f32/tiny": {"params": {"TG": 64}}}}},
    "metal:Apple M3 Max:40c": {"backend": "metal", "name": "Apple M3 Max", "family": "apple9", "compute_units": 40, "kernels": {
      "gemv_nt": {"f32/tiny": {"params": {"TG": 128}}}}},
    "metal:Apple M3 Pro:18c": {"backend": "metal", "name": "Apple M3 Pro", "family": "apple9", "compute_units": 18, "kernels": {
      "gemv_nt": {"f32/tiny": {"params": {"TG": 512}}}}},
    "cuda:NVIDIA H100 80GB HBM3": {"backend": "cuda", "name": "NVIDIA H100 80GB HBM3", "family": "sm_90", "compute_units": 132, "kernels": {
      "gemv_nt": {"f32/tiny": {"params": {"TPR": 64}}},
      "gemm_av": {
        "f16/large": {"params": {"BM": 64}, "baseline": {"name": "cuBLAS", "median_us": 13.2}, "use": "baseline"},
        "f16/512x4864x896": {"params": {"BN": 64}, "baseline": {"name": "cuBLAS", "median_us": 13.0}, "use": "tuned"},
        "f32/large": {"params": {"BM": 32}, "baseline": {"name": "cuBLAS", "median_us": 58}}
      }}},
    "cuda:NVIDIA H200": {"backend": "cuda", "name": "NVIDIA H200", "family": "sm_90", "compute_units": 132, "kernels": {
      "gemm_av": {"f16/medium": {"params": {"BK": 32}, "baseline": {"name": "cuBLAS", "median_us": 5}, "use": "baseline"}}}},
    "cpu:AMD EPYC 7B13:2": {"backend": "cpu", "name": "AMD EPYC 7B13", "family": "amd64", "compute_units": 2, "kernels": {
      "softmax": {"f32/short": {"params": {"ROWS": 16}}}}},
    "cpu:AMD EPYC 7B13:64": {"backend": "cpu", "name": "AMD EPYC 7B13", "family": "amd64", "compute_units": 64, "kernels": {
      "softmax": {"f32/short": {"params": {"ROWS": 64}}}}}
  }
}`

func TestDeviceMatch(t *testing.T) {
	noLocal := &DeviceID{}
	tests := []struct {
		name    string
		opts    Options
		env     []string
		key     string // DeviceChoice.Key
		how     string
		matched string
		inFile  bool
		fb      []string
		warn    []string // substrings of the one warning; nil: no warning
	}{
		{name: "exact key", opts: Options{Device: "metal:Apple M3 Max:40c", Local: noLocal},
			key: "metal:Apple M3 Max:40c", how: "Options.Device", matched: "key", inFile: true, fb: []string{"metal:Apple M3 Max:30c", "metal:Apple M3 Pro:18c"}},
		{name: "key beats name", opts: Options{Device: "metal:Apple M3 Max:30c", DeviceName: "Apple M3 Pro"},
			key: "metal:Apple M3 Max:30c", how: "Options.Device", matched: "key", inFile: true, fb: []string{"metal:Apple M3 Max:40c", "metal:Apple M3 Pro:18c"}},
		{name: "key not in file, name matches", opts: Options{Device: "metal:Apple M3 Max", DeviceName: "Apple M3 Pro"},
			key: "metal:Apple M3 Pro:18c", how: "Options.DeviceName", matched: "name", inFile: true, fb: []string{"metal:Apple M3 Max:30c", "metal:Apple M3 Max:40c"}},
		{name: "name, case and spaces ignored, one device", opts: Options{DeviceName: "  nvidia  h100 80gb HBM3 "},
			key: "cuda:NVIDIA H100 80GB HBM3", how: "Options.DeviceName", matched: "name", inFile: true, fb: []string{"cuda:NVIDIA H200"}},
		{name: "name, exact compute units", opts: Options{DeviceName: "Apple M3 Max", ComputeUnits: 30},
			key: "metal:Apple M3 Max:30c", how: "Options.DeviceName", matched: "name", inFile: true, fb: []string{"metal:Apple M3 Max:40c", "metal:Apple M3 Pro:18c"}},
		{name: "name, nearest compute units", opts: Options{DeviceName: "Apple M3 Max", ComputeUnits: 38, Backend: "metal"},
			key: "metal:Apple M3 Max:40c", how: "Options.DeviceName", matched: "name, nearest compute units (40 for 38)", inFile: true, fb: []string{"metal:Apple M3 Max:30c", "metal:Apple M3 Pro:18c"},
			warn: []string{`device name "Apple M3 Max" (Options.DeviceName) with 38 compute units (Options.ComputeUnits) matches several entries of params data: metal:Apple M3 Max:30c (30 compute units), metal:Apple M3 Max:40c (40 compute units); chose metal:Apple M3 Max:40c, the nearest in compute units; to choose, set KERNTUNE_DEVICE to a key`}},
		{name: "name, nearest compute units, tie by key", opts: Options{DeviceName: "Apple M3 Max", ComputeUnits: 35},
			key: "metal:Apple M3 Max:30c", how: "Options.DeviceName", matched: "name, nearest compute units (30 for 35)", inFile: true, fb: []string{"metal:Apple M3 Max:40c", "metal:Apple M3 Pro:18c"},
			warn: []string{"with 35 compute units (Options.ComputeUnits) matches several entries", "chose metal:Apple M3 Max:30c, the nearest in compute units"}},
		{name: "name, no compute units, first by key", opts: Options{DeviceName: "Apple M3 Max"},
			key: "metal:Apple M3 Max:30c", how: "Options.DeviceName", matched: "name, first of 2 by key (no compute units given)", inFile: true, fb: []string{"metal:Apple M3 Max:40c", "metal:Apple M3 Pro:18c"},
			warn: []string{`device name "Apple M3 Max" (Options.DeviceName) with compute units unknown matches several entries of params data: metal:Apple M3 Max:30c (30 compute units), metal:Apple M3 Max:40c (40 compute units); chose metal:Apple M3 Max:30c, the first by key; to choose, set KERNTUNE_DEVICE to a key or pass Options.ComputeUnits`}},
		{name: "name, this machine's GPU gives the compute units", opts: Options{DeviceName: "Apple M3 Max", LocalGPU: &DeviceID{Backend: "metal", Name: "apple m3 max", ComputeUnits: 40}},
			key: "metal:Apple M3 Max:40c", how: "Options.DeviceName", matched: "name", inFile: true, fb: []string{"metal:Apple M3 Max:30c", "metal:Apple M3 Pro:18c"}},
		{name: "name, this machine's GPU has other compute units", opts: Options{DeviceName: "Apple M3 Max", LocalGPU: &DeviceID{Backend: "metal", Name: "Apple M3 Max", ComputeUnits: 36}},
			key: "metal:Apple M3 Max:40c", how: "Options.DeviceName", matched: "name, nearest compute units (40 for 36)", inFile: true, fb: []string{"metal:Apple M3 Max:30c", "metal:Apple M3 Pro:18c"},
			warn: []string{"with 36 compute units (this machine's GPU) matches several entries", "chose metal:Apple M3 Max:40c, the nearest"}},
		{name: "name, Options.ComputeUnits beats this machine's GPU", opts: Options{DeviceName: "Apple M3 Max", ComputeUnits: 30, LocalGPU: &DeviceID{Backend: "metal", Name: "Apple M3 Max", ComputeUnits: 40}},
			key: "metal:Apple M3 Max:30c", how: "Options.DeviceName", matched: "name", inFile: true, fb: []string{"metal:Apple M3 Max:40c", "metal:Apple M3 Pro:18c"}},
		{name: "name, this machine's GPU is another chip", opts: Options{DeviceName: "Apple M3 Max", LocalGPU: &DeviceID{Backend: "metal", Name: "Apple M3 Pro", ComputeUnits: 18}},
			key: "metal:Apple M3 Max:30c", how: "Options.DeviceName", matched: "name, first of 2 by key (no compute units given)", inFile: true, fb: []string{"metal:Apple M3 Max:40c", "metal:Apple M3 Pro:18c"},
			warn: []string{"with compute units unknown matches several entries", "chose metal:Apple M3 Max:30c, the first by key"}},
		{name: "name from env replaces Options.DeviceName", opts: Options{DeviceName: "Apple M3 Max"}, env: []string{"KERNTUNE_DEVICE_NAME", "NVIDIA H200"},
			key: "cuda:NVIDIA H200", how: "env:KERNTUNE_DEVICE_NAME", matched: "name", inFile: true, fb: []string{"cuda:NVIDIA H100 80GB HBM3"}},
		{name: "key from env beats name from env", env: []string{"KERNTUNE_DEVICE", "cuda:NVIDIA H200", "KERNTUNE_DEVICE_NAME", "Apple M3 Max"},
			key: "cuda:NVIDIA H200", how: "env:KERNTUNE_DEVICE", matched: "key", inFile: true, fb: []string{"cuda:NVIDIA H100 80GB HBM3"}},
		{name: "name of another backend does not match", opts: Options{DeviceName: "NVIDIA H200", Backend: "opencl"},
			how: "", matched: "none", warn: []string{`no device in params data matches name "NVIDIA H200" (Options.DeviceName) on backend opencl; built-in defaults apply; its devices: cpu:AMD EPYC 7B13:2 (backend cpu, name "AMD EPYC 7B13", compute units 2, family amd64);`}},
		{name: "a prefix of a name is no match", opts: Options{DeviceName: "NVIDIA H100", DeviceFamily: "sm_90", Backend: "cuda"},
			matched: "family sm_90", fb: []string{"cuda:NVIDIA H100 80GB HBM3", "cuda:NVIDIA H200"},
			warn: []string{`no device in params data matches name "NVIDIA H100" (Options.DeviceName) on backend cuda; using fallback devices cuda:NVIDIA H100 80GB HBM3, cuda:NVIDIA H200 (family sm_90)`, "cuda:NVIDIA H200 (backend cuda"}},
		{name: "unknown name, same family", opts: Options{DeviceName: "Apple M4 Max", DeviceFamily: "apple9", Backend: "metal"},
			matched: "family apple9", fb: []string{"metal:Apple M3 Max:30c", "metal:Apple M3 Max:40c", "metal:Apple M3 Pro:18c"},
			warn: []string{`matches name "Apple M4 Max"`, "using fallback devices"}},
		{name: "unknown key and name, nothing", opts: Options{Device: "metal:x", DeviceName: "Apple M9"},
			key: "metal:x", how: "Options.Device", matched: "none",
			warn: []string{`no device in params data matches key "metal:x" (Options.Device) or name "Apple M9" (Options.DeviceName); built-in defaults apply`}},
		{name: "local device by key", opts: Options{Local: &DeviceID{Key: "cpu:AMD EPYC 7B13:64", Backend: "cpu", Name: "AMD EPYC 7B13", Family: "amd64", ComputeUnits: 64}},
			key: "cpu:AMD EPYC 7B13:64", how: "local device", matched: "key", inFile: true, fb: []string{"cpu:AMD EPYC 7B13:2"}},
		{name: "local device by name and nearest cores", opts: Options{Local: &DeviceID{Key: "cpu:AMD EPYC 7B13:16", Backend: "cpu", Name: "AMD EPYC 7B13", Family: "amd64", ComputeUnits: 16}},
			key: "cpu:AMD EPYC 7B13:2", how: "local device", matched: "name, nearest compute units (2 for 16)", inFile: true, fb: []string{"cpu:AMD EPYC 7B13:64"},
			warn: []string{`the local device's name "AMD EPYC 7B13" with 16 compute units (local device) matches several entries of params data: cpu:AMD EPYC 7B13:2 (2 compute units), cpu:AMD EPYC 7B13:64 (64 compute units); chose cpu:AMD EPYC 7B13:2, the nearest in compute units`}},
		{name: "local device by family", opts: Options{Local: &DeviceID{Key: "cpu:Intel Xeon:4", Backend: "cpu", Name: "Intel Xeon", Family: "amd64", ComputeUnits: 4}},
			matched: "family amd64", fb: []string{"cpu:AMD EPYC 7B13:2", "cpu:AMD EPYC 7B13:64"},
			warn: []string{`holds 7 devices and none was chosen, and none is the local device (key "cpu:Intel Xeon:4", name "Intel Xeon")`, "using fallback devices cpu:AMD EPYC 7B13:2, cpu:AMD EPYC 7B13:64 (family amd64)"}},
		{name: "local device of another backend is not tried", opts: Options{Backend: "metal", Local: &DeviceID{Key: "cpu:AMD EPYC 7B13:2", Backend: "cpu", Name: "AMD EPYC 7B13", Family: "amd64", ComputeUnits: 2}},
			matched: "none", warn: []string{"holds 7 devices and none was chosen (set KERNTUNE_DEVICE"}},
		{name: "local device turned off", opts: Options{Local: noLocal},
			matched: "none", warn: []string{"holds 7 devices and none was chosen (set KERNTUNE_DEVICE or KERNTUNE_DEVICE_NAME", "its devices: cpu:AMD EPYC 7B13:2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := loadMerged(t, tt.opts, tt.env...)
			d := l.Device()
			if d.Key != tt.key || d.How != tt.how || d.Matched != tt.matched || d.InFile != tt.inFile || strings.Join(d.Fallbacks, "|") != strings.Join(tt.fb, "|") {
				t.Errorf("got key %q how %q matched %q inFile %v fallbacks %q\nwant key %q how %q matched %q inFile %v fallbacks %q",
					d.Key, d.How, d.Matched, d.InFile, d.Fallbacks, tt.key, tt.how, tt.matched, tt.inFile, tt.fb)
			}
			w := l.Warnings()
			if tt.warn == nil {
				if len(w) != 0 {
					t.Errorf("warnings %q, want none", w)
				}
				return
			}
			if len(w) != 1 {
				t.Fatalf("warnings %q, want one", w)
			}
			for _, sub := range tt.warn {
				if !strings.Contains(w[0], sub) {
					t.Errorf("warning %q lacks %q", w[0], sub)
				}
			}
		})
	}
}

// TestMatchedReachesResolved checks that the values follow the matched
// device and that Resolved reports how it was found.
func TestMatchedReachesResolved(t *testing.T) {
	l, err := LoadBytes([]byte(mergedFile), Options{DeviceName: "Apple M3 Max", ComputeUnits: 40, Lookup: env()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.Resolve(GemvNT, "f32", []int{1, 512, 512})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Params["TG"]; got != (Value{128, "file:metal:Apple M3 Max:40c/gemv_nt/f32/tiny"}) {
		t.Errorf("TG = %+v", got)
	}
	if r.Matched != "name" || r.Device != "metal:Apple M3 Max:40c" || r.Backend != "metal" {
		t.Errorf("matched %q device %q backend %q", r.Matched, r.Device, r.Backend)
	}

	// A key that names a device of another kind than Options.Backend stays an error.
	if _, err := LoadBytes([]byte(mergedFile), Options{Device: "cpu:AMD EPYC 7B13:2", Backend: "cuda", Lookup: env()}); err == nil || !strings.Contains(err.Error(), `Options.Backend is "cuda"`) {
		t.Errorf("err = %v", err)
	}
	if _, err := LoadBytes([]byte(mergedFile), Options{ComputeUnits: -1, Lookup: env()}); err == nil || !strings.Contains(err.Error(), "Options.ComputeUnits is -1") {
		t.Errorf("err = %v", err)
	}
}

func TestUseBaseline(t *testing.T) {
	h100 := "cuda:NVIDIA H100 80GB HBM3"
	tests := []struct {
		name     string
		opts     Options
		env      []string
		dtype    string
		shape    []int
		use      bool
		baseline string
		source   string
		errSub   string
	}{
		{name: "class entry says baseline", opts: Options{Device: h100}, dtype: "f16", shape: []int{1024, 1024, 1024},
			use: true, baseline: "cuBLAS", source: "file:" + h100 + "/gemm_av/f16/large"},
		{name: "exact entry says tuned and decides", opts: Options{Device: h100}, dtype: "f16", shape: []int{512, 4864, 896},
			use: false, baseline: "cuBLAS", source: "file:" + h100 + "/gemm_av/f16/512x4864x896"},
		{name: "no use field reads as tuned", opts: Options{Device: h100}, dtype: "f32", shape: []int{1024, 1024, 1024},
			use: false, baseline: "cuBLAS", source: "file:" + h100 + "/gemm_av/f32/large"},
		{name: "fallback entry decides", opts: Options{Device: h100}, dtype: "f16", shape: []int{256, 256, 256},
			use: true, baseline: "cuBLAS", source: "fallback:cuda:NVIDIA H200/gemm_av/f16/medium"},
		{name: "no entry: default", opts: Options{Device: h100}, dtype: "bf16", shape: []int{1024, 1024, 1024},
			use: false, source: "default"},
		{name: "env tuned overrides baseline", opts: Options{Device: h100}, env: []string{"KERNTUNE_GEMM_AV_USE", " tuned "}, dtype: "f16", shape: []int{1024, 1024, 1024},
			use: false, baseline: "cuBLAS", source: "env:KERNTUNE_GEMM_AV_USE"},
		{name: "env baseline without an entry", opts: Options{Device: h100}, env: []string{"KERNTUNE_GEMM_AV_USE", "baseline"}, dtype: "bf16", shape: []int{1024, 1024, 1024},
			use: true, source: "env:KERNTUNE_GEMM_AV_USE"},
		{name: "empty env value is unset", opts: Options{Device: h100}, env: []string{"KERNTUNE_GEMM_AV_USE", ""}, dtype: "f16", shape: []int{1024, 1024, 1024},
			use: true, baseline: "cuBLAS", source: "file:" + h100 + "/gemm_av/f16/large"},
		{name: "custom prefix", opts: Options{Device: h100, EnvPrefix: "APP"}, env: []string{"APP_GEMM_AV_USE", "tuned", "KERNTUNE_GEMM_AV_USE", "baseline"}, dtype: "f16", shape: []int{1024, 1024, 1024},
			use: false, baseline: "cuBLAS", source: "env:APP_GEMM_AV_USE"},
		{name: "bad env value", opts: Options{Device: h100}, env: []string{"KERNTUNE_GEMM_AV_USE", "cublas"}, dtype: "f16", shape: []int{1024, 1024, 1024},
			errSub: `KERNTUNE_GEMM_AV_USE="cublas": not an allowed value; KERNTUNE_GEMM_AV_USE chooses between the tuned gemm_av kernel and the baseline; allowed: baseline, tuned`},
		{name: "values are case-sensitive", opts: Options{Device: h100}, env: []string{"KERNTUNE_GEMM_AV_USE", "Baseline"}, dtype: "f16", shape: []int{1024, 1024, 1024},
			errSub: "allowed: baseline, tuned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := loadMerged(t, tt.opts, tt.env...)
			r, err := l.Resolve(GemmAV, tt.dtype, tt.shape)
			if tt.errSub != "" {
				var ee *EnvError
				if !errors.As(err, &ee) || !strings.Contains(err.Error(), tt.errSub) {
					t.Fatalf("err = %v, want an *EnvError with %q", err, tt.errSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.UseBaseline != tt.use || r.Baseline != tt.baseline || r.UseSource != tt.source {
				t.Errorf("use %v baseline %q source %q, want %v %q %q", r.UseBaseline, r.Baseline, r.UseSource, tt.use, tt.baseline, tt.source)
			}
		})
	}
}

func TestUseField(t *testing.T) {
	bad := `{"schema_version":1,"devices":{"cpu:a":{"backend":"cpu","name":"A","family":"amd64","kernels":{
		"softmax":{"f32/short":{"params":{},"use":"vendor"}}}}}}`
	_, err := paramfile.Parse([]byte(bad))
	var pe *paramfile.PathError
	if !errors.As(err, &pe) || pe.Path != `devices["cpu:a"].kernels.softmax["f32/short"].use` || !strings.Contains(pe.Msg, `is "vendor"; must be "baseline" or "tuned"`) {
		t.Errorf("err = %v", err)
	}
	notString := strings.Replace(bad, `"vendor"`, `true`, 1)
	if _, err := paramfile.Parse([]byte(notString)); err == nil || !strings.Contains(err.Error(), "use: must be a string, got a boolean") {
		t.Errorf("err = %v", err)
	}

	// Merge keeps the field and Parse reads it back.
	out, err := paramfile.Merge(nil, &paramfile.File{Devices: map[string]*paramfile.Device{"cpu:a": {Backend: "cpu", Name: "A", Family: "amd64",
		Kernels: map[string]map[string]*paramfile.Entry{"softmax": {"f32/short": {Params: map[string]int{"ROWS": 4}, Use: paramfile.UseBaseline, Baseline: &paramfile.Baseline{Name: "gonum"}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := paramfile.Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if e := f.Devices["cpu:a"].Kernels["softmax"]["f32/short"]; e.Use != paramfile.UseBaseline || e.Baseline.Name != "gonum" {
		t.Errorf("entry %+v", e)
	}
	if sch := testutil.SchemaFile(t, "schema.json"); testutil.Validate(sch, out) != nil || testutil.Validate(sch, []byte(bad)) == nil {
		t.Errorf("schema.json: use must accept %q and reject \"vendor\"", paramfile.UseBaseline)
	}
}

func TestReservedParamName(t *testing.T) {
	fam := boundedFamily()
	fam.Spaces["gpu"].Params = append(fam.Spaces["gpu"].Params, families.Param{Name: "USE", Values: []int{0, 1}})
	_, err := LoadBytes([]byte(`{"schema_version":1,"devices":{}}`), Options{Families: map[string]*families.Family{fam.Name: fam}, Lookup: env()})
	if err == nil || !strings.Contains(err.Error(), "parameter name USE is reserved") {
		t.Errorf("err = %v", err)
	}
}

func TestKnownVariables(t *testing.T) {
	l, err := LoadBytes([]byte(mergedFile), Options{Lookup: env()})
	if err != nil {
		t.Fatal(err)
	}
	got := l.UnusedEnv([]string{"KERNTUNE_DEVICE_NAME=x", "KERNTUNE_GEMM_AV_USE=baseline", "KERNTUNE_SOFTMAX_USE=tuned", "KERNTUNE_GEMM_AV_USED=1"})
	if strings.Join(got, ",") != "KERNTUNE_GEMM_AV_USED" {
		t.Errorf("UnusedEnv = %q", got)
	}
}

func TestFoldDeviceName(t *testing.T) {
	for _, tt := range []struct{ a, b string }{
		{"Apple M3 Max", "apple m3 max"},
		{" NVIDIA\tH100  80GB HBM3 ", "nvidia h100 80gb hbm3"},
		{`Intel(R) "Xeon" 2.2/3.0GHz`, "intel(r) xeon 2.2-3.0ghz"},
		{"Ä", "Ä"}, // only ASCII letters fold
	} {
		if got := FoldDeviceName(tt.a); got != tt.b {
			t.Errorf("FoldDeviceName(%q) = %q, want %q", tt.a, got, tt.b)
		}
	}
}

func TestLocalDevice(t *testing.T) {
	d := LocalDevice()
	if d.Backend != "cpu" || d.Family != runtime.GOARCH || d.ComputeUnits != runtime.NumCPU() || d.Name == "" {
		t.Fatalf("LocalDevice() = %+v", d)
	}
	if d.Key != "cpu:"+d.Name+":"+strconv.Itoa(d.ComputeUnits) || d.Name != paramfile.NormalizeCPUModel(d.Name) {
		t.Errorf("key %q is not cpu:<normalised model>:<cores>", d.Key)
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			if strings.TrimSpace(k) == "model name" && strings.TrimSpace(v) != "" {
				if want := paramfile.NormalizeCPUModel(v); d.Name != want {
					t.Errorf("name %q, /proc/cpuinfo says %q", d.Name, want)
				}
				break
			}
		}
	}
	if got := paramfile.NormalizeCPUModel("  AMD \"EPYC\"  7B13 / x "); got != "AMD EPYC 7B13 - x" {
		t.Errorf("NormalizeCPUModel = %q", got)
	}

	// A Go application on this CPU needs no options: the file the CPU backend
	// writes (key from LocalDevice) among other devices is found by key.
	data := strings.Replace(mergedFile, `"devices": {`, `"devices": {
    "`+d.Key+`": {"backend": "cpu", "name": "`+d.Name+`", "family": "`+d.Family+`", "compute_units": `+strconv.Itoa(d.ComputeUnits)+`, "kernels": {}},`, 1)
	l, err := LoadBytes([]byte(data), Options{Lookup: env()})
	if err != nil {
		t.Fatal(err)
	}
	if c := l.Device(); c.Key != d.Key || c.Matched != "key" || c.How != "local device" || len(l.Warnings()) != 0 {
		t.Errorf("choice %+v warnings %q", c, l.Warnings())
	}
}

// TestStandardLibraryOnly keeps the params package free of dependencies:
// applications import it, and other languages' loaders mirror it. It and
// its subpackages import only the standard library and each other.
func TestStandardLibraryOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	sub, err := filepath.Glob("*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, sub...)
	fset := token.NewFileSet()
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			n++
			path, _ := strconv.Unquote(imp.Path.Value)
			// The folder families' descriptions are data (package family,
			// which imports nothing).
			if strings.HasPrefix(path, "github.com/kerntune/kerntune/params/") || path == "github.com/kerntune/kerntune/family" {
				continue
			}
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %s, which is not in the standard library", name, path)
			}
		}
	}
	if n == 0 {
		t.Fatal("no imports found; the test reads the wrong directory")
	}
}

// TestVariableCollision: every variable the loader reads has one meaning; a
// family whose parameter's variable is one of the loader's own is refused.
func TestVariableCollision(t *testing.T) {
	fam := boundedFamily()
	fam.Name = "device"
	fam.Spaces["gpu"].Params = append(fam.Spaces["gpu"].Params, families.Param{Name: "NAME", Values: []int{1}, Default: 1})
	_, err := LoadBytes([]byte(`{"schema_version":1,"devices":{}}`), Options{Families: map[string]*families.Family{"device": fam}, Lookup: env()})
	if err == nil || !strings.Contains(err.Error(), "variable KERNTUNE_DEVICE_NAME would be both the loader's DEVICE_NAME and device parameter NAME") {
		t.Errorf("err = %v", err)
	}
}

// loadMerged loads mergedFile with opts, the environment kv (name, value
// pairs) and, unless opts names one, no local GPU: this machine's GPU must
// not change a result.
func loadMerged(t *testing.T, opts Options, kv ...string) *Loader {
	t.Helper()
	opts.Lookup = env(kv...)
	if opts.LocalGPU == nil {
		opts.LocalGPU = &DeviceID{}
	}
	l, err := LoadBytes([]byte(mergedFile), opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
