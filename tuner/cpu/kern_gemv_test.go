package cpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// kernGemvParamSets covers every BN, Rows, Unroll and Threads value, and all
// twelve (Rows, Unroll) kernels.
func kernGemvParamSets() []GemvParams {
	bns := []int{4, 8, 16, 32, 64, 128, 256}
	rows := []int{1, 2, 4}
	unrolls := []int{1, 2, 4, 8}
	ths := []int{1, 2, 4, 8}
	var ps []GemvParams
	for i := 0; i < 14; i++ {
		ps = append(ps, GemvParams{
			BN: bns[i%len(bns)], Rows: rows[i%3], Unroll: unrolls[(i/3)%4], Threads: ths[(i*3)%4],
		})
	}
	return ps
}

// kernRefGemv is y = x·Wᵀ (+ bias) in float64.
func kernRefGemv(n, k int, x, w, bias []float64) []float64 {
	y := make([]float64, n)
	for j := 0; j < n; j++ {
		var s float64
		for p := 0; p < k; p++ {
			s += x[p] * w[j*k+p]
		}
		if bias != nil {
			s += bias[j]
		}
		y[j] = s
	}
	return y
}

func TestKernGemv(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	shapes := [][2]int{{53, 29}, {1, 1}, {37, 1}, {1, 100}, {7, 0}, {300, 77}}
	if !kernRaceEnabled {
		shapes = append(shapes, [2]int{1000, 513}, [2]int{257, 1031})
	}
	for _, sh := range shapes {
		n, k := sh[0], sh[1]
		x, w, bias := kernRandF32(rng, k), kernRandF32(rng, n*k), kernRandF32(rng, n)
		xh, wh, bh := kernRandHalf(rng, k), kernRandHalf(rng, n*k), kernRandHalf(rng, n)
		saved32 := kernClone([][]float32{x, w, bias})
		savedH := kernClone([][]uint16{xh, wh, bh})
		for _, withBias := range []bool{false, true} {
			b32, bH := []float32(nil), []uint16(nil)
			var b64, bH64 []float64
			if withBias {
				b32, bH, b64, bH64 = bias, bh, kernF32To64(bias), kernHalfTo64(bh)
			}
			ref := kernRefGemv(n, k, kernF32To64(x), kernF32To64(w), b64)
			refH := kernRound64ToHalf(kernRefGemv(n, k, kernHalfTo64(xh), kernHalfTo64(wh), bH64))
			for _, p := range kernGemvParamSets() {
				t.Run(fmt.Sprintf("%dx%d/bias=%v/%+v", n, k, withBias, p), func(t *testing.T) {
					kernRunF32(t, "GemvNT", n, ref, func(y []float32) { GemvNT(p, n, k, x, w, b32, y) })
					kernRunHalf(t, "GemvNTHalf", n, refH, func(y []uint16) { GemvNTHalf(p, n, k, xh, wh, bH, y) })
				})
			}
		}
		for i, s := range [][]float32{x, w, bias} {
			if !slices.Equal(s, saved32[i]) {
				t.Errorf("f32 input #%d modified", i)
			}
		}
		for i, s := range [][]uint16{xh, wh, bh} {
			if !slices.Equal(s, savedH[i]) {
				t.Errorf("f16 input #%d modified", i)
			}
		}
	}
}
