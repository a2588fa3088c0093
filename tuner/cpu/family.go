package cpu

import (
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
)

// family is what the CPU backend runs of one kernel family. Each family
// registers its own from an init (family_blas.go for those gonum has a
// baseline for, family_rows.go, family_qgemv.go), so Build and Baseline
// need no case per family.
type family struct {
	// build binds a candidate's parameters to the family's kernel functions.
	build func(c search.Candidate) (*program, error)
	// baseline is the f32 routine of gonum's BLAS for the family; nil when
	// gonum has none (f16, softmax, rmsnorm: their rooflines use the copy
	// bandwidth).
	baseline func(p *kernels.Problem, in [][]float32, out []float32)
}

// impls holds the CPU implementations by family name.
var impls = kernels.NewTable[family]("CPU implementation")

// biasOperand is operand i of a family whose last operand is an optional
// bias (gemv_nt, lora, qgemv), nil when the case has none.
func biasOperand[T float32 | uint16](p *kernels.Problem, in [][]T, i int) []T {
	if p.Case.Has(kernels.Bias) {
		return in[i]
	}
	return nil
}
