package metal

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/internal/gpuhost"
)

func TestRegistered(t *testing.T) {
	if !slices.Contains(device.Backends(), "metal") {
		t.Fatalf("metal is not registered: %v", device.Backends())
	}
	// Auto picks Metal first on macOS and never elsewhere, where it cannot open.
	for goos, want := range map[string]int{"darwin": 1, "linux": 0, "windows": 0} {
		tr := traits(goos)
		if tr.AutoRank != want || !tr.Isolate {
			t.Errorf("%s: traits %+v, want auto rank %d, isolated", goos, tr, want)
		}
	}
	// The registry gives it the space kind families.SpaceKind names.
	if tr, _ := device.TraitsOf("metal"); tr.Space != device.SpaceGPU {
		t.Errorf("registered traits %+v, want gpu space", tr)
	}
}

func TestDeviceKey(t *testing.T) {
	for _, c := range []struct {
		name  string
		cores int
		want  string
	}{
		{"Apple M2 Pro", 19, "metal:Apple M2 Pro:19c"},
		{"Apple M3 Max", 30, "metal:Apple M3 Max:30c"},
		{"Apple M3 Max", 40, "metal:Apple M3 Max:40c"}, // binned chips differ in cores
		{"Apple M1", 0, "metal:Apple M1"},              // core count unknown
		{" AMD Radeon Pro 5500M ", 0, "metal:AMD Radeon Pro 5500M"},
		{"a/b:c", 8, "metal:a-b-c:8c"},
		{"", 0, "metal:unknown"},
	} {
		if got := deviceKey(c.name, c.cores); got != c.want {
			t.Errorf("deviceKey(%q, %d) = %q, want %q", c.name, c.cores, got, c.want)
		}
	}
}

func TestFamilyKey(t *testing.T) {
	if got := familyKey(9, false); got != "apple9" {
		t.Errorf("familyKey(9) = %q", got)
	}
	if got := familyKey(7, true); got != "apple7" {
		t.Errorf("familyKey(7, mac2) = %q", got)
	}
	if got := familyKey(0, true); got != "mac2" {
		t.Errorf("familyKey(0, mac2) = %q", got)
	}
	if got := familyKey(0, false); got != "metal" {
		t.Errorf("familyKey(0) = %q", got)
	}
	if gpuFamilyApple10-gpuFamilyApple1+1 != 10 || gpuFamilyApple1 != 1001 || gpuFamilyMac2 != 2002 {
		t.Error("MTLGPUFamily constants do not match MTLDevice.h")
	}
}

func TestSLCBytes(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		name string
		want int64
	}{
		{"Apple M1", 8 * mb},
		{"Apple M1 Pro", 24 * mb},
		{"Apple M1 Max", 48 * mb},
		{"Apple M1 Ultra", 96 * mb},
		{"Apple M2", 8 * mb},
		{"Apple M2 Max", 48 * mb},
		{"Apple M3", 16 * mb},
		{"Apple M3 Pro", 32 * mb},
		{"Apple M4 Max", 64 * mb},
		{"Apple M10 Ultra", 128 * mb},
		{"AMD Radeon Pro 5500M", 48 * mb},
		{"Intel(R) UHD Graphics 630", 48 * mb},
		{"Apple A17 Pro", 48 * mb},
	} {
		if got := slcBytes(c.name); got != c.want {
			t.Errorf("slcBytes(%q) = %d MB, want %d MB", c.name, got/mb, c.want/mb)
		}
	}
}

func TestDispatchesPerBuffer(t *testing.T) {
	for _, c := range []struct {
		per  float64
		want int
	}{
		{10e-6, 100}, // 100 dispatches of 10 µs make a 1 ms command buffer
		{3e-6, 256},  // capped
		{2e-3, 1},    // one long kernel is enough
		{1e-3, 1},    // exactly the target
		{0.4e-3, 3},  // rounded up
		{0, 1},       // no estimate
		{-1, 1},      // a bad estimate
		{math.NaN(), 1},
		{math.Inf(1), 1},
	} {
		if got := gpuhost.RunsPerSample(c.per, targetBufferSeconds, maxDispatches); got != c.want {
			t.Errorf("gpuhost.RunsPerSample(%g) = %d, want %d", c.per, got, c.want)
		}
	}
}

