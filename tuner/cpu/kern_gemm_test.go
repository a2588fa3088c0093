package cpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// kernGemmParamSets cycles every value of every knob through at least one
// combination, and all six (MR, NR) pairs through consecutive entries.
func kernGemmParamSets() []GemmParams {
	mcs := []int{16, 32, 64, 128, 256}
	ncs := []int{64, 128, 256, 512, 1024, 2048}
	kcs := []int{32, 64, 128, 256, 512}
	mrs := []int{1, 2, 4}
	nrs := []int{4, 8}
	ths := []int{1, 2, 4, 8}
	var ps []GemmParams
	for i := 0; i < 12; i++ {
		ps = append(ps, GemmParams{
			MC: mcs[i%len(mcs)], NC: ncs[(i*5)%len(ncs)], KC: kcs[(i*3)%len(kcs)],
			MR: mrs[i%3], NR: nrs[(i/3)%2], Threads: ths[i%len(ths)],
		})
	}
	return ps
}

type kernGemmShape struct{ m, n, k int }

func kernGemmShapes() []kernGemmShape {
	small := []kernGemmShape{{37, 53, 29}, {1, 1, 1}, {1, 17, 5}, {19, 1, 3}, {2, 9, 1}, {16, 64, 32}, {5, 7, 0}}
	if kernRaceEnabled {
		return small
	}
	// Larger shapes cross several MC/NC/KC blocks with ragged edges; the
	// k=1000 one checks the f32 accumulation error over a long depth.
	return append(small, kernGemmShape{70, 150, 90}, kernGemmShape{9, 21, 1000}, kernGemmShape{300, 600, 530})
}

// kernRefAV is C = A·V in float64.
func kernRefAV(m, n, k int, a, v []float64) []float64 {
	return kernRefMul(m, n, k, a, k, 1, v)
}

// kernRefAtB is Z = Aᵀ·B in float64 (A m×n, B m×k).
func kernRefAtB(m, n, k int, a, b []float64) []float64 {
	return kernRefMul(n, k, m, a, 1, n, b)
}

// kernRefMul is the rows×cols product L·R over depth inner, with R
// row-major inner×cols and L(i, p) = l[i*rs+p*ps], so that one loop serves
// A and Aᵀ alike; each sum runs over p in order.
func kernRefMul(rows, cols, inner int, l []float64, rs, ps int, r []float64) []float64 {
	out := make([]float64, rows*cols)
	for i := 0; i < rows; i++ {
		for p := 0; p < inner; p++ {
			lip := l[i*rs+p*ps]
			for j := 0; j < cols; j++ {
				out[i*cols+j] += lip * r[p*cols+j]
			}
		}
	}
	return out
}

func TestKernGemm(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	params := kernGemmParamSets()
	for _, sh := range kernGemmShapes() {
		m, n, k := sh.m, sh.n, sh.k
		// The big shape is slow with the naive reference: a few params do.
		ps := params
		if m*n*k > 1e7 {
			ps = []GemmParams{params[4], params[9], params[11], {MC: 256, NC: 512, KC: 512, MR: 4, NR: 8, Threads: 2}}
		}
		a32, v32 := kernRandF32(rng, m*k), kernRandF32(rng, k*n)
		ah, vh := kernRandHalf(rng, m*k), kernRandHalf(rng, k*n)
		refAV := kernRefAV(m, n, k, kernF32To64(a32), kernF32To64(v32))
		refAVh := kernRound64ToHalf(kernRefAV(m, n, k, kernHalfTo64(ah), kernHalfTo64(vh)))
		// GemmAtB with (m', n', k') = (k, m, n): A is k×m, B is k×n, Z is m×n.
		at32, bt32 := kernRandF32(rng, k*m), kernRandF32(rng, k*n)
		ath, bth := kernRandHalf(rng, k*m), kernRandHalf(rng, k*n)
		refAtB := kernRefAtB(k, m, n, kernF32To64(at32), kernF32To64(bt32))
		refAtBh := kernRound64ToHalf(kernRefAtB(k, m, n, kernHalfTo64(ath), kernHalfTo64(bth)))
		inputs32 := [][]float32{a32, v32, at32, bt32}
		inputsH := [][]uint16{ah, vh, ath, bth}
		saved32, savedH := kernClone(inputs32), kernClone(inputsH)

		for _, p := range ps {
			name := fmt.Sprintf("%dx%dx%d/%+v", m, n, k, p)
			t.Run(name, func(t *testing.T) {
				kernRunF32(t, "GemmAV", m*n, refAV, func(y []float32) { GemmAV(p, m, n, k, a32, v32, y) })
				kernRunHalf(t, "GemmAVHalf", m*n, refAVh, func(y []uint16) { GemmAVHalf(p, m, n, k, ah, vh, y) })
				kernRunF32(t, "GemmAtB", m*n, refAtB, func(y []float32) { GemmAtB(p, k, m, n, at32, bt32, y) })
				kernRunHalf(t, "GemmAtBHalf", m*n, refAtBh, func(y []uint16) { GemmAtBHalf(p, k, m, n, ath, bth, y) })
			})
		}
		for i := range inputs32 {
			kernCheckUnchanged(t, fmt.Sprint("f32 #", i), saved32[i], inputs32[i])
			kernCheckUnchanged(t, fmt.Sprint("f16 #", i), savedH[i], inputsH[i])
		}
	}
}

func kernClone[T any](in [][]T) [][]T {
	out := make([][]T, len(in))
	for i, s := range in {
		out[i] = slices.Clone(s)
	}
	return out
}

func TestKernGemmShortSlicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("GemmAV with a short c did not panic")
		}
	}()
	GemmAV(GemmParams{MC: 16, NC: 64, KC: 32, MR: 2, NR: 4, Threads: 1}, 4, 4, 4,
		make([]float32, 16), make([]float32, 16), make([]float32, 15))
}
