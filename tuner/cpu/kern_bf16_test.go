package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kerntune/kerntune/internal/bf16"
	"github.com/kerntune/kerntune/kernels"
)

// kernF32ToBF16 and kernBF16ToF32 agree with internal/bf16 (whose rounding
// is checked against an independent nearest-value search) on ties, values
// near the midpoints, overflow, subnormals, infinities and NaN, and on
// random bit patterns.
func TestKernBF16Conversions(t *testing.T) {
	xs := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 1 + 1.0/256, 1 + 3.0/256, 1 + 1.0/256 + 1.0/65536,
		math.MaxFloat32, -math.MaxFloat32, 3.3961e38, 1e-40, -1e-45, float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.Float32frombits(0x7f80_0001), math.Float32frombits(0xffff_ffff)}
	rng := rand.New(rand.NewPCG(5, 5))
	for range 100000 {
		xs = append(xs, math.Float32frombits(rng.Uint32()))
	}
	got := make([]uint16, len(xs))
	kernF32ToBF16(got, xs)
	back := make([]float32, len(xs))
	kernBF16ToF32(back, got)
	for i, x := range xs {
		if want := bf16.FromFloat32(x); got[i] != want {
			t.Fatalf("kernF32ToBF16(%g = %#08x) = %#04x, want %#04x", x, math.Float32bits(x), got[i], want)
		}
		if w := bf16.ToFloat32(got[i]); math.Float32bits(back[i]) != math.Float32bits(w) {
			t.Fatalf("kernBF16ToF32(%#04x) = %g, want %g", got[i], back[i], w)
		}
	}
}

func kernRandBF16(rng *rand.Rand, n int) []uint16 { return kernRand(rng, n, bf16.FromFloat32) }

func kernBF16To64(s []uint16) []float64 { return kernTo64(s, bf16.ToFloat32) }

// kernPoisonBF16 is n bf16 NaNs, so that an unwritten output fails.
func kernPoisonBF16(n int) []uint16 { return kernFill[uint16](n, 0x7fc0) }

// Every bf16 kernel, with several parameter sets, on shapes that are no
// multiple of any block, against the float64 reference on the same bf16
// inputs, with the output poisoned NaN: within kernels.BF16Tolerance.
func TestKernBF16Families(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	tol := kernels.BF16Tolerance
	check := func(t *testing.T, name string, got []uint16, want []float64) {
		t.Helper()
		g := kernBF16To64(got)
		for i, v := range g {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%s: element %d not written (%v)", name, i, v)
			}
		}
		if e := kernRelErr(g, want); e > tol {
			t.Errorf("%s: rel err %.3g > %g", name, e, tol)
		}
	}
	m, n, k := 37, 45, 53
	a, v := kernRandBF16(rng, m*k), kernRandBF16(rng, k*n)
	refAV := kernRefAV(m, n, k, kernBF16To64(a), kernBF16To64(v))
	at, bt := kernRandBF16(rng, k*m), kernRandBF16(rng, k*n)
	refAtB := kernRefAtB(k, m, n, kernBF16To64(at), kernBF16To64(bt))
	for _, p := range []GemmParams{{8, 8, 8, 1, 4, 1}, {16, 32, 16, 2, 8, 3}, {64, 64, 64, 4, 8, 2}, {12, 20, 24, 4, 4, 4}} {
		c := kernPoisonBF16(m * n)
		GemmAVBF16(p, m, n, k, a, v, c)
		check(t, fmt.Sprint("GemmAVBF16 ", p), c, refAV)
		z := kernPoisonBF16(m * n)
		GemmAtBBF16(p, k, m, n, at, bt, z)
		check(t, fmt.Sprint("GemmAtBBF16 ", p), z, refAtB)
	}
	gn, gk := 67, 203
	x, w, b := kernRandBF16(rng, gk), kernRandBF16(rng, gn*gk), kernRandBF16(rng, gn)
	for _, withBias := range []bool{false, true} {
		var bias []uint16
		var b64 []float64
		if withBias {
			bias, b64 = b, kernBF16To64(b)
		}
		ref := kernRefGemv(gn, gk, kernBF16To64(x), kernBF16To64(w), b64)
		for _, p := range []GemvParams{{1, 1, 1, 1}, {7, 2, 4, 3}, {64, 4, 8, 2}, {300, 4, 2, 1}} {
			y := kernPoisonBF16(gn)
			GemvNTBF16(p, gn, gk, x, w, bias, y)
			check(t, fmt.Sprint("GemvNTBF16 bias ", withBias, p), y, ref)
		}
	}
	rows, cols := 13, 301
	xs := make([]float32, rows*cols)
	for i := range xs {
		xs[i] = (rng.Float32()*2 - 1) * 8
	}
	xh := make([]uint16, len(xs))
	kernF32ToBF16(xh, xs)
	wh := kernRandBF16(rng, cols)
	refS := kernRefSoftmax(rows, cols, kernBF16To64(xh))
	refR := kernRefRMSNorm(rows, cols, float64(float32(1e-6)), kernBF16To64(xh), kernBF16To64(wh))
	for _, p := range []RowParams{{1, 1, 1}, {3, 2, 2}, {4, 8, 3}, {20, 4, 1}} {
		y := kernPoisonBF16(rows * cols)
		SoftmaxBF16(p, rows, cols, xh, y)
		check(t, fmt.Sprint("SoftmaxBF16 ", p), y, refS)
		y = kernPoisonBF16(rows * cols)
		RMSNormBF16(p, rows, cols, 1e-6, xh, wh, y)
		check(t, fmt.Sprint("RMSNormBF16 ", p), y, refR)
	}
}
