package cuda

import (
	"errors"
	"fmt"

	"github.com/kerntune/kerntune/internal/cudadrv"
	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/internal/gpuhost"
)

// instance is a problem resident on the GPU: input copies and the output.
type instance = gpuhost.Instance[cudadrv.DevPtr]

// buffers gives the buffer operations on the context's thread.
type buffers struct{ b *Backend }

func (d buffers) Memory(f func(gpuhost.Memory[cudadrv.DevPtr]) error) error {
	return d.b.ctx.Do(func(t *cudadrv.Thread) error { return f(threadMemory{t}) })
}

// threadMemory is the buffer operations of the context's thread.
type threadMemory struct{ t *cudadrv.Thread }

func (m threadMemory) Alloc(n int) (cudadrv.DevPtr, error)        { return m.t.Alloc(int64(n)) }
func (m threadMemory) Write(dst cudadrv.DevPtr, src []byte) error { return m.t.CopyHtoD(dst, src) }
func (m threadMemory) Read(dst []byte, src cudadrv.DevPtr) error  { return m.t.CopyDtoH(dst, src) }
func (m threadMemory) Free(p cudadrv.DevPtr) error                { return m.t.Free(p) }
func (m threadMemory) Fill(dst cudadrv.DevPtr, word uint32, words int) error {
	return m.t.MemsetD32(dst, word, words)
}

// Load uploads copies of the inputs and allocates the output.
func (b *Backend) Load(p *kernels.Problem, copies int) (device.Instance, error) {
	return gpuhost.Load[cudadrv.DevPtr](buffers{b}, p, copies, b.info.Key)
}

// launcher is what a program does for one run on one input copy.
type launcher func(t *cudadrv.Thread, in *instance, copy int) error

// program is a runnable kernel: a compiled candidate or a cuBLAS call.
type program struct {
	b      *Backend
	launch launcher
	unload func() error
	// perSample is the launches in one timed sample, per instance, revised
	// after every timing (context thread; see gpuhost.RevisedRuns).
	perSample map[*instance]int
	// graphs are the captured samples, per instance (context thread);
	// ungraphable is set once a capture failed, and the program's samples
	// are then launched back to back instead.
	graphs      map[*instance]*cudadrv.Graph
	ungraphable bool
}

// Timing: a sample is a group of back-to-back launches between two events,
// long enough that the events' own cost is noise, and no longer than an
// application's run of one kernel between other work.
const (
	targetGroupSeconds  = 100e-6 // a timed group lasts at least this long on the GPU
	maxGroup            = 64     // … but holds no more launches than this
	calibrationLaunches = 3      // single launches that first estimate a kernel's time
)

func (pr *program) Close() error {
	var errs []error
	if len(pr.graphs) > 0 {
		errs = append(errs, pr.b.ctx.Do(func(t *cudadrv.Thread) error {
			var errs []error
			for in, g := range pr.graphs {
				errs = append(errs, t.DestroyGraph(g))
				delete(pr.graphs, in)
			}
			return errors.Join(errs...)
		}))
	}
	if pr.unload != nil {
		errs = append(errs, pr.unload())
	}
	return errors.Join(errs...)
}

// Run takes n samples, each one replay of a CUDA graph of D launches of
// the kernel on rotated input copies between two events, divided by D: the
// launches run back to back as in an application that replays a captured
// decode step, and a sample carries the kernel's own time and the GPU's
// gap between kernels, not a launch's host cost or an event's. D is chosen
// per instance so that a sample lasts about targetGroupSeconds (a few
// single launches time the kernel first), and is at least the instance's
// number of input copies. Where the driver has no CUDA
// graphs, or a launch cannot be captured, the D launches are issued back
// to back between the events instead (timeGroups).
func (pr *program) Run(ti device.Instance, n int) ([]float64, error) {
	in, err := gpuhost.Of(ti, buffers{pr.b}, "cuda")
	if err != nil {
		return nil, err
	}
	var secs []float64
	err = pr.b.ctx.Do(func(t *cudadrv.Thread) error {
		if pr.perSample == nil {
			pr.perSample, pr.graphs = map[*instance]int{}, map[*instance]*cudadrv.Graph{}
		}
		if err := pr.pruneGraphs(t); err != nil {
			return err
		}
		d, ok := pr.perSample[in]
		if !ok {
			cal, err := pr.timeGroups(t, in, calibrationLaunches, 1)
			if err != nil {
				return err
			}
			d = gpuhost.RunsPerSample(stats.Median(cal), targetGroupSeconds, maxGroup)
		}
		// A graph replays the copies it captured: a sample covers them all,
		// so that weights stream from memory as the rotation means them to.
		d = max(d, len(in.Inputs))
		ms, err := pr.timeGraph(t, in, n, d)
		if err != nil {
			return err
		}
		if ms == nil {
			if secs, err = pr.timeGroups(t, in, n, d); err != nil {
				return err
			}
		} else {
			secs = seconds(ms)
		}
		if n > 0 {
			pr.perSample[in] = gpuhost.RevisedRuns(d, stats.Median(secs), targetGroupSeconds, maxGroup)
		}
		return nil
	})
	return secs, err
}

