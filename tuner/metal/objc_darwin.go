//go:build darwin

package metal

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/ebitengine/purego/objc"
)

// Frameworks and libraries, loaded with dlopen by path (they live in the
// dyld shared cache; dlopen finds them there).
const (
	libObjCPath        = "/usr/lib/libobjc.A.dylib"
	libSystemPath      = "/usr/lib/libSystem.B.dylib"
	metalPath          = "/System/Library/Frameworks/Metal.framework/Metal"
	mpsPath            = "/System/Library/Frameworks/MetalPerformanceShaders.framework/MetalPerformanceShaders"
	coreGraphicsPath   = "/System/Library/Frameworks/CoreGraphics.framework/CoreGraphics"
	foundationPath     = "/System/Library/Frameworks/Foundation.framework/Foundation"
	coreFoundationPath = "/System/Library/Frameworks/CoreFoundation.framework/CoreFoundation"
	ioKitPath          = "/System/Library/Frameworks/IOKit.framework/IOKit"
)

// Constants from the SDK headers.
const (
	mpsDataTypeFloat32   = 0x10000000 | 32
	mpsDataTypeFloat16   = 0x10000000 | 16
	cfStringEncodingUTF8 = 0x08000100 // kCFStringEncodingUTF8
	nsUTF8StringEncoding = 4          // NSUTF8StringEncoding
	cfNumberSInt64Type   = 4          // kCFNumberSInt64Type
)

// runtimeLib holds the C functions and typed objc_msgSend variants the
// backend calls, loaded once.
type runtimeLib struct {
	createSystemDefaultDevice func() uintptr // MTLCreateSystemDefaultDevice: +1
	copyAllDevices            func() uintptr // MTLCopyAllDevices: NSArray, +1
	poolPush                  func() uintptr
	poolPop                   func(uintptr)
	pthreadSelf               func() uintptr

	msgSend uintptr // objc_msgSend, for the fixed-arity integer sends (msg0 …)

	sendDispatch   sendDispatchFn
	sendSize       sendSizeFn
	sendDouble     sendDoubleFn
	sendPtr        sendPtrFn
	sendMatMulInit sendMatMulInitFn
	sendMatVecInit sendMatVecInitFn

	// MetalPerformanceShaders; nil when the framework did not load.
	mpsSupportsDevice func(device uintptr) bool

	// IOKit and CoreFoundation, for the GPU core count; nil when not loaded.
	ioServiceMatching               func(name string) uintptr
	ioServiceGetMatchingService     func(mainPort uint32, matching uintptr) uint32
	ioRegistryEntryCreateCFProperty func(entry uint32, key, allocator uintptr, options uint32) uintptr
	ioObjectRelease                 func(obj uint32) int32
	cfStringCreateWithCString       func(alloc uintptr, s string, encoding uint32) uintptr
	cfNumberGetValue                func(number uintptr, theType int64, value unsafe.Pointer) bool
	cfGetTypeID                     func(cf uintptr) uint64
	cfNumberGetTypeID               func() uint64
	cfRelease                       func(cf uintptr)

	notes []string // what could not be loaded (optional parts), for the facts' log
}

var (
	rtOnce sync.Once
	rt     *runtimeLib
	rtErr  error
)

// loadRuntime dlopens the frameworks and registers the functions.
// purego.RegisterLibFunc panics when a symbol is missing; that is turned
// into an error here.
func loadRuntime() (*runtimeLib, error) {
	rtOnce.Do(func() {
		defer func() {
			if p := recover(); p != nil {
				rt, rtErr = nil, fmt.Errorf("loading the Metal runtime: %v", p)
			}
		}()
		rt, rtErr = load()
	})
	return rt, rtErr
}

