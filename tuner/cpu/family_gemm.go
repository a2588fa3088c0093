package cpu

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/search"
)

func init() {
	families.Add(params.GemmAV, family{
		build: gemmBuild(GemmAV, GemmAVHalf, GemmAVBF16),
		baseline: func(p *kernels.Problem, in [][]float32, out []float32) {
			m, n, kk := shape3(p)
			gonum.Implementation{}.Sgemm(blas.NoTrans, blas.NoTrans, m, n, kk, 1, in[0], kk, in[1], n, 0, out, n)
		},
	})
	families.Add(params.GemmAtB, family{
		build: gemmBuild(GemmAtB, GemmAtBHalf, GemmAtBBF16),
		baseline: func(p *kernels.Problem, in [][]float32, out []float32) {
			m, n, kk := shape3(p)
			gonum.Implementation{}.Sgemm(blas.Trans, blas.NoTrans, n, kk, m, 1, in[0], n, in[1], kk, 0, out, kk)
		},
	})
}

// gemmBuild binds the blocking parameters to the f32, f16 and bf16 kernels
// of one GEMM layout; each takes the shape m, n, k and two operands.
func gemmBuild(f32 func(GemmParams, int, int, int, []float32, []float32, []float32),
	f16, bf16 func(GemmParams, int, int, int, []uint16, []uint16, []uint16)) func(search.Candidate) (*program, error) {
	return func(c search.Candidate) (*program, error) {
		gp := GemmParams{MC: c["MC"], NC: c["NC"], KC: c["KC"], MR: c["MR"], NR: c["NR"], Threads: c["THREADS"]}
		if gp.MR < 1 || gp.NR < 1 || gp.MC%gp.MR != 0 || gp.NC%gp.NR != 0 || gp.KC < 1 || gp.Threads < 1 {
			return nil, fmt.Errorf("invalid GEMM parameters %s", c.Key())
		}
		return &program{
			f32: func(p *kernels.Problem, in [][]float32, out []float32) {
				m, n, kk := shape3(p)
				f32(gp, m, n, kk, in[0], in[1], out)
			},
			f16: func(p *kernels.Problem, in [][]uint16, out []uint16) {
				m, n, kk := shape3(p)
				f16(gp, m, n, kk, in[0], in[1], out)
			},
			bf16: func(p *kernels.Problem, in [][]uint16, out []uint16) {
				m, n, kk := shape3(p)
				bf16(gp, m, n, kk, in[0], in[1], out)
			},
		}, nil
	}
}

func shape3(p *kernels.Problem) (int, int, int) {
	return p.Case.Shape[0], p.Case.Shape[1], p.Case.Shape[2]
}
