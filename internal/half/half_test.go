package half

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestRoundTripAllHalves(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := ToFloat32(h)
		if math.IsNaN(float64(f)) {
			if FromFloat32(f)&0x7c00 != 0x7c00 || FromFloat32(f)&0x3ff == 0 {
				t.Fatalf("NaN %#04x did not stay NaN", h)
			}
			continue
		}
		if got := FromFloat32(f); got != h {
			t.Fatalf("round trip of %#04x (%g) gave %#04x", h, f, got)
		}
	}
}

func TestFromFloat32(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{0, 0},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{65504, 0x7bff},
		{65520, 0x7c00}, // halfway to the next binade rounds up to Inf
		{1e9, 0x7c00},
		{float32(math.Inf(-1)), 0xfc00},
		{5.960464477539063e-08, 0x0001}, // smallest subnormal
		{2.98e-08, 0x0000},              // just under half of it rounds to zero
		{1 + 1.0/2048, 0x3c00},          // tie between 1 and 1+2^-10 goes to even (1)
		{1 + 3.0/2048, 0x3c02},          // tie between odd and even goes to even
		{6.097555e-05, 0x03ff},          // largest subnormal
	}
	for _, tt := range tests {
		if got := FromFloat32(tt.in); got != tt.want {
			t.Errorf("FromFloat32(%g) = %#04x, want %#04x", tt.in, got, tt.want)
		}
	}
}

func TestRoundIsNearest(t *testing.T) {
	for _, f := range []float32{0.1, -0.333, 3.14159, 1000.7, 1e-6, -7e-5} {
		r := Round(f)
		h := FromFloat32(f)
		// Neighbouring halves must not be closer.
		for _, nb := range []uint16{h - 1, h + 1} {
			v := ToFloat32(nb)
			if math.Abs(float64(v-f)) < math.Abs(float64(r-f)) {
				t.Errorf("Round(%g) = %g but %g is closer", f, r, v)
			}
		}
	}
}

func TestSlicesMatchScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]float32, 1<<16)
	for i := range src {
		src[i] = math.Float32frombits(rng.Uint32())
	}
	src[0], src[1], src[2] = 65519.99, 65520, 6.1035156e-05
	dst := make([]uint16, len(src))
	FromFloat32Slice(dst, src)
	for i, f := range src {
		if want := FromFloat32(f); dst[i] != want {
			t.Fatalf("FromFloat32Slice(%g) = %#04x, FromFloat32 gives %#04x", f, dst[i], want)
		}
	}
	back := make([]float32, len(dst))
	ToFloat32Slice(back, dst)
	for i, h := range dst {
		if b, w := back[i], ToFloat32(h); b != w && !(b != b && w != w) {
			t.Fatalf("ToFloat32Slice(%#04x) = %g, want %g", h, b, w)
		}
	}
}