func load() (*runtimeLib, error) {
	r := &runtimeLib{}
	libobjc, err := purego.Dlopen(libObjCPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("dlopen %s: %w", libObjCPath, err)
	}
	msgSend, err := purego.Dlsym(libobjc, "objc_msgSend")
	if err != nil {
		return nil, err
	}
	// On x86_64 a struct return larger than 16 bytes goes through
	// objc_msgSend_stret (hidden result pointer first); arm64 has no _stret
	// variant: objc_msgSend preserves x8, the indirect result register.
	msgSendStret := msgSend
	if runtime.GOARCH == "amd64" {
		if msgSendStret, err = purego.Dlsym(libobjc, "objc_msgSend_stret"); err != nil {
			return nil, err
		}
	}
	r.msgSend = msgSend
	purego.RegisterFunc(&r.sendDispatch, msgSend)
	purego.RegisterFunc(&r.sendSize, msgSendStret)
	purego.RegisterFunc(&r.sendDouble, msgSend) // doubles return in d0 / xmm0; _fpret is only for x86 long double
	purego.RegisterFunc(&r.sendPtr, msgSend)
	purego.RegisterFunc(&r.sendMatMulInit, msgSend)
	purego.RegisterFunc(&r.sendMatVecInit, msgSend)
	purego.RegisterLibFunc(&r.poolPush, libobjc, "objc_autoreleasePoolPush")
	purego.RegisterLibFunc(&r.poolPop, libobjc, "objc_autoreleasePoolPop")

	libSystem, err := purego.Dlopen(libSystemPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("dlopen %s: %w", libSystemPath, err)
	}
	purego.RegisterLibFunc(&r.pthreadSelf, libSystem, "pthread_self")

	// Foundation for NSString and NSProcessInfo; CoreGraphics because, in a
	// command-line tool, MTLCreateSystemDefaultDevice returns nil unless
	// CoreGraphics is loaded (Apple's documentation of the function).
	for _, p := range []string{foundationPath, coreGraphicsPath} {
		if _, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL); err != nil {
			r.notes = append(r.notes, fmt.Sprintf("dlopen %s: %v", p, err))
		}
	}
	metal, err := purego.Dlopen(metalPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("dlopen %s: %w", metalPath, err)
	}
	purego.RegisterLibFunc(&r.createSystemDefaultDevice, metal, "MTLCreateSystemDefaultDevice")
	purego.RegisterLibFunc(&r.copyAllDevices, metal, "MTLCopyAllDevices")

	if mps, err := purego.Dlopen(mpsPath, purego.RTLD_NOW|purego.RTLD_GLOBAL); err != nil {
		r.notes = append(r.notes, fmt.Sprintf("no MPS baseline: dlopen %s: %v", mpsPath, err))
	} else if sym, err := purego.Dlsym(mps, "MPSSupportsMTLDevice"); err != nil {
		r.notes = append(r.notes, fmt.Sprintf("no MPS baseline: %v", err))
	} else {
		purego.RegisterFunc(&r.mpsSupportsDevice, sym)
	}

	if err := r.loadIOKit(); err != nil {
		r.ioServiceMatching = nil
		r.notes = append(r.notes, "no GPU core count: "+err.Error())
	}
	return r, nil
}

func (r *runtimeLib) loadIOKit() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	iokit, err := purego.Dlopen(ioKitPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return err
	}
	cf, err := purego.Dlopen(coreFoundationPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return err
	}
	purego.RegisterLibFunc(&r.ioServiceGetMatchingService, iokit, "IOServiceGetMatchingService")
	purego.RegisterLibFunc(&r.ioRegistryEntryCreateCFProperty, iokit, "IORegistryEntryCreateCFProperty")
	purego.RegisterLibFunc(&r.ioObjectRelease, iokit, "IOObjectRelease")
	purego.RegisterLibFunc(&r.cfStringCreateWithCString, cf, "CFStringCreateWithCString")
	purego.RegisterLibFunc(&r.cfNumberGetValue, cf, "CFNumberGetValue")
	purego.RegisterLibFunc(&r.cfGetTypeID, cf, "CFGetTypeID")
	purego.RegisterLibFunc(&r.cfNumberGetTypeID, cf, "CFNumberGetTypeID")
	purego.RegisterLibFunc(&r.cfRelease, cf, "CFRelease")
	purego.RegisterLibFunc(&r.ioServiceMatching, iokit, "IOServiceMatching") // last: its non-nil marks IOKit usable
	return nil
}

// gpuCoreCount reads the "gpu-core-count" property of the GPU's IORegistry
// entry (class AGXAccelerator on Apple silicon), as ioreg shows it.
func (r *runtimeLib) gpuCoreCount() (int, error) {
	if r.ioServiceMatching == nil {
		return 0, errors.New("IOKit not loaded")
	}
	key := r.cfStringCreateWithCString(0, "gpu-core-count", cfStringEncodingUTF8)
	if key == 0 {
		return 0, errors.New("CFStringCreateWithCString failed")
	}
	defer r.cfRelease(key)
	for _, class := range []string{"AGXAccelerator", "IOAccelerator"} {
		matching := r.ioServiceMatching(class)
		if matching == 0 {
			continue
		}
		// kIOMainPortDefault is MACH_PORT_NULL; the call consumes matching.
		svc := r.ioServiceGetMatchingService(0, matching)
		if svc == 0 {
			continue
		}
		prop := r.ioRegistryEntryCreateCFProperty(svc, key, 0, 0)
		r.ioObjectRelease(svc)
		if prop == 0 {
			continue
		}
		var n int64
		ok := r.cfGetTypeID(prop) == r.cfNumberGetTypeID() && r.cfNumberGetValue(prop, cfNumberSInt64Type, unsafe.Pointer(&n))
		r.cfRelease(prop)
		if ok && n > 0 {
			return int(n), nil
		}
	}
	return 0, errors.New("no AGXAccelerator or IOAccelerator entry with gpu-core-count in the IORegistry")
}

