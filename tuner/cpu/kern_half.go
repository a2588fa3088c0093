package cpu

import (
	"math"

	"github.com/kerntune/kerntune/internal/bf16"
	"github.com/kerntune/kerntune/internal/half"
)

// kernHalfLUT is the shared half → float32 table; kernels index it directly.
var kernHalfLUT = half.Table()

// kernHalfToF32 converts src to float32 into dst (len(dst) values).
func kernHalfToF32(dst []float32, src []uint16) { half.ToFloat32Slice(dst, src) }

// kernF32ToHalf converts src to binary16 into dst (len(dst) values).
func kernF32ToHalf(dst []uint16, src []float32) { half.FromFloat32Slice(dst, src) }

// kernBF16ToF32 converts bfloat16 src to float32 into dst (len(dst)
// values): a bfloat16 is the upper half of a float32's bits.
func kernBF16ToF32(dst []float32, src []uint16) {
	src = src[:len(dst)]
	for i, h := range src {
		dst[i] = math.Float32frombits(uint32(h) << 16)
	}
}

// kernF32ToBF16 rounds src to bfloat16 into dst (len(dst) values), to
// nearest even as bf16.FromFloat32 does; its NaN test is written out here
// so that the common case needs no call.
func kernF32ToBF16(dst []uint16, src []float32) {
	src = src[:len(dst)]
	for i, f := range src {
		u := math.Float32bits(f)
		if u&0x7fffffff > 0x7f800000 {
			dst[i] = bf16.FromFloat32(f)
			continue
		}
		dst[i] = uint16((u + 0x7fff + (u>>16)&1) >> 16)
	}
}

// kern16 is one 16-bit storage format of the CPU kernels, f16 or bf16:
// its conversions to and from float32 and its GEMV kernels. The f16 and
// bf16 kernels share their structure and differ only in these.
type kern16 struct {
	name    string
	toF32   func(dst []float32, src []uint16)
	fromF32 func(dst []uint16, src []float32)
	one     func(uint16) float32
	gemv    *[12]kernGemvF16Func
	// bf16 widens GEMM operands by a shift instead of the f16 table.
	bf16 bool
}

var (
	kernF16  = &kern16{name: "f16", toF32: kernHalfToF32, fromF32: kernF32ToHalf, one: half.ToFloat32, gemv: &kernGemvF16Table}
	kernBF16 = &kern16{name: "bf16", toF32: kernBF16ToF32, fromF32: kernF32ToBF16, one: bf16.ToFloat32, gemv: &kernGemvBF16Table, bf16: true}
)
