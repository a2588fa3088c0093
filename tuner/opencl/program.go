package opencl

import (
	"errors"
	"fmt"
	"sync"

	"github.com/kerntune/kerntune/internal/cldrv"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner"
	"github.com/kerntune/kerntune/tuner/internal/compilepool"
)

// instance is a problem resident on the device: input copies and the output.
type instance struct {
	b      *Backend
	p      *kernels.Problem
	inputs [][]cldrv.Buffer // [copy][operand]
	out    cldrv.Buffer
	outLen int
	words  int // 32-bit words of the output buffer, for poisoning
	next   int
}

// Load uploads copies of the inputs and allocates the output (rounded up to
// whole 32-bit words so it can be poisoned with NaN words).
func (b *Backend) Load(p *kernels.Problem, copies int) (tuner.Instance, error) {
	copies = max(copies, 1)
	in := &instance{b: b, p: p, outLen: p.Kernel.OutLen(p.Case.Shape)}
	in.words = (in.outLen*p.DType.Size() + 3) / 4
	host := make([][]byte, len(p.Inputs))
	for i, x := range p.Inputs {
		host[i] = toDevice(p.DType, x)
	}
	err := func() error {
		for range copies {
			var ops []cldrv.Buffer
			for _, h := range host {
				d, err := b.ctx.Alloc(max(len(h), 4))
				if err != nil {
					in.inputs = append(in.inputs, ops) // freed by Close
					return err
				}
				ops = append(ops, d)
				if err := b.ctx.Write(d, h); err != nil {
					in.inputs = append(in.inputs, ops)
					return err
				}
			}
			in.inputs = append(in.inputs, ops)
		}
		var err error
		in.out, err = b.ctx.Alloc(4 * in.words)
		return err
	}()
	if err != nil {
		in.Close()
		return nil, fmt.Errorf("loading %s on %s: %w", p.Case, b.info.Key, err)
	}
	return in, nil
}

// Close frees the device buffers.
func (in *instance) Close() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for _, ops := range in.inputs {
		for _, d := range ops {
			keep(in.b.ctx.Free(d))
		}
	}
	in.inputs = nil
	if in.out != 0 {
		keep(in.b.ctx.Free(in.out))
		in.out = 0
	}
	return first
}

// built is a compiled candidate: its program and kernel. Build claims it
// from the compile cache; the tuner.Program that uses it releases it.
type built struct {
	prog *cldrv.Program
	kern *cldrv.Kernel
	wg   cldrv.WorkGroupInfo

	mu      sync.Mutex
	claimed bool
}

// claim reports whether the caller is the first to take the program.
func (bl *built) claim() bool {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	ok := !bl.claimed
	bl.claimed = true
	return ok
}

func (bl *built) release() error {
	return errors.Join(bl.kern.Release(), bl.prog.Release())
}

func jobKey(k *kernels.Kernel, dt kernels.DType, c search.Candidate) string {
	return k.Name + "|" + string(dt) + "|" + c.Key()
}

// compile finds or creates the compile job of a candidate: OpenCL C
// generated from the family's body, built for the device, its kernel and
// work-group limits.
func (b *Backend) compile(body *gpu.Body, k *kernels.Kernel, dt kernels.DType, c search.Candidate) *compilepool.Job[*built] {
	c = c.Clone()
	return b.compiles.Job(jobKey(k, dt, c), func() (*built, error) { return b.buildSource(body, dt, c) })
}

func (b *Backend) buildSource(body *gpu.Body, dt kernels.DType, c search.Candidate) (*built, error) {
	src, err := body.SourceFor(gpu.OpenCL, dt, c)
	if err != nil {
		return nil, err
	}
	prog, err := b.ctx.Build(src, buildOptions)
	if err != nil {
		return nil, fmt.Errorf("OpenCL build of %s: %w", body.Func, err)
	}
	kern, err := prog.Kernel(body.Func)
	if err != nil {
		prog.Release()
		return nil, err
	}
	wg, err := kern.WorkGroupInfo()
	if err != nil {
		kern.Release()
		prog.Release()
		return nil, err
	}
	return &built{prog: prog, kern: kern, wg: wg}, nil
}

// Prefetch queues candidates the tuner will ask for soon. A pool of
// goroutines (one per CPU) builds them in order while the device times
// others; Build builds a candidate itself if the pool has not reached it.
func (b *Backend) Prefetch(k *kernels.Kernel, dt kernels.DType, cands []search.Candidate) {
	body, err := b.body(k.Name)
	if err != nil {
		return
	}
	jobs := make([]*compilepool.Job[*built], len(cands))
	for i, c := range cands {
		jobs[i] = b.compile(body, k, dt, c)
	}
	b.compiles.Enqueue(jobs...)
}

