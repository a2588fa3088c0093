package cudadrv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// cudaFuncs are the driver entry points. The Go signatures mirror cuda.h:
// CUresult → int32, CUdevice and int → int32, unsigned int → uint32,
// CUdeviceptr (unsigned long long) → uint64, size_t → uintptr, opaque
// handles (CUcontext, CUstream, CUevent, CUmodule, CUfunction) → uintptr,
// out-parameters → pointers to Go variables.
type cudaFuncs struct {
	cuInit                     func(flags uint32) int32
	cuDriverGetVersion         func(v *int32) int32
	cuGetErrorName             func(code int32, s **byte) int32
	cuGetErrorString           func(code int32, s **byte) int32
	cuDeviceGetCount           func(n *int32) int32
	cuDeviceGet                func(dev *int32, ordinal int32) int32
	cuDeviceGetName            func(name *byte, n int32, dev int32) int32
	cuDeviceTotalMem           func(bytes *uintptr, dev int32) int32
	cuDeviceGetAttribute       func(v *int32, attr int32, dev int32) int32
	cuDevicePrimaryCtxRetain   func(ctx *uintptr, dev int32) int32
	cuDevicePrimaryCtxRelease  func(dev int32) int32
	cuCtxSetCurrent            func(ctx uintptr) int32
	cuCtxSynchronize           func() int32
	cuStreamCreate             func(s *uintptr, flags uint32) int32
	cuStreamDestroy            func(s uintptr) int32
	cuStreamSynchronize        func(s uintptr) int32
	cuMemAlloc                 func(p *uint64, bytes uintptr) int32
	cuMemFree                  func(p uint64) int32
	cuMemcpyHtoD               func(dst uint64, src unsafe.Pointer, n uintptr) int32
	cuMemcpyDtoH               func(dst unsafe.Pointer, src uint64, n uintptr) int32
	cuMemcpyDtoD               func(dst, src uint64, n uintptr) int32
	cuMemsetD32                func(dst uint64, v uint32, n uintptr) int32
	cuMemGetInfo               func(free, total *uintptr) int32
	cuModuleLoadDataEx         func(m *uintptr, image unsafe.Pointer, n uint32, opts *int32, vals *uintptr) int32
	cuModuleUnload             func(m uintptr) int32
	cuModuleGetFunction        func(f *uintptr, m uintptr, name string) int32
	cuFuncGetAttribute         func(v *int32, attr int32, f uintptr) int32
	cuFuncSetAttribute         func(f uintptr, attr int32, v int32) int32
	cuLaunchKernel             func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream uintptr, params *unsafe.Pointer, extra *unsafe.Pointer) int32
	cuOccupancyMaxActiveBlocks func(n *int32, f uintptr, blockSize int32, dynShared uintptr) int32
	cuEventCreate              func(e *uintptr, flags uint32) int32
	cuEventRecord              func(e, s uintptr) int32
	cuEventSynchronize         func(e uintptr) int32
	cuEventQuery               func(e uintptr) int32
	cuEventElapsedTime         func(ms *float32, start, end uintptr) int32
	cuEventDestroy             func(e uintptr) int32
	// CUDA graphs (optional: TimeGraph only).
	cuStreamBeginCapture        func(s uintptr, mode int32) int32
	cuStreamEndCapture          func(s uintptr, graph *uintptr) int32
	cuGraphInstantiateWithFlags func(exec *uintptr, graph uintptr, flags uint64) int32
	cuGraphLaunch               func(exec, s uintptr) int32
	cuGraphExecDestroy          func(exec uintptr) int32
	cuGraphDestroy              func(graph uintptr) int32
}

// nvrtcFuncs are the NVRTC entry points (nvrtc.h): nvrtcResult → int32,
// nvrtcProgram → uintptr, const char* → *byte, const char* const* → **byte.
type nvrtcFuncs struct {
	nvrtcVersion           func(major, minor *int32) int32
	nvrtcGetErrorString    func(r int32) string
	nvrtcCreateProgram     func(prog *uintptr, src, name *byte, numHeaders int32, headers, includeNames **byte) int32
	nvrtcDestroyProgram    func(prog *uintptr) int32
	nvrtcCompileProgram    func(prog uintptr, numOptions int32, options **byte) int32
	nvrtcGetPTXSize        func(prog uintptr, n *uintptr) int32
	nvrtcGetPTX            func(prog uintptr, buf *byte) int32
	nvrtcGetCUBINSize      func(prog uintptr, n *uintptr) int32 // optional (CUDA ≥ 11.1)
	nvrtcGetCUBIN          func(prog uintptr, buf *byte) int32  // optional
	nvrtcGetProgramLogSize func(prog uintptr, n *uintptr) int32
	nvrtcGetProgramLog     func(prog uintptr, buf *byte) int32
}

