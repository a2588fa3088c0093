package tuner

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

// Mutation test: deliberately wrong variants of every family, as kernel
// authors write them, must all be rejected by the verification the tuner
// runs on the families' odd shapes (not a multiple of any tile).
var mutations = []string{
	"tail off by one",           // the remainder loop stops one element short
	"missing barrier",           // a split reduction is combined before its second half is stored
	"wrong stride",              // an operand indexed with the wrong leading dimension
	"uninitialised accumulator", // the accumulator is not reset for each output
	"reads past the end",        // the reduction reads one element beyond its row
	"writes past the end",       // one element is stored beyond the output
}

// mutantBackend runs naive float32 implementations of the families with
// one mutation ("" for none). Inputs and outputs have slack past their
// ends, as device allocations do: inputs poisoned with NaN, outputs guarded
// by canaries.
type mutantBackend struct {
	mutation string
}

func (m *mutantBackend) Info() device.DeviceInfo {
	return device.DeviceInfo{Key: "mutant:1", Name: "mutant", Backend: "cpu", Family: "test", ComputeUnits: 2, PeakFlops: 1e15, PeakBandwidth: 1e13}
}

func (*mutantBackend) Close() error { return nil }
func (*mutantBackend) Baseline(*kernels.Kernel, kernels.DType) (device.Program, string, error) {
	return nil, "", nil
}

type mutantInst struct {
	p   *kernels.Problem
	in  [][]float32
	out *kernels.Guarded[float32]
}

func (*mutantInst) Close() error { return nil }

func (m *mutantBackend) Load(p *kernels.Problem, _ int) (device.Instance, error) {
	inst := &mutantInst{p: p, out: kernels.NewGuarded[float32](p.Kernel.OutLen(p.Case.Shape))}
	for _, x := range p.Inputs {
		buf := make([]float32, len(x)+kernels.GuardLen)
		for i := range buf {
			buf[i] = float32(math.NaN())
		}
		copy(buf, x)
		inst.in = append(inst.in, buf[:len(x)])
	}
	return inst, nil
}

type mutantProg struct{ mutation string }

func (m *mutantBackend) Build(*kernels.Kernel, kernels.DType, search.Candidate) (device.Program, error) {
	return &mutantProg{mutation: m.mutation}, nil
}

func (*mutantProg) Close() error                                { return nil }
func (*mutantProg) Run(device.Instance, int) ([]float64, error) { return nil, fmt.Errorf("not timed") }

// get reads like a device: past the slice's end into its slack, and an
// address outside the allocation gives garbage (NaN).
var get = kernels.ReadPast

func put(s []float32, i int, v float32) {
	if s = s[:cap(s)]; i >= 0 && i < len(s) {
		s[i] = v
	}
}

func (pr *mutantProg) Output(ti device.Instance) ([]float32, error) {
	inst := ti.(*mutantInst)
	out := inst.out.Data()
	for i := range out {
		out[i] = float32(math.NaN())
	}
	p, mut := inst.p, pr.mutation
	run, ok := mutants[p.Kernel.Name]
	if !ok {
		// A family in its own folder registers its mutant there.
		run, ok = kernels.MutantOf(p.Kernel.Name)
	}
	if !ok {
		return nil, fmt.Errorf("no mutant of %s", p.Kernel.Name)
	}
	run(p, inst.in, out, mut)
	if mut == "writes past the end" {
		put(out, len(out), 0)
	}
	if err := inst.out.Check(); err != nil {
		inst.out.Arm()
		return nil, err
	}
	return append([]float32(nil), out...), nil
}

