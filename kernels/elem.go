package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/kerntune/kerntune/internal/bf16"
	"github.com/kerntune/kerntune/internal/half"
)

// Elem is the element type of one operand as the device stores it, named
// as MLX names dtypes. The empty Elem is the problem's DType: the operands
// of the built-in families, and the "dtype" buffers of a spec.
//
// Problems hold every operand in a []float32. A float operand holds its
// values (exactly representable in the element type); an integer or bool
// operand holds the bits of its value, as a 32-bit integer, in each
// float32 (math.Float32frombits), so that packed uint32 weights keep all
// 32 bits. 64-bit integer operands are therefore limited to 32-bit values.
type Elem string

// The element types a spec buffer may have.
const (
	ElemDType   Elem = ""
	ElemFloat32 Elem = "float32"
	ElemFloat16 Elem = "float16"
	ElemBFloat  Elem = "bfloat16"
	ElemInt8    Elem = "int8"
	ElemInt16   Elem = "int16"
	ElemInt32   Elem = "int32"
	ElemInt64   Elem = "int64"
	ElemUint8   Elem = "uint8"
	ElemUint16  Elem = "uint16"
	ElemUint32  Elem = "uint32"
	ElemUint64  Elem = "uint64"
	ElemBool    Elem = "bool"
)

// Elems lists the named element types in MLX's order of its dtype list.
var Elems = []Elem{ElemFloat32, ElemFloat16, ElemBFloat, ElemInt8, ElemInt16, ElemInt32, ElemInt64, ElemUint8, ElemUint16, ElemUint32, ElemUint64, ElemBool}

// ParseElem checks an element type name.
func ParseElem(s string) (Elem, error) {
	for _, e := range Elems {
		if string(e) == s {
			return e, nil
		}
	}
	names := make([]string, len(Elems))
	for i, e := range Elems {
		names[i] = string(e)
	}
	return "", fmt.Errorf("%q is not a dtype (allowed: %s)", s, strings.Join(names, ", "))
}

// ElemOf is the element type of dtype dt.
func ElemOf(dt DType) Elem {
	switch dt {
	case F16:
		return ElemFloat16
	case BF16:
		return ElemBFloat
	}
	return ElemFloat32
}

// In resolves ElemDType to dt's element type.
func (e Elem) In(dt DType) Elem {
	if e == ElemDType {
		return ElemOf(dt)
	}
	return e
}

// Size is the bytes of one element.
func (e Elem) Size() int {
	switch e {
	case ElemInt8, ElemUint8, ElemBool:
		return 1
	case ElemFloat16, ElemBFloat, ElemInt16, ElemUint16:
		return 2
	case ElemInt64, ElemUint64:
		return 8
	}
	return 4
}

// IsFloat reports whether e holds floating-point values.
func (e Elem) IsFloat() bool { return e == ElemFloat32 || e == ElemFloat16 || e == ElemBFloat }

// Signed reports whether an integer element type is signed.
func (e Elem) Signed() bool {
	return e == ElemInt8 || e == ElemInt16 || e == ElemInt32 || e == ElemInt64
}

// MetalName is MLX's Metal name of the type (get_type_string).
func (e Elem) MetalName() string {
	switch e {
	case ElemFloat32:
		return "float"
	case ElemFloat16:
		return "float16_t"
	case ElemBFloat:
		return "bfloat16_t"
	case ElemBool:
		return "bool"
	}
	return string(e) + "_t"
}

// IntRange is the range of values an integer operand can hold here: the
// type's, cut to 32 bits for the 64-bit types (see Elem).
func (e Elem) IntRange() (lo, hi int64) {
	switch e {
	case ElemBool:
		return 0, 1
	case ElemInt8:
		return math.MinInt8, math.MaxInt8
	case ElemInt16:
		return math.MinInt16, math.MaxInt16
	case ElemInt32, ElemInt64:
		return math.MinInt32, math.MaxInt32
	case ElemUint8:
		return 0, math.MaxUint8
	case ElemUint16:
		return 0, math.MaxUint16
	}
	return 0, math.MaxUint32
}

// Int is the container float32 of an integer value (see Elem).
func Int(v int64) float32 { return math.Float32frombits(uint32(v)) }

