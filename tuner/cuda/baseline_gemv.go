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

// uploadOnes is a vector of m ones in dt, for biasRows.
func uploadOnes(t *cudadrv.Thread, dt kernels.DType, m int) (cudadrv.DevPtr, error) {
	ones := make([]float32, m)
	for i := range ones {
		ones[i] = 1
	}
	return upload(t, kernels.ElemOf(dt).Encode(ones))
}

// biasRows sets each of the m rows of y (row-major, n wide) to bias:
// cuBLAS has no broadcast, so bias·1ᵀ is one rank-1 GemmEx against ones
// (uploadOnes), after which a product adds to y with beta = 1.
func biasRows(bl *cudadrv.ThreadBlas, ty cudadrv.DataType, n, m int, bias, ones, y cudadrv.DevPtr) error {
	return bl.GemmEx(false, false, n, m, 1, 1, bias, ty, n, ones, ty, 1, 0, y, ty, n)
}
