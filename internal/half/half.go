package half

import "math"

// table maps every half bit pattern to its float32 value; kernels convert
// with one load instead of bit twiddling.
var table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = convert(uint16(i))
	}
	return &t
}()

// ToFloat32 returns the exact float32 value of the half h.
func ToFloat32(h uint16) float32 { return table[h] }

// Table returns the conversion table, for kernels that index it directly.
func Table() *[1 << 16]float32 { return table }

func convert(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp == 0:
		if man == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: value = man · 2^-24.
		v := float32(man) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
}

// FromFloat32 rounds f to the nearest half (ties to even); values beyond
// the half range become ±Inf and NaN stays NaN.
func FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00 // quiet NaN
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal half (or zero): shift the full mantissa, rounding to even.
		if e < -10 {
			return sign
		}
		m := man | 0x800000
		shift := uint32(14 - e)
		h := m >> shift
		rem := m & (1<<shift - 1)
		halfway := uint32(1) << (shift - 1)
		if rem > halfway || (rem == halfway && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to Inf: that is the correct rounding
	}
	return sign | uint16(h)
}

// Round returns f rounded to the nearest half value, as a float32.
func Round(f float32) float32 { return table[FromFloat32(f)] }

// ToFloat32Slice converts src to float32 into dst (len(dst) values).
func ToFloat32Slice(dst []float32, src []uint16) {
	t := table
	src = src[:len(dst)]
	for i, h := range src {
		dst[i] = t[h]
	}
}

// FromFloat32Slice converts src to halves into dst (len(dst) values), as
// FromFloat32 does; the common normal-range case is written out in the loop
// because FromFloat32 is over the compiler's inlining budget.
func FromFloat32Slice(dst []uint16, src []float32) {
	src = src[:len(dst)]
	for i, f := range src {
		b := math.Float32bits(f)
		a := b & 0x7fffffff
		var h uint32
		if a-0x38800000 < 0x47800000-0x38800000 { // normal half
			h = (a + 0xc8000fff + a>>13&1) >> 13
		} else {
			h = uint32(FromFloat32(math.Float32frombits(a)))
		}
		dst[i] = uint16(b>>16&0x8000 | h)
	}
}
