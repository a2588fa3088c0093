//go:build darwin

package metal

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/ebitengine/purego/objc"

	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/internal/gpuhost"
)

// instance is a problem resident in the device's buffers: input copies
// and the output.
type instance = gpuhost.Instance[buffer]

// buffers gives the buffer operations on the GPU thread. Problems' buffers
// are shared storage where memory is unified, which the CPU writes and
// reads through -[MTLBuffer contents], and private storage elsewhere,
// reached through a staging buffer and a blit (memory.go).
type buffers struct{ b *Backend }

func (d buffers) Memory(f func(gpuhost.Memory[buffer]) error) error {
	return d.b.gpu.do(func() error { return f(d) })
}

// Alloc allocates a problem's buffer (an input copy, an output) as MLX
// allocates arrays: hazard tracking off
// (MTLResourceHazardTrackingModeUntracked), so that Metal adds no
// dependency of its own between the encoders and command buffers that use
// it; the timing plan orders them itself (barriers, a fence), and every
// other use (a write, a read, a verified run) is waited for before the
// next.
func (d buffers) Alloc(n int) (buffer, error) { return d.b.newBufferOpts(n, d.b.storage, true) }
func (d buffers) Free(bf buffer) error        { freeBuffer(&bf); return nil }

func (d buffers) Read(dst []byte, src buffer) error {
	if src.private {
		return readVia[buffer](d, dst, src, src.size)
	}
	copy(dst, src.bytes())
	return nil
}

func (d buffers) Write(dst buffer, src []byte) error {
	if len(src) > dst.size {
		return fmt.Errorf("metal: writing %d bytes into a buffer of %d", len(src), dst.size)
	}
	if dst.private {
		return writeVia[buffer](d, dst, dst.size, src)
	}
	copy(dst.bytes(), src)
	return nil
}

func (d buffers) Fill(dst buffer, word uint32, words int) error {
	if dst.private {
		return fillWordsVia[buffer](d, dst, dst.size, word, words)
	}
	gpuhost.FillWords(dst.bytes()[:4*words], word)
	return nil
}

// staging, release and blit move bytes into and out of private buffers
// (stager). GPU thread.
func (d buffers) staging(n int) (buffer, []byte, error) {
	bf, err := d.b.newBuffer(n)
	if err != nil {
		return buffer{}, nil, err
	}
	return bf, bf.bytes(), nil
}

func (d buffers) release(bf buffer) { freeBuffer(&bf) }

func (d buffers) blit(src, dst buffer, n int) error {
	return d.b.runUntimed(func(cb objc.ID) error { return encodeBlit(cb, src.id, dst.id, n) })
}

// Load writes copies of the inputs and allocates the output.
func (b *Backend) Load(p *kernels.Problem, copies int) (device.Instance, error) {
	return gpuhost.Load[buffer](buffers{b}, p, copies, b.info.Key)
}

// encodeFn adds one run of a vendor routine (MPS) on one input copy to a
// command buffer, in encoders of its own: MPS's encodeToCommandBuffer:
// opens its own for every call. verify is true for the run whose output is
// verified (MPS gemv then copies the bias into y first). It must end every
// encoder it begins.
type encodeFn func(cb objc.ID, in *instance, cp int, verify bool) error

// runFn encodes one run of a compiled candidate on input copy cp into an
// open compute encoder: its pipeline, arguments and dispatch.
type runFn func(e objc.ID, cp int) error

// program is a runnable kernel: a compiled candidate or an MPS call.
type program struct {
	b *Backend
	// bind prepares a candidate's runs on an instance (pipeline, launch
	// sizes, by-value arguments: worked out once a timing, not once a
	// run); nil for MPS.
	bind func(in *instance) (runFn, error)
	// mps encodes an MPS run; nil for a candidate.
	mps encodeFn
	// prepare, when set, readies the program for an instance before it
	// runs there (a shape-dependent body's pipeline for its shape); it
	// runs off the GPU thread.
	prepare func(in *instance) error
	free    func() // releases the program's objects; GPU thread
	// perBuffer is the runs per timed command buffer on each instance,
	// revised after every timing (GPU thread; see gpuhost.RevisedRuns).
	perBuffer map[*instance]int
}

func newCandidate(b *Backend, bind func(*instance) (runFn, error), free func()) *program {
	return &program{b: b, bind: bind, free: free, perBuffer: map[*instance]int{}}
}

func newVendor(b *Backend, enc encodeFn, free func()) *program {
	return &program{b: b, mps: enc, free: free, perBuffer: map[*instance]int{}}
}

// vendor reports whether the program is a vendor library's (MPS):
// verified on a zeroed output.
func (pr *program) vendor() bool { return pr.mps != nil }

