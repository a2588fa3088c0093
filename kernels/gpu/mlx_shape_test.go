package gpu

import (
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels"
)

// A shape-dependent MLX body generates its source and name from the kernel
// ForShape gives for the shape; SourceFor refuses a kernel that needs one
// and serves one that does not (an input's address space alone).
func TestMLXSourceForShape(t *testing.T) {
	shaped := func(m *MLX, shape []int, p map[string]int) (*MLX, error) {
		s := *m
		s.ForShape = nil
		s.Template = append([]MLXTemplateArg(nil), m.Template...)
		s.Inputs = append([]MLXInput(nil), m.Inputs...)
		for i, tt := range s.Template {
			if tt.Kind == TemplateIntExpr {
				s.Template[i].Kind, s.Template[i].Value = TemplateInt, shape[1]
			}
		}
		s.Inputs[0].Small = shape[0]*shape[1] < MLXMinDeviceElements
		return &s, nil
	}
	tests := []struct {
		name     string
		template []MLXTemplateArg
		shape    []int
		fn, decl string
		needs    bool
	}{
		{"template from the shape", []MLXTemplateArg{{Name: "T", Kind: TemplateDType}, {Name: "D", Kind: TemplateIntExpr, Expr: "d"}}, []int{4, 96},
			"custom_kernel_k__float_96_float_float", "const device float* x [[buffer(0)]]", true},
		{"small input", []MLXTemplateArg{{Name: "T", Kind: TemplateDType}, {Name: "D", Kind: TemplateIntExpr, Expr: "d"}}, []int{1, 3},
			"custom_kernel_k__float_3_floatc_float", "const constant float* x [[buffer(0)]]", true},
		{"address space only", []MLXTemplateArg{{Name: "T", Kind: TemplateDType}}, []int{1, 3},
			"custom_kernel_k__float_floatc_float", "const constant float* x [[buffer(0)]]", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &Body{Family: "k", MLX: &MLX{Name: "k", Source: "out[0] = x[0];", Inputs: []MLXInput{{Name: "x"}},
				Outputs: []MLXOutput{{Name: "out"}}, Template: tt.template, ForShape: shaped}}
			if !b.ShapeDependent() || b.MLX.NeedsShape() != tt.needs {
				t.Fatalf("ShapeDependent %v, NeedsShape %v", b.ShapeDependent(), b.MLX.NeedsShape())
			}
			src, err := b.SourceForShape(Metal, kernels.F32, nil, tt.shape)
			if err != nil {
				t.Fatal(err)
			}
			fn, err := b.FuncNameForShape(kernels.F32, nil, tt.shape)
			if err != nil {
				t.Fatal(err)
			}
			if fn != tt.fn || !strings.Contains(src, tt.decl) || !strings.Contains(src, "void "+fn+"(") {
				t.Errorf("name %s, want %s; source lacks %q or the name:\n%s", fn, tt.fn, tt.decl, src)
			}
			_, err = b.SourceFor(Metal, kernels.F32, nil)
			if tt.needs != (err != nil) {
				t.Errorf("SourceFor without a shape: %v", err)
			}
			if _, err := b.SourceForShape(CUDA, kernels.F32, nil, tt.shape); err == nil {
				t.Error("CUDA built an MLX kernel")
			}
		})
	}
}
