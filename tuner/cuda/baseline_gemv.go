package cuda

import (
	"github.com/kerntune/kerntune/internal/cudadrv"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/families"
)

// gemv_nt calls cublasSgemv (f32) or GemmEx with one column (f16, bf16). cuBLAS
// has no bias epilogue: the bias is copied into y first and added with
// beta = 1.
func init() {
	blasCalls.Add(families.GemvNT, func(t *cudadrv.Thread, bl *cudadrv.ThreadBlas, in *instance, c int, ty cudadrv.DataType) error {
		n, kk := in.Problem.Case.Shape[1], in.Problem.Case.Shape[2]
		var bias cudadrv.DevPtr
		if in.Problem.Case.Has(kernels.Bias) {
			bias = in.Inputs[c][2]
		}
		return gemvBLAS(t, bl, in.Problem.DType, ty, n, kk, in.Inputs[c][0], in.Inputs[c][1], bias, in.Out)
	})
}

// gemvBLAS computes y = x·Wᵀ (+ bias; 0: none) with W n×k row-major.
func gemvBLAS(t *cudadrv.Thread, bl *cudadrv.ThreadBlas, dt kernels.DType, ty cudadrv.DataType, n, kk int, x, w, bias, y cudadrv.DevPtr) error {
	beta := float32(0)
	if bias != 0 {
		if err := t.CopyDtoD(y, bias, int64(n*dt.Size())); err != nil {
			return err
		}
		beta = 1
	}
	if dt == kernels.F32 {
		return bl.Sgemv(true, kk, n, 1, w, kk, x, 1, beta, y, 1)
	}
	return bl.GemmEx(true, false, n, 1, kk, 1, w, ty, kk, x, ty, kk, beta, y, ty, n)
}
