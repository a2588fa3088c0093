package spec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/kerntune/kerntune/kernels"
)

// stridedOption marks a verification case whose array inputs are not
// row-contiguous: an mlx kernel with ensure_row_contiguous false reads
// them through their strides, as MLX passes views.
const stridedOption = "strided"

// inOp is one input in binding order: a buffer (io "in") or an mlx constant.
type inOp struct {
	name     string
	buffer   int // index in Spec.Buffers, or -1
	cnst     int // index in MLXSource.Constants, or -1
	optional bool
}

// bufferTyping reads a buffer's dtype and range.
func (c *compiler) bufferTyping(i int, b Buffer, dEnv map[string]any) {
	f := fmt.Sprintf("buffers[%d]", i)
	e := kernels.ElemDType
	if b.DType != "" && b.DType != "dtype" {
		var err error
		if e, err = kernels.ParseElem(b.DType); err != nil {
			c.fail(f+".dtype", "", "%q is not a dtype (allowed: \"dtype\" (the tuned element type), %s)", b.DType, elemNames())
		}
	}
	switch {
	case e != kernels.ElemDType && c.s.Source.MLX == nil:
		c.fail(f+".dtype", "", "only an mlx source gives a buffer a dtype of its own (other sources use the tuned type T)")
	case e != kernels.ElemDType && c.s.Implements != "":
		c.fail(f+".dtype", "", "a spec that implements %s takes its operands in the tuned dtype", c.s.Implements)
	}
	c.elems = append(c.elems, e)
	if b.Reference != "" && b.IO != "out" {
		c.fail(f+".reference", "", "only an output buffer has a reference expression")
	}
	isInt := e != kernels.ElemDType && !e.IsFloat()
	d := b.Dist
	if d == "" {
		d = "uniform"
	}
	switch {
	case !slices.Contains(dists, d):
		c.fail(f+".dist", "", "%q is not a distribution (allowed: %s)", b.Dist, strings.Join(dists, ", "))
	case b.Dist != "" && b.IO != "in":
		c.fail(f+".dist", "", "only an input buffer has a distribution of random values")
	case b.Dist != "" && c.s.Implements != "":
		c.fail(f+".dist", "", "a spec that implements %s draws its inputs as %s does", c.s.Implements, c.s.Implements)
	case isInt && (d == "normal" || d == "positive"):
		c.fail(f+".dist", "", "%q draws floats, but the buffer's dtype is %s (allowed for integer dtypes: uniform, int, sorted)", d, e)
	}
	c.dists = append(c.dists, d)
	if d == "int" && !isInt && len(b.Range) == 0 && b.IO == "in" {
		c.fail(f+".range", "", "required with dist \"int\": [lo, hi], the integers to draw, over the dims (valid indices of a dim n: [\"0\", \"n - 1\"])")
	}
	var rg [2]*program
	if len(b.Range) > 0 {
		switch {
		case b.IO != "in":
			c.fail(f+".range", "", "only an input buffer has a range of random values")
		case c.s.Implements != "":
			c.fail(f+".range", "", "a spec that implements %s draws its inputs as %s does", c.s.Implements, c.s.Implements)
		case len(b.Range) != 2:
			what := "[lo, hi]"
			if d == "normal" {
				what = "[mean, std]"
			}
			c.fail(f+".range", "", "has %d expressions; give %s over the dims", len(b.Range), what)
		default:
			k := floatKind
			if isInt || d == "int" {
				k = intKind
			}
			for j, src := range b.Range {
				rg[j] = c.compile(fmt.Sprintf("%s.range[%d]", f, j), src, dEnv, k)
			}
		}
	}
	c.ranges = append(c.ranges, rg)
}

func elemNames() string {
	s := ""
	for i, e := range kernels.Elems {
		if i > 0 {
			s += ", "
		}
		s += string(e)
	}
	return s
}

// hasOutputRefs reports whether some output has its own reference.
func (c *compiler) hasOutputRefs() bool {
	for _, b := range c.s.Buffers {
		if b.IO == "out" && b.Reference != "" {
			return true
		}
	}
	return false
}