// cublasFuncs are the cuBLAS entry points (cublas_api.h, the _v2 names that
// cublas_v2.h maps the public names to): cublasStatus_t, enums and int →
// int32, cublasHandle_t and cudaStream_t → uintptr, device pointers (void*)
// → uintptr, host scalars → pointers to Go values.
type cublasFuncs struct {
	cublasCreate      func(h *uintptr) int32
	cublasDestroy     func(h uintptr) int32
	cublasSetStream   func(h, stream uintptr) int32
	cublasSetMathMode func(h uintptr, mode int32) int32
	// cublasGemmEx has 19 parameters, 13 of them on the stack on amd64;
	// purego ≥ v0.11 registers up to 32 arguments.
	cublasGemmEx func(h uintptr, transa, transb int32, m, n, k int32,
		alpha unsafe.Pointer, a uintptr, aType, lda int32,
		b uintptr, bType, ldb int32,
		beta unsafe.Pointer, c uintptr, cType, ldc int32,
		computeType, algo int32) int32
	cublasSgemv func(h uintptr, trans int32, m, n int32, alpha *float32, a uintptr, lda int32,
		x uintptr, incx int32, beta *float32, y uintptr, incy int32) int32
}

// Lib is the loaded driver (required) and NVRTC and cuBLAS (optional).
// Its methods may be called from any goroutine.
type Lib struct {
	cu        cudaFuncs
	nv        *nvrtcFuncs  // nil when NVRTC is unavailable
	blas      *cublasFuncs // nil when cuBLAS is unavailable
	nvrtcErr  error
	cublasErr error
	cudaPath  string
	nvrtcPath string
	blasPath  string
	// elapsedSym is the symbol bound for cuEventElapsedTime (the _v2 name
	// on CUDA ≥ 12.8 drivers, the original otherwise).
	elapsedSym string
}

// LoadOptions override where the libraries are looked for. An empty field
// means: search the default names and directories (see searchDirs).
type LoadOptions struct {
	CUDA   string // path of libcuda.so.1
	NVRTC  string // path of libnvrtc.so.N
	CUBLAS string // path of libcublas.so.N
	// SkipNVRTC and SkipCUBLAS leave the optional library unloaded.
	SkipNVRTC, SkipCUBLAS bool
}

var (
	defaultOnce sync.Once
	defaultLib  *Lib
	defaultErr  error
)

// Load opens libcuda.so.1 (required), NVRTC and cuBLAS (optional: when one
// is missing, HasNVRTC/HasCUBLAS report false and NVRTCError/CUBLASError
// say why), and calls cuInit(0). The result is cached: later calls return
// the same *Lib or error. A missing driver, a failing cuInit or zero devices
// give an error wrapping ErrNoDriver.
func Load() (*Lib, error) {
	defaultOnce.Do(func() { defaultLib, defaultErr = LoadWith(LoadOptions{}) })
	return defaultLib, defaultErr
}

