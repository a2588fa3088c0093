package cpu

import (
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/search"
)

// RMSNorm has no gonum routine, so no baseline.
func init() {
	families.Add(params.RMSNorm, family{build: func(c search.Candidate) (*program, error) {
		rp := RowParams{RowsPerTask: c["ROWS"], Unroll: c["UNROLL"], Threads: c["THREADS"]}
		return &program{
			f32: func(p *kernels.Problem, in [][]float32, out []float32) {
				RMSNorm(rp, p.Case.Shape[0], p.Case.Shape[1], eps(p), in[0], in[1], out)
			},
			f16: func(p *kernels.Problem, in [][]uint16, out []uint16) {
				RMSNormHalf(rp, p.Case.Shape[0], p.Case.Shape[1], eps(p), in[0], in[1], out)
			},
			bf16: func(p *kernels.Problem, in [][]uint16, out []uint16) {
				RMSNormBF16(rp, p.Case.Shape[0], p.Case.Shape[1], eps(p), in[0], in[1], out)
			},
		}, nil
	}})
}

// eps is rmsnorm's epsilon, a scalar of the family.
func eps(p *kernels.Problem) float32 { return float32(p.Kernel.Scalars["eps"]) }
