package cpu

import "github.com/kerntune/kerntune/internal/half"

// kernHalfLUT is the shared half → float32 table; kernels index it directly.
var kernHalfLUT = half.Table()

// kernHalfToF32 converts src to float32 into dst (len(dst) values).
func kernHalfToF32(dst []float32, src []uint16) { half.ToFloat32Slice(dst, src) }

// kernF32ToHalf converts src to binary16 into dst (len(dst) values).
func kernF32ToHalf(dst []uint16, src []float32) { half.FromFloat32Slice(dst, src) }
