package spec

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/params/families"
)

var examples = []string{"m1_gemv.json", "gemm_av.json", "swiglu.json", "swiglu_raw.json", "mlx_qr_col_dot.json", "mlx_gemm_av.json", "mlx_rowsum_dh.json"}

func examplePath(name string) string { return filepath.Join("..", "examples", name) }

func loadExample(t *testing.T, name string) *Compiled {
	t.Helper()
	c, err := Load(examplePath(name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return c
}

// Every spec under examples/ (a JSON file with a "source" field; the
// variant manifests are not specs) validates against the schema and loads.
func TestExamplesValidateAgainstSchema(t *testing.T) {
	s := testutil.Schema(t, "schema.json", SchemaJSON)
	var names []string
	err := filepath.WalkDir(examplePath("."), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".json" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var probe struct {
			Source json.RawMessage `json:"source"`
		}
		if json.Unmarshal(data, &probe) == nil && probe.Source != nil {
			rel, _ := filepath.Rel(examplePath("."), path)
			names = append(names, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < len(examples) {
		t.Fatalf("found %d example specs: %v", len(names), names)
	}
	for _, name := range names {
		if _, err := Load(examplePath(name)); err != nil {
			t.Errorf("%s does not load: %v", name, err)
		}
		data, err := os.ReadFile(examplePath(name))
		if err != nil {
			t.Fatal(err)
		}
		if err := testutil.Validate(s, data); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestEnumeration compares each example's enumerated space with the same
// constraints written in Go.
func TestEnumeration(t *testing.T) {
	tests := []struct {
		file string
		want func(c map[string]int) bool
	}{
		{"m1_gemv.json", func(c map[string]int) bool {
			bn, tg := c["BN"], c["TG"]
			return (tg%bn == 0 || bn%tg == 0) && bn <= 8*tg && tg <= 32*bn
		}},
		{"gemm_av.json", func(c map[string]int) bool { return c["TILE"]*c["TILE"] >= 32 }},
		{"swiglu.json", func(map[string]int) bool { return true }},
		{"swiglu_raw.json", func(map[string]int) bool { return true }},
		{"mlx_qr_col_dot.json", func(map[string]int) bool { return true }},
		{"mlx_gemm_av.json", func(map[string]int) bool { return true }},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c := loadExample(t, tt.file)
			sp := c.Space()
			want := 0
			product := []map[string]int{{}}
			for _, p := range sp.Params {
				var next []map[string]int
				for _, c := range product {
					for _, v := range p.Values {
						d := map[string]int{p.Name: v}
						for k, x := range c {
							d[k] = x
						}
						next = append(next, d)
					}
				}
				product = next
			}
			for _, cand := range product {
				if tt.want(cand) {
					want++
				}
			}
			got := len(sp.Enumerate())
			if got != want || got == 0 {
				t.Fatalf("%d valid candidates, want %d (of %d)", got, want, sp.Size())
			}
			t.Logf("%s: %d of %d valid", tt.file, got, sp.Size())
		})
	}
}

// Shape-dependent constraints apply per shape: swiglu's VEC must divide cols.
func TestShapeConstraint(t *testing.T) {
	c := loadExample(t, "swiglu.json")
	for _, cols := range []int{37, 300, 904, 4864} {
		for _, cand := range c.Space([]int{3, cols}).Enumerate() {
			if cols%cand["VEC"] != 0 {
				t.Errorf("cols=%d: VEC=%d passed", cols, cand["VEC"])
			}
		}
	}
	if n := len(c.Space([]int{3, 37}).Enumerate()); n != 20 {
		t.Errorf("cols=37: %d candidates, want 20 (VEC=1 only)", n)
	}
}

func TestGeometryAndScalars(t *testing.T) {
	c := loadExample(t, "gemm_av.json")
	for _, shape := range [][]int{{37, 53, 29}, {512, 4864, 896}, {1, 1, 1}} {
		for _, cand := range c.Space().Enumerate() {
			l := c.Body.Geometry(shape, cand)
			tile := cand["TILE"]
			want := gpu.Launch{Grid: [2]int{(shape[1] + tile - 1) / tile, (shape[0] + tile*cand["TM"] - 1) / (tile * cand["TM"])}, Threads: tile * tile}
			if l != want {
				t.Fatalf("%v %v: launch %+v, want %+v", shape, cand, l, want)
			}
			if got, want := c.Body.SharedBytes(cand), 4*(1+cand["DB"])*(tile*cand["TM"]+tile)*(tile+cand["PAD"]); got != want {
				t.Fatalf("%v: shared %d, want %d", cand, got, want)
			}
		}
		sc := c.Body.Scalars(kernels.Case{Shape: shape}, c.Kernel.Scalars)
		if fmt.Sprint(sc) != fmt.Sprint([]any{int32(shape[0]), int32(shape[1]), int32(shape[2])}) {
			t.Fatalf("scalars %v for %v", sc, shape)
		}
	}
	g := loadExample(t, "m1_gemv.json")
	d := g.Body.Defines(map[string]int{"BN": 8, "BK": 64, "TG": 128})
	if d["NTHREADS"] != 128 || d["TPC"] != 16 || d["CPT"] != 1 {
		t.Fatalf("defines %v", d)
	}
	d = g.Body.Defines(map[string]int{"BN": 256, "BK": 64, "TG": 64})
	if d["TPC"] != 1 || d["CPT"] != 4 {
		t.Fatalf("defines %v", d)
	}
	sc := g.Body.Scalars(kernels.Case{Shape: []int{1, 1152, 896}, Options: []string{kernels.Bias}}, g.Kernel.Scalars)
	if fmt.Sprint(sc) != "[1152 896 1]" {
		t.Fatalf("gemv scalars %v", sc)
	}
}

// The implementing examples take the built-in family's shapes, classes and reference.
func TestImplements(t *testing.T) {
	c := loadExample(t, "m1_gemv.json")
	base, _ := kernels.Get(families.GemvNT)
	if len(c.Kernel.Workload) != len(base.Workload) || c.Kernel.Implements != families.GemvNT || c.Kernel.Base() != families.GemvNT {
		t.Fatalf("workload %d cases (want %d), implements %q", len(c.Kernel.Workload), len(base.Workload), c.Kernel.Implements)
	}
	cl, err := c.Kernel.Classify([]int{1, 896, 4864})
	if err != nil || cl != "largeK_smallN" {
		t.Fatalf("class %q, %v", cl, err)
	}
	if _, err := c.Kernel.Classify([]int{2, 896, 896}); err == nil {
		t.Fatal("m=2 accepted for a gemv_nt kernel")
	}
	// A bias case draws the bias operand, as gemv_nt's problems do.
	p, err := kernels.NewProblem(c.Kernel, kernels.F32, kernels.Case{Shape: []int{1, 5, 7}, Options: []string{kernels.Bias}}, rand.New(rand.NewPCG(1, 1)))
	if err != nil || len(p.Inputs) != 3 {
		t.Fatalf("problem with bias: %v, %d inputs", err, len(p.Inputs))
	}
}

func TestReferenceExpression(t *testing.T) {
	c := loadExample(t, "swiglu.json")
	rng := rand.New(rand.NewPCG(3, 4))
	p, err := kernels.NewProblem(c.Kernel, kernels.F32, kernels.Case{Shape: []int{7, 300}}, rng)
	if err != nil {
		t.Fatal(err)
	}
	ref := p.Reference()
	g, u := p.Inputs[0], p.Inputs[1]
	if len(ref) != 2100 {
		t.Fatalf("%d reference elements", len(ref))
	}
	for i := range ref {
		x := float64(g[i])
		want := x / (1 + math.Exp(-x)) * float64(u[i])
		if math.Abs(ref[i]-want) > 1e-12 {
			t.Fatalf("ref[%d] = %g, want %g", i, ref[i], want)
		}
	}
	// The spec's tolerance is the kernel's.
	if _, declared := c.Kernel.Tolerances[kernels.F16]; !declared || c.Kernel.Tolerance(kernels.F16) != 1e-3 || c.Kernel.Tolerance(kernels.F32) != 1e-5 {
		t.Fatalf("tolerances %v", c.Kernel.Tolerances)
	}
	out := make([]float32, len(ref))
	for i, v := range ref {
		out[i] = float32(v)
	}
	if err := p.Verify(out); err != nil {
		t.Fatal(err)
	}
	out[5] += 1
	if err := p.Verify(out); err == nil {
		t.Fatal("a wrong element passed verification")
	}
}

func TestRegister(t *testing.T) {
	c := loadExample(t, "swiglu.json")
	if err := c.Register(); err != nil {
		t.Fatal(err)
	}
	k, err := kernels.Get("swiglu")
	if err != nil || k != c.Kernel {
		t.Fatalf("kernels.Get: %v", err)
	}
	b, err := gpu.Get("swiglu")
	if err != nil || b != c.Body {
		t.Fatalf("gpu.Get: %v", err)
	}
	if err := kernels.Register(&kernels.Kernel{Family: &families.Family{Name: "softmax"}}); err == nil {
		t.Fatal("a built-in name was registered")
	}
}

// The params loader resolves a spec kernel's entries and env overrides
// (KERNTUNE_M1_GEMV_BN) once it is given the spec's family (an app on
// the file's GPU says its backend: the file's only device is another
// backend than this machine's CPU).
func TestParamsLoader(t *testing.T) {
	c := loadExample(t, "m1_gemv.json")
	file := `{"schema_version": 1, "devices": {"cuda:H100": {"backend": "cuda", "name": "H100", "family": "sm_90", "kernels": {
	  "m1_gemv": {"f32/tiny": {"params": {"BN": 16, "BK": 256, "TG": 64}, "median_us": 5, "iqr_us": 0.1, "samples": 10, "shapes": [[1, 896, 896]], "candidates": {"valid": 1, "measured": 1, "failed": 0}}}}}}}`
	env := map[string]string{}
	l, err := params.LoadBytes([]byte(file), params.Options{Backend: "cuda", Families: map[string]*families.Family{"m1_gemv": c.Kernel.Family},
		Lookup: func(n string) (string, bool) { v, ok := env[n]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.Resolve("m1_gemv", "f32", []int{1, 1152, 896})
	if err != nil {
		t.Fatal(err)
	}
	if r.Int("BN") != 16 || !strings.HasPrefix(r.Params["BN"].Source, "file:") {
		t.Fatalf("BN = %+v", r.Params["BN"])
	}
	env[params.EnvVarName("", "m1_gemv", "BN")] = "32"
	r, err = l.Resolve("m1_gemv", "f32", []int{1, 1152, 896})
	if err != nil {
		t.Fatal(err)
	}
	if r.Params["BN"] != (params.Value{Value: 32, Source: "env:KERNTUNE_M1_GEMV_BN"}) {
		t.Fatalf("BN = %+v", r.Params["BN"])
	}
}

// base is a valid spec that the bad-spec cases break one field at a time.
const base = `{
  "name": "scale",
  "dims": ["n"],
  "source": {"body": "const int i = GROUP_X * NTHREADS + LID; if (i < n) STORE(y, i, LOAD(x, i) * 2.0f);"},
  "buffers": [{"name": "x", "io": "in", "length": "n"}, {"name": "y", "io": "out", "length": "n"}],
  "scalars": [{"name": "n", "type": "int", "value": "n"}],
  "params": [{"name": "TG", "values": [32, 64, 128]}],
  "launch": {"threads": "TG", "grid": ["cdiv(n, TG)"]},
  "shapes": [[1000]],
  "reference": {"expr": "2 * x[i]"}
}`

func TestBadSpecs(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(m map[string]any)
		want   []string // substrings of the error: field, expression, reason
		schema bool     // the JSON Schema rejects it too
	}{
		{"bad name", func(m map[string]any) { m["name"] = "Scale" }, []string{"name:", "lower-case"}, true},
		{"builtin name", func(m map[string]any) { m["name"] = "softmax" }, []string{"name:", "built-in"}, false},
		{"unknown implements", func(m map[string]any) { m["implements"] = "conv"; delete(m, "reference") }, []string{"implements:", "conv"}, true},
		{"no reference", func(m map[string]any) { delete(m, "reference") }, []string{"reference:", "required"}, true},
		{"both correctness", func(m map[string]any) { m["implements"] = "softmax" }, []string{"reference:", "implements softmax"}, true},
		{"syntax error", func(m map[string]any) { m["launch"].(map[string]any)["grid"] = []any{"cdiv(n, TG"} }, []string{"launch.grid[0]", `"cdiv(n, TG"`}, false},
		{"unknown name", func(m map[string]any) { m["launch"].(map[string]any)["threads"] = "TG * n" }, []string{"launch.threads", `"TG * n"`, "unknown name n"}, false},
		{"float division", func(m map[string]any) { m["launch"].(map[string]any)["grid"] = []any{"n / TG"} }, []string{"launch.grid[0]", `"n / TG"`, "idiv"}, false},
		{"zero grid", func(m map[string]any) { m["launch"].(map[string]any)["grid"] = []any{"idiv(n, 2048)"} }, []string{"launch.grid[0]", "is 0 threadgroups"}, false},
		{"constraint not bool", func(m map[string]any) { m["constraints"] = []any{"TG + 1"} }, []string{"constraints[0]", `"TG + 1"`}, false},
		{"no candidate", func(m map[string]any) { m["constraints"] = []any{"TG > 512"} }, []string{"constraints:", "no candidate"}, false},
		{"bad param name", func(m map[string]any) { m["params"] = []any{map[string]any{"name": "tg", "values": []any{32}}} }, []string{"params[0].name", "upper-case"}, true},
		{"reserved param", func(m map[string]any) { m["params"] = []any{map[string]any{"name": "T", "values": []any{32}}} }, []string{"params[0].name", "dialect"}, false},
		{"USE is no param", func(m map[string]any) { m["params"] = []any{map[string]any{"name": "USE", "values": []any{32}}} }, []string{"params[0].name", "USE is reserved", "_USE chooses"}, true},
		{"bad default", func(m map[string]any) {
			m["params"] = []any{map[string]any{"name": "TG", "values": []any{32}, "default": 64}}
		}, []string{"params[0].default", "64"}, false},
		{"two outputs", func(m map[string]any) {
			m["buffers"] = append(m["buffers"].([]any), map[string]any{"name": "z", "io": "out", "length": "n"})
		}, []string{"buffers:", "2 output buffers"}, false},
		{"length uses param", func(m map[string]any) {
			m["buffers"].([]any)[0].(map[string]any)["length"] = "n * TG"
		}, []string{"buffers[0].length", `"n * TG"`, "unknown name TG"}, false},
		{"reference out of range", func(m map[string]any) { m["reference"] = map[string]any{"expr": "x[i + 1]"} }, []string{"reference.expr", `"x[i + 1]"`, "out of range"}, false},
		{"class without when first", func(m map[string]any) {
			m["classes"] = []any{map[string]any{"name": "all"}, map[string]any{"name": "big", "when": "n > 10"}}
		}, []string{"classes[0].when", "last class"}, false},
		{"shape of wrong rank", func(m map[string]any) { m["shapes"] = []any{[]any{10, 10}} }, []string{"shapes[0]", "1 dims"}, false},
		{"unknown field", func(m map[string]any) { m["grid"] = "n" }, []string{`unknown field "grid"`}, true},
		{"missing body file", func(m map[string]any) { m["source"] = map[string]any{"body_file": "nope.body"} }, []string{"source.body_file", "nope.body"}, false},
		{"bias without gemv", func(m map[string]any) { m["bias"] = true }, []string{"bias:", "gemv_nt"}, false},
		{"bad tolerance", func(m map[string]any) { m["tolerance"] = map[string]any{"f32": 2.0} }, []string{"tolerance.f32", "not in (0, 1)"}, true},
		{"implements with wrong operands", func(m map[string]any) {
			delete(m, "reference")
			m["implements"] = "softmax"
			delete(m, "dims")
			m["buffers"] = []any{map[string]any{"name": "x", "io": "in", "length": "rows"}, map[string]any{"name": "y", "io": "out", "length": "rows * cols"}}
			m["scalars"] = []any{}
			m["launch"].(map[string]any)["grid"] = []any{"rows"}
			delete(m, "shapes")
		}, []string{"buffers[0].length", `"rows"`, "softmax's operand x"}, false},
	}
	sch := testutil.Schema(t, "schema.json", SchemaJSON)
	var orig map[string]any
	if err := json.Unmarshal([]byte(base), &orig); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse([]byte(base), "base.json"); err != nil {
		t.Fatalf("base spec: %v", err)
	}
	if err := testutil.Validate(sch, []byte(base)); err != nil {
		t.Fatalf("base spec against the schema: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m map[string]any
			json.Unmarshal([]byte(base), &m)
			tt.edit(m)
			data, _ := json.Marshal(m)
			_, err := Parse(data, "bad.json")
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "bad.json") {
				t.Errorf("error does not name the file: %s", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q: %s", w, msg)
				}
			}
			if tt.schema {
				if err := testutil.Validate(sch, data); err == nil {
					t.Errorf("the JSON Schema accepts it")
				}
			}
		})
	}
}

// A spec or source file is read up to paramfile.MaxFileSize: a device that
// never ends (/dev/zero) is an error naming the file and the limit, not a
// read that fills memory.
func TestSpecFileLimit(t *testing.T) {
	testutil.RefusesDevZero(t, func(path string) error {
		_, err := Load(path)
		return err
	}, "/dev/zero: not a regular file, and it yields more than 64 MiB, the limit of a spec file")
	var m map[string]any
	if err := json.Unmarshal([]byte(base), &m); err != nil {
		t.Fatal(err)
	}
	m["source"] = map[string]any{"body_file": "/dev/zero"}
	data, _ := json.Marshal(m)
	if _, err := Parse(data, "big.json"); err == nil || !strings.Contains(err.Error(), "source.body_file: /dev/zero: not a regular file, and it yields more than 64 MiB, the limit of a kernel source file") {
		t.Errorf("body_file /dev/zero: %v", err)
	}
}

func TestImportVariants(t *testing.T) {
	data, err := os.ReadFile(examplePath("variants_enhanced.json"))
	if err != nil {
		t.Fatal(err)
	}
	vs, err := ParseManifest(data, "variants_enhanced.json")
	if err != nil {
		t.Fatal(err)
	}
	tmpl := loadExample(t, "m1_gemv.json")
	for _, only := range []bool{false, true} {
		s, notes, err := ImportVariants(vs, "variants_enhanced.json", ImportOptions{Name: "imported", Template: tmpl.Spec, OnlyListed: only})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, p := range s.Params {
			got[p.Name] = fmt.Sprint(p.Values)
		}
		// Enabled variants: bn 64/128/256, bk 64/128, tg 128 only ("tgread" is not a tg token).
		if got["BN"] != "[64 128 256]" || got["BK"] != "[64 128]" || got["TG"] != "[128]" || len(got) != 3 {
			t.Fatalf("params %v", got)
		}
		if s.Bias {
			t.Fatal("bias imported although no variant supports it")
		}
		if len(notes) == 0 {
			t.Fatal("no notes on disabled variants and unmapped flags")
		}
		// The template's source is relative to examples/.
		data, _ := json.Marshal(s)
		c, err := Parse(data, examplePath("imported.json"))
		if err != nil {
			t.Fatal(err)
		}
		n := len(c.Space().Enumerate())
		if only && n != 5 {
			t.Fatalf("only-listed space has %d candidates, want the 5 enabled variants", n)
		}
		if !only && n != 6 {
			t.Fatalf("product space has %d candidates, want 3×2×1", n)
		}
	}
	// Several styles become STYLE.
	vs = []Variant{{Name: "v/nt_bn64_tgread_tg128"}, {Name: "v/nt_bn32_sgbr_tg64"}}
	s, _, err := ImportVariants(vs, "m.json", ImportOptions{Name: "two"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Params) != 3 || s.Params[1].Name != "STYLE" || !strings.Contains(s.Params[1].Doc, "0=nt_tgread") {
		t.Fatalf("params %+v", s.Params)
	}
}

// Generated OpenCL sources of the examples pass clang's OpenCL C check:
// about eight candidates spread over each space per dtype (parameters
// change only constants, and one clang run per source is slow on CI's two
// cores). The MSL of every example candidate is checked in msl_test.go.
func TestGeneratedSourcesSyntax(t *testing.T) {
	cc := mslcheck.Require(t)
	dir := t.TempDir()
	checked := 0
	for _, name := range examples {
		c := loadExample(t, name)
		cands := c.Space().Enumerate()
		for _, api := range c.APIs {
			if api != gpu.OpenCL {
				continue // NVRTC on the GPU machine checks CUDA (scripts/gpu-spec.sh); MSL: msl_test.go
			}
			for _, dt := range c.DTypes() {
				for i := 0; i < len(cands); i += max(1, len(cands)/8) {
					cand := cands[i]
					src, err := c.Body.SourceFor(api, dt, cand)
					if err != nil {
						t.Fatal(err)
					}
					path := filepath.Join(dir, fmt.Sprintf("%s_%s_%s_%d.cl", c.Kernel.Name, api, dt, i))
					if dt == kernels.F16 {
						src = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n" + src
					}
					os.WriteFile(path, []byte(src), 0o644)
					args := []string{"-x", "cl", "-cl-std=CL1.2", "-fsyntax-only", "-ferror-limit=5", "-Xclang", "-finclude-default-header", path}
					if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
						t.Fatalf("%s %s %s %s: %v\n%s", name, api, dt, cand.Key(), err, out)
					}
					checked++
				}
			}
		}
	}
	t.Logf("%d OpenCL sources checked", checked)
}

// The static check generates a source for every valid candidate, dtype
// and API, and counts the candidates valid on each class's shapes.
func TestStaticCheckCounts(t *testing.T) {
	c, err := Load("../examples/swiglu.json")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := c.StaticCheck(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := sc.Valid * sc.DTypes * len(sc.APIs); sc.Sources != want || want == 0 {
		t.Errorf("sources %d, want %d valid × %d dtypes × %d APIs", sc.Sources, sc.Valid, sc.DTypes, len(sc.APIs))
	}
	if len(sc.Classes) == 0 || len(sc.Params) == 0 || sc.SpaceSize < sc.Valid {
		t.Errorf("static check %+v", sc)
	}
	for _, cl := range sc.Classes {
		if cl.Valid == 0 || cl.Valid > sc.SpaceSize || len(cl.Shapes) == 0 {
			t.Errorf("class %+v", cl)
		}
	}
	if sc.Unverifiable != 0 {
		t.Errorf("swiglu: %d candidates accepted by no odd shape (e.g. %s); want 0", sc.Unverifiable, sc.UnverifiableExample)
	}
}

// Candidates that no odd shape accepts are counted: without swiglu's 3×904
// (the one odd row that 8 divides), VEC=8 is verifiable nowhere.
func TestStaticCheckUnverifiable(t *testing.T) {
	_, doc := exampleDoc(t, "swiglu.json")
	doc["odd"] = [][]int{{3, 37}, {1, 1}, {5, 300}}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "swiglu.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := c.StaticCheck(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// TG (5 values) × EPT (4) with VEC=8.
	if sc.Unverifiable != 20 || !strings.Contains(sc.UnverifiableExample, "VEC=8") {
		t.Errorf("unverifiable %d (e.g. %q); want the 20 VEC=8 candidates", sc.Unverifiable, sc.UnverifiableExample)
	}
}

// JSON errors name the line and column; a number too large for its field
// says what the field takes.
func TestDecodeErrorsNameTheLine(t *testing.T) {
	tests := []struct {
		name, data string
		want       []string
	}{
		{"integer overflow", "{\"name\": \"x\",\n \"params\": [{\"name\": \"TG\", \"values\": [99999999999999999999]}]}",
			[]string{"f.json: line 2, column 58: field params.values", "does not fit: it must be an integer of at most 64 bits"}},
		{"missing comma", "{\"name\": \"x\",\n \"params\": [{\"name\": \"TG\" \"values\": [1]}]}",
			[]string{"f.json: line 2, column 27: invalid JSON: invalid character"}},
		{"string for a number", "{\"params\": [{\"values\": [\"8\"]}]}",
			[]string{"line 1, column 27: field params.values: a JSON string cannot be an integer"}},
		{"a params file", `{"schema_version": 1, "devices": {}}`,
			[]string{`unknown field "schema_version"`, "this looks like a params file, hardware_params.json"}},
	}
	for _, tt := range tests {
		_, err := Decode([]byte(tt.data), "f.json")
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want %q", tt.name, err, w)
			}
		}
	}
}
