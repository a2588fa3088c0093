package cpu

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/search"
)

func init() {
	families.Add(params.Lora, family{
		build: func(c search.Candidate) (*program, error) {
			lp := LoraParams{BN: c["BN"], BM: c["BM"], Unroll: c["UNROLL"], Threads: c["THREADS"]}
			return &program{
				f32: func(p *kernels.Problem, in [][]float32, out []float32) {
					m, n, k, r := loraShape(p)
					Lora(lp, m, n, k, r, loraScale(p), in[0], in[1], in[2], in[3], loraBias(p, in), out)
				},
				f16: func(p *kernels.Problem, in [][]uint16, out []uint16) {
					m, n, k, r := loraShape(p)
					LoraHalf(lp, m, n, k, r, loraScale(p), in[0], in[1], in[2], in[3], loraBias(p, in), out)
				},
				bf16: func(p *kernels.Problem, in [][]uint16, out []uint16) {
					m, n, k, r := loraShape(p)
					LoraBF16(lp, m, n, k, r, loraScale(p), in[0], in[1], in[2], in[3], loraBias(p, in), out)
				},
			}, nil
		},
		// The unfused sequence an app runs: y = x·Wᵀ, t = x·Aᵀ, then
		// y += s·t·Bᵀ, one Sgemm each; the add is the third product's
		// beta = 1, and the bias, when there is one, the first one's (y
		// starts as a copy of it in every row).
		baseline: func(p *kernels.Problem, in [][]float32, out []float32) {
			m, n, k, r := loraShape(p)
			impl := gonum.Implementation{}
			beta := float32(0)
			if b := loraBias(p, in); b != nil {
				for i := range m {
					copy(out[i*n:(i+1)*n], b)
				}
				beta = 1
			}
			impl.Sgemm(blas.NoTrans, blas.Trans, m, n, k, 1, in[0], k, in[1], k, beta, out, n)
			tp := kernGetF32(m * r)
			defer kernPutF32(tp)
			t := (*tp)[:m*r]
			impl.Sgemm(blas.NoTrans, blas.Trans, m, r, k, 1, in[0], k, in[2], k, 0, t, r)
			impl.Sgemm(blas.NoTrans, blas.Trans, m, n, r, loraScale(p), t, r, in[3], r, 1, out, n)
		},
	})
}

// loraShape is m, n, k and r of a lora problem.
func loraShape(p *kernels.Problem) (m, n, k, r int) {
	s := p.Case.Shape
	return s[0], s[1], s[2], s[3]
}

// loraScale is the scale s of the family's problems.
func loraScale(p *kernels.Problem) float32 { return float32(p.Kernel.Scalars["scale"]) }

// loraBias is lora's bias operand, nil when the case has none.
func loraBias[T float32 | uint16](p *kernels.Problem, in [][]T) []T {
	if p.Case.Has(kernels.Bias) {
		return in[4]
	}
	return nil
}
