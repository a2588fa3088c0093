//go:build darwin

package metal

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego/objc"

	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner"
	"github.com/kerntune/kerntune/tuner/internal/compilepool"
)

// instance is a problem resident in shared-storage buffers: input copies
// and the output.
type instance struct {
	b      *Backend
	p      *kernels.Problem
	inputs [][]buffer // [copy][operand]
	out    buffer
	outLen int
	next   int // next input copy, rotating (GPU thread)
}

// Load writes copies of the inputs and allocates the output. Buffers are
// shared storage: the CPU writes them through -[MTLBuffer contents].
func (b *Backend) Load(p *kernels.Problem, copies int) (tuner.Instance, error) {
	copies = max(copies, 1)
	in := &instance{b: b, p: p, outLen: p.Kernel.OutLen(p.Case.Shape)}
	host := make([][]byte, len(p.Inputs))
	for i, x := range p.Inputs {
		host[i] = make([]byte, bufferBytes(p.DType, len(x)))
		encode(host[i], p.DType, x)
	}
	err := b.gpu.do(func() error {
		for range copies {
			var ops []buffer
			for _, h := range host {
				bf, err := b.newBuffer(len(h))
				if err != nil {
					in.inputs = append(in.inputs, ops) // freed by Close
					return err
				}
				copy(bf.bytes(), h)
				ops = append(ops, bf)
			}
			in.inputs = append(in.inputs, ops)
		}
		var err error
		in.out, err = b.newBuffer(bufferBytes(p.DType, in.outLen))
		return err
	})
	if err != nil {
		in.Close()
		return nil, fmt.Errorf("loading %s on %s: %w", p.Case, b.info.Key, err)
	}
	return in, nil
}

// Close releases the buffers.
func (in *instance) Close() error {
	return in.b.gpu.do(func() error {
		for _, ops := range in.inputs {
			for i := range ops {
				freeBuffer(&ops[i])
			}
		}
		in.inputs = nil
		freeBuffer(&in.out)
		return nil
	})
}

// take returns the next n input copies, rotating.
func (in *instance) take(n int) []int {
	cs := make([]int, n)
	for i := range cs {
		cs[i] = in.next % len(in.inputs)
		in.next++
	}
	return cs
}

// encodeFn adds one run of a program on one input copy to a command
// buffer, in encoders of its own: a candidate opens a compute encoder for
// its dispatch, as MPS does for each of its encodes, so that both are timed
// the same way. verify is true for the run whose output is verified (MPS
// gemv then copies the bias into y first). It must end every encoder it
// begins.
type encodeFn func(cb objc.ID, in *instance, cp int, verify bool) error

// program is a runnable kernel: a compiled candidate or an MPS call.
type program struct {
	b      *Backend
	encode encodeFn
	free   func() // releases the program's objects; GPU thread
	vendor bool   // a vendor library (MPS): verified on a zeroed output
	// perBuffer is the runs per timed command buffer on each instance,
	// revised after every timing (GPU thread; see revisedDispatches).
	perBuffer map[*instance]int
}

func newProgram(b *Backend, enc encodeFn, free func(), vendor bool) *program {
	return &program{b: b, encode: enc, free: free, vendor: vendor, perBuffer: map[*instance]int{}}
}

