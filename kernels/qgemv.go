package kernels

import (
	"math"
	"math/rand/v2"

	"github.com/kerntune/kerntune/params/families"
)

func init() {
	builtin(&Kernel{
		Family:        family(families.QGemv),
		SumOfProducts: true,
		// Seed 000's Qwen2.5-0.5B decode projections, 4-bit, group 64 (MLX's
		// default quantization): the shapes of gemv_nt's workload.
		Workload: []Case{
			{Shape: []int{1, 896, 896, 4, 64}}, {Shape: []int{1, 1152, 896, 4, 64}, Options: []string{Bias}},
			{Shape: []int{1, 896, 4864, 4, 64}},
			{Shape: []int{1, 3584, 896, 4, 64}},
			{Shape: []int{1, 9728, 896, 4, 64}}, {Shape: []int{1, 4864, 896, 4, 64}}, {Shape: []int{1, 151936, 896, 4, 64}},
		},
		// Odd row counts, each width and group size, rows of one group, and
		// a k over two stages of x in threadgroup memory (GPU bodies);
		// batched: odd m (a partial pass of every MR), odd n, k over
		// several groups and, at m = 16, over several stages.
		Odd: []Case{
			{Shape: []int{1, 37, 64, 4, 32}}, {Shape: []int{1, 131, 256, 8, 64}, Options: []string{Bias}},
			{Shape: []int{1, 1, 128, 2, 128}}, {Shape: []int{1, 67, 384, 4, 128}, Options: []string{Bias}},
			{Shape: []int{1, 33, 96, 8, 32}}, {Shape: []int{1, 45, 2368, 4, 64}},
			{Shape: []int{3, 29, 320, 4, 64}, Options: []string{Bias}}, {Shape: []int{5, 19, 384, 8, 128}},
			{Shape: []int{16, 21, 1408, 2, 32}}, {Shape: []int{16, 9, 576, 4, 64}, Options: []string{Bias}},
		},
		MemoryBound:  true,
		KeyedClasses: true,
		Options:      []string{Bias},
		Inputs:       qgemvInputs,
		OutLen:       func(s []int) int { return s[0] * s[1] },
		// Each output element a row: a sampled verification of a large
		// output draws elements of every row of x.
		OutRow:    func([]int) int { return 1 },
		Reference: refQGemv,
		Flops:     func(c Case) float64 { return 2 * float64(c.Shape[0]) * float64(c.Shape[1]) * float64(c.Shape[2]) },
		Fill:      fillQGemv,
		// The baseline (an app without this family) rounds each dequantised
		// weight to the activation dtype first: a relative error of up to
		// 2⁻¹¹ (f16) or 2⁻⁸ (bf16) per weight, which the cancellation of a
		// dot product magnifies; on the odd shape of one row, where the norm
		// is a single sum, it reached 1.1e-3 (f16) and 4.6e-2 (bf16) on the
		// H100. These bounds accept that rounding and still reject a wrong
		// call (a transposed or misplaced operand errs by order 1).
		BaselineTolerances: map[DType]float64{F16: 2e-2, BF16: 1e-1},
	})
}

// qgemvInputs: x (m × k, row-major), the packed weights w (n × k·bits/32
// uint32 words), scales and biases (n × k/group_size), and the optional
// bias (n, added to every row of y).
func qgemvInputs(c Case) []Operand {
	m, n, k, bits, g := c.Shape[0], c.Shape[1], c.Shape[2], c.Shape[3], c.Shape[4]
	ops := []Operand{
		{Name: "x", Len: m * k},
		{Name: "w", Len: n * k * bits / 32, Elem: ElemUint32},
		{Name: "scales", Len: n * k / g},
		{Name: "biases", Len: n * k / g},
	}
	if c.Has(Bias) {
		ops = append(ops, Operand{Name: "bias", Len: n})
	}
	return ops
}

// fillQGemv draws every bit of the packed words, and scales and biases
// such as mx.quantize makes of weights in [-1, 1): s = (max − min)/(2^bits − 1)
// is positive and small, β = min is negative or zero.
func fillQGemv(op Operand, buf []float32, rng *rand.Rand) {
	switch op.Name {
	case "w":
		for i := range buf {
			buf[i] = Int(int64(rng.Uint32()))
		}
	case "scales":
		for i := range buf {
			buf[i] = float32(0.004 + 0.12*rng.Float64())
		}
	case "biases":
		for i := range buf {
			buf[i] = float32(-1 + rng.Float64())
		}
	default:
		uniform(op, buf, rng)
	}
}

// QUnpack returns value j (0-based, along k) of a row's packed words: MLX
// packs bits-bit values into uint32 words from the lowest bits up.
func QUnpack(words []uint32, bits, j int) uint32 {
	per := 32 / bits
	return (words[j/per] >> (uint(j%per) * uint(bits))) & (1<<uint(bits) - 1)
}

// refQGemv: y[i, j] = Σ_p x[i, p]·(s[j, p/g]·q[j, p] + β[j, p/g]) (+ bias[j]),
// the dequantisation of MLX's affine mode written from its definition.
func refQGemv(c Case, in [][]float32) []float64 {
	m, n, k, bits, g := c.Shape[0], c.Shape[1], c.Shape[2], c.Shape[3], c.Shape[4]
	x, scales, biases := in[0], in[2], in[3]
	kw, kg := k*bits/32, k/g
	out := make([]float64, m*n)
	parallelRows(n, func(lo, hi int) {
		words := make([]uint32, kw)
		w := make([]float64, k)
		for j := lo; j < hi; j++ {
			for i := range words {
				words[i] = math.Float32bits(in[1][j*kw+i])
			}
			for p := range w {
				w[p] = float64(scales[j*kg+p/g])*float64(QUnpack(words, bits, p)) + float64(biases[j*kg+p/g])
			}
			for i := range m {
				var s float64
				for p, wp := range w {
					s += float64(x[i*k+p]) * wp
				}
				if c.Has(Bias) {
					s += float64(in[4][j])
				}
				out[i*n+j] = s
			}
		}
	})
	return out
}
