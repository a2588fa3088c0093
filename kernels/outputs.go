package kernels

import (
	"fmt"
	"math"
)

// dtypeOf is the dtype whose tolerance a float element type has.
func dtypeOf(e Elem) DType {
	switch e {
	case ElemFloat16:
		return F16
	case ElemBFloat:
		return BF16
	}
	return F32
}

// verifyOutputs checks a kernel with Outputs one output at a time: a float
// output by the relative-norm error, with the looser of the candidate's
// tolerance and its own type's; an integer or bool output exactly (the
// reference rounded to the nearest integer), as counts and indices are.
func (p *Problem) verifyOutputs(out []float32, params map[string]int) error {
	ref := p.Reference()
	ops := p.Kernel.Outputs(p.Case)
	total := 0
	for _, op := range ops {
		total += op.Len
	}
	if len(out) != total || len(ref) != total {
		return fmt.Errorf("%d output elements and %d reference elements, want %d (%d outputs) on %s", len(out), len(ref), total, len(ops), p.Case)
	}
	at := 0
	for _, op := range ops {
		got, want := out[at:at+op.Len], ref[at:at+op.Len]
		at += op.Len
		e := op.Elem.In(p.DType)
		if !e.IsFloat() {
			for i, x := range got {
				v, w := e.Value(x), math.Round(want[i])
				if v != w {
					return fmt.Errorf("output %s element %d of %d is %g, the reference %g (%s values are compared exactly) on %s", op.Name, i, op.Len, v, want[i], e, p.Case)
				}
			}
			continue
		}
		rel, bad := RelError(got, want)
		if bad >= 0 {
			return fmt.Errorf("output %s element %d of %d is not finite (unwritten or overflowed) on %s", op.Name, bad, op.Len, p.Case)
		}
		tol := max(p.Kernel.ToleranceFor(p.DType, params), p.Kernel.Tolerance(dtypeOf(e)))
		if rel > tol || rel != rel {
			return fmt.Errorf("output %s: relative error %.3g exceeds the %s tolerance %.0e on %s", op.Name, rel, e, tol, p.Case)
		}
	}
	return nil
}
