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
