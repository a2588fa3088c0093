package cudadrv

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"unsafe"

	"github.com/kerntune/kerntune/internal/osthread"
)

// Context is a device's primary CUDA context, made current on a dedicated
// OS thread. Every driver and cuBLAS call for it runs on that thread; the
// methods marshal to it and may be called from any goroutine (concurrent
// calls are serialized). Close releases it.
type Context struct {
	lib     *Lib
	ordinal int
	props   DeviceProps
	th      *osthread.Thread
	t       *Thread // set on the context thread by setup, used only there
}

// Thread is the context thread as seen by a closure running on it (see
// Context.Do). Its methods call the driver directly. A *Thread is only
// valid during the closure it was passed to, on that goroutine; using it
// elsewhere returns an error.
type Thread struct {
	c       *Context
	lib     *Lib
	dev     int32
	ctx     uintptr // CUcontext
	stream  uintptr // CUstream every launch, copy and cuBLAS call is issued on
	tid     uintptr
	active  bool
	timing  bool
	events  []uintptr // pool of timing events
	blas    *Blas
	allocs  map[DevPtr]int64
	modules map[*Module]struct{}
	sticky  *Error // first sticky error; the context is unusable afterwards
}

var (
	errThreadInactive = errors.New("cudadrv: *Thread used outside the closure it was passed to")
	errThreadMisuse   = errors.New("cudadrv: *Thread used from a goroutine other than the context thread")
)

