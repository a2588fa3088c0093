package kernels

import (
	"math"
	"math/rand/v2"

	"github.com/kerntune/kerntune/params/families"
)

func init() {
	builtin(&Kernel{
		Family: family(families.Softmax), Workload: rowWorkload, Odd: rowOdd, MemoryBound: true,
		Inputs:    func(c Case) []Operand { return []Operand{{Name: "x", Len: c.Shape[0] * c.Shape[1]}} },
		OutLen:    func(s []int) int { return s[0] * s[1] },
		OutRow:    func(s []int) int { return s[1] },
		Reference: refSoftmax,
		Flops:     rowFlops,
		Fill:      fillLogits,
	})
}

// fillLogits draws uniform values with a large logit every 97 elements: a
// naive exp overflows on them, so a stable softmax must subtract the row max.
func fillLogits(op Operand, buf []float32, rng *rand.Rand) {
	uniform(op, buf, rng)
	for i := 0; i < len(buf); i += 97 {
		buf[i] = float32(40 + 20*rng.Float64())
	}
}

// refSoftmax: y[r,:] = exp(x[r,:] − max) / Σ exp(x[r,:] − max).
func refSoftmax(c Case, in [][]float32) []float64 {
	rows, cols := c.Shape[0], c.Shape[1]
	x := in[0]
	out := make([]float64, rows*cols)
	parallelRows(rows, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, yr := x[r*cols:(r+1)*cols], out[r*cols:(r+1)*cols]
			mx := math.Inf(-1)
			for _, v := range xr {
				mx = math.Max(mx, float64(v))
			}
			var s float64
			for i, v := range xr {
				yr[i] = math.Exp(float64(v) - mx)
				s += yr[i]
			}
			for i := range yr {
				yr[i] /= s
			}
		}
	})
	return out
}