// outputReferences compiles the reference of each output: reference.expr
// for a single output, else buffers[].reference on each.
func (c *compiler) outputReferences(env map[string]any) {
	s := c.s
	if s.Reference != nil {
		if len(c.outs) > 1 {
			c.fail("reference", "", "the kernel has %d outputs; give each its own expression (buffers[].reference) instead of reference.expr", len(c.outs))
			return
		}
		if c.hasOutputRefs() {
			c.fail("reference", "", "give reference.expr or buffers[].reference on the output, not both")
			return
		}
		c.reference = c.compile("reference.expr", s.Reference.Expr, env, floatKind)
		c.outRefs = []*program{c.reference}
		return
	}
	for _, i := range c.outs {
		b := s.Buffers[i]
		if b.Reference == "" {
			c.fail(fmt.Sprintf("buffers[%d].reference", i), "", "required: output %s's element i in float64 (every output of a kernel with several has one)", b.Name)
			c.outRefs = append(c.outRefs, nil)
			continue
		}
		c.outRefs = append(c.outRefs, c.compile(fmt.Sprintf("buffers[%d].reference", i), b.Reference, env, floatKind))
	}
	if len(c.outRefs) > 0 {
		c.reference = c.outRefs[0]
	}
}

// typed reports whether the kernel's operands need more than the tuned
// dtype and a uniform draw: every mlx kernel (its constants are inputs
// computed from the shape, its outputs may have types of their own).
func (c *compiler) typed() bool { return c.mlx != nil }

// present lists the inputs of a case: optional ones only with a bias.
func (c *compiler) present(cs kernels.Case) []inOp {
	var out []inOp
	for _, in := range c.inOps {
		if !in.optional || cs.Has(kernels.Bias) {
			out = append(out, in)
		}
	}
	return out
}

// inElem is an input's element type.
func (c *compiler) inElem(in inOp) kernels.Elem {
	if in.cnst >= 0 {
		e, _ := kernels.ParseElem(c.s.Source.MLX.Constants[in.cnst].DType)
		return e
	}
	return c.elems[in.buffer]
}

// layout is how an input's elements lie in its buffer.
type layout struct {
	dims    []int   // the array's shape as the application passes it
	strides []int64 // per dim, in elements
	storage int     // the buffer's elements
}

// layoutOf is an input's layout on a case: row-major, or for a strided
// case a view that is not row-contiguous (the last two dims transposed in
// memory; a 1-d array every other element), as a transposed or sliced
// MLX array is passed with ensure_row_contiguous=False.
func (c *compiler) layoutOf(in inOp, cs kernels.Case) (layout, error) {
	var l layout
	var err error
	if c.mlx != nil {
		l.dims, err = c.mlxShape(mlxInput{buffer: in.buffer, cnst: in.cnst}, c.env(cs.Shape, nil))
	} else {
		var n int
		n, err = c.lengths[in.buffer].evalInt(c.env(cs.Shape, nil))
		l.dims = []int{n}
	}
	if err != nil {
		return l, err
	}
	nd := len(l.dims)
	l.strides = make([]int64, nd)
	acc := int64(1)
	for i := nd - 1; i >= 0; i-- {
		l.strides[i] = acc
		acc *= int64(l.dims[i])
	}
	l.storage = int(acc)
	if !cs.Has(stridedOption) || in.cnst >= 0 || nd == 0 {
		return l, nil
	}
	if nd == 1 {
		l.strides[0] = 2
		l.storage = 2*l.dims[0] - 1
		return l, nil
	}
	// Row-major storage of the shape with the last two dims swapped.
	a, b := l.dims[nd-2], l.dims[nd-1]
	l.strides[nd-1] = int64(a)
	l.strides[nd-2] = 1
	acc = int64(a * b)
	for i := nd - 3; i >= 0; i-- {
		l.strides[i] = acc
		acc *= int64(l.dims[i])
	}
	return l, nil
}

// offset is the storage index of logical (row-major) element i.
func (l layout) offset(i int) int {
	off := 0
	for d := len(l.dims) - 1; d >= 0; d-- {
		off += (i % l.dims[d]) * int(l.strides[d])
		i /= l.dims[d]
	}
	return off
}

// operand is an input's operand on a case.
func (c *compiler) operand(in inOp, cs kernels.Case) kernels.Operand {
	l, _ := c.layoutOf(in, cs) // checked by Classify
	return kernels.Operand{Name: in.name, Len: l.storage, Elem: c.inElem(in)}
}

