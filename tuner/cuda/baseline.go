package cuda

import (
	"github.com/kerntune/kerntune/internal/cudadrv"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/tuner"
)

// Baseline is cuBLAS, called in the same harness: cublasGemmEx (f32 without
// TF32, or f16 with f32 accumulation) for the GEMMs, cublasSgemv or GemmEx
// with one column for gemv_nt (the bias is copied into y first and added
// with beta = 1, since cuBLAS has no bias epilogue). Softmax and rmsnorm have
// no vendor routine: their entries are held to the copy bandwidth instead.
// Row-major operands are passed as their column-major transposes.
func (b *Backend) Baseline(k *kernels.Kernel, dt kernels.DType) (tuner.Program, string, error) {
	if !b.lib.HasCUBLAS() {
		return nil, "", nil
	}
	ty := cudadrv.R32F
	if dt == kernels.F16 {
		ty = cudadrv.R16F
	}
	var launch launcher
	switch k.Name {
	case params.GemmAV:
		launch = func(t *cudadrv.Thread, in *instance, c int) error {
			bl, err := t.Blas()
			if err != nil {
				return err
			}
			m, n, kk := in.Problem.Case.Shape[0], in.Problem.Case.Shape[1], in.Problem.Case.Shape[2]
			a, v := in.Inputs[c][0], in.Inputs[c][1]
			return bl.GemmEx(false, false, n, m, kk, 1, v, ty, n, a, ty, kk, 0, in.Out, ty, n)
		}
	case params.GemmAtB:
		launch = func(t *cudadrv.Thread, in *instance, c int) error {
			bl, err := t.Blas()
			if err != nil {
				return err
			}
			m, n, kk := in.Problem.Case.Shape[0], in.Problem.Case.Shape[1], in.Problem.Case.Shape[2]
			a, bb := in.Inputs[c][0], in.Inputs[c][1]
			return bl.GemmEx(false, true, kk, n, m, 1, bb, ty, kk, a, ty, n, 0, in.Out, ty, kk)
		}
	case params.GemvNT:
		launch = func(t *cudadrv.Thread, in *instance, c int) error {
			bl, err := t.Blas()
			if err != nil {
				return err
			}
			n, kk := in.Problem.Case.Shape[1], in.Problem.Case.Shape[2]
			x, w := in.Inputs[c][0], in.Inputs[c][1]
			beta := float32(0)
			if in.Problem.Case.Bias {
				if err := t.CopyDtoD(in.Out, in.Inputs[c][2], int64(n*dt.Size())); err != nil {
					return err
				}
				beta = 1
			}
			if dt == kernels.F32 {
				return bl.Sgemv(true, kk, n, 1, w, kk, x, 1, beta, in.Out, 1)
			}
			return bl.GemmEx(true, false, n, 1, kk, 1, w, ty, kk, x, ty, kk, beta, in.Out, ty, n)
		}
	default:
		return nil, "", nil
	}
	return &program{b: b, launch: launch}, "cublas", nil
}
