package cpu

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/tuner"
)

// Baseline is gonum's native BLAS for f32 GEMM and GEMV; there is none for
// f16 or for softmax and rmsnorm (their rooflines use the copy bandwidth).
func (b *Backend) Baseline(k *kernels.Kernel, dt kernels.DType) (tuner.Program, string, error) {
	if dt != kernels.F32 {
		return nil, "", nil
	}
	var impl gonum.Implementation
	switch k.Name {
	case params.GemmAV:
		return &program{f32: func(p *kernels.Problem, in [][]float32, out []float32) {
			m, n, kk := shape3(p)
			impl.Sgemm(blas.NoTrans, blas.NoTrans, m, n, kk, 1, in[0], kk, in[1], n, 0, out, n)
		}}, "gonum", nil
	case params.GemmAtB:
		return &program{f32: func(p *kernels.Problem, in [][]float32, out []float32) {
			m, n, kk := shape3(p)
			impl.Sgemm(blas.Trans, blas.NoTrans, n, kk, m, 1, in[0], n, in[1], kk, 0, out, kk)
		}}, "gonum", nil
	case params.GemvNT:
		return &program{f32: func(p *kernels.Problem, in [][]float32, out []float32) {
			n, kk := p.Case.Shape[1], p.Case.Shape[2]
			beta := float32(0)
			if p.Case.Bias {
				copy(out, in[2])
				beta = 1
			}
			impl.Sgemv(blas.NoTrans, n, kk, 1, in[1], kk, in[0], 1, beta, out, 1)
		}}, "gonum", nil
	}
	return nil, "", nil
}
