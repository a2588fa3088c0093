package cpu

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/search"
)

// The families that gonum's BLAS has a baseline for: gemm (two layouts),
// gemv_nt and lora.
func init() {
	impls.Add(families.GemmAV, family{
		build: gemmBuild(GemmAV, GemmAVHalf, GemmAVBF16),
		baseline: func(p *kernels.Problem, in [][]float32, out []float32) {
			m, n, kk := shape3(p)
			gonum.Implementation{}.Sgemm(blas.NoTrans, blas.NoTrans, m, n, kk, 1, in[0], kk, in[1], n, 0, out, n)
		},
	})
	impls.Add(families.GemmAtB, family{
		build: gemmBuild(GemmAtB, GemmAtBHalf, GemmAtBBF16),
		baseline: func(p *kernels.Problem, in [][]float32, out []float32) {
			m, n, kk := shape3(p)
			gonum.Implementation{}.Sgemm(blas.Trans, blas.NoTrans, n, kk, m, 1, in[0], n, in[1], kk, 0, out, kk)
		},
	})
	impls.Add(families.GemvNT, family{
		build: func(c search.Candidate) (*program, error) {
			gp := GemvParams{BN: c["BN"], Rows: c["ROWS"], Unroll: c["UNROLL"], Threads: c["THREADS"]}
			return &program{f32: gemvRun(gp, GemvNT), f16: gemvRun(gp, GemvNTHalf), bf16: gemvRun(gp, GemvNTBF16)}, nil
		},
		// Sgemv adds the bias as beta·y, so y starts as a copy of it.
		baseline: func(p *kernels.Problem, in [][]float32, out []float32) {
			n, kk := p.Case.Shape[1], p.Case.Shape[2]
			gonum.Implementation{}.Sgemv(blas.NoTrans, n, kk, 1, in[1], kk, in[0], 1, biasBeta(p, in, 2, out), out, 1)
		},
	})
	impls.Add(families.Lora, family{
		build: func(c search.Candidate) (*program, error) {
			lp := LoraParams{BN: c["BN"], BM: c["BM"], Unroll: c["UNROLL"], Threads: c["THREADS"]}
			return &program{f32: loraRun(lp, Lora), f16: loraRun(lp, LoraHalf), bf16: loraRun(lp, LoraBF16)}, nil
		},
		// The unfused sequence an app runs: y = x·Wᵀ, t = x·Aᵀ, then
		// y += s·t·Bᵀ, one Sgemm each; the add is the third product's
		// beta = 1, and the bias, when there is one, the first one's (y
		// starts as a copy of it in every row).
		baseline: func(p *kernels.Problem, in [][]float32, out []float32) {
			m, n, k, r := loraShape(p)
			impl := gonum.Implementation{}
			impl.Sgemm(blas.NoTrans, blas.Trans, m, n, k, 1, in[0], k, in[1], k, biasBeta(p, in, 4, out), out, n)
			tp := kernGetF32(m * r)
			defer kernPutF32(tp)
			t := (*tp)[:m*r]
			impl.Sgemm(blas.NoTrans, blas.Trans, m, r, k, 1, in[0], k, in[2], k, 0, t, r)
			impl.Sgemm(blas.NoTrans, blas.Trans, m, n, r, loraScale(p), t, r, in[3], r, 1, out, n)
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
		return &program{f32: gemmRun(gp, f32), f16: gemmRun(gp, f16), bf16: gemmRun(gp, bf16)}, nil
	}
}

// gemmRun is a program's run of kernel with parameters gp, for the
// element type T of every operand.
func gemmRun[T float32 | uint16](gp GemmParams, kernel func(GemmParams, int, int, int, []T, []T, []T)) func(*kernels.Problem, [][]T, []T) {
	return func(p *kernels.Problem, in [][]T, out []T) {
		m, n, kk := shape3(p)
		kernel(gp, m, n, kk, in[0], in[1], out)
	}
}

func shape3(p *kernels.Problem) (int, int, int) {
	return p.Case.Shape[0], p.Case.Shape[1], p.Case.Shape[2]
}

// biasBeta starts every row of out as a copy of the bias, operand i of
// in, when the problem has one, and is the beta that makes the first BLAS
// product add to it: 1, or 0 without a bias.
func biasBeta(p *kernels.Problem, in [][]float32, i int, out []float32) float32 {
	b := biasOperand(p, in, i)
	if b == nil {
		return 0
	}
	for row := 0; row < len(out); row += len(b) {
		copy(out[row:row+len(b)], b)
	}
	return 1
}

// gemvRun is a program's run of kernel with parameters gp, for the
// element type T of every operand.
func gemvRun[T float32 | uint16](gp GemvParams, kernel func(GemvParams, int, int, []T, []T, []T, []T)) func(*kernels.Problem, [][]T, []T) {
	return func(p *kernels.Problem, in [][]T, out []T) {
		kernel(gp, p.Case.Shape[1], p.Case.Shape[2], in[0], in[1], biasOperand(p, in, 2), out)
	}
}

// loraRun is a program's run of kernel with parameters lp, for the
// element type T of every operand.
func loraRun[T float32 | uint16](lp LoraParams, kernel func(LoraParams, int, int, int, int, float32, []T, []T, []T, []T, []T, []T)) func(*kernels.Problem, [][]T, []T) {
	return func(p *kernels.Problem, in [][]T, out []T) {
		m, n, k, r := loraShape(p)
		kernel(lp, m, n, k, r, loraScale(p), in[0], in[1], in[2], in[3], biasOperand(p, in, 4), out)
	}
}

// loraShape is m, n, k and r of a lora problem.
func loraShape(p *kernels.Problem) (m, n, k, r int) {
	s := p.Case.Shape
	return s[0], s[1], s[2], s[3]
}

// loraScale is the scale s of the family's problems.
func loraScale(p *kernels.Problem) float32 { return float32(p.Kernel.Scalars["scale"]) }