// NewContext retains the primary context of device ordinal, starts the
// context thread and makes the context current on it, and creates the
// stream all work is issued on (a blocking stream: it synchronizes with the
// legacy default stream the synchronous copies use).
func (l *Lib) NewContext(ordinal int) (*Context, error) {
	n, err := l.DeviceCount()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cudadrv: device ordinal %d out of range (%d devices)", ordinal, n)
	}
	props, err := l.Props(ordinal)
	if err != nil {
		return nil, err
	}
	c := &Context{lib: l, ordinal: ordinal, props: props}
	c.th, err = osthread.Start(osthread.Config{
		Setup:     c.setup,
		Closed:    ErrClosed,
		Reentrant: ErrReentrant,
		Goexit:    errors.New("cudadrv: runtime.Goexit called on the context thread (t.FailNow inside a closure?); the context is unusable and its resources are leaked"),
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// setup makes the context current on the context thread (which stays
// locked to it: the thread carries the binding) and creates the stream.
func (c *Context) setup() error {
	l := c.lib
	t := &Thread{c: c, lib: l, tid: osthread.ID(), allocs: map[DevPtr]int64{}, modules: map[*Module]struct{}{}}
	dev, err := l.device(c.ordinal)
	if err != nil {
		return err
	}
	t.dev = dev
	if r := l.cu.cuDevicePrimaryCtxRetain(&t.ctx, dev); r != cudaSuccess {
		return l.cuError("cuDevicePrimaryCtxRetain", r, fmt.Sprintf("device %d", c.ordinal))
	}
	if r := l.cu.cuCtxSetCurrent(t.ctx); r != cudaSuccess {
		l.cu.cuDevicePrimaryCtxRelease(dev)
		return l.cuError("cuCtxSetCurrent", r, "")
	}
	if r := l.cu.cuStreamCreate(&t.stream, cuStreamDefault); r != cudaSuccess {
		l.cu.cuCtxSetCurrent(0)
		l.cu.cuDevicePrimaryCtxRelease(dev)
		return l.cuError("cuStreamCreate", r, "")
	}
	c.t = t
	return nil
}

// invoke runs fn with t marked active; a panic in fn becomes an error so
// the context thread survives it.
func (t *Thread) invoke(fn func(*Thread) error) (err error) {
	t.active = true
	defer func() {
		t.active = false
		t.timing = false
		if p := recover(); p != nil {
			err = fmt.Errorf("cudadrv: panic on the context thread: %v\n%s", p, debug.Stack())
		}
	}()
	return fn(t)
}

// onThread reports whether the caller is the context goroutine (Linux
// only; elsewhere it is always false).
func (c *Context) onThread() bool { return c.th.OnThread() }

// Do runs fn on the context thread and returns its error. Several driver
// calls that belong together (a timing loop, launches followed by a sync)
// go in one closure; fn must use the *Thread it is given and not the
// marshalling methods of Context, Module, Function or Blas (ErrReentrant).
func (c *Context) Do(fn func(t *Thread) error) error {
	return c.th.Do(func() error { return c.t.invoke(fn) })
}

// Close waits for pending work, destroys the cuBLAS handle, the modules
// still loaded, the allocations not freed, the events and the stream,
// releases the primary context and ends the context thread. Later calls
// return ErrClosed; Close itself may be called again (it returns nil).
// After a sticky error the cleanup is best effort and its errors are not
// reported.
func (c *Context) Close() error {
	return c.th.Stop(func() error { return c.t.invoke((*Thread).teardown) })
}

func (t *Thread) teardown() error {
	cu := &t.lib.cu
	var errs []error
	note := func(call string, r int32) {
		if r != cudaSuccess && t.sticky == nil {
			errs = append(errs, t.lib.cuError(call, r, "during Close"))
		}
	}
	if t.sticky == nil {
		note("cuCtxSynchronize", cu.cuCtxSynchronize())
	}
	if t.blas != nil {
		if r := t.lib.blas.cublasDestroy(t.blas.h); r != cublasStatusSuccess && t.sticky == nil {
			errs = append(errs, newCUBLASError("cublasDestroy_v2", r, "during Close"))
		}
		t.blas.h = 0
		t.blas = nil
	}
	for m := range t.modules {
		note("cuModuleUnload", cu.cuModuleUnload(m.h))
		m.h = 0
	}
	t.modules = nil
	for p := range t.allocs {
		note("cuMemFree_v2", cu.cuMemFree(uint64(p)))
	}
	t.allocs = nil
	for _, e := range t.events {
		note("cuEventDestroy_v2", cu.cuEventDestroy(e))
	}
	t.events = nil
	note("cuStreamDestroy_v2", cu.cuStreamDestroy(t.stream))
	t.stream = 0
	note("cuCtxSetCurrent", cu.cuCtxSetCurrent(0))
	note("cuDevicePrimaryCtxRelease", cu.cuDevicePrimaryCtxRelease(t.dev))
	return errors.Join(errs...)
}

// Ordinal is the device ordinal.
func (c *Context) Ordinal() int { return c.ordinal }

// Props are the device's properties, queried when the context was created.
func (c *Context) Props() DeviceProps { return c.props }

// Lib is the library the context was created from.
func (c *Context) Lib() *Lib { return c.lib }

// ---- Thread: checks ----

// ready checks that t may issue driver calls now.
func (t *Thread) ready() error {
	if !t.active {
		return errThreadInactive
	}
	if id := osthread.ID(); id != 0 && id != t.tid {
		return errThreadMisuse
	}
	if t.sticky != nil {
		return t.lostError()
	}
	return nil
}

func (t *Thread) lostError() error {
	return fmt.Errorf("%w; the first error was: %w", ErrContextLost, t.sticky)
}

// check turns a CUresult into nil or an *Error and remembers a sticky one.
func (t *Thread) check(call string, r int32, detail string) error {
	if r == cudaSuccess {
		return nil
	}
	return t.fail(t.lib.cuError(call, r, detail))
}

func (t *Thread) fail(e *Error) error {
	if e.Sticky && t.sticky == nil {
		t.sticky = e
	}
	return e
}

// Context returns the Context t belongs to (for its Props, Ordinal, Lib;
// not for marshalling methods, which return ErrReentrant on t's goroutine).
func (t *Thread) Context() *Context { return t.c }

// Stream returns the raw CUstream handle t issues work on.
func (t *Thread) Stream() uintptr { return t.stream }

// ---- memory ----

// Alloc allocates device memory (cuMemAlloc_v2; 256-byte aligned).
func (t *Thread) Alloc(bytes int64) (DevPtr, error) {
	if err := t.ready(); err != nil {
		return 0, err
	}
	if bytes <= 0 {
		return 0, fmt.Errorf("cudadrv: Alloc(%d): size must be positive", bytes)
	}
	var p uint64
	if err := t.check("cuMemAlloc_v2", t.lib.cu.cuMemAlloc(&p, uintptr(bytes)), fmt.Sprintf("%d bytes", bytes)); err != nil {
		return 0, err
	}
	t.allocs[DevPtr(p)] = bytes
	return DevPtr(p), nil
}

// Free frees memory returned by Alloc on this context; Free(0) is a no-op.
func (t *Thread) Free(p DevPtr) error {
	if err := t.ready(); err != nil {
		return err
	}
	if p == 0 {
		return nil
	}
	if _, ok := t.allocs[p]; !ok {
		return fmt.Errorf("cudadrv: Free(%#x): not a live allocation of this context (double free or offset pointer?)", uint64(p))
	}
	delete(t.allocs, p)
	return t.check("cuMemFree_v2", t.lib.cu.cuMemFree(uint64(p)), "")
}

// Allocated returns the number and total size of live allocations.
func (t *Thread) Allocated() (count int, bytes int64) {
	for _, n := range t.allocs {
		bytes += n
	}
	return len(t.allocs), bytes
}

// CopyHtoD copies src to device memory at dst (synchronous).
func (t *Thread) CopyHtoD(dst DevPtr, src []byte) error {
	if err := t.ready(); err != nil {
		return err
	}
	if len(src) == 0 {
		return nil
	}
	r := t.lib.cu.cuMemcpyHtoD(uint64(dst), unsafe.Pointer(&src[0]), uintptr(len(src)))
	runtime.KeepAlive(src)
	return t.check("cuMemcpyHtoD_v2", r, fmt.Sprintf("%d bytes to %#x", len(src), uint64(dst)))
}

// CopyDtoH copies len(dst) bytes from device memory at src after the
// context's stream has finished its work.
func (t *Thread) CopyDtoH(dst []byte, src DevPtr) error {
	if err := t.ready(); err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	if err := t.check("cuStreamSynchronize", t.lib.cu.cuStreamSynchronize(t.stream), "before cuMemcpyDtoH_v2"); err != nil {
		return err
	}
	r := t.lib.cu.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), uint64(src), uintptr(len(dst)))
	runtime.KeepAlive(dst)
	return t.check("cuMemcpyDtoH_v2", r, fmt.Sprintf("%d bytes from %#x", len(dst), uint64(src)))
}

