package spec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
)

// Template arguments computed from the shape, format placeholders and
// inputs small enough for MLX's constant address space give, per shape,
// the signature, kernel name and body MLX would generate.
func TestMLXShapeArgs(t *testing.T) {
	cand := map[string]int{"TG": 32}
	template := func(extra string) func(m map[string]any) {
		return func(m map[string]any) {
			mlxOf(m)["template"] = json.RawMessage(`{"T": "dtype", "TG": "param", "FLAG": true, "PAD": 3` + extra + `}`)
		}
	}
	tests := []struct {
		name  string
		body  string
		edit  func(m map[string]any)
		shape []int
		// want are in the generated source; not must not be.
		want, not []string
		fn        string
	}{
		{
			name: "int from a dim", body: "out[0] = T(D);", edit: template(`, "D": "k"`), shape: []int{64, 40},
			want: []string{"template <typename T, int TG, bool FLAG, int PAD, int D>", "const device float* Q [[buffer(0)]]", "decltype(custom_kernel_probe__float_32_1_3_40_float_floats_float_uint32_tc_float<float, 32, 1, 3, 40>)"},
			fn:   "custom_kernel_probe__float_32_1_3_40_float_floats_float_uint32_tc_float",
		},
		{
			name: "another shape, another value", body: "out[0] = T(D);", edit: template(`, "D": "k"`), shape: []int{9, 3},
			want: []string{"<float, 32, 1, 3, 3>"},
			fn:   "custom_kernel_probe__float_32_1_3_3_float_floats_float_uint32_tc_float",
		},
		{
			name: "over dims and params", body: "out[0] = T(N);", edit: template(`, "N": "idiv(m * k, TG)"`), shape: []int{64, 40},
			fn: "custom_kernel_probe__float_32_1_3_80_float_floats_float_uint32_tc_float",
		},
		{
			name: "bool expression", body: "out[0] = T(EVEN);", edit: template(`, "EVEN": "k % 32 == 0"`), shape: []int{64, 40},
			want: []string{"bool EVEN>", "<float, 32, 1, 3, 0>"},
			fn:   "custom_kernel_probe__float_32_1_3_0_float_floats_float_uint32_tc_float",
		},
		{
			name: "4-element inputs in constant memory", body: "out[0] = Q[0] + v[0];", shape: []int{1, 4},
			want: []string{"const constant float* Q [[buffer(0)]]", "const constant float& eps [[buffer(1)]]", "const constant float* v [[buffer(2)]]", "device float* out"},
			not:  []string{"device float* Q", "device float* v"},
			fn:   "custom_kernel_probe__float_32_1_3_floatc_floats_floatc_uint32_tc_float",
		},
		{
			name: "8 elements in device memory", body: "out[0] = Q[0];", shape: []int{8, 1},
			want: []string{"const device float* Q [[buffer(0)]]", "const device float* v [[buffer(2)]]"},
			fn:   "custom_kernel_probe__float_32_1_3_float_floats_float_uint32_tc_float",
		},
		{
			name: "0-d input", body: "out[0] = Q + v[0];", shape: []int{64, 40},
			edit: func(m map[string]any) { m["buffers"].([]any)[0].(map[string]any)["shape"] = []any{} },
			want: []string{"const constant float& Q [[buffer(0)]]"},
			not:  []string{"Q_shape"},
			fn:   "custom_kernel_probe__float_32_1_3_floats_floats_float_uint32_tc_float",
		},
		{
			name: "format placeholders", body: "int a[{K}] = {{0}};\nout[0] = T(a[0] + {K} + {TGS});",
			edit:  func(m map[string]any) { mlxOf(m)["format"] = map[string]any{"K": "k", "TGS": "TG * 2"} },
			shape: []int{64, 40},
			want:  []string{"int a[40] = {0};\nout[0] = T(a[0] + 40 + 64);"},
			not:   []string{"{K}", "{{"},
			fn:    "custom_kernel_probe__float_32_1_3_float_floats_float_uint32_tc_float",
		},
		{
			name: "format in the header", body: "out[0] = T(f());",
			edit: func(m map[string]any) {
				mlxOf(m)["header"] = "inline int f() {{ return {M}; }}\n"
				mlxOf(m)["format"] = map[string]any{"M": "m"}
			},
			shape: []int{9, 3},
			want:  []string{"inline int f() { return 9; }\n"},
			fn:    "custom_kernel_probe__float_32_1_3_float_floats_float_uint32_tc_float",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := mlxSpec(t, tt.body, tt.edit)
			if err != nil {
				t.Fatal(err)
			}
			if !c.Body.ShapeDependent() {
				t.Fatal("not shape-dependent")
			}
			src, err := c.Body.SourceForShape(gpu.Metal, kernels.F32, cand, tt.shape)
			if err != nil {
				t.Fatal(err)
			}
			fn, err := c.Body.FuncNameForShape(kernels.F32, cand, tt.shape)
			if err != nil {
				t.Fatal(err)
			}
			if fn != tt.fn {
				t.Errorf("kernel name %s, want %s", fn, tt.fn)
			}
			if !strings.Contains(src, "[[kernel]] void "+fn+"(") {
				t.Errorf("the source does not define %s", fn)
			}
			for _, w := range tt.want {
				if !strings.Contains(src, w) {
					t.Errorf("source lacks %q:\n%s", w, src)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(src, n) {
					t.Errorf("source has %q:\n%s", n, src)
				}
			}
			if _, err := c.Body.SourceFor(gpu.Metal, kernels.F32, cand); c.Body.MLX.NeedsShape() && err == nil {
				t.Error("SourceFor generated a source that needs a shape")
			}
		})
	}
}

