package spec

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/search"
)

// maxChecks bounds the candidate × shape evaluations made when a spec is
// loaded; beyond it candidates are sampled evenly.
const maxChecks = 200_000

// Space is the kernel's search space: its parameters and the constraints
// that hold for every shape (shape nil) or for the given shapes. Device
// limits are not included; backends add them.
func (cp *Compiled) Space(shapes ...[]int) *search.Space {
	ps, _ := cp.Kernel.Space("gpu")
	sp := &search.Space{}
	for _, p := range ps.Params {
		sp.Params = append(sp.Params, search.Param{Name: p.Name, Values: p.Values})
	}
	sp.Constraints = append(sp.Constraints, search.Constraint{Name: cp.Spec.Name + " constraints",
		Check: func(c search.Candidate) error { return ps.Check(nil, c) }})
	for _, s := range shapes {
		sp.Constraints = append(sp.Constraints, search.Constraint{Name: "valid for " + families.ShapeString(s),
			Check: func(c search.Candidate) error { return ps.Check(s, c) }})
	}
	return sp
}

// CheckShape reports why the kernel cannot be tuned on a shape that
// Classify accepts, or nil: an mlx kernel's buffer shapes must multiply to
// their lengths, each dim 1..2^31-1. Inputs of any size are fine (a small
// one changes the signature, which the body generates per shape).
func (cp *Compiled) CheckShape(shape []int) error {
	if cp.c.mlx == nil {
		return nil
	}
	return cp.c.mlxCheckShape(shape)
}

// DTypes are the element types the kernel supports.
func (cp *Compiled) DTypes() []kernels.DType {
	var out []kernels.DType
	for _, d := range cp.Spec.DTypes {
		out = append(out, kernels.DType(d))
	}
	return out
}

// Register adds the kernel and its body to the catalogs, so that the tuner
// and the GPU backends find them by name. Registries are the one global
// state the project allows: backends look bodies up by family name, and a
// spec kernel must be found the same way without changing their interfaces.
func (cp *Compiled) Register() error {
	if err := kernels.Register(cp.Kernel); err != nil {
		return fmt.Errorf("%s: %w", cp.File, err)
	}
	if err := gpu.Register(cp.Body); err != nil {
		return fmt.Errorf("%s: %w", cp.File, err)
	}
	return nil
}

type namedCase struct {
	field string
	c     kernels.Case
}

// checkCases evaluates every expression on every shape the spec tunes or
// verifies, and on every candidate (sampled beyond maxChecks), so that
// errors surface when the spec is loaded, naming the field and expression.
func (c *compiler) checkCases(out *Compiled) error {
	k := out.Kernel
	var cases []namedCase
	for i, cs := range k.Workload {
		f := fmt.Sprintf("shapes[%d]", i)
		if len(c.s.Shapes) == 0 {
			f = fmt.Sprintf("shapes (from %s, %s)", c.s.Implements, cs)
		}
		cases = append(cases, namedCase{f, cs})
	}
	for i, cs := range k.Odd {
		f := fmt.Sprintf("odd[%d]", i)
		if len(c.s.Odd) == 0 {
			f = fmt.Sprintf("odd (from %s, %s)", c.s.Implements, cs)
		}
		cases = append(cases, namedCase{f, cs})
	}
	for _, nc := range cases {
		if _, err := k.Classify(nc.c.Shape); err != nil {
			c.fail(nc.field, "", "%v", err)
			continue
		}
		if err := out.CheckShape(nc.c.Shape); err != nil {
			c.fail(nc.field, "", "%v", err)
			continue
		}
		c.checkDists(nc.c)
		if _, err := c.scalarValues(nc.c, kernels.RMSNormEps); err != nil {
			c.errs = append(c.errs, err)
		}
		if c.mlx != nil {
			if _, err := c.mlxConsts(nc.c); err != nil {
				c.errs = append(c.errs, err)
			}
			for ci := range c.s.Source.MLX.Constants {
				if _, err := c.constValues(ci, nc.c); err != nil {
					c.errs = append(c.errs, err)
				}
			}
		}
		if out.Base != nil {
			c.matchBase(out, nc)
		}
	}
	if len(c.errs) > 0 {
		return joinErrors(c.errs)
	}

	cands := out.Space().Enumerate()
	if len(cands) == 0 {
		c.fail("constraints", "", "no candidate of the %d in the parameter space satisfies the constraints", out.Space().Size())
		return joinErrors(c.errs)
	}
	if n := len(cands) * (len(cases) + 1); n > maxChecks {
		step := (n + maxChecks - 1) / maxChecks
		var s []search.Candidate
		for i := 0; i < len(cands); i += step {
			s = append(s, cands[i])
		}
		cands = s
	}
	failed := map[string]bool{} // one error per field
	report := func(err error) {
		if e, ok := err.(*Error); ok {
			if failed[e.Field] {
				return
			}
			failed[e.Field] = true
		}
		c.errs = append(c.errs, err)
	}
	ps, _ := k.Space("gpu")
	for _, cand := range cands {
		env := c.env(nil, cand)
		if _, err := c.nthreads(env); err != nil {
			report(err)
		}
		if c.shared != nil {
			if n, err := c.shared.evalInt(env); err != nil {
				report(err)
			} else if n < 0 {
				report(c.shared.errorf("is %d bytes with %s; must not be negative", n, describeEnv(env)))
			}
		}
		for _, name := range c.defineNames {
			if _, err := c.defines[name].evalInt(env); err != nil {
				report(err)
			}
		}
		for _, nc := range cases {
			if ps.Check(nc.c.Shape, cand) != nil {
				continue
			}
			if _, err := c.launch(nc.c.Shape, cand); err != nil {
				report(err)
			}
			if c.mlx != nil && c.mlx.kernel.ForShape != nil {
				if _, err := c.mlx.kernel.Shaped(nc.c.Shape, cand); err != nil {
					report(err)
				}
			}
		}
	}
	// A Python reference runs where a spec is verified (check, tune), not
	// on every load: resolving parameters (get, the params loader) must not
	// need python3 and numpy.
	if c.reference != nil && len(c.errs) == 0 {
		if err := c.checkReference(k, cases); err != nil {
			c.errs = append(c.errs, err)
		}
	}
	return joinErrors(c.errs)
}