// fill draws one input of a new problem (kernels.Kernel.FillCase): a
// constant's values from the shape; a buffer's uniform in its range (the
// implemented family's draw for a spec that implements one), laid out as
// the case says, with NaN (or a poison integer) in the gaps of a view.
func (c *compiler) fill(cs kernels.Case, op kernels.Operand, buf []float32, rng *rand.Rand) {
	var in inOp
	for _, x := range c.inOps {
		if x.name == op.Name {
			in = x
		}
	}
	if in.cnst >= 0 {
		vals, _ := c.constValues(in.cnst, cs) // checked by checkCases
		copy(buf, vals)
		return
	}
	l, _ := c.layoutOf(in, cs)
	n := 1
	for _, d := range l.dims {
		n *= d
	}
	vals := make([]float32, n)
	e := c.inElem(in)
	if c.base != nil && c.base.Fill != nil {
		c.base.Fill(kernels.Operand{Name: op.Name, Len: n}, vals, rng)
	} else {
		c.draw(in.buffer, cs, l.dims, vals, rng)
	}
	if len(buf) == n && !cs.Has(stridedOption) {
		copy(buf, vals)
		return
	}
	gap := float32(math.NaN())
	if e != kernels.ElemDType && !e.IsFloat() {
		gap = kernels.Int(0x7fc00000)
	}
	for i := range buf {
		buf[i] = gap
	}
	for i, v := range vals {
		buf[l.offset(i)] = v
	}
}

// logical is an input's values in float64, row-major, from its buffer.
func (c *compiler) logical(in inOp, cs kernels.Case, buf []float32) []float64 {
	l, _ := c.layoutOf(in, cs)
	n := 1
	for _, d := range l.dims {
		n *= d
	}
	e := c.inElem(in)
	out := make([]float64, n)
	for i := range out {
		j := i
		if l.storage != n || cs.Has(stridedOption) {
			j = l.offset(i)
		}
		if j < len(buf) {
			out[i] = e.Value(buf[j])
		}
	}
	return out
}

// baseInputs are the buffer inputs in the implemented family's order
// (row-major), without an mlx kernel's constants.
func (c *compiler) baseInputs(cs kernels.Case, in [][]float32) [][]float32 {
	var out [][]float32
	for i, x := range c.present(cs) {
		if x.buffer < 0 || i >= len(in) {
			continue
		}
		v := c.logical(x, cs, in[i])
		f := make([]float32, len(v))
		for j, y := range v {
			f[j] = float32(y)
		}
		out = append(out, f)
	}
	return out
}

// evalReference computes every output of a case in float64, one after
// another, from the expressions of each output.
func (c *compiler) evalReference(cs kernels.Case, in [][]float32, workers int) ([]float64, error) {
	env0 := c.env(cs.Shape, nil)
	bufs := map[string][]float64{}
	for _, x := range c.inOps {
		if x.buffer >= 0 {
			bufs[x.name] = nil // an absent optional input
		}
	}
	scalars := map[string]float64{}
	for i, x := range c.present(cs) {
		if i >= len(in) || reserved[x.name] { // a constant named eps is the eps of the expressions
			continue
		}
		v := c.logical(x, cs, in[i])
		if x.cnst >= 0 && c.s.Source.MLX.Constants[x.cnst].Value != "" && len(v) == 1 {
			scalars[x.name] = v[0]
			continue
		}
		bufs[x.name] = v
	}
	var out []float64
	for j, oi := range c.outs {
		n, err := c.lengths[oi].evalInt(env0)
		if err != nil {
			return nil, err
		}
		ref := c.outRefs[j]
		if ref == nil {
			return nil, fmt.Errorf("%s: output %s has no reference", c.s.Name, c.s.Buffers[oi].Name)
		}
		part, err := c.evalOutput(ref, cs, bufs, scalars, n, workers)
		out = append(out, part...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// evalOutput evaluates one output's expression for elements 0..n-1 on
// workers goroutines. An element whose evaluation fails is NaN, which
// fails verification.
func (c *compiler) evalOutput(ref *program, cs kernels.Case, bufs map[string][]float64, scalars map[string]float64, n, workers int) ([]float64, error) {
	out := make([]float64, n)
	workers = max(1, min(workers, n/256))
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := c.env(cs.Shape, nil)
			env["bias"] = b2i(cs.Has(kernels.Bias))
			env["eps"] = float64(float32(kernels.RMSNormEps))
			if m := c.s.Source.MLX; m != nil && m.InitValue != nil {
				env["init_value"] = *m.InitValue
			}
			for name, b := range bufs {
				env[name] = b
			}
			for name, v := range scalars {
				env[name] = v
			}
			for i := w; i < n; i += workers {
				env["i"] = i
				v, err := ref.expr.Eval(env)
				f, ok := toFloat(v)
				if err != nil || !ok {
					out[i] = math.NaN()
					if errs[w] == nil {
						if err == nil {
							err = fmt.Errorf("is %v (%T), not a number", v, v)
						}
						errs[w] = ref.errorf("output element %d on %s: %v", i, cs, firstLine(err.Error()))
					}
					continue
				}
				out[i] = f
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return out, e
		}
	}
	return out, nil
}
