package kernels

import (
	"math/rand/v2"

	"github.com/kerntune/kerntune/params/families"
)

// LoraScale is the scale s of lora problems, its scalar "scale": α/r of a
// LoRA adapter with α = 2r, a power of two so that the scaling itself adds
// no rounding.
const LoraScale = 2.0

func init() {
	builtin(&Kernel{
		Family:        family(families.Lora),
		SumOfProducts: true,
		// Seed 000's Qwen2.5-0.5B projections (q/o, gate/up, down, fused
		// qkv with bias) with a rank-16 adapter at the decode batch sizes
		// 1, 4 and 16, and one prefill of 512 tokens.
		Workload: append(loraDecode(16), Case{Shape: []int{512, 896, 896, 16}}),
		// Odd row and column counts, each rank, k odd and a multiple of 8
		// (vector loads), m past one row block of 16, and a prefill shape.
		Odd: []Case{
			{Shape: []int{1, 37, 29, 8}}, {Shape: []int{1, 131, 264, 16}, Options: []string{Bias}},
			{Shape: []int{3, 67, 257, 32}, Options: []string{Bias}}, {Shape: []int{17, 45, 96, 64}},
			{Shape: []int{1, 5, 1, 8}}, {Shape: []int{37, 33, 72, 16}, Options: []string{Bias}},
		},
		MemoryBound:  true,
		KeyedClasses: true,
		Options:      []string{Bias},
		Scalars:      map[string]float64{"scale": LoraScale},
		Inputs:       loraInputs,
		Fill:         loraFill,
		OutLen:       func(s []int) int { return s[0] * s[1] },
		OutRow:       func(s []int) int { return s[1] },
		Reference:    refLora,
		Flops: func(c Case) float64 {
			m, n, k, r := float64(c.Shape[0]), float64(c.Shape[1]), float64(c.Shape[2]), float64(c.Shape[3])
			return 2*m*n*k + 2*m*r*k + 2*m*n*r
		},
	})
}

// loraDecode is the decode part of the workload at rank r: the four
// projections at m = 1, 4 and 16.
func loraDecode(r int) []Case {
	var cs []Case
	for _, m := range []int{1, 4, 16} {
		cs = append(cs,
			Case{Shape: []int{m, 896, 896, r}}, Case{Shape: []int{m, 1152, 896, r}, Options: []string{Bias}},
			Case{Shape: []int{m, 4864, 896, r}}, Case{Shape: []int{m, 896, 4864, r}})
	}
	return cs
}

// loraInputs: x (m×k), W (n×k), A (r×k), B (n×r) and the optional bias (n).
func loraInputs(c Case) []Operand {
	m, n, k, r := c.Shape[0], c.Shape[1], c.Shape[2], c.Shape[3]
	ops := []Operand{{Name: "x", Len: m * k}, {Name: "W", Len: n * k}, {Name: "A", Len: r * k}, {Name: "B", Len: n * r}}
	if c.Has(Bias) {
		ops = append(ops, Operand{Name: "bias", Len: n})
	}
	return ops
}

// loraAdapterScale is the magnitude of B's values: uniform in ±2^-4, so
// that s·(x·Aᵀ)·Bᵀ is a fraction of x·Wᵀ, as a trained adapter's update is
// (B starts at zero), rather than several times it. A power of two: B's
// values stay exact in every dtype.
const loraAdapterScale = 1.0 / 16

// loraFill draws every operand uniform in [-1, 1), B in ±loraAdapterScale.
func loraFill(op Operand, buf []float32, rng *rand.Rand) {
	uniformChunks(buf, rng)
	if op.Name == "B" {
		for i := range buf {
			buf[i] *= loraAdapterScale
		}
	}
}

// refLora: y[i,j] = Σ_p x[i,p]·W[j,p] + s·Σ_q t[i,q]·B[j,q] (+ bias[j])
// with t[i,q] = Σ_p x[i,p]·A[q,p], all in float64.
func refLora(c Case, in [][]float32) []float64 {
	m, n, k, r := c.Shape[0], c.Shape[1], c.Shape[2], c.Shape[3]
	x, w, a, b := in[0], in[1], in[2], in[3]
	out := make([]float64, m*n)
	parallelRows(m, func(lo, hi int) {
		t := make([]float64, r)
		for i := lo; i < hi; i++ {
			xi := x[i*k : (i+1)*k]
			for q := range t {
				var s float64
				for p, av := range a[q*k : (q+1)*k] {
					s += float64(xi[p]) * float64(av)
				}
				t[q] = s
			}
			for j := range n {
				var s, l float64
				for p, wv := range w[j*k : (j+1)*k] {
					s += float64(xi[p]) * float64(wv)
				}
				for q, bv := range b[j*r : (j+1)*r] {
					l += t[q] * float64(bv)
				}
				s += LoraScale * l
				if c.Has(Bias) {
					s += float64(in[4][j])
				}
				out[i*n+j] = s
			}
		}
	})
	return out
}
