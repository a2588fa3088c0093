package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/search"
)

// qgemvTestParams covers every BN, ROWS and THREADS value of the CPU space
// (THREADS beyond the tasks included), with BN no multiple of ROWS' blocks
// and row counts that leave a tail of every size.
var qgemvTestParams = []QGemvParams{
	{BN: 32, Rows: 1, Threads: 1},
	{BN: 4, Rows: 4, Threads: 2},
	{BN: 8, Rows: 2, Threads: 3},
	{BN: 16, Rows: 4, Threads: 1},
	{BN: 64, Rows: 2, Threads: 8},
	{BN: 128, Rows: 1, Threads: 2},
	{BN: 256, Rows: 4, Threads: 4},
}

func qgemvCandidate(p QGemvParams) search.Candidate {
	return search.Candidate{"BN": p.BN, "ROWS": p.Rows, "THREADS": p.Threads}
}

// qgemvProblem draws a problem of m rows of x, n rows of W and k = groups·g
// through the catalog, as the tuner does.
func qgemvProblem(t *testing.T, dt kernels.DType, m, n, groups, bits, g int, bias bool, seed uint64) *kernels.Problem {
	t.Helper()
	k, err := kernels.Get(families.QGemv)
	if err != nil {
		t.Fatal(err)
	}
	c := kernels.Case{Shape: []int{m, n, groups * g, bits, g}}
	if bias {
		c.Options = []string{kernels.Bias}
	}
	p, err := kernels.NewProblem(k, dt, c, rand.New(rand.NewPCG(seed, uint64(n))))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Every width, group size and dtype, with and without the bias, on row
// counts that are no multiple of ROWS or BN and an odd number of groups,
// for one row of x and several,
// for parameter sets covering the CPU space: the backend's output (Load,
// Build, Output with the output poisoned and guarded) is within the
// dtype's tolerance of the float64 reference, and the inputs are untouched.
func TestQGemvFamily(t *testing.T) {
	b, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	k, _ := kernels.Get(families.QGemv)
	shapes := [][3]int{{1, 1, 1}, {3, 37, 3}, {1, 131, 5}, {16, 19, 2}} // rows of x, rows of W, groups
	if kernRaceEnabled {
		shapes = shapes[:2]
	}
	seed := uint64(0)
	for _, dt := range kernels.DTypes {
		for _, bits := range families.QGemvBits {
			for _, g := range families.QGemvGroups {
				for _, sh := range shapes {
					seed++
					withBias := seed%2 == 0
					p := qgemvProblem(t, dt, sh[0], sh[1], sh[2], bits, g, withBias, seed)
					inst, err := b.Load(p, 2)
					if err != nil {
						t.Fatal(err)
					}
					for _, qp := range qgemvTestParams {
						name := fmt.Sprintf("%s/%s/%+v", dt, p.Case, qp)
						prog, err := b.Build(k, dt, qgemvCandidate(qp))
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						verifyOutput(t, prog, inst, p, name)
						if _, err := prog.Run(inst, 2); err != nil { // both copies
							t.Fatalf("%s: %v", name, err)
						}
					}
					qgemvCheckInputs(t, inst.(*instance))
				}
			}
		}
	}
}

// qgemvCheckInputs fails when a kernel wrote to one of an instance's input
// copies: every copy still holds the problem's inputs.
func qgemvCheckInputs(t *testing.T, inst *instance) {
	t.Helper()
	p := inst.p
	for c := range inst.copies {
		for i, x := range p.Inputs {
			for j, v := range x {
				var same bool
				switch {
				case inst.words[c][i] != nil:
					same = inst.words[c][i][j] == math.Float32bits(v)
				case inst.in32 != nil:
					same = inst.in32[c][i][j] == v
				default:
					same = widen16(p.DType)(inst.in16[c][i][j]) == v
				}
				if !same {
					t.Fatalf("%s %s: input %d of copy %d changed at %d", p.DType, p.Case, i, c, j)
				}
			}
		}
	}
}

// qgemvReversed returns the words with the order of the values in each
// reversed: what a kernel that unpacks from the highest bits reads.
func qgemvReversed(w []uint32, bits int) []uint32 {
	per, mask := 32/bits, uint32(1)<<bits-1
	r := make([]uint32, len(w))
	for i, u := range w {
		for e := range per {
			r[i] |= (u >> (e * bits) & mask) << ((per - 1 - e) * bits)
		}
	}
	return r
}

// qgemvBroken is the real kernel with its operands altered by mangle
// (packed words, scales, biases; the 16-bit ones as uint16 bits).
func qgemvBroken(qp QGemvParams, mangle func(bits int, w []uint32, sc, bi []uint16, sc32, bi32 []float32) []uint32) *program {
	clone16 := func(s []uint16) []uint16 { return append([]uint16(nil), s...) }
	clone32 := func(s []float32) []float32 { return append([]float32(nil), s...) }
	half := func(f func(QGemvParams, int, int, int, int, int, []uint16, []uint32, []uint16, []uint16, []uint16, []uint16)) func(*kernels.Problem, [][]uint16, [][]uint32, []uint16) {
		return func(p *kernels.Problem, in [][]uint16, words [][]uint32, out []uint16) {
			m, n, k, bits, g := qgemvShape(p)
			sc, bi := clone16(in[2]), clone16(in[3])
			w := mangle(bits, words[1], sc, bi, nil, nil)
			f(qp, m, n, k, bits, g, in[0], w, sc, bi, biasOperand(p, in, 4), out)
		}
	}
	return &program{
		wf32: func(p *kernels.Problem, in [][]float32, words [][]uint32, out []float32) {
			m, n, k, bits, g := qgemvShape(p)
			sc, bi := clone32(in[2]), clone32(in[3])
			w := mangle(bits, words[1], nil, nil, sc, bi)
			QGemv(qp, m, n, k, bits, g, in[0], w, sc, bi, biasOperand(p, in, 4), out)
		},
		wf16:  half(QGemvHalf),
		wbf16: half(QGemvBF16),
	}
}

// qgemvShape is m, n, k, bits and group_size of a qgemv problem.
func qgemvShape(p *kernels.Problem) (m, n, k, bits, g int) {
	s := p.Case.Shape
	return s[0], s[1], s[2], s[3], s[4]
}

// Verification catches a broken qgemv in every dtype, width and group
// size: values unpacked in the wrong order within a word (nibbles from the
// top), the β·Σx term dropped, scale and bias swapped.
func TestQGemvBrokenFails(t *testing.T) {
	b, _ := Open()
	qp := QGemvParams{BN: 16, Rows: 2, Threads: 2}
	broken := map[string]func(bits int, w []uint32, sc, bi []uint16, sc32, bi32 []float32) []uint32{
		"reversed value order": func(bits int, w []uint32, _, _ []uint16, _, _ []float32) []uint32 {
			return qgemvReversed(w, bits)
		},
		"biases dropped": func(_ int, w []uint32, _, bi []uint16, _, bi32 []float32) []uint32 {
			clear(bi)
			clear(bi32)
			return w
		},
		"scale and bias swapped": func(_ int, w []uint32, sc, bi []uint16, sc32, bi32 []float32) []uint32 {
			for i := range sc {
				sc[i], bi[i] = bi[i], sc[i]
			}
			for i := range sc32 {
				sc32[i], bi32[i] = bi32[i], sc32[i]
			}
			return w
		},
	}
	seed := uint64(100)
	for _, dt := range kernels.DTypes {
		for _, bits := range families.QGemvBits {
			for _, g := range families.QGemvGroups {
				seed++
				p := qgemvProblem(t, dt, 1+int(seed%3), 37, 3, bits, g, seed%2 == 0, seed)
				inst, err := b.Load(p, 1)
				if err != nil {
					t.Fatal(err)
				}
				for name, mangle := range broken {
					out, err := qgemvBroken(qp, mangle).Output(inst)
					if err != nil {
						t.Fatal(err)
					}
					if err := p.Verify(out); err == nil {
						t.Errorf("%s %s: %s passed verification", dt, p.Case, name)
					}
				}
			}
		}
	}
}

// The reference values a broken variant is compared with differ: the
// reversed words unpack (kernels.QUnpack) to the values in reverse order.
func TestQGemvReversedWords(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, bits := range families.QGemvBits {
		w := []uint32{rng.Uint32(), rng.Uint32()}
		r := qgemvReversed(w, bits)
		per := 32 / bits
		for j := range 2 * per {
			rj := j/per*per + per - 1 - j%per
			if kernels.QUnpack(w, bits, j) != kernels.QUnpack(r, bits, rj) {
				t.Fatalf("bits=%d: value %d of the reversed words is not value %d", bits, rj, j)
			}
		}
	}
}

// A run allocates nothing but the closure handed to kernParallel (GemvNT
// does the same), whatever the number of rows of W or x: the scratch (Σx
// per group, x, scales and biases widened) comes from the pool.
func TestQGemvAllocs(t *testing.T) {
	if kernRaceEnabled {
		t.Skip("the race detector drops pooled buffers at random")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const k, bits, g = 512, 4, 32
	for _, mn := range [][2]int{{1, 64}, {1, 4096}, {5, 64}} {
		m, n := mn[0], mn[1]
		w := make([]uint32, n*k*bits/32)
		for i := range w {
			w[i] = rng.Uint32()
		}
		x, sc, bi, bias, y := kernRandF32(rng, m*k), kernRandF32(rng, n*k/g), kernRandF32(rng, n*k/g), kernRandF32(rng, n), make([]float32, m*n)
		xh, sh, bh, biash, yh := kernRandHalf(rng, m*k), kernRandHalf(rng, n*k/g), kernRandHalf(rng, n*k/g), kernRandHalf(rng, n), make([]uint16, m*n)
		p := QGemvParams{BN: 32, Rows: 2, Threads: 1}
		for name, f := range map[string]func(){
			"f32":  func() { QGemv(p, m, n, k, bits, g, x, w, sc, bi, bias, y) },
			"f16":  func() { QGemvHalf(p, m, n, k, bits, g, xh, w, sh, bh, biash, yh) },
			"bf16": func() { QGemvBF16(p, m, n, k, bits, g, xh, w, sh, bh, biash, yh) },
		} {
			if a := testing.AllocsPerRun(20, f); a > 1 {
				t.Errorf("%s, m=%d n=%d: %v allocations per run", name, m, n, a)
			}
		}
	}
}
