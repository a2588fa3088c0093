package opencl

import (
	"math/rand/v2"
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
)

// A sample is a run of back-to-back launches divided by their count: the
// count is chosen per instance from single launches first (at least one,
// at most maxRun, so that a run lasts about targetRunSeconds), kept for the
// next timing, and every sample is a positive time.
func TestRunTimesRunsOfLaunches(t *testing.T) {
	b := openOrSkip(t)
	defer b.Close()
	k, err := kernels.Get("gemv_nt")
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := k.Space(b.Info().Backend)
	prog, err := b.Build(k, kernels.F32, search.Candidate(ps.Defaults()))
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	p, err := kernels.NewProblem(k, kernels.F32, kernels.Case{Shape: []int{1, 64, 64}}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	ti, err := b.Load(p, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer ti.Close()
	pr := prog.(*program)
	for round := range 2 {
		secs, err := pr.Run(ti, 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(secs) != 5 {
			t.Fatalf("round %d: %d samples, want 5", round, len(secs))
		}
		for i, s := range secs {
			if !(s > 0) {
				t.Errorf("round %d: sample %d is %g s", round, i, s)
			}
		}
		in := ti.(*instance)
		d := pr.perSample[in]
		if d < 1 || d > maxRun {
			t.Fatalf("round %d: %d launches a sample, want 1..%d", round, d, maxRun)
		}
		t.Logf("round %d: %d launches a sample, median %.1f µs a launch", round, d, 1e6*secs[2])
	}
}
