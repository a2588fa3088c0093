package cudadrv

// These tests load testdata/fakecuda.c, compiled with the system C compiler
// into a shared library that exports the driver, NVRTC and cuBLAS symbols
// with their real C signatures. They check, on machines without a GPU, the
// parts that can only be wrong at the ABI level: every purego signature
// (including the 19-argument cublasGemmEx), the kernelParams layout, the
// per-thread context discipline, JIT and NVRTC logs, sticky errors. They
// skip when no C compiler is found or the OS is not Linux.

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/kerntune/kerntune/internal/half"
	"github.com/kerntune/kerntune/internal/testutil"
)

type fakeHooks struct {
	stats       func(out *int64, n int32) int32
	lastLaunch  func() string
	clearSticky func()
	eventQuery  func(int32)
	liveGraphs  func() int64
}

type fakeStats struct {
	allocs, primaryRefs, launches, streams, events, modules, streamFlags, mathMode int64
}

func (h *fakeHooks) get() fakeStats {
	var v [8]int64
	h.stats(&v[0], 8)
	return fakeStats{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]}
}

// buildFake compiles the fake library into a fresh directory (so each test
// gets its own library instance and state) and returns its path.
func buildFake(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the fake driver test library is built for Linux only")
	}
	cc := testutil.CCompiler()
	if cc == "" {
		t.Skip("no C compiler ($CC, cc, gcc, clang) to build the fake driver")
	}
	src, err := filepath.Abs("testdata/fakecuda.c")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "libfakecuda.so")
	cmd := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", out, src, "-lm", "-lpthread")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot build the fake driver with %s: %v\n%s", cc, err, b)
	}
	return out
}

func loadFake(t *testing.T) (*Lib, *fakeHooks) {
	t.Helper()
	so := buildFake(t)
	l, err := LoadWith(LoadOptions{CUDA: so, NVRTC: so, CUBLAS: so})
	if err != nil {
		t.Fatalf("LoadWith(fake): %v", err)
	}
	h, err := dlopen(so)
	if err != nil {
		t.Fatal(err)
	}
	hooks := &fakeHooks{}
	for name, fptr := range map[string]any{"fake_stats": &hooks.stats, "fake_last_launch": &hooks.lastLaunch, "fake_clear_sticky": &hooks.clearSticky, "fake_set_event_query": &hooks.eventQuery, "fake_live_graphs": &hooks.liveGraphs} {
		addr, err := dlsym(h, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := registerFunc(fptr, addr); err != nil {
			t.Fatal(err)
		}
	}
	return l, hooks
}

func newFakeContext(t *testing.T) (*Lib, *fakeHooks, *Context) {
	t.Helper()
	l, h := loadFake(t)
	c, err := l.NewContext(0)
	if err != nil {
		t.Fatalf("NewContext: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return l, h, c
}

func TestLoadMissingDriver(t *testing.T) {
	_, err := LoadWith(LoadOptions{CUDA: "/nonexistent/dir/libcuda.so.1"})
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("want ErrNoDriver, got %v", err)
	}
	if !dlSupported {
		return
	}
	if !strings.Contains(err.Error(), "/nonexistent/dir/libcuda.so.1") {
		t.Errorf("error does not name the path: %v", err)
	}
}

func TestFakeLoadAndProps(t *testing.T) {
	l, _ := loadFake(t)
	if v, err := l.DriverVersion(); err != nil || v != 13000 {
		t.Errorf("DriverVersion = %d, %v", v, err)
	}
	if n, err := l.DeviceCount(); err != nil || n != 1 {
		t.Errorf("DeviceCount = %d, %v", n, err)
	}
	if l.elapsedSym != "cuEventElapsedTime_v2" {
		t.Errorf("bound %s, want cuEventElapsedTime_v2", l.elapsedSym)
	}
	p, err := l.Props(0)
	if err != nil {
		t.Fatal(err)
	}
	want := DeviceProps{Ordinal: 0, Name: "Fake H100 (cudadrv test)", Major: 9, Minor: 0, SMs: 132,
		MaxThreadsPerBlock: 1024, MaxThreadsPerSM: 2048, MaxBlocksPerSM: 32, MaxSharedPerBlock: 49152,
		MaxSharedPerBlockOptin: 232448, MaxSharedPerSM: 233472, ReservedSharedPerBlock: 1024,
		RegsPerBlock: 65536, RegsPerSM: 65536, WarpSize: 32, L2Bytes: 52428800, ClockKHz: 1980000,
		MemClockKHz: 2619000, MemBusWidth: 5120, TotalMem: 85520809984}
	if p != want {
		t.Errorf("Props:\n got %+v\nwant %+v", p, want)
	}
	if _, err := l.Props(3); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_INVALID_DEVICE") {
		t.Errorf("Props(3): %v", err)
	}
	if v, err := l.DeviceAttribute(0, AttrMaxSharedPerBlockOptin); err != nil || v != 232448 {
		t.Errorf("DeviceAttribute = %d, %v", v, err)
	}
	_, err = l.DeviceAttribute(0, DeviceAttr(9999))
	var e *Error
	if !errors.As(err, &e) || e.Name != "CUDA_ERROR_INVALID_VALUE" || e.Msg != "invalid argument" {
		t.Errorf("bad attribute: %v", err)
	}
	if !l.HasNVRTC() || !l.HasCUBLAS() || l.NVRTCError() != nil || l.CUBLASError() != nil {
		t.Error("optional libraries not loaded")
	}
	if ma, mi, err := l.NVRTCVersion(); err != nil || ma != 13 || mi != 0 {
		t.Errorf("NVRTCVersion = %d.%d, %v", ma, mi, err)
	}
	if _, err := l.NewContext(1); err == nil {
		t.Error("NewContext(1) succeeded")
	}
}

func TestFakeNoDevice(t *testing.T) {
	so := buildFake(t)
	t.Setenv("FAKECUDA_NO_DEVICE", "1")
	_, err := LoadWith(LoadOptions{CUDA: so, SkipNVRTC: true, SkipCUBLAS: true})
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("want ErrNoDriver, got %v", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Call != "cuInit" || e.Name != "CUDA_ERROR_NO_DEVICE" {
		t.Errorf("want the cuInit error inside, got %v", err)
	}
}

func TestFakeMissingOptional(t *testing.T) {
	so := buildFake(t)
	l, err := LoadWith(LoadOptions{CUDA: so, NVRTC: "/nonexistent/libnvrtc.so.13", CUBLAS: "/nonexistent/libcublas.so.13"})
	if err != nil {
		t.Fatal(err)
	}
	if l.HasNVRTC() || l.HasCUBLAS() {
		t.Fatal("optional libraries reported loaded")
	}
	if err := l.NVRTCError(); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "libnvrtc.so.13") {
		t.Errorf("NVRTCError = %v", err)
	}
	if _, _, err := l.Compile("x", "x.cu", nil); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Compile without NVRTC: %v", err)
	}
	c, err := l.NewContext(0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Blas(); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "cuBLAS") {
		t.Errorf("Blas without cuBLAS: %v", err)
	}
}

