package tuner_test

import (
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/spec"
	"github.com/kerntune/kerntune/tuner"
)

func TestSpecsRunOn(t *testing.T) {
	swiglu := testutil.Lookup(t, spec.Load, "../examples/swiglu.json")
	mlx := testutil.Lookup(t, spec.Load, "../examples/mlx_qr_col_dot.json")
	tests := []struct {
		specs   []*spec.Compiled
		backend string
		want    string // "" for nil
	}{
		{[]*spec.Compiled{swiglu}, "cuda", ""},
		{[]*spec.Compiled{swiglu, mlx}, "metal", ""},
		{[]*spec.Compiled{swiglu}, "cpu", "spec kernels are GPU code and the cpu backend cannot run them; use --backend cuda, metal or opencl"},
		{[]*spec.Compiled{swiglu, mlx}, "cpu", "runs on the metal backend only, not cpu"},
		{[]*spec.Compiled{mlx}, "opencl", "runs on the metal backend only, not opencl"},
		{[]*spec.Compiled{swiglu}, "vulkan", "the vulkan backend cannot run them"},
		{nil, "cpu", ""},
		{tuner.MLXSpecs([]*spec.Compiled{swiglu}), "cpu", ""},
	}
	for _, tt := range tests {
		err := tuner.SpecsRunOn(tt.specs, tt.backend)
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%d specs on %s: %v, want %q", len(tt.specs), tt.backend, err, tt.want)
		}
	}
}
