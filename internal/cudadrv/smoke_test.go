package cudadrv

// TestSmoke and TestSmokeSticky run on a real GPU and skip when Load
// reports ErrNoDriver (set CUDADRV_REQUIRE_GPU=1 to make that a failure).
// On the GPU machine:
//
//	CGO_ENABLED=0 go test -c -o cudadrv.test ./internal/cudadrv
//	CUDADRV_REQUIRE_GPU=1 ./cudadrv.test -test.v -test.run Smoke

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kerntune/kerntune/internal/testutil"
)

func loadOrSkip(t *testing.T) *Lib {
	t.Helper()
	l, err := Load()
	if errors.Is(err, ErrNoDriver) {
		testutil.SkipUnlessRequired(t, "CUDADRV_REQUIRE_GPU", "no CUDA driver/GPU: %v", err)
	}
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return l
}

// requireOrSkip skips a part that needs an optional library, or fails when
// CUDADRV_REQUIRE_GPU is set.
func requireOrSkip(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		testutil.SkipUnlessRequired(t, "CUDADRV_REQUIRE_GPU", "%v", err)
	}
}

// checkedContext opens a context on device 0 whose Close, when t ends,
// must succeed: after a sticky error too.
func checkedContext(t *testing.T, l *Lib) *Context {
	t.Helper()
	c, err := l.NewContext(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

const smokeSrc = `
struct Raw { int x; float y; long long z; };

extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// Reverses each block's chunk of 'words' floats through dynamic shared memory.
extern "C" __global__ void smem_rev(const float* __restrict__ in, float* __restrict__ out, int words) {
    extern __shared__ float s[];
    const float* src = in + (size_t)blockIdx.x * words;
    float* dst = out + (size_t)blockIdx.x * words;
    for (int i = threadIdx.x; i < words; i += blockDim.x) s[i] = src[i];
    __syncthreads();
    for (int i = threadIdx.x; i < words; i += blockDim.x) dst[i] = s[words - 1 - i];
}

extern "C" __global__ void argdump(signed char a, unsigned char b, short c, unsigned short d, int e, unsigned f,
                                   long long g, unsigned long long h, float i, double j, Raw k,
                                   unsigned long long* out) {
    out[0] = (unsigned long long)(long long)a;
    out[1] = b;
    out[2] = (unsigned long long)(long long)c;
    out[3] = d;
    out[4] = (unsigned long long)(long long)e;
    out[5] = f;
    out[6] = (unsigned long long)g;
    out[7] = h;
    out[8] = __float_as_uint(i);
    out[9] = (unsigned long long)__double_as_longlong(j);
    out[10] = (unsigned long long)(long long)k.x;
    out[11] = __float_as_uint(k.y);
    out[12] = (unsigned long long)k.z;
}

extern "C" __global__ void poke(int* p) { *p = 1; }
`

func stats(ms []float64) (median, min, max float64) {
	s := append([]float64(nil), ms...)
	sort.Float64s(s)
	return s[len(s)/2], s[0], s[len(s)-1]
}

func TestSmoke(t *testing.T) {
	l := loadOrSkip(t)
	cudaPath, nvrtcPath, blasPath := l.Paths()
	drv, err := l.DriverVersion()
	if err != nil {
		t.Fatal(err)
	}
	n, err := l.DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Go %s %s/%s; driver CUDA %d.%d (%d); %d device(s)", runtime.Version(), runtime.GOOS, runtime.GOARCH, drv/1000, drv%1000/10, drv, n)
	t.Logf("libcuda: %s; cuEventElapsedTime bound as %s", cudaPath, l.elapsedSym)
	if l.HasNVRTC() {
		ma, mi, err := l.NVRTCVersion()
		t.Logf("NVRTC %d.%d (%v): %s", ma, mi, err, nvrtcPath)
	} else {
		t.Logf("NVRTC unavailable: %v", l.NVRTCError())
	}
	if l.HasCUBLAS() {
		t.Logf("cuBLAS: %s", blasPath)
	} else {
		t.Logf("cuBLAS unavailable: %v", l.CUBLASError())
	}
	for i := 0; i < n; i++ {
		p, err := l.Props(i)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("device %d: %q %s, %d SMs, %.1f GiB, clock %d MHz, mem clock %d MHz x %d bit (peak %.0f GB/s), L2 %d MiB",
			i, p.Name, p.Arch(), p.SMs, float64(p.TotalMem)/(1<<30), p.ClockKHz/1000, p.MemClockKHz/1000, p.MemBusWidth,
			p.PeakBandwidth()/1e9, p.L2Bytes>>20)
		t.Logf("device %d limits: %d threads/block, %d threads/SM, %d blocks/SM, shared %d/%d(opt-in)/%d(SM) B, reserved %d B/block, regs %d/block %d/SM, warp %d",
			i, p.MaxThreadsPerBlock, p.MaxThreadsPerSM, p.MaxBlocksPerSM, p.MaxSharedPerBlock, p.MaxSharedPerBlockOptin,
			p.MaxSharedPerSM, p.ReservedSharedPerBlock, p.RegsPerBlock, p.RegsPerSM, p.WarpSize)
		if p.Major < 3 || p.SMs <= 0 || p.WarpSize != 32 || p.MaxThreadsPerBlock < 256 || p.TotalMem <= 0 {
			t.Errorf("implausible properties: %+v", p)
		}
	}

	c := checkedContext(t, l)
	props := c.Props()
	free, total, err := c.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("memory: %.2f GiB free of %.2f GiB", float64(free)/(1<<30), float64(total)/(1<<30))

	t.Run("errors", func(t *testing.T) {
		_, err := c.Alloc(1 << 52)
		var e *Error
		switch {
		case !errors.As(err, &e) || e.Call != "cuMemAlloc_v2" || e.Sticky:
			t.Errorf("4 PiB Alloc: %v", err)
		case e.Name == "CUDA_ERROR_OUT_OF_MEMORY":
			if want := "cuMemAlloc_v2 (4503599627370496 bytes): CUDA_ERROR_OUT_OF_MEMORY: out of memory"; err.Error() != want {
				t.Errorf("error text %q, want %q", err, want)
			}
		default:
			t.Logf("note: the driver reports %s rather than CUDA_ERROR_OUT_OF_MEMORY", e.Name)
		}
		t.Logf("4 PiB Alloc: %v", err)
		err = c.Do(func(*Thread) error { _, err := c.Alloc(16); return err })
		if !errors.Is(err, ErrReentrant) {
			t.Errorf("re-entrant call: %v", err)
		}
		_, err = c.LoadModule([]byte(".version 99.0\n.target sm_90\n.address_size 64\nthis is not ptx\n"))
		if !errors.As(err, &e) || e.Call != "cuModuleLoadDataEx" {
			t.Errorf("bad PTX: %v", err)
		}
		t.Logf("bad PTX: %v", err)
	})

	// Memory round trip from several goroutines.
	t.Run("memory", func(t *testing.T) {
		concurrently(t, 8, func(g int) error {
			const words = 1 << 20
			buf := make([]uint32, words)
			for i := range buf {
				buf[i] = uint32(g)<<24 | uint32(i)
			}
			p, err := c.Alloc(words * 4)
			if err != nil {
				return err
			}
			defer c.Free(p)
			q, err := c.Alloc(words * 4)
			if err != nil {
				return err
			}
			defer c.Free(q)
			if err := c.CopyHtoD(p, AsBytes(buf)); err != nil {
				return err
			}
			if err := c.MemsetD32(q, 0xdeadbeef, words); err != nil {
				return err
			}
			if err := c.CopyDtoD(q, p, words*2); err != nil { // first half only
				return err
			}
			back := make([]uint32, words)
			if err := c.CopyDtoH(AsBytes(back), q); err != nil {
				return err
			}
			for i := range back {
				want := buf[i]
				if i >= words/2 {
					want = 0xdeadbeef
				}
				if back[i] != want {
					return fmt.Errorf("goroutine %d: word %d = %#x, want %#x", g, i, back[i], want)
				}
			}
			return nil
		})
	})

	if !l.HasNVRTC() {
		requireOrSkip(t, l.NVRTCError())
	}
	opts := []string{"--gpu-architecture=" + props.Arch(), "-default-device", "--std=c++17", "-lineinfo"}
	start := time.Now()
	cubin, log, err := l.Compile(smokeSrc, "smoke.cu", opts)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	t.Logf("NVRTC %q: CUBIN %d bytes in %v; log %q", strings.Join(opts, " "), len(cubin), time.Since(start).Round(time.Millisecond), log)
	if imageKind(cubin) != "CUBIN" {
		t.Errorf("image with %v is not an ELF CUBIN: % x", opts, cubin[:min(8, len(cubin))])
	}
	ptx, _, err := l.Compile(smokeSrc, "smoke.cu", []string{"--gpu-architecture=" + props.VirtualArch(), "-default-device"})
	if err != nil {
		t.Fatalf("Compile PTX: %v", err)
	}
	if !strings.Contains(string(ptx), ".entry saxpy") || ptx[len(ptx)-1] != 0 {
		t.Errorf("PTX image lacks .entry saxpy or the NUL: %.200q", ptx)
	}
	_, log, err = l.Compile("__global__ void k() { undefined_symbol(); }", "broken.cu", opts)
	var e *Error
	if !errors.As(err, &e) || e.Name != "NVRTC_ERROR_COMPILATION" || !strings.Contains(e.Log, "undefined_symbol") || log == "" {
		t.Errorf("compile error: %v", err)
	}
	t.Logf("compile error as reported: %v", err)

	m, err := c.LoadModule(cubin)
	if err != nil {
		t.Fatal(err)
	}
	mPTX, err := c.LoadModule(ptx)
	if err != nil {
		t.Fatalf("LoadModule(PTX): %v", err)
	}
	t.Logf("PTX JIT info log: %q", mPTX.InfoLog)
	f, err := m.Function("saxpy")
	if err != nil {
		t.Fatal(err)
	}
	fPTX, err := mPTX.Function("saxpy")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Function("no_such_kernel"); !errors.As(err, &e) || e.Name != "CUDA_ERROR_NOT_FOUND" {
		t.Errorf("missing kernel: %v", err)
	} else {
		t.Logf("missing kernel: %v", err)
	}
	var attrs []string
	for _, a := range []FuncAttr{FuncNumRegs, FuncMaxThreadsPerBlock, FuncSharedSizeBytes, FuncLocalSizeBytes, FuncConstSizeBytes, FuncPTXVersion, FuncBinaryVersion, FuncMaxDynamicSharedBytes} {
		v, err := f.Attr(a)
		if err != nil {
			t.Errorf("%v: %v", a, err)
		}
		attrs = append(attrs, fmt.Sprintf("%s=%d", strings.TrimPrefix(a.String(), "CU_FUNC_ATTRIBUTE_"), v))
	}
	occ, err := f.MaxActiveBlocksPerSM(256, 0)
	if err != nil {
		t.Error(err)
	}
	t.Logf("saxpy: %s; %d blocks of 256 per SM", strings.Join(attrs, " "), occ)
	if bv, _ := f.Attr(FuncBinaryVersion); bv != props.Major*10+props.Minor {
		t.Errorf("BINARY_VERSION %d, want %d", bv, props.Major*10+props.Minor)
	}

	// saxpy, checked exactly (the values make a*x+y exact with or without FMA).
	const N = 1<<24 + 3
	x, y := make([]float32, N), make([]float32, N)
	for i := range x {
		x[i] = float32(i%1024) * 0.25
		y[i] = float32(i % 977)
	}
	dx, err := c.Alloc(N * 4)
	if err != nil {
		t.Fatal(err)
	}
	dy, err := c.Alloc(N * 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CopyHtoD(dx, AsBytes(x)); err != nil {
		t.Fatal(err)
	}
	if err := c.CopyHtoD(dy, AsBytes(y)); err != nil {
		t.Fatal(err)
	}
	grid, block := [3]uint32{(N + 255) / 256, 1, 1}, [3]uint32{256, 1, 1}
	for _, fn := range []*Function{f, fPTX} {
		if err := c.Launch(fn, grid, block, 0, int32(N), float32(3), dx, dy); err != nil {
			t.Fatal(err)
		}
	}
	out := make([]float32, N)
	if err := c.CopyDtoH(AsBytes(out), dy); err != nil {
		t.Fatal(err)
	}
	for i := range out {
		if want := 6*x[i] + y[i]; out[i] != want { // two launches: CUBIN and PTX module
			t.Fatalf("saxpy y[%d] = %v, want %v", i, out[i], want)
		}
	}
	t.Logf("saxpy n=%d (CUBIN + PTX-JIT modules): results exact", N)

	// Timing: 100 launches each between its own events, then one batch.
	launch := func(t *Thread, i int) error {
		return t.Launch(f, grid, block, 0, int32(N), float32(1), dx, dy)
	}
	if _, err := c.TimeBatch(10, launch); err != nil { // warm-up
		t.Fatal(err)
	}
	ms, err := c.TimeLaunches(100, launch)
	if err != nil {
		t.Fatal(err)
	}
	med, lo, hi := stats(ms)
	gbps := 12 * float64(N) / (med * 1e-3) / 1e9
	t.Logf("saxpy x100 (TimeLaunches): median %.4f ms, min %.4f, max %.4f -> %.0f GB/s (%.0f%% of peak)", med, lo, hi, gbps, 100*gbps*1e9/props.PeakBandwidth())
	if med <= 0 || med > 100 {
		t.Errorf("implausible saxpy time %v ms", med)
	}
	batch, err := c.TimeBatch(100, launch)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("saxpy x100 (TimeBatch): %.4f ms total, %.4f ms mean", batch, batch/100)
	args, err := PackArgs(int32(N), float32(1), dx, dy)
	if err != nil {
		t.Fatal(err)
	}
	hostStart := time.Now()
	small := [3]uint32{1, 1, 1}
	if err := c.Do(func(t *Thread) error {
		for i := 0; i < 1000; i++ {
			if err := t.LaunchArgs(f, small, [3]uint32{32, 1, 1}, 0, args); err != nil {
				return err
			}
		}
		return t.Sync()
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("host cost: 1000 tiny launches + sync in %v (%.2f µs/launch)", time.Since(hostStart).Round(time.Microsecond), float64(time.Since(hostStart).Microseconds())/1000)
	hostStart = time.Now()
	for i := 0; i < 200; i++ {
		if err := c.Launch(f, small, [3]uint32{32, 1, 1}, 0, int32(N), float32(1), dx, dy); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("host cost: 200 marshalled Context.Launch calls in %v", time.Since(hostStart).Round(time.Microsecond))

	// Every kernel argument type, read back by the device.
	t.Run("argtypes", func(t *testing.T) {
		fa, err := m.Function("argdump")
		if err != nil {
			t.Fatal(err)
		}
		dout, err := c.Alloc(13 * 8)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Free(dout)
		checkArgdump(t, c, fa, dout)
	})

	// More than 48 KiB of dynamic shared memory needs the opt-in attribute.
	t.Run("bigshared", func(t *testing.T) {
		fs, err := m.Function("smem_rev")
		if err != nil {
			t.Fatal(err)
		}
		const bytes = 100 << 10
		const words, blocks = bytes / 4, 64
		if props.MaxSharedPerBlockOptin < bytes {
			t.Skipf("device allows only %d bytes of shared memory per block", props.MaxSharedPerBlockOptin)
		}
		in := make([]float32, words*blocks)
		for i := range in {
			in[i] = float32(i)
		}
		din, _ := c.Alloc(int64(len(in) * 4))
		dout, _ := c.Alloc(int64(len(in) * 4))
		defer c.Free(din)
		defer c.Free(dout)
		if err := c.CopyHtoD(din, AsBytes(in)); err != nil {
			t.Fatal(err)
		}
		g, b := [3]uint32{blocks, 1, 1}, [3]uint32{512, 1, 1}
		err = c.Launch(fs, g, b, bytes, din, dout, int32(words))
		if err == nil {
			err = c.Sync()
		}
		if err == nil {
			t.Errorf("100 KiB dynamic shared memory launched without opt-in")
		} else {
			t.Logf("without opt-in, as expected: %v", err)
		}
		if err := fs.SetMaxDynamicShared(bytes); err != nil {
			t.Fatal(err)
		}
		occ, _ := fs.MaxActiveBlocksPerSM(512, bytes)
		t.Logf("smem_rev with %d B dynamic shared: %d block(s)/SM", bytes, occ)
		if err := c.Launch(fs, g, b, bytes, din, dout, int32(words)); err != nil {
			t.Fatal(err)
		}
		out := make([]float32, len(in))
		if err := c.CopyDtoH(AsBytes(out), dout); err != nil {
			t.Fatal(err)
		}
		for blk := 0; blk < blocks; blk++ {
			for i := 0; i < words; i++ {
				if got, want := out[blk*words+i], in[blk*words+words-1-i]; got != want {
					t.Fatalf("block %d word %d = %v, want %v", blk, i, got, want)
				}
			}
		}
	})

	t.Run("cublas", func(t *testing.T) {
		if !l.HasCUBLAS() {
			requireOrSkip(t, l.CUBLASError())
		}
		b, err := c.Blas()
		if err != nil {
			t.Fatal(err)
		}
		checkGemm(t, c, b, 1e-5)
		checkSgemv(t, c, b)
		checkGemmPrecision(t, c, b)
		benchGemm(t, c, 4096)
	})
}

// checkGemmPrecision checks that f32 GemmEx with CUBLAS_DEFAULT_MATH keeps
// full FP32 precision (TF32 would show errors near 1e-4 of the magnitude).
func checkGemmPrecision(t *testing.T, c *Context, b *Blas) {
	r := rand.New(rand.NewSource(3))
	const n = 256
	A, B := make([]float64, n*n), make([]float64, n*n)
	for i := range A {
		A[i] = float64(float32(r.Float64()*2 - 1))
		B[i] = float64(float32(r.Float64()*2 - 1))
	}
	C := make([]float64, n*n)
	absAB := make([]float64, n*n)
	gemmRef(false, false, n, n, n, 1, A, n, B, n, 0, C, n)
	absA, absB := make([]float64, n*n), make([]float64, n*n)
	for i := range A {
		absA[i], absB[i] = math.Abs(A[i]), math.Abs(B[i])
	}
	gemmRef(false, false, n, n, n, 1, absA, n, absB, n, 0, absAB, n)
	dA, _ := c.Alloc(n * n * 4)
	dB, _ := c.Alloc(n * n * 4)
	dC, _ := c.Alloc(n * n * 4)
	defer c.Free(dA)
	defer c.Free(dB)
	defer c.Free(dC)
	if err := c.CopyHtoD(dA, AsBytes(toF32(A))); err != nil {
		t.Fatal(err)
	}
	if err := c.CopyHtoD(dB, AsBytes(toF32(B))); err != nil {
		t.Fatal(err)
	}
	if err := b.GemmEx(false, false, n, n, n, 1, dA, R32F, n, dB, R32F, n, 0, dC, R32F, n); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, n*n)
	if err := c.CopyDtoH(AsBytes(got), dC); err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i := range got {
		worst = math.Max(worst, math.Abs(float64(got[i])-C[i])/absAB[i])
	}
	t.Logf("GemmEx f32 %dx%dx%d random inputs: worst error %.2g of sum|a*b| (FP32 ~1e-7, TF32 ~1e-4)", n, n, n, worst)
	if worst > 1e-5 {
		t.Errorf("f32 GemmEx lost precision (TF32 in use?): worst relative error %.3g", worst)
	}
}

// benchGemm times square GemmEx calls (f16 in / f32 out, f32) and logs
// TFLOP/s.
func benchGemm(t *testing.T, c *Context, n int) {
	for _, in := range []DataType{R16F, R32F} {
		bytes := int64(n * n * in.Size())
		dA, err := c.Alloc(bytes)
		if err != nil {
			t.Fatal(err)
		}
		dB, _ := c.Alloc(bytes)
		dC, _ := c.Alloc(int64(n * n * 4))
		// Small, finite inputs: 0x3c00 is 1.0 in f16; 0x3c003c00 fills two.
		word := uint32(0x3c003c00)
		if in == R32F {
			word = math.Float32bits(1)
		}
		for _, p := range []DevPtr{dA, dB} {
			if err := c.MemsetD32(p, word, int(bytes/4)); err != nil {
				t.Fatal(err)
			}
		}
		run := func(t *Thread, _ int) error {
			tb, err := t.Blas()
			if err != nil {
				return err
			}
			return tb.GemmEx(false, false, n, n, n, 1, dA, in, n, dB, in, n, 0, dC, R32F, n)
		}
		if _, err := c.TimeBatch(3, run); err != nil { // warm-up: heuristics, kernel load
			t.Fatal(err)
		}
		const reps = 20
		ms, err := c.TimeBatch(reps, run)
		if err != nil {
			t.Fatal(err)
		}
		per := ms / reps
		t.Logf("GemmEx %v x %v -> f32, %dx%dx%d, COMPUTE_32F: %.3f ms, %.1f TFLOP/s", in, in, n, n, n, per, 2*math.Pow(float64(n), 3)/(per*1e-3)/1e12)
		probe := make([]float32, 4)
		if err := c.CopyDtoH(AsBytes(probe), dC); err != nil {
			t.Fatal(err)
		}
		if probe[0] != float32(n) {
			t.Errorf("C[0] = %v, want %d", probe[0], n)
		}
		c.Free(dA)
		c.Free(dB)
		c.Free(dC)
	}
}

// TestSmokeSticky makes a kernel fault and checks that the error is
// reported as sticky and that the context refuses further work. It uses
// its own context; the fault corrupts the primary context for the rest of
// the process, so it must stay the last GPU test in this file.
func TestSmokeSticky(t *testing.T) {
	l := loadOrSkip(t)
	if !l.HasNVRTC() {
		requireOrSkip(t, l.NVRTCError())
	}
	c := checkedContext(t, l)
	f := compileFunction(t, l, c, smokeSrc, "smoke.cu", c.Props().Arch(), "poke")
	one := [3]uint32{1, 1, 1}
	if err := c.Launch(f, one, one, 0, DevPtr(0x10)); err != nil {
		t.Fatalf("launch: %v", err)
	}
	err := c.Sync()
	var e *Error
	if !errors.As(err, &e) || !e.Sticky || !errors.Is(err, ErrContextLost) {
		t.Fatalf("want a sticky error from the faulting kernel, got %v", err)
	}
	t.Logf("fault reported as: %v", err)
	_, err = c.Alloc(16)
	if !errors.Is(err, ErrContextLost) {
		t.Errorf("Alloc after the fault: %v", err)
	}
	t.Logf("next call: %v", err)
}
