package params

import (
	"errors"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/params/paramfile"
)

// FuzzLoad feeds arbitrary file bytes, environment and shapes to the loader
// and to Merge. Nothing may panic; whatever loads must resolve to allowed
// values with well-formed sources, and whatever parses must merge into a
// file that parses again.
//
//	go test ./params -run XXX -fuzz FuzzLoad -fuzztime 90s
func FuzzLoad(f *testing.F) {
	testdata := readTestFile(f)
	f.Add(testdata, "KERNTUNE_DEVICE=cpu:amd-epyc-7b13-2c\nKERNTUNE_GEMV_NT_BN=8", "1x896x4864", uint8(2))
	f.Add(testdata, "KERNTUNE_GEMM_AV_MC=12", "1024x1024x1024", uint8(1))
	f.Add([]byte(precedenceFile), "KERNTUNE_DEVICE=cpu:a", "1x896x896", uint8(2))
	f.Add([]byte(precedenceFile), "KERNTUNE_DEVICE=cpu:new\nKERNTUNE_GEMV_NT_ROWS= 4 ", "1x4096x4096", uint8(2))
	f.Add([]byte(precedenceFile), "KERNTUNE_DEVICE=cuda:g", "1x151936x896", uint8(2))
	f.Add([]byte(fileWith("cpu", "gemv_nt", "f32/1x0896x896", validEntry)), "", "1x896x896", uint8(2))
	f.Add([]byte(fileWith("cpu", "softmax", "bf16/short", `{"params":{"ROWS":64,"UNROLL":8,"THREADS":64}}`)), "KERNTUNE_SOFTMAX_THREADS=-1", "4x100", uint8(3))
	f.Add([]byte(`{"schema_version":1,"devices":{}}`), "KERNTUNE_RMSNORM_ROWS=99999999999999999999", "0x1", uint8(4))
	f.Add([]byte(`{"schema_version":2}`), "", "", uint8(0))
	f.Add([]byte(`{"schema_version":1,"devices":{"":{}}}]`), "=\n\n==", "x", uint8(0))
	f.Add([]byte(`[1, "a", null, true, {"b": 1e999}]`), "KERNTUNE_GEMV_NT_BN", "1x2x3x4", uint8(255))

	shapes := map[string][]int{
		GemmAV: {512, 4864, 896}, GemmAtB: {64, 64, 64}, GemvNT: {1, 896, 4864}, Softmax: {8, 151936}, RMSNorm: {64, 896},
	}
	sources := []string{SourceEnvPrefix, SourceFilePrefix, SourceFallbackPrefix}
	f.Fuzz(func(t *testing.T, data []byte, environ, shapeText string, pick uint8) {
		vars := map[string]string{}
		for _, line := range strings.Split(environ, "\n") {
			k, v, _ := strings.Cut(line, "=")
			vars[k] = v
		}
		lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }

		if file, err := paramfile.Parse(data); err == nil {
			update := &paramfile.File{Devices: map[string]*paramfile.Device{"cpu:fuzz": {Backend: "cpu", Name: "fuzz", Family: "amd64",
				Kernels: map[string]map[string]*paramfile.Entry{GemvNT: {"f32/tiny": {Params: map[string]int{"BN": 8}}}}}}}
			out, err := paramfile.Merge(data, update)
			if err != nil {
				t.Fatalf("Merge of a file that parses: %v", err)
			}
			merged, err := paramfile.Parse(out)
			if err != nil {
				t.Fatalf("merged file does not parse: %v", err)
			}
			if len(merged.Devices) < len(file.Devices) {
				t.Fatalf("Merge lost devices: %d < %d", len(merged.Devices), len(file.Devices))
			}
		} else {
			var pe *paramfile.PathError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse error %T is not a *PathError: %v", err, err)
			}
		}

		l, err := LoadBytes(data, Options{Lookup: lookup})
		if err != nil {
			if l != nil {
				t.Fatal("a loader and an error")
			}
			return
		}
		fams := l.Families()
		dtype := families.DTypes()[int(pick)%3]
		userShape, _ := families.ParseShape(shapeText) // nil when it does not parse: Resolve must reject it
		type query struct {
			fam   string
			shape []int
		}
		var queries []query
		for _, fam := range fams {
			queries = append(queries, query{fam, shapes[fam]})
		}
		queries = append(queries, query{fams[int(pick)%len(fams)], userShape})
		for _, q := range queries {
			r, err := l.Resolve(q.fam, dtype, q.shape)
			if err != nil {
				continue
			}
			space := l.fams[q.fam].space
			if len(r.Params) != len(space.Params) {
				t.Fatalf("%s: %d params, space has %d", q.fam, len(r.Params), len(space.Params))
			}
			for _, p := range space.Params {
				v, ok := r.Params[p.Name]
				if !ok || !p.Allowed(v.Value) {
					t.Fatalf("%s %s = %+v not allowed", q.fam, p.Name, v)
				}
				good := v.Source == SourceDefault
				for _, s := range sources {
					good = good || strings.HasPrefix(v.Source, s) && len(v.Source) > len(s)
				}
				if !good {
					t.Fatalf("%s %s: bad source %q", q.fam, p.Name, v.Source)
				}
			}
			if space.Check != nil {
				if err := space.Check(q.shape, r.Ints()); err != nil {
					t.Fatalf("%s: resolved set breaks Check: %v", q.fam, err)
				}
			}
		}
		_ = l.UnusedEnv(strings.Split(environ, "\n"))
	})
}