// mutants are the layered families' naive implementations, each with a
// mutation ("" for none); a family in its own folder registers its own
// there (kernels.AddMutant).
var mutants = map[string]func(p *kernels.Problem, in [][]float32, out []float32, mut string){
	"gemm_av": func(p *kernels.Problem, in [][]float32, out []float32, mut string) {
		m, n, k := p.Case.Shape[0], p.Case.Shape[1], p.Case.Shape[2]
		ldv := mutated(mut, "wrong stride", n, k)
		contract(m, n, k, func(i, q int) float32 { return get(in[0], i*k+q) }, func(q, j int) float32 { return get(in[1], q*ldv+j) }, nil, out, mut)
	},
	"gemm_at_b": func(p *kernels.Problem, in [][]float32, out []float32, mut string) {
		m, n, k := p.Case.Shape[0], p.Case.Shape[1], p.Case.Shape[2]
		lda := mutated(mut, "wrong stride", n, m)
		contract(n, k, m, func(i, q int) float32 { return get(in[0], q*lda+i) }, func(q, j int) float32 { return get(in[1], q*k+j) }, nil, out, mut)
	},
	"gemv_nt": func(p *kernels.Problem, in [][]float32, out []float32, mut string) {
		n, k := p.Case.Shape[1], p.Case.Shape[2]
		ldw := mutated(mut, "wrong stride", k, k+1)
		contract(1, n, k, func(_, q int) float32 { return get(in[0], q) }, func(q, j int) float32 { return get(in[1], j*ldw+q) }, biasOf(p, in, 2), out, mut)
	},
	"qgemv": func(p *kernels.Problem, in [][]float32, out []float32, mut string) {
		m, n, k, bits, g := p.Case.Shape[0], p.Case.Shape[1], p.Case.Shape[2], p.Case.Shape[3], p.Case.Shape[4]
		per, kg := 32/bits, k/g
		kw := mutated(mut, "wrong stride", k*bits/32, k*bits/32+1)
		w := func(q, j int) float32 {
			word := math.Float32bits(get(in[1], j*kw+q/per))
			v := (word >> (uint(q%per) * uint(bits))) & (1<<uint(bits) - 1)
			return get(in[2], j*kg+q/g)*float32(v) + get(in[3], j*kg+q/g)
		}
		contract(m, n, k, func(i, q int) float32 { return get(in[0], i*k+q) }, w, biasOf(p, in, 4), out, mut)
	},
	"softmax": func(p *kernels.Problem, in [][]float32, out []float32, mut string) {
		rowwise("softmax", p.Case.Shape[0], p.Case.Shape[1], in, 0, out, mut)
	},
	"rmsnorm": func(p *kernels.Problem, in [][]float32, out []float32, mut string) {
		rowwise("rmsnorm", p.Case.Shape[0], p.Case.Shape[1], in, float32(p.Kernel.Scalars["eps"]), out, mut)
	},
}

const tile = 8

// mutated is v, or bad when mut is the mutation named that: a stride or an
// end that the mutation gets wrong.
func mutated(mut, that string, v, bad int) int {
	if mut == that {
		return bad
	}
	return v
}

// biasOf is p's bias, operand i of in, or nil when p's case has none.
func biasOf(p *kernels.Problem, in [][]float32, i int) []float32 {
	if p.Case.Has(kernels.Bias) {
		return in[i]
	}
	return nil
}

// contract computes out[i*cols+j] = Σ_q a(i,q)·b(q,j) (+ bias[j]) the way a
// tiled kernel does: columns in tiles plus a remainder, the reduction split
// in two halves combined at the end.
func contract(rows, cols, depth int, a func(i, q int) float32, b func(q, j int) float32, bias, out []float32, mut string) {
	var acc float32
	var partial [2]float32 // the halves' partial sums, as in shared memory
	end := mutated(mut, "reads past the end", depth, depth+1)
	for i := 0; i < rows; i++ {
		full := cols / tile * tile
		last := cols
		if mut == "tail off by one" && cols > full {
			last = cols - 1
		}
		for j := 0; j < last; j++ {
			if mut != "uninitialised accumulator" {
				acc = 0
			}
			half := end / 2
			for q := 0; q < half; q++ {
				acc += a(i, q) * b(q, j)
			}
			partial[0] = acc
			second := func() {
				var s float32
				for q := half; q < end; q++ {
					s += a(i, q) * b(q, j)
				}
				partial[1] = s
			}
			acc = combine(&partial, second, mut)
			if bias != nil {
				acc += get(bias, j)
			}
			put(out, i*cols+j, acc)
		}
	}
}