// Value is the value one element holds, for the float64 reference.
func (e Elem) Value(x float32) float64 {
	if e.IsFloat() || e == ElemDType {
		return float64(x)
	}
	b := math.Float32bits(x)
	if e.Signed() {
		return float64(int32(b))
	}
	return float64(b)
}

// Round makes x a value of float type e (round to nearest even); integer
// containers are returned unchanged.
func (e Elem) Round(x float32) float32 { return dtypeOf(e).Round(x) }

// Encode writes the elements as the device holds them, little-endian:
// float types as Encode does for their dtype.
func (e Elem) Encode(xs []float32) []byte {
	if e.IsFloat() {
		return Encode(dtypeOf(e), xs)
	}
	out := make([]byte, 0, len(xs)*e.Size())
	for _, x := range xs {
		out = e.append(out, x)
	}
	return out
}

func (e Elem) append(out []byte, x float32) []byte {
	bits := math.Float32bits(x)
	switch e {
	case ElemFloat32:
		return binary.LittleEndian.AppendUint32(out, bits)
	case ElemFloat16:
		return binary.LittleEndian.AppendUint16(out, half.FromFloat32(x))
	case ElemBFloat:
		return binary.LittleEndian.AppendUint16(out, bf16.FromFloat32(x))
	case ElemInt8, ElemUint8:
		return append(out, byte(bits))
	case ElemBool:
		return append(out, b2byte(bits != 0))
	case ElemInt16, ElemUint16:
		return binary.LittleEndian.AppendUint16(out, uint16(bits))
	case ElemInt64:
		return binary.LittleEndian.AppendUint64(out, uint64(int64(int32(bits))))
	case ElemUint64:
		return binary.LittleEndian.AppendUint64(out, uint64(bits))
	}
	return binary.LittleEndian.AppendUint32(out, bits)
}

func b2byte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// Decode reads n elements back into containers (see Elem): float types
// as Decode does for their dtype; a 64-bit value beyond 32 bits is
// clamped, which verification then reports.
func (e Elem) Decode(b []byte, n int) []float32 {
	if e.IsFloat() {
		return Decode(dtypeOf(e), b[:n*e.Size()])
	}
	out := make([]float32, n)
	sz := e.Size()
	for i := range out {
		p := b[i*sz:]
		switch e {
		case ElemInt8:
			out[i] = Int(int64(int8(p[0])))
		case ElemUint8, ElemBool:
			out[i] = Int(int64(p[0]))
		case ElemInt16:
			out[i] = Int(int64(int16(binary.LittleEndian.Uint16(p))))
		case ElemUint16:
			out[i] = Int(int64(binary.LittleEndian.Uint16(p)))
		case ElemInt64:
			v := int64(binary.LittleEndian.Uint64(p))
			out[i] = Int(min(max(v, math.MinInt32), math.MaxInt32))
		case ElemUint64:
			out[i] = Int(int64(min(binary.LittleEndian.Uint64(p), math.MaxUint32)))
		default:
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(p))
		}
	}
	return out
}

// Poison is a byte pattern that no kernel writes by accident: NaN for the
// float types, and for integers a value far from what small test problems
// produce (0x7fc00000 in 32 bits, 0x7e00 in 16, 0xa5 in 8).
func (e Elem) Poison() []byte {
	switch e.Size() {
	case 1:
		return []byte{0xa5}
	case 2:
		if e == ElemBFloat {
			return []byte{0xc0, 0x7f}
		}
		return []byte{0x00, 0x7e}
	case 8:
		return []byte{0x00, 0x00, 0xc0, 0x7f, 0x00, 0x00, 0xc0, 0x7f}
	}
	return []byte{0x00, 0x00, 0xc0, 0x7f}
}

// Fill is n elements of value v as the device holds them (MLX's
// init_value: a float converted to each output's dtype).
func (e Elem) Fill(v float64, n int) []byte {
	var x float32
	switch {
	case e.IsFloat():
		x = e.Round(float32(v))
	case e == ElemBool:
		x = Int(int64(b2byte(v != 0)))
	default:
		lo, hi := e.IntRange()
		x = Int(int64(math.Max(float64(lo), math.Min(float64(hi), math.Trunc(v)))))
	}
	one := e.append(nil, x)
	out := make([]byte, 0, n*len(one))
	for range n {
		out = append(out, one...)
	}
	return out
}