// CopyDtoD copies bytes between device buffers.
func (t *Thread) CopyDtoD(dst, src DevPtr, bytes int64) error {
	if work, err := t.sized("CopyDtoD", bytes, "bytes"); !work {
		return err
	}
	return t.check("cuMemcpyDtoD_v2", t.lib.cu.cuMemcpyDtoD(uint64(dst), uint64(src), uintptr(bytes)),
		fmt.Sprintf("%d bytes %#x -> %#x", bytes, uint64(src), uint64(dst)))
}

// sized checks that the thread is usable and that method's size n (in
// units) is not negative; work is false, with a nil error, for n == 0,
// which has nothing to do.
func (t *Thread) sized(method string, n int64, units string) (work bool, err error) {
	if err := t.ready(); err != nil {
		return false, err
	}
	if n < 0 {
		return false, fmt.Errorf("cudadrv: %s of %d %s", method, n, units)
	}
	return n != 0, nil
}

// MemsetD32 sets count 32-bit words at dst (4-byte aligned) to value; use
// math.Float32bits(float32(math.NaN())) to poison a float32 buffer.
func (t *Thread) MemsetD32(dst DevPtr, value uint32, count int) error {
	if work, err := t.sized("MemsetD32", int64(count), "words"); !work {
		return err
	}
	return t.check("cuMemsetD32_v2", t.lib.cu.cuMemsetD32(uint64(dst), value, uintptr(count)),
		fmt.Sprintf("%d words at %#x", count, uint64(dst)))
}

// MemInfo returns the free and total device memory (cuMemGetInfo_v2).
func (t *Thread) MemInfo() (free, total int64, err error) {
	if err := t.ready(); err != nil {
		return 0, 0, err
	}
	var f, tot uintptr
	if err := t.check("cuMemGetInfo_v2", t.lib.cu.cuMemGetInfo(&f, &tot), ""); err != nil {
		return 0, 0, err
	}
	return int64(f), int64(tot), nil
}

// Sync waits for all work of the context (cuCtxSynchronize). Errors of
// earlier asynchronous work (a faulting kernel) surface here.
func (t *Thread) Sync() error {
	if err := t.ready(); err != nil {
		return err
	}
	return t.check("cuCtxSynchronize", t.lib.cu.cuCtxSynchronize(), "")
}

