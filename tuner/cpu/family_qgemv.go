package cpu

import (
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/search"
)

// qgemv takes its packed weights (operand 1) as uint32 words; x, scales,
// biases and bias are in the dtype. There is no baseline: gonum has no
// quantized mat-vec.
func init() {
	impls.Add(families.QGemv, family{build: func(c search.Candidate) (*program, error) {
		qp := QGemvParams{BN: c["BN"], Rows: c["ROWS"], Threads: c["THREADS"]}
		return &program{
			wf32:  qgemvRun(qp, QGemv),
			wf16:  qgemvRun(qp, QGemvHalf),
			wbf16: qgemvRun(qp, QGemvBF16),
		}, nil
	}})
}

// qgemvRun is a program's run of kernel with parameters qp, for the
// element type T of x, scales, biases, bias and y.
func qgemvRun[T float32 | uint16](qp QGemvParams, kernel func(QGemvParams, int, int, int, int, int, []T, []uint32, []T, []T, []T, []T)) func(*kernels.Problem, [][]T, [][]uint32, []T) {
	return func(p *kernels.Problem, in [][]T, words [][]uint32, out []T) {
		s := p.Case.Shape
		kernel(qp, s[0], s[1], s[2], s[3], s[4], in[0], words[1], in[2], in[3], biasOperand(p, in, 4), out)
	}
}
