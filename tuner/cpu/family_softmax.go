package cpu

import (
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/search"
)

// Softmax has no gonum routine, so no baseline.
func init() {
	families.Add(params.Softmax, family{build: func(c search.Candidate) (*program, error) {
		rp := RowParams{RowsPerTask: c["ROWS"], Unroll: c["UNROLL"], Threads: c["THREADS"]}
		return &program{
			f32: func(p *kernels.Problem, in [][]float32, out []float32) {
				Softmax(rp, p.Case.Shape[0], p.Case.Shape[1], in[0], out)
			},
			f16: func(p *kernels.Problem, in [][]uint16, out []uint16) {
				SoftmaxHalf(rp, p.Case.Shape[0], p.Case.Shape[1], in[0], out)
			},
			bf16: func(p *kernels.Problem, in [][]uint16, out []uint16) {
				SoftmaxBF16(rp, p.Case.Shape[0], p.Case.Shape[1], in[0], out)
			},
		}, nil
	}})
}