// ---- modules and functions ----

// Module is a loaded CUBIN or PTX image.
type Module struct {
	c *Context
	h uintptr // CUmodule; 0 once unloaded
	// InfoLog is the JIT compiler's informational log (PTX images), if any.
	InfoLog string
}

// Function is a kernel of a Module.
type Function struct {
	m    *Module
	h    uintptr // CUfunction
	Name string
}

// Module returns the module the function belongs to.
func (f *Function) Module() *Module { return f.m }

const jitLogSize = 1 << 14

// LoadModule loads a CUBIN, fatbin or PTX image (cuModuleLoadDataEx). A
// PTX image without a trailing NUL is copied and terminated. A JIT failure
// returns an *Error whose Log holds the JIT error log.
func (t *Thread) LoadModule(image []byte) (*Module, error) {
	if err := t.ready(); err != nil {
		return nil, err
	}
	if len(image) == 0 {
		return nil, errors.New("cudadrv: LoadModule: empty image")
	}
	kind := imageKind(image)
	img := image
	if kind == "PTX" && image[len(image)-1] != 0 {
		img = make([]byte, len(image)+1)
		copy(img, image)
	}
	infoLog := make([]byte, jitLogSize)
	errLog := make([]byte, jitLogSize)
	opts := []int32{cuJitInfoLogBuffer, cuJitInfoLogBufferSizeBytes, cuJitErrorLogBuffer, cuJitErrorLogBufferSizeBytes}
	vals := []uintptr{uintptr(unsafe.Pointer(&infoLog[0])), jitLogSize, uintptr(unsafe.Pointer(&errLog[0])), jitLogSize}
	var h uintptr
	r := t.lib.cu.cuModuleLoadDataEx(&h, unsafe.Pointer(&img[0]), uint32(len(opts)), &opts[0], &vals[0])
	runtime.KeepAlive(img)
	runtime.KeepAlive(infoLog)
	runtime.KeepAlive(errLog)
	if r != cudaSuccess {
		e := t.lib.cuError("cuModuleLoadDataEx", r, fmt.Sprintf("%s image, %d bytes", kind, len(image)))
		e.Log = bufString(errLog)
		return nil, t.fail(e)
	}
	m := &Module{c: t.c, h: h, InfoLog: bufString(infoLog)}
	t.modules[m] = struct{}{}
	return m, nil
}

// imageKind classifies a module image by its magic number.
func imageKind(b []byte) string {
	switch {
	case len(b) >= 4 && b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F':
		return "CUBIN"
	case len(b) >= 4 && b[0] == 0x50 && b[1] == 0xed && b[2] == 0x55 && b[3] == 0xba: // 0xBA55ED50 little-endian
		return "fatbin"
	}
	return "PTX"
}

// bufString reads a NUL-terminated string from a Go buffer.
func bufString(b []byte) string {
	if i := indexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimSpace(string(b))
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// UnloadModule unloads a module; its Functions become unusable.
func (t *Thread) UnloadModule(m *Module) error {
	if err := t.ready(); err != nil {
		return err
	}
	if m.c != t.c {
		return errors.New("cudadrv: UnloadModule: module belongs to another context")
	}
	if m.h == 0 {
		return nil
	}
	h := m.h
	m.h = 0
	delete(t.modules, m)
	return t.check("cuModuleUnload", t.lib.cu.cuModuleUnload(h), "")
}

// Function looks up a kernel by its (extern "C" or mangled) name.
func (t *Thread) Function(m *Module, name string) (*Function, error) {
	if err := t.ready(); err != nil {
		return nil, err
	}
	if m.c != t.c {
		return nil, errors.New("cudadrv: Function: module belongs to another context")
	}
	if m.h == 0 {
		return nil, errors.New("cudadrv: Function: module is unloaded")
	}
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return nil, fmt.Errorf("cudadrv: Function: invalid name %q", name)
	}
	var f uintptr
	if err := t.check("cuModuleGetFunction", t.lib.cu.cuModuleGetFunction(&f, m.h, name), name); err != nil {
		return nil, err
	}
	return &Function{m: m, h: f, Name: name}, nil
}