// combine adds the halves of a split reduction once second has stored the
// second. Without the barrier ("missing barrier") the combine may read the
// second half before it is stored: it sees the previous output's value.
func combine(partial *[2]float32, second func(), mut string) float32 {
	if mut == "missing barrier" {
		v := partial[0] + partial[1]
		second()
		return v
	}
	second()
	return partial[0] + partial[1]
}

// rowwise computes softmax or rmsnorm row by row: a reduction split in two
// halves, then an elementwise pass in tiles plus a remainder.
func rowwise(kind string, rows, cols int, in [][]float32, eps float32, out []float32, mut string) {
	stride := mutated(mut, "wrong stride", cols, cols+1)
	end := mutated(mut, "reads past the end", cols, cols+1)
	var sum float32
	var partial [2]float32
	for r := 0; r < rows; r++ {
		base := r * stride
		mx := float32(math.Inf(-1))
		for c := 0; c < end; c++ {
			mx = max(mx, get(in[0], base+c))
		}
		term := func(c int) float32 {
			x := get(in[0], base+c)
			if kind == "softmax" {
				return float32(math.Exp(float64(x - mx)))
			}
			return x * x
		}
		if mut != "uninitialised accumulator" {
			sum = 0
		}
		half := end / 2
		for c := 0; c < half; c++ {
			sum += term(c)
		}
		partial[0] = sum
		second := func() {
			var s float32
			for c := half; c < end; c++ {
				s += term(c)
			}
			partial[1] = s
		}
		sum = combine(&partial, second, mut)
		last := cols
		if mut == "tail off by one" && cols%tile != 0 {
			last = cols - 1
		}
		for c := 0; c < last; c++ {
			x := get(in[0], base+c)
			var y float32
			if kind == "softmax" {
				y = float32(math.Exp(float64(x-mx))) / sum
			} else {
				y = x / float32(math.Sqrt(float64(sum/float32(cols)+eps))) * get(in[1], c)
			}
			put(out, r*cols+c, y)
		}
	}
}

// familyMutations are the mutations a family's description chooses (its
// Mutants: those that mean something for its kernels), or every kind.
func familyMutations(t *testing.T, k *kernels.Kernel) []string {
	if len(k.Mutants) == 0 {
		return mutations
	}
	for _, m := range k.Mutants {
		if !slices.Contains(mutations, m) {
			t.Fatalf("%s: mutant %q is none of the kinds %q", k.Name, m, mutations)
		}
	}
	return k.Mutants
}

func TestMutantsAreRejected(t *testing.T) {
	for _, k := range kernels.All() {
		// The unmutated implementation passes: failures below are the mutations'.
		rep, err := New(&mutantBackend{}, Config{}).VerifyAll(context.Background(), k, kernels.F32, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Checked == 0 || rep.Passed != rep.Checked {
			t.Fatalf("%s: the correct naive implementation failed: %v", k.Name, rep.Failed)
		}
		for _, mut := range familyMutations(t, k) {
			t.Run(k.Name+"/"+strings.ReplaceAll(mut, " ", "_"), func(t *testing.T) {
				rep, err := New(&mutantBackend{mutation: mut}, Config{}).VerifyAll(context.Background(), k, kernels.F32, 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Checked == 0 || rep.Passed != 0 {
					t.Fatalf("%d of %d checked candidates passed verification", rep.Passed, rep.Checked)
				}
				for reason := range rep.Failed {
					t.Logf("rejected: %s", reason)
				}
			})
		}
	}
}
