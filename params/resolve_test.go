package params

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/params/paramfile"
)

// env returns a Lookup function over a fixed environment.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// precedenceFile has two amd64 CPUs, one arm64 CPU and two sm_90 GPUs.
const precedenceFile = `{
  "schema_version": 1,
  "devices": {
    "cpu:a": {"backend": "cpu", "name": "A", "family": "amd64", "kernels": {
      "gemv_nt": {
        "f32/tiny":       {"params": {"BN": 64, "ROWS": 2, "UNROLL": 4, "THREADS": 2}},
        "f32/1x896x896":  {"params": {"BN": 16}},
        "f32/largeK_smallN": {"params": {"BN": 8}},
        "f16/tiny":       {"params": {"BN": 128, "ROWS": 4, "UNROLL": 2, "THREADS": 1}}
      }}},
    "cpu:b": {"backend": "cpu", "name": "B", "family": "amd64", "kernels": {
      "gemv_nt": {
        "f32/mid":        {"params": {"BN": 128, "ROWS": 2, "UNROLL": 2, "THREADS": 4}},
        "f32/1x896x4864": {"params": {"ROWS": 4}},
        "f32/largeK_smallN": {"params": {"ROWS": 1, "UNROLL": 8, "THREADS": 8}}
      },
      "softmax": {"f32/short": {"params": {"ROWS": 16, "UNROLL": 2, "THREADS": 2}}}}},
    "cpu:c": {"backend": "cpu", "name": "C", "family": "arm64", "kernels": {
      "gemv_nt": {"f32/largeN": {"params": {"BN": 256, "ROWS": 1, "UNROLL": 1, "THREADS": 1}}}}},
    "cuda:g": {"backend": "cuda", "name": "G", "family": "sm_90", "kernels": {
      "gemv_nt": {"f16/largeN": {"params": {"TG": 256}}}}},
    "cuda:h": {"backend": "cuda", "name": "H", "family": "amd64", "kernels": {
      "gemv_nt": {"f32/mid": {"params": {"TG": 512}}}}},
    "tpu:t": {"backend": "tpu", "name": "T", "family": "tpu9", "kernels": {
      "gemv_nt": {"f32/mid": {"params": {"TG": 64}}}}}
  }
}`

// TestSchemaAcceptsPrecedenceFile checks the file the precedence tests
// load against schema.json and Parse, as paramfile's TestSchemaAccepts
// checks what Merge writes.
func TestSchemaAcceptsPrecedenceFile(t *testing.T) {
	sch := testutil.SchemaFile(t, "schema.json")
	if err := testutil.Validate(sch, []byte(precedenceFile)); err != nil {
		t.Errorf("schema rejects it: %v", err)
	}
	if _, err := paramfile.Parse([]byte(precedenceFile)); err != nil {
		t.Errorf("Parse rejects it: %v", err)
	}
}