func TestCeilings(t *testing.T) {
	if got := peakFlopsCeiling(10, 0); got != 10*1024*1.6e9*2 {
		t.Errorf("peakFlopsCeiling(10, 0) = %g", got)
	}
	if got := peakFlopsCeiling(10, 1e5); got != 4e14 {
		t.Errorf("peakFlopsCeiling(10, 100 TFLOPS measured) = %g, want 4× the measurement", got)
	}
	if got := peakFlopsCeiling(0, 0); !(got >= 1e15) {
		t.Errorf("peakFlopsCeiling with nothing known = %g, want a huge ceiling", got)
	}
	if got := peakBandwidthCeiling(100); got != 1.2e12 {
		t.Errorf("peakBandwidthCeiling(100 GB/s) = %g", got)
	}
	if got := peakBandwidthCeiling(800); got != 3.2e12 {
		t.Errorf("peakBandwidthCeiling(800 GB/s) = %g", got)
	}
}

// The device's limits: what it reports, capped at 1024 threads and 32 KB
// per threadgroup, and held by the family's body.
func TestDeviceLimits(t *testing.T) {
	k, err := kernels.Get("gemm_av")
	if err != nil {
		t.Fatal(err)
	}
	m3 := gpuFamily{9, true}
	for _, c := range []struct {
		name                 string
		threads, shared      int
		wantThreads, wantMem int
	}{
		{"reports the caps", 1024, 32768, 1024, 32768},
		{"reports nothing", 0, 0, maxThreadsPerGroup, maxSharedPerGroup},
		{"reports more", 4096, 65536, maxThreadsPerGroup, maxSharedPerGroup},
		{"reports less", 512, 16384, 512, 16384},
	} {
		l := deviceLimits(c.threads, c.shared, m3)
		if l.API != gpu.Metal || l.MaxThreads != c.wantThreads || l.MaxShared != c.wantMem || l.SIMDWidth != 0 {
			t.Errorf("%s: limits %+v, want metal, %d threads, %d bytes, SIMD width unknown", c.name, *l, c.wantThreads, c.wantMem)
		}
	}
	cs := device.Limits{GPU: deviceLimits(1024, 32768, m3)}.Constraints(k, kernels.F32)
	check := func(c search.Candidate) error {
		for _, con := range cs {
			if err := con.Check(c); err != nil {
				return err
			}
		}
		return nil
	}
	ok := search.Candidate{"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4, "PAD": 0} // 256 threads, 8 KB
	if err := check(ok); err != nil {
		t.Errorf("%s rejected: %v", ok.Key(), err)
	}
	many := search.Candidate{"BM": 128, "BN": 128, "BK": 8, "TM": 1, "TN": 8} // 2048 threads
	if err := check(many); err == nil || !strings.Contains(err.Error(), "threads") {
		t.Errorf("%s: got %v, want a thread-count rejection", many.Key(), err)
	}
	big := search.Candidate{"BM": 128, "BN": 128, "BK": 32, "TM": 8, "TN": 8, "PAD": 4} // 34 KB
	if err := check(big); err == nil || !strings.Contains(err.Error(), "threadgroup memory") {
		t.Errorf("%s: got %v, want a threadgroup-memory rejection", big.Key(), err)
	}
	// The MMA body on Apple GPUs: metal-flash-attention's M1 and M3 tiles
	// fit; TF32 and more than two threadgroup buffers (no asynchronous
	// copies) do not exist there; 32 KiB of threadgroup memory bounds the rest.
	mma := func(bm, bn, bk, wm, wn, stages, tf32 int) search.Candidate {
		return search.Candidate{"BM": bm, "BN": bn, "BK": bk, "TM": 1, "TN": 1, "PAD": 0, "MMA": 1, "WM": wm, "WN": wn, "STAGES": stages, "TF32": tf32}
	}
	for _, c := range []struct {
		c    search.Candidate
		want string
	}{
		{mma(48, 48, 24, 2, 2, 1, 0), ""},
		{mma(32, 32, 8, 1, 1, 1, 0), ""},
		{mma(64, 64, 16, 2, 2, 2, 0), ""},
		{mma(64, 64, 16, 2, 2, 1, 1), "tf32"},
		{mma(64, 64, 16, 2, 2, 3, 0), "async_copy"},
		{mma(128, 128, 32, 2, 2, 2, 0), "threadgroup memory"},
	} {
		err := check(c.c)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: got %v, want %q", c.c.Key(), err, c.want)
		}
	}
	// A family without a GPU body is rejected by its one constraint.
	fake := *k
	famCopy := *k.Family
	famCopy.Name = "no_such_family"
	fake.Family = &famCopy
	if err := (device.Limits{GPU: deviceLimits(1024, 32768, m3)}).Constraints(&fake, kernels.F32)[0].Check(ok); err == nil {
		t.Error("a family without a GPU body was accepted")
	}
}

