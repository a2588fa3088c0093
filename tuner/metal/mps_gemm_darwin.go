//go:build darwin

package metal

import (
	"github.com/ebitengine/purego/objc"

	"github.com/kerntune/kerntune/params/families"
)

// The GEMMs are MPSMatrixMultiplication; gemm_at_b uses transposeLeft.
func init() {
	mpsEncoders.Add(families.GemmAV, func(m *mps) encodeFn { return m.gemmAV })
	mpsEncoders.Add(families.GemmAtB, func(m *mps) encodeFn { return m.gemmAtB })
}

// gemmAV: C[m×n] = A[m×k]·V[k×n].
func (m *mps) gemmAV(cb objc.ID, in *instance, cp int, _ bool) error {
	mm, n, k := in.Problem.Case.Shape[0], in.Problem.Case.Shape[1], in.Problem.Case.Shape[2]
	return m.encodeGemm(cb, in, cp, false, [2]int{mm, k}, [2]int{k, n}, [2]int{mm, n})
}

// gemmAtB: Z[n×k] = Aᵀ·B with A m×n and B m×k (transposeLeft).
func (m *mps) gemmAtB(cb objc.ID, in *instance, cp int, _ bool) error {
	mm, n, k := in.Problem.Case.Shape[0], in.Problem.Case.Shape[1], in.Problem.Case.Shape[2]
	return m.encodeGemm(cb, in, cp, true, [2]int{mm, n}, [2]int{mm, k}, [2]int{n, k})
}

// encodeGemm encodes out = op(L)·R on input copy cp, with L, R and out the
// rows×columns of the problem's first input, second input and output as
// stored, and op transposing L when transLeft: the product's depth is R's
// rows either way.
func (m *mps) encodeGemm(cb objc.ID, in *instance, cp int, transLeft bool, l, r, out [2]int) error {
	kern, err := m.matMul(transLeft, out[0], out[1], r[0])
	if err != nil {
		return err
	}
	var mats [3]objc.ID
	for i, op := range []struct {
		buf  objc.ID
		dims [2]int
	}{{in.Inputs[cp][0].id, l}, {in.Inputs[cp][1].id, r}, {in.Out.id, out}} {
		if mats[i], err = m.matrix(op.buf, op.dims[0], op.dims[1]); err != nil {
			return err
		}
	}
	kern.Send(sel.encodeMatMul, cb, mats[0], mats[1], mats[2])
	return nil
}
