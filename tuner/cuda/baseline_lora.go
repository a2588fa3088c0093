package cuda

import (
	"errors"

	"github.com/kerntune/kerntune/internal/cudadrv"
	"github.com/kerntune/kerntune/kernels"
)

// loraBaseline is the unfused sequence an application without the fused
// kernel runs, one cuBLAS call each: y = x·Wᵀ (GemmEx), t = x·Aᵀ, then
// y += s·t·Bᵀ, the third product with beta = 1 so that it is also the add.
// cuBLAS has no bias epilogue and, for m > 1 rows, no broadcast: with a
// bias, y first receives it in every row (biasRows) and the first product
// adds to it with beta = 1. t (m×r) and the ones are in the
// problem's dtype, as the application's tensors are, allocated once per
// loaded problem before any timed run and freed with the program.
type loraBaseline struct {
	b       *Backend
	ty      cudadrv.DataType
	scratch instanceBuffers // t, ones (0 without bias)
}

func (l *loraBaseline) prepare(t *cudadrv.Thread, in *instance) error {
	if _, ok := l.scratch[in]; ok {
		return nil
	}
	p := in.Problem
	m, r := p.Case.Shape[0], p.Case.Shape[3]
	s := make([]cudadrv.DevPtr, 2)
	tb, err := t.Alloc(int64(m * r * p.DType.Size()))
	if err != nil {
		return err
	}
	s[0] = tb
	if p.Case.Has(kernels.Bias) {
		d, err := uploadOnes(t, p.DType, m)
		if err != nil {
			return errors.Join(err, freeBuffers(t, s))
		}
		s[1] = d
	}
	l.scratch[in] = s
	return nil
}

// program runs the sequence on input copy c, once its scratch exists.
// Row-major operands are passed as their column-major transposes: yᵀ
// (n×m) = W·xᵀ, tᵀ (r×m) = A·xᵀ, and yᵀ += s·B·tᵀ.
func (l *loraBaseline) program() *program {
	return l.scratch.program(l.b, "lora baseline: scratch", "allocated", func(t *cudadrv.Thread, bl *cudadrv.ThreadBlas, in *instance, c int, s []cudadrv.DevPtr) error {
		p := in.Problem
		m, n, k, r := p.Case.Shape[0], p.Case.Shape[1], p.Case.Shape[2], p.Case.Shape[3]
		ops, ty := in.Inputs[c], l.ty
		x, w, a, b := ops[0], ops[1], ops[2], ops[3]
		beta := float32(0)
		if p.Case.Has(kernels.Bias) {
			if err := biasRows(bl, ty, n, m, ops[4], s[1], in.Out); err != nil {
				return err
			}
			beta = 1
		}
		if err := bl.GemmEx(true, false, n, m, k, 1, w, ty, k, x, ty, k, beta, in.Out, ty, n); err != nil {
			return err
		}
		if err := bl.GemmEx(true, false, r, m, k, 1, a, ty, k, x, ty, k, 0, s[0], ty, r); err != nil {
			return err
		}
		return bl.GemmEx(true, false, n, m, r, float32(p.Kernel.Scalars["scale"]), b, ty, r, s[0], ty, r, 1, in.Out, ty, n)
	})
}