// encodeRuns adds one run per listed input copy.
func (pr *program) encodeRuns(cb objc.ID, in *instance, copies []int) error {
	for _, c := range copies {
		if err := pr.encode(cb, in, c, false); err != nil {
			return err
		}
	}
	return nil
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

func (pr *program) instance(ti tuner.Instance) (*instance, error) {
	in, ok := ti.(*instance)
	if !ok || in.b != pr.b {
		return nil, fmt.Errorf("metal backend: foreign instance %T", ti)
	}
	if len(in.inputs) == 0 {
		return nil, errors.New("metal backend: instance is closed")
	}
	return in, nil
}

// Run times n samples. Each sample is one command buffer holding D runs of
// the kernel on rotating input copies, D chosen so that the command buffer
// lasts about a millisecond on the GPU; the sample is the command buffer's
// GPU time divided by D. D is first estimated after one untimed command
// buffer (the pipeline's and the buffers' first use), then revised from the
// median of every timing, so the tuner's warmup runs settle it before the
// samples that count (see revisedDispatches).
func (pr *program) Run(ti tuner.Instance, n int) ([]float64, error) {
	in, err := pr.instance(ti)
	if err != nil {
		return nil, err
	}
	var secs []float64
	err = pr.b.gpu.do(func() error {
		if err := pr.b.rewarmIfIdle(); err != nil {
			return err
		}
		d, ok := pr.perBuffer[in]
		if !ok {
			if err := pr.b.runUntimed(func(cb objc.ID) error { return pr.encodeRuns(cb, in, in.take(calibrationDispatch)) }); err != nil {
				return err
			}
			t, err := pr.b.runCommandBuffer(func(cb objc.ID) error { return pr.encodeRuns(cb, in, in.take(calibrationDispatch)) })
			if err != nil {
				return err
			}
			d = dispatchesPerBuffer(t/calibrationDispatch, targetBufferSeconds, maxDispatches)
		}
		secs = make([]float64, n)
		for i := range secs {
			t, err := pr.b.runCommandBuffer(func(cb objc.ID) error { return pr.encodeRuns(cb, in, in.take(d)) })
			if err != nil {
				return err
			}
			secs[i] = t / float64(d)
		}
		pr.perBuffer[in] = revisedDispatches(d, stats.Median(secs), targetBufferSeconds, maxDispatches)
		return nil
	})
	return secs, err
}

// Output fills the output with NaN (zeros for MPS, see prepareOutput), runs
// once on the first input copy and reads the output back.
func (pr *program) Output(ti tuner.Instance) ([]float32, error) {
	in, err := pr.instance(ti)
	if err != nil {
		return nil, err
	}
	var out []float32
	err = pr.b.gpu.do(func() error {
		prepareOutput(in.out.bytes(), in.p.DType, pr.vendor)
		if err := pr.b.runUntimed(func(cb objc.ID) error { return pr.encode(cb, in, 0, true) }); err != nil {
			return err
		}
		out = decode(in.out.bytes(), in.p.DType, in.outLen)
		return nil
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

func jobKey(k *kernels.Kernel, dt kernels.DType, c search.Candidate) string {
	return k.Name + "|" + string(dt) + "|" + c.Key()
}

// compile finds or creates the compile job of a candidate: MSL generated
// from the family's body, newLibraryWithSource, newFunctionWithName,
// newComputePipelineStateWithFunction.
func (b *Backend) compile(body *gpu.Body, k *kernels.Kernel, dt kernels.DType, c search.Candidate) *compilepool.Job[*compiled] {
	c = c.Clone()
	return b.compiles.Job(jobKey(k, dt, c), func() (*compiled, error) {
		src, err := body.SourceFor(gpu.Metal, dt, c)
		if err != nil {
			return nil, err
		}
		p, err := b.newPipeline(src, body.FuncName(dt, c))
		if err != nil {
			return nil, err
		}
		return &compiled{p: p}, nil
	})
}

// Prefetch queues candidates the tuner will ask for soon. A pool of
// goroutines (one per CPU) compiles them in order while the GPU times
// others; Build compiles a candidate itself if the pool has not reached it.
func (b *Backend) Prefetch(k *kernels.Kernel, dt kernels.DType, cands []search.Candidate) {
	body, err := gpu.Get(k.Name)
	if err != nil {
		return
	}
	jobs := make([]*compilepool.Job[*compiled], len(cands))
	for i, c := range cands {
		jobs[i] = b.compile(body, k, dt, c)
	}
	b.compiles.Enqueue(jobs...)
}

// Build waits for a candidate's compile and checks that its pipeline can
// run the candidate's threadgroup: at most the pipeline's own
// maxTotalThreadsPerThreadgroup threads, at most 32 KB of threadgroup
// memory, and for generated kernels a threadExecutionWidth of 32.
func (b *Backend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (tuner.Program, error) {
	body, err := gpu.Get(k.Name)
	if err != nil {
		return nil, err
	}
	var pso objc.ID
	for pso == 0 {
		cp, err := b.compile(body, k, dt, c).Wait()
		if err != nil {
			return nil, err
		}
		b.mu.Lock()
		if cp.evicted { // evicted meanwhile: compile again
			b.mu.Unlock()
			continue
		}
		// Raw sources (a user's .metal file) make no assumption kerntune
		// knows of; the generated kernels' reductions need 32 lanes.
		err = checkPipeline(body.Threads(c), b.maxShared, cp.p.pipelineLimits, body.Source != "")
		if err == nil {
			pso = retain(cp.p.id)
		}
		b.noteBuilt(jobKey(k, dt, c))
		b.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	words := func(in *instance) ([]uint32, error) { return scalarWords(body.Scalars(in.p.Case, in.p.Kernel.Scalars)) }
	c = c.Clone()
	enc := func(cb objc.ID, in *instance, cp int, _ bool) error {
		g := body.Geometry(in.p.Case.Shape, c)
		size, perGroup, threads, err := launchSizes(g)
		if err != nil {
			return fmt.Errorf("metal: %w for %s", err, in.p.Case)
		}
		scal, err := words(in)
		if err != nil {
			return err
		}
		var consts [][]byte
		if body.Consts != nil {
			consts = body.Consts(in.p.Case)
		}
		bound, err := bytesArgs(body.Args, consts)
		if err != nil {
			return fmt.Errorf("metal: %s on %s: %w", k.Name, in.p.Case, err)
		}
		e, err := computeEncoder(cb, pso)
		if err != nil {
			return err
		}
		// Body.Args order is the buffer index.
		s := 0
		for i, a := range body.Args {
			if a.Kind == gpu.Int || a.Kind == gpu.Float {
				e.Send(sel.setBytes, unsafe.Pointer(&scal[s]), uint64(4), uint64(i))
				s++
			}
		}
		for _, bb := range bound {
			e.Send(sel.setBytes, unsafe.Pointer(&bb.data[0]), uint64(len(bb.data)), uint64(bb.index))
		}
		ops, nIn := in.inputs[cp], 0
		for i, a := range body.Args {
			switch a.Kind {
			case gpu.In:
				bf := ops[0] // an absent optional input (gemv's bias): bound, never read
				if nIn < len(ops) {
					bf = ops[nIn]
				}
				nIn++
				e.Send(sel.setBuffer, bf.id, uint64(0), uint64(i))
			case gpu.Out:
				e.Send(sel.setBuffer, in.out.id, uint64(0), uint64(i))
			}
		}
		if threads {
			b.dispatchThreads(e, size, perGroup)
		} else {
			b.dispatch(e, size, perGroup)
		}
		e.Send(sel.endEncoding)
		runtime.KeepAlive(scal)
		runtime.KeepAlive(bound)
		return nil
	}
	return newProgram(b, enc, func() { release(pso) }, false), nil
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
