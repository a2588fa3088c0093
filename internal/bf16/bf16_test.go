package bf16

import (
	"math"
	"math/rand/v2"
	"testing"
)

// nearest is the bfloat16 nearest f, found without FromFloat32's bit
// trick: of the two bfloat16 values around f (f's bits truncated, and the
// next one up in magnitude), the one nearer in float64, ties to the even
// significand. NaN maps to a quiet NaN of f's sign.
func nearest(f float32) uint16 {
	if f != f {
		return uint16(math.Float32bits(f)>>16) | 0x0040
	}
	lo := uint16(math.Float32bits(f) >> 16)
	if math.Float32bits(f)&0xffff == 0 {
		return lo
	}
	hi := lo + 1 // the next magnitude: for the largest finite one, Inf
	dlo := math.Abs(float64(f) - float64(ToFloat32(lo)))
	var dhi float64
	if hi&0x7fff == 0x7f80 {
		// Round-to-nearest treats Inf as the next value, 2^128: beyond the
		// largest finite value plus half its step f overflows.
		dhi = math.Ldexp(1, 128) - math.Abs(float64(f))
	} else {
		dhi = math.Abs(float64(f) - float64(ToFloat32(hi)))
	}
	switch {
	case dlo < dhi:
		return lo
	case dhi < dlo:
		return hi
	case lo&1 == 0:
		return lo
	}
	return hi
}

func TestFromFloat32(t *testing.T) {
	maxFinite := ToFloat32(0x7f7f)
	tests := []struct {
		name string
		f    float32
		want uint16
	}{
		{"one", 1, 0x3f80},
		{"minus two", -2, 0xc000},
		{"zero", 0, 0},
		{"minus zero", float32(math.Copysign(0, -1)), 0x8000},
		{"tie to even, down", math.Float32frombits(0x3f808000), 0x3f80},
		{"tie to even, up", math.Float32frombits(0x3f818000), 0x3f82},
		{"just above a tie", math.Float32frombits(0x3f808001), 0x3f81},
		{"just below a tie", math.Float32frombits(0x3f807fff), 0x3f80},
		{"largest finite", maxFinite, 0x7f7f},
		{"past the largest finite: Inf", math.Float32frombits(0x7f7f8000), 0x7f80},
		{"largest float32: Inf", math.MaxFloat32, 0x7f80},
		{"Inf", float32(math.Inf(1)), 0x7f80},
		{"-Inf", float32(math.Inf(-1)), 0xff80},
		{"smallest subnormal rounds to zero", math.Float32frombits(1), 0},
		{"subnormal tie to even", math.Float32frombits(0x00018000), 0x0002},
		{"NaN with low payload stays NaN", math.Float32frombits(0x7f800001), 0x7fc0},
		{"negative NaN", math.Float32frombits(0xffc00000), 0xffc0},
		{"pi", math.Pi, 0x4049},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FromFloat32(tt.f); got != tt.want {
				t.Errorf("FromFloat32(%g = %#08x) = %#04x, want %#04x", tt.f, math.Float32bits(tt.f), got, tt.want)
			}
			if got := nearest(tt.f); got != tt.want {
				t.Errorf("the independent rounding of %g gives %#04x, want %#04x (the table is wrong)", tt.f, got, tt.want)
			}
		})
	}
}

// Every bfloat16 survives the round trip, and FromFloat32 agrees with the
// independent nearest-value rounding on every float32 of a dense stride
// through all bit patterns, around every tie of one binade, and on random
// values.
func TestAgreesWithNearest(t *testing.T) {
	for b := 0; b < 1<<16; b++ {
		f := ToFloat32(uint16(b))
		if got := FromFloat32(f); got != uint16(b) && f == f {
			t.Fatalf("round trip of %#04x gave %#04x", b, got)
		}
	}
	check := func(u uint32) {
		f := math.Float32frombits(u)
		if got, want := FromFloat32(f), nearest(f); got != want {
			t.Fatalf("FromFloat32(%#08x) = %#04x, nearest %#04x", u, got, want)
		}
	}
	step := uint32(4093) // odd and prime: every low-half residue is visited
	for u := uint64(0); u <= math.MaxUint32; u += uint64(step) {
		check(uint32(u))
	}
	for hi := uint32(0x3f80); hi < 0x4000; hi++ { // one binade: every tie and its neighbours
		for _, lo := range []uint32{0x7ffe, 0x7fff, 0x8000, 0x8001, 0xffff, 0} {
			check(hi<<16 | lo)
			check((hi|0x8000)<<16 | lo)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		check(rng.Uint32())
	}
}

// Round's error is at most half a unit in the last place of the 8-bit
// significand, 2^-8 relative (the unit roundoff; f16's is 2^-11): the
// tolerance of bf16 results rests on it.
func TestRoundRelativeError(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1 << 18 {
		f := float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(20)-10)))
		if f == 0 {
			continue
		}
		rel := math.Abs(float64(Round(f))-float64(f)) / math.Abs(float64(f))
		if rel > math.Ldexp(1, -8) {
			t.Fatalf("Round(%g) = %g: relative error %g above 2^-8", f, Round(f), rel)
		}
	}
}
