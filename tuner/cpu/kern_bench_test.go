package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/kerntune/kerntune/kernels"
)

// kernGemmBenchParams are representative GEMM settings: the fastest found on
// the 2-core x86-64 development machine first (the 2×4 and 1×8 tiles keep all
// accumulators in the 15 usable XMM registers; 2×8, 4×4 and 4×8 spill), then
// ones that show how the other knobs matter.
var kernGemmBenchParams = []GemmParams{
	{MC: 256, NC: 2048, KC: 512, MR: 2, NR: 4, Threads: 2},
	{MC: 128, NC: 1024, KC: 256, MR: 2, NR: 4, Threads: 2},
	{MC: 128, NC: 1024, KC: 256, MR: 1, NR: 8, Threads: 2},
	{MC: 128, NC: 1024, KC: 256, MR: 1, NR: 4, Threads: 2},
	{MC: 128, NC: 1024, KC: 256, MR: 2, NR: 8, Threads: 2},
	{MC: 128, NC: 1024, KC: 256, MR: 4, NR: 4, Threads: 2},
	{MC: 128, NC: 1024, KC: 256, MR: 4, NR: 8, Threads: 2},
	{MC: 16, NC: 64, KC: 32, MR: 2, NR: 4, Threads: 2},
	{MC: 128, NC: 1024, KC: 256, MR: 2, NR: 4, Threads: 1},
	{MC: 128, NC: 1024, KC: 256, MR: 2, NR: 4, Threads: 8},
}

func kernGemmName(p GemmParams) string {
	return fmt.Sprintf("MC%d_NC%d_KC%d_%dx%d_T%d", p.MC, p.NC, p.KC, p.MR, p.NR, p.Threads)
}

func kernReportFlops(b *testing.B, flops float64) {
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func kernReportBytes(b *testing.B, bytes float64) {
	b.ReportMetric(bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

// BenchmarkGemmAV1024 times C = A·V at 1024³ for several settings and
// gonum's native Sgemm in the same run.
func BenchmarkGemmAV1024(b *testing.B) {
	const n = 1024
	rng := rand.New(rand.NewPCG(1, 1))
	a, v := kernRandF32(rng, n*n), kernRandF32(rng, n*n)
	c := make([]float32, n*n)
	flops := 2.0 * n * n * n
	b.Run("gonum", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			gonum.Implementation{}.Sgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a, n, v, n, 0, c, n)
		}
		kernReportFlops(b, flops)
	})
	for _, p := range kernGemmBenchParams {
		b.Run(kernGemmName(p), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				GemmAV(p, n, n, n, a, v, c)
			}
			kernReportFlops(b, flops)
		})
	}
	ah, vh := kernRandHalf(rng, n*n), kernRandHalf(rng, n*n)
	ch := make([]uint16, n*n)
	p := kernGemmBenchParams[0]
	b.Run("f16_"+kernGemmName(p), func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			GemmAVHalf(p, n, n, n, ah, vh, ch)
		}
		kernReportFlops(b, flops)
	})
	b.Run("AtB_"+kernGemmName(p), func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			GemmAtB(p, n, n, n, a, v, c)
		}
		kernReportFlops(b, flops)
	})
}

// BenchmarkGemvNT times y = x·Wᵀ + bias at the n=4864, k=896 shape (an MLP
// projection) in f32, f16 and bf16, with gonum's Sgemv for comparison. GB/s counts
// the bytes of W, which dominate the traffic.
func BenchmarkGemvNT(b *testing.B) {
	const n, k = 4864, 896
	rng := rand.New(rand.NewPCG(2, 2))
	x, w, bias := kernRandF32(rng, k), kernRandF32(rng, n*k), kernRandF32(rng, n)
	y := make([]float32, n)
	b.Run("gonum", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			copy(y, bias)
			gonum.Implementation{}.Sgemv(blas.NoTrans, n, k, 1, w, k, x, 1, 1, y, 1)
		}
		kernReportBytes(b, 4*n*k)
	})
	params := []GemvParams{
		{BN: 64, Rows: 4, Unroll: 2, Threads: 2},
		{BN: 64, Rows: 2, Unroll: 4, Threads: 2},
		{BN: 64, Rows: 1, Unroll: 8, Threads: 2},
		{BN: 64, Rows: 4, Unroll: 8, Threads: 2},
		{BN: 64, Rows: 1, Unroll: 1, Threads: 2},
		{BN: 4, Rows: 4, Unroll: 2, Threads: 2},
		{BN: 64, Rows: 4, Unroll: 2, Threads: 1},
	}
	xh, wh, bh := kernRandHalf(rng, k), kernRandHalf(rng, n*k), kernRandHalf(rng, n)
	yh := make([]uint16, n)
	xb, wb, bb := kernRandBF16(rng, k), kernRandBF16(rng, n*k), kernRandBF16(rng, n)
	for _, dt := range []struct {
		name string
		size int // bytes of an element of W
		run  func(p GemvParams)
	}{
		{"f32", 4, func(p GemvParams) { GemvNT(p, n, k, x, w, bias, y) }},
		{"f16", 2, func(p GemvParams) { GemvNTHalf(p, n, k, xh, wh, bh, yh) }},
		{"bf16", 2, func(p GemvParams) { GemvNTBF16(p, n, k, xb, wb, bb, yh) }},
	} {
		for _, p := range params {
			b.Run(fmt.Sprintf("%s_BN%d_R%d_U%d_T%d", dt.name, p.BN, p.Rows, p.Unroll, p.Threads), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					dt.run(p)
				}
				kernReportBytes(b, float64(dt.size*n*k))
			})
		}
	}
}