func TestResolvePrecedence(t *testing.T) {
	type want map[string]Value
	def := func(v int) Value { return Value{v, SourceDefault} }
	file := func(dev, key string, v int) Value { return Value{v, "file:" + dev + "/gemv_nt/" + key} }
	fb := func(dev, key string, v int) Value { return Value{v, "fallback:" + dev + "/gemv_nt/" + key} }
	tests := []struct {
		name   string
		opts   Options
		dtype  string
		shape  []int
		want   want
		device string
	}{
		{
			name: "class entry", opts: Options{Device: "cpu:a"}, dtype: "f32", shape: []int{1, 512, 512},
			want: want{"BN": file("cpu:a", "f32/tiny", 64), "ROWS": file("cpu:a", "f32/tiny", 2), "UNROLL": file("cpu:a", "f32/tiny", 4), "THREADS": file("cpu:a", "f32/tiny", 2)},
		},
		{
			name: "exact entry over class entry, per parameter", opts: Options{Device: "cpu:a"}, dtype: "f32", shape: []int{1, 896, 896},
			want: want{"BN": file("cpu:a", "f32/1x896x896", 16), "ROWS": file("cpu:a", "f32/tiny", 2), "UNROLL": file("cpu:a", "f32/tiny", 4), "THREADS": file("cpu:a", "f32/tiny", 2)},
		},
		{
			name: "env over exact entry", opts: Options{Device: "cpu:a", Lookup: env("KERNTUNE_GEMV_NT_BN", "8", "KERNTUNE_GEMV_NT_THREADS", " 1 ")},
			dtype: "f32", shape: []int{1, 896, 896},
			want: want{"BN": {8, "env:KERNTUNE_GEMV_NT_BN"}, "ROWS": file("cpu:a", "f32/tiny", 2), "UNROLL": file("cpu:a", "f32/tiny", 4), "THREADS": {1, "env:KERNTUNE_GEMV_NT_THREADS"}},
		},
		{
			name: "empty env value counts as unset", opts: Options{Device: "cpu:a", Lookup: env("KERNTUNE_GEMV_NT_BN", "")},
			dtype: "f32", shape: []int{1, 896, 896},
			want: want{"BN": file("cpu:a", "f32/1x896x896", 16), "ROWS": file("cpu:a", "f32/tiny", 2), "UNROLL": file("cpu:a", "f32/tiny", 4), "THREADS": file("cpu:a", "f32/tiny", 2)},
		},
		{
			name: "dtype selects the entry", opts: Options{Device: "cpu:a"}, dtype: "f16", shape: []int{1, 896, 896},
			want: want{"BN": file("cpu:a", "f16/tiny", 128), "ROWS": file("cpu:a", "f16/tiny", 4), "UNROLL": file("cpu:a", "f16/tiny", 2), "THREADS": file("cpu:a", "f16/tiny", 1)},
		},
		{
			name: "fallback device class entry", opts: Options{Device: "cpu:a"}, dtype: "f32", shape: []int{1, 4096, 4096},
			want: want{"BN": fb("cpu:b", "f32/mid", 128), "ROWS": fb("cpu:b", "f32/mid", 2), "UNROLL": fb("cpu:b", "f32/mid", 2), "THREADS": fb("cpu:b", "f32/mid", 4)},
		},
		{
			name: "own class entry, then fallback exact entry, then fallback class entry", opts: Options{Device: "cpu:a"}, dtype: "f32", shape: []int{1, 896, 4864},
			want: want{"BN": file("cpu:a", "f32/largeK_smallN", 8), "ROWS": fb("cpu:b", "f32/1x896x4864", 4), "UNROLL": fb("cpu:b", "f32/largeK_smallN", 8), "THREADS": fb("cpu:b", "f32/largeK_smallN", 8)},
		},
		{
			name: "defaults when no entry applies", opts: Options{Device: "cpu:a"}, dtype: "f32", shape: []int{1, 8192, 896},
			want: want{"BN": def(32), "ROWS": def(1), "UNROLL": def(1), "THREADS": def(4)},
		},
		{
			name: "other device family is no fallback", opts: Options{Device: "cpu:a"}, dtype: "bf16", shape: []int{1, 8192, 896},
			want: want{"BN": def(32), "ROWS": def(1), "UNROLL": def(1), "THREADS": def(4)},
		},
		{
			name: "Options.Defaults replace built-in defaults", opts: Options{Device: "cpu:c", Defaults: map[string]map[string]int{"gemv_nt": {"BN": 8}}},
			dtype: "f32", shape: []int{1, 512, 512},
			want: want{"BN": def(8), "ROWS": def(1), "UNROLL": def(1), "THREADS": def(4)},
		},
		{
			name: "device from env", opts: Options{Lookup: env("KERNTUNE_DEVICE", "cpu:c")}, dtype: "f32", shape: []int{1, 8192, 896},
			want:   want{"BN": file("cpu:c", "f32/largeN", 256), "ROWS": file("cpu:c", "f32/largeN", 1), "UNROLL": file("cpu:c", "f32/largeN", 1), "THREADS": file("cpu:c", "f32/largeN", 1)},
			device: "cpu:c",
		},
		{
			name: "Options.Device wins over env", opts: Options{Device: "cpu:a", Lookup: env("KERNTUNE_DEVICE", "cpu:c")}, dtype: "f32", shape: []int{1, 8192, 896},
			want: want{"BN": def(32), "ROWS": def(1), "UNROLL": def(1), "THREADS": def(4)}, device: "cpu:a",
		},
		{
			name: "device not in file, family hint", opts: Options{Device: "cpu:new", DeviceFamily: "amd64"}, dtype: "f32", shape: []int{1, 896, 896},
			want:   want{"BN": fb("cpu:a", "f32/1x896x896", 16), "ROWS": fb("cpu:a", "f32/tiny", 2), "UNROLL": fb("cpu:a", "f32/tiny", 4), "THREADS": fb("cpu:a", "f32/tiny", 2)},
			device: "cpu:new",
		},
		{
			name: "device not in file, no hint", opts: Options{Device: "cpu:new"}, dtype: "f32", shape: []int{1, 896, 896},
			want: want{"BN": def(32), "ROWS": def(1), "UNROLL": def(1), "THREADS": def(4)}, device: "cpu:new",
		},
		{
			name: "several devices and none chosen, family hint", opts: Options{DeviceFamily: "arm64"}, dtype: "f32", shape: []int{1, 8192, 896},
			want: want{"BN": fb("cpu:c", "f32/largeN", 256), "ROWS": fb("cpu:c", "f32/largeN", 1), "UNROLL": fb("cpu:c", "f32/largeN", 1), "THREADS": fb("cpu:c", "f32/largeN", 1)},
		},
		{
			name: "custom prefix", opts: Options{Device: "cpu:a", EnvPrefix: "XLSTM", Lookup: env("XLSTM_GEMV_NT_UNROLL", "8", "KERNTUNE_GEMV_NT_BN", "4")},
			dtype: "f32", shape: []int{1, 512, 512},
			want: want{"BN": file("cpu:a", "f32/tiny", 64), "ROWS": file("cpu:a", "f32/tiny", 2), "UNROLL": {8, "env:XLSTM_GEMV_NT_UNROLL"}, "THREADS": file("cpu:a", "f32/tiny", 2)},
		},
		{
			name: "unknown parameter variable is ignored", opts: Options{Device: "cpu:a", Lookup: env("KERNTUNE_GEMV_NT_XX", "oops")},
			dtype: "f32", shape: []int{1, 512, 512},
			want: want{"BN": file("cpu:a", "f32/tiny", 64), "ROWS": file("cpu:a", "f32/tiny", 2), "UNROLL": file("cpu:a", "f32/tiny", 4), "THREADS": file("cpu:a", "f32/tiny", 2)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.opts.Lookup == nil {
				tt.opts.Lookup = env()
			}
			l, err := LoadBytes([]byte(precedenceFile), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			r, err := l.Resolve(GemvNT, tt.dtype, tt.shape)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(map[string]Value(tt.want), r.Params) {
				t.Errorf("got  %v\nwant %v", r.Params, tt.want)
			}
			if r.Device != tt.device && tt.device != "" {
				t.Errorf("device %q, want %q", r.Device, tt.device)
			}
			if r.Family != GemvNT || r.DType != tt.dtype || !reflect.DeepEqual(r.Shape, tt.shape) || r.Backend != "cpu" {
				t.Errorf("got %+v", r)
			}
		})
	}
}

func TestDeviceChoice(t *testing.T) {
	tests := []struct {
		name     string
		data     string
		opts     Options
		want     DeviceChoice
		warnings []string // substrings, one per warning
	}{
		{
			name: "Options.Device in file", data: precedenceFile, opts: Options{Device: "cpu:a"},
			want: DeviceChoice{Key: "cpu:a", How: "Options.Device", Matched: "key", InFile: true, Backend: "cpu", Kind: "cpu", Family: "amd64", Fallbacks: []string{"cpu:b"}},
		},
		{
			name: "env device, gpu kind keeps only gpu siblings", data: precedenceFile, opts: Options{Lookup: env("KERNTUNE_DEVICE", "cuda:h")},
			want: DeviceChoice{Key: "cuda:h", How: "env:KERNTUNE_DEVICE", Matched: "key", InFile: true, Backend: "cuda", Kind: "gpu", Family: "amd64"},
		},
		{
			name: "only device in file, no local device to compare with",
			data: `{"schema_version":1,"devices":{"metal:m1":{"backend":"metal","name":"M1","family":"apple7","kernels":{}}}}`,
			opts: Options{Local: &DeviceID{}},
			want: DeviceChoice{Key: "metal:m1", How: "only device in file", Matched: "only device in file", InFile: true, Backend: "metal", Kind: "gpu", Family: "apple7"},
		},
		{
			name: "several devices, none chosen, no local device", data: precedenceFile, opts: Options{Local: &DeviceID{}},
			want:     DeviceChoice{Backend: "cpu", Kind: "cpu", Matched: "none"},
			warnings: []string{"params data holds 6 devices and none was chosen (set KERNTUNE_DEVICE or KERNTUNE_DEVICE_NAME, or Options.Device or Options.DeviceName); built-in defaults apply; its devices: cpu:a (backend cpu, name \"A\", compute units 0, family amd64); cpu:b"},
		},
		{
			name: "not in file, backend from first sibling", data: precedenceFile, opts: Options{Device: "x", DeviceFamily: "amd64"},
			want:     DeviceChoice{Key: "x", How: "Options.Device", Matched: "family amd64", Backend: "cpu", Kind: "cpu", Family: "amd64", Fallbacks: []string{"cpu:a", "cpu:b"}},
			warnings: []string{`device "x" (Options.Device) is not in params data; using fallback devices cpu:a, cpu:b (family amd64); its devices: cpu:a`},
		},
		{
			name: "not in file, Backend restricts siblings", data: precedenceFile, opts: Options{Device: "x", DeviceFamily: "amd64", Backend: "opencl"},
			want:     DeviceChoice{Key: "x", How: "Options.Device", Matched: "family amd64", Backend: "opencl", Kind: "gpu", Family: "amd64", Fallbacks: []string{"cuda:h"}},
			warnings: []string{"using fallback devices cuda:h"},
		},
		{
			name: "siblings: same backend first, then same kind, by key",
			data: `{"schema_version":1,"devices":{
				"metal:self":{"backend":"metal","name":"","family":"f","kernels":{}},
				"cuda:a":{"backend":"cuda","name":"","family":"f","kernels":{}},
				"metal:z":{"backend":"metal","name":"","family":"f","kernels":{}},
				"metal:b":{"backend":"metal","name":"","family":"f","kernels":{}},
				"cpu:a":{"backend":"cpu","name":"","family":"f","kernels":{}},
				"metal:other":{"backend":"metal","name":"","family":"g","kernels":{}}}}`,
			opts: Options{Device: "metal:self"},
			want: DeviceChoice{Key: "metal:self", How: "Options.Device", Matched: "key", InFile: true, Backend: "metal", Kind: "gpu", Family: "f", Fallbacks: []string{"metal:b", "metal:z", "cuda:a"}},
		},
		{
			name: "empty family has no siblings",
			data: `{"schema_version":1,"devices":{"cpu:a":{"backend":"cpu","name":"","family":"","kernels":{}},"cpu:b":{"backend":"cpu","name":"","family":"","kernels":{}}}}`,
			opts: Options{Device: "cpu:a"},
			want: DeviceChoice{Key: "cpu:a", How: "Options.Device", Matched: "key", InFile: true, Backend: "cpu", Kind: "cpu"},
		},
		{
			name: "unknown dtype and class are warnings",
			data: `{"schema_version":1,"devices":{"cpu:a":{"backend":"cpu","name":"","family":"","kernels":{"gemv_nt":{"f64/tiny":{"params":{"BN":8}},"f32/tinny":{"params":{}}}}}}}`,
			opts: Options{Local: &DeviceID{}},
			want: DeviceChoice{Key: "cpu:a", How: "only device in file", Matched: "only device in file", InFile: true, Backend: "cpu", Kind: "cpu"},
			warnings: []string{
				`params data: devices["cpu:a"].kernels.gemv_nt["f32/tinny"]: gemv_nt has no shape class "tinny"; entry ignored`,
				`params data: devices["cpu:a"].kernels.gemv_nt["f64/tiny"]: unknown dtype "f64" (known: f32, f16, bf16); entry ignored`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.opts.Lookup == nil {
				tt.opts.Lookup = env()
			}
			l, err := LoadBytes([]byte(tt.data), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Device(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			w := l.Warnings()
			if len(w) != len(tt.warnings) {
				t.Fatalf("warnings %q, want %d", w, len(tt.warnings))
			}
			for i := range w {
				if !strings.Contains(w[i], tt.warnings[i]) {
					t.Errorf("warning %q lacks %q", w[i], tt.warnings[i])
				}
			}
		})
	}
}

// boundedFamily is a user kernel with a gpu space whose constraint depends on the shape.
func boundedFamily() *families.Family {
	return &families.Family{
		Name: "tiled", Dims: []string{"rows", "cols"},
		Classes: []families.Class{{Name: "any", Rule: "every shape"}},
		Classify: func(s []int) (string, error) {
			if len(s) != 2 || s[0] < 1 || s[1] < 1 {
				return "", fmt.Errorf("tiled takes rows x cols, got %v", s)
			}
			return "any", nil
		},
		Spaces: map[string]*families.Space{"gpu": {
			Params: []families.Param{
				{Name: "TILE", Values: []int{8, 16, 32, 64}, Default: 8},
				{Name: "TG", Values: []int{32, 64, 128, 256}, Default: 64},
			},
			Check: func(shape []int, p map[string]int) error {
				if p["TILE"]*p["TG"] > 4096 {
					return fmt.Errorf("TILE×TG = %d exceeds 4096", p["TILE"]*p["TG"])
				}
				if shape != nil && p["TILE"] > shape[1] {
					return fmt.Errorf("TILE=%d exceeds cols=%d", p["TILE"], shape[1])
				}
				return nil
			},
		}},
	}
}

const tiledFile = `{"schema_version":1,"devices":{"cuda:x":{"backend":"cuda","name":"X","family":"sm_90","kernels":{
	"tiled":{"f32/any":{"params":{"TILE":64,"TG":32}},"f32/4x16":{"params":{"TG":128}}}}}}}`

func TestResolveCheck(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		shape   []int
		want    map[string]Value
		wantErr string
	}{
		{name: "class entry fits", shape: []int{4, 100},
			want: map[string]Value{"TILE": {64, "file:cuda:x/tiled/f32/any"}, "TG": {32, "file:cuda:x/tiled/f32/any"}}},
		{name: "class entry too wide for shape: dropped", shape: []int{4, 20},
			want: map[string]Value{"TILE": {8, "default"}, "TG": {64, "default"}}},
		{name: "exact over class breaks TILE×TG: class dropped, exact kept", shape: []int{4, 16},
			want: map[string]Value{"TILE": {8, "default"}, "TG": {128, "file:cuda:x/tiled/f32/4x16"}}},
		{name: "env kept while file values dropped", env: []string{"KERNTUNE_TILED_TG", "256"}, shape: []int{4, 100},
			want: map[string]Value{"TILE": {8, "default"}, "TG": {256, "env:KERNTUNE_TILED_TG"}}},
		{name: "env breaks the shape constraint", env: []string{"KERNTUNE_TILED_TILE", "32"}, shape: []int{4, 20},
			wantErr: `params: environment KERNTUNE_TILED_TILE="32": breaks the constraints of tiled for shape 4x20 (class any), even with the defaults for the other parameters: TILE=32 exceeds cols=20`},
		{name: "env pair breaks TILE×TG", env: []string{"KERNTUNE_TILED_TILE", "64", "KERNTUNE_TILED_TG", "128"}, shape: []int{4, 100},
			wantErr: `params: environment KERNTUNE_TILED_TILE="64", KERNTUNE_TILED_TG="128": breaks the constraints of tiled for shape 4x100`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := LoadBytes([]byte(tiledFile), Options{Backend: "cuda", Lookup: env(tt.env...), Families: map[string]*families.Family{"tiled": boundedFamily()}})
			if err != nil {
				t.Fatal(err)
			}
			r, err := l.Resolve("tiled", "f32", tt.shape)
			if tt.wantErr != "" {
				var ee *EnvError
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.As(err, &ee) {
					t.Fatalf("error %v, want *EnvError containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.Params, tt.want) {
				t.Errorf("got  %v\nwant %v", r.Params, tt.want)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		family  string
		dtype   string
		shape   []int
		is      error // errors.Is target, if any
		envErr  bool  // an *EnvError
		contain []string
	}{
		{name: "env not an integer", opts: Options{Lookup: env("KERNTUNE_GEMV_NT_BN", "eight")}, envErr: true,
			contain: []string{`KERNTUNE_GEMV_NT_BN="eight"`, "not a base-10 integer", "4, 8, 16, 32, 64, 128, 256"}},
		{name: "env float", opts: Options{Lookup: env("KERNTUNE_GEMV_NT_BN", "8.0")}, envErr: true, contain: []string{`"8.0"`, "not a base-10 integer"}},
		{name: "env hex", opts: Options{Lookup: env("KERNTUNE_GEMV_NT_ROWS", "0x2")}, envErr: true, contain: []string{`KERNTUNE_GEMV_NT_ROWS="0x2"`, "allows 1, 2, 4"}},
		{name: "env not allowed", opts: Options{Lookup: env("KERNTUNE_GEMV_NT_BN", "7")}, envErr: true,
			contain: []string{`KERNTUNE_GEMV_NT_BN="7"`, "not an allowed value of gemv_nt BN on cpu backends; allowed: 4, 8, 16, 32, 64, 128, 256"}},
		{name: "env negative", opts: Options{Lookup: env("KERNTUNE_GEMV_NT_BN", "-8")}, envErr: true, contain: []string{"not an allowed value"}},
		{name: "env overflow", opts: Options{Lookup: env("KERNTUNE_GEMV_NT_BN", "99999999999999999999999")}, envErr: true, contain: []string{"not an allowed value"}},
		{name: "unknown family", family: "gemv_tn", is: ErrUnknownFamily, contain: []string{`unknown kernel family "gemv_tn" (known: ` + strings.Join(families.BuiltinNames(), ", ") + ")"}},
		{name: "unknown dtype", dtype: "f64", is: ErrUnknownDType, contain: []string{`unknown dtype "f64" (known: f32, f16, bf16)`}},
		{name: "too few dims", shape: []int{1, 896}, is: ErrInvalidShape, contain: []string{"gemv_nt takes a shape of 3 dims (m×n×k), got 2"}},
		{name: "nil shape", shape: []int{}, is: ErrInvalidShape},
		{name: "zero dim", shape: []int{1, 0, 896}, is: ErrInvalidShape, contain: []string{"n=0 out of range"}},
		{name: "negative dim", shape: []int{1, -4, 896}, is: ErrInvalidShape},
		{name: "dim beyond MaxDim", shape: []int{1, families.MaxDim + 1, 896}, is: ErrInvalidShape},
		{name: "gemv with m > 1", shape: []int{2, 896, 896}, is: ErrInvalidShape, contain: []string{"m must be 1"}},
		{name: "too many elements", family: GemmAV, shape: []int{1 << 21, 1 << 21, 1}, is: ErrInvalidShape, contain: []string{"exceeds the limit of 2^40"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.opts.Lookup == nil {
				tt.opts.Lookup = env()
			}
			if tt.opts.Device == "" {
				tt.opts.Device = "cpu:a"
			}
			if tt.family == "" {
				tt.family = GemvNT
			}
			if tt.dtype == "" {
				tt.dtype = "f32"
			}
			if tt.shape == nil {
				tt.shape = []int{1, 896, 896}
			}
			l, err := LoadBytes([]byte(precedenceFile), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			r, err := l.Resolve(tt.family, tt.dtype, tt.shape)
			if err == nil {
				t.Fatalf("no error; got %+v", r)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			var ee *EnvError
			if errors.As(err, &ee) != tt.envErr {
				t.Errorf("error %T %v: *EnvError = %v, want %v", err, err, !tt.envErr, tt.envErr)
			}
			for _, c := range tt.contain {
				if !strings.Contains(err.Error(), c) {
					t.Errorf("error %q lacks %q", err, c)
				}
			}
		})
	}
}

// validEntry is a complete, valid gemv_nt entry on cpu.
const validEntry = `{"params":{"BN":8,"ROWS":1,"UNROLL":1,"THREADS":1}}`

func fileWith(backend, family, key, entry string) string {
	return fmt.Sprintf(`{"schema_version":1,"devices":{"cpu:x":{"backend":%q,"name":"X","family":"amd64","kernels":{%q:{%q:%s}}}}}`,
		backend, family, key, entry)
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		opts Options
		want string // the whole message after the "params: <file>: " prefix
	}{
		{"not JSON", `{"schema_version":1,`, Options{}, "not valid JSON: unexpected EOF"},
		{"empty", ``, Options{}, "not valid JSON: the file is empty"},
		{"trailing data", `{"schema_version":1,"devices":{}} {}`, Options{}, "not valid JSON: trailing data after the top-level value"},
		{"trailing bracket", `{"schema_version":1,"devices":{}}]`, Options{}, "not valid JSON: trailing data after the top-level value"},
		{"top level array", `[]`, Options{}, "must be an object, got an array"},
		{"other schema version", `{"schema_version":2,"devices":{}}`, Options{}, "schema_version: is 2; this reader understands only 1"},
		{"missing schema version", `{"devices":{}}`, Options{}, "schema_version: missing (this reader understands schema_version 1)"},
		{"string schema version", `{"schema_version":"1","devices":{}}`, Options{}, "schema_version: must be an integer, got a string"},
		{"missing devices", `{"schema_version":1}`, Options{}, "devices: missing"},
		{"devices not an object", `{"schema_version":1,"devices":[]}`, Options{}, "devices: must be an object, got an array"},
		{"backend not a string", `{"schema_version":1,"devices":{"cpu:x":{"backend":1,"name":"X","family":"f","kernels":{}}}}`, Options{},
			`devices["cpu:x"].backend: must be a string, got a number`},
		{"missing kernels", `{"schema_version":1,"devices":{"cpu:x":{"backend":"cpu","name":"X","family":"f"}}}`, Options{},
			`devices["cpu:x"].kernels: missing`},
		{"string median", fileWith("cpu", "gemv_nt", "f32/tiny", `{"params":{},"median_us":"12"}`), Options{},
			`devices["cpu:x"].kernels.gemv_nt["f32/tiny"].median_us: must be a number, got a string`},
		{"float param", fileWith("cpu", "gemv_nt", "f32/tiny", `{"params":{"BN":8.5}}`), Options{},
			`devices["cpu:x"].kernels.gemv_nt["f32/tiny"].params.BN: must be an integer between -2147483648 and 2147483647, got 8.5`},
		{"lower-case param", fileWith("cpu", "gemv_nt", "f32/tiny", `{"params":{"bn":8}}`), Options{},
			`devices["cpu:x"].kernels.gemv_nt["f32/tiny"].params.bn: parameter name must be an upper-case identifier like BN or TG`},
		{"missing params", fileWith("cpu", "gemv_nt", "f32/tiny", `{"median_us":1}`), Options{},
			`devices["cpu:x"].kernels.gemv_nt["f32/tiny"].params: missing`},
		{"param not allowed", fileWith("cpu", "gemv_nt", "f32/tiny", `{"params":{"BN":7}}`), Options{},
			`devices["cpu:x"].kernels.gemv_nt["f32/tiny"].params.BN: 7 is not an allowed value of gemv_nt BN on cpu backends (allowed: 4, 8, 16, 32, 64, 128, 256)`},
		{"param not allowed on a fallback-less device of another backend name", fileWith("opencl", "tiled", "f32/any", `{"params":{"TILE":12}}`),
			Options{Families: map[string]*families.Family{"tiled": boundedFamily()}},
			`devices["cpu:x"].kernels.tiled["f32/any"].params.TILE: 12 is not an allowed value of tiled TILE on gpu backends (allowed: 8, 16, 32, 64)`},
		{"complete entry breaks Check", fileWith("cuda", "tiled", "f32/any", `{"params":{"TILE":64,"TG":256}}`),
			Options{Families: map[string]*families.Family{"tiled": boundedFamily()}},
			`devices["cpu:x"].kernels.tiled["f32/any"].params: breaks the constraints of tiled: TILE×TG = 16384 exceeds 4096`},
		{"exact entry breaks Check for its shape", fileWith("cuda", "tiled", "f32/4x16", `{"params":{"TILE":32,"TG":32}}`),
			Options{Families: map[string]*families.Family{"tiled": boundedFamily()}},
			`devices["cpu:x"].kernels.tiled["f32/4x16"].params: breaks the constraints of tiled: TILE=32 exceeds cols=16`},
		{"entry key without slash", fileWith("cpu", "gemv_nt", "tiny", validEntry), Options{},
			`devices["cpu:x"].kernels.gemv_nt.tiny: entry key must be <dtype>/<class> or <dtype>/<shape>`},
		{"entry key with empty class", fileWith("cpu", "gemv_nt", "f32/", validEntry), Options{},
			`devices["cpu:x"].kernels.gemv_nt["f32/"]: entry key must be <dtype>/<class> or <dtype>/<shape>`},
		{"exact key with wrong dims", fileWith("cpu", "gemv_nt", "f32/1x896", validEntry), Options{},
			`devices["cpu:x"].kernels.gemv_nt["f32/1x896"]: bad exact-shape entry key: gemv_nt takes a shape of 3 dims (m×n×k), got 2`},
		{"exact key the family rejects", fileWith("cpu", "gemv_nt", "f32/2x896x896", validEntry), Options{},
			`bad exact-shape entry key: gemv_nt: m must be 1`},
		{"exact key with zero", fileWith("cpu", "gemv_nt", "f32/1x0x896", validEntry), Options{},
			`bad exact-shape entry key: shape "1x0x896": dim 2 is 0; dims must be at least 1`},
		{"exact key not canonical", fileWith("cpu", "gemv_nt", "f32/1x0896x896", validEntry), Options{},
			`exact-shape entry key is not canonical; write f32/1x896x896`},
		{"Options.Backend of another kind", fileWith("cpu", "gemv_nt", "f32/tiny", validEntry), Options{Device: "cpu:x", Backend: "cuda"},
			`Options.Backend is "cuda" but device "cpu:x" in params data has backend "cpu"`},
		{"Options.Defaults unknown family", `{"schema_version":1,"devices":{}}`, Options{Defaults: map[string]map[string]int{"nope": {"BN": 8}}},
			`Options.Defaults: unknown kernel family "nope"`},
		{"Options.Defaults unknown param", `{"schema_version":1,"devices":{}}`, Options{Defaults: map[string]map[string]int{"gemv_nt": {"XX": 8}}},
			`Options.Defaults["gemv_nt"]: family gemv_nt has no parameter XX`},
		{"Options.Defaults not allowed", `{"schema_version":1,"devices":{}}`, Options{Defaults: map[string]map[string]int{"gemv_nt": {"BN": 5}}},
			`Options.Defaults["gemv_nt"]["BN"] = 5 is not allowed on cpu backends (allowed: 4, 8, 16, 32, 64, 128, 256)`},
		{"bad EnvPrefix", `{"schema_version":1,"devices":{}}`, Options{EnvPrefix: "MY-APP"}, `Options.EnvPrefix "MY-APP" is not an identifier`},
		{"family without Classify", `{"schema_version":1,"devices":{}}`, Options{Families: map[string]*families.Family{"k": {Name: "k"}}}, `family k: Classify is nil`},
		{"family name mismatch", `{"schema_version":1,"devices":{}}`, Options{Families: map[string]*families.Family{"k": boundedFamily()}}, `Options.Families["k"] has Name "tiled"`},
		{"nil family", `{"schema_version":1,"devices":{}}`, Options{Families: map[string]*families.Family{"k": nil}}, `Options.Families["k"] is empty or nil`},
		{"family default not allowed", `{"schema_version":1,"devices":{}}`, Options{Families: map[string]*families.Family{"k": {Name: "k",
			Classify: func([]int) (string, error) { return "", nil }, Spaces: map[string]*families.Space{"cpu": {Params: []families.Param{{Name: "A", Values: []int{1}, Default: 2}}}}}}},
			`family k: space cpu: default A=2 is not among its allowed values (1)`},
		{"families sharing variable names", `{"schema_version":1,"devices":{}}`, Options{Families: map[string]*families.Family{"gemv-nt": {Name: "gemv-nt",
			Classify: func([]int) (string, error) { return "", nil }}}},
			`families gemv-nt and gemv_nt share the variable names KERNTUNE_GEMV_NT_*`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Lookup = env()
			_, err := LoadBytes([]byte(tt.data), tt.opts)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error\n  %q\nlacks\n  %q", err, tt.want)
			}
			// Errors say where they come from: "params: " or, for file errors, the file.
			if !strings.HasPrefix(err.Error(), "params: ") && !strings.HasPrefix(err.Error(), "params data: ") {
				t.Errorf("error %q does not say where it comes from", err)
			}
			// File errors are *PathError; so are they when loaded from a file, with its name.
			var pe *paramfile.PathError
			if errors.As(err, &pe) {
				path := filepath.Join(t.TempDir(), "hp.json")
				if err := os.WriteFile(path, []byte(tt.data), 0o644); err != nil {
					t.Fatal(err)
				}
				_, err := Load(path, tt.opts)
				if err == nil || !strings.Contains(err.Error(), path+": ") || !errors.As(err, &pe) || pe.File != path {
					t.Errorf("Load: %v; want an error naming %s", err, path)
				}
			}
		})
	}
}

func TestLoadAccepts(t *testing.T) {
	tests := []struct {
		name string
		data string
	}{
		{"extra fields everywhere", `{"schema_version":1,"x":[1,{}],"devices":{"cpu:x":{"backend":"cpu","name":"X","family":"f","new":true,
			"kernels":{"gemv_nt":{"f32/tiny":{"params":{"BN":8},"future":{"a":null}}}}}}}`},
		{"unknown family kept as is", fileWith("cpu", "flash_attention", "f16/prefill", `{"params":{"BLOCK_M":3}}`)},
		{"known family on a backend the loader does not know (the gpu space)", fileWith("tpu", "gemv_nt", "f16/largeN", `{"params":{"TG":128}}`)},
		{"partial entry", fileWith("cpu", "gemm_av", "f32/small", `{"params":{"MR":4}}`)},
		{"empty devices", `{"schema_version":1,"devices":{}}`},
		{"null default and baseline", fileWith("cpu", "gemv_nt", "f32/tiny", `{"params":{},"default":null,"baseline":null,"roofline":null}`)},
		{"string facts", `{"schema_version":1,"devices":{"cpu:x":{"backend":"cpu","name":"X","family":"f","facts":{"driver":"550","bw":1.5},"kernels":{}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := LoadBytes([]byte(tt.data), Options{Lookup: env()}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(precedenceFile), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"schema_version":3,"devices":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.json")

	t.Run("Options.Path", func(t *testing.T) {
		l, err := Open(Options{Path: good, Device: "cpu:a", Lookup: env("KERNTUNE_PARAMS", bad)})
		if err != nil || !l.FileFound() || l.Path() != good {
			t.Fatalf("%v %+v", err, l)
		}
		r, err := l.Resolve(GemvNT, "f32", []int{1, 512, 512})
		if err != nil || r.Params["BN"].Source != "file:cpu:a/gemv_nt/f32/tiny" {
			t.Fatalf("%v %+v", err, r)
		}
	})
	t.Run("env path", func(t *testing.T) {
		l, err := Open(Options{Lookup: env("KERNTUNE_PARAMS", good, "KERNTUNE_DEVICE", "cpu:b")})
		if err != nil || l.Path() != good || l.Device().Key != "cpu:b" {
			t.Fatalf("%v %+v", err, l)
		}
	})
	t.Run("custom prefix env path", func(t *testing.T) {
		l, err := Open(Options{EnvPrefix: "APP", Lookup: env("APP_PARAMS", good, "KERNTUNE_PARAMS", bad)})
		if err != nil || l.Path() != good {
			t.Fatalf("%v %+v", err, l)
		}
	})
	t.Run("invalid file", func(t *testing.T) {
		_, err := Open(Options{Lookup: env("KERNTUNE_PARAMS", bad)})
		var pe *paramfile.PathError
		if !errors.As(err, &pe) || pe.File != bad || pe.Path != "schema_version" {
			t.Fatalf("%v", err)
		}
	})
	t.Run("missing file is fine", func(t *testing.T) {
		l, err := Open(Options{Path: missing, Lookup: env("KERNTUNE_GEMV_NT_BN", "16")})
		if err != nil {
			t.Fatal(err)
		}
		if l.FileFound() || len(l.Warnings()) != 1 || !strings.Contains(l.Warnings()[0], "does not exist") {
			t.Errorf("found=%v warnings=%q", l.FileFound(), l.Warnings())
		}
		r, err := l.Resolve(GemvNT, "f32", []int{1, 896, 896})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]Value{"BN": {16, "env:KERNTUNE_GEMV_NT_BN"}, "ROWS": {1, "default"}, "UNROLL": {1, "default"}, "THREADS": {4, "default"}}
		if !reflect.DeepEqual(r.Params, want) {
			t.Errorf("got %v", r.Params)
		}
	})
	t.Run("default path in working directory", func(t *testing.T) {
		wd := t.TempDir()
		t.Chdir(wd)
		l, err := Open(Options{Lookup: env()})
		if err != nil || l.FileFound() || l.Path() != paramfile.DefaultFileName || len(l.Warnings()) != 0 {
			t.Fatalf("%v %+v", err, l)
		}
		if err := os.WriteFile(paramfile.DefaultFileName, []byte(precedenceFile), 0o644); err != nil {
			t.Fatal(err)
		}
		l, err = Open(Options{Lookup: env(), Device: "cpu:a"})
		if err != nil || !l.FileFound() {
			t.Fatalf("%v %+v", err, l)
		}
	})
	t.Run("a directory is an error", func(t *testing.T) {
		if _, err := Open(Options{Path: dir, Lookup: env()}); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("Load insists on the file", func(t *testing.T) {
		_, err := Load(missing, Options{Lookup: env()})
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("testdata file", func(t *testing.T) {
		l, err := Load(testFile, Options{Device: "cpu:amd-epyc-7b13-2c", Lookup: env()})
		if err != nil {
			t.Fatal(err)
		}
		r, err := l.Resolve(GemvNT, "f32", []int{1, 4096, 4096})
		if err != nil || r.Int("BN") != 128 || r.Params["BN"].Source != "fallback:cpu:intel-xeon-8375c-4c/gemv_nt/f32/mid" {
			t.Fatalf("%v %+v", err, r)
		}
	})
}

func TestResolvedHelpers(t *testing.T) {
	l, err := LoadBytes([]byte(precedenceFile), Options{Device: "cpu:a", Lookup: env()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.Resolve(GemmAV, "f32", []int{512, 4864, 896})
	if err != nil {
		t.Fatal(err)
	}
	if r.Class != "large" {
		t.Errorf("class %q", r.Class)
	}
	names := r.Names()
	if want := []string{"MC", "NC", "KC", "MR", "NR", "THREADS"}; !reflect.DeepEqual(names, want) {
		t.Errorf("names %v", names)
	}
	names[0] = "changed"
	if r.Names()[0] != "MC" {
		t.Error("Names shares its slice")
	}
	if r.Int("MC") != 64 || r.Int("NOPE") != 0 {
		t.Errorf("Int: %d %d", r.Int("MC"), r.Int("NOPE"))
	}
	if want := map[string]int{"MC": 64, "NC": 256, "KC": 128, "MR": 2, "NR": 4, "THREADS": 4}; !reflect.DeepEqual(r.Ints(), want) {
		t.Errorf("Ints %v", r.Ints())
	}
	if got := l.Families(); !reflect.DeepEqual(got, families.BuiltinNames()) {
		t.Errorf("Families %v", got)
	}
	if l.EnvPrefix() != "KERNTUNE" {
		t.Errorf("EnvPrefix %q", l.EnvPrefix())
	}
}

func TestEnvVarName(t *testing.T) {
	for _, tt := range []struct{ prefix, family, param, want string }{
		{"", "gemv_nt", "BN", "KERNTUNE_GEMV_NT_BN"},
		{"XLSTM", "gemm_at_b", "MC", "XLSTM_GEMM_AT_B_MC"},
		{"APP", "my-kernel.v2", "TG", "APP_MY_KERNEL_V2_TG"},
	} {
		if got := EnvVarName(tt.prefix, tt.family, tt.param); got != tt.want {
			t.Errorf("EnvVarName(%q, %q, %q) = %q, want %q", tt.prefix, tt.family, tt.param, got, tt.want)
		}
	}
}

// TestUnusedEnv: every variable with the prefix that has no effect is listed,
// with why: a typo, a parameter of another backend's space, the variables
// of a family without a space for the device, <PREFIX>_PARAMS when the
// caller named the file, <PREFIX>_DEVICE when Options.Device is set.
func TestUnusedEnv(t *testing.T) {
	environ := []string{
		"KERNTUNE_GEMV_NT_BN=8", "KERNTUNE_GEMV_NT_XX=1", "KERNTUNE_PARAMS=x", "KERNTUNE_DEVICE=y", "KERNTUNE_METAL_MPS=0",
		"KERNTUNE_NO_CACHE=1", "KERNTUNE_CACHE_DIR=/tmp/c", "KERNTUNE_CACHE_MAX=1GiB",
		"KERNTUNE_GEMVNT_BN=8", "KERNTUNE_SOFTMAX_ROWS=2", "KERNTUNE_GEMM_AV_MC=64", "HOME=/root",
		"KERNTUNE_GEMV_NT_XX=2", "KERNTUNE_NOVALUE", "KERNTUNE_GEMV_NT_TG=64",
	}
	path := filepath.Join(t.TempDir(), paramfile.DefaultFileName)
	if err := os.WriteFile(path, []byte(precedenceFile), 0o644); err != nil {
		t.Fatal(err)
	}
	gpuOnly := &families.Family{Name: "gpu_only", Dims: []string{"n"}, Classify: func([]int) (string, error) { return "all", nil },
		Spaces: map[string]*families.Space{"gpu": {Params: []families.Param{{Name: "TG", Values: []int{32, 64}, Default: 32}}}}}
	typo := "not a variable the loader reads: gemv_nt has no parameter XX (on cpu backends it has BN, ROWS, UNROLL, THREADS)"
	noFamily := "not a variable the loader reads: KERNTUNE_GEMVNT_BN names no kernel family (known: "
	tg := "gemv_nt TG is a parameter of gpu backends, not of cpu ones (the device: cpu:a, backend cpu; its gemv_nt parameters: BN, ROWS, UNROLL, THREADS)"
	for _, tt := range []struct {
		name string
		load func() (*Loader, error)
		env  []string
		want map[string]string // name → a substring of why
	}{
		{"bytes: the file is named, the device is not", func() (*Loader, error) { return LoadBytes([]byte(precedenceFile), Options{Lookup: env()}) },
			environ, map[string]string{"KERNTUNE_GEMVNT_BN": noFamily, "KERNTUNE_GEMV_NT_XX": typo, "KERNTUNE_NOVALUE": "names no kernel family",
				"KERNTUNE_PARAMS":     "not read: the caller named the params file",
				"KERNTUNE_GEMV_NT_TG": "gemv_nt TG is a parameter of gpu backends, not of cpu ones (the device: backend cpu; its gemv_nt parameters"}},
		{"Open without a path reads KERNTUNE_PARAMS; Options.Device wins over KERNTUNE_DEVICE",
			func() (*Loader, error) { return Open(Options{Device: "cpu:a", Lookup: env("KERNTUNE_PARAMS", path)}) },
			[]string{"KERNTUNE_PARAMS=" + path, "KERNTUNE_DEVICE=cpu:b", "KERNTUNE_GEMV_NT_TG=64", "KERNTUNE_GEMV_NT_BN=8"},
			map[string]string{"KERNTUNE_DEVICE": "not read: Options.Device names the device", "KERNTUNE_GEMV_NT_TG": tg}},
		{"a family with no space for the device's backend",
			func() (*Loader, error) {
				return LoadBytes([]byte(precedenceFile), Options{Device: "cpu:a", Lookup: env(), Families: map[string]*families.Family{"gpu_only": gpuOnly}})
			},
			[]string{"KERNTUNE_GPU_ONLY_TG=64", "KERNTUNE_GPU_ONLY_USE=baseline", "KERNTUNE_GPU_ONLY_X=1"},
			map[string]string{"KERNTUNE_GPU_ONLY_TG": "gpu_only has no parameters for cpu backends (the device: cpu:a, backend cpu)",
				"KERNTUNE_GPU_ONLY_USE": "gpu_only has no parameters for cpu backends", "KERNTUNE_GPU_ONLY_X": "gpu_only has no parameter X"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := tt.load()
			if err != nil {
				t.Fatal(err)
			}
			got := l.UnusedEnvVars(tt.env)
			names := l.UnusedEnv(tt.env)
			if len(got) != len(tt.want) || len(names) != len(got) {
				t.Fatalf("got %q (names %q), want %d: %v", got, names, len(tt.want), tt.want)
			}
			for i, v := range got {
				if names[i] != v.Name || i > 0 && got[i-1].Name >= v.Name {
					t.Errorf("names %q not sorted or not those of %q", names, got)
				}
				if w, ok := tt.want[v.Name]; !ok || !strings.Contains(v.Why, w) {
					t.Errorf("%s: why %q, want %q", v.Name, v.Why, w)
				}
			}
		})
	}
}

func TestPanickingFamilyIsAnError(t *testing.T) {
	fam := boundedFamily()
	fam.Classify = func(s []int) (string, error) { return []string{"a"}[s[5]], nil }
	fam.Spaces["gpu"].Check = func(s []int, p map[string]int) error { return []error{nil}[s[7]] }
	l, err := LoadBytes([]byte(`{"schema_version":1,"devices":{"g":{"backend":"cuda","name":"","family":"","kernels":{}}}}`),
		Options{Lookup: env(), Families: map[string]*families.Family{"tiled": fam}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Resolve("tiled", "f32", []int{1, 2}); err == nil || !strings.Contains(err.Error(), "Classify panicked") {
		t.Errorf("error %v", err)
	}
	// The panicking Check at load: a complete class entry.
	_, err = LoadBytes([]byte(`{"schema_version":1,"devices":{"g":{"backend":"cuda","name":"","family":"","kernels":{"tiled":{"f32/any":{"params":{"TILE":8,"TG":32}}}}}}}`),
		Options{Lookup: env(), Families: map[string]*families.Family{"tiled": fam}})
	if err == nil || !strings.Contains(err.Error(), "Check panicked") {
		t.Errorf("error %v", err)
	}
}

func TestConcurrentResolve(t *testing.T) {
	var mu sync.Mutex
	vars := map[string]string{"KERNTUNE_GEMV_NT_BN": "8"}
	lookup := func(k string) (string, bool) { mu.Lock(); defer mu.Unlock(); v, ok := vars[k]; return v, ok }
	l, err := LoadBytes([]byte(precedenceFile), Options{Device: "cpu:a", Lookup: lookup})
	if err != nil {
		t.Fatal(err)
	}
	shapes := [][]int{{1, 896, 896}, {1, 512, 512}, {1, 4096, 4096}, {1, 896, 4864}, {1, 151936, 896}}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				r, err := l.Resolve(GemvNT, "f32", shapes[(g+i)%len(shapes)])
				if err != nil || r.Int("BN") != 8 {
					t.Errorf("%v %v", err, r)
					return
				}
				if g == 0 && i%50 == 0 {
					mu.Lock()
					vars["KERNTUNE_GEMV_NT_ROWS"] = fmt.Sprint([]int{1, 2, 4}[i%3])
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
}

// testFile is the hand-written params file that tests, benchmarks and the
// fuzzer start from.
var testFile = filepath.Join("testdata", "hardware_params.json")

// readTestFile returns testFile's bytes.
func readTestFile(tb testing.TB) []byte { return testutil.ReadFile(tb, testFile) }
