package spec

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
)

var mlxExamples = []string{"mlx_qr_col_dot.json", "mlx_gemm_av.json"}

// The generated source of each example matches an expected source written
// by hand from MLX's rules (mlx/backend/common/metal_kernel.cpp).
func TestMLXSourceMatchesMLXRules(t *testing.T) {
	tests := []struct {
		example, expected string
		dt                kernels.DType
		cand              map[string]int
	}{
		{"mlx_qr_col_dot.json", "mlx_qr_col_dot.f32.UNROLL4.metal", kernels.F32, map[string]int{"TG": 64, "UNROLL": 4}},
		{"mlx_gemm_av.json", "mlx_gemm_av.f16.BM32_BN8_BK16.metal", kernels.F16, map[string]int{"BM": 32, "BN": 8, "BK": 16}},
	}
	for _, tt := range tests {
		t.Run(tt.example, func(t *testing.T) {
			c := loadExample(t, tt.example)
			want, err := os.ReadFile(filepath.Join("testdata", tt.expected))
			if err != nil {
				t.Fatal(err)
			}
			got := c.Body.MLX.KernelSource(tt.dt, tt.cand)
			if got != string(want) {
				t.Fatalf("generated source differs from testdata/%s:\n%s", tt.expected, firstDiff(got, string(want)))
			}
			// What Metal compiles: MLX's utilities stand-in, then that source.
			full, err := c.Body.SourceFor(gpu.Metal, tt.dt, tt.cand)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(full, gpu.MLXUtils+got) || strings.Contains(got, "#define") {
				t.Fatalf("full source is not the utilities then MLX's source, without #defines:\n%s", full)
			}
			// The backend looks the function up by MLX's host name.
			name := c.Body.FuncName(tt.dt, tt.cand)
			if !strings.Contains(string(want), `[[host_name("`+name+`")]]`) {
				t.Fatalf("FuncName %s is not the host name", name)
			}
		})
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n got  %q\n want %q", i+1, a, b)
		}
	}
	return "(equal lines; different line endings)"
}

