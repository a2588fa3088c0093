package opencl

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/kerntune/kerntune/internal/cldrv"
	"github.com/kerntune/kerntune/internal/compilecache"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/internal/gpuhost"
)

// Auto never picks OpenCL: where it runs, CUDA, Metal or the pure-Go CPU
// backend is the better default.
func init() {
	device.Register("opencl", func() (device.Backend, error) { return Open() },
		device.Traits{API: gpu.OpenCL, Isolate: true})
}

// errClosed ends compiles that had not started when the backend closed.
var errClosed = errors.New("opencl backend: closed")

// buildOptions pins the dialect the bodies are written for.
const buildOptions = "-cl-std=CL1.2"

// Backend runs kernels on one OpenCL device.
type Backend struct {
	lib      *cldrv.Lib
	ctx      *cldrv.Context
	platform cldrv.PlatformInfo
	props    cldrv.DeviceProps
	info     device.DeviceInfo

	// compiles holds built programs by family|dtype|candidate key, built
	// on one goroutine per CPU; Build takes a program out of the cache.
	// Its Body is replaced in tests that check verification catches a
	// broken body.
	compiles *gpuhost.Compiles[*built]
	// cache keeps program binaries between runs; nil when off.
	cache *compilecache.Cache
	// queueMu serialises sequences of commands on the one queue (poison,
	// launch, read back).
	queueMu sync.Mutex
}

// Open picks the first GPU of any platform, else the first device of any
// type (PoCL's CPU device), and creates a context and profiling queue on
// it. Without a library, platform or device it returns an error wrapping
// device.ErrUnavailable.
func Open() (*Backend, error) {
	lib, err := cldrv.Load()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", device.ErrUnavailable, err)
	}
	plat, dev, err := pickDevice(lib)
	if err != nil {
		return nil, err
	}
	// A cache that cannot open (an unsafe directory) leaves every build to
	// the compiler; kerntune cache says why.
	cache, _ := compilecache.Default()
	b := &Backend{lib: lib, cache: cache}
	b.compiles = gpuhost.NewCompiles(runtime.NumCPU(), errClosed, b.buildSource)
	if b.platform, err = lib.PlatformInfo(plat); err != nil {
		return nil, err
	}
	if b.props, err = lib.DeviceProps(dev); err != nil {
		return nil, err
	}
	if b.ctx, err = lib.NewContext(dev); err != nil {
		return nil, fmt.Errorf("opencl: %s on %s: %w", b.props.Name, b.platform.Name, err)
	}
	if err := b.describe(); err != nil {
		b.ctx.Close()
		return nil, err
	}
	return b, nil
}

func pickDevice(lib *cldrv.Lib) (cldrv.Platform, cldrv.Device, error) {
	plats, err := lib.Platforms()
	if err != nil {
		return 0, 0, err
	}
	for _, typ := range []uint64{cldrv.DeviceTypeGPU, 0} {
		for _, p := range plats {
			ds, err := lib.Devices(p, typ)
			if err != nil {
				return 0, 0, err
			}
			if len(ds) > 0 {
				return p, ds[0], nil
			}
		}
	}
	return 0, 0, fmt.Errorf("%w: no OpenCL device on %d platforms (%s)", device.ErrUnavailable, len(plats), lib.Path)
}

