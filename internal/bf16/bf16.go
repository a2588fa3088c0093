package bf16

import "math"

// ToFloat32 returns the exact float32 value of the bfloat16 b.
func ToFloat32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// FromFloat32 rounds f to the nearest bfloat16, ties to even, as CUDA's
// __float2bfloat16_rn and MLX's conversion do: values beyond the largest
// bfloat16 round to ±Inf, subnormals round like normal numbers (the
// format shares float32's exponent), and NaN stays NaN (quiet, its sign
// kept).
func FromFloat32(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 { // NaN: rounding could carry it to Inf
		return uint16(u>>16) | 0x0040
	}
	// Adding 0x7fff, plus one more when the kept half is odd, carries into
	// the upper half exactly when the dropped half is above the midpoint,
	// or at it with an odd kept half.
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// Round returns f rounded to the nearest bfloat16 value, as a float32.
func Round(f float32) float32 { return ToFloat32(FromFloat32(f)) }
