package kernels

import (
	"math"

	"github.com/kerntune/kerntune/params/families"
)

// RMSNormEps is the epsilon of rmsnorm problems, its scalar "eps".
const RMSNormEps = 1e-6

func init() {
	builtin(&Kernel{
		Family: family(families.RMSNorm), Workload: rowWorkload, Odd: rowOdd, MemoryBound: true,
		Scalars: map[string]float64{"eps": RMSNormEps},
		Inputs: func(c Case) []Operand {
			return []Operand{{Name: "x", Len: c.Shape[0] * c.Shape[1]}, {Name: "w", Len: c.Shape[1]}}
		},
		OutLen:    func(s []int) int { return s[0] * s[1] },
		OutRow:    func(s []int) int { return s[1] },
		Reference: refRMSNorm,
		Flops:     rowFlops,
	})
}

// refRMSNorm: y[r,c] = x[r,c] / sqrt(mean(x[r,:]²) + eps) · w[c].
func refRMSNorm(c Case, in [][]float32) []float64 {
	rows, cols := c.Shape[0], c.Shape[1]
	x, w := in[0], in[1]
	out := make([]float64, rows*cols)
	parallelRows(rows, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, yr := x[r*cols:(r+1)*cols], out[r*cols:(r+1)*cols]
			var ss float64
			for _, v := range xr {
				ss += float64(v) * float64(v)
			}
			inv := 1 / math.Sqrt(ss/float64(cols)+RMSNormEps)
			for i, v := range xr {
				yr[i] = float64(v) * inv * float64(w[i])
			}
		}
	})
	return out
}
