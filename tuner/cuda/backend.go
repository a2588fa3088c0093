package cuda

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"

	"github.com/kerntune/kerntune/internal/compilecache"
	"github.com/kerntune/kerntune/internal/cudadrv"
	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/internal/gpuhost"
)

// errClosed ends compiles that had not started when the backend closed.
var errClosed = errors.New("cuda backend: closed")

func init() {
	device.RegisterOptions("cuda", func(o device.Options) (device.Backend, error) {
		b, err := OpenWith(0, Options{AllowTF32: o[OptionAllowTF32] == "1"})
		if err != nil {
			return nil, err // not a nil *Backend in a non-nil interface
		}
		return b, nil
	}, device.Traits{API: gpu.CUDA, Options: []string{OptionAllowTF32}, Isolate: true, AutoRank: 2, Flags: []device.Flag{
		{Name: "allow-tf32", Option: OptionAllowTF32, Set: "1", Elsewhere: "Apple GPUs have no TF32 mode",
			Usage: "cuda: admit GEMM candidates with TF32=1 (f32 on the matrix units, inputs rounded to 10-bit mantissas; verified to 1e-3 instead of 1e-5); off by default"},
	}})
}

// OptionAllowTF32 is the tuner option that sets Options.AllowTF32 ("1").
const OptionAllowTF32 = "allow_tf32"

// Options configure the backend. The zero value is the default.
type Options struct {
	// AllowTF32 admits candidates with TF32=1: f32 GEMMs on the matrix
	// units with inputs rounded to TF32 (10-bit mantissas), verified
	// against kernels.TF32Tolerance instead of the f32 tolerance. Off by
	// default, since it changes f32 results.
	AllowTF32 bool
}

// Backend runs kernels on one NVIDIA GPU.
type Backend struct {
	lib   *cudadrv.Lib
	ctx   *cudadrv.Context
	props cudadrv.DeviceProps
	info  device.DeviceInfo

	// compiles holds NVRTC images by family|dtype|candidate key, compiled
	// on one goroutine per CPU.
	compiles *gpuhost.Compiles[[]byte]
	opts     Options
	// compileFn is NVRTC (lib.Compile); cache keeps its images between
	// runs (nil when off), keyed with vers.
	compileFn compileFunc
	cache     *compilecache.Cache
	vers      versions

	empty, spinFn *cudadrv.Function
	// spinScale lengthens spins after the host fell behind its launches
	// (longerSpin); used on the context's thread only.
	spinScale float64
	// The sampling kernels of OutputSample (sample.go).
	firstBad32, firstBad16, firstBadBF16, gather32, gather16 *cudadrv.Function
	hostLaunchUS                                             float64
}

// Open initialises the driver and a context on the GPU with the given ordinal.
// Without a driver or a GPU it returns an error wrapping device.ErrUnavailable.
func Open(ordinal int) (*Backend, error) { return OpenWith(ordinal, Options{}) }

// OpenWith is Open with options.
func OpenWith(ordinal int, o Options) (*Backend, error) {
	lib, err := cudadrv.Load()
	if err != nil {
		if errors.Is(err, cudadrv.ErrNoDriver) {
			return nil, fmt.Errorf("%w: %v", device.ErrUnavailable, err)
		}
		return nil, err
	}
	n, err := lib.DeviceCount()
	if err != nil {
		return nil, err
	}
	if n <= ordinal {
		return nil, fmt.Errorf("%w: %d CUDA devices, wanted ordinal %d", device.ErrUnavailable, n, ordinal)
	}
	ctx, err := lib.NewContext(ordinal)
	if err != nil {
		return nil, err
	}
	b := &Backend{lib: lib, ctx: ctx, props: ctx.Props(), opts: o, compileFn: lib.Compile}
	b.openCache()
	// One core is left to the thread that launches and times kernels.
	b.compiles = gpuhost.NewCompiles(max(1, runtime.NumCPU()-1), errClosed, b.nvrtc)
	if err := b.describe(); err != nil {
		ctx.Close()
		return nil, err
	}
	return b, nil
}

