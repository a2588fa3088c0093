package cuda

import (
	"errors"
	"math"

	"github.com/kerntune/kerntune/internal/cudadrv"
	"github.com/kerntune/kerntune/kernels"
)

// qgemvBaseline is what an application without a quantized mat-vec runs:
// the weights dequantised once into the activation dtype (w = s·q + β, as
// MLX's mx.dequantize gives them), then cuBLAS's gemv on them (Sgemv in
// f32, GemmEx with one column in f16 and bf16), as gemv_nt's baseline; with
// m > 1 rows of x, GemmEx with m columns (the bias copied into each row of
// y first). The
// dequantised weights are made before any timed run, one copy per input
// copy so that runs rotate past the cache as the tuned kernel's do, and
// freed with the program.
type qgemvBaseline struct {
	b   *Backend
	ty  cudadrv.DataType
	deq instanceBuffers
}

func (q *qgemvBaseline) prepare(t *cudadrv.Thread, in *instance) error {
	if _, ok := q.deq[in]; ok {
		return nil
	}
	p := in.Problem
	n, k, bits, g := p.Case.Shape[1], p.Case.Shape[2], p.Case.Shape[3], p.Case.Shape[4]
	kw, kg := k*bits/32, k/g
	w := make([]float32, n*k)
	words := make([]uint32, kw)
	for j := range n {
		for i := range words {
			words[i] = math.Float32bits(p.Inputs[1][j*kw+i])
		}
		for c := range k {
			s, b := p.Inputs[2][j*kg+c/g], p.Inputs[3][j*kg+c/g]
			w[j*k+c] = s*float32(kernels.QUnpack(words, bits, c)) + b
		}
	}
	host := kernels.ElemOf(p.DType).Encode(w)
	var bufs []cudadrv.DevPtr
	for range in.Inputs {
		d, err := upload(t, host)
		if err != nil {
			return errors.Join(err, freeBuffers(t, bufs))
		}
		bufs = append(bufs, d)
	}
	q.deq[in] = bufs
	return nil
}

// program is the cuBLAS call on input copy c, once its weights exist.
func (q *qgemvBaseline) program() *program {
	// Run and Output dequantised first (ready): no work here but the call.
	return q.deq.program(q.b, "qgemv baseline: weights", "dequantised", func(t *cudadrv.Thread, bl *cudadrv.ThreadBlas, in *instance, c int, deq []cudadrv.DevPtr) error {
		m, n, k := in.Problem.Case.Shape[0], in.Problem.Case.Shape[1], in.Problem.Case.Shape[2]
		var bias cudadrv.DevPtr
		if in.Problem.Case.Has(kernels.Bias) {
			bias = in.Inputs[c][4]
		}
		if m == 1 {
			return gemvBLAS(t, bl, in.Problem.DType, q.ty, n, k, in.Inputs[c][0], deq[c], bias, in.Out)
		}
		return qgemmBLAS(t, bl, in.Problem.DType, q.ty, m, n, k, in.Inputs[c][0], deq[c], bias, in.Out)
	})
}

// qgemmBLAS is y (m×n) = x (m×k)·wᵀ (+ bias in every row) for row-major
// x, w (n×k) and y: column-major, yᵀ = w·xᵀ, one GemmEx.
func qgemmBLAS(t *cudadrv.Thread, bl *cudadrv.ThreadBlas, dt kernels.DType, ty cudadrv.DataType, m, n, k int, x, w, bias, y cudadrv.DevPtr) error {
	beta := float32(0)
	if bias != 0 {
		row := int64(n * dt.Size())
		for i := range m {
			if err := t.CopyDtoD(y+cudadrv.DevPtr(int64(i)*row), bias, row); err != nil {
				return err
			}
		}
		beta = 1
	}
	return bl.GemmEx(true, false, n, m, k, 1, w, ty, k, x, ty, k, beta, y, ty, n)
}
