package cpu

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/search"
)

func init() {
	families.Add(params.GemvNT, family{
		build: func(c search.Candidate) (*program, error) {
			gp := GemvParams{BN: c["BN"], Rows: c["ROWS"], Unroll: c["UNROLL"], Threads: c["THREADS"]}
			return &program{
				f32: func(p *kernels.Problem, in [][]float32, out []float32) {
					GemvNT(gp, p.Case.Shape[1], p.Case.Shape[2], in[0], in[1], bias(p, in), out)
				},
				f16: func(p *kernels.Problem, in [][]uint16, out []uint16) {
					GemvNTHalf(gp, p.Case.Shape[1], p.Case.Shape[2], in[0], in[1], bias(p, in), out)
				},
				bf16: func(p *kernels.Problem, in [][]uint16, out []uint16) {
					GemvNTBF16(gp, p.Case.Shape[1], p.Case.Shape[2], in[0], in[1], bias(p, in), out)
				},
			}, nil
		},
		// Sgemv adds the bias as beta·y, so y starts as a copy of it.
		baseline: func(p *kernels.Problem, in [][]float32, out []float32) {
			n, kk := p.Case.Shape[1], p.Case.Shape[2]
			beta := float32(0)
			if b := bias(p, in); b != nil {
				copy(out, b)
				beta = 1
			}
			gonum.Implementation{}.Sgemv(blas.NoTrans, n, kk, 1, in[1], kk, in[0], 1, beta, out, 1)
		},
	})
}

// bias is gemv_nt's bias operand, nil when the case has none.
func bias[T float32 | uint16](p *kernels.Problem, in [][]T) []T {
	if p.Case.Has(kernels.Bias) {
		return in[2]
	}
	return nil
}
