//go:build darwin

package metal

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/kerntune/kerntune/kernels/gpu"

	"github.com/ebitengine/purego/objc"

	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/internal/gpuhost"
)

// Warmup: Apple GPUs raise their clocks only under sustained load, so the
// backend keeps the GPU busy for a second before measuring anything, and
// again briefly whenever it has been idle (compiles, host-side
// verification) before timing.
const (
	initialWarmup  = time.Second
	idleBeforeWarm = 200 * time.Millisecond
	rewarm         = 100 * time.Millisecond
)

// Backend runs kernels on one Metal device.
type Backend struct {
	rt     *runtimeLib
	gpu    *gpuThread
	device objc.ID // id<MTLDevice>, owned
	queue  objc.ID // id<MTLCommandQueue>, owned
	info   device.DeviceInfo

	// fences order the timed command buffers of one timing (timingPlan);
	// owned, used on the GPU thread only.
	fences [2]objc.ID
	// maxRuns is the most runs a timed command buffer holds: MLX's
	// dispatches per command buffer for this device (runsLimit).
	maxRuns int

	mpsOK       bool
	family      gpuFamily
	compileOpts compileSettings
	storage     storageMode // of problems' buffers: private where memory is not unified

	// compiles holds pipelines by family|dtype|candidate key, compiled on
	// a pool of goroutines (Metal's device methods are thread-safe).
	compiles *gpuhost.Compiles[*compiled]

	mu     sync.Mutex
	closed bool
	built  []string // keys of compiled jobs Build has used, oldest first

	// Used on the GPU thread only.
	empty, copyKernel, burnKernel pipeline
	warmSrc, warmDst              buffer
	lastGPU                       time.Time
}

// buffer is an MTLBuffer: shared storage with its CPU mapping, or private
// storage, which the CPU reaches through staging buffers and blits.
type buffer struct {
	id      objc.ID
	ptr     unsafe.Pointer // -[MTLBuffer contents]; nil for a private buffer
	size    int
	private bool
}

// bytes is a shared buffer's CPU mapping.
func (bf buffer) bytes() []byte { return unsafe.Slice((*byte)(bf.ptr), bf.size) }

// pipeline is a compute pipeline state (owned) and the limits it reports.
type pipeline struct {
	id objc.ID
	pipelineLimits
}

func open(o Options) (device.Backend, error) {
	r, err := loadRuntime()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", device.ErrUnavailable, err)
	}
	cs, err := compileSettingsFor(o)
	if err != nil {
		return nil, err
	}
	if _, _, err := mlxOpsOverride(os.Getenv(mlxOpsEnv)); err != nil {
		return nil, err
	}
	registerSelectors()
	b := &Backend{rt: r, compileOpts: cs}
	b.compiles = gpuhost.NewCompiles(max(2, runtime.NumCPU()), errClosed, b.compilePipeline)
	if b.gpu, err = startGPUThread(r); err != nil {
		return nil, err
	}
	if err := b.gpu.do(b.setup); err != nil {
		b.gpu.do(func() error { b.teardown(); return nil })
		b.gpu.stop()
		return nil, err
	}
	return b, nil
}

// setup opens the device and queue, queries the device, compiles the
// helper kernels, warms the GPU up and measures the facts. GPU thread.
func (b *Backend) setup() error {
	dev := objc.ID(b.rt.createSystemDefaultDevice())
	if dev == 0 {
		// No default device (e.g. CoreGraphics missing): take the first of all devices.
		if all := objc.ID(b.rt.copyAllDevices()); all != 0 {
			if all.Send(sel.count) > 0 {
				dev = retain(all.Send(sel.objectAtIndex, uint64(0)))
			}
			release(all)
		}
	}
	if dev == 0 {
		return fmt.Errorf("%w: no Metal device (MTLCreateSystemDefaultDevice and MTLCopyAllDevices returned none)", device.ErrUnavailable)
	}
	b.device = dev
	if b.queue = dev.Send(sel.newCommandQueue); b.queue == 0 {
		return errors.New("metal: newCommandQueue returned nil")
	}
	for i := range b.fences {
		if b.fences[i] = dev.Send(sel.newFence); b.fences[i] == 0 {
			return errors.New("metal: newFence returned nil")
		}
	}
	b.describe()
	limit, err := runsLimit(b.architecture(), b.info.Name, os.Getenv(mlxOpsEnv))
	if err != nil {
		return err
	}
	b.maxRuns = limit
	b.info.Facts["ops_per_buffer"] = float64(limit)
	if err := b.loadHelpers(); err != nil {
		return fmt.Errorf("metal: helper kernels: %w", err)
	}
	if err := b.measure(); err != nil {
		return fmt.Errorf("metal: measuring %s: %w", b.info.Key, err)
	}
	return nil
}

