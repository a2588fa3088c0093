package cpu

import (
	"github.com/kerntune/kerntune/internal/half"

	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// kernRand returns n values uniform in [-1, 1), stored with from (so
// uniform before rounding).
func kernRand[T any](rng *rand.Rand, n int, from func(float32) T) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = from(rng.Float32()*2 - 1)
	}
	return s
}

// kernTo64 widens the elements of s, read with to.
func kernTo64[T any](s []T, to func(T) float32) []float64 {
	d := make([]float64, len(s))
	for i, v := range s {
		d[i] = float64(to(v))
	}
	return d
}

// kernFill is n copies of v.
func kernFill[T any](n int, v T) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func kernF32(x float32) float32 { return x }

// kernRandF32 returns n values uniform in [-1, 1).
func kernRandF32(rng *rand.Rand, n int) []float32 { return kernRand(rng, n, kernF32) }

// kernRandHalf returns n binary16 values uniform in [-1, 1) (before rounding).
func kernRandHalf(rng *rand.Rand, n int) []uint16 { return kernRand(rng, n, half.FromFloat32) }

func kernF32To64(s []float32) []float64 { return kernTo64(s, kernF32) }

func kernHalfTo64(s []uint16) []float64 { return kernTo64(s, half.ToFloat32) }

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

func kernPoisonF32(n int) []float32 { return kernFill(n, float32(math.NaN())) }

func kernPoisonHalf(n int) []uint16 { return kernFill[uint16](n, 0x7e00) }

// kernCheckUnchanged fails when a kernel wrote to one of its inputs.
func kernCheckUnchanged[T comparable](t *testing.T, name string, before, after []T) {
	t.Helper()
	if !slices.Equal(before, after) {
		t.Errorf("input %s was modified", name)
	}
}
