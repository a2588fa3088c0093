package kernels

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"
)

// Verifying a large output in full costs more than timing the kernel many
// times over: on a GPU the whole output crosses to the host (and, from a
// worker process, a pipe) and is compared element by element in float64.
// Outputs of more than FullVerifyMax elements are therefore verified in two
// parts that keep the check exact where it can fail:
//
//   - every element is checked to be finite: outputs are poisoned with NaN
//     before the run, so an element no thread wrote (a tile or a row block
//     left out, a grid too small, an early exit) or one that overflowed
//     fails, wherever it is;
//   - the values of a sample of rows are compared with the float64
//     reference, with the same relative-norm tolerance: the first and last
//     rows, the rows on both sides of every power of two (the edges of
//     power-of-two row tiles and of 16- and 32-bit index ranges), and
//     random rows, drawn afresh for every candidate, up to SampleElems
//     elements.
//
// Every candidate is still compared element by element on the family's odd
// shapes, which are not multiples of any tile and so run every tail and
// boundary path of its code; the entry's (large) shapes add scale, whose
// failures are unwritten elements or wrong values at the ends of the index
// range, both covered above.

// FullVerifyMax is the largest output, in elements, verified element by
// element; larger ones are verified on a RowSample.
const FullVerifyMax = 1 << 20

// SampleElems is about how many elements a RowSample compares.
const SampleElems = 1 << 18

// RowSample names the rows of an output, seen as a matrix of RowLen
// columns, whose values a verification compares with the reference.
type RowSample struct {
	RowLen int
	Rows   []int // ascending, distinct
}

// Elems is the number of elements the sample holds.
func (s RowSample) Elems() int { return s.RowLen * len(s.Rows) }

// SampleRows returns the rows of p's output to compare, or false when the
// output is small enough to compare in full (or its family has no row
// layout, Kernel.OutRow). salt varies the random rows (e.g. a hash of the
// candidate).
func (p *Problem) SampleRows(salt uint64) (RowSample, bool) {
	k := p.Kernel
	if k.OutRow == nil {
		return RowSample{}, false
	}
	n := k.OutLen(p.Case.Shape)
	rowLen := k.OutRow(p.Case.Shape)
	if n <= FullVerifyMax || rowLen <= 0 || n%rowLen != 0 {
		return RowSample{}, false
	}
	rows := n / rowLen
	want := max(1, SampleElems/rowLen)
	if want >= rows {
		return RowSample{}, false
	}
	pick := map[int]bool{}
	add := func(r int) {
		if r >= 0 && r < rows {
			pick[r] = true
		}
	}
	for _, r := range []int{0, 1, rows - 2, rows - 1} {
		add(r)
	}
	for b := 1; b < rows; b <<= 1 {
		add(b - 1)
		add(b)
	}
	rng := rand.New(rand.NewPCG(p.Seed^salt, salt^0x736f6d6573616d70))
	for len(pick) < want {
		add(rng.IntN(rows))
	}
	s := RowSample{RowLen: rowLen, Rows: make([]int, 0, len(pick))}
	for r := range pick {
		s.Rows = append(s.Rows, r)
	}
	sort.Ints(s.Rows)
	return s, true
}

// Extract returns the sample's rows of a whole output, in order, and the
// index of the first element of out that is not finite (-1 for none).
func (s RowSample) Extract(out []float32) (rows []float32, firstBad int) {
	firstBad = -1
	for i, v := range out {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			firstBad = i
			break
		}
	}
	rows = make([]float32, 0, s.Elems())
	for _, r := range s.Rows {
		lo := r * s.RowLen
		if lo+s.RowLen > len(out) {
			break // a short output: VerifySample reports it
		}
		rows = append(rows, out[lo:lo+s.RowLen]...)
	}
	return rows, firstBad
}

// VerifySample is VerifyFor for an output of outLen elements of which rows
// are the sample's rows (Extract) and firstBad the first non-finite element
// (-1 for none); params select the tolerance as in VerifyFor (nil for a
// baseline).
func (p *Problem) VerifySample(s RowSample, rows []float32, firstBad, outLen int, params map[string]int) error {
	if want := p.Kernel.OutLen(p.Case.Shape); outLen != want {
		return fmt.Errorf("output has %d elements, want %d, on %s", outLen, want, p.Case)
	}
	if firstBad >= 0 {
		return fmt.Errorf("output element %d of %d is not finite (unwritten or overflowed) on %s", firstBad, outLen, p.Case)
	}
	if len(rows) != s.Elems() {
		return fmt.Errorf("sampled output has %d elements, want %d, on %s", len(rows), s.Elems(), p.Case)
	}
	if err := p.ReferenceErr(); err != nil {
		return err
	}
	ref := p.Reference()
	want := make([]float64, 0, len(rows))
	for _, r := range s.Rows {
		want = append(want, ref[r*s.RowLen:(r+1)*s.RowLen]...)
	}
	rel, bad := RelError(rows, want)
	if bad >= 0 {
		r := s.Rows[bad/s.RowLen]
		return fmt.Errorf("output element %d of %d is not finite (unwritten or overflowed) on %s", r*s.RowLen+bad%s.RowLen, outLen, p.Case)
	}
	if tol := p.Kernel.ToleranceFor(p.DType, params); rel > tol || rel != rel {
		what := string(p.DType)
		if tol != p.Kernel.Tolerance(p.DType) {
			what += " TF32"
		}
		return fmt.Errorf("relative error %.3g exceeds the %s tolerance %.0e on %s (%d sampled rows of %d)", rel, what, tol, p.Case, len(s.Rows), outLen/s.RowLen)
	}
	return nil
}

// Salt is a hash of a string (e.g. a candidate's key) for SampleRows.
func Salt(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}