// LoadWith is Load with explicit library paths; it is not cached.
func LoadWith(o LoadOptions) (*Lib, error) {
	if !dlSupported {
		return nil, fmt.Errorf("%w: %v", ErrNoDriver, errNoDLText())
	}
	dirs := searchDirs(os.Getenv, runtime.GOARCH, versionedToolkits(filepath.Glob))
	l := &Lib{}

	h, path, err := openFirst(libraryCandidates(cudaLibNames, dirs, o.CUDA))
	if err != nil {
		return nil, fmt.Errorf("%w: cannot load the CUDA driver library: %v", ErrNoDriver, err)
	}
	l.cudaPath = path
	if err := l.bindCUDA(h); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNoDriver, path, err)
	}
	if r := l.cu.cuInit(0); r != cudaSuccess {
		return nil, fmt.Errorf("%w: %w", ErrNoDriver, l.cuError("cuInit", r, ""))
	}
	n, err := l.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoDriver, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: cuDeviceGetCount reports no CUDA device", ErrNoDriver)
	}

	if o.SkipNVRTC {
		l.nvrtcErr = errors.New("not loaded (SkipNVRTC)")
	} else {
		l.nvrtcErr = l.loadNVRTC(libraryCandidates(nvrtcLibNames, dirs, o.NVRTC))
	}
	if o.SkipCUBLAS {
		l.cublasErr = errors.New("not loaded (SkipCUBLAS)")
	} else {
		l.cublasErr = l.loadCUBLAS(libraryCandidates(cublasLibNames, dirs, o.CUBLAS))
	}
	return l, nil
}

func errNoDLText() string { return "loading shared libraries is not supported on " + runtime.GOOS }

// openFirst dlopens the first candidate that loads; the error lists every
// attempt.
func openFirst(cands []string) (uintptr, string, error) {
	var fails []string
	for _, c := range cands {
		for _, g := range companionGlobs(c) {
			if m, _ := filepath.Glob(g); len(m) > 0 {
				_, _ = dlopen(m[0]) // best effort; the real failure, if any, shows below
			}
		}
		h, err := dlopen(c)
		if err == nil {
			return h, c, nil
		}
		if filepath.IsAbs(c) && isNotExist(err) {
			continue // a directory without the file is not worth reporting
		}
		fails = append(fails, err.Error())
	}
	if len(fails) == 0 {
		return 0, "", fmt.Errorf("not found (tried %d paths, first %s)", len(cands), firstOr(cands, "none"))
	}
	if len(fails) > 4 {
		fails = append(fails[:4], fmt.Sprintf("and %d more", len(fails)-4))
	}
	return 0, "", errors.New(strings.Join(fails, "; "))
}

func isNotExist(err error) bool {
	return strings.Contains(err.Error(), "No such file") || strings.Contains(err.Error(), "no such file")
}

func firstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}

// binder registers C functions from one library.
type binder struct {
	h       uintptr
	missing []string
	err     error
}

// bind registers the first of names that the library exports into fptr and
// returns the name used, or "" (recording the miss) when none exists.
func (b *binder) bind(fptr any, names ...string) string {
	for _, n := range names {
		addr, err := dlsym(b.h, n)
		if err != nil || addr == 0 {
			continue
		}
		if err := registerFunc(fptr, addr); err != nil && b.err == nil {
			b.err = fmt.Errorf("%s: %v", n, err)
		}
		return n
	}
	b.missing = append(b.missing, strings.Join(names, "|"))
	return ""
}

// optional binds like bind but does not record a miss.
func (b *binder) optional(fptr any, names ...string) string {
	n := len(b.missing)
	used := b.bind(fptr, names...)
	b.missing = b.missing[:n]
	return used
}

func (b *binder) result() error {
	if b.err != nil {
		return b.err
	}
	if len(b.missing) > 0 {
		return fmt.Errorf("missing symbols: %s", strings.Join(b.missing, ", "))
	}
	return nil
}

