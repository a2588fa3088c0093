package cudadrv

import (
	"fmt"
	"reflect"
	"strings"
	"unsafe"
)

// DevPtr is a device address (CUdeviceptr).
type DevPtr uint64

// Add offsets a device pointer by bytes.
func (p DevPtr) Add(bytes int64) DevPtr { return DevPtr(int64(p) + bytes) }

// RawArg passes an arbitrary by-value kernel parameter (a struct, a
// CUtensorMap, ...) as its exact bytes; its layout must match the kernel's
// parameter type.
type RawArg []byte

// Args is a packed kernel argument list in the form cuLaunchKernel takes
// as kernelParams: an array with one pointer per parameter, each pointing
// to a copy of that parameter's value. Pack once with PackArgs and reuse it
// for many launches; an Args is read-only after packing and may be shared.
type Args struct {
	slots []uint64         // one 8-byte, 8-aligned slot per scalar argument
	raw   [][]byte         // storage of RawArg values
	ptrs  []unsafe.Pointer // ptrs[i] points at the value of argument i
	sizes []int            // size in bytes of argument i as the kernel reads it
	types []reflect.Type   // Go type of argument i, for messages
}

// PackArgs copies kernel arguments into the kernelParams layout. Accepted
// types and the C types they match:
//
//	DevPtr            T* (any device pointer, 8 bytes)
//	int32, uint32     int, unsigned int
//	int64, uint64     long long, unsigned long long, size_t
//	float32, float64  float, double
//	int8, uint8, int16, uint16   char/unsigned char, short/unsigned short (also __half bits)
//	RawArg            any by-value type, given as its bytes
//
// Go int, uint, uintptr and bool are rejected: their C counterpart is
// ambiguous; convert explicitly.
func PackArgs(args ...any) (*Args, error) {
	p := &Args{
		slots: make([]uint64, len(args)),
		ptrs:  make([]unsafe.Pointer, len(args)),
		sizes: make([]int, len(args)),
		types: make([]reflect.Type, len(args)),
	}
	for i, a := range args {
		slot := unsafe.Pointer(&p.slots[i])
		p.ptrs[i] = slot
		p.types[i] = reflect.TypeOf(a)
		switch v := a.(type) {
		case DevPtr:
			*(*uint64)(slot) = uint64(v)
			p.sizes[i] = 8
		case int32:
			*(*int32)(slot) = v
			p.sizes[i] = 4
		case uint32:
			*(*uint32)(slot) = v
			p.sizes[i] = 4
		case int64:
			*(*int64)(slot) = v
			p.sizes[i] = 8
		case uint64:
			*(*uint64)(slot) = v
			p.sizes[i] = 8
		case float32:
			*(*float32)(slot) = v
			p.sizes[i] = 4
		case float64:
			*(*float64)(slot) = v
			p.sizes[i] = 8
		case int8:
			*(*int8)(slot) = v
			p.sizes[i] = 1
		case uint8:
			*(*uint8)(slot) = v
			p.sizes[i] = 1
		case int16:
			*(*int16)(slot) = v
			p.sizes[i] = 2
		case uint16:
			*(*uint16)(slot) = v
			p.sizes[i] = 2
		case RawArg:
			if len(v) == 0 {
				return nil, fmt.Errorf("cudadrv: kernel argument %d: empty RawArg", i)
			}
			b := make([]byte, len(v))
			copy(b, v)
			p.raw = append(p.raw, b)
			p.ptrs[i] = unsafe.Pointer(&b[0])
			p.sizes[i] = len(b)
		case int, uint, uintptr:
			return nil, fmt.Errorf("cudadrv: kernel argument %d has Go type %T whose C size is ambiguous; use int32/uint32 (C int) or int64/uint64 (long long, size_t)", i, a)
		case nil:
			return nil, fmt.Errorf("cudadrv: kernel argument %d is nil; use DevPtr(0) for a null pointer", i)
		default:
			return nil, fmt.Errorf("cudadrv: kernel argument %d has unsupported type %T (want DevPtr, int32, uint32, int64, uint64, float32, float64, int8, uint8, int16, uint16 or RawArg)", i, a)
		}
	}
	return p, nil
}

// Len is the number of arguments.
func (p *Args) Len() int {
	if p == nil {
		return 0
	}
	return len(p.ptrs)
}

// Size returns the size in bytes of argument i as the kernel reads it.
func (p *Args) Size(i int) int { return p.sizes[i] }

// Bytes returns a copy of the bytes argument i's pointer refers to, as the
// driver copies them into the launch (size Size(i)).
func (p *Args) Bytes(i int) []byte {
	b := unsafe.Slice((*byte)(p.ptrs[i]), p.sizes[i])
	return append([]byte(nil), b...)
}

// String lists the argument types, for messages.
func (p *Args) String() string {
	if p == nil {
		return "[]"
	}
	names := make([]string, len(p.types))
	for i, t := range p.types {
		names[i] = t.String()
	}
	return "[" + strings.Join(names, " ") + "]"
}

// kernelParams returns the void** array for cuLaunchKernel (nil when there
// are no arguments). The caller must keep p alive until the call returns.
func (p *Args) kernelParams() *unsafe.Pointer {
	if p == nil || len(p.ptrs) == 0 {
		return nil
	}
	return &p.ptrs[0]
}

// AsBytes views a slice of plain values (float32, uint16, int32, ...) as its
// bytes without copying, for CopyHtoD and CopyDtoH.
func AsBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(zero)))
}
