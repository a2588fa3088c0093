package cldrv

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// clFuncs are the entry points. The Go signatures mirror CL/cl.h: cl_int →
// int32, cl_uint and cl_bool → uint32, cl_ulong and cl_bitfield → uint64,
// size_t → uintptr, opaque handles (cl_platform_id, cl_device_id,
// cl_context, cl_command_queue, cl_mem, cl_program, cl_kernel, cl_event) →
// uintptr, out-parameters → pointers. Callbacks are always passed as NULL.
type clFuncs struct {
	clGetPlatformIDs          func(n uint32, platforms *uintptr, numRet *uint32) int32
	clGetPlatformInfo         func(p uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	clGetDeviceIDs            func(p uintptr, typ uint64, n uint32, devices *uintptr, numRet *uint32) int32
	clGetDeviceInfo           func(d uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	clCreateContext           func(props unsafe.Pointer, n uint32, devices *uintptr, notify, user uintptr, errRet *int32) uintptr
	clReleaseContext          func(c uintptr) int32
	clCreateCommandQueue      func(c, d uintptr, props uint64, errRet *int32) uintptr
	clReleaseCommandQueue     func(q uintptr) int32
	clFinish                  func(q uintptr) int32
	clCreateBuffer            func(c uintptr, flags uint64, size uintptr, host unsafe.Pointer, errRet *int32) uintptr
	clReleaseMemObject        func(m uintptr) int32
	clEnqueueWriteBuffer      func(q, m uintptr, blocking uint32, offset, size uintptr, ptr unsafe.Pointer, nWait uint32, wait *uintptr, ev *uintptr) int32
	clEnqueueReadBuffer       func(q, m uintptr, blocking uint32, offset, size uintptr, ptr unsafe.Pointer, nWait uint32, wait *uintptr, ev *uintptr) int32
	clEnqueueFillBuffer       func(q, m uintptr, pattern unsafe.Pointer, patternSize, offset, size uintptr, nWait uint32, wait *uintptr, ev *uintptr) int32
	clCreateProgramWithSource func(c uintptr, n uint32, strs **byte, lengths *uintptr, errRet *int32) uintptr
	clBuildProgram            func(p uintptr, n uint32, devices *uintptr, options *byte, notify, user uintptr) int32
	clCreateProgramWithBinary func(c uintptr, n uint32, devices *uintptr, lengths *uintptr, bins **byte, status *int32, errRet *int32) uintptr
	clGetProgramInfo          func(p uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	clGetProgramBuildInfo     func(p, d uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	clReleaseProgram          func(p uintptr) int32
	clCreateKernel            func(p uintptr, name *byte, errRet *int32) uintptr
	clReleaseKernel           func(k uintptr) int32
	clSetKernelArg            func(k uintptr, index uint32, size uintptr, value unsafe.Pointer) int32
	clGetKernelWorkGroupInfo  func(k, d uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	clEnqueueNDRangeKernel    func(q, k uintptr, dims uint32, offset, global, local *uintptr, nWait uint32, wait *uintptr, ev *uintptr) int32
	clWaitForEvents           func(n uint32, events *uintptr) int32
	clGetEventProfilingInfo   func(e uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	clReleaseEvent            func(e uintptr) int32
}

// Constants from CL/cl.h.
const (
	clSuccess          = 0
	clDeviceNotFound   = -1
	clPlatformNotFound = -1001

	platformName    = 0x0902
	platformVendor  = 0x0903
	platformVersion = 0x0901

	deviceType                     = 0x1000
	deviceMaxComputeUnits          = 0x1002
	deviceMaxWorkGroupSize         = 0x1004
	deviceMaxClockFrequency        = 0x100C
	deviceMaxMemAllocSize          = 0x1010
	deviceGlobalCacheSize          = 0x101E
	deviceGlobalMemSize            = 0x101F
	deviceLocalMemSize             = 0x1023
	deviceTimerResolution          = 0x1025
	deviceName                     = 0x102B
	deviceVendor                   = 0x102C
	deviceDriverVersion            = 0x102D
	deviceVersion                  = 0x102F
	deviceExtensions               = 0x1030
	deviceOpenCLCVersion           = 0x103D
	programBuildLog                = 0x1183
	kernelWorkGroupSize            = 0x11B0
	kernelLocalMemSize             = 0x11B2
	profilingCommandStart          = 0x1282
	profilingCommandEnd            = 0x1283
	memReadWrite                   = 1 << 0
	queueProfilingEnable           = 1 << 1
	clTrue                         = 1
	deviceTypeAll                  = 0xFFFFFFFF
	DeviceTypeCPU           uint64 = 1 << 1
	DeviceTypeGPU           uint64 = 1 << 2
)

// libNames are tried in order; a bare name goes through the dynamic loader.
func libNames() []string {
	if runtime.GOOS == "darwin" {
		return []string{"/System/Library/Frameworks/OpenCL.framework/OpenCL"}
	}
	return []string{"libOpenCL.so.1", "libOpenCL.so"}
}

// Lib is the loaded OpenCL library. Its methods may be called from any
// goroutine (the OpenCL 1.2 API is thread-safe except clSetKernelArg on
// one kernel, which Kernel serialises).
type Lib struct {
	f    clFuncs
	Path string
}

var (
	defaultOnce sync.Once
	defaultLib  *Lib
	defaultErr  error
)

// Load opens the default OpenCL library once and caches the result. A
// missing library gives an error wrapping ErrNoDriver.
func Load() (*Lib, error) {
	defaultOnce.Do(func() { defaultLib, defaultErr = LoadWith("") })
	return defaultLib, defaultErr
}

// LoadWith opens the OpenCL library at path, or the default names when path
// is empty; it is not cached.
func LoadWith(path string) (*Lib, error) {
	if !dlSupported {
		return nil, fmt.Errorf("%w: loading shared libraries is not supported on %s", ErrNoDriver, runtime.GOOS)
	}
	names := libNames()
	if path != "" {
		names = []string{path}
	}
	var h uintptr
	var fails []string
	for _, n := range names {
		var err error
		if h, err = dlopen(n); err == nil {
			path = n
			break
		}
		fails = append(fails, err.Error())
	}
	if h == 0 {
		return nil, fmt.Errorf("%w: cannot load the OpenCL library (install an ICD loader and a driver, e.g. ocl-icd-libopencl1 and pocl-opencl-icd): %s",
			ErrNoDriver, strings.Join(fails, "; "))
	}
	l := &Lib{Path: path}
	if err := l.bind(h); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNoDriver, path, err)
	}
	return l, nil
}

func (l *Lib) bind(h uintptr) error {
	f := &l.f
	var missing []string
	var firstErr error
	b := func(fptr any, name string) {
		addr, err := dlsym(h, name)
		if err != nil || addr == 0 {
			missing = append(missing, name)
			return
		}
		if err := registerFunc(fptr, addr); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("%s: %v", name, err)
		}
	}
	b(&f.clGetPlatformIDs, "clGetPlatformIDs")
	b(&f.clGetPlatformInfo, "clGetPlatformInfo")
	b(&f.clGetDeviceIDs, "clGetDeviceIDs")
	b(&f.clGetDeviceInfo, "clGetDeviceInfo")
	b(&f.clCreateContext, "clCreateContext")
	b(&f.clReleaseContext, "clReleaseContext")
	b(&f.clCreateCommandQueue, "clCreateCommandQueue")
	b(&f.clReleaseCommandQueue, "clReleaseCommandQueue")
	b(&f.clFinish, "clFinish")
	b(&f.clCreateBuffer, "clCreateBuffer")
	b(&f.clReleaseMemObject, "clReleaseMemObject")
	b(&f.clEnqueueWriteBuffer, "clEnqueueWriteBuffer")
	b(&f.clEnqueueReadBuffer, "clEnqueueReadBuffer")
	b(&f.clEnqueueFillBuffer, "clEnqueueFillBuffer")
	b(&f.clCreateProgramWithSource, "clCreateProgramWithSource")
	b(&f.clBuildProgram, "clBuildProgram")
	b(&f.clCreateProgramWithBinary, "clCreateProgramWithBinary")
	b(&f.clGetProgramInfo, "clGetProgramInfo")
	b(&f.clGetProgramBuildInfo, "clGetProgramBuildInfo")
	b(&f.clReleaseProgram, "clReleaseProgram")
	b(&f.clCreateKernel, "clCreateKernel")
	b(&f.clReleaseKernel, "clReleaseKernel")
	b(&f.clSetKernelArg, "clSetKernelArg")
	b(&f.clGetKernelWorkGroupInfo, "clGetKernelWorkGroupInfo")
	b(&f.clEnqueueNDRangeKernel, "clEnqueueNDRangeKernel")
	b(&f.clWaitForEvents, "clWaitForEvents")
	b(&f.clGetEventProfilingInfo, "clGetEventProfilingInfo")
	b(&f.clReleaseEvent, "clReleaseEvent")
	if firstErr != nil {
		return firstErr
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing symbols: %s", strings.Join(missing, ", "))
	}
	return nil
}

// Platform and Device are OpenCL handles.
type (
	Platform uintptr
	Device   uintptr
)

// Platforms lists the installed platforms; none is not an error.
func (l *Lib) Platforms() ([]Platform, error) {
	return listIDs[Platform]("clGetPlatformIDs", clPlatformNotFound, l.f.clGetPlatformIDs)
}

// listIDs runs an OpenCL list query (clGetPlatformIDs, clGetDeviceIDs)
// twice: for the count, then for the ids. The call's notFound code, or a
// count of 0, is none and not an error.
func listIDs[T ~uintptr](call string, notFound int32, get func(n uint32, ids *uintptr, numRet *uint32) int32) ([]T, error) {
	var n uint32
	if r := get(0, nil, &n); r == notFound {
		return nil, nil
	} else if err := check(call, r); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	ids := make([]uintptr, n)
	if err := check(call, get(n, &ids[0], &n)); err != nil {
		return nil, err
	}
	out := make([]T, n)
	for i := range out {
		out[i] = T(ids[i])
	}
	return out, nil
}

// PlatformInfo is what a platform says about itself.
type PlatformInfo struct{ Name, Vendor, Version string }

// PlatformInfo queries a platform's name, vendor and version.
func (l *Lib) PlatformInfo(p Platform) (PlatformInfo, error) {
	var pi PlatformInfo
	for _, q := range []struct {
		param uint32
		dst   *string
	}{{platformName, &pi.Name}, {platformVendor, &pi.Vendor}, {platformVersion, &pi.Version}} {
		s, err := infoString("clGetPlatformInfo", func(size uintptr, v unsafe.Pointer, ret *uintptr) int32 {
			return l.f.clGetPlatformInfo(uintptr(p), q.param, size, v, ret)
		})
		if err != nil {
			return pi, err
		}
		*q.dst = s
	}
	return pi, nil
}

// Devices lists a platform's devices of the given type mask (0 for all);
// none is not an error.
func (l *Lib) Devices(p Platform, typ uint64) ([]Device, error) {
	if typ == 0 {
		typ = deviceTypeAll
	}
	return listIDs[Device]("clGetDeviceIDs", clDeviceNotFound, func(n uint32, ids *uintptr, numRet *uint32) int32 {
		return l.f.clGetDeviceIDs(uintptr(p), typ, n, ids, numRet)
	})
}

// DeviceProps are the device queries the tuner uses.
type DeviceProps struct {
	Name, Vendor, Version, DriverVersion, CVersion, Extensions string
	Type                                                       uint64
	ComputeUnits, ClockMHz                                     int
	MaxWorkGroupSize                                           int
	TimerResolutionNS                                          int
	LocalMemBytes, GlobalMemBytes, GlobalCacheBytes            int64
	MaxAllocBytes                                              int64
}

// IsCPU reports whether the device is a CPU device.
func (p DeviceProps) IsCPU() bool { return p.Type&DeviceTypeCPU != 0 }

// HasExtension reports whether the device lists an extension.
func (p DeviceProps) HasExtension(name string) bool {
	for _, e := range strings.Fields(p.Extensions) {
		if e == name {
			return true
		}
	}
	return false
}

// DeviceProps queries a device.
func (l *Lib) DeviceProps(d Device) (DeviceProps, error) {
	var p DeviceProps
	str := func(param uint32, dst *string) error {
		s, err := infoString("clGetDeviceInfo", func(size uintptr, v unsafe.Pointer, ret *uintptr) int32 {
			return l.f.clGetDeviceInfo(uintptr(d), param, size, v, ret)
		})
		*dst = s
		return err
	}
	u32 := func(param uint32, dst *int) error {
		var v uint32
		err := check("clGetDeviceInfo", l.f.clGetDeviceInfo(uintptr(d), param, 4, unsafe.Pointer(&v), nil))
		*dst = int(v)
		return err
	}
	u64 := func(param uint32, dst *int64) error {
		var v uint64
		err := check("clGetDeviceInfo", l.f.clGetDeviceInfo(uintptr(d), param, 8, unsafe.Pointer(&v), nil))
		*dst = int64(v)
		return err
	}
	size := func(param uint32, dst *int) error {
		var v uintptr
		err := check("clGetDeviceInfo", l.f.clGetDeviceInfo(uintptr(d), param, unsafe.Sizeof(v), unsafe.Pointer(&v), nil))
		*dst = int(v)
		return err
	}
	var typ int64
	for _, q := range []func() error{
		func() error { return str(deviceName, &p.Name) },
		func() error { return str(deviceVendor, &p.Vendor) },
		func() error { return str(deviceVersion, &p.Version) },
		func() error { return str(deviceDriverVersion, &p.DriverVersion) },
		func() error { return str(deviceOpenCLCVersion, &p.CVersion) },
		func() error { return str(deviceExtensions, &p.Extensions) },
		func() error { return u64(deviceType, &typ) },
		func() error { return u32(deviceMaxComputeUnits, &p.ComputeUnits) },
		func() error { return u32(deviceMaxClockFrequency, &p.ClockMHz) },
		func() error { return size(deviceMaxWorkGroupSize, &p.MaxWorkGroupSize) },
		func() error { return size(deviceTimerResolution, &p.TimerResolutionNS) },
		func() error { return u64(deviceLocalMemSize, &p.LocalMemBytes) },
		func() error { return u64(deviceGlobalMemSize, &p.GlobalMemBytes) },
		func() error { return u64(deviceGlobalCacheSize, &p.GlobalCacheBytes) },
		func() error { return u64(deviceMaxMemAllocSize, &p.MaxAllocBytes) },
	} {
		if err := q(); err != nil {
			return p, err
		}
	}
	p.Type = uint64(typ)
	return p, nil
}

// infoString runs a clGet*Info query for a string: size, then value.
func infoString(call string, get func(size uintptr, v unsafe.Pointer, ret *uintptr) int32) (string, error) {
	var n uintptr
	if err := check(call, get(0, nil, &n)); err != nil {
		return "", err
	}
	if n == 0 {
		return "", nil
	}
	buf := make([]byte, n)
	if err := check(call, get(n, unsafe.Pointer(&buf[0]), nil)); err != nil {
		return "", err
	}
	return strings.TrimRight(string(buf), "\x00 "), nil
}

// cstr returns a NUL-terminated copy of s.
func cstr(s string) []byte { return append([]byte(s), 0) }

var errReleased = errors.New("cldrv: object already released")
