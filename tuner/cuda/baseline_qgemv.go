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
// m > 1 rows of x, GemmEx with m columns, a bias first put in every row of
// y (biasRows, as lora's baseline). The dequantised weights are made before
// any timed run, one copy per input copy so that runs rotate past the cache
// as the tuned kernel's do, and freed with the program; after them, for
// m > 1 with a bias, a vector of m ones.
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
	m, n, k, bits, g := p.Case.Shape[0], p.Case.Shape[1], p.Case.Shape[2], p.Case.Shape[3], p.Case.Shape[4]
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
	if m > 1 && p.Case.Has(kernels.Bias) {
		d, err := uploadOnes(t, p.DType, m)
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
		beta := float32(0)
		if bias != 0 {
			if err := biasRows(bl, q.ty, n, m, bias, deq[len(in.Inputs)], in.Out); err != nil {
				return err
			}
			beta = 1
		}
		// Row-major x (m×k) and y (m×n) as column-major: yᵀ = w·xᵀ.
		return bl.GemmEx(true, false, n, m, k, 1, deq[c], q.ty, k, in.Inputs[c][0], q.ty, k, beta, in.Out, q.ty, n)
	})
}