// timeGraph times n replays of the instance's graph of per launches,
// capturing it first (again when per changed); nil times, no error, when
// the launches cannot be captured.
func (pr *program) timeGraph(t *cudadrv.Thread, in *instance, n, per int) ([]float64, error) {
	if pr.ungraphable || !t.HasGraphs() {
		return nil, nil
	}
	g := pr.graphs[in]
	if g != nil && g.Per != per {
		if err := t.DestroyGraph(g); err != nil {
			return nil, err
		}
		delete(pr.graphs, in)
		g = nil
	}
	if g == nil {
		var err error
		g, err = t.CaptureGraph(per, func(t *cudadrv.Thread, _ int) error { return pr.launch(t, in, in.Next()) })
		if err != nil {
			pr.ungraphable = true
			return nil, nil
		}
		pr.graphs[in] = g
	}
	return t.TimeReplays(g, n)
}

// pruneGraphs releases the graphs and counts of closed instances: a
// program (the baseline, a finalist) outlives the instances it ran on.
func (pr *program) pruneGraphs(t *cudadrv.Thread) error {
	gpuhost.PruneClosed(pr.perSample)
	var errs []error
	for in, g := range pr.graphs {
		if in.Closed() {
			errs = append(errs, t.DestroyGraph(g))
			delete(pr.graphs, in)
		}
	}
	return errors.Join(errs...)
}

// timeGroups times n groups of per launches behind a spin, in seconds per
// launch. The spin is sized from the host's pace of launching, measured
// when the backend opened; a host slowed down since (compiles on its
// cores) may not queue every launch before the spin ends, and the GPU then
// waits for it between launches. Such samples are taken again behind a
// longer spin.
func (pr *program) timeGroups(t *cudadrv.Thread, in *instance, n, per int) ([]float64, error) {
	for try := 0; ; try++ {
		if err := pr.b.spin(t, n*per); err != nil {
			return nil, err
		}
		ms, ahead, err := t.TimeGroupsAhead(n, per, func(t *cudadrv.Thread, _ int) error {
			return pr.launch(t, in, in.Next())
		})
		if err != nil {
			return nil, err
		}
		if ahead || try == maxSpinTries-1 || !pr.b.longerSpin() {
			return seconds(ms), nil
		}
	}
}

// maxSpinTries bounds how often Run takes its samples again behind a
// longer spin.
const maxSpinTries = 4

// seconds converts CUDA event times (milliseconds) to seconds.
func seconds(ms []float64) []float64 {
	secs := make([]float64, len(ms))
	for i, m := range ms {
		secs[i] = m / 1e3
	}
	return secs
}

// Output poisons the output, runs once on the first copy and reads the result.
func (pr *program) Output(ti device.Instance) ([]float32, error) {
	in, err := gpuhost.Of(ti, buffers{pr.b}, "cuda")
	if err != nil {
		return nil, err
	}
	var out []float32
	err = pr.b.ctx.Do(func(t *cudadrv.Thread) error {
		if err := in.Poison(threadMemory{t}); err != nil {
			return err
		}
		if err := pr.launch(t, in, 0); err != nil {
			return err
		}
		if err := t.Sync(); err != nil {
			return err
		}
		var err error
		out, err = in.ReadOutput(threadMemory{t})
		return err
	})
	return out, err
}