// Template expressions and format placeholders that cannot give a kernel
// fail when the spec loads, naming the field, the value and the shape.
func TestBadMLXShapeArgs(t *testing.T) {
	template := func(extra string) func(m map[string]any) {
		return func(m map[string]any) {
			mlxOf(m)["template"] = json.RawMessage(`{"T": "dtype", "TG": "param"` + extra + `}`)
		}
	}
	format := func(f map[string]any) func(m map[string]any) {
		return func(m map[string]any) { mlxOf(m)["format"] = f }
	}
	tests := []struct {
		name string
		body string
		edit func(m map[string]any)
		want []string
	}{
		{"unknown name", "", template(`, "D": "dh"`), []string{"source.mlx.template.D", `"dh" is not a template kind nor a dim or parameter`, "expression over the dims and params (m, k, TG)"}},
		{"negative on a shape", "", template(`, "D": "k - 10"`), []string{"source.mlx.template.D", "is -7 for shape 9x3", "non-negative 32-bit"}},
		{"beyond 32 bits", "", template(`, "D": "m * k * 1000000"`), []string{"source.mlx.template.D", "is 2560000000 for shape 64x40", "non-negative 32-bit"}},
		{"float expression", "", template(`, "D": "k / 3"`), []string{"source.mlx.template.D", "k / 3"}},
		{"unknown placeholder", "out[0] = T({X});", format(map[string]any{"K": "k"}), []string{"source.mlx.source", "placeholder {X} names no source.mlx.format entry"}},
		{"format spec", "out[0] = T({K:3});", format(map[string]any{"K": "k"}), []string{"source.mlx.source", "placeholder {K:3} is not a plain name"}},
		{"positional", "out[0] = T({});", format(map[string]any{"K": "k"}), []string{"source.mlx.source", "placeholder {} is not a plain name"}},
		{"single close", "out[0] = T({K}); }", format(map[string]any{"K": "k"}), []string{"source.mlx.source", "single '}'"}},
		{"single open", "if (true) { out[0] = T({K}); }}", format(map[string]any{"K": "k"}), []string{"source.mlx.source", "'{' at byte 10 opens no placeholder"}},
		{"bad name", "out[0] = T(0);", format(map[string]any{"1K": "k"}), []string{"source.mlx.format.1K", "not an identifier"}},
		{"bad expression", "out[0] = T({K});", format(map[string]any{"K": "kk"}), []string{"source.mlx.format.K", "unknown name kk"}},
		{"constant over a param", "out[0] = T(0);", func(m map[string]any) {
			mlxOf(m)["constants"].([]any)[1].(map[string]any)["values"] = []any{"m", "k * TG"}
		}, []string{"source.mlx.constants[1].values[1]", "k * TG", "uses a tunable parameter", "source.mlx.template"}},
		{"header placeholder", "out[0] = T(0);", func(m map[string]any) {
			mlxOf(m)["header"] = "constant int n = {N};"
			mlxOf(m)["format"] = map[string]any{"K": "k"}
		}, []string{"source.mlx.header", "{N}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.body
			if body == "" {
				body = "out[0] = T(0);"
			}
			_, err := mlxSpec(t, body, tt.edit)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
		})
	}
}

