package opencl

import (
	"errors"
	"fmt"
	"sync"

	"github.com/kerntune/kerntune/internal/cldrv"
	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/internal/gpuhost"
)

// instance is a problem resident on the device: input copies and the output.
type instance = gpuhost.Instance[cldrv.Buffer]

// buffers gives the buffer operations of the backend's context, whose one
// in-order queue orders them with the launches.
type buffers struct{ b *Backend }

func (d buffers) Memory(f func(gpuhost.Memory[cldrv.Buffer]) error) error { return f(d) }

func (d buffers) Alloc(n int) (cldrv.Buffer, error)        { return d.b.ctx.Alloc(n) }
func (d buffers) Write(dst cldrv.Buffer, src []byte) error { return d.b.ctx.Write(dst, src) }
func (d buffers) Read(dst []byte, src cldrv.Buffer) error  { return d.b.ctx.Read(dst, src) }
func (d buffers) Free(buf cldrv.Buffer) error              { return d.b.ctx.Free(buf) }
func (d buffers) Fill(dst cldrv.Buffer, word uint32, words int) error {
	return d.b.ctx.Fill32(dst, word, words)
}

// Load uploads copies of the inputs and allocates the output.
func (b *Backend) Load(p *kernels.Problem, copies int) (device.Instance, error) {
	return gpuhost.Load[cldrv.Buffer](buffers{b}, p, copies, b.info.Key)
}

// built is a compiled candidate: its program and kernel. Build claims it
// from the compile cache; the device.Program that uses it releases it.
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

// buildSource builds a candidate: OpenCL C generated from the family's
// body, built for the device, its kernel and work-group limits.
func (b *Backend) buildSource(body *gpu.Body, dt kernels.DType, c search.Candidate) (*built, error) {
	src, err := body.SourceFor(gpu.OpenCL, dt, c)
	if err != nil {
		return nil, err
	}
	prog, err := b.build(src)
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

// Build takes a candidate's program out of the compile cache (building it
// if needed; again if another Build took it) and checks that the kernel
// can run the candidate's work-group in the device's local memory.
func (b *Backend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (device.Program, error) {
	body, err := b.compiles.Body(k.Name)
	if err != nil {
		return nil, err
	}
	j := b.compiles.For(body, k, dt, c)
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
		g := body.Geometry(in.Problem.Case.Shape, c)
		if g.Grid[0] <= 0 || g.Grid[1] <= 0 || g.Threads <= 0 {
			return 0, fmt.Errorf("opencl: empty launch %v for %s", g, in.Problem.Case)
		}
		return bl.kern.Launch(g.Grid, [2]int{g.Threads, 1}, event, in.Args(body, copy)...)
	}
	return pr, nil
}

// program is a runnable compiled candidate.
type program struct {
	b      *Backend
	bl     *built
	launch func(in *instance, copy int, event bool) (cldrv.Event, error)
	// perSample is the launches a sample holds on each instance (Run).
	perSample map[*instance]int
}

// A sample is a run of back-to-back launches, as an application enqueues
// them, lasting at least targetRunSeconds on the device, and at most
// maxRun launches; calibrationLaunches single launches first estimate a
// kernel's time on an instance.
const (
	targetRunSeconds    = 100e-6
	maxRun              = 64
	calibrationLaunches = 3
)

func (pr *program) Close() error {
	if pr.bl == nil {
		return nil
	}
	err := pr.bl.release()
	pr.bl = nil
	return err
}

func (pr *program) instance(ti device.Instance) (*instance, error) {
	in, err := gpuhost.Of(ti, buffers{pr.b}, "opencl")
	if err != nil {
		return nil, err
	}
	if pr.bl == nil {
		return nil, fmt.Errorf("opencl backend: program is closed")
	}
	return in, nil
}

// Run enqueues n launches on rotating input copies, each with a profiling
// event, and returns each launch's device execution time.
func (pr *program) Run(ti device.Instance, n int) ([]float64, error) {
	in, err := pr.instance(ti)
	if err != nil {
		return nil, err
	}
	pr.b.queueMu.Lock()
	defer pr.b.queueMu.Unlock()
	if pr.perSample == nil {
		pr.perSample = map[*instance]int{}
	}
	gpuhost.PruneClosed(pr.perSample)
	d, ok := pr.perSample[in]
	if !ok {
		cal, err := pr.runs(in, calibrationLaunches, 1)
		if err != nil {
			return nil, err
		}
		d = gpuhost.RunsPerSample(stats.Median(cal), targetRunSeconds, maxRun)
	}
	secs, err := pr.runs(in, n, d)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		pr.perSample[in] = gpuhost.RevisedRuns(d, stats.Median(secs), targetRunSeconds, maxRun)
	}
	return secs, nil
}

// runs times n samples of per back-to-back launches on rotating input
// copies: each sample is the device time from the first launch's start to
// the last's end, divided by per, so that it holds the gaps between
// launches an application's queue has too. Only the first and the last
// launch of a sample carry an event.
func (pr *program) runs(in *instance, n, per int) ([]float64, error) {
	pairs := make([][2]cldrv.Event, 0, n)
	for range n {
		var p [2]cldrv.Event
		for j := range per {
			ev, err := pr.launch(in, in.Next(), j == 0 || j == per-1)
			if err != nil {
				if j > 0 {
					pairs = append(pairs, [2]cldrv.Event{p[0], p[0]})
				}
				pr.b.ctx.Spans(pairs) // waits for and releases those enqueued
				return nil, err
			}
			if j == 0 {
				p[0] = ev
			}
			if j == per-1 {
				p[1] = ev
			}
		}
		pairs = append(pairs, p)
	}
	secs, err := pr.b.ctx.Spans(pairs)
	if err != nil {
		return nil, err
	}
	for i := range secs {
		secs[i] /= float64(per)
	}
	return secs, nil
}

// Output poisons the output with NaN, runs once on the first copy and reads
// the result back.
func (pr *program) Output(ti device.Instance) ([]float32, error) {
	in, err := pr.instance(ti)
	if err != nil {
		return nil, err
	}
	pr.b.queueMu.Lock()
	defer pr.b.queueMu.Unlock()
	if err := in.Poison(buffers{pr.b}); err != nil {
		return nil, err
	}
	if _, err := pr.launch(in, 0, false); err != nil {
		return nil, err
	}
	return in.ReadOutput(buffers{pr.b}) // in-order queue: the read waits for the launch
}

// Prefetch hands candidates the tuner will ask for soon to the OpenCL
// compiler on the compile pool, while the device times others.
func (b *Backend) Prefetch(k *kernels.Kernel, dt kernels.DType, cands []search.Candidate) {
	b.compiles.Prefetch(k, dt, cands)
}

// Spare hands candidates worth a build only while the pool is idle to
// the compile pool (device.Sparer).
func (b *Backend) Spare(k *kernels.Kernel, dt kernels.DType, cands []search.Candidate) {
	b.compiles.Spare(k, dt, cands)
}

// BuildSeconds is the time the compile pool has spent in the OpenCL compiler and the
// compile cache since the backend opened (device.BuildTimer).
func (b *Backend) BuildSeconds() float64 { return b.compiles.BuildSeconds() }

// Ready reports whether a candidate's compile has ended (device.Readier).
func (b *Backend) Ready(k *kernels.Kernel, dt kernels.DType, c search.Candidate) bool {
	return b.compiles.Ready(k, dt, c)
}