// mlxSpec compiles a small mlx spec with the given body, edited.
func mlxSpec(t *testing.T, body string, edit func(m map[string]any)) (*Compiled, error) {
	t.Helper()
	doc := mlxDoc(body)
	if edit != nil {
		edit(doc)
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return Parse(data, filepath.Join(t.TempDir(), "probe.json"))
}

// mlxDoc is a small valid mlx spec.
func mlxDoc(body string) map[string]any {
	return map[string]any{
		"name": "probe",
		"dims": []any{"m", "k"},
		"source": map[string]any{"mlx": map[string]any{
			"source":       body,
			"input_names":  []any{"Q", "eps", "v", "shape"},
			"output_names": []any{"out"},
			"template":     json.RawMessage(`{"T": "dtype", "TG": "param", "FLAG": true, "PAD": 3}`),
			"constants": []any{
				map[string]any{"name": "eps", "dtype": "float32", "value": "eps"},
				map[string]any{"name": "shape", "dtype": "uint32", "values": []any{"m", "k"}},
			},
		}},
		"buffers": []any{
			map[string]any{"name": "Q", "io": "in", "shape": []any{"m", "k"}},
			map[string]any{"name": "v", "io": "in", "length": "m"},
			map[string]any{"name": "out", "io": "out", "length": "k"},
		},
		"params":    []any{map[string]any{"name": "TG", "values": []any{32, 64}}},
		"launch":    map[string]any{"grid": []any{"k", "2"}, "threadgroup": []any{"TG", "4"}},
		"shapes":    []any{[]any{64, 40}},
		"odd":       []any{[]any{9, 3}},
		"reference": map[string]any{"expr": "0"},
	}
}

// <name>_shape, _strides and _ndim and the Metal attributes are declared
// only when the body's text names them (MLX's substring search, comments
// included), with buffer indexes counting them; scalars are passed by
// reference in the constant space; the Bytes arguments hold what MLX binds.
func TestMLXSignatureRules(t *testing.T) {
	const head = "template <typename T, int TG, bool FLAG, int PAD>\n[[kernel]] void custom_kernel_probe__float_64_1_3_float_floats_float_uint32_tc_float(\n"
	// plain is the signature of a body that names none of the extras.
	const plain = `  const device float* Q [[buffer(0)]],
  const constant float& eps [[buffer(1)]],
  const device float* v [[buffer(2)]],
  const constant uint32_t* shape [[buffer(3)]],
  device float* out [[buffer(4)]]) {
`
	tests := []struct {
		name string
		body string
		want string // the signature's arguments, after head
		// bytes of the Bytes arguments for shape 9×3 (m=9, k=3), in order
		consts func() [][]byte
	}{
		{"nothing used", "out[0] = T(0);", plain, func() [][]byte { return nil }},
		{"shapes, strides, ndim and attributes", `// threads_per_grid appears only in this comment
uint i = thread_position_in_grid.x; out[i] = Q_shape[1] + Q_strides[0] + v_ndim + shape_shape[0] + simdgroup_index_in_threadgroup;`, `  const device float* Q [[buffer(0)]],
  const constant int* Q_shape [[buffer(1)]],
  const constant int64_t* Q_strides [[buffer(2)]],
  const constant float& eps [[buffer(3)]],
  const device float* v [[buffer(4)]],
  const constant int& v_ndim [[buffer(5)]],
  const constant uint32_t* shape [[buffer(6)]],
  const constant int* shape_shape [[buffer(7)]],
  device float* out [[buffer(8)]],
  uint simdgroup_index_in_threadgroup [[simdgroup_index_in_threadgroup]],
  uint3 thread_position_in_grid [[thread_position_in_grid]],
  uint3 threads_per_grid [[threads_per_grid]]) {
`, func() [][]byte {
			return [][]byte{i32s(9, 3), i64s(3, 1), i32s(1), i32s(2)}
		}},
		{"a scalar has no shape arguments", "out[0] = eps_shape + eps_ndim;", plain, func() [][]byte { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := mlxSpec(t, tt.body, nil)
			if err != nil {
				t.Fatal(err)
			}
			p := map[string]int{"TG": 64}
			src := c.Body.MLX.KernelSource(kernels.F32, p)
			want := head + tt.want + tt.body + "\n}\n\ntemplate [[host_name(\"custom_kernel_probe__float_64_1_3_float_floats_float_uint32_tc_float\")]] [[kernel]] decltype(custom_kernel_probe__float_64_1_3_float_floats_float_uint32_tc_float<float, 64, 1, 3>) custom_kernel_probe__float_64_1_3_float_floats_float_uint32_tc_float<float, 64, 1, 3>;\n"
			if src != want {
				t.Fatalf("source differs:\n%s\n--- got\n%s", firstDiff(src, want), src)
			}
			// Args follow the buffer indexes; Bytes arguments carry MLX's values.
			got := c.Body.Consts(kernels.Case{Shape: []int{9, 3}})
			if fmt.Sprint(got) != fmt.Sprint(tt.consts()) {
				t.Fatalf("consts %v, want %v", got, tt.consts())
			}
			nBytes := 0
			for _, a := range c.Body.Args {
				if a.Kind == gpu.Bytes {
					nBytes++
				}
			}
			if nBytes != len(got) || len(c.Body.Args) != strings.Count(tt.want, "[[buffer(") {
				t.Fatalf("args %v for %d consts", c.Body.Args, len(got))
			}
			// Constants are inputs bound as buffers, as MLX binds arrays,
			// holding what the application passes.
			p9, err := kernels.NewProblem(c.Kernel, kernels.F32, kernels.Case{Shape: []int{9, 3}}, rand.New(rand.NewPCG(1, 1)))
			if err != nil {
				t.Fatal(err)
			}
			ops := c.Kernel.Inputs(p9.Case)
			if len(ops) != 4 || ops[1].Name != "eps" || ops[3].Name != "shape" || ops[3].Elem != kernels.ElemUint32 {
				t.Fatalf("inputs %+v", ops)
			}
			if e, sh := p9.Inputs[1], p9.Inputs[3]; len(e) != 1 || e[0] != float32(kernels.RMSNormEps) ||
				fmt.Sprint(ops[3].Elem.Encode(sh)) != fmt.Sprint(u32s(9, 3)) {
				t.Fatalf("constant inputs eps %v, shape %v", e, sh)
			}
			if c.Body.Scalars(kernels.Case{Shape: []int{9, 3}}, c.Kernel.Scalars) != nil {
				t.Fatal("an mlx body has scalar arguments")
			}
		})
	}
}

func u32s(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

func i32s(vs ...int32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	return b
}

func i64s(vs ...int64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b
}

func f32s(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// MLX's launch: grid counts threads; each threadgroup dim is
// min(threadgroup, grid); NTHREADS is the threadgroup's product.
func TestMLXLaunch(t *testing.T) {
	c := loadExample(t, "mlx_qr_col_dot.json")
	for _, tt := range []struct {
		shape []int
		tg    int
		want  gpu.Launch
	}{
		{[]int{4096, 1000}, 256, gpu.Launch{ThreadGrid: [3]int{1024, 1, 1}, Group: [3]int{256, 1, 1}, Grid: [2]int{4, 1}, Threads: 256}},
		{[]int{33, 7}, 64, gpu.Launch{ThreadGrid: [3]int{64, 1, 1}, Group: [3]int{64, 1, 1}, Grid: [2]int{1, 1}, Threads: 64}},
	} {
		p := map[string]int{"TG": tt.tg, "UNROLL": 2}
		if l := c.Body.Geometry(tt.shape, p); l != tt.want {
			t.Errorf("%v TG=%d: %+v, want %+v", tt.shape, tt.tg, l, tt.want)
		}
		if n := c.Body.Threads(p); n != tt.tg {
			t.Errorf("NTHREADS %d, want %d", n, tt.tg)
		}
	}
	// A grid smaller than the threadgroup shrinks the threadgroup, as MLX does.
	small, err := mlxSpec(t, "out[0] = T(0);", nil)
	if err != nil {
		t.Fatal(err)
	}
	l := small.Body.Geometry([]int{9, 3}, map[string]int{"TG": 64})
	want := gpu.Launch{ThreadGrid: [3]int{3, 2, 1}, Group: [3]int{3, 2, 1}, Grid: [2]int{1, 1}, Threads: 6}
	if l != want {
		t.Fatalf("launch %+v, want %+v", l, want)
	}
	// The constant input holds the shape as the application passes it.
	big, err := kernels.NewProblem(c.Kernel, kernels.F32, kernels.Case{Shape: []int{4096, 1000}}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := kernels.ElemUint32.Encode(big.Inputs[2]); fmt.Sprint(got) != fmt.Sprint(u32s(4096, 1000)) {
		t.Fatalf("shape constant %v", got)
	}
	// A shape with an input of fewer than 8 elements is tuned too, with
	// the signature MLX generates for it: v in the constant address space
	// and a c in the name.
	if cl, err := c.Kernel.Classify([]int{5, 4096}); err != nil || cl != "wide" {
		t.Fatalf("classify 5x4096: %q, %v", cl, err)
	}
	if !c.Body.ShapeDependent() {
		t.Fatal("a kernel whose inputs follow the dims does not depend on the shape")
	}
	for _, tt := range []struct {
		shape      []int
		decl, name string
	}{
		{[]int{5, 4096}, "const constant float* v [[buffer(1)]]", "custom_kernel_qr_col_dot__float_64_float_floatc_uint32_tc_float"},
		{[]int{8, 1}, "const device float* v [[buffer(1)]]", "custom_kernel_qr_col_dot__float_64_float_float_uint32_tc_float"},
	} {
		if err := c.CheckShape(tt.shape); err != nil {
			t.Fatalf("CheckShape %v: %v", tt.shape, err)
		}
		src, err := c.Body.SourceForShape(gpu.Metal, kernels.F32, map[string]int{"TG": 32, "UNROLL": 64}, tt.shape)
		if err != nil {
			t.Fatal(err)
		}
		name, err := c.Body.FuncNameForShape(kernels.F32, map[string]int{"TG": 32, "UNROLL": 64}, tt.shape)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(src, tt.decl) || name != tt.name || !strings.Contains(src, `[[host_name("`+name+`")]]`) {
			t.Errorf("shape %v: name %s, want %s; source lacks %q or the host name:\n%s", tt.shape, name, tt.name, tt.decl, src)
		}
	}
	// mlx kernels are Metal only.
	if c.APIs[0] != gpu.Metal || len(c.APIs) != 1 {
		t.Fatalf("APIs %v", c.APIs)
	}
	for _, api := range []gpu.API{gpu.CUDA, gpu.OpenCL} {
		_, err := c.Body.SourceFor(api, kernels.F32, p1)
		if err == nil || !strings.Contains(err.Error(), "mlx_qr_col_dot") || !strings.Contains(err.Error(), string(api)) {
			t.Errorf("%s: %v", api, err)
		}
		if _, err := c.Body.Supported(api, p1); err == nil {
			t.Errorf("%s supports an mlx kernel", api)
		}
	}
}

var p1 = map[string]int{"TG": 64, "UNROLL": 1}

// TestExamplesMSL (msl_test.go) puts every candidate of the mlx examples
// through both MSL checks; here kerntune check's entry point, gpu.CheckMSL,
// passes a good MLX source and fails one whose template instantiation does
// not compile.
func TestMLXExamplesSyntax(t *testing.T) {
	cc := mslcheck.Require(t)
	c := loadExample(t, "mlx_qr_col_dot.json")
	if n := len(c.Space().Enumerate()); n != 24 {
		t.Fatalf("%d candidates of mlx_qr_col_dot, want 24", n)
	}
	src, err := c.Body.SourceFor(gpu.Metal, kernels.F32, p1)
	if err != nil {
		t.Fatal(err)
	}
	fn := c.Body.FuncName(kernels.F32, p1)
	if _, err := gpu.CheckMSL(context.Background(), cc, []gpu.MSLSource{{Name: "good", Func: fn, Text: src}}); err != nil {
		t.Fatalf("the example's source failed: %v", err)
	}
	bad := strings.Replace(src, "out[j] = T(s);", "out[j] = T::zero;", 1)
	if bad == src {
		t.Fatal("the edit changed nothing")
	}
	if _, err := gpu.CheckMSL(context.Background(), cc, []gpu.MSLSource{{Name: "bad", Func: fn, Text: bad}}); err == nil || !strings.Contains(err.Error(), "T::zero") {
		t.Fatalf("a broken template body passed: %v", err)
	}
}

func TestBadMLXSpecs(t *testing.T) {
	mlxOf := func(m map[string]any) map[string]any { return m["source"].(map[string]any)["mlx"].(map[string]any) }
	tests := []struct {
		name string
		edit func(m map[string]any)
		want []string
		// the JSON Schema rejects it too
		schema bool
	}{
		{"missing input_names", func(m map[string]any) { delete(mlxOf(m), "input_names") }, []string{"source.mlx.input_names", "required"}, true},
		{"missing output_names", func(m map[string]any) { delete(mlxOf(m), "output_names") }, []string{"source.mlx.output_names", "required"}, true},
		{"template kind", func(m map[string]any) { mlxOf(m)["template"] = json.RawMessage(`{"T": "type"}`) }, []string{"source.mlx.template.T", `"type" is not a template kind nor a dim or parameter`, `"dtype"`}, false},
		{"template float", func(m map[string]any) {
			mlxOf(m)["template"] = json.RawMessage(`{"T": "dtype", "TG": "param", "X": 1.5}`)
		}, []string{"source.mlx.template.X", "1.5", "integer"}, true},
		{"template negative", func(m map[string]any) {
			mlxOf(m)["template"] = json.RawMessage(`{"T": "dtype", "TG": "param", "X": -2}`)
		}, []string{"source.mlx.template.X", "-2", "non-negative"}, true},
		{"template object", func(m map[string]any) { mlxOf(m)["template"] = json.RawMessage(`{"T": "dtype", "TG": {"param": 1}}`) }, []string{"source.mlx.template.TG", "not a template kind"}, true},
		{"template param unknown", func(m map[string]any) {
			mlxOf(m)["template"] = json.RawMessage(`{"T": "dtype", "TG": "param", "BN": "param"}`)
		}, []string{"source.mlx.template.BN", "does not list"}, false},
		{"template not an object", func(m map[string]any) { mlxOf(m)["template"] = []any{"T"} }, []string{"source.mlx.template must be an object"}, false},
		{"unknown source file", func(m map[string]any) { delete(mlxOf(m), "source"); mlxOf(m)["source_file"] = "nope.metal" }, []string{"source.mlx.source_file", "nope.metal"}, false},
		{"unknown header file", func(m map[string]any) { mlxOf(m)["header_file"] = "nope.h" }, []string{"source.mlx.header_file", "nope.h"}, false},
		{"no source", func(m map[string]any) { delete(mlxOf(m), "source") }, []string{"source.mlx.source_file", "required"}, false},
		{"input not a buffer", func(m map[string]any) { mlxOf(m)["input_names"] = []any{"Q", "eps", "v", "shape", "W"} }, []string{"source.mlx.input_names[4]", `"W"`}, false},
		{"buffer not an input", func(m map[string]any) { mlxOf(m)["input_names"] = []any{"Q", "eps", "shape"} }, []string{"buffers[1].name", `"v" is not in source.mlx.input_names`}, false},
		{"inputs out of order", func(m map[string]any) { mlxOf(m)["input_names"] = []any{"v", "eps", "Q", "shape"} }, []string{"source.mlx.input_names[2]", "same order"}, false},
		{"wrong output", func(m map[string]any) { mlxOf(m)["output_names"] = []any{"y"} }, []string{"source.mlx.output_names", `["y"]`, `["out"]`}, false},
		{"constant dtype", func(m map[string]any) {
			mlxOf(m)["constants"].([]any)[1].(map[string]any)["dtype"] = "float64"
		}, []string{"source.mlx.constants[1].dtype", "float64", "uint32"}, true},
		{"constant out of range", func(m map[string]any) {
			mlxOf(m)["constants"].([]any)[1].(map[string]any)["values"] = []any{"m - 100"}
		}, []string{"source.mlx.constants[1].values[0]", "does not fit uint32"}, false},
		{"launch threads", func(m map[string]any) { m["launch"].(map[string]any)["threads"] = "TG" }, []string{"launch.threads", "threadgroup"}, true},
		{"no threadgroup", func(m map[string]any) { delete(m["launch"].(map[string]any), "threadgroup") }, []string{"launch.threadgroup", "0 expressions"}, true},
		{"scalars", func(m map[string]any) { m["scalars"] = []any{map[string]any{"name": "n", "type": "int", "value": "m"}} }, []string{"scalars:", "source.mlx.constants"}, true},
		{"function", func(m map[string]any) { m["source"].(map[string]any)["function"] = "f" }, []string{"source.function", "source.mlx.name"}, false},
		{"unused param", func(m map[string]any) {
			m["params"] = append(m["params"].([]any), map[string]any{"name": "UNUSED", "values": []any{1, 2}})
		}, []string{"params[1].name", "UNUSED", "template argument"}, false},
		{"shape and length disagree", func(m map[string]any) {
			m["buffers"].([]any)[0].(map[string]any)["length"] = "m * k + 1"
		}, []string{"shapes[0]", "input Q has shape [64 40]", "length 2561"}, false},
		{"shape without mlx", func(m map[string]any) {
			m["source"] = map[string]any{"body": "x"}
			m["launch"] = map[string]any{"threads": "TG", "grid": []any{"k"}}
		}, []string{"buffers[0].shape", "only an mlx source"}, false},
	}
	sch := testutil.Schema(t, "schema.json", SchemaJSON)
	if _, err := mlxSpec(t, "out[0] = T(0);", nil); err != nil {
		t.Fatalf("base mlx spec: %v", err)
	}
	base, _ := json.Marshal(mlxDoc("out[0] = T(0);"))
	if err := testutil.Validate(sch, base); err != nil {
		t.Fatalf("base mlx spec against the schema: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mlxSpec(t, "out[0] = T(0);", tt.edit)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
			if tt.schema {
				doc := mlxDoc("out[0] = T(0);")
				tt.edit(doc)
				data, _ := json.Marshal(doc)
				if err := testutil.Validate(sch, data); err == nil {
					t.Errorf("the JSON Schema accepts it")
				}
			}
		})
	}
}