// matchBase checks that the buffers line up with the implemented family's
// operands: the backends bind input buffers to its operands in order.
func (c *compiler) matchBase(out *Compiled, nc namedCase) {
	want := out.Base.Inputs(nc.c)
	var got []kernels.Operand
	for _, in := range c.present(nc.c) {
		if in.buffer >= 0 {
			got = append(got, c.operand(in, nc.c))
		}
	}
	if len(got) != len(want) {
		names := make([]string, len(want))
		for i, op := range want {
			names[i] = op.Name
		}
		c.fail("buffers", "", "%d input buffers on %s, but %s takes %d (%v), in that order", len(got), nc.c, out.Base.Name, len(want), names)
		return
	}
	bi := 0
	for i, b := range c.s.Buffers {
		if b.IO != "in" || b.Optional && !nc.c.Has(kernels.Bias) {
			continue
		}
		if got[bi].Len != want[bi].Len {
			c.fail(fmt.Sprintf("buffers[%d].length", i), b.Length, "is %d on %s, but %s's operand %s has %d elements", got[bi].Len, nc.c, out.Base.Name, want[bi].Name, want[bi].Len)
		}
		bi++
	}
	if g, w := out.Kernel.OutLen(nc.c.Shape), out.Base.OutLen(nc.c.Shape); g != w {
		c.fail(fmt.Sprintf("buffers[%d].length", c.outIndex), c.s.Buffers[c.outIndex].Length, "is %d on %s, but %s's output has %d elements", g, nc.c, out.Base.Name, w)
	}
}

// CheckReference runs the kernel's own reference (an expression or a
// Python function; nil for one that implements a built-in family) once on
// its smallest verification or tuned shape: a missing function, an
// exception, a wrong output count or length, a non-finite value or no
// python3 with numpy show before any candidate runs.
func (cp *Compiled) CheckReference() error {
	c := cp.c
	if c.reference == nil && c.py == nil {
		return nil
	}
	var cases []namedCase
	for _, cs := range append(slices.Clone(cp.Kernel.Odd), cp.Kernel.Workload...) {
		cases = append(cases, namedCase{c: cs})
	}
	return c.checkReference(cp.Kernel, cases)
}

// checkReference runs the reference expression (or Python function) once
// on the smallest of cases: an expression's index errors show when the
// spec is loaded, a Python reference's when it is checked.
func (c *compiler) checkReference(k *kernels.Kernel, cases []namedCase) error {
	best, bestN := -1, 0
	for i, nc := range cases {
		n := k.OutLen(nc.c.Shape)
		for _, op := range k.Inputs(nc.c) {
			n += op.Len
		}
		if best < 0 || n < bestN {
			best, bestN = i, n
		}
	}
	if best < 0 {
		return nil
	}
	p, err := kernels.NewProblem(k, kernels.F32, cases[best].c, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		return err
	}
	if c.py != nil {
		_, err = c.pythonReference(kernels.F32, cases[best].c, p.Inputs)
	} else {
		_, err = c.evalReference(cases[best].c, p.Inputs, 1)
	}
	return err
}

// referenceFunc is the kernel's float64 reference: the expression per
// output element, on GOMAXPROCS goroutines. An element whose evaluation
// fails is NaN, which fails verification; checkReference has already run
// the expression once when the spec was loaded.
func (c *compiler) referenceFunc(k *kernels.Kernel) func(kernels.Case, [][]float32) []float64 {
	return func(cs kernels.Case, in [][]float32) []float64 {
		out, _ := c.referenceErr(kernels.F32, cs, in)
		return out
	}
}

// referenceErr is the kernel's reference with its error: the Python
// function's (reference.python), or the expressions'.
func (c *compiler) referenceErr(dt kernels.DType, cs kernels.Case, in [][]float32) ([]float64, error) {
	if c.py != nil {
		return c.pythonReference(dt, cs, in)
	}
	return c.evalReference(cs, in, runtime.GOMAXPROCS(0))
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	}
	return 0, false
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