// describe queries the device. GPU thread.
func (b *Backend) describe() {
	d := b.device
	name := b.rt.goString(d.Send(sel.name))
	// -[NSProcessInfo operatingSystemVersion] is an NSOperatingSystemVersion
	// (three NSIntegers): MTLSize's layout, returned the same way.
	osInfo := objc.ID(objc.GetClass("NSProcessInfo")).Send(sel.processInfo)
	osVer := b.rt.sendSize(uintptr(osInfo), uintptr(sel.operatingSystemVersion))
	b.family = probeGPUFamily(func(f int) bool { return objc.Send[bool](d, sel.supportsFamily, int64(f)) })
	tgMem := int(d.Send(sel.maxThreadgroupMemoryLength))
	workingSet := uint64(d.Send(sel.recommendedMaxWorkingSetSize))
	maxBuf := uint64(d.Send(sel.maxBufferLength))
	maxTPT := b.rt.sendSize(uintptr(d), uintptr(sel.maxThreadsPerThreadgroup))
	unified := objc.Send[bool](d, sel.hasUnifiedMemory)
	b.storage = storageFor(unified)
	cores, coreErr := b.rt.gpuCoreCount()
	b.compileOpts.macOSMajor = int(osVer.Width)
	b.compileOpts.language = languageForMacOS(b.compileOpts.macOSMajor)
	ms, _ := mathSettingFor(b.compileOpts.mode, b.compileOpts.macOSMajor)

	b.mpsOK = b.rt.mpsSupportsDevice != nil && b.rt.mpsSupportsDevice(uintptr(d)) && os.Getenv("KERNTUNE_METAL_MPS") != "0"

	facts := map[string]float64{
		"gpu_cores":                         float64(cores),
		"gpu_cores_known":                   boolFact(coreErr == nil),
		"apple_gpu_family":                  float64(b.family.apple),
		"mac2_gpu_family":                   boolFact(b.family.mac2),
		"simdgroup_matrix":                  boolFact(b.family.simdgroupMatrix()),
		"fast_math":                         boolFact(b.compileOpts.mode == MathFast),
		"math_mode":                         float64(mathModes[b.compileOpts.mode]),
		"math_mode_selector":                boolFact(ms.useMathMode), // 1: setMathMode: (macOS 15+), 0: setFastMathEnabled:
		"max_threadgroup_memory_bytes":      float64(tgMem),
		"max_threads_per_threadgroup":       float64(maxTPT.Width),
		"recommended_max_working_set_bytes": float64(workingSet),
		"max_buffer_bytes":                  float64(maxBuf),
		"unified_memory":                    boolFact(unified),
		"private_buffers":                   boolFact(b.storage == storagePrivate),
		"slc_bytes_estimate":                float64(slcBytes(name)),
		"mps_baseline":                      boolFact(b.mpsOK),
	}
	if osVer.Width > 0 {
		facts["macos_major"], facts["macos_minor"], facts["macos_patch"] = float64(osVer.Width), float64(osVer.Height), float64(osVer.Depth)
	}
	// The language version as an options object reads it back (3.2).
	if lang, err := b.defaultLanguage(); err == nil {
		facts["metal_language_version"] = languageFact(lang)
	} else {
		fmt.Fprintf(os.Stderr, "metal: %v\n", err)
	}
	b.info = device.DeviceInfo{
		Key:          deviceKey(name, cores),
		Name:         name,
		Backend:      "metal",
		Family:       b.family.key(),
		ComputeUnits: cores,
		LLCBytes:     slcBytes(name), // an estimate: see slcBytes
		Facts:        facts,
		Limits:       device.Limits{GPU: deviceLimits(int(maxTPT.Width), tgMem, b.family)},
	}
	for _, n := range b.rt.notes {
		fmt.Fprintf(os.Stderr, "metal: %s\n", n)
	}
	if coreErr != nil {
		fmt.Fprintf(os.Stderr, "metal: GPU core count unknown (%v): device key %s has no core count, gpu_cores_known=0\n", coreErr, b.info.Key)
	}
}