func (t *Thread) usableFunc(f *Function) error {
	if f == nil {
		return errors.New("cudadrv: nil *Function")
	}
	if f.m.c != t.c {
		return fmt.Errorf("cudadrv: function %s belongs to another context", f.Name)
	}
	if f.m.h == 0 {
		return fmt.Errorf("cudadrv: function %s: its module is unloaded", f.Name)
	}
	return nil
}

// FuncAttr reads a function attribute (cuFuncGetAttribute).
func (t *Thread) FuncAttr(f *Function, attr FuncAttr) (int, error) {
	if err := t.ready(); err != nil {
		return 0, err
	}
	if err := t.usableFunc(f); err != nil {
		return 0, err
	}
	var v int32
	if err := t.check("cuFuncGetAttribute", t.lib.cu.cuFuncGetAttribute(&v, int32(attr), f.h), f.Name+" "+attr.String()); err != nil {
		return 0, err
	}
	return int(v), nil
}

// SetFuncAttr sets a function attribute (cuFuncSetAttribute).
func (t *Thread) SetFuncAttr(f *Function, attr FuncAttr, value int) error {
	if err := t.ready(); err != nil {
		return err
	}
	if err := t.usableFunc(f); err != nil {
		return err
	}
	return t.check("cuFuncSetAttribute", t.lib.cu.cuFuncSetAttribute(f.h, int32(attr), int32(value)),
		fmt.Sprintf("%s %s=%d", f.Name, attr, value))
}

// SetMaxDynamicShared lets f use up to bytes of dynamic shared memory per
// block; required above 48 KiB (up to Props().MaxSharedPerBlockOptin minus
// the kernel's static shared memory).
func (t *Thread) SetMaxDynamicShared(f *Function, bytes int) error {
	return t.SetFuncAttr(f, FuncMaxDynamicSharedBytes, bytes)
}

