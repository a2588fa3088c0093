package kernels

import (
	"math"

	"github.com/kerntune/kerntune/internal/bf16"
	"github.com/kerntune/kerntune/internal/half"
)

// Encode converts float32 values to dt's little-endian bytes, as device
// buffers hold them.
func Encode(dt DType, xs []float32) []byte {
	if dt == F16 {
		h := make([]uint16, len(xs))
		half.FromFloat32Slice(h, xs)
		out := make([]byte, 2*len(h))
		for i, v := range h {
			out[2*i], out[2*i+1] = byte(v), byte(v>>8)
		}
		return out
	}
	if dt == BF16 {
		out := make([]byte, 2*len(xs))
		for i, v := range xs {
			b := bf16.FromFloat32(v)
			out[2*i], out[2*i+1] = byte(b), byte(b>>8)
		}
		return out
	}
	out := make([]byte, 4*len(xs))
	for i, v := range xs {
		u := math.Float32bits(v)
		out[4*i], out[4*i+1], out[4*i+2], out[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return out
}

// Decode converts dt's little-endian bytes to float32 values.
func Decode(dt DType, b []byte) []float32 {
	if dt == F16 {
		out := make([]float32, len(b)/2)
		for i := range out {
			out[i] = half.ToFloat32(uint16(b[2*i]) | uint16(b[2*i+1])<<8)
		}
		return out
	}
	if dt == BF16 {
		out := make([]float32, len(b)/2)
		for i := range out {
			out[i] = bf16.ToFloat32(uint16(b[2*i]) | uint16(b[2*i+1])<<8)
		}
		return out
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
	}
	return out
}
