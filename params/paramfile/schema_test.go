package paramfile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/params/families"
)

// TestSchemaAccepts checks that schema.json accepts what Merge writes (the
// tuner's only way of writing the file) and the hand-written testdata file.
func TestSchemaAccepts(t *testing.T) {
	sch := testutil.SchemaFile(t, "../schema.json")
	testdata := readTestFile(t)
	fresh, err := Merge(nil, typicalUpdate())
	if err != nil {
		t.Fatal(err)
	}
	onto, err := Merge(testdata, typicalUpdate())
	if err != nil {
		t.Fatal(err)
	}
	sparse, err := Merge(fresh, &File{Devices: map[string]*Device{
		"cuda:nvidia-h100": {Backend: "cuda", Name: "NVIDIA H100", Family: "sm_90", ComputeUnits: 132,
			Kernels: map[string]map[string]*Entry{families.GemvNT: {"f16/largeN": {Params: map[string]int{"TG": 256}}}, families.Softmax: nil}},
		"cpu:empty": {Backend: "cpu", Name: "Empty", Family: "arm64"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), DefaultFileName)
	if err := MergeIntoFile(path, typicalUpdate(), false); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"testdata/hardware_params.json": testdata, "Merge(nil, typical)": fresh, "Merge(testdata, typical)": onto,
		"Merge of sparse devices": sparse, "MergeIntoFile": written,
		"empty devices": []byte(`{"schema_version":1,"devices":{}}`),
	} {
		t.Run(name, func(t *testing.T) {
			if err := testutil.Validate(sch, data); err != nil {
				t.Errorf("schema rejects it: %v", err)
			}
			if _, err := Parse(data); err != nil {
				t.Errorf("Parse rejects it: %v", err)
			}
		})
	}
}

// TestSchemaRejects checks that schema.json and Parse both reject broken files.
func TestSchemaRejects(t *testing.T) {
	sch := testutil.SchemaFile(t, "../schema.json")
	valid := func() map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(fileWith("cpu", "gemv_nt", "f32/tiny", `{"params":{"BN":8},"median_us":1.5,"shapes":[[1,896,896]]}`)), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	entry := func(m map[string]any) map[string]any {
		return m["devices"].(map[string]any)["cpu:x"].(map[string]any)["kernels"].(map[string]any)["gemv_nt"].(map[string]any)["f32/tiny"].(map[string]any)
	}
	device := func(m map[string]any) map[string]any { return m["devices"].(map[string]any)["cpu:x"].(map[string]any) }
	tests := []struct {
		name   string
		mutate func(m map[string]any)
	}{
		{"wrong schema_version", func(m map[string]any) { m["schema_version"] = 2 }},
		{"string schema_version", func(m map[string]any) { m["schema_version"] = "1" }},
		{"missing schema_version", func(m map[string]any) { delete(m, "schema_version") }},
		{"missing devices", func(m map[string]any) { delete(m, "devices") }},
		{"devices an array", func(m map[string]any) { m["devices"] = []any{} }},
		{"string median", func(m map[string]any) { entry(m)["median_us"] = "1.5" }},
		{"string fast_math", func(m map[string]any) { entry(m)["fast_math"] = "yes" }},
		{"numeric fast_math", func(m map[string]any) { entry(m)["fast_math"] = 1 }},
		{"boolean no_harm", func(m map[string]any) { entry(m)["no_harm"] = true }},
		{"drift an array", func(m map[string]any) { entry(m)["drift"] = []any{1} }},
		{"fractional drift events", func(m map[string]any) { entry(m)["drift"] = map[string]any{"events": 1.5} }},
		{"string drift max_pct", func(m map[string]any) { entry(m)["drift"] = map[string]any{"max_pct": "12%"} }},
		{"time an array", func(m map[string]any) { entry(m)["time"] = []any{1.0} }},
		{"string time field", func(m map[string]any) { entry(m)["time"] = map[string]any{"verify_s": "1"} }},
		{"negative time field", func(m map[string]any) { entry(m)["time"] = map[string]any{"compile_s": -1} }},
		{"busy_pct above 100", func(m map[string]any) { entry(m)["time"] = map[string]any{"busy_pct": 100.5} }},
		{"lower-case param name", func(m map[string]any) { entry(m)["params"] = map[string]any{"bn": 8} }},
		{"float param value", func(m map[string]any) { entry(m)["params"] = map[string]any{"BN": 8.5} }},
		{"string param value", func(m map[string]any) { entry(m)["params"] = map[string]any{"BN": "8"} }},
		{"param beyond int32", func(m map[string]any) { entry(m)["params"] = map[string]any{"BN": 1 << 40} }},
		{"missing params", func(m map[string]any) { delete(entry(m), "params") }},
		{"shapes not nested", func(m map[string]any) { entry(m)["shapes"] = []any{1, 896, 896} }},
		{"missing backend", func(m map[string]any) { delete(device(m), "backend") }},
		{"missing kernels", func(m map[string]any) { delete(device(m), "kernels") }},
		{"numeric name", func(m map[string]any) { device(m)["name"] = 5 }},
		{"entry key without dtype", func(m map[string]any) {
			device(m)["kernels"] = map[string]any{"gemv_nt": map[string]any{"tiny": entry(valid())}}
		}},
		{"empty device key", func(m map[string]any) { m["devices"].(map[string]any)[""] = device(m) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := valid()
			tt.mutate(m)
			data, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if err := testutil.Validate(sch, data); err == nil {
				t.Errorf("schema accepts %s", data)
			}
			if _, err := Parse(data); err == nil {
				t.Errorf("Parse accepts %s", data)
			}
		})
	}
	t.Run("not broken", func(t *testing.T) {
		data, _ := json.Marshal(valid())
		if err := testutil.Validate(sch, data); err != nil {
			t.Error(err)
		}
	})
}

// fast_math (a Metal entry's compile option) survives a write, a merge and
// a read; entries without it read as nil.
func TestFastMathField(t *testing.T) {
	sch := testutil.SchemaFile(t, "../schema.json")
	on, off := true, false
	upd := &File{SchemaVersion: SchemaVersion, Devices: map[string]*Device{"metal:Apple M2:10c": {
		Backend: "metal", Name: "Apple M2", Family: "apple8", ComputeUnits: 10,
		Kernels: map[string]map[string]*Entry{families.GemvNT: {
			"f16/tiny":     {Params: map[string]int{"TG": 128}, MedianUS: 9, FastMath: &on},
			"f16/largeN":   {Params: map[string]int{"TG": 256}, MedianUS: 90, FastMath: &off},
			"f16/1x896x96": {Params: map[string]int{"TG": 64}, MedianUS: 3},
		}},
	}}}
	data := writeValid(t, sch, upd, "fast_math")
	// Merging another device's entry onto it keeps the field.
	again, err := Merge(data, &File{Devices: map[string]*Device{"cpu:x": {Backend: "cpu", Name: "X", Family: "amd64",
		Kernels: map[string]map[string]*Entry{families.GemvNT: {"f32/tiny": {Params: map[string]int{"BN": 8}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(again)
	if err != nil {
		t.Fatal(err)
	}
	es := f.Devices["metal:Apple M2:10c"].Kernels[families.GemvNT]
	for key, want := range map[string]*bool{"f16/tiny": &on, "f16/largeN": &off, "f16/1x896x96": nil} {
		got := es[key].FastMath
		if (got == nil) != (want == nil) || (got != nil && *got != *want) {
			t.Errorf("%s: fast_math %v, want %v", key, got, want)
		}
	}
	bad := strings.Replace(string(data), `"fast_math": true`, `"fast_math": "yes"`, 1)
	if bad == string(data) {
		t.Fatalf("no fast_math in the written file:\n%s", data)
	}
	if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), `["f16/tiny"].fast_math: must be a boolean, got a string`) {
		t.Errorf("a string fast_math: %v", err)
	}
}

// The drift guard's record and the no-harm note survive a write, a merge
// and a read, and the schema accepts them.
func TestDriftAndNoHarmFields(t *testing.T) {
	sch := testutil.SchemaFile(t, "../schema.json")
	drift := &DriftSummary{Checks: 12, Events: 2, MaxPct: 23.5, Remeasured: 9, Settled: 1, WaitedS: 10}
	note := "BN=4 was 8.0% faster over the shapes but 12.0% slower than the default on 1x896x896"
	data, es := roundTripGemv(t, sch, "drift or no_harm", &Entry{Params: map[string]int{"BN": 8}, MedianUS: 9, Drift: drift, NoHarm: note}, &Entry{Params: map[string]int{"BN": 16}, MedianUS: 90})
	if got := es["f32/tiny"]; got.Drift == nil || *got.Drift != *drift || got.NoHarm != note {
		t.Errorf("read back drift %+v, no_harm %q; want %+v, %q", got.Drift, got.NoHarm, drift, note)
	}
	if got := es["f32/mid"]; got.Drift != nil || got.NoHarm != "" {
		t.Errorf("an entry without them reads drift %+v, no_harm %q", got.Drift, got.NoHarm)
	}
	var raw struct {
		Devices map[string]struct {
			Kernels map[string]map[string]map[string]any `json:"kernels"`
		} `json:"devices"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"drift", "no_harm"} {
		if _, ok := raw.Devices["cpu:x"].Kernels[families.GemvNT]["f32/mid"][field]; ok {
			t.Errorf("an entry without %s writes one:\n%s", field, data)
		}
	}
}

// time (where an entry's tuning time went) survives a write, a merge and a
// read, field by field; entries without it read as nil.
func TestTimeField(t *testing.T) {
	sch := testutil.SchemaFile(t, "../schema.json")
	tt := &TuneTime{WallS: 8.5, SetupS: 1.25, CompileS: 0.5, VerifyS: 1, MeasureS: 5.5, SearchS: 0.1, JournalS: 0.05, OtherS: 0.1,
		DeviceS: 6, IdleS: 2.5, BusyPct: 70.588}
	data, es := roundTripGemv(t, sch, "time", &Entry{Params: map[string]int{"BN": 8}, MedianUS: 9, Time: tt}, &Entry{Params: map[string]int{"BN": 16}, MedianUS: 19})
	if got := es["f32/tiny"].Time; got == nil || *got != *tt {
		t.Errorf("time read back as %+v, want %+v", got, tt)
	}
	if got := es["f32/mid"].Time; got != nil {
		t.Errorf("an entry without time read as %+v", got)
	}
	for _, field := range (&TuneTime{}).timeFields() {
		if !strings.Contains(string(data), `"`+field.key+`"`) {
			t.Errorf("%s missing from the written file", field.key)
		}
	}
}

// writeValid writes upd as a new params file and checks that the schema
// accepts it; what names the fields under test.
func writeValid(t *testing.T, sch *jsonschema.Schema, upd *File, what string) []byte {
	t.Helper()
	data, err := Merge(nil, upd)
	if err != nil {
		t.Fatal(err)
	}
	if err := testutil.Validate(sch, data); err != nil {
		t.Fatalf("schema rejects %s: %v", what, err)
	}
	return data
}

// roundTripGemv writes tiny and mid as the f32 gemv_nt entries of a CPU
// device "cpu:x", checks that the schema accepts the file and reads the
// entries back.
func roundTripGemv(t *testing.T, sch *jsonschema.Schema, what string, tiny, mid *Entry) ([]byte, map[string]*Entry) {
	t.Helper()
	upd := &File{SchemaVersion: SchemaVersion, Devices: map[string]*Device{"cpu:x": {
		Backend: "cpu", Name: "X", Family: "amd64",
		Kernels: map[string]map[string]*Entry{families.GemvNT: {"f32/tiny": tiny, "f32/mid": mid}},
	}}}
	data := writeValid(t, sch, upd, what)
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return data, f.Devices["cpu:x"].Kernels[families.GemvNT]
}
