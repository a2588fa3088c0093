package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Problem is one case of a family with concrete random inputs. Inputs are
// held as float32 values exactly representable in DType, so the reference and
// every backend see the same numbers.
type Problem struct {
	Kernel *Kernel
	DType  DType
	Case   Case
	Inputs [][]float32
	// Seed, when Seeded, regenerates Inputs exactly with NewSeededProblem,
	// so a worker process can rebuild a problem from a few numbers.
	Seed   uint64
	Seeded bool

	ref, mag []float64
	refErr   error
}

// NewProblem draws fresh random inputs: uniform in [-1,1), never all zero,
// unless the family draws its own (Kernel.Fill: softmax rows get a few large
// values to exercise the max subtraction).
func NewProblem(k *Kernel, dt DType, c Case, rng *rand.Rand) (*Problem, error) {
	if _, err := k.Classify(c.Shape); err != nil {
		return nil, err
	}
	for _, o := range c.Options {
		if !slices.Contains(k.Options, o) {
			return nil, fmt.Errorf("%s has no option %q (%s)", k.Name, o, optionsString(k.Options))
		}
	}
	p := &Problem{Kernel: k, DType: dt, Case: c}
	for _, op := range k.Inputs(c) {
		buf := make([]float32, op.Len)
		if k.FillCase != nil {
			k.FillCase(c, op, buf, rng)
		} else if k.Fill != nil {
			k.Fill(op, buf, rng)
		} else {
			uniformChunks(buf, rng)
		}
		if e := op.Elem.In(dt); e == ElemFloat16 || e == ElemBFloat {
			inChunks(len(buf), func(lo, hi int) {
				for i := lo; i < hi; i++ {
					buf[i] = e.Round(buf[i])
				}
			})
		}
		p.Inputs = append(p.Inputs, buf)
	}
	return p, nil
}

// fillChunk is the length of the pieces of an operand drawn (or rounded)
// on goroutines of their own: gemv's largest weights (151936×896) took
// seconds to draw on one core, in the tuner and again in its worker.
const fillChunk = 1 << 18