// plan is the timing plan of the program's runs on an instance. GPU thread.
func (pr *program) plan(in *instance, verify bool) (timingPlan[objc.ID, objc.ID], error) {
	p := timingPlan[objc.ID, objc.ID]{api: metalAPI{pr.b}}
	if pr.mps != nil {
		p.vendor = func(cb objc.ID, cp int) error { return pr.mps(cb, in, cp, verify) }
		return p, nil
	}
	run, err := pr.bind(in)
	if err != nil {
		return p, err
	}
	p.dispatch = run
	return p, nil
}

func (pr *program) Close() error {
	if pr.free == nil {
		return nil
	}
	free := pr.free
	pr.free = nil
	err := pr.b.gpu.do(func() error { free(); return nil })
	if errors.Is(err, errClosed) {
		free() // the backend is gone: nothing else uses these objects
		return nil
	}
	return err
}

func (pr *program) instance(ti device.Instance) (*instance, error) {
	in, err := gpuhost.Of(ti, buffers{pr.b}, "metal")
	if err != nil || pr.prepare == nil {
		return in, err
	}
	return in, pr.prepare(in)
}

// Run times n samples. Each sample is one command buffer holding D runs of
// the kernel on rotating input copies, encoded as timingPlan says (a
// candidate's runs in one concurrent encoder with a buffer barrier between
// them, MPS's each in its own encoders), with up to maxInFlight command
// buffers committed at once; the sample is the command buffer's GPU time
// divided by D. D is chosen so that the command buffer lasts about a
// millisecond on the GPU, and is at most MLX's dispatches per command
// buffer on this device (Backend.maxRuns). It is first estimated after one
// untimed command buffer (the pipeline's and the buffers' first use), then
// revised from the median of every timing, so the tuner's warmup runs
// settle it before the samples that count (see gpuhost.RevisedRuns).
func (pr *program) Run(ti device.Instance, n int) ([]float64, error) {
	in, err := pr.instance(ti)
	if err != nil {
		return nil, err
	}
	var secs []float64
	err = pr.b.gpu.do(func() error {
		if err := pr.b.rewarmIfIdle(); err != nil {
			return err
		}
		defer func() { pr.b.lastGPU = time.Now() }()
		p, err := pr.plan(in, false)
		if err != nil {
			return err
		}
		limit := pr.b.maxRuns
		gpuhost.PruneClosed(pr.perBuffer)
		d, ok := pr.perBuffer[in]
		if !ok {
			if _, err := p.once(in.Take(calibrationDispatch), false); err != nil {
				return err
			}
			t, err := p.once(in.Take(calibrationDispatch), true)
			if err != nil {
				return err
			}
			d = gpuhost.RunsPerSample(t/calibrationDispatch, targetBufferSeconds, limit)
		}
		if secs, err = p.samples(n, d, in.Take); err != nil {
			return err
		}
		pr.perBuffer[in] = gpuhost.RevisedRuns(d, stats.Median(secs), targetBufferSeconds, limit)
		return nil
	})
	return secs, err
}

// Output fills the output with NaN (zeros for MPS, see prepareOutput), runs
// once on the first input copy, encoded as a timed run is, and reads the
// output back.
func (pr *program) Output(ti device.Instance) ([]float32, error) {
	in, err := pr.instance(ti)
	if err != nil {
		return nil, err
	}
	var out []float32
	err = pr.b.gpu.do(func() error {
		if pr.vendor() {
			zeros := make([]byte, in.Out.size)
			prepareOutput(zeros, in.Problem.DType, true)
			if err := (buffers{pr.b}).Write(in.Out, zeros); err != nil {
				return err
			}
		} else if err := in.Poison(buffers{pr.b}); err != nil {
			return err
		}
		p, err := pr.plan(in, true)
		if err != nil {
			return err
		}
		_, err = p.once([]int{0}, false)
		pr.b.lastGPU = time.Now()
		if err != nil {
			return err
		}
		out, err = in.ReadOutput(buffers{pr.b})
		return err
	})
	return out, err
}

// compiled is a candidate's pipeline, owned by the compile cache until
// evicted.
type compiled struct {
	p       pipeline
	evicted bool // guarded by Backend.mu
}

// maxCachedBuilt bounds the compiled pipelines kept after a Build used them.
const maxCachedBuilt = 256

// compilePipeline compiles a candidate: MSL generated from the family's
// body, newLibraryWithSource, newFunctionWithName,
// newComputePipelineStateWithFunction.
func (b *Backend) compilePipeline(body *gpu.Body, dt kernels.DType, c search.Candidate) (*compiled, error) {
	if body.ShapeDependent() {
		// Nothing to compile before a shape is known: Build makes a
		// program that compiles per shape (buildShaped).
		return &compiled{}, nil
	}
	src, err := body.SourceFor(gpu.Metal, dt, c)
	if err != nil {
		return nil, err
	}
	p, err := b.newPipelineWith(body.Compile, src, body.FuncName(dt, c))
	if err != nil {
		return nil, err
	}
	return &compiled{p: p}, nil
}

