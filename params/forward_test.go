package params

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/params/paramfile"
)

// newerFile is a file as a newer kerntune might write it: a field at every
// level this loader reads, a parameter gemv_nt does not have, and fields in
// an entry's records.
const newerFile = `{
  "schema_version": 1,
  "layout": "v2",
  "devices": {
    "cpu:a": {"backend": "cpu", "name": "A", "family": "amd64", "os": "linux", "kernels": {
      "gemv_nt": {
        "f32/tiny": {"params": {"BN": 16, "ROWS": 2, "UNROLL": 4, "THREADS": 2, "SPLITK": 4}, "variant": "x", "time": {"wall_s": 1, "queue_s": 2}},
        "f32/mid": {"params": {"BN": 32, "SPLITK": 2}, "variant": "y"},
        "f32/1x896x4864": {"params": {"BN": 64}, "variant": "z", "baseline": {"name": "gonum", "median_us": 3, "version": "0.17"}}
      }}},
    "cpu:b": {"backend": "cpu", "name": "B", "family": "amd64", "os": "linux", "kernels": {}}
  }
}`

func TestNewerFile(t *testing.T) {
	l, err := LoadBytes([]byte(newerFile), Options{Device: "cpu:a", Lookup: env(), Local: &DeviceID{}, LocalGPU: &DeviceID{}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`params data: layout: field "layout" is unknown to this loader and ignored (a newer kerntune may have written it)`,
		`params data: devices["cpu:a"].os: field "os" is unknown to this loader and ignored (a newer kerntune may have written it); 1 more device has it`,
		`params data: devices["cpu:a"].kernels.gemv_nt["f32/1x896x4864"].variant: field "variant" is unknown to this loader and ignored (a newer kerntune may have written it); 2 more entries have it`,
		`params data: devices["cpu:a"].kernels.gemv_nt["f32/mid"].params.SPLITK: gemv_nt has no parameter SPLITK on cpu backends (it has BN, ROWS, UNROLL, THREADS); ignored, the entry's other parameters apply (a newer kerntune may have written it); 1 more entry has it`,
	}
	if got := l.Warnings(); !reflect.DeepEqual(got, want) {
		t.Errorf("warnings\n got  %q\n want %q", got, want)
	}
	for _, tt := range []struct {
		shape []int
		bn    int
	}{{[]int{1, 64, 64}, 16}, {[]int{1, 2560, 2560}, 32}, {[]int{1, 896, 4864}, 64}} {
		r, err := l.Resolve(GemvNT, "f32", tt.shape)
		if err != nil {
			t.Fatal(err)
		}
		if r.Int("BN") != tt.bn || len(r.Params) != 4 {
			t.Errorf("%v: %+v", tt.shape, r.Params)
		}
	}
}

// TestNewerFileStrict: what stays an error in a file a newer kerntune
// wrote: another schema version, and malformed values of known fields.
func TestNewerFileStrict(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"a newer schema version", `{"schema_version":2,"devices":{},"layout":"v2"}`, "schema_version: is 2; this reader understands only 1"},
		{"a known field of another type", fileWith("cpu", "gemv_nt", "f32/tiny", `{"params":{"BN":8},"samples":"many","variant":1}`),
			`devices["cpu:x"].kernels.gemv_nt["f32/tiny"].samples: must be an integer`},
		{"an unknown parameter that is not an integer", fileWith("cpu", "gemv_nt", "f32/tiny", `{"params":{"BN":8,"SPLITK":"auto"}}`),
			`devices["cpu:x"].kernels.gemv_nt["f32/tiny"].params.SPLITK: must be an integer`},
		{"a known parameter with a value it does not allow", fileWith("cpu", "gemv_nt", "f32/tiny", `{"params":{"BN":7,"SPLITK":2}}`),
			`params.BN: 7 is not an allowed value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadBytes([]byte(tt.data), Options{Lookup: env(), Local: &DeviceID{}, LocalGPU: &DeviceID{}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v; want %q", err, tt.want)
			}
		})
	}
}

// TestMergeKeepsUnknown: merging never drops what this version does not
// understand: Merge (kerntune tune) keeps the file's unknown fields and
// parameters beside the update, MergeFiles (kerntune merge) those of every
// input.
func TestMergeKeepsUnknown(t *testing.T) {
	update := &paramfile.File{SchemaVersion: paramfile.SchemaVersion, Devices: map[string]*paramfile.Device{"cpu:a": {Backend: "cpu", Name: "A", Family: "amd64",
		Kernels: map[string]map[string]*paramfile.Entry{"gemv_nt": {"f32/large": {Params: map[string]int{"BN": 8}}}}}}}
	merged, err := paramfile.Merge([]byte(newerFile), update)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	if err := os.WriteFile(a, []byte(newerFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(`{"schema_version":1,"devices":{"cpu:c":{"backend":"cpu","name":"C","family":"amd64","kernels":{}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, mergedFiles, err := paramfile.MergeFiles([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string][]byte{"Merge": merged, "MergeFiles": mergedFiles} {
		var tree map[string]any
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		if err := dec.Decode(&tree); err != nil {
			t.Fatal(err)
		}
		devA := tree["devices"].(map[string]any)["cpu:a"].(map[string]any)
		tiny := devA["kernels"].(map[string]any)["gemv_nt"].(map[string]any)["f32/tiny"].(map[string]any)
		if tree["layout"] != "v2" || devA["os"] != "linux" || tiny["variant"] != "x" ||
			tiny["params"].(map[string]any)["SPLITK"] != json.Number("4") || tiny["time"].(map[string]any)["queue_s"] != json.Number("2") {
			t.Errorf("%s dropped unknown fields or parameters:\n%s", name, out)
		}
	}
}