// inChunks calls f on the pieces lo..hi of 0..n, fillChunk long, in
// parallel when there are several.
func inChunks(n int, f func(lo, hi int)) {
	if n <= fillChunk {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for lo := 0; lo < n; lo += fillChunk {
		wg.Add(1)
		sem <- struct{}{}
		go func(lo int) {
			defer wg.Done()
			f(lo, min(lo+fillChunk, n))
			<-sem
		}(lo)
	}
	wg.Wait()
}

// uniformChunks draws buf uniform in [-1, 1): a short operand from rng
// itself, a long one in pieces, each from a generator seeded by rng in
// order, so that the values depend on rng alone and not on scheduling.
func uniformChunks(buf []float32, rng *rand.Rand) {
	if len(buf) <= fillChunk {
		uniform(Operand{}, buf, rng)
		return
	}
	seeds := make([][2]uint64, (len(buf)+fillChunk-1)/fillChunk)
	for i := range seeds {
		seeds[i] = [2]uint64{rng.Uint64(), rng.Uint64()}
	}
	inChunks(len(buf), func(lo, hi int) {
		s := seeds[lo/fillChunk]
		uniform(Operand{}, buf[lo:hi], rand.New(rand.NewPCG(s[0], s[1])))
	})
}

// uniform draws values uniform in [-1, 1).
func uniform(_ Operand, buf []float32, rng *rand.Rand) {
	for i := range buf {
		buf[i] = float32(rng.Float64()*2 - 1)
	}
}

func optionsString(opts []string) string {
	if len(opts) == 0 {
		return "it has no options"
	}
	return "allowed: " + strings.Join(opts, ", ")
}

// NewSeededProblem draws the inputs from a generator seeded with seed
// alone: the same seed gives the same inputs in every process.
func NewSeededProblem(k *Kernel, dt DType, c Case, seed uint64) (*Problem, error) {
	p, err := NewProblem(k, dt, c, rand.New(rand.NewPCG(seed, 0x6b65726e74756e65)))
	if err != nil {
		return nil, err
	}
	p.Seed, p.Seeded = seed, true
	return p, nil
}

// Reference returns the float64 reference output, computed once. Where
// the kernel's reference failed (ReferenceErr) it is NaN throughout and
// ReferenceErr says why.
func (p *Problem) Reference() []float64 {
	if p.ref != nil {
		return p.ref
	}
	if p.Kernel.ReferenceErr == nil {
		p.ref = p.Kernel.Reference(p.Case, p.Inputs)
		return p.ref
	}
	p.ref, p.refErr = p.Kernel.ReferenceErr(p.DType, p.Case, p.Inputs)
	if p.refErr != nil {
		p.ref = make([]float64, p.Kernel.OutLen(p.Case.Shape))
		for i := range p.ref {
			p.ref[i] = math.NaN()
		}
	}
	return p.ref
}

// ReferenceErr is why the reference could not be computed, or nil.
func (p *Problem) ReferenceErr() error {
	p.Reference()
	if p.refErr != nil {
		return fmt.Errorf("reference on %s: %w", p.Case, p.refErr)
	}
	return nil
}

// Verify compares an output against the reference with the dtype's
// tolerance, as for a candidate without parameters (not a baseline's,
// which VerifyFor with nil params gives).
func (p *Problem) Verify(out []float32) error {
	return p.VerifyFor(out, map[string]int{})
}

// VerifyFor compares the output of candidate params (nil: a baseline)
// against the reference with the candidate's tolerance (Kernel.ToleranceFor).
func (p *Problem) VerifyFor(out []float32, params map[string]int) error {
	if err := p.ReferenceErr(); err != nil {
		return err
	}
	if p.Kernel.Outputs != nil {
		return p.verifyOutputs(out, params)
	}
	rel, bad := RelError(out, p.Reference())
	if bad >= 0 {
		return fmt.Errorf("output element %d of %d is not finite (unwritten or overflowed) on %s", bad, len(out), p.Case)
	}
	if tol := p.Kernel.ToleranceFor(p.DType, params); rel > tol || rel != rel {
		what := string(p.DType)
		if tol != p.Kernel.Tolerance(p.DType) {
			what += " TF32"
		}
		if mrel, ok := p.magnitudeError(out); ok && mrel <= tol {
			return nil
		}
		return fmt.Errorf("relative error %.3g exceeds the %s tolerance %.0e on %s", rel, what, tol, p.Case)
	}
	return nil
}

// magnitudeOutputs is the largest output whose relative norm may be
// measured against the products' magnitudes instead (magnitudeError): a
// norm over more outputs than this is not near zero by cancellation, and
// the magnitudes cost a second reference.
const magnitudeOutputs = 64

// magnitudeError is ‖out−ref‖ / max(‖ref‖, ‖mag‖/√K) for a SumOfProducts
// family's output of at most magnitudeOutputs elements (ok false
// otherwise): mag is the reference computed on the absolute values of the
// float inputs and K the products per output (Flops / 2 per output). Each
// output's rounding error is bounded by a multiple of the unit roundoff
// times its sum of |products| (mag), while the plain relative norm divides
// by |sum|, which random signs can bring near zero: a correct f32
// candidate failed 1e-5 by 2.1e-5 on qgemv's one-row odd shape. A sum of K
// products of random signs has a norm of about ‖mag‖/√K, so the
// denominator never exceeds what an ordinary draw has: an error the plain
// norm would catch on an ordinary draw (a wrong element, term or stride:
// about one product, 1/√K of the norm) is caught here too.
func (p *Problem) magnitudeError(out []float32) (float64, bool) {
	if !p.Kernel.SumOfProducts || len(out) > magnitudeOutputs {
		return 0, false
	}
	if p.mag == nil {
		abs := make([][]float32, len(p.Inputs))
		for i, op := range p.Kernel.Inputs(p.Case) {
			abs[i] = p.Inputs[i]
			if op.Elem.In(p.DType).IsFloat() {
				abs[i] = make([]float32, len(p.Inputs[i]))
				for j, v := range p.Inputs[i] {
					abs[i][j] = float32(math.Abs(float64(v)))
				}
			}
		}
		p.mag = p.Kernel.Reference(p.Case, abs)
	}
	ref := p.Reference()
	if len(out) != len(ref) || len(p.mag) != len(ref) {
		return 0, false
	}
	var num, den, mag float64
	for i, g := range out {
		d := float64(g) - ref[i]
		num += d * d
		den += ref[i] * ref[i]
		mag += p.mag[i] * p.mag[i]
	}
	terms := max(1, p.Kernel.Flops(p.Case)/2/float64(len(out)))
	den = max(den, mag/terms)
	if den == 0 || math.IsNaN(num) {
		return 0, false
	}
	return math.Sqrt(num / den), true
}

// Bytes is the minimum traffic of one run, for rooflines and the physical floor.
func (p *Problem) Bytes() float64 { return p.Kernel.Bytes(p.Case, p.DType) }

// Flops is the arithmetic of one run.
func (p *Problem) Flops() float64 { return p.Kernel.Flops(p.Case) }