// Selectors, registered once.
var sel struct {
	alloc, init, release, retain, count, objectAtIndex       objc.SEL
	initWithCString, utf8String, localizedDescription        objc.SEL
	processInfo, operatingSystemVersion                      objc.SEL
	setFastMathEnabled, fastMathEnabled                      objc.SEL
	setMathMode, mathMode                                    objc.SEL
	setLanguageVersion, languageVersion                      objc.SEL
	name, supportsFamily, maxThreadgroupMemoryLength         objc.SEL
	recommendedMaxWorkingSetSize, maxThreadsPerThreadgroup   objc.SEL
	hasUnifiedMemory, maxBufferLength, newCommandQueue       objc.SEL
	newLibraryWithSource, newFunctionWithName, newPipeline   objc.SEL
	maxTotalThreadsPerThreadgroup, staticThreadgroupMemory   objc.SEL
	threadExecutionWidth, newBufferWithLength, contents      objc.SEL
	commandBuffer, computeCommandEncoder, blitCommandEncoder objc.SEL
	setComputePipelineState, setBuffer, setBytes, dispatch   objc.SEL
	endEncoding, commit, waitUntilCompleted, status, err     objc.SEL
	gpuStartTime, gpuEndTime, copyBuffer, dispatchThreads    objc.SEL
	matrixDescriptor, vectorDescriptor, initWithBuffer       objc.SEL
	initMatMul, initMatVec, encodeMatMul, encodeMatVec       objc.SEL
	commandBufferUnretained, concurrentEncoder, barrier      objc.SEL
	newFence, updateFence, waitForFence                      objc.SEL
	respondsToSelector, architecture                         objc.SEL
}

var selOnce sync.Once

func registerSelectors() {
	selOnce.Do(func() {
		r := objc.RegisterName
		sel.alloc, sel.init, sel.release, sel.retain = r("alloc"), r("init"), r("release"), r("retain")
		sel.count, sel.objectAtIndex = r("count"), r("objectAtIndex:")
		sel.initWithCString, sel.utf8String = r("initWithCString:encoding:"), r("UTF8String")
		sel.localizedDescription = r("localizedDescription")
		sel.processInfo, sel.operatingSystemVersion = r("processInfo"), r("operatingSystemVersion")
		sel.setFastMathEnabled, sel.fastMathEnabled = r("setFastMathEnabled:"), r("fastMathEnabled")
		sel.setMathMode, sel.mathMode = r("setMathMode:"), r("mathMode")
		sel.setLanguageVersion, sel.languageVersion = r("setLanguageVersion:"), r("languageVersion")
		sel.name, sel.supportsFamily = r("name"), r("supportsFamily:")
		sel.maxThreadgroupMemoryLength = r("maxThreadgroupMemoryLength")
		sel.recommendedMaxWorkingSetSize = r("recommendedMaxWorkingSetSize")
		sel.maxThreadsPerThreadgroup = r("maxThreadsPerThreadgroup")
		sel.hasUnifiedMemory, sel.maxBufferLength = r("hasUnifiedMemory"), r("maxBufferLength")
		sel.newCommandQueue = r("newCommandQueue")
		sel.newLibraryWithSource = r("newLibraryWithSource:options:error:")
		sel.newFunctionWithName = r("newFunctionWithName:")
		sel.newPipeline = r("newComputePipelineStateWithFunction:error:")
		sel.maxTotalThreadsPerThreadgroup = r("maxTotalThreadsPerThreadgroup")
		sel.staticThreadgroupMemory = r("staticThreadgroupMemoryLength")
		sel.threadExecutionWidth = r("threadExecutionWidth")
		sel.newBufferWithLength, sel.contents = r("newBufferWithLength:options:"), r("contents")
		sel.commandBuffer = r("commandBuffer")
		sel.computeCommandEncoder, sel.blitCommandEncoder = r("computeCommandEncoder"), r("blitCommandEncoder")
		sel.setComputePipelineState = r("setComputePipelineState:")
		sel.setBuffer, sel.setBytes = r("setBuffer:offset:atIndex:"), r("setBytes:length:atIndex:")
		sel.dispatch = r("dispatchThreadgroups:threadsPerThreadgroup:")
		sel.dispatchThreads = r("dispatchThreads:threadsPerThreadgroup:")
		sel.endEncoding, sel.commit, sel.waitUntilCompleted = r("endEncoding"), r("commit"), r("waitUntilCompleted")
		sel.status, sel.err = r("status"), r("error")
		sel.gpuStartTime, sel.gpuEndTime = r("GPUStartTime"), r("GPUEndTime")
		sel.copyBuffer = r("copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size:")
		sel.matrixDescriptor = r("matrixDescriptorWithRows:columns:rowBytes:dataType:")
		sel.vectorDescriptor = r("vectorDescriptorWithLength:dataType:")
		sel.initWithBuffer = r("initWithBuffer:descriptor:")
		sel.initMatMul = r("initWithDevice:transposeLeft:transposeRight:resultRows:resultColumns:interiorColumns:alpha:beta:")
		sel.initMatVec = r("initWithDevice:transpose:rows:columns:alpha:beta:")
		sel.encodeMatMul = r("encodeToCommandBuffer:leftMatrix:rightMatrix:resultMatrix:")
		sel.encodeMatVec = r("encodeToCommandBuffer:inputMatrix:inputVector:resultVector:")
		sel.commandBufferUnretained = r("commandBufferWithUnretainedReferences")
		sel.concurrentEncoder = r("computeCommandEncoderWithDispatchType:")
		sel.barrier = r("memoryBarrierWithScope:")
		sel.newFence, sel.updateFence, sel.waitForFence = r("newFence"), r("updateFence:"), r("waitForFence:")
		sel.respondsToSelector, sel.architecture = r("respondsToSelector:"), r("architecture")
	})
}