// describe fills DeviceInfo from the device queries and measures the
// copy bandwidth.
func (b *Backend) describe() error {
	p := b.props
	kind := "gpu"
	if p.IsCPU() {
		kind = "cpu"
	}
	family := "opencl-" + kind
	if !p.IsCPU() {
		if v := strings.Fields(strings.ToLower(p.Vendor)); len(v) > 0 {
			family += "-" + strings.Trim(v[0], ".,()")
		}
	}
	clock := float64(max(p.ClockMHz, 1000)) * 1e6
	b.info = device.DeviceInfo{
		Key:          fmt.Sprintf("opencl:%s:%s:%d", clean(b.platform.Name), clean(p.Name), p.ComputeUnits),
		Name:         p.Name,
		Backend:      "opencl",
		Family:       family,
		ComputeUnits: p.ComputeUnits,
		OnHostCPU:    p.IsCPU(),
		LLCBytes:     p.GlobalCacheBytes,
		// Ceilings: 512 flops per compute unit per clock is above any
		// current GPU compute unit's f16 rate and any CPU core's f32 rate;
		// 400 GB/s per compute unit is above cache bandwidth per core.
		PeakFlops:     float64(p.ComputeUnits) * 512 * clock,
		PeakBandwidth: float64(p.ComputeUnits) * 400e9,
		Facts: map[string]float64{
			"compute_units":       float64(p.ComputeUnits),
			"clock_mhz":           float64(p.ClockMHz),
			"max_work_group_size": float64(p.MaxWorkGroupSize),
			"local_mem_bytes":     float64(p.LocalMemBytes),
			"global_mem_bytes":    float64(p.GlobalMemBytes),
			"global_cache_bytes":  float64(p.GlobalCacheBytes),
			"timer_resolution_ns": float64(p.TimerResolutionNS),
		},
		// The device's limits on work-group size and local memory.
		Limits: device.Limits{GPU: &gpu.Limits{API: gpu.OpenCL, MaxThreads: p.MaxWorkGroupSize, MaxShared: int(p.LocalMemBytes)}},
	}
	bw, err := b.copyBandwidth()
	if err != nil {
		return fmt.Errorf("opencl: measuring copy bandwidth on %s: %w", p.Name, err)
	}
	b.info.Facts["bandwidth_gbps"] = bw
	return nil
}

// clean makes a name safe inside a device key (':' separates the parts).
func clean(s string) string {
	return strings.NewReplacer(":", "-", "/", "-").Replace(strings.TrimSpace(s))
}

const copyKernel = `__kernel void kt_copy(__global const float4* src, __global float4* dst) {
  const size_t i = get_global_id(0);
  dst[i] = src[i];
}`

// copyBandwidth times a copy kernel over 64 MiB (or a quarter of the
// largest allocation) and returns read+write GB/s, the median of 9 runs
// after a warmup, rounded to 0.1.
func (b *Backend) copyBandwidth() (float64, error) {
	size := min(64<<20, int(b.props.MaxAllocBytes/4))
	size -= size % (16 * 256)
	if size <= 0 {
		return 0, fmt.Errorf("max allocation %d bytes is too small", b.props.MaxAllocBytes)
	}
	prog, err := b.build(copyKernel)
	if err != nil {
		return 0, err
	}
	defer prog.Release()
	k, err := prog.Kernel("kt_copy")
	if err != nil {
		return 0, err
	}
	defer k.Release()
	local := min(256, b.props.MaxWorkGroupSize)
	size -= size % (16 * local)
	src, err := b.ctx.Alloc(size)
	if err != nil {
		return 0, err
	}
	defer b.ctx.Free(src)
	dst, err := b.ctx.Alloc(size)
	if err != nil {
		return 0, err
	}
	defer b.ctx.Free(dst)
	if err := b.ctx.Fill32(src, 0x3f800000, size/4); err != nil {
		return 0, err
	}
	var evs []cldrv.Event
	for range 10 {
		ev, err := k.Launch([2]int{size / 16 / local, 1}, [2]int{local, 1}, true, src, dst)
		if err != nil {
			b.ctx.Times(evs)
			return 0, err
		}
		evs = append(evs, ev)
	}
	secs, err := b.ctx.Times(evs)
	if err != nil {
		return 0, err
	}
	return gpuhost.CopyGBps(size, secs)
}

// Info describes the device.
func (b *Backend) Info() device.DeviceInfo { return b.info }

// Close waits for compiles in flight, releases the cached programs and the
// context. Programs and instances should be closed first.
func (b *Backend) Close() error {
	for _, j := range b.compiles.Close() {
		if bl, err := j.Result(); err == nil && bl.claim() {
			bl.release()
		}
	}
	return b.ctx.Close()
}

// Baseline: OpenCL has no vendor library kerntune times against.
func (b *Backend) Baseline(*kernels.Kernel, kernels.DType) (device.Program, string, error) {
	return nil, "", nil
}
