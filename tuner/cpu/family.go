package cpu

import (
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
)

// family is what the CPU backend runs of one kernel family. Each family
// registers its own from the init of its file (family_gemm.go,
// family_gemv.go, ...), so Build and Baseline need no case per family.
type family struct {
	// build binds a candidate's parameters to the family's kernel functions.
	build func(c search.Candidate) (*program, error)
	// baseline is the f32 routine of gonum's BLAS for the family; nil when
	// gonum has none (f16, softmax, rmsnorm: their rooflines use the copy
	// bandwidth).
	baseline func(p *kernels.Problem, in [][]float32, out []float32)
}

// families holds the CPU implementations by family name.
var families = kernels.NewTable[family]("CPU implementation")
