package metal

import (
	"errors"
	"fmt"
	"structs"
	"unsafe"

	"github.com/kerntune/kerntune/kernels/gpu"
)

// mtlSize is Metal's MTLSize: three NSUIntegers (unsigned long, 64 bits on
// both darwin/arm64 and darwin/amd64), 24 bytes with no padding.
//
// Passing it by value is the crux of calling
// dispatchThreadgroups:threadsPerThreadgroup: without cgo. A 24-byte
// aggregate of integers is neither an HFA nor an HVA and is larger than 16
// bytes, so:
//
//   - arm64 (AAPCS64 B.4, unchanged by Apple's variant): the caller copies it
//     to memory and passes a pointer to the copy in the next integer register;
//   - amd64 (System V, class MEMORY): it is copied onto the stack.
//
// purego (v0.11.3, struct_arm64.go placeStack / struct_amd64.go postMerger)
// implements exactly these rules for struct arguments of functions
// registered with purego.RegisterFunc, and returns such a struct through
// x8 (arm64) or a hidden first argument (amd64; objc_msgSend_stret). The
// signatures below are registered against objc_msgSend on darwin;
// abi_test.go registers them against C functions with the same C prototypes
// (on linux and darwin, amd64 and arm64, wherever a C compiler is found) and
// checks that every field arrives. The linux and darwin C ABIs agree for
// these calls: Apple's arm64 variant departs from AAPCS64 mainly for
// variadic functions and in packing arguments passed on the stack, and none
// of these has more than eight integer and eight floating-point arguments.
type mtlSize struct {
	_      structs.HostLayout
	Width  uint64
	Height uint64
	Depth  uint64
}

// Typed objc_msgSend signatures for the calls that purego's generic
// objc.ID.Send cannot express safely or cheaply: struct arguments and
// returns, double returns, pointer returns, and initialisers mixing BOOL,
// NSUInteger and double arguments. The receiver and selector are uintptr so
// that the same types build (and are tested) on every platform.
type (
	// -[MTLComputeCommandEncoder dispatchThreadgroups:threadsPerThreadgroup:]
	sendDispatchFn func(self, sel uintptr, groups, threads mtlSize)
	// -[MTLDevice maxThreadsPerThreadgroup] (objc_msgSend_stret on amd64)
	sendSizeFn func(self, sel uintptr) mtlSize
	// -[MTLCommandBuffer GPUStartTime] and GPUEndTime (CFTimeInterval)
	sendDoubleFn func(self, sel uintptr) float64
	// -[MTLBuffer contents], -[NSString UTF8String]
	sendPtrFn func(self, sel uintptr) unsafe.Pointer
	// -[MPSMatrixMultiplication initWithDevice:transposeLeft:transposeRight:
	//   resultRows:resultColumns:interiorColumns:alpha:beta:]
	sendMatMulInitFn func(self, sel, device uintptr, transLeft, transRight bool, rows, cols, inner uint64, alpha, beta float64) uintptr
	// -[MPSMatrixVectorMultiplication initWithDevice:transpose:rows:columns:alpha:beta:]
	sendMatVecInitFn func(self, sel, device uintptr, trans bool, rows, cols uint64, alpha, beta float64) uintptr
)

// grid converts a kernel launch to the two MTLSizes of a dispatch:
// threadgroups in x and y, threads per threadgroup in x.
func grid(groupsX, groupsY, threads int) (groups, perGroup mtlSize) {
	return mtlSize{Width: uint64(groupsX), Height: uint64(groupsY), Depth: 1},
		mtlSize{Width: uint64(threads), Height: 1, Depth: 1}
}

// launchSizes converts a kernel launch to the two MTLSizes of its
// dispatch and says which dispatch takes them: threadgroups in x and y
// (dispatchThreadgroups:threadsPerThreadgroup:), or, for an MLX kernel,
// threads in x, y, z (dispatchThreads:threadsPerThreadgroup:, as MLX
// launches fast.metal_kernel: its grid counts threads).
func launchSizes(g gpu.Launch) (size, perGroup mtlSize, threads bool, err error) {
	if g.ThreadGrid[0] > 0 {
		for i := range 3 {
			if g.ThreadGrid[i] <= 0 || g.Group[i] <= 0 {
				return mtlSize{}, mtlSize{}, false, fmt.Errorf("empty MLX launch %+v", g)
			}
		}
		return mtlSize{Width: uint64(g.ThreadGrid[0]), Height: uint64(g.ThreadGrid[1]), Depth: uint64(g.ThreadGrid[2])},
			mtlSize{Width: uint64(g.Group[0]), Height: uint64(g.Group[1]), Depth: uint64(g.Group[2])}, true, nil
	}
	if g.Grid[0] <= 0 || g.Grid[1] <= 0 || g.Threads <= 0 {
		return mtlSize{}, mtlSize{}, false, fmt.Errorf("empty launch %+v", g)
	}
	size, perGroup = grid(g.Grid[0], g.Grid[1], g.Threads)
	return size, perGroup, false, nil
}

// boundBytes is one argument bound by value with setBytes:length:atIndex:.
type boundBytes struct {
	index int
	data  []byte
}

// bytesArgs pairs a body's Bytes arguments (an MLX kernel's constant
// inputs, shapes, strides, ndims) with their contents for a case; setBytes
// takes at most 4 KB.
func bytesArgs(args []gpu.Arg, consts [][]byte) ([]boundBytes, error) {
	var out []boundBytes
	j := 0
	for i, a := range args {
		if a.Kind != gpu.Bytes {
			continue
		}
		if j >= len(consts) {
			return nil, fmt.Errorf("argument %s has no contents (%d given)", a.Name, len(consts))
		}
		if len(consts[j]) == 0 || len(consts[j]) > 4096 {
			return nil, fmt.Errorf("argument %s has %d bytes; setBytes binds 1..4096", a.Name, len(consts[j]))
		}
		out = append(out, boundBytes{index: i, data: consts[j]})
		j++
	}
	if j != len(consts) {
		return nil, errors.New("more argument contents than Bytes arguments")
	}
	return out, nil
}

// cString copies a NUL-terminated C string.
func cString(p unsafe.Pointer) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(p, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(p), n))
}