// describe fills DeviceInfo and measures the copy bandwidth and launch overhead.
func (b *Backend) describe() error {
	p := b.props
	drv, _ := b.lib.DriverVersion()
	clock := float64(p.ClockKHz) * 1e3
	b.info = device.DeviceInfo{
		Key:          "cuda:" + strings.ReplaceAll(p.Name, "/", "-"),
		Name:         p.Name,
		Backend:      "cuda",
		Family:       p.Arch(),
		ComputeUnits: p.SMs,
		LLCBytes:     int64(p.L2Bytes),
		// Ceilings: 8192 flops per SM per clock is twice Hopper's dense f16
		// tensor rate; 4× the DRAM bandwidth covers L2-resident data.
		PeakFlops:     float64(p.SMs) * 8192 * clock,
		PeakBandwidth: 4 * p.PeakBandwidth(),
		Facts: map[string]float64{
			"sms":                     float64(p.SMs),
			"l2_bytes":                float64(p.L2Bytes),
			"max_shared_per_block":    float64(p.MaxSharedPerBlock),
			"max_shared_optin":        float64(p.MaxSharedPerBlockOptin),
			"max_threads_per_block":   float64(p.MaxThreadsPerBlock),
			"compute_capability":      float64(p.Major*10 + p.Minor),
			"driver_version":          float64(drv),
			"peak_dram_gbps":          math.Round(p.PeakBandwidth() / 1e9),
			"peak_gflops":             math.Round(float64(p.SMs) * 128 * 2 * clock / 1e9), // FP32 SIMT
			"total_mem_bytes":         float64(p.TotalMem),
			"clock_mhz":               float64(p.ClockKHz) / 1e3,
			"memory_bus_width_bits":   float64(p.MemBusWidth),
			"memory_clock_mhz":        float64(p.MemClockKHz) / 1e3,
			"registers_per_block":     float64(p.RegsPerBlock),
			"max_shared_per_sm_bytes": float64(p.MaxSharedPerSM),
			"allow_tf32":              boolFact(b.opts.AllowTF32),
		},
		Limits: device.Limits{GPU: deviceLimits(p, b.opts)},
	}
	for k, v := range mmaPeakFacts(p.Major*10+p.Minor, p.SMs, clock) {
		b.info.Facts[k] = v
	}
	bw, err := b.copyBandwidth()
	if err != nil {
		return fmt.Errorf("measuring copy bandwidth: %w", err)
	}
	b.info.Facts["bandwidth_gbps"] = bw
	lo, gap, err := b.launchOverhead()
	if err != nil {
		return fmt.Errorf("measuring launch overhead: %w", err)
	}
	b.info.Facts["launch_overhead_us"] = math.Round(lo*1000) / 1000
	b.info.Facts["launch_gap_us"] = math.Round(gap*1000) / 1000
	b.info.Facts["host_launch_us"] = math.Round(b.hostLaunchUS*1000) / 1000
	return nil
}

// deviceLimits are the device's limits on candidates: threads per block,
// static shared memory and, for kernels that size theirs at launch, the
// opt-in limit; from sm_80 on the matrix-unit features (mma.sync with
// ldmatrix, cp.async), and TF32 only where the options allow it.
func deviceLimits(p cudadrv.DeviceProps, o Options) *gpu.Limits {
	l := &gpu.Limits{API: gpu.CUDA, MaxThreads: p.MaxThreadsPerBlock, MaxShared: p.MaxSharedPerBlock,
		MaxSharedDynamic: max(p.MaxSharedPerBlockOptin, p.MaxSharedPerBlock), SIMDWidth: p.WarpSize}
	if p.Major >= 8 {
		l.Features = []gpu.Feature{gpu.SIMDMatrix, gpu.AsyncCopy}
		if o.AllowTF32 {
			l.Features = append(l.Features, gpu.TF32)
		}
	}
	return l
}

