package cuda

import (
	"github.com/kerntune/kerntune/internal/cudadrv"
	"github.com/kerntune/kerntune/params/families"
)

// The GEMMs call cublasGemmEx on the column-major transposes of their
// row-major operands.
func init() {
	// gemm_av: C = A·V, so Cᵀ (n×m) = Vᵀ·Aᵀ.
	blasCalls.Add(families.GemmAV, func(_ *cudadrv.Thread, bl *cudadrv.ThreadBlas, in *instance, c int, ty cudadrv.DataType) error {
		m, n, kk := in.Problem.Case.Shape[0], in.Problem.Case.Shape[1], in.Problem.Case.Shape[2]
		a, v := in.Inputs[c][0], in.Inputs[c][1]
		return bl.GemmEx(false, false, n, m, kk, 1, v, ty, n, a, ty, kk, 0, in.Out, ty, n)
	})
	// gemm_at_b: Z = Aᵀ·B, so Zᵀ (k×n) = Bᵀ·A.
	blasCalls.Add(families.GemmAtB, func(_ *cudadrv.Thread, bl *cudadrv.ThreadBlas, in *instance, c int, ty cudadrv.DataType) error {
		m, n, kk := in.Problem.Case.Shape[0], in.Problem.Case.Shape[1], in.Problem.Case.Shape[2]
		a, b := in.Inputs[c][0], in.Inputs[c][1]
		return bl.GemmEx(false, true, kk, n, m, 1, b, ty, kk, a, ty, n, 0, in.Out, ty, kk)
	})
}
