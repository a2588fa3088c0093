package tunertest

import (
	"math/rand/v2"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
)

// Kernel is the kernel of the family called name (kernels.Get), failing t
// where there is none.
func Kernel(t testing.TB, name string) *kernels.Kernel {
	t.Helper()
	return testutil.Lookup(t, kernels.Get, name)
}

// Defaults is the default candidate of k's space for backend ("cpu",
// "cuda", "metal", "opencl").
func Defaults(t testing.TB, k *kernels.Kernel, backend string) search.Candidate {
	t.Helper()
	sp, ok := k.Space(backend)
	if !ok {
		t.Fatalf("%s has no %s space", k.Name, backend)
	}
	return search.Candidate(sp.Defaults())
}

// Load is a new problem of k in dt on case c, drawn from rng, and its
// instance with copies input copies from load (a backend's Load).
func Load[I any](t testing.TB, load func(*kernels.Problem, int) (I, error), k *kernels.Kernel, dt kernels.DType, c kernels.Case, rng *rand.Rand, copies int) (*kernels.Problem, I) {
	t.Helper()
	p, err := kernels.NewProblem(k, dt, c, rng)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := load(p, copies)
	if err != nil {
		t.Fatal(err)
	}
	return p, inst
}
