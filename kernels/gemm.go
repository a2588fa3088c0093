package kernels

import "github.com/kerntune/kerntune/params/families"

func init() {
	builtin(&Kernel{
		Family:        family(families.GemmAV),
		SumOfProducts: true,
		Workload: shapes(
			[]int{64, 64, 64}, []int{96, 128, 160}, // small
			[]int{16, 4864, 896},                       // skinny: a short prefill
			[]int{256, 256, 256}, []int{512, 512, 512}, // medium
			[]int{512, 4864, 896}, // large: a prefill projection (512 tokens)
		),
		Odd: shapes([]int{37, 53, 29}, []int{1, 19, 300}, []int{130, 7, 65}),
		Inputs: func(c Case) []Operand {
			m, n, k := c.Shape[0], c.Shape[1], c.Shape[2]
			return []Operand{{Name: "A", Len: m * k}, {Name: "V", Len: k * n}}
		},
		OutLen:    func(s []int) int { return s[0] * s[1] },
		OutRow:    func(s []int) int { return s[1] },
		Reference: refGemmAV,
		Flops:     gemmFlops,
	})
	builtin(&Kernel{
		Family:        family(families.GemmAtB),
		SumOfProducts: true,
		Workload: shapes(
			[]int{64, 64, 64},                          // small
			[]int{4096, 16, 896},                       // skinny: a LoRA-style gradient
			[]int{256, 256, 256}, []int{512, 512, 512}, // medium
			[]int{1024, 1024, 1024}, // large
		),
		Odd: shapes([]int{37, 53, 29}, []int{300, 1, 19}, []int{7, 130, 65}),
		Inputs: func(c Case) []Operand {
			m, n, k := c.Shape[0], c.Shape[1], c.Shape[2]
			return []Operand{{Name: "A", Len: m * n}, {Name: "B", Len: m * k}}
		},
		OutLen:    func(s []int) int { return s[1] * s[2] },
		OutRow:    func(s []int) int { return s[2] },
		Reference: refGemmAtB,
		Flops:     gemmFlops,
	})
}

func gemmFlops(c Case) float64 {
	return 2 * float64(c.Shape[0]) * float64(c.Shape[1]) * float64(c.Shape[2])
}

// refGemmAV: C[m×n] = A[m×k]·V[k×n].
func refGemmAV(c Case, in [][]float32) []float64 {
	m, n, k := c.Shape[0], c.Shape[1], c.Shape[2]
	a, v := in[0], in[1]
	out := make([]float64, m*n)
	parallelRows(m, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := out[i*n : (i+1)*n]
			for p := 0; p < k; p++ {
				aip := float64(a[i*k+p])
				vp := v[p*n : (p+1)*n]
				for j := range row {
					row[j] += aip * float64(vp[j])
				}
			}
		}
	})
	return out
}

// refGemmAtB: Z[n×k] = Aᵀ·B with A m×n, B m×k.
func refGemmAtB(c Case, in [][]float32) []float64 {
	m, n, k := c.Shape[0], c.Shape[1], c.Shape[2]
	a, b := in[0], in[1]
	out := make([]float64, n*k)
	parallelRows(n, func(lo, hi int) {
		for p := 0; p < m; p++ {
			bp := b[p*k : (p+1)*k]
			for i := lo; i < hi; i++ {
				api := float64(a[p*n+i])
				row := out[i*k : (i+1)*k]
				for j := range row {
					row[j] += api * float64(bp[j])
				}
			}
		}
	})
	return out
}
