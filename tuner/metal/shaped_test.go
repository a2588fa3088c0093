package metal

import "testing"

// Shapes that generate the same kernel share a pipeline; a template value,
// an address space (in the name) or a filled placeholder (in the source
// only) that differs gives another.
func TestShapedKey(t *testing.T) {
	base := shapedKey("k|f32|TG=32", "custom_kernel_k__64_float_float", "src D=64")
	tests := []struct {
		name          string
		cand, fn, src string
		same          bool
	}{
		{"same kernel", "k|f32|TG=32", "custom_kernel_k__64_float_float", "src D=64", true},
		{"template value", "k|f32|TG=32", "custom_kernel_k__128_float_float", "src D=64", false},
		{"small input", "k|f32|TG=32", "custom_kernel_k__64_floatc_float", "src D=64", false},
		{"format value", "k|f32|TG=32", "custom_kernel_k__64_float_float", "src D=128", false},
		{"candidate", "k|f32|TG=64", "custom_kernel_k__64_float_float", "src D=64", false},
	}
	for _, tt := range tests {
		if got := shapedKey(tt.cand, tt.fn, tt.src); (got == base) != tt.same {
			t.Errorf("%s: key %q, base %q, same %v", tt.name, got, base, tt.same)
		}
	}
}
