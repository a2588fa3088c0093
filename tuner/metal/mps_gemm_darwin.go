//go:build darwin

package metal

import (
	"github.com/ebitengine/purego/objc"

	"github.com/kerntune/kerntune/params"
)

// The GEMMs are MPSMatrixMultiplication; gemm_at_b uses transposeLeft.
func init() {
	mpsEncoders.Add(params.GemmAV, func(m *mps) encodeFn { return m.gemmAV })
	mpsEncoders.Add(params.GemmAtB, func(m *mps) encodeFn { return m.gemmAtB })
}

// gemmAV: C[m×n] = A[m×k]·V[k×n].
func (m *mps) gemmAV(cb objc.ID, in *instance, cp int, _ bool) error {
	mm, n, k := in.Problem.Case.Shape[0], in.Problem.Case.Shape[1], in.Problem.Case.Shape[2]
	kern, err := m.matMul(false, mm, n, k)
	if err != nil {
		return err
	}
	c, err := m.matrix(in.Out.id, mm, n)
	if err != nil {
		return err
	}
	a, err := m.matrix(in.Inputs[cp][0].id, mm, k)
	if err != nil {
		return err
	}
	v, err := m.matrix(in.Inputs[cp][1].id, k, n)
	if err != nil {
		return err
	}
	kern.Send(sel.encodeMatMul, cb, a, v, c)
	return nil
}

// gemmAtB: Z[n×k] = Aᵀ·B with A m×n and B m×k (transposeLeft).
func (m *mps) gemmAtB(cb objc.ID, in *instance, cp int, _ bool) error {
	mm, n, k := in.Problem.Case.Shape[0], in.Problem.Case.Shape[1], in.Problem.Case.Shape[2]
	kern, err := m.matMul(true, n, k, mm)
	if err != nil {
		return err
	}
	z, err := m.matrix(in.Out.id, n, k)
	if err != nil {
		return err
	}
	a, err := m.matrix(in.Inputs[cp][0].id, mm, n)
	if err != nil {
		return err
	}
	bb, err := m.matrix(in.Inputs[cp][1].id, mm, k)
	if err != nil {
		return err
	}
	kern.Send(sel.encodeMatMul, cb, a, bb, z)
	return nil
}