func TestFakeMemory(t *testing.T) {
	l, hooks, c := newFakeContext(t)

	// The fake driver, like the real one, refuses calls from a thread
	// without a current context: the test goroutine has none.
	var raw uint64
	if r := l.cu.cuMemAlloc(&raw, 64); r != cudaErrorInvalidContext {
		t.Fatalf("cuMemAlloc off the context thread returned %d, want %d", r, cudaErrorInvalidContext)
	}
	if s := hooks.get(); s.streamFlags != cuStreamDefault || s.streams != 1 || s.primaryRefs != 1 {
		t.Errorf("after NewContext: %+v", s)
	}

	const n = 1000
	src := make([]float32, n)
	for i := range src {
		src[i] = float32(i) * 0.5
	}
	p, err := c.Alloc(n * 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CopyHtoD(p, AsBytes(src)); err != nil {
		t.Fatal(err)
	}
	q, err := c.Alloc(n * 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CopyDtoD(q, p, n*4); err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, n)
	if err := c.CopyDtoH(AsBytes(dst), q); err != nil {
		t.Fatal(err)
	}
	for i := range dst {
		if dst[i] != src[i] {
			t.Fatalf("dst[%d] = %v, want %v", i, dst[i], src[i])
		}
	}
	nan := math.Float32bits(float32(math.NaN()))
	if err := c.MemsetD32(q.Add(8), nan, 10); err != nil {
		t.Fatal(err)
	}
	if err := c.CopyDtoH(AsBytes(dst), q); err != nil {
		t.Fatal(err)
	}
	if dst[1] != src[1] || !math.IsNaN(float64(dst[2])) || !math.IsNaN(float64(dst[11])) || dst[12] != src[12] {
		t.Errorf("memset range wrong: %v", dst[:14])
	}
	free, total, err := c.MemInfo()
	if err != nil || total != 85520809984 || free <= 0 || free > total {
		t.Errorf("MemInfo = %d, %d, %v", free, total, err)
	}
	if err := c.Do(func(t *Thread) error {
		if n, b := t.Allocated(); n != 2 || b != 8000 {
			return fmt.Errorf("Allocated = %d, %d", n, b)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	if err := c.Free(p); err != nil {
		t.Fatal(err)
	}
	if err := c.Free(p); err == nil || !strings.Contains(err.Error(), "double free") {
		t.Errorf("double free: %v", err)
	}
	if _, err := c.Alloc(0); err == nil {
		t.Error("Alloc(0) succeeded")
	}
	_, err = c.Alloc(1 << 41)
	var e *Error
	if !errors.As(err, &e) || e.Call != "cuMemAlloc_v2" || e.Name != "CUDA_ERROR_OUT_OF_MEMORY" {
		t.Errorf("huge Alloc: %v", err)
	} else if got := err.Error(); got != "cuMemAlloc_v2 (2199023255552 bytes): CUDA_ERROR_OUT_OF_MEMORY: out of memory" {
		t.Errorf("error text %q", got)
	}
	if err := c.Free(0); err != nil {
		t.Error(err)
	}
	// q is left allocated: Close frees it.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if s := hooks.get(); s.allocs != 0 || s.primaryRefs != 0 || s.streams != 0 {
		t.Errorf("after Close: %+v", s)
	}
	if _, err := c.Alloc(4); !errors.Is(err, ErrClosed) {
		t.Errorf("Alloc after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

const fakeSrc = `extern "C" __global__ void saxpy(int n, float a, const float *x, float *y) {}`

func TestFakeCompileAndLaunch(t *testing.T) {
	l, hooks, c := newFakeContext(t)
	p := c.Props()
	opts := []string{"--gpu-architecture=" + p.Arch(), "-default-device", "--std=c++17", "-lineinfo"}
	img, log, err := l.Compile(fakeSrc, "saxpy.cu", opts)
	if err != nil {
		t.Fatal(err)
	}
	// The fake NVRTC echoes the options it received: this checks the
	// const char* const* marshalling.
	if want := "fake nvrtc: 4 options: --gpu-architecture=sm_90 -default-device --std=c++17 -lineinfo"; !strings.Contains(log, want) {
		t.Errorf("log %q lacks %q", log, want)
	}
	if !strings.HasPrefix(string(img), "FAKECUBIN arch=sm_90\n") || !strings.HasSuffix(string(img), fakeSrc) {
		t.Errorf("CUBIN image %q", img)
	}
	ptx, _, err := l.Compile(fakeSrc, "", []string{"--gpu-architecture=compute_90"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(ptx), "//FAKEPTX arch=compute_90") || ptx[len(ptx)-1] != 0 {
		t.Errorf("PTX image %q", ptx)
	}

	_, log, err = l.Compile("#error boom\n", "bad.cu", []string{"-arch=sm_90"})
	var e *Error
	if !errors.As(err, &e) || e.Lib != LibNVRTC || e.Name != "NVRTC_ERROR_COMPILATION" || !strings.Contains(e.Log, "bad.cu(1): error: fake compile error") {
		t.Fatalf("compile error: %v", err)
	}
	if log != e.Log || !strings.Contains(err.Error(), "nvrtcCompileProgram (bad.cu -arch=sm_90): NVRTC_ERROR_COMPILATION") ||
		!strings.Contains(err.Error(), "fake compile error") {
		t.Errorf("compile error text %q", err.Error())
	}
	if _, _, err := l.Compile(fakeSrc, "x.cu", []string{"--bogus"}); !errors.As(err, &e) || e.Name != "NVRTC_ERROR_INVALID_OPTION" {
		t.Errorf("bad option: %v", err)
	}
	if _, _, err := l.Compile("a\x00b", "x.cu", nil); err == nil {
		t.Error("NUL in source accepted")
	}

	// Compiling from many goroutines at once (a compile pool).
	concurrently(t, 16, func(i int) error {
		src := fmt.Sprintf("// variant %d\n%s", i, fakeSrc)
		img, _, err := l.Compile(src, fmt.Sprintf("v%d.cu", i), []string{"--gpu-architecture=sm_90"})
		if err == nil && !strings.Contains(string(img), fmt.Sprintf("variant %d", i)) {
			err = fmt.Errorf("variant %d: wrong image", i)
		}
		return err
	})

	// JIT error log.
	_, err = c.LoadModule([]byte("BADPTX"))
	if !errors.As(err, &e) || e.Name != "CUDA_ERROR_INVALID_PTX" || !strings.Contains(e.Log, "ptxas fatal") || e.Detail != "PTX image, 6 bytes" {
		t.Fatalf("bad PTX: %v", err)
	}
	m, err := c.LoadModule(img)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.InfoLog, "fake JIT: loaded") {
		t.Errorf("InfoLog %q", m.InfoLog)
	}
	if _, err := m.Function("nope"); !errors.As(err, &e) || e.Name != "CUDA_ERROR_NOT_FOUND" ||
		err.Error() != "cuModuleGetFunction (nope): CUDA_ERROR_NOT_FOUND: named symbol not found" {
		t.Errorf("missing function: %v", err)
	}
	f, err := m.Function("saxpy")
	if err != nil {
		t.Fatal(err)
	}
	if regs, err := f.Attr(FuncNumRegs); err != nil || regs != 24 {
		t.Errorf("NUM_REGS = %d, %v", regs, err)
	}
	if v, err := f.Attr(FuncMaxThreadsPerBlock); err != nil || v != 1024 {
		t.Errorf("MAX_THREADS = %d, %v", v, err)
	}
	if occ, err := f.MaxActiveBlocksPerSM(256, 0); err != nil || occ != 8 {
		t.Errorf("occupancy = %d, %v", occ, err)
	}

	// saxpy: y = a*x + y, checked element by element.
	const n = 1000
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(i), float32(2*i+1)
	}
	dx, _ := c.Alloc(n * 4)
	dy, _ := c.Alloc(n * 4)
	if err := c.CopyHtoD(dx, AsBytes(x)); err != nil {
		t.Fatal(err)
	}
	if err := c.CopyHtoD(dy, AsBytes(y)); err != nil {
		t.Fatal(err)
	}
	grid := [3]uint32{(n + 255) / 256, 1, 1}
	block := [3]uint32{256, 1, 1}
	if err := c.Launch(f, grid, block, 0, int32(n), float32(3), dx, dy); err != nil {
		t.Fatal(err)
	}
	if got, want := hooks.lastLaunch(), "saxpy grid=4,1,1 block=256,1,1 shared=0 stream=set"; got != want {
		t.Errorf("last launch %q, want %q", got, want)
	}
	out := make([]float32, n)
	if err := c.CopyDtoH(AsBytes(out), dy); err != nil {
		t.Fatal(err)
	}
	for i := range out {
		if want := 3*x[i] + y[i]; out[i] != want {
			t.Fatalf("saxpy[%d] = %v, want %v", i, out[i], want)
		}
	}

	// Dynamic shared memory above 48 KiB needs the opt-in attribute.
	if err := c.Launch(f, grid, block, 64<<10, int32(n), float32(0), dx, dy); err == nil {
		t.Error("64 KiB dynamic shared memory launched without opt-in")
	} else if !strings.Contains(err.Error(), "cuLaunchKernel (saxpy grid=[4 1 1] block=[256 1 1] shared=65536 args=[int32 float32 cudadrv.DevPtr cudadrv.DevPtr])") {
		t.Errorf("launch error text %q", err)
	}
	if err := f.SetMaxDynamicShared(64 << 10); err != nil {
		t.Fatal(err)
	}
	if v, _ := f.Attr(FuncMaxDynamicSharedBytes); v != 64<<10 {
		t.Errorf("MAX_DYNAMIC_SHARED = %d", v)
	}
	if err := c.Launch(f, grid, block, 64<<10, int32(n), float32(0), dx, dy); err != nil {
		t.Errorf("launch with opt-in: %v", err)
	}
	if err := f.SetMaxDynamicShared(1 << 20); err == nil {
		t.Error("1 MiB dynamic shared memory accepted")
	}
	if err := c.Launch(f, [3]uint32{0, 1, 1}, block, 0, int32(n), float32(0), dx, dy); err == nil {
		t.Error("zero grid accepted")
	}
	if err := c.Launch(f, grid, block, 0, n, float32(0), dx, dy); err == nil {
		t.Error("Go int argument accepted")
	}

	// Every argument type, read back by the fake kernel from kernelParams.
	fa, err := m.Function("argdump")
	if err != nil {
		t.Fatal(err)
	}
	dout, _ := c.Alloc(13 * 8)
	checkArgdump(t, c, fa, dout)

	// Packed once, launched many times from one closure.
	packed, err := PackArgs(int32(n), float32(1), dx, dy)
	if err != nil {
		t.Fatal(err)
	}
	before := hooks.get().launches
	if err := c.Do(func(t *Thread) error {
		for i := 0; i < 50; i++ {
			if err := t.LaunchArgs(f, grid, block, 0, packed); err != nil {
				return err
			}
		}
		return t.Sync()
	}); err != nil {
		t.Fatal(err)
	}
	if d := hooks.get().launches - before; d != 50 {
		t.Errorf("%d launches counted, want 50", d)
	}

	if err := m.Unload(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Attr(FuncNumRegs); err == nil || !strings.Contains(err.Error(), "unloaded") {
		t.Errorf("function of unloaded module: %v", err)
	}
	if err := m.Unload(); err != nil {
		t.Errorf("second Unload: %v", err)
	}
	if _, err := c.LoadModule(img); err != nil { // left loaded: Close unloads it
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if s := hooks.get(); s.modules != 0 || s.allocs != 0 || s.events != 0 {
		t.Errorf("after Close: %+v", s)
	}
}

func loadSaxpy(t *testing.T, l *Lib, c *Context) *Function {
	t.Helper()
	return compileFunction(t, l, c, fakeSrc, "saxpy.cu", "sm_90", "saxpy")
}

// compileFunction compiles src for arch, loads it into c and returns its
// kernel fn.
func compileFunction(t *testing.T, l *Lib, c *Context, src, name, arch, fn string) *Function {
	t.Helper()
	img, _, err := l.Compile(src, name, []string{"--gpu-architecture=" + arch})
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.LoadModule(img)
	if err != nil {
		t.Fatal(err)
	}
	f, err := m.Function(fn)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFakeTiming(t *testing.T) {
	l, hooks, c := newFakeContext(t)
	f := loadSaxpy(t, l, c)
	dx, _ := c.Alloc(4096)
	dy, _ := c.Alloc(4096)
	launch := func(t *Thread, i int) error {
		return t.Launch(f, [3]uint32{4, 1, 1}, [3]uint32{256, 1, 1}, 0, int32(1024), float32(i), dx, dy)
	}
	ms, err := c.TimeLaunches(100, launch)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 100 {
		t.Fatalf("%d times", len(ms))
	}
	for i, v := range ms {
		if math.Abs(v-0.010) > 1e-4 { // the fake clock advances 0.010 ms per launch
			t.Fatalf("launch %d took %v ms, want 0.010", i, v)
		}
	}
	// Groups of back-to-back launches: one event a group, each time per launch.
	var calls []int
	err = c.Do(func(t *Thread) error {
		ms, _, err := t.TimeGroupsAhead(4, 8, func(t *Thread, i int) error {
			calls = append(calls, i)
			return launch(t, i)
		})
		if err == nil && len(ms) != 4 {
			return fmt.Errorf("%d times for 4 groups", len(ms))
		}
		for g, v := range ms {
			if math.Abs(v-0.010) > 1e-4 {
				return fmt.Errorf("group %d: %v ms a launch, want 0.010", g, v)
			}
		}
		return err
	})
	if err != nil || len(calls) != 32 || calls[31] != 31 {
		t.Errorf("TimeGroupsAhead(4, 8): %v; launches %v", err, calls)
	}
	if err := c.Do(func(t *Thread) error { _, _, err := t.TimeGroupsAhead(1, 0, launch); return err }); err == nil {
		t.Error("TimeGroupsAhead with 0 launches a group: no error")
	}
	// A graph of 8 captured launches, replayed 3 times: the fake's replay
	// takes 0.005 ms a launch, a stream launch 0.010; nothing is left alive.
	err = c.Do(func(t *Thread) error {
		if !t.HasGraphs() {
			return errors.New("the fake driver's graph API was not bound")
		}
		ms, err := t.TimeGraph(3, 8, launch)
		if err != nil {
			return err
		}
		if len(ms) != 3 {
			return fmt.Errorf("%d times for 3 replays", len(ms))
		}
		for r, v := range ms {
			if math.Abs(v-0.005) > 1e-4 {
				return fmt.Errorf("replay %d: %v ms a launch, want 0.005", r, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("TimeGraph(3, 8): %v", err)
	}
	// A launch that fails while capturing ends the capture and frees the graph.
	boomCapture := errors.New("boom in capture")
	err = c.Do(func(t *Thread) error {
		_, err := t.CaptureGraph(4, func(t *Thread, i int) error {
			if i == 2 {
				return boomCapture
			}
			return launch(t, i)
		})
		return err
	})
	if !errors.Is(err, boomCapture) || !strings.Contains(err.Error(), "captured launch 2 of 4") {
		t.Errorf("a failing captured launch: %v", err)
	}
	if n := hooks.liveGraphs(); n != 0 {
		t.Errorf("%d graphs left alive", n)
	}
	// After a failed capture the stream is usable again.
	if _, err := c.TimeLaunches(2, launch); err != nil {
		t.Errorf("launches after a failed capture: %v", err)
	}
	total, err := c.TimeBatch(100, launch)
	if err != nil || math.Abs(total-1.0) > 1e-3 {
		t.Errorf("TimeBatch = %v, %v; want 1.0 ms", total, err)
	}
	two, err := c.Time(func(t *Thread) error {
		if err := launch(t, 0); err != nil {
			return err
		}
		return launch(t, 1)
	})
	if err != nil || math.Abs(two-0.020) > 1e-4 {
		t.Errorf("Time = %v, %v; want 0.020 ms", two, err)
	}
	// Whether the host stayed ahead of the GPU is cuEventQuery on the
	// first event once every launch is queued.
	for _, tc := range []struct {
		query int32
		ahead bool
	}{{600, true}, {0, false}} {
		hooks.eventQuery(tc.query)
		err := c.Do(func(t *Thread) error {
			ms, ahead, err := t.TimeLaunchesAhead(5, launch)
			if err == nil && (len(ms) != 5 || ahead != tc.ahead) {
				return fmt.Errorf("%d times, ahead %v", len(ms), ahead)
			}
			return err
		})
		if err != nil {
			t.Errorf("cuEventQuery answering %d: %v, want ahead %v", tc.query, err, tc.ahead)
		}
	}
	hooks.eventQuery(0)
	if z, err := c.TimeLaunches(0, launch); err != nil || len(z) != 0 {
		t.Errorf("TimeLaunches(0) = %v, %v", z, err)
	}
	if s := hooks.get(); s.events != 101 {
		t.Errorf("%d events pooled, want 101", s.events)
	}

	boom := errors.New("boom")
	if _, err := c.TimeLaunches(10, func(t *Thread, i int) error {
		if i == 3 {
			return boom
		}
		return launch(t, i)
	}); !errors.Is(err, boom) || !strings.Contains(err.Error(), "timed launch 3 of 10") {
		t.Errorf("launch error: %v", err)
	}
	if _, err := c.TimeBatch(2, func(t *Thread, i int) error {
		_, err := t.TimeBatch(1, launch)
		return err
	}); !errors.Is(err, errNestedTiming) {
		t.Errorf("nested timing: %v", err)
	}
	// The timing state recovers after the errors above.
	if _, err := c.TimeBatch(1, launch); err != nil {
		t.Errorf("timing after errors: %v", err)
	}
}

func TestFakeThreading(t *testing.T) {
	l, _, c := newFakeContext(t)

	// A marshalling method called from the context thread is refused
	// instead of deadlocking (Linux detects it with gettid).
	err := c.Do(func(t *Thread) error {
		_, err := c.Alloc(16)
		return err
	})
	if runtime.GOOS == "linux" && !errors.Is(err, ErrReentrant) {
		t.Errorf("re-entrant Alloc: %v", err)
	}
	if err := c.Do(func(*Thread) error { return c.Close() }); runtime.GOOS == "linux" && !errors.Is(err, ErrReentrant) {
		t.Errorf("re-entrant Close: %v", err)
	}

	// A *Thread kept after its closure is refused.
	var kept *Thread
	if err := c.Do(func(t *Thread) error { kept = t; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := kept.Alloc(16); !errors.Is(err, errThreadInactive) {
		t.Errorf("stale Thread: %v", err)
	}

	// A panic in a closure becomes an error and the thread survives.
	err = c.Do(func(*Thread) error { panic("kaboom") })
	if err == nil || !strings.Contains(err.Error(), "panic on the context thread: kaboom") {
		t.Errorf("panic: %v", err)
	}

	// Many goroutines at once, each allocating, copying and freeing.
	concurrently(t, 32, func(g int) error {
		buf := make([]int32, 256)
		for i := range buf {
			buf[i] = int32(g*1000 + i)
		}
		p, err := c.Alloc(1024)
		if err != nil {
			return err
		}
		defer c.Free(p)
		if err := c.CopyHtoD(p, AsBytes(buf)); err != nil {
			return err
		}
		back := make([]int32, 256)
		if err := c.CopyDtoH(AsBytes(back), p); err != nil {
			return err
		}
		for i := range back {
			if back[i] != buf[i] {
				return fmt.Errorf("goroutine %d: element %d = %d", g, i, back[i])
			}
		}
		return nil
	})

	// runtime.Goexit on the context thread (t.FailNow in a closure) answers
	// the caller and leaves a closed context instead of a deadlock.
	cg, err := l.NewContext(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := cg.Do(func(*Thread) error { runtime.Goexit(); return nil }); err == nil || !strings.Contains(err.Error(), "Goexit") {
		t.Errorf("Goexit: %v", err)
	}
	if _, err := cg.Alloc(16); !errors.Is(err, ErrClosed) {
		t.Errorf("after Goexit: %v", err)
	}
	if err := cg.Close(); err != nil {
		t.Errorf("Close after Goexit: %v", err)
	}

	// Two contexts on the same device, each with its own thread.
	c2, err := l.NewContext(0)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := c2.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Free(p2); err != nil {
		t.Fatal(err)
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Alloc(64); err != nil { // the first one still works
		t.Fatal(err)
	}
}

func TestFakeSticky(t *testing.T) {
	l, hooks, c := newFakeContext(t)
	defer hooks.clearSticky()
	f := compileFunction(t, l, c, fakeSrc, "f.cu", "sm_90", "fault")
	if err := c.Launch(f, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0); err != nil {
		t.Fatalf("launch is asynchronous, got %v", err)
	}
	err := c.Sync()
	var e *Error
	if !errors.As(err, &e) || !e.Sticky || e.Name != "CUDA_ERROR_ILLEGAL_ADDRESS" || !errors.Is(err, ErrContextLost) {
		t.Fatalf("Sync after fault: %v", err)
	}
	if !strings.HasPrefix(err.Error(), "cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered [sticky error: the CUDA context is corrupted and unusable") {
		t.Errorf("sticky text %q", err)
	}
	_, err = c.Alloc(16)
	if !errors.Is(err, ErrContextLost) || !errors.As(err, &e) || e.Name != "CUDA_ERROR_ILLEGAL_ADDRESS" {
		t.Errorf("Alloc after sticky error: %v", err)
	}
	if !strings.Contains(err.Error(), "unusable after a sticky error; the first error was: cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS") {
		t.Errorf("lost text %q", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close after sticky error: %v", err)
	}
}

func TestFakeBlas(t *testing.T) {
	_, hooks, c := newFakeContext(t)
	b, err := c.Blas()
	if err != nil {
		t.Fatal(err)
	}
	if s := hooks.get(); s.mathMode != cublasDefaultMath {
		t.Errorf("math mode %d", s.mathMode)
	}
	b2, err := c.Blas()
	if err != nil || b2 != b {
		t.Errorf("Blas not cached: %v", err)
	}
	checkGemm(t, c, b, 1e-6)
	checkSgemv(t, c, b)

	// An unsupported type combination is reported by name.
	err = b.GemmEx(false, false, 2, 2, 2, 1, 0, R64F, 2, 0, R64F, 2, 0, 0, R64F, 2)
	var e *Error
	if !errors.As(err, &e) || e.Name != "CUBLAS_STATUS_NOT_SUPPORTED" || e.Lib != LibCUBLAS {
		t.Errorf("f64 GemmEx: %v", err)
	}
	if !strings.HasPrefix(err.Error(), "cublasGemmEx (transA=false transB=false m=2 n=2 k=2 A:CUDA_R_64F lda=2") {
		t.Errorf("GemmEx error text %q", err)
	}
	err = b.GemmEx(false, false, 4, 4, 4, 1, 0, R32F, 1, 0, R32F, 4, 0, 0, R32F, 4)
	if !errors.As(err, &e) || e.Name != "CUBLAS_STATUS_INVALID_VALUE" {
		t.Errorf("bad lda: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Sgemv(false, 1, 1, 1, 0, 1, 0, 1, 0, 0, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("Blas after Close: %v", err)
	}
}

// ---- cases and CPU references shared with the GPU smoke test ----

// argdumpCase returns arguments of every supported type for the kernel
// argdump(signed char, unsigned char, short, unsigned short, int, unsigned,
// long long, unsigned long long, float, double,
// struct { int x; float y; long long z; }, unsigned long long *out)
// and the 13 words it must write to out.
// checkArgdump launches the argdump kernel fa on one thread with every
// argument type and checks what it read back into out.
func checkArgdump(t *testing.T, c *Context, fa *Function, out DevPtr) {
	t.Helper()
	args, want := argdumpCase(out)
	one := [3]uint32{1, 1, 1}
	if err := c.Launch(fa, one, one, 0, args...); err != nil {
		t.Fatal(err)
	}
	var got [13]uint64
	if err := c.CopyDtoH(AsBytes(got[:]), out); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("argdump:\n got %v\nwant %v", got, want)
	}
}

func argdumpCase(out DevPtr) ([]any, [13]uint64) {
	raw := make([]byte, 16) // struct { int x; float y; long long z; }
	*(*int32)(unsafe.Pointer(&raw[0])) = -77
	*(*float32)(unsafe.Pointer(&raw[4])) = 0.25
	*(*int64)(unsafe.Pointer(&raw[8])) = -1 << 40
	args := []any{int8(-7), uint8(200), int16(-1234), uint16(54321), int32(-123456789), uint32(4000000000),
		int64(-1) << 50, uint64(1)<<63 | 5, float32(-1.75), float64(3.125), RawArg(raw), out}
	m7, m1234, m123456789, m77 := int64(-7), int64(-1234), int64(-123456789), int64(-77)
	m50, m40 := int64(-1)<<50, int64(-1)<<40
	want := [13]uint64{uint64(m7), 200, uint64(m1234), 54321, uint64(m123456789), 4000000000,
		uint64(m50), 1<<63 | 5, uint64(math.Float32bits(-1.75)), math.Float64bits(3.125),
		uint64(m77), uint64(math.Float32bits(0.25)), uint64(m40)}
	return args, want
}

// gemmRef computes C = alpha*op(A)*op(B) + beta*C in float64, column-major.
func gemmRef(transA, transB bool, m, n, k int, alpha float64, A []float64, lda int, B []float64, ldb int, beta float64, C []float64, ldc int) {
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			s := 0.0
			for l := 0; l < k; l++ {
				var a, b float64
				if transA {
					a = A[l+i*lda]
				} else {
					a = A[i+l*lda]
				}
				if transB {
					b = B[j+l*ldb]
				} else {
					b = B[l+j*ldb]
				}
				s += a * b
			}
			C[i+j*ldc] = alpha*s + beta*C[i+j*ldc]
		}
	}
}

// randHalfExact returns values exactly representable in float16 (and so
// in float32): multiples of 1/8 in [-2, 2].
func randHalfExact(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(r.Intn(33)-16) / 8
	}
	return v
}

func toF32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func toF16(v []float64) []uint16 {
	out := make([]uint16, len(v))
	for i, x := range v {
		out[i] = half.FromFloat32(float32(x))
	}
	return out
}

// checkGemm runs GemmEx for every transpose combination with f32 and f16
// inputs, f32 and f16 outputs, on odd sizes with padded leading
// dimensions, against gemmRef. tol is relative to the magnitude of the sum.
func checkGemm(t *testing.T, c *Context, b *Blas, tol float64) {
	t.Helper()
	r := rand.New(rand.NewSource(1))
	const m, n, k = 37, 23, 41
	for _, in := range []DataType{R32F, R16F} {
		for _, out := range []DataType{R32F, R16F} {
			if in == R32F && out == R16F {
				continue // not a cuBLAS combination
			}
			for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				ta, tb := tr[0], tr[1]
				rowsA, colsA := m, k
				if ta {
					rowsA, colsA = k, m
				}
				rowsB, colsB := k, n
				if tb {
					rowsB, colsB = n, k
				}
				lda, ldb, ldc := rowsA+3, rowsB+1, m+2
				A := randHalfExact(r, lda*colsA)
				B := randHalfExact(r, ldb*colsB)
				C := randHalfExact(r, ldc*n)
				alpha, beta := 0.5, -0.25
				if out == R16F {
					beta = 0 // keeps the f16 output away from rounding in the accumulate
				}
				want := append([]float64(nil), C...)
				gemmRef(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, want, ldc)

				upload := func(v []float64, dt DataType) DevPtr {
					var bytes []byte
					if dt == R16F {
						bytes = AsBytes(toF16(v))
					} else {
						bytes = AsBytes(toF32(v))
					}
					p, err := c.Alloc(int64(len(bytes)))
					if err != nil {
						t.Fatal(err)
					}
					if err := c.CopyHtoD(p, bytes); err != nil {
						t.Fatal(err)
					}
					return p
				}
				dA, dB, dC := upload(A, in), upload(B, in), upload(C, out)
				if err := b.GemmEx(ta, tb, m, n, k, float32(alpha), dA, in, lda, dB, in, ldb, float32(beta), dC, out, ldc); err != nil {
					t.Fatalf("GemmEx %v->%v ta=%v tb=%v: %v", in, out, ta, tb, err)
				}
				got := make([]float64, ldc*n)
				if out == R16F {
					h := make([]uint16, ldc*n)
					if err := c.CopyDtoH(AsBytes(h), dC); err != nil {
						t.Fatal(err)
					}
					for i := range h {
						got[i] = float64(half.ToFloat32(h[i]))
					}
				} else {
					f := make([]float32, ldc*n)
					if err := c.CopyDtoH(AsBytes(f), dC); err != nil {
						t.Fatal(err)
					}
					for i := range f {
						got[i] = float64(f[i])
					}
				}
				maxErr := 0.0
				for j := 0; j < n; j++ {
					for i := 0; i < ldc; i++ {
						idx := i + j*ldc
						if i >= m { // padding rows must be untouched
							if got[idx] != float64(float32(C[idx])) {
								t.Fatalf("GemmEx %v->%v ta=%v tb=%v wrote padding C[%d,%d]", in, out, ta, tb, i, j)
							}
							continue
						}
						lim := tol * (1 + math.Abs(want[idx]))
						if out == R16F {
							lim = 1e-3 * (1 + math.Abs(want[idx])) // f16 output rounding
						}
						d := math.Abs(got[idx] - want[idx])
						maxErr = math.Max(maxErr, d)
						if d > lim {
							t.Fatalf("GemmEx %v->%v ta=%v tb=%v: C[%d,%d] = %v, want %v", in, out, ta, tb, i, j, got[idx], want[idx])
						}
					}
				}
				t.Logf("GemmEx A,B %v -> C %v transA=%v transB=%v m=%d n=%d k=%d: max abs error %.3g", in, out, ta, tb, m, n, k, maxErr)
				for _, p := range []DevPtr{dA, dB, dC} {
					if err := c.Free(p); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
}

// checkSgemv runs Sgemv with and without transpose and strided vectors.
func checkSgemv(t *testing.T, c *Context, b *Blas) {
	t.Helper()
	r := rand.New(rand.NewSource(2))
	const m, n, lda = 45, 31, 48
	A := randHalfExact(r, lda*n)
	dA, _ := c.Alloc(int64(lda * n * 4))
	if err := c.CopyHtoD(dA, AsBytes(toF32(A))); err != nil {
		t.Fatal(err)
	}
	for _, trans := range []bool{false, true} {
		xn, yn := n, m
		if trans {
			xn, yn = m, n
		}
		const incx, incy = 2, 3
		x := randHalfExact(r, xn*incx)
		y := randHalfExact(r, yn*incy)
		dx, _ := c.Alloc(int64(len(x) * 4))
		dy, _ := c.Alloc(int64(len(y) * 4))
		if err := c.CopyHtoD(dx, AsBytes(toF32(x))); err != nil {
			t.Fatal(err)
		}
		if err := c.CopyHtoD(dy, AsBytes(toF32(y))); err != nil {
			t.Fatal(err)
		}
		alpha, beta := 1.5, 0.5
		if err := b.Sgemv(trans, m, n, float32(alpha), dA, lda, dx, incx, float32(beta), dy, incy); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, len(y))
		if err := c.CopyDtoH(AsBytes(got), dy); err != nil {
			t.Fatal(err)
		}
		maxErr := 0.0
		for i := 0; i < yn; i++ {
			s := 0.0
			for j := 0; j < xn; j++ {
				var a float64
				if trans {
					a = A[j+i*lda]
				} else {
					a = A[i+j*lda]
				}
				s += a * x[j*incx]
			}
			want := alpha*s + beta*y[i*incy]
			d := math.Abs(float64(got[i*incy]) - want)
			maxErr = math.Max(maxErr, d)
			if d > 1e-4*(1+math.Abs(want)) {
				t.Fatalf("Sgemv trans=%v: y[%d] = %v, want %v", trans, i, got[i*incy], want)
			}
			if i*incy+1 < len(got) && float64(got[i*incy+1]) != float64(float32(y[i*incy+1])) {
				t.Fatalf("Sgemv trans=%v wrote between strided elements", trans)
			}
		}
		t.Logf("Sgemv trans=%v m=%d n=%d incx=%d incy=%d: max abs error %.3g", trans, m, n, incx, incy, maxErr)
		c.Free(dx)
		c.Free(dy)
	}
	c.Free(dA)
}

// concurrently runs f(0), ..., f(n-1) in n goroutines at once, waits for
// them and reports each error.
func concurrently(t *testing.T, n int, f func(g int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			errs <- f(g)
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
