package cpu

import (
	"github.com/kerntune/kerntune/internal/half"

	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// kernRandF32 returns n values uniform in [-1, 1).
func kernRandF32(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = rng.Float32()*2 - 1
	}
	return s
}

// kernRandHalf returns n binary16 values uniform in [-1, 1) (before rounding).
func kernRandHalf(rng *rand.Rand, n int) []uint16 {
	s := make([]uint16, n)
	for i := range s {
		s[i] = half.FromFloat32(rng.Float32()*2 - 1)
	}
	return s
}

func kernF32To64(s []float32) []float64 {
	d := make([]float64, len(s))
	for i, v := range s {
		d[i] = float64(v)
	}
	return d
}

func kernHalfTo64(s []uint16) []float64 {
	d := make([]float64, len(s))
	for i, h := range s {
		d[i] = float64(half.ToFloat32(h))
	}
	return d
}

// kernRound64ToHalf rounds a reference result to binary16 and back, so that
// half outputs are compared with what an exact kernel would store.
func kernRound64ToHalf(s []float64) []float64 {
	d := make([]float64, len(s))
	for i, v := range s {
		d[i] = float64(half.ToFloat32(half.FromFloat32(float32(v))))
	}
	return d
}

// kernRelErr is ‖got−want‖₂/‖want‖₂ (absolute when want is all zero); NaN
// anywhere in got gives +Inf so that unwritten (poisoned) outputs fail.
func kernRelErr(got, want []float64) float64 {
	var num, den float64
	for i := range want {
		if math.IsNaN(got[i]) {
			return math.Inf(1)
		}
		d := got[i] - want[i]
		num += d * d
		den += want[i] * want[i]
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num / den)
}

// kernPoisonF32 and kernPoisonHalf fill an output with NaN before a call.
// kernRunF32 runs kernel name into a NaN-poisoned output of n elements and
// fails unless it is within 1e-5 of ref in relative norm.
func kernRunF32(t *testing.T, name string, n int, ref []float64, run func(y []float32)) {
	t.Helper()
	y := kernPoisonF32(n)
	run(y)
	kernCheckRelErr(t, name, kernF32To64(y), ref, 1e-5)
}

// kernRunHalf is kernRunF32 for binary16 output, within 1e-3.
func kernRunHalf(t *testing.T, name string, n int, ref []float64, run func(y []uint16)) {
	t.Helper()
	y := kernPoisonHalf(n)
	run(y)
	kernCheckRelErr(t, name, kernHalfTo64(y), ref, 1e-3)
}

// kernCheckRelErr fails unless got is within tol of want in relative norm.
func kernCheckRelErr(t *testing.T, name string, got, want []float64, tol float64) {
	t.Helper()
	if e := kernRelErr(got, want); e > tol {
		t.Errorf("%s rel err %.3g", name, e)
	}
}

func kernPoisonF32(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(math.NaN())
	}
	return s
}

func kernPoisonHalf(n int) []uint16 {
	s := make([]uint16, n)
	for i := range s {
		s[i] = 0x7e00
	}
	return s
}

// kernCheckUnchanged fails when a kernel wrote to one of its inputs.
func kernCheckUnchanged[T comparable](t *testing.T, name string, before, after []T) {
	t.Helper()
	if !slices.Equal(before, after) {
		t.Errorf("input %s was modified", name)
	}
}
