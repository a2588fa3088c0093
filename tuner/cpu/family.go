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

// Kernels are a family's CPU kernels for one candidate, by element type;
// a nil one is a dtype the family does not run on the CPU (a candidate of
// it fails to run, with an error that names the dtype).
type Kernels struct {
	F32  func(p *kernels.Problem, in [][]float32, out []float32)
	F16  func(p *kernels.Problem, in [][]uint16, out []uint16)
	BF16 func(p *kernels.Problem, in [][]uint16, out []uint16)
}

// AddFamily registers the CPU kernels of a family that lives in its own
// folder (family/NAME), from its init: bind binds a candidate's parameters
// (those of the family's cpu space) to its kernels. The name must be a
// built-in family's, added once (as Table.Add).
func AddFamily(name string, bind func(c search.Candidate) (Kernels, error)) {
	impls.Add(name, family{build: func(c search.Candidate) (*program, error) {
		k, err := bind(c)
		if err != nil {
			return nil, err
		}
		return &program{f32: k.F32, f16: k.F16, bf16: k.BF16}, nil
	}})
}
