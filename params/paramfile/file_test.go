package paramfile

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/params/families"
)

// typicalUpdate is what the tuner hands to Merge after tuning one class and one shape.
func typicalUpdate() *File {
	return &File{
		SchemaVersion: SchemaVersion, Generator: "kerntune test",
		Devices: map[string]*Device{"cpu:test-2c": {
			Backend: "cpu", Name: "Test CPU", Family: "amd64", ComputeUnits: 2, TunedAt: "2025-11-22T10:00:00Z",
			Facts: map[string]float64{"bandwidth_gbps": 12.5},
			Kernels: map[string]map[string]*Entry{
				families.GemvNT: {
					"f32/tiny": {
						Params: map[string]int{"BN": 64, "ROWS": 2, "UNROLL": 4, "THREADS": 2}, MedianUS: 41.2, IQRUS: 0.9, MinUS: 40, Samples: 30,
						ShapeMedianUS: []float64{41.2}, Default: &Reference{Params: map[string]int{"BN": 32, "ROWS": 1, "UNROLL": 1, "THREADS": 4}, MedianUS: 77},
						Baseline: &Baseline{Name: "gonum", MedianUS: 55}, Shapes: [][]int{{1, 896, 896}},
						Candidates: CandidateCounts{Valid: 588, Measured: 140, Failed: 1}, Strategy: "halving",
						Roofline: &RooflineSummary{Flops: 1.6e6, Bytes: 3.2e6, GFLOPS: 38.9, GBPS: 78, PctOfFloor: 41, BoundByData: true},
					},
					"f32/1x896x4864": {Params: map[string]int{"BN": 16, "ROWS": 4, "UNROLL": 8, "THREADS": 2}, MedianUS: 221, Samples: 40, Shapes: [][]int{{1, 896, 4864}}},
				},
				families.Softmax: {"f32/xlong": {Params: map[string]int{"ROWS": 1, "UNROLL": 4, "THREADS": 2}, MedianUS: 300, Shapes: [][]int{{1, 151936}}}},
			},
		}},
	}
}

func TestParseRoundTrip(t *testing.T) {
	out, err := Merge(nil, typicalUpdate())
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	want := typicalUpdate()
	want.SchemaVersion = SchemaVersion
	if !reflect.DeepEqual(f, want) {
		t.Errorf("round trip differs:\n got %+v\nwant %+v", f.Devices["cpu:test-2c"].Kernels[families.GemvNT]["f32/tiny"], want.Devices["cpu:test-2c"].Kernels[families.GemvNT]["f32/tiny"])
	}
}

func TestMergeNilFields(t *testing.T) {
	existing := []byte(`{"schema_version":1,"devices":{"a":{"backend":"cpu","name":"n","family":"f","kernels":{"softmax":{"f32/short":{"params":{"ROWS":2}}}}}}}`)
	tests := []struct {
		name    string
		update  *File
		wantErr string
	}{
		{"nil update", nil, ""},
		{"nil kernels", &File{Devices: map[string]*Device{"a": {Backend: "cpu", Name: "n", Family: "f"}}}, ""},
		{"nil family map", &File{Devices: map[string]*Device{"a": {Backend: "cpu", Name: "n", Family: "f", Kernels: map[string]map[string]*Entry{families.GemvNT: nil}}}}, ""},
		{"nil params and shapes", &File{Devices: map[string]*Device{"b": {Backend: "cpu", Name: "n", Family: "f",
			Kernels: map[string]map[string]*Entry{families.GemvNT: {"f32/tiny": {Default: &Reference{}}}}}}}, ""},
		{"nil device", &File{Devices: map[string]*Device{"a": nil}}, `merging: devices.a is nil`},
		{"nil entry", &File{Devices: map[string]*Device{"a": {Kernels: map[string]map[string]*Entry{families.GemvNT: {"f32/tiny": nil}}}}},
			`merging: devices.a.kernels.gemv_nt["f32/tiny"] is nil`},
		{"bad param name", &File{Devices: map[string]*Device{"a": {Kernels: map[string]map[string]*Entry{families.GemvNT: {"f32/tiny": {Params: map[string]int{"bn": 1}}}}}}},
			`merged file would not be valid: params data: devices.a.kernels.gemv_nt["f32/tiny"].params.bn: parameter name must be an upper-case identifier`},
		{"empty device key", &File{Devices: map[string]*Device{"": {}}}, `device key must not be empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, ex := range [][]byte{nil, existing} {
				out, err := Merge(ex, tt.update)
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("error %v, want %q", err, tt.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				f, err := Parse(out)
				if err != nil {
					t.Fatalf("merged file does not parse: %v\n%s", err, out)
				}
				if ex != nil && f.Devices["a"].Kernels[families.Softmax]["f32/short"] == nil {
					t.Errorf("existing entry lost:\n%s", out)
				}
			}
		})
	}
}

func TestParseTrailingData(t *testing.T) {
	for _, s := range []string{`{"schema_version":1,"devices":{}}]`, `{"schema_version":1,"devices":{}}}`, `{"schema_version":1,"devices":{}} 1`, `{"schema_version":1,"devices":{}}{}`} {
		if _, err := Parse([]byte(s)); err == nil || !strings.Contains(err.Error(), "trailing data") {
			t.Errorf("Parse(%s): %v", s, err)
		}
	}
	if _, err := Parse([]byte(" {\"schema_version\":1,\"devices\":{}}\n\t ")); err != nil {
		t.Errorf("whitespace around the value: %v", err)
	}
}

func TestParseDeterministicErrors(t *testing.T) {
	data := []byte(fileWith("cpu", "gemv_nt", "f32/tiny", `{"params":{},"candidates":{"valid":"a","measured":"b","failed":"c"}}`))
	for i := 0; i < 20; i++ {
		_, err := Parse(data)
		if err == nil || !strings.Contains(err.Error(), "candidates.valid:") {
			t.Fatalf("%v", err)
		}
	}
}

// testFile is the hand-written params file that tests, benchmarks and the
// fuzzer start from.
var testFile = filepath.Join("..", "testdata", "hardware_params.json")

// readTestFile returns testFile's bytes.
func readTestFile(tb testing.TB) []byte { return testutil.ReadFile(tb, testFile) }

func fileWith(backend, family, key, entry string) string {
	return fmt.Sprintf(`{"schema_version":1,"devices":{"cpu:x":{"backend":%q,"name":"X","family":"amd64","kernels":{%q:{%q:%s}}}}}`,
		backend, family, key, entry)
}