// nvrtc compiles a candidate: NVRTC on the CUDA source generated from the
// family's body.
func (b *Backend) nvrtc(body *gpu.Body, dt kernels.DType, c search.Candidate) ([]byte, error) {
	src, err := body.SourceFor(gpu.CUDA, dt, c)
	if err != nil {
		return nil, err
	}
	img, err := b.compile(src, body.Func+".cu")
	if err != nil {
		return nil, fmt.Errorf("NVRTC: %w", err)
	}
	return img, nil
}

// Build waits for a candidate's compile, loads the module and checks that
// the kernel can run with the candidate's threads (registers permitting).
func (b *Backend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (device.Program, error) {
	body, err := b.compiles.Body(k.Name)
	if err != nil {
		return nil, err
	}
	image, err := b.compiles.For(body, k, dt, c).Wait()
	if err != nil {
		return nil, err
	}
	return b.program(body, dt, c, image)
}

// program loads a compiled candidate and checks that the kernel can run
// with the candidate's threads (registers permitting).
func (b *Backend) program(body *gpu.Body, dt kernels.DType, c search.Candidate, image []byte) (device.Program, error) {
	threads := body.Threads(c)
	dyn := body.Dynamic(gpu.CUDA, dt, c)
	var mod *cudadrv.Module
	var fn *cudadrv.Function
	err := b.ctx.Do(func(t *cudadrv.Thread) error {
		m, err := t.LoadModule(image)
		if err != nil {
			return err
		}
		f, err := t.Function(m, body.Func)
		if err != nil {
			t.UnloadModule(m)
			return err
		}
		maxT, err := t.FuncAttr(f, cudadrv.FuncMaxThreadsPerBlock)
		if err != nil {
			t.UnloadModule(m)
			return err
		}
		if maxT < threads {
			t.UnloadModule(m)
			regs, _ := t.FuncAttr(f, cudadrv.FuncNumRegs)
			return fmt.Errorf("needs %d threads per block but its %d registers per thread allow %d", threads, regs, maxT)
		}
		if dyn > 48<<10 {
			// Dynamic shared memory past 48 KiB must be asked for per kernel.
			if err := t.SetMaxDynamicShared(f, dyn); err != nil {
				t.UnloadModule(m)
				return fmt.Errorf("%d bytes of dynamic shared memory: %w", dyn, err)
			}
		}
		mod, fn = m, f
		return nil
	})
	if err != nil {
		return nil, err
	}
	pr := &program{b: b}
	pr.unload = func() error { return b.ctx.Do(func(t *cudadrv.Thread) error { return t.UnloadModule(mod) }) }
	pr.launch = func(t *cudadrv.Thread, in *instance, copy int) error {
		g := body.Geometry(in.Problem.Case.Shape, c)
		return t.Launch(fn, [3]uint32{uint32(g.Grid[0]), uint32(g.Grid[1]), 1}, [3]uint32{uint32(g.Threads), 1, 1}, uint32(dyn), in.Args(body, copy)...)
	}
	return pr, nil
}

// Prefetch hands candidates the tuner will ask for soon to NVRTC on the
// compile pool, while the GPU times others.
func (b *Backend) Prefetch(k *kernels.Kernel, dt kernels.DType, cands []search.Candidate) {
	b.compiles.Prefetch(k, dt, cands)
}

// Spare hands candidates worth a build only while the pool is idle to
// the compile pool (device.Sparer).
func (b *Backend) Spare(k *kernels.Kernel, dt kernels.DType, cands []search.Candidate) {
	b.compiles.Spare(k, dt, cands)
}

// BuildSeconds is the time the compile pool has spent in NVRTC and the
// compile cache since the backend opened (device.BuildTimer).
func (b *Backend) BuildSeconds() float64 { return b.compiles.BuildSeconds() }

// Ready reports whether a candidate's compile has ended (device.Readier).
func (b *Backend) Ready(k *kernels.Kernel, dt kernels.DType, c search.Candidate) bool {
	return b.compiles.Ready(k, dt, c)
}
