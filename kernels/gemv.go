package kernels

import "github.com/kerntune/kerntune/params/families"

// Bias is gemv_nt's option: the case adds a bias operand to y.
const Bias = "bias"

func init() {
	builtin(&Kernel{
		Family:        family(families.GemvNT),
		SumOfProducts: true,
		// The Qwen2.5-0.5B decode projections, plus one shape for the mid class.
		Workload: []Case{
			{Shape: []int{1, 896, 896}}, {Shape: []int{1, 1152, 896}, Options: []string{Bias}}, // tiny: q/o and fused qkv
			{Shape: []int{1, 896, 4864}},                                                               // largeK_smallN: down projection
			{Shape: []int{1, 3584, 896}},                                                               // mid
			{Shape: []int{1, 9728, 896}}, {Shape: []int{1, 4864, 896}}, {Shape: []int{1, 151936, 896}}, // largeN: gate/up, lm head
		},
		// 1×131×264: an odd number of rows with k a multiple of 8, for vector loads.
		Odd:         []Case{{Shape: []int{1, 37, 29}}, {Shape: []int{1, 131, 257}, Options: []string{Bias}}, {Shape: []int{1, 1, 1}}, {Shape: []int{1, 131, 264}, Options: []string{Bias}}},
		MemoryBound: true,
		Options:     []string{Bias},
		Inputs: func(c Case) []Operand {
			n, k := c.Shape[1], c.Shape[2]
			ops := []Operand{{Name: "x", Len: k}, {Name: "W", Len: n * k}}
			if c.Has(Bias) {
				ops = append(ops, Operand{Name: "bias", Len: n})
			}
			return ops
		},
		OutLen:    func(s []int) int { return s[1] },
		OutRow:    func([]int) int { return 1 },
		Reference: refGemvNT,
		Flops:     func(c Case) float64 { return 2 * float64(c.Shape[1]) * float64(c.Shape[2]) },
	})
}

// refGemvNT: y[n] = x[k]·Wᵀ (+ bias), W n×k.
func refGemvNT(c Case, in [][]float32) []float64 {
	n, k := c.Shape[1], c.Shape[2]
	x, w := in[0], in[1]
	out := make([]float64, n)
	parallelRows(n, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			var s float64
			wj := w[j*k : (j+1)*k]
			for p, wv := range wj {
				s += float64(x[p]) * float64(wv)
			}
			if c.Has(Bias) {
				s += float64(in[2][j])
			}
			out[j] = s
		}
	})
	return out
}
