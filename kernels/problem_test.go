package kernels

import (
	"runtime"
	"slices"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
)

// Long operands are drawn in pieces on several goroutines; the values
// depend on the generator alone, whatever the parallelism.
func TestLongOperandsDrawnDeterministically(t *testing.T) {
	k := testutil.Lookup(t, Get, "gemv_nt")
	c := Case{Shape: []int{1, 3 * fillChunk / 64, 64}} // weights of three pieces
	var first *Problem
	for _, procs := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(procs)
		p, err := NewSeededProblem(k, F16, c, 9)
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = p
			continue
		}
		for i := range p.Inputs {
			if !slices.Equal(p.Inputs[i], first.Inputs[i]) {
				t.Fatalf("operand %d differs between GOMAXPROCS 1 and %d", i, procs)
			}
		}
	}
	var w []float32
	for _, in := range first.Inputs {
		if len(in) > len(w) {
			w = in
		}
	}
	if len(w) < 3*fillChunk || w[0] == w[fillChunk] && w[1] == w[fillChunk+1] {
		t.Errorf("weights of %d elements; pieces drawn alike", len(w))
	}
}

// A sum of products that cancels is verified against the products'
// magnitudes: a correct f32 result's rounding passes, while a missing
// term, or any error on a family that is not a sum of products or on an
// output too long to cancel, is still refused.
func TestVerifyCancellingSums(t *testing.T) {
	// x·w = 1 − 1 + 3e-6: a sum a millionth of its terms' magnitudes.
	cancelling := func(t *testing.T, name string, c Case) *Problem {
		t.Helper()
		p, err := NewSeededProblem(testutil.Lookup(t, Get, name), F32, c, 1)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	gemv := func(t *testing.T, n int) *Problem {
		p := cancelling(t, "gemv_nt", Case{Shape: []int{1, n, 3}})
		p.Inputs[0] = []float32{1, -1, 3e-6}
		for j := range n {
			copy(p.Inputs[1][3*j:], []float32{1, 1, 1})
		}
		return p
	}
	rounded := func(p *Problem) []float32 { // off by a few f32 roundings of the terms
		out := make([]float32, len(p.Reference()))
		for i, r := range p.Reference() {
			out[i] = float32(r + 2e-7)
		}
		return out
	}
	for _, tt := range []struct {
		name string
		p    func(t *testing.T) *Problem
		out  func(p *Problem) []float32
		ok   bool
	}{
		{"rounding of a cancelling sum", func(t *testing.T) *Problem { return gemv(t, 1) }, rounded, true},
		{"a term missing", func(t *testing.T) *Problem { return gemv(t, 1) }, func(p *Problem) []float32 {
			return []float32{float32(p.Reference()[0] + 1)} // x₁·w₁ = −1 left out
		}, false},
		{"an output too long to cancel", func(t *testing.T) *Problem { return gemv(t, magnitudeOutputs+1) }, rounded, false},
		{"not a sum of products", func(t *testing.T) *Problem {
			p := cancelling(t, "rmsnorm", Case{Shape: []int{1, 1}})
			p.Inputs[0][0] = 1e-30
			return p
		}, func(p *Problem) []float32 { return []float32{float32(p.Reference()[0] * 1.001)} }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.p(t)
			out := tt.out(p)
			if rel, _ := RelError(out, p.Reference()); rel <= F32.Tolerance() {
				t.Fatalf("relative error %g is within the tolerance: the case tests nothing", rel)
			}
			if err := p.VerifyFor(out, map[string]int{}); (err == nil) != tt.ok {
				t.Errorf("VerifyFor = %v, want ok %v", err, tt.ok)
			}
		})
	}
}
