package cpu

import (
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/search"
)

// The row kernels, softmax and rmsnorm, have no gonum routine, so no
// baseline.
func init() {
	impls.Add(families.Softmax, family{build: func(c search.Candidate) (*program, error) {
		rp := rowParams(c)
		return &program{f32: softmaxRun(rp, Softmax), f16: softmaxRun(rp, SoftmaxHalf), bf16: softmaxRun(rp, SoftmaxBF16)}, nil
	}})
	impls.Add(families.RMSNorm, family{build: func(c search.Candidate) (*program, error) {
		rp := rowParams(c)
		return &program{f32: rmsnormRun(rp, RMSNorm), f16: rmsnormRun(rp, RMSNormHalf), bf16: rmsnormRun(rp, RMSNormBF16)}, nil
	}})
}

// rowParams binds a candidate's parameters to the row kernels' blocking.
func rowParams(c search.Candidate) RowParams {
	return RowParams{RowsPerTask: c["ROWS"], Unroll: c["UNROLL"], Threads: c["THREADS"]}
}

// softmaxRun is a program's run of kernel with parameters rp, for the
// element type T of x and y.
func softmaxRun[T float32 | uint16](rp RowParams, kernel func(RowParams, int, int, []T, []T)) func(*kernels.Problem, [][]T, []T) {
	return func(p *kernels.Problem, in [][]T, out []T) {
		kernel(rp, p.Case.Shape[0], p.Case.Shape[1], in[0], out)
	}
}

// rmsnormRun is a program's run of kernel with parameters rp, for the
// element type T of x, w and y.
func rmsnormRun[T float32 | uint16](rp RowParams, kernel func(RowParams, int, int, float32, []T, []T, []T)) func(*kernels.Problem, [][]T, []T) {
	return func(p *kernels.Problem, in [][]T, out []T) {
		kernel(rp, p.Case.Shape[0], p.Case.Shape[1], eps(p), in[0], in[1], out)
	}
}

// eps is rmsnorm's epsilon, a scalar of the family.
func eps(p *kernels.Problem) float32 { return float32(p.Kernel.Scalars["eps"]) }