func (l *Lib) bindCUDA(h uintptr) error {
	b := &binder{h: h}
	c := &l.cu
	b.bind(&c.cuInit, "cuInit")
	b.bind(&c.cuDriverGetVersion, "cuDriverGetVersion")
	b.bind(&c.cuGetErrorName, "cuGetErrorName")
	b.bind(&c.cuGetErrorString, "cuGetErrorString")
	b.bind(&c.cuDeviceGetCount, "cuDeviceGetCount")
	b.bind(&c.cuDeviceGet, "cuDeviceGet")
	b.bind(&c.cuDeviceGetName, "cuDeviceGetName")
	b.bind(&c.cuDeviceTotalMem, "cuDeviceTotalMem_v2")
	b.bind(&c.cuDeviceGetAttribute, "cuDeviceGetAttribute")
	b.bind(&c.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")
	b.bind(&c.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease")
	b.bind(&c.cuCtxSetCurrent, "cuCtxSetCurrent")
	b.bind(&c.cuCtxSynchronize, "cuCtxSynchronize")
	b.bind(&c.cuStreamCreate, "cuStreamCreate")
	b.bind(&c.cuStreamDestroy, "cuStreamDestroy_v2")
	b.bind(&c.cuStreamSynchronize, "cuStreamSynchronize")
	b.bind(&c.cuMemAlloc, "cuMemAlloc_v2")
	b.bind(&c.cuMemFree, "cuMemFree_v2")
	b.bind(&c.cuMemcpyHtoD, "cuMemcpyHtoD_v2")
	b.bind(&c.cuMemcpyDtoH, "cuMemcpyDtoH_v2")
	b.bind(&c.cuMemcpyDtoD, "cuMemcpyDtoD_v2")
	b.bind(&c.cuMemsetD32, "cuMemsetD32_v2")
	b.bind(&c.cuMemGetInfo, "cuMemGetInfo_v2")
	b.bind(&c.cuModuleLoadDataEx, "cuModuleLoadDataEx")
	b.bind(&c.cuModuleUnload, "cuModuleUnload")
	b.bind(&c.cuModuleGetFunction, "cuModuleGetFunction")
	b.bind(&c.cuFuncGetAttribute, "cuFuncGetAttribute")
	b.bind(&c.cuFuncSetAttribute, "cuFuncSetAttribute")
	b.bind(&c.cuLaunchKernel, "cuLaunchKernel")
	b.bind(&c.cuOccupancyMaxActiveBlocks, "cuOccupancyMaxActiveBlocksPerMultiprocessor")
	b.bind(&c.cuEventCreate, "cuEventCreate")
	b.bind(&c.cuEventRecord, "cuEventRecord")
	b.bind(&c.cuEventSynchronize, "cuEventSynchronize")
	b.bind(&c.cuEventQuery, "cuEventQuery")
	l.elapsedSym = b.bind(&c.cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime")
	b.bind(&c.cuEventDestroy, "cuEventDestroy_v2")
	b.optional(&c.cuStreamBeginCapture, "cuStreamBeginCapture_v2")
	b.optional(&c.cuStreamEndCapture, "cuStreamEndCapture")
	b.optional(&c.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags")
	b.optional(&c.cuGraphLaunch, "cuGraphLaunch")
	b.optional(&c.cuGraphExecDestroy, "cuGraphExecDestroy")
	b.optional(&c.cuGraphDestroy, "cuGraphDestroy")
	return b.result()
}

func (l *Lib) loadNVRTC(cands []string) error {
	h, path, err := openFirst(cands)
	if err != nil {
		return err
	}
	nv := &nvrtcFuncs{}
	b := &binder{h: h}
	b.bind(&nv.nvrtcVersion, "nvrtcVersion")
	b.bind(&nv.nvrtcGetErrorString, "nvrtcGetErrorString")
	b.bind(&nv.nvrtcCreateProgram, "nvrtcCreateProgram")
	b.bind(&nv.nvrtcDestroyProgram, "nvrtcDestroyProgram")
	b.bind(&nv.nvrtcCompileProgram, "nvrtcCompileProgram")
	b.bind(&nv.nvrtcGetPTXSize, "nvrtcGetPTXSize")
	b.bind(&nv.nvrtcGetPTX, "nvrtcGetPTX")
	b.bind(&nv.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize")
	b.bind(&nv.nvrtcGetProgramLog, "nvrtcGetProgramLog")
	b.optional(&nv.nvrtcGetCUBINSize, "nvrtcGetCUBINSize")
	b.optional(&nv.nvrtcGetCUBIN, "nvrtcGetCUBIN")
	if err := b.result(); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	l.nv, l.nvrtcPath = nv, path
	return nil
}

func (l *Lib) loadCUBLAS(cands []string) error {
	h, path, err := openFirst(cands)
	if err != nil {
		return err
	}
	bl := &cublasFuncs{}
	b := &binder{h: h}
	b.bind(&bl.cublasCreate, "cublasCreate_v2")
	b.bind(&bl.cublasDestroy, "cublasDestroy_v2")
	b.bind(&bl.cublasSetStream, "cublasSetStream_v2")
	b.bind(&bl.cublasSetMathMode, "cublasSetMathMode")
	b.bind(&bl.cublasGemmEx, "cublasGemmEx")
	// Only the _v2 name: the unsuffixed cublasSgemv is the legacy API with
	// a different signature.
	b.bind(&bl.cublasSgemv, "cublasSgemv_v2")
	if err := b.result(); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	l.blas, l.blasPath = bl, path
	return nil
}

// HasNVRTC reports whether NVRTC was loaded.
func (l *Lib) HasNVRTC() bool { return l.nv != nil }

// NVRTCError says why NVRTC is unavailable (nil when it is loaded).
func (l *Lib) NVRTCError() error {
	if l.nv != nil {
		return nil
	}
	return unavailable("NVRTC", l.nvrtcErr)
}

// HasCUBLAS reports whether cuBLAS was loaded.
func (l *Lib) HasCUBLAS() bool { return l.blas != nil }

// CUBLASError says why cuBLAS is unavailable (nil when it is loaded).
func (l *Lib) CUBLASError() error {
	if l.blas != nil {
		return nil
	}
	return unavailable("cuBLAS", l.cublasErr)
}

// Paths returns the library paths (or bare names resolved by the loader)
// that were opened; empty for a library that is not loaded.
func (l *Lib) Paths() (cuda, nvrtc, cublas string) { return l.cudaPath, l.nvrtcPath, l.blasPath }

// cuError builds the error for a failed driver call, naming the code with
// cuGetErrorName and cuGetErrorString.
func (l *Lib) cuError(call string, r int32, detail string) *Error {
	e := &Error{Lib: LibCUDA, Call: call, Code: int(r), Detail: detail, Sticky: IsSticky(int(r))}
	var p *byte
	if l.cu.cuGetErrorName != nil && l.cu.cuGetErrorName(r, &p) == cudaSuccess && p != nil {
		e.Name = goString(p)
	} else {
		e.Name = cuResultName(int(r))
	}
	p = nil
	if l.cu.cuGetErrorString != nil && l.cu.cuGetErrorString(r, &p) == cudaSuccess && p != nil {
		e.Msg = goString(p)
	}
	return e
}

// check turns a CUresult into nil or an *Error.
func (l *Lib) check(call string, r int32) error {
	if r == cudaSuccess {
		return nil
	}
	return l.cuError(call, r, "")
}

// goString copies a NUL-terminated C string (at most 64 KiB).
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	const limit = 1 << 16
	n := 0
	for n < limit && *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// cString returns s as a NUL-terminated byte slice; s must not contain NUL.
func cString(s string) ([]byte, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, fmt.Errorf("cudadrv: string contains a NUL byte: %.40q", s)
	}
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b, nil
}

// DriverVersion returns the driver's CUDA version, 1000*major + 10*minor
// (13000 for CUDA 13.0).
func (l *Lib) DriverVersion() (int, error) {
	var v int32
	if err := l.check("cuDriverGetVersion", l.cu.cuDriverGetVersion(&v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// DeviceCount returns the number of CUDA devices.
func (l *Lib) DeviceCount() (int, error) {
	var n int32
	if err := l.check("cuDeviceGetCount", l.cu.cuDeviceGetCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

func (l *Lib) device(ordinal int) (int32, error) {
	var dev int32
	if r := l.cu.cuDeviceGet(&dev, int32(ordinal)); r != cudaSuccess {
		return 0, l.cuError("cuDeviceGet", r, fmt.Sprintf("ordinal %d", ordinal))
	}
	return dev, nil
}

// DeviceAttribute queries one CUdevice_attribute of a device.
func (l *Lib) DeviceAttribute(ordinal int, attr DeviceAttr) (int, error) {
	dev, err := l.device(ordinal)
	if err != nil {
		return 0, err
	}
	return l.attr(dev, attr)
}

func (l *Lib) attr(dev int32, attr DeviceAttr) (int, error) {
	var v int32
	if r := l.cu.cuDeviceGetAttribute(&v, int32(attr), dev); r != cudaSuccess {
		return 0, l.cuError("cuDeviceGetAttribute", r, fmt.Sprintf("attribute %d", int32(attr)))
	}
	return int(v), nil
}

// DeviceProps are the device facts a tuner needs.
type DeviceProps struct {
	Ordinal                int
	Name                   string
	Major, Minor           int // compute capability
	SMs                    int // multiprocessors
	MaxThreadsPerBlock     int
	MaxThreadsPerSM        int
	MaxBlocksPerSM         int
	MaxSharedPerBlock      int // bytes usable without opting in (48 KiB)
	MaxSharedPerBlockOptin int // bytes a kernel may use after Function.SetMaxDynamicShared
	MaxSharedPerSM         int
	ReservedSharedPerBlock int // bytes of shared memory the system reserves per block
	RegsPerBlock           int // 32-bit registers
	RegsPerSM              int
	WarpSize               int
	L2Bytes                int
	ClockKHz               int // peak SM clock; 0 if the driver does not report it
	MemClockKHz            int // peak memory clock; 0 if not reported
	MemBusWidth            int // bits; 0 if not reported
	TotalMem               int64
}

// Arch is the real architecture name for NVRTC, e.g. "sm_90".
func (p DeviceProps) Arch() string { return fmt.Sprintf("sm_%d%d", p.Major, p.Minor) }

// VirtualArch is the virtual architecture name, e.g. "compute_90".
func (p DeviceProps) VirtualArch() string { return fmt.Sprintf("compute_%d%d", p.Major, p.Minor) }

// PeakBandwidth is the theoretical DRAM bandwidth in bytes/s
// (2 transfers per memory clock × bus width), 0 when unknown.
func (p DeviceProps) PeakBandwidth() float64 {
	return 2 * float64(p.MemClockKHz) * 1e3 * float64(p.MemBusWidth) / 8
}

// attrField is a device property read from a device attribute.
type attrField struct {
	dst  *int
	attr DeviceAttr
}

// Props queries a device's properties. Attributes that some drivers no
// longer report (clocks, bus width, L2, opt-in and per-SM limits) read as 0
// when the query fails; the basic limits are required.
func (l *Lib) Props(ordinal int) (DeviceProps, error) {
	p := DeviceProps{Ordinal: ordinal}
	dev, err := l.device(ordinal)
	if err != nil {
		return p, err
	}
	var name [256]byte
	if r := l.cu.cuDeviceGetName(&name[0], int32(len(name)), dev); r != cudaSuccess {
		return p, l.cuError("cuDeviceGetName", r, "")
	}
	p.Name = goString(&name[0])
	var total uintptr
	if r := l.cu.cuDeviceTotalMem(&total, dev); r != cudaSuccess {
		return p, l.cuError("cuDeviceTotalMem_v2", r, "")
	}
	p.TotalMem = int64(total)
	required := []attrField{
		{&p.Major, AttrComputeCapabilityMajor},
		{&p.Minor, AttrComputeCapabilityMinor},
		{&p.SMs, AttrMultiprocessorCount},
		{&p.MaxThreadsPerBlock, AttrMaxThreadsPerBlock},
		{&p.MaxSharedPerBlock, AttrMaxSharedPerBlock},
		{&p.RegsPerBlock, AttrMaxRegistersPerBlock},
		{&p.WarpSize, AttrWarpSize},
	}
	for _, q := range required {
		if *q.dst, err = l.attr(dev, q.attr); err != nil {
			return p, err
		}
	}
	optional := []attrField{
		{&p.MaxThreadsPerSM, AttrMaxThreadsPerMultiprocessor},
		{&p.MaxBlocksPerSM, AttrMaxBlocksPerMultiprocessor},
		{&p.MaxSharedPerBlockOptin, AttrMaxSharedPerBlockOptin},
		{&p.MaxSharedPerSM, AttrMaxSharedPerMultiprocessor},
		{&p.ReservedSharedPerBlock, AttrReservedSharedPerBlock},
		{&p.RegsPerSM, AttrMaxRegistersPerMultiproc},
		{&p.L2Bytes, AttrL2CacheSize},
		{&p.ClockKHz, AttrClockRate},
		{&p.MemClockKHz, AttrMemoryClockRate},
		{&p.MemBusWidth, AttrGlobalMemoryBusWidth},
	}
	for _, q := range optional {
		if v, err := l.attr(dev, q.attr); err == nil {
			*q.dst = v
		}
	}
	if p.MaxSharedPerBlockOptin < p.MaxSharedPerBlock {
		p.MaxSharedPerBlockOptin = p.MaxSharedPerBlock
	}
	return p, nil
}