// architecture is the GPU's architecture name as MLX reads it
// (-[MTLDevice architecture].name, macOS 14 and later: "applegpu_g13s"),
// or "" where the device does not answer architecture. GPU thread.
func (b *Backend) architecture() string {
	if !objc.Send[bool](b.device, sel.respondsToSelector, sel.architecture) {
		return ""
	}
	arch := b.device.Send(sel.architecture)
	if arch == 0 {
		return ""
	}
	return b.rt.goString(arch.Send(sel.name))
}

func boolFact(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

func (b *Backend) loadHelpers() error {
	ps, err := b.newPipelines(helperSource, "kt_empty", "kt_copy", "kt_burn")
	if err != nil {
		return err
	}
	b.empty, b.copyKernel, b.burnKernel = ps[0], ps[1], ps[2]
	// The helpers' buffers live where problems' buffers do, so that the
	// warmup and the bandwidth measure the memory kernels read.
	if b.warmSrc, err = b.newBufferIn(warmBytes, b.storage); err != nil {
		return err
	}
	b.warmDst, err = b.newBufferIn(warmBytes, b.storage)
	return err
}

// newBuffer allocates a zero-filled shared-storage buffer. Any thread.
func (b *Backend) newBuffer(size int) (buffer, error) { return b.newBufferIn(size, storageShared) }

// newBufferIn allocates a buffer of the given storage: for a private one,
// the GPU's own memory, which the CPU does not map. Metal tracks its
// hazards. Any thread.
func (b *Backend) newBufferIn(size int, s storageMode) (buffer, error) {
	return b.newBufferOpts(size, s, false)
}

// newBufferOpts allocates a buffer of the given storage, untracked or with
// its hazards tracked by Metal. Any thread.
func (b *Backend) newBufferOpts(size int, s storageMode, untracked bool) (buffer, error) {
	opts, tracking := s.resourceOptions(), "tracked"
	if untracked {
		opts, tracking = opts|mtlResourceHazardTrackingModeUntracked, "untracked"
	}
	id := b.device.Send(sel.newBufferWithLength, uint64(size), opts)
	if id == 0 {
		return buffer{}, fmt.Errorf("newBufferWithLength:%d options:%s storage, %s failed (out of memory?)", size, s, tracking)
	}
	if s == storagePrivate {
		return buffer{id: id, size: size, private: true}, nil
	}
	p := b.rt.sendPtr(uintptr(id), uintptr(sel.contents))
	if p == nil {
		release(id)
		return buffer{}, errors.New("-[MTLBuffer contents] returned NULL for a shared buffer")
	}
	return buffer{id: id, ptr: p, size: size}, nil
}

func freeBuffer(bf *buffer) {
	release(bf.id)
	*bf = buffer{}
}

// newPipeline compiles MSL source and makes the compute pipeline of one of
// its functions. Metal's device methods are thread-safe, so compiles run on
// many goroutines; each locks its thread for the autorelease pool.
func (b *Backend) newPipeline(src, fn string) (pipeline, error) {
	return b.newPipelineWith(gpu.CompileOptions{}, src, fn)
}

// newPipelineWith is newPipeline with a kernel's own compile options.
func (b *Backend) newPipelineWith(co gpu.CompileOptions, src, fn string) (pipeline, error) {
	ps, err := b.newPipelinesWith(co, src, fn)
	if err != nil {
		return pipeline{}, err
	}
	return ps[0], nil
}

// newPipelines compiles src once and makes a pipeline for each function.
func (b *Backend) newPipelines(src string, fns ...string) ([]pipeline, error) {
	return b.newPipelinesWith(gpu.CompileOptions{}, src, fns...)
}

func (b *Backend) newPipelinesWith(co gpu.CompileOptions, src string, fns ...string) ([]pipeline, error) {
	var ps []pipeline
	var err error
	b.rt.withPool(func() {
		nsSrc := nsString(src)
		defer release(nsSrc)
		opts, oerr := b.compileOptions(co)
		if oerr != nil {
			err = oerr
			return
		}
		defer release(opts)
		var nsErr objc.ID
		lib := b.device.Send(sel.newLibraryWithSource, nsSrc, opts, unsafe.Pointer(&nsErr))
		if lib == 0 {
			err = compileError(b.rt.errorText(nsErr))
			return
		}
		defer release(lib)
		for _, fn := range fns {
			var p pipeline
			if p, err = b.pipelineOf(lib, fn); err != nil {
				for _, q := range ps {
					release(q.id)
				}
				ps = nil
				return
			}
			ps = append(ps, p)
		}
	})
	return ps, err
}

// pipelineOf makes the compute pipeline of a library's function. Inside an
// autorelease pool.
func (b *Backend) pipelineOf(lib objc.ID, fn string) (pipeline, error) {
	nsName := nsString(fn)
	defer release(nsName)
	f := lib.Send(sel.newFunctionWithName, nsName)
	if f == 0 {
		return pipeline{}, fmt.Errorf("metal: no function %s in the compiled library", fn)
	}
	defer release(f)
	var nsErr objc.ID
	pso := b.device.Send(sel.newPipeline, f, unsafe.Pointer(&nsErr))
	if pso == 0 {
		return pipeline{}, fmt.Errorf("metal: newComputePipelineStateWithFunction %s: %s", fn, b.rt.errorText(nsErr))
	}
	return pipeline{id: pso, pipelineLimits: pipelineLimits{
		maxThreads:   int(pso.Send(sel.maxTotalThreadsPerThreadgroup)),
		staticShared: int(pso.Send(sel.staticThreadgroupMemory)),
		simdWidth:    int(pso.Send(sel.threadExecutionWidth)),
	}}, nil
}

// compileOptions makes the MTLCompileOptions of every compile (+1: the
// caller releases them), with the math mode set explicitly as MLX sets it
// on the running macOS (mathSettingFor): nil options would mean Metal's
// default, fast math before macOS 15 and MTLMathModeRelaxed on Apple
// silicon since. The setting is read back, so a Metal that ignored it is
// an error, not a silent change of the arithmetic being tuned.
func (b *Backend) compileOptions(co gpu.CompileOptions) (objc.ID, error) {
	ms, err := mathSettingFor(kernelMathMode(co.MathMode, b.compileOpts.mode), b.compileOpts.macOSMajor)
	if err != nil {
		return 0, err
	}
	lang, langName, err := kernelLanguage(co.LanguageVersion, b.compileOpts.language)
	if err != nil {
		return 0, err
	}
	opts := objc.ID(objc.GetClass("MTLCompileOptions")).Send(sel.alloc).Send(sel.init)
	if opts == 0 {
		return 0, errors.New("metal: [[MTLCompileOptions alloc] init] returned nil")
	}
	if ms.useMathMode {
		opts.Send(sel.setMathMode, ms.mathMode)
		if got := objc.Send[int64](opts, sel.mathMode); got != ms.mathMode {
			release(opts)
			return 0, fmt.Errorf("metal: MTLCompileOptions.mathMode reads %d after setting it to %d", got, ms.mathMode)
		}
	} else {
		opts.Send(sel.setFastMathEnabled, ms.fastMath)
		if got := objc.Send[bool](opts, sel.fastMathEnabled); got != ms.fastMath {
			release(opts)
			return 0, fmt.Errorf("metal: MTLCompileOptions.fastMathEnabled reads %t after setting it to %t", got, ms.fastMath)
		}
	}
	// Always set, as MLX sets it: left alone, Metal would take the version
	// of the SDK the binary records (languageForMacOS).
	opts.Send(sel.setLanguageVersion, lang)
	if got := objc.Send[uint64](opts, sel.languageVersion); got != lang {
		release(opts)
		return 0, fmt.Errorf("metal: MTLCompileOptions.languageVersion reads %#x (Metal %s) after setting it to %#x (Metal %s)", got, languageName(got), lang, langName)
	}
	return opts, nil
}

// defaultLanguage is the MTLLanguageVersion of a kernel without its own,
// read back from the options object compileOptions makes.
func (b *Backend) defaultLanguage() (uint64, error) {
	opts, err := b.compileOptions(gpu.CompileOptions{MathMode: MathSafe})
	if err != nil {
		return 0, err
	}
	defer release(opts)
	return objc.Send[uint64](opts, sel.languageVersion), nil
}

// runCommandBuffer encodes into a new command buffer, commits it, waits
// for it and returns its GPU time (GPUEndTime − GPUStartTime) in seconds,
// or a measurement error when the timestamps are not 0 < start < end. The
// command buffer lives in its own autorelease pool. GPU thread. enc must
// end every encoder it begins, also when it returns an error.
func (b *Backend) runCommandBuffer(enc func(cb objc.ID) error) (float64, error) {
	return b.execute(enc, true)
}

// runUntimed is runCommandBuffer for a run whose time is not used
// (verification, a pipeline's first run): its timestamps are not checked.
func (b *Backend) runUntimed(enc func(cb objc.ID) error) error {
	_, err := b.execute(enc, false)
	return err
}

func (b *Backend) execute(enc func(cb objc.ID) error, timed bool) (float64, error) {
	var secs float64
	var err error
	b.rt.withPool(func() {
		cb := b.queue.Send(sel.commandBuffer)
		if cb == 0 {
			err = errors.New("metal: commandBuffer returned nil")
			return
		}
		if err = enc(cb); err != nil {
			return // never committed: released with the pool
		}
		cb.Send(sel.commit)
		cb.Send(sel.waitUntilCompleted)
		if st := int(cb.Send(sel.status)); st != mtlCommandBufferStatusCompleted {
			err = fmt.Errorf("metal: command buffer failed (%s): %s", commandBufferStatus(st), b.rt.errorText(cb.Send(sel.err)))
			return
		}
		if timed {
			start := b.rt.sendDouble(uintptr(cb), uintptr(sel.gpuStartTime))
			end := b.rt.sendDouble(uintptr(cb), uintptr(sel.gpuEndTime))
			secs, err = gpuElapsed(start, end)
		}
	})
	b.lastGPU = time.Now()
	return secs, err
}

// computeEncoder begins a compute encoder with a pipeline set.
func computeEncoder(cb objc.ID, p objc.ID) (objc.ID, error) {
	enc := cb.Send(sel.computeCommandEncoder)
	if enc == 0 {
		return 0, errors.New("metal: computeCommandEncoder returned nil")
	}
	enc.Send(sel.setComputePipelineState, p)
	return enc, nil
}

func (b *Backend) dispatch(enc objc.ID, groups, threads mtlSize) {
	b.rt.sendDispatch(uintptr(enc), uintptr(sel.dispatch), groups, threads)
}

// dispatchThreads encodes a dispatch of threads (not threadgroups), as MLX
// launches its custom kernels; the same two-MTLSize ABI as dispatch.
func (b *Backend) dispatchThreads(enc objc.ID, threads, perGroup mtlSize) {
	b.rt.sendDispatch(uintptr(enc), uintptr(sel.dispatchThreads), threads, perGroup)
}

// encodeBlit adds a blit of the first n bytes of src to dst.
func encodeBlit(cb, src, dst objc.ID, n int) error {
	blit := cb.Send(sel.blitCommandEncoder)
	if blit == 0 {
		return errors.New("metal: blitCommandEncoder returned nil")
	}
	blit.Send(sel.copyBuffer, src, uint64(0), dst, uint64(0), uint64(n))
	blit.Send(sel.endEncoding)
	return nil
}

// emptyMode is how encodeEmpty lays out its dispatches.
type emptyMode int

const (
	emptyShared  emptyMode = iota // one serial compute encoder
	emptyOwn                      // each dispatch in its own encoder, as each MPS run is
	emptyBarrier                  // one concurrent encoder, a buffer barrier between dispatches, as a candidate's timed runs are
)

// encodeEmpty adds n dispatches of the empty kernel (one threadgroup of
// 32) laid out as mode says.
func (b *Backend) encodeEmpty(cb objc.ID, n int, mode emptyMode) error {
	g, t := grid(1, 1, 32)
	var enc objc.ID
	for i := range n {
		if i == 0 || mode == emptyOwn {
			var err error
			if mode == emptyBarrier {
				enc, err = metalAPI{b}.concurrentEncoder(cb)
				if err == nil {
					enc.Send(sel.setComputePipelineState, b.empty.id)
				}
			} else {
				enc, err = computeEncoder(cb, b.empty.id)
			}
			if err != nil {
				return err
			}
		} else if mode == emptyBarrier {
			metalAPI{b}.barrier(enc)
		}
		b.dispatch(enc, g, t)
		if i == n-1 || mode == emptyOwn {
			enc.Send(sel.endEncoding)
		}
	}
	return nil
}

// encodeCopy adds n copies of src to dst (float4 per thread).
func (b *Backend) encodeCopy(cb objc.ID, src, dst buffer, n int) error {
	enc, err := computeEncoder(cb, b.copyKernel.id)
	if err != nil {
		return err
	}
	vecs := uint32(min(src.size, dst.size) / 16)
	enc.Send(sel.setBuffer, src.id, uint64(0), uint64(0))
	enc.Send(sel.setBuffer, dst.id, uint64(0), uint64(1))
	enc.Send(sel.setBytes, unsafe.Pointer(&vecs), uint64(4), uint64(2))
	g, t := grid((int(vecs)+255)/256, 1, 256)
	for range n {
		b.dispatch(enc, g, t)
	}
	enc.Send(sel.endEncoding)
	return nil
}

// encodeBurn adds n dispatches of the FMA loop, writing into dst.
func (b *Backend) encodeBurn(cb objc.ID, dst buffer, n int) error {
	enc, err := computeEncoder(cb, b.burnKernel.id)
	if err != nil {
		return err
	}
	iters := uint32(burnIters)
	enc.Send(sel.setBuffer, dst.id, uint64(0), uint64(0))
	enc.Send(sel.setBytes, unsafe.Pointer(&iters), uint64(4), uint64(1))
	g, t := grid(burnGroups, 1, burnThreads)
	for range n {
		b.dispatch(enc, g, t)
	}
	enc.Send(sel.endEncoding)
	return nil
}

// warm keeps the GPU busy with copies and FMA loops for at least d.
func (b *Backend) warm(d time.Duration) error {
	start := time.Now()
	for time.Since(start) < d {
		err := b.runUntimed(func(cb objc.ID) error {
			if err := b.encodeCopy(cb, b.warmSrc, b.warmDst, 2); err != nil {
				return err
			}
			return b.encodeBurn(cb, b.warmDst, 2)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// rewarmIfIdle warms the GPU again when it has been idle long enough for
// its clocks to drop. GPU thread.
func (b *Backend) rewarmIfIdle() error {
	if time.Since(b.lastGPU) > idleBeforeWarm {
		return b.warm(rewarm)
	}
	return nil
}

// measure warms the GPU up and measures copy bandwidth, FMA rate and the
// dispatch overheads. GPU thread.
func (b *Backend) measure() error {
	f := b.info.Facts
	if err := b.warm(initialWarmup); err != nil {
		return fmt.Errorf("warmup: %w", err)
	}
	f["warmup_s"] = initialWarmup.Seconds()

	// Copy bandwidth, read + write, far past the SLC.
	src, err := b.newBufferIn(bwBytes, b.storage)
	if err != nil {
		return err
	}
	defer freeBuffer(&src)
	dst, err := b.newBufferIn(bwBytes, b.storage)
	if err != nil {
		return err
	}
	defer freeBuffer(&dst)
	var ts []float64
	for range 11 {
		t, err := b.runCommandBuffer(func(cb objc.ID) error { return b.encodeCopy(cb, src, dst, 1) })
		if err != nil {
			return fmt.Errorf("copy bandwidth: %w", err)
		}
		ts = append(ts, t)
	}
	if gbps, err := gpuhost.CopyGBps(bwBytes, ts); err == nil {
		f["bandwidth_gbps"] = gbps
	}

	// FMA rate of the burn kernel: a measured arithmetic peak for the roofline.
	ts = ts[:0]
	for range 5 {
		t, err := b.runCommandBuffer(func(cb objc.ID) error { return b.encodeBurn(cb, b.warmDst, 1) })
		if err != nil {
			return fmt.Errorf("FMA rate: %w", err)
		}
		ts = append(ts, t)
	}
	if t := stats.Median(ts); t > 0 {
		f["peak_gflops"] = math.Round(burnFlops / t / 1e9)
	}

	// Dispatch overhead: the GPU time of an empty dispatch among 1000 in one
	// command buffer, and the host's cost of encoding one: in one serial
	// compute encoder; in one concurrent encoder with a buffer barrier
	// between dispatches, as a candidate's timed runs are; and each in its
	// own encoder, as MPS's runs are. barrier_launch_us is what a
	// candidate's recorded time carries besides its own work,
	// encoder_launch_us what an MPS run's carries.
	const perBuffer = 1000
	for _, m := range []struct {
		mode      emptyMode
		gpu, host string
	}{
		{emptyShared, "launch_overhead_us", "host_launch_us"},
		{emptyBarrier, "barrier_launch_us", "host_barrier_launch_us"},
		{emptyOwn, "encoder_launch_us", "host_encoder_launch_us"},
	} {
		var gpuPer, hostPer []float64
		for range 5 {
			var enc time.Duration
			t, err := b.runCommandBuffer(func(cb objc.ID) error {
				start := time.Now()
				err := b.encodeEmpty(cb, perBuffer, m.mode)
				enc = time.Since(start)
				return err
			})
			if err != nil {
				return fmt.Errorf("dispatch overhead: %w", err)
			}
			gpuPer = append(gpuPer, t/perBuffer)
			hostPer = append(hostPer, enc.Seconds()/perBuffer)
		}
		f[m.gpu] = round3(stats.Median(gpuPer) * 1e6)
		f[m.host] = round3(stats.Median(hostPer) * 1e6)
	}

	// A command buffer of one empty dispatch: its GPU time and the host's
	// round trip (create, encode, commit, wait).
	var cbGPU, cbWall []float64
	for range 30 {
		start := time.Now()
		t, err := b.runCommandBuffer(func(cb objc.ID) error { return b.encodeEmpty(cb, 1, emptyShared) })
		if err != nil {
			return fmt.Errorf("command buffer overhead: %w", err)
		}
		cbWall = append(cbWall, time.Since(start).Seconds())
		cbGPU = append(cbGPU, t)
	}
	f["cmdbuf_gpu_us"] = round3(stats.Median(cbGPU) * 1e6)
	f["host_roundtrip_us"] = round3(stats.Median(cbWall) * 1e6)
	f["dispatch_target_ms"] = targetBufferSeconds * 1e3

	b.info.PeakFlops = peakFlopsCeiling(b.info.ComputeUnits, f["peak_gflops"])
	b.info.PeakBandwidth = peakBandwidthCeiling(f["bandwidth_gbps"])
	return nil
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// Info describes the GPU.
func (b *Backend) Info() device.DeviceInfo { return b.info }

// Close waits for compiles in flight, releases the cached pipelines, the
// helpers, the queue and the device, and ends the GPU thread. Programs and
// instances should be closed first.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	// Close waits for compiles in flight, which use the device.
	jobs := b.compiles.Close()
	b.mu.Lock()
	for _, j := range jobs {
		if cp, err := j.Result(); err == nil {
			cp.evicted = true // a Build waiting on it compiles again and gets errClosed
			release(cp.p.id)
			cp.p = pipeline{}
		}
	}
	b.mu.Unlock()
	err := b.gpu.do(func() error { b.teardown(); return nil })
	b.gpu.stop()
	return err
}

// teardown releases what setup made. GPU thread.
func (b *Backend) teardown() {
	freeBuffer(&b.warmSrc)
	freeBuffer(&b.warmDst)
	for _, p := range []*pipeline{&b.empty, &b.copyKernel, &b.burnKernel} {
		release(p.id)
		*p = pipeline{}
	}
	for i, f := range b.fences {
		release(f)
		b.fences[i] = 0
	}
	release(b.queue)
	release(b.device)
	b.queue, b.device = 0, 0
}