var kernRowBenchParams = []RowParams{
	{RowsPerTask: 16, Unroll: 4, Threads: 2},
	{RowsPerTask: 16, Unroll: 8, Threads: 2},
	{RowsPerTask: 16, Unroll: 1, Threads: 2},
	{RowsPerTask: 1, Unroll: 4, Threads: 2},
	{RowsPerTask: 16, Unroll: 4, Threads: 1},
}

// BenchmarkSoftmax times a 4096×4096 softmax; GB/s counts input plus output.
func BenchmarkSoftmax(b *testing.B) {
	const rows, cols = 4096, 4096
	rng := rand.New(rand.NewPCG(3, 3))
	x := kernRandF32(rng, rows*cols)
	y := make([]float32, rows*cols)
	xh := make([]uint16, rows*cols)
	kernF32ToHalf(xh, x)
	yh := make([]uint16, rows*cols)
	for _, p := range kernRowBenchParams {
		b.Run(fmt.Sprintf("f32_RPT%d_U%d_T%d", p.RowsPerTask, p.Unroll, p.Threads), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				Softmax(p, rows, cols, x, y)
			}
			kernReportBytes(b, 8*rows*cols)
		})
	}
	for _, p := range kernRowBenchParams[:2] {
		b.Run(fmt.Sprintf("f16_RPT%d_U%d_T%d", p.RowsPerTask, p.Unroll, p.Threads), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				SoftmaxHalf(p, rows, cols, xh, yh)
			}
			kernReportBytes(b, 4*rows*cols)
		})
	}
}

// BenchmarkRMSNorm times a 4096×4096 RMSNorm; GB/s counts input plus output.
func BenchmarkRMSNorm(b *testing.B) {
	const rows, cols = 4096, 4096
	rng := rand.New(rand.NewPCG(4, 4))
	x, w := kernRandF32(rng, rows*cols), kernRandF32(rng, cols)
	y := make([]float32, rows*cols)
	xh, wh := make([]uint16, rows*cols), make([]uint16, cols)
	kernF32ToHalf(xh, x)
	kernF32ToHalf(wh, w)
	yh := make([]uint16, rows*cols)
	for _, p := range kernRowBenchParams {
		b.Run(fmt.Sprintf("f32_RPT%d_U%d_T%d", p.RowsPerTask, p.Unroll, p.Threads), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				RMSNorm(p, rows, cols, 1e-6, x, w, y)
			}
			kernReportBytes(b, 8*rows*cols)
		})
	}
	for _, p := range kernRowBenchParams[:2] {
		b.Run(fmt.Sprintf("f16_RPT%d_U%d_T%d", p.RowsPerTask, p.Unroll, p.Threads), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				RMSNormHalf(p, rows, cols, 1e-6, xh, wh, yh)
			}
			kernReportBytes(b, 4*rows*cols)
		})
	}
}

// BenchmarkQGemv times the largest decode projection of Qwen2.5-0.5B
// quantized as MLX does by default (1×151936×896, 4 bits, groups of 64) in
// f32, f16 and bf16. GB/s counts the problem's bytes (kernels.Kernel.Bytes:
// the packed words, scales, biases, x and y), Gelem/s the weights applied:
// on the 2-core development machine the kernel is bound by the unpacking
// and conversion of each value (about 3 Gelem/s per core), not by memory.
func BenchmarkQGemv(b *testing.B) {
	const n, k, bits, g = 151936, 896, 4, 64
	kern, err := kernels.Get("qgemv")
	if err != nil {
		b.Fatal(err)
	}
	c := kernels.Case{Shape: []int{1, n, k, bits, g}}
	rng := rand.New(rand.NewPCG(7, 7))
	w := make([]uint32, n*k*bits/32)
	for i := range w {
		w[i] = rng.Uint32()
	}
	x, sc, bi := kernRandF32(rng, k), kernRandF32(rng, n*k/g), kernRandF32(rng, n*k/g)
	y := make([]float32, n)
	xh, sh, bh, yh := kernRandHalf(rng, k), kernRandHalf(rng, n*k/g), kernRandHalf(rng, n*k/g), make([]uint16, n)
	xb, sb, bb := kernRandBF16(rng, k), kernRandBF16(rng, n*k/g), kernRandBF16(rng, n*k/g)
	params := []QGemvParams{
		{BN: 32, Rows: 1, Threads: 2},
		{BN: 32, Rows: 2, Threads: 2},
		{BN: 32, Rows: 4, Threads: 2},
		{BN: 256, Rows: 2, Threads: 2},
		{BN: 4, Rows: 2, Threads: 2},
		{BN: 32, Rows: 2, Threads: 1},
		{BN: 32, Rows: 2, Threads: 4},
	}
	report := func(b *testing.B, dt kernels.DType) {
		b.ReportMetric(kern.Bytes(c, dt)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		b.ReportMetric(float64(n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
	}
	for _, p := range params {
		name := fmt.Sprintf("BN%d_R%d_T%d", p.BN, p.Rows, p.Threads)
		b.Run("f32_"+name, func(b *testing.B) {
			for range b.N {
				QGemv(p, 1, n, k, bits, g, x, w, sc, bi, nil, y)
			}
			report(b, kernels.F32)
		})
		b.Run("f16_"+name, func(b *testing.B) {
			for range b.N {
				QGemvHalf(p, 1, n, k, bits, g, xh, w, sh, bh, nil, yh)
			}
			report(b, kernels.F16)
		})
		b.Run("bf16_"+name, func(b *testing.B) {
			for range b.N {
				QGemvBF16(p, 1, n, k, bits, g, xb, w, sb, bb, nil, yh)
			}
			report(b, kernels.BF16)
		})
	}
}