// Build waits for a candidate's compile and checks that its pipeline can
// run the candidate's threadgroup: at most the pipeline's own
// maxTotalThreadsPerThreadgroup threads, at most 32 KB of threadgroup
// memory, and for generated kernels a threadExecutionWidth of 32.
func (b *Backend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (device.Program, error) {
	body, err := b.compiles.Body(k.Name)
	if err != nil {
		return nil, err
	}
	if body.ShapeDependent() {
		return b.buildShaped(body, k, dt, c)
	}
	pso, err := b.buildPipeline(body, k, dt, c)
	if err != nil {
		return nil, err
	}
	c = c.Clone()
	bind := b.binder(body, k, c, func(*instance) (objc.ID, error) { return pso, nil })
	return newCandidate(b, bind, func() { release(pso) }), nil
}

// buildPipeline waits for a candidate's compile and checks its pipeline;
// it returns a retained pipeline state.
func (b *Backend) buildPipeline(body *gpu.Body, k *kernels.Kernel, dt kernels.DType, c search.Candidate) (objc.ID, error) {
	var pso objc.ID
	for pso == 0 {
		cp, err := b.compiles.For(body, k, dt, c).Wait()
		if err != nil {
			return 0, err
		}
		b.mu.Lock()
		if cp.evicted { // evicted meanwhile: compile again
			b.mu.Unlock()
			continue
		}
		// Raw sources (a user's .metal file) make no assumption kerntune
		// knows of; the generated kernels' reductions need 32 lanes.
		err = checkPipeline(body.Threads(c), b.info.Limits.GPU.MaxShared, cp.p.pipelineLimits, body.Source != "")
		if err == nil {
			pso = retain(cp.p.id)
		}
		b.noteBuilt(gpuhost.Key(k, dt, c))
		b.mu.Unlock()
		if err != nil {
			return 0, err
		}
	}
	return pso, nil
}

// buildShaped makes the program of a shape-dependent body (an MLX kernel
// whose template values, format placeholders or input address spaces
// follow the shape): it compiles lazily for the shape of each instance it
// runs on, through the compile cache under a key that holds the
// shape-derived source (shapedKey), and keeps one pipeline per shape.
func (b *Backend) buildShaped(body *gpu.Body, k *kernels.Kernel, dt kernels.DType, c search.Candidate) (device.Program, error) {
	if _, err := body.Supported(gpu.Metal, c); err != nil {
		return nil, err
	}
	c = c.Clone()
	var mu sync.Mutex
	psos := map[string]objc.ID{} // retained, by shape
	pipelineFor := func(in *instance) (objc.ID, error) {
		mu.Lock()
		defer mu.Unlock()
		if pso, ok := psos[families.ShapeString(in.Problem.Case.Shape)]; ok {
			return pso, nil
		}
		return 0, fmt.Errorf("metal: %s %s: no pipeline for shape %s", k.Name, c.Key(), families.ShapeString(in.Problem.Case.Shape))
	}
	prepare := func(in *instance) error {
		shape := in.Problem.Case.Shape
		key := families.ShapeString(shape)
		mu.Lock()
		_, ok := psos[key]
		mu.Unlock()
		if ok {
			return nil
		}
		pso, err := b.shapedPipeline(body, k, dt, c, shape)
		if err != nil {
			return fmt.Errorf("metal: %s on shape %s: %w", k.Name, key, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if _, dup := psos[key]; dup {
			release(pso)
		} else {
			psos[key] = pso
		}
		return nil
	}
	free := func() {
		mu.Lock()
		defer mu.Unlock()
		for key, pso := range psos {
			release(pso)
			delete(psos, key)
		}
	}
	pr := newCandidate(b, b.binder(body, k, c, pipelineFor), free)
	pr.prepare = prepare
	return pr, nil
}

// shapedPipeline compiles (or finds in the compile cache) a candidate's
// pipeline for one shape and checks it as Build does; it returns a
// retained pipeline state.
func (b *Backend) shapedPipeline(body *gpu.Body, k *kernels.Kernel, dt kernels.DType, c search.Candidate, shape []int) (objc.ID, error) {
	src, err := body.SourceForShape(gpu.Metal, dt, c, shape)
	if err != nil {
		return 0, err
	}
	fn, err := body.FuncNameForShape(dt, c, shape)
	if err != nil {
		return 0, err
	}
	key := shapedKey(gpuhost.Key(k, dt, c), fn, src)
	for {
		cp, err := b.compiles.Job(key, func() (*compiled, error) {
			p, err := b.newPipelineWith(body.Compile, src, fn)
			if err != nil {
				return nil, err
			}
			return &compiled{p: p}, nil
		}).Wait()
		if err != nil {
			return 0, err
		}
		b.mu.Lock()
		if cp.evicted { // evicted meanwhile: compile again
			b.mu.Unlock()
			continue
		}
		err = checkPipeline(body.Threads(c), b.info.Limits.GPU.MaxShared, cp.p.pipelineLimits, body.Source != "")
		var pso objc.ID
		if err == nil {
			pso = retain(cp.p.id)
		}
		b.noteBuilt(key)
		b.mu.Unlock()
		return pso, err
	}
}

// binder is the bind function of a candidate whose pipeline for an
// instance pipelineFor gives. Its runs set everything a dispatch uses, as
// MLX sets each op's (the encoder would keep the previous run's bindings,
// but a run of an application's stream of kernels finds another kernel's),
// through the fixed-arity sends.
func (b *Backend) binder(body *gpu.Body, k *kernels.Kernel, c search.Candidate, pipelineFor func(*instance) (objc.ID, error)) func(*instance) (runFn, error) {
	return func(in *instance) (runFn, error) {
		pso, err := pipelineFor(in)
		if err != nil {
			return nil, err
		}
		g := body.Geometry(in.Problem.Case.Shape, c)
		size, perGroup, threads, err := launchSizes(g)
		if err != nil {
			return nil, fmt.Errorf("metal: %w for %s", err, in.Problem.Case)
		}
		scal, err := scalarWords(body.Scalars(in.Problem.Case, in.Problem.Kernel.Scalars))
		if err != nil {
			return nil, err
		}
		var consts [][]byte
		if body.Consts != nil {
			consts = body.Consts(in.Problem.Case)
		}
		bound, err := bytesArgs(body.Args, consts)
		if err != nil {
			return nil, fmt.Errorf("metal: %s on %s: %w", k.Name, in.Problem.Case, err)
		}
		r := b.rt
		return func(enc objc.ID, cp int) error {
			e := uintptr(enc)
			r.msg1(e, uintptr(sel.setComputePipelineState), uintptr(pso))
			// Body.Args order is the buffer index.
			s := 0
			for i, a := range body.Args {
				if a.Kind == gpu.Int || a.Kind == gpu.Float {
					r.msgBytes(e, uintptr(sel.setBytes), unsafe.Pointer(&scal[s]), 4, uintptr(i))
					s++
				}
			}
			for _, bb := range bound {
				r.msgBytes(e, uintptr(sel.setBytes), unsafe.Pointer(&bb.data[0]), uintptr(len(bb.data)), uintptr(bb.index))
			}
			nIn, nOut := 0, 0
			for i, a := range body.Args {
				switch a.Kind {
				case gpu.In, gpu.Words:
					r.msg3(e, uintptr(sel.setBuffer), uintptr(in.Input(cp, nIn).id), 0, uintptr(i))
					nIn++
				case gpu.Out:
					r.msg3(e, uintptr(sel.setBuffer), uintptr(in.Outs[min(nOut, len(in.Outs)-1)].id), 0, uintptr(i))
					nOut++
				}
			}
			if threads {
				b.dispatchThreads(enc, size, perGroup)
			} else {
				b.dispatch(enc, size, perGroup)
			}
			return nil
		}, nil
	}
}

// noteBuilt records that Build used a job and evicts the oldest used jobs
// beyond maxCachedBuilt (their programs hold their own references). b.mu held.
func (b *Backend) noteBuilt(key string) {
	for _, k := range b.built {
		if k == key {
			return
		}
	}
	b.built = append(b.built, key)
	for len(b.built) > maxCachedBuilt {
		old := b.built[0]
		b.built = b.built[1:]
		if j, ok := b.compiles.Evict(old); ok {
			if cp, err := j.Result(); err == nil {
				cp.evicted = true
				release(cp.p.id)
				cp.p = pipeline{}
			}
		}
	}
}

// Prefetch hands candidates the tuner will ask for soon to the Metal
// compiler on the compile pool, while the GPU times others.
func (b *Backend) Prefetch(k *kernels.Kernel, dt kernels.DType, cands []search.Candidate) {
	b.compiles.Prefetch(k, dt, cands)
}

// Spare hands candidates worth a build only while the pool is idle to
// the compile pool (device.Sparer).
func (b *Backend) Spare(k *kernels.Kernel, dt kernels.DType, cands []search.Candidate) {
	b.compiles.Spare(k, dt, cands)
}

// BuildSeconds is the time the compile pool has spent in the Metal compiler and the
// compile cache since the backend opened (device.BuildTimer).
func (b *Backend) BuildSeconds() float64 { return b.compiles.BuildSeconds() }

// Ready reports whether a candidate's compile has ended (device.Readier).
func (b *Backend) Ready(k *kernels.Kernel, dt kernels.DType, c search.Candidate) bool {
	return b.compiles.Ready(k, dt, c)
}
