package cuda

import (
	"github.com/kerntune/kerntune/internal/cudadrv"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params"
)

// gemv_nt calls cublasSgemv (f32) or GemmEx with one column (f16, bf16). cuBLAS
// has no bias epilogue: the bias is copied into y first and added with
// beta = 1.
func init() {
	blasCalls.Add(params.GemvNT, func(t *cudadrv.Thread, bl *cudadrv.ThreadBlas, in *instance, c int, ty cudadrv.DataType) error {
		n, kk := in.Problem.Case.Shape[1], in.Problem.Case.Shape[2]
		x, w := in.Inputs[c][0], in.Inputs[c][1]
		dt := in.Problem.DType
		beta := float32(0)
		if in.Problem.Case.Has(kernels.Bias) {
			if err := t.CopyDtoD(in.Out, in.Inputs[c][2], int64(n*dt.Size())); err != nil {
				return err
			}
			beta = 1
		}
		if dt == kernels.F32 {
			return bl.Sgemv(true, kk, n, 1, w, kk, x, 1, beta, in.Out, 1)
		}
		return bl.GemmEx(true, false, n, 1, kk, 1, w, ty, kk, x, ty, kk, beta, in.Out, ty, n)
	})
}