// The MPS bias blit copies roundUp(n·size, 4) bytes: inside the buffer.
func TestBiasBlitInsideBuffer(t *testing.T) {
	for n := 1; n < 300; n++ {
		for _, dt := range kernels.DTypes {
			if roundUp(n*dt.Size(), 4) > gpuhost.BufferBytes(dt, n) {
				t.Fatalf("%s n=%d: blit of %d bytes overruns a %d-byte buffer", dt, n, roundUp(n*dt.Size(), 4), gpuhost.BufferBytes(dt, n))
			}
		}
	}
}

func TestScalarWords(t *testing.T) {
	w, err := scalarWords([]any{int32(-3), float32(1.5), int32(7)})
	if err != nil {
		t.Fatal(err)
	}
	if w[0] != 0xfffffffd || w[1] != math.Float32bits(1.5) || w[2] != 7 {
		t.Errorf("scalarWords = %#x", w)
	}
	if _, err := scalarWords([]any{int64(1)}); err == nil {
		t.Error("an int64 scalar was accepted")
	}
	// Every body's scalars are int32 or float32.
	for _, name := range gpu.Families() {
		k, _ := kernels.Get(name)
		b, _ := gpu.Get(name)
		for _, c := range append(append([]kernels.Case{}, k.Workload...), k.Odd...) {
			if _, err := scalarWords(b.Scalars(c, k.Scalars)); err != nil {
				t.Errorf("%s %s: %v", name, c, err)
			}
		}
	}
}

// MTLSize is three 64-bit NSUIntegers with no padding: 24 bytes, so it is
// passed by reference on arm64 and in memory on amd64 (see abi.go).
func TestMTLSizeLayout(t *testing.T) {
	var s mtlSize
	if unsafe.Sizeof(s) != 24 || unsafe.Offsetof(s.Width) != 0 || unsafe.Offsetof(s.Height) != 8 || unsafe.Offsetof(s.Depth) != 16 {
		t.Fatalf("mtlSize layout: size %d, offsets %d %d %d", unsafe.Sizeof(s), unsafe.Offsetof(s.Width), unsafe.Offsetof(s.Height), unsafe.Offsetof(s.Depth))
	}
	g, th := grid(37, 5, 256)
	if g != (mtlSize{Width: 37, Height: 5, Depth: 1}) || th != (mtlSize{Width: 256, Height: 1, Depth: 1}) {
		t.Errorf("grid(37, 5, 256) = %+v, %+v", g, th)
	}
}

// Body.Args order is the Metal buffer index the backend binds: check it
// against the [[buffer(i)]] attributes of the generated MSL.
func TestBufferIndicesMatchMSL(t *testing.T) {
	for _, name := range gpu.Families() {
		k, _ := kernels.Get(name)
		b, _ := gpu.Get(name)
		ps, ok := k.Space("metal")
		if !ok {
			t.Fatalf("%s has no metal space", name)
		}
		src, err := b.SourceFor(gpu.Metal, kernels.F16, ps.Defaults())
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range b.Args {
			var decl string
			switch a.Kind {
			case gpu.In:
				decl = "device const T* " + a.Name
			case gpu.Out:
				decl = "device T* " + a.Name
			case gpu.Int:
				decl = "constant int& " + a.Name
			case gpu.Float:
				decl = "constant float& " + a.Name
			}
			want := decl + " [[buffer(" + strconv.Itoa(i) + ")]]"
			if !strings.Contains(src, want) {
				t.Errorf("%s: argument %d: %q not in the generated MSL", name, i, want)
			}
		}
	}
}

func TestCompileError(t *testing.T) {
	log := "Compilation failed: \n\nprogram_source:42:7: error: use of undeclared identifier '__expf'\n  s *= __expf(m - nm);\n      ^\n"
	err := compileError(log)
	first, rest, _ := strings.Cut(err.Error(), "\n")
	if first != "metal compiler: program_source:42:7: error: use of undeclared identifier '__expf'" {
		t.Errorf("first line %q", first)
	}
	if !strings.Contains(rest, "Compilation failed") || !strings.Contains(rest, "__expf(m - nm)") {
		t.Errorf("the full log is not kept: %q", rest)
	}
	if got := compileError("  out of memory ").Error(); got != "metal compiler: out of memory" {
		t.Errorf("one-line log: %q", got)
	}
}