// Fixed-arity sends for the timing path's hot calls, whose arguments and
// result are all integers or pointers: purego.SyscallN passes them in
// integer registers (and the stack past the sixth on amd64, the eighth on
// arm64: none of these goes that far), with no reflection, where
// objc.ID.Send converts a variadic []any on every call. The receiver and
// selector come first, as objc_msgSend takes them.

// msg0 sends a message without arguments and returns the integer result.
func (r *runtimeLib) msg0(self, op uintptr) uintptr {
	r1, _, _ := purego.SyscallN(r.msgSend, self, op)
	return r1
}

// msg1 sends a message with one integer or object argument.
func (r *runtimeLib) msg1(self, op, a uintptr) uintptr {
	r1, _, _ := purego.SyscallN(r.msgSend, self, op, a)
	return r1
}

// msg3 sends a message with three integer or object arguments
// (setBuffer:offset:atIndex:).
func (r *runtimeLib) msg3(self, op, a, b, c uintptr) {
	purego.SyscallN(r.msgSend, self, op, a, b, c)
}

// msgBytes sends setBytes:length:atIndex:, whose first argument points at
// Go memory: converted in the call itself, so that SyscallN's
// go:uintptrescapes keeps it alive for the call (Metal copies the bytes).
func (r *runtimeLib) msgBytes(self, op uintptr, p unsafe.Pointer, n, index uintptr) {
	purego.SyscallN(r.msgSend, self, op, uintptr(p), n, index)
}

// withPool runs fn inside an autorelease pool on the calling OS thread.
// Objects returned autoreleased (command buffers, encoders, NSErrors,
// descriptors) are released when the pool pops; the pool must be pushed and
// popped on one thread, so the goroutine is locked to it meanwhile.
func (r *runtimeLib) withPool(fn func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pool := r.poolPush()
	defer r.poolPop(pool)
	fn()
}

// nsString returns a new NSString (+1: the caller releases it). purego
// passes s as a NUL-terminated copy.
func nsString(s string) objc.ID {
	str := objc.ID(objc.GetClass("NSString")).Send(sel.alloc)
	return str.Send(sel.initWithCString, s, uint64(nsUTF8StringEncoding))
}

// goString copies an NSString's UTF-8 bytes.
func (r *runtimeLib) goString(s objc.ID) string {
	if s == 0 {
		return ""
	}
	return cString(r.sendPtr(uintptr(s), uintptr(sel.utf8String)))
}

// errorText is an NSError's localizedDescription (for a failed Metal
// compile: the compiler's messages), or a placeholder for nil.
func (r *runtimeLib) errorText(e objc.ID) string {
	if e == 0 {
		return "(no NSError given)"
	}
	return r.goString(e.Send(sel.localizedDescription))
}

func release(id objc.ID) {
	if id != 0 {
		id.Send(sel.release)
	}
}

func retain(id objc.ID) objc.ID {
	if id != 0 {
		id.Send(sel.retain)
	}
	return id
}
