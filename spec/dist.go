package spec

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/kerntune/kerntune/kernels"
)

// dists are the distributions an input's values may be drawn from
// (buffers[i].dist): what a kernel needs to be verified on meaningful data
// (indices a gather may follow, a sorted array to search, a positive
// operand of a log or a square root).
var dists = []string{"uniform", "normal", "int", "sorted", "positive"}

// drawsOwn reports whether some input is drawn otherwise than uniform in
// [-1, 1): a range or a distribution of its own.
func (c *compiler) drawsOwn() bool {
	for i, b := range c.s.Buffers {
		if b.IO == "in" && (len(b.Range) > 0 || c.dists[i] != "uniform") {
			return true
		}
	}
	return false
}

// bounds evaluates buffer bi's range on a case: [lo, hi] (integers, as
// float64, for an integer dtype or the int distribution; an integer
// dtype's range is clipped to the type), [mean, std] for normal. It fails
// naming buffers[i].range when the range is empty, a std is not positive
// or, for positive, lo is not above zero.
func (c *compiler) bounds(bi int, cs kernels.Case) (lo, hi float64, err error) {
	d, e := c.dists[bi], c.elems[bi]
	isInt := e != kernels.ElemDType && !e.IsFloat()
	switch {
	case isInt:
		l, h := e.IntRange()
		lo, hi = float64(l), float64(h)
	case d == "normal":
		lo, hi = 0, 1
	case d == "positive":
		lo, hi = 0.5, 2
	default:
		lo, hi = -1, 1
	}
	rg := c.ranges[bi]
	if rg[0] == nil {
		return lo, hi, nil
	}
	env := c.env(cs.Shape, nil)
	var l, h float64
	if isInt || d == "int" {
		li, err := rg[0].evalInt(env)
		if err != nil {
			return 0, 0, err
		}
		hi2, err := rg[1].evalInt(env)
		if err != nil {
			return 0, 0, err
		}
		l, h = float64(li), float64(hi2)
		if isInt {
			l, h = max(lo, l), min(hi, h)
		}
	} else {
		if l, err = rg[0].evalFloat(env); err != nil {
			return 0, 0, err
		}
		if h, err = rg[1].evalFloat(env); err != nil {
			return 0, 0, err
		}
	}
	f := fmt.Sprintf("buffers[%d].range", bi)
	switch {
	case d == "normal" && !(h > 0):
		return 0, 0, &Error{File: c.file, Field: f, Msg: fmt.Sprintf("is [mean %g, std %g] on %s; the standard deviation must be > 0", l, h, cs)}
	case d == "positive" && !(l > 0):
		return 0, 0, &Error{File: c.file, Field: f, Msg: fmt.Sprintf("is [%g, %g) on %s; the positive distribution needs lo > 0", l, h, cs)}
	case (isInt || d == "int") && l > h:
		return 0, 0, &Error{File: c.file, Field: f, Msg: fmt.Sprintf("is [%g, %g] on %s: empty (integers in [lo, hi] need lo <= hi)", l, h, cs)}
	case !(isInt || d == "int" || d == "normal") && !(l <= h):
		return 0, 0, &Error{File: c.file, Field: f, Msg: fmt.Sprintf("is [%g, %g) on %s: empty (floats in [lo, hi) need lo <= hi; lo == hi draws lo)", l, h, cs)}
	}
	return l, h, nil
}

// draw fills vals, input buffer bi's elements in row-major order of dims,
// from its distribution: fresh random values on every problem.
func (c *compiler) draw(bi int, cs kernels.Case, dims []int, vals []float32, rng *rand.Rand) {
	lo, hi, _ := c.bounds(bi, cs) // checked by checkCases
	d, e := c.dists[bi], c.elems[bi]
	isInt := e != kernels.ElemDType && !e.IsFloat()
	for i := range vals {
		switch {
		case isInt:
			vals[i] = kernels.Int(int64(lo) + rng.Int64N(int64(hi-lo)+1))
		case d == "int":
			vals[i] = float32(int64(lo) + rng.Int64N(int64(hi-lo)+1))
		case d == "normal":
			vals[i] = float32(lo + hi*rng.NormFloat64())
		default:
			vals[i] = float32(lo + rng.Float64()*(hi-lo))
		}
	}
	if d != "sorted" || len(dims) == 0 {
		return
	}
	row := dims[len(dims)-1]
	if row <= 0 {
		return
	}
	for at := 0; at+row <= len(vals); at += row {
		r := vals[at : at+row]
		if isInt {
			slices.SortFunc(r, func(a, b float32) int { return cmp.Compare(e.Value(a), e.Value(b)) })
		} else {
			slices.Sort(r)
		}
	}
}

// checkDists evaluates every input's range on a case, so that an empty or
// invalid one shows when the spec is loaded.
func (c *compiler) checkDists(cs kernels.Case) {
	for i, b := range c.s.Buffers {
		if b.IO != "in" || c.s.Implements != "" {
			continue
		}
		if _, _, err := c.bounds(i, cs); err != nil {
			c.errs = append(c.errs, err)
		}
	}
}