// MaxActiveBlocksPerSM returns how many blocks of blockSize threads with
// dynShared bytes of dynamic shared memory fit on one SM
// (cuOccupancyMaxActiveBlocksPerMultiprocessor).
func (t *Thread) MaxActiveBlocksPerSM(f *Function, blockSize, dynShared int) (int, error) {
	if err := t.ready(); err != nil {
		return 0, err
	}
	if err := t.usableFunc(f); err != nil {
		return 0, err
	}
	var n int32
	if err := t.check("cuOccupancyMaxActiveBlocksPerMultiprocessor",
		t.lib.cu.cuOccupancyMaxActiveBlocks(&n, f.h, int32(blockSize), uintptr(dynShared)),
		fmt.Sprintf("%s block=%d dynShared=%d", f.Name, blockSize, dynShared)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// ---- launches ----

// Launch packs args (see PackArgs) and launches f on the context's stream.
// The launch is asynchronous: execution errors surface at the next
// synchronizing call (Sync, CopyDtoH, a timing result).
func (t *Thread) Launch(f *Function, grid, block [3]uint32, sharedBytes uint32, args ...any) error {
	p, err := PackArgs(args...)
	if err != nil {
		name := "<nil>"
		if f != nil {
			name = f.Name
		}
		return fmt.Errorf("launch %s: %w", name, err)
	}
	return t.LaunchArgs(f, grid, block, sharedBytes, p)
}

// LaunchArgs launches f with arguments packed beforehand, for loops that
// launch the same arguments many times.
func (t *Thread) LaunchArgs(f *Function, grid, block [3]uint32, sharedBytes uint32, p *Args) error {
	if err := t.ready(); err != nil {
		return err
	}
	if err := t.usableFunc(f); err != nil {
		return err
	}
	for i := 0; i < 3; i++ {
		if grid[i] == 0 || block[i] == 0 {
			return fmt.Errorf("cudadrv: launch %s: zero dimension in grid %v / block %v", f.Name, grid, block)
		}
	}
	r := t.lib.cu.cuLaunchKernel(f.h, grid[0], grid[1], grid[2], block[0], block[1], block[2],
		sharedBytes, t.stream, p.kernelParams(), nil)
	runtime.KeepAlive(p)
	if r != cudaSuccess {
		return t.check("cuLaunchKernel", r, fmt.Sprintf("%s grid=%v block=%v shared=%d args=%s", f.Name, grid, block, sharedBytes, p))
	}
	return nil
}

// ---- marshalling wrappers (any goroutine) ----

// Alloc allocates device memory; see Thread.Alloc.
func (c *Context) Alloc(bytes int64) (p DevPtr, err error) {
	err = c.Do(func(t *Thread) (e error) { p, e = t.Alloc(bytes); return })
	return
}

// Free frees device memory; see Thread.Free.
func (c *Context) Free(p DevPtr) error {
	return c.Do(func(t *Thread) error { return t.Free(p) })
}

// CopyHtoD copies host bytes to the device; see Thread.CopyHtoD.
func (c *Context) CopyHtoD(dst DevPtr, src []byte) error {
	return c.Do(func(t *Thread) error { return t.CopyHtoD(dst, src) })
}

// CopyDtoH copies device bytes to the host; see Thread.CopyDtoH.
func (c *Context) CopyDtoH(dst []byte, src DevPtr) error {
	return c.Do(func(t *Thread) error { return t.CopyDtoH(dst, src) })
}

// CopyDtoD copies between device buffers; see Thread.CopyDtoD.
func (c *Context) CopyDtoD(dst, src DevPtr, bytes int64) error {
	return c.Do(func(t *Thread) error { return t.CopyDtoD(dst, src, bytes) })
}

// MemsetD32 fills 32-bit words; see Thread.MemsetD32.
func (c *Context) MemsetD32(dst DevPtr, value uint32, count int) error {
	return c.Do(func(t *Thread) error { return t.MemsetD32(dst, value, count) })
}

// MemInfo returns free and total device memory; see Thread.MemInfo.
func (c *Context) MemInfo() (free, total int64, err error) {
	err = c.Do(func(t *Thread) (e error) { free, total, e = t.MemInfo(); return })
	return
}

// Sync waits for all work of the context; see Thread.Sync.
func (c *Context) Sync() error {
	return c.Do(func(t *Thread) error { return t.Sync() })
}

// LoadModule loads a CUBIN or PTX image; see Thread.LoadModule.
func (c *Context) LoadModule(image []byte) (m *Module, err error) {
	err = c.Do(func(t *Thread) (e error) { m, e = t.LoadModule(image); return })
	return
}

// Function looks up a kernel; see Thread.Function.
func (m *Module) Function(name string) (f *Function, err error) {
	err = m.c.Do(func(t *Thread) (e error) { f, e = t.Function(m, name); return })
	return
}

// Unload unloads the module; see Thread.UnloadModule.
func (m *Module) Unload() error {
	return m.c.Do(func(t *Thread) error { return t.UnloadModule(m) })
}

// Attr reads a function attribute; see Thread.FuncAttr.
func (f *Function) Attr(attr FuncAttr) (v int, err error) {
	err = f.m.c.Do(func(t *Thread) (e error) { v, e = t.FuncAttr(f, attr); return })
	return
}

// SetAttr sets a function attribute; see Thread.SetFuncAttr.
func (f *Function) SetAttr(attr FuncAttr, value int) error {
	return f.m.c.Do(func(t *Thread) error { return t.SetFuncAttr(f, attr, value) })
}

// SetMaxDynamicShared allows more than 48 KiB of dynamic shared memory;
// see Thread.SetMaxDynamicShared.
func (f *Function) SetMaxDynamicShared(bytes int) error {
	return f.m.c.Do(func(t *Thread) error { return t.SetMaxDynamicShared(f, bytes) })
}

// MaxActiveBlocksPerSM returns the occupancy; see Thread.MaxActiveBlocksPerSM.
func (f *Function) MaxActiveBlocksPerSM(blockSize, dynShared int) (n int, err error) {
	err = f.m.c.Do(func(t *Thread) (e error) { n, e = t.MaxActiveBlocksPerSM(f, blockSize, dynShared); return })
	return
}

// Launch launches a kernel; see Thread.Launch.
func (c *Context) Launch(f *Function, grid, block [3]uint32, sharedBytes uint32, args ...any) error {
	p, err := PackArgs(args...)
	if err != nil {
		return err
	}
	return c.Do(func(t *Thread) error { return t.LaunchArgs(f, grid, block, sharedBytes, p) })
}