// Build takes a candidate's program out of the compile cache (building it
// if needed; again if another Build took it) and checks that the kernel
// can run the candidate's work-group in the device's local memory.
func (b *Backend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (tuner.Program, error) {
	body, err := b.body(k.Name)
	if err != nil {
		return nil, err
	}
	j := b.compile(body, k, dt, c)
	bl, err := j.Wait()
	b.compiles.Forget(j) // the program (or the error) goes to this caller only
	if err != nil {
		return nil, err
	}
	if !bl.claim() {
		if bl, err = b.buildSource(body, dt, c.Clone()); err != nil {
			return nil, err
		}
		bl.claimed = true
	}
	threads := body.Threads(c)
	if bl.wg.MaxWorkGroupSize < threads {
		bl.release()
		return nil, fmt.Errorf("needs %d work-items per work-group but the kernel allows %d on %s", threads, bl.wg.MaxWorkGroupSize, b.props.Name)
	}
	if bl.wg.LocalMemBytes > b.props.LocalMemBytes {
		bl.release()
		return nil, fmt.Errorf("needs %d bytes of local memory, the device has %d", bl.wg.LocalMemBytes, b.props.LocalMemBytes)
	}
	c = c.Clone()
	pr := &program{b: b, bl: bl}
	pr.launch = func(in *instance, copy int, event bool) (cldrv.Event, error) {
		g := body.Geometry(in.p.Case.Shape, c)
		if g.Grid[0] <= 0 || g.Grid[1] <= 0 || g.Threads <= 0 {
			return 0, fmt.Errorf("opencl: empty launch %v for %s", g, in.p.Case)
		}
		args := make([]any, 0, len(body.Args))
		scalars := body.Scalars(in.p.Case, in.p.Kernel.Scalars)
		nIn, nScalar := 0, 0
		for _, a := range body.Args {
			switch a.Kind {
			case gpu.In:
				ops := in.inputs[copy]
				if nIn < len(ops) {
					args = append(args, ops[nIn])
				} else {
					args = append(args, ops[0]) // an absent optional input (gemv's bias): never read
				}
				nIn++
			case gpu.Out:
				args = append(args, in.out)
			default:
				args = append(args, scalars[nScalar])
				nScalar++
			}
		}
		return bl.kern.Launch(g.Grid, [2]int{g.Threads, 1}, event, args...)
	}
	return pr, nil
}

// program is a runnable compiled candidate.
type program struct {
	b      *Backend
	bl     *built
	launch func(in *instance, copy int, event bool) (cldrv.Event, error)
}

func (pr *program) Close() error {
	if pr.bl == nil {
		return nil
	}
	err := pr.bl.release()
	pr.bl = nil
	return err
}

func (pr *program) instance(ti tuner.Instance) (*instance, error) {
	in, ok := ti.(*instance)
	if !ok || in.b != pr.b {
		return nil, fmt.Errorf("opencl backend: foreign instance %T", ti)
	}
	if pr.bl == nil {
		return nil, fmt.Errorf("opencl backend: program is closed")
	}
	return in, nil
}

// Run enqueues n launches on rotating input copies, each with a profiling
// event, and returns each launch's device execution time.
func (pr *program) Run(ti tuner.Instance, n int) ([]float64, error) {
	in, err := pr.instance(ti)
	if err != nil {
		return nil, err
	}
	pr.b.queueMu.Lock()
	defer pr.b.queueMu.Unlock()
	evs := make([]cldrv.Event, 0, n)
	for range n {
		c := in.next % len(in.inputs)
		in.next++
		ev, err := pr.launch(in, c, true)
		if err != nil {
			pr.b.ctx.Times(evs) // waits for and releases those enqueued
			return nil, err
		}
		evs = append(evs, ev)
	}
	return pr.b.ctx.Times(evs)
}

// Output poisons the output with NaN, runs once on the first copy and reads
// the result back.
func (pr *program) Output(ti tuner.Instance) ([]float32, error) {
	in, err := pr.instance(ti)
	if err != nil {
		return nil, err
	}
	pr.b.queueMu.Lock()
	defer pr.b.queueMu.Unlock()
	pattern := uint32(0x7fc00000)
	if in.p.DType == kernels.F16 {
		pattern = 0x7e007e00
	}
	if err := pr.b.ctx.Fill32(in.out, pattern, in.words); err != nil {
		return nil, err
	}
	if _, err := pr.launch(in, 0, false); err != nil {
		return nil, err
	}
	buf := make([]byte, 4*in.words)
	if err := pr.b.ctx.Read(buf, in.out); err != nil { // in-order queue: waits for the launch
		return nil, err
	}
	return fromDevice(in.p.DType, buf[:in.outLen*in.p.DType.Size()]), nil
}

// toDevice and fromDevice convert between float32 and the buffer bytes.
func toDevice(dt kernels.DType, xs []float32) []byte { return kernels.Encode(dt, xs) }

func fromDevice(dt kernels.DType, b []byte) []float32 { return kernels.Decode(dt, b) }
