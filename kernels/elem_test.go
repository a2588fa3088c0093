package kernels

import (
	"encoding/binary"
	"math"
	"testing"
)

// Every element type stores what it holds and reads it back; integers
// keep their sign and their 32 bits, bool is 0 or 1, floats round as their
// dtype does.
func TestElemRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		e    Elem
		in   []float32
		want []float64 // Value after a round trip
		size int
	}{
		{ElemFloat32, []float32{1.5, -0.1}, []float64{1.5, float64(float32(-0.1))}, 4},
		{ElemFloat16, []float32{1.5, 0.1}, []float64{1.5, float64(ElemFloat16.Round(0.1))}, 2},
		{ElemBFloat, []float32{1.5, 0.1}, []float64{1.5, float64(ElemBFloat.Round(0.1))}, 2},
		{ElemInt8, []float32{Int(-128), Int(127)}, []float64{-128, 127}, 1},
		{ElemUint8, []float32{Int(0), Int(255)}, []float64{0, 255}, 1},
		{ElemInt16, []float32{Int(-32768), Int(7)}, []float64{-32768, 7}, 2},
		{ElemUint16, []float32{Int(65535), Int(1)}, []float64{65535, 1}, 2},
		{ElemInt32, []float32{Int(math.MinInt32), Int(-1)}, []float64{math.MinInt32, -1}, 4},
		{ElemUint32, []float32{Int(math.MaxUint32), Int(0x7fc00001)}, []float64{math.MaxUint32, 0x7fc00001}, 4},
		{ElemInt64, []float32{Int(-5), Int(math.MaxInt32)}, []float64{-5, math.MaxInt32}, 8},
		{ElemUint64, []float32{Int(math.MaxUint32)}, []float64{math.MaxUint32}, 8},
		{ElemBool, []float32{Int(0), Int(1)}, []float64{0, 1}, 1},
	} {
		b := tc.e.Encode(tc.in)
		if len(b) != tc.size*len(tc.in) || tc.e.Size() != tc.size {
			t.Errorf("%s: %d bytes for %d elements, size %d", tc.e, len(b), len(tc.in), tc.e.Size())
			continue
		}
		got := tc.e.Decode(b, len(tc.in))
		for i, x := range got {
			if v := tc.e.Value(x); v != tc.want[i] {
				t.Errorf("%s element %d: %v after a round trip, want %v", tc.e, i, v, tc.want[i])
			}
		}
	}
	// A signed 64-bit element is sign-extended on the device.
	if v := int64(binary.LittleEndian.Uint64(ElemInt64.Encode([]float32{Int(-5)}))); v != -5 {
		t.Errorf("int64 -5 encodes as %d", v)
	}
	// init_value in each type: truncated and clamped for integers, as a cast.
	for _, tc := range []struct {
		e    Elem
		v    float64
		want float64
	}{{ElemInt8, 300, 127}, {ElemUint8, -3, 0}, {ElemInt32, -2.7, -2}, {ElemBool, 0.5, 1}, {ElemFloat16, 0.1, float64(ElemFloat16.Round(0.1))}} {
		if got := tc.e.Value(tc.e.Decode(tc.e.Fill(tc.v, 3), 3)[2]); got != tc.want {
			t.Errorf("%s filled with %v holds %v, want %v", tc.e, tc.v, got, tc.want)
		}
	}
	if _, err := ParseElem("float"); err == nil {
		t.Error(`ParseElem("float") accepted a Metal name`)
	}
}
