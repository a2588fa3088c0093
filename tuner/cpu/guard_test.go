package cpu

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
)

// A kernel that writes past the end of its output through the slice's
// spare capacity (which Go's bounds checks allow) is caught by the canaries.
func TestOutputCanaries(t *testing.T) {
	k := testutil.Lookup(t, kernels.Get, "softmax")
	b := &Backend{}
	tests := []struct {
		name string
		dt   kernels.DType
		prog *program
		want string
	}{
		{"f32 in bounds", kernels.F32, &program{f32: func(_ *kernels.Problem, in [][]float32, out []float32) { copy(out, in[0]) }}, ""},
		{"f32 one past the end", kernels.F32, &program{f32: func(_ *kernels.Problem, _ [][]float32, out []float32) { out[:len(out)+1][len(out)] = 1 }}, "past the end"},
		{"f16 past the end", kernels.F16, &program{f16: func(_ *kernels.Problem, _ [][]uint16, out []uint16) { out[:len(out)+3][len(out)+2] = 1 }}, "past the end"},
	}
	for _, tt := range tests {
		p, err := kernels.NewProblem(k, tt.dt, kernels.Case{Shape: []int{3, 37}}, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		inst, err := b.Load(p, 1)
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 2; round++ { // the canaries are re-armed after a check
			_, err = tt.prog.Output(inst)
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("%s, round %d: %v, want %q", tt.name, round, err, tt.want)
			}
		}
	}
}