// mlxOf is the source.mlx object of an mlxDoc.
func mlxOf(m map[string]any) map[string]any {
	return m["source"].(map[string]any)["mlx"].(map[string]any)
}

// The example's kernel, as docs/reference/specs.md shows it: the template value and
// the filled placeholder follow the shape, a 4-element x is in the
// constant address space, and the 0-d scale is passed by reference.
func TestMLXRowsumExampleFollowsShape(t *testing.T) {
	c := loadExample(t, "mlx_rowsum_dh.json")
	cand := map[string]int{"TG": 64}
	tests := []struct {
		shape []int
		fn    string
		want  []string
	}{
		{[]int{37, 29}, "custom_kernel_rowsum_dh__float_29_float_floats_float", []string{"if (row >= 37) {", "const device float* x [[buffer(0)]]", "const constant float& scale [[buffer(1)]]"}},
		{[]int{1, 4}, "custom_kernel_rowsum_dh__float_4_floatc_floats_float", []string{"if (row >= 1) {", "const constant float* x [[buffer(0)]]"}},
	}
	for _, tt := range tests {
		fn, err := c.Body.FuncNameForShape(kernels.F32, cand, tt.shape)
		if err != nil {
			t.Fatal(err)
		}
		src, err := c.Body.SourceForShape(gpu.Metal, kernels.F32, cand, tt.shape)
		if err != nil {
			t.Fatal(err)
		}
		if fn != tt.fn {
			t.Errorf("%v: %s, want %s", tt.shape, fn, tt.fn)
		}
		for _, w := range tt.want {
			if !strings.Contains(src, w) {
				t.Errorf("%v: source lacks %q", tt.shape, w)
			}
		}
	}
	if _, err := c.Body.SourceFor(gpu.Metal, kernels.F32, cand); err == nil || !strings.Contains(err.Error(), "SourceForShape") {
		t.Errorf("SourceFor without a shape: %v", err)
	}
}

// A line of a format-string body is located in the filled source, so a
// compiler's error cites the user's line.
func TestMLXFormatLocate(t *testing.T) {
	c := loadExample(t, "mlx_rowsum_dh.json")
	cand := map[string]int{"TG": 64}
	for _, shape := range [][]int{{37, 29}, {1, 4}} {
		src, err := c.Body.SourceForShape(gpu.Metal, kernels.F32, cand, shape)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(src, "\n")
		line := 0
		for i, l := range lines {
			if strings.Contains(l, "if (row >= ") {
				line = i + 1
			}
		}
		o, ok := c.Locate(src, line)
		if !ok || o.Field != "source.mlx.source" || o.Line != 2 || o.Text != "  if (row >= {N}) {{" || o.FileLine == 0 {
			t.Errorf("%v: line %d located at %+v, %v", shape, line, o, ok)
		}
		if o, ok := c.Locate(src, 1); ok {
			t.Errorf("%v: the generated first line located at %+v", shape, o)
		}
	}
}
