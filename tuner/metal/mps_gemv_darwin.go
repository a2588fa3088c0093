//go:build darwin

package metal

import (
	"github.com/ebitengine/purego/objc"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/families"
)

// gemv_nt is MPSMatrixVectorMultiplication. Its bias is accumulated with
// beta = 1: for the verified run it is blitted into y first; timed runs
// skip the blit, so MPS does the arithmetic and memory traffic of a fused
// bias (read y, write y) like the candidates, and the baseline is not
// charged for a copy an application could arrange differently.
func init() {
	mpsEncoders.Add(families.GemvNT, func(m *mps) encodeFn { return m.gemvNT })
}

// gemvNT: y[n] = W[n×k]·x[k] (+ bias, kept with beta = 1: blitted into y
// before the verified run; timed runs accumulate into whatever y holds,
// which costs the GPU the same).
func (m *mps) gemvNT(cb objc.ID, in *instance, cp int, verify bool) error {
	n, k := in.Problem.Case.Shape[1], in.Problem.Case.Shape[2]
	beta := 0.0
	if in.Problem.Case.Has(kernels.Bias) {
		beta = 1
	}
	kern, err := m.matVec(n, k, beta)
	if err != nil {
		return err
	}
	y, err := m.vector(in.Out.id, n)
	if err != nil {
		return err
	}
	// macOS wants blit sizes in multiples of 4 bytes; buffers are allocated
	// in multiples of 16 (bufferBytes), so the rounded copy stays inside both.
	biasBytes := roundUp(n*m.size, 4)
	ops := in.Inputs[cp]
	x, err := m.vector(ops[0].id, k)
	if err != nil {
		return err
	}
	w, err := m.matrix(ops[1].id, n, k)
	if err != nil {
		return err
	}
	if in.Problem.Case.Has(kernels.Bias) && verify {
		// In a command buffer of its own, waited for: the buffers are
		// untracked, so Metal would not order a blit encoder before MPS's
		// encoder in one command buffer.
		if err := m.b.runUntimed(func(bcb objc.ID) error { return encodeBlit(bcb, ops[2].id, in.Out.id, biasBytes) }); err != nil {
			return err
		}
	}
	kern.Send(sel.encodeMatVec, cb, w, x, y)
	return nil
}