func boolFact(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// copyBandwidth times device-to-device copies of 512 MiB (far past L2) and
// returns read+write GB/s, the median of 10 copies after a warmup, rounded
// to 0.1.
func (b *Backend) copyBandwidth() (float64, error) {
	const size = 512 << 20
	var gbps float64
	err := b.ctx.Do(func(t *cudadrv.Thread) error {
		src, err := t.Alloc(size)
		if err != nil {
			return err
		}
		defer t.Free(src)
		dst, err := t.Alloc(size)
		if err != nil {
			return err
		}
		defer t.Free(dst)
		if err := t.MemsetD32(src, 0x3f800000, size/4); err != nil {
			return err
		}
		ms, err := t.TimeLaunches(11, func(t *cudadrv.Thread, _ int) error { return t.CopyDtoD(dst, src, size) })
		if err != nil {
			return err
		}
		gbps, err = gpuhost.CopyGBps(size, seconds(ms))
		return err
	})
	return gbps, err
}

// helperKernels: an empty kernel for the launch overhead, and a spin kernel
// that holds the GPU while the host queues the timed launches behind it, so
// that per-launch events measure GPU time rather than the host's pace.
const helperKernels = `
extern "C" __global__ void kt_empty(int x) {}
extern "C" __global__ void kt_spin(long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while ((long long)(t - t0) < ns);
}`

// loadHelpers compiles and loads the helper kernels.
func (b *Backend) loadHelpers() error {
	img, err := b.compile(helperKernels+sampleKernels, "kt_helpers.cu")
	if err != nil {
		return err
	}
	return b.ctx.Do(func(t *cudadrv.Thread) error {
		m, err := t.LoadModule(img)
		if err != nil {
			return err
		}
		for _, f := range []struct {
			dst  **cudadrv.Function
			name string
		}{
			{&b.empty, "kt_empty"}, {&b.spinFn, "kt_spin"},
			{&b.firstBad32, "kt_first_bad32"}, {&b.firstBad16, "kt_first_bad16"}, {&b.firstBadBF16, "kt_first_badbf16"},
			{&b.gather32, "kt_gather32"}, {&b.gather16, "kt_gather16"},
		} {
			if *f.dst, err = t.Function(m, f.name); err != nil {
				return err
			}
		}
		return nil
	})
}

// spin queues the spin kernel for long enough that n launches can be
// enqueued behind it (the host's measured cost per launch, doubled, plus a margin).
func (b *Backend) spin(t *cudadrv.Thread, n int) error {
	per := max(b.hostLaunchUS, 5.0) * max(1, b.spinScale)
	ns := int64(min(float64(n)*per*2000+20000, maxSpinNS))
	return t.Launch(b.spinFn, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, ns)
}

// maxSpinNS caps a spin, in nanoseconds.
const maxSpinNS = 50e6

// longerSpin doubles the spins of later runs after a host fell behind its
// launches (program.Run); it reports false once they are as long as they go.
func (b *Backend) longerSpin() bool {
	if b.spinScale >= 64 {
		return false
	}
	b.spinScale = max(1, b.spinScale) * 2
	return true
}

// launchOverhead measures the host's cost of one launch (wall time per
// cuLaunchKernel) and returns the GPU time of an empty kernel launched behind
// a spin with an event after each launch (gpuUS), and within groups of
// back-to-back launches as samples are timed (gapUS: what a recorded time
// carries beyond the kernel's own work), in µs.
func (b *Backend) launchOverhead() (gpuUS, gapUS float64, err error) {
	if err := b.loadHelpers(); err != nil {
		return 0, 0, err
	}
	err = b.ctx.Do(func(t *cudadrv.Thread) error {
		launch := func(t *cudadrv.Thread, _ int) error {
			return t.Launch(b.empty, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, int32(0))
		}
		const n = 500
		start := time.Now()
		for i := 0; i < n; i++ {
			if err := launch(t, i); err != nil {
				return err
			}
		}
		b.hostLaunchUS = float64(time.Since(start).Nanoseconds()) / 1e3 / n
		if err := t.Sync(); err != nil {
			return err
		}
		if err := b.spin(t, 200); err != nil {
			return err
		}
		ms, err := t.TimeLaunches(200, launch)
		if err != nil {
			return err
		}
		gpuUS = stats.Median(ms[20:]) * 1e3
		if err := b.spin(t, 20*maxGroup); err != nil {
			return err
		}
		ms, _, err = t.TimeGroupsAhead(20, maxGroup, launch)
		if err != nil {
			return err
		}
		gapUS = stats.Median(ms[2:]) * 1e3
		return nil
	})
	return gpuUS, gapUS, err
}

func (b *Backend) nvrtcOptions() []string {
	return []string{"--gpu-architecture=" + b.props.Arch(), "--std=c++17", "-default-device"}
}

// Info describes the GPU.
func (b *Backend) Info() device.DeviceInfo { return b.info }

// Close stops the compile pool and releases the context.
func (b *Backend) Close() error {
	b.compiles.Close()
	return b.ctx.Close()
}
