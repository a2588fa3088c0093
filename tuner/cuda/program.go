package cuda

import (
	"fmt"

	"github.com/kerntune/kerntune/internal/cudadrv"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner"
	"github.com/kerntune/kerntune/tuner/internal/gpuhost"
)

// instance is a problem resident on the GPU: input copies and the output.
type instance = gpuhost.Instance[cudadrv.DevPtr]

// device gives the buffer operations on the context's thread.
type device struct{ b *Backend }

func (d device) Memory(f func(gpuhost.Memory[cudadrv.DevPtr]) error) error {
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
func (b *Backend) Load(p *kernels.Problem, copies int) (tuner.Instance, error) {
	return gpuhost.Load[cudadrv.DevPtr](device{b}, p, copies, b.info.Key)
}

// launcher is what a program does for one run on one input copy.
type launcher func(t *cudadrv.Thread, in *instance, copy int) error

// program is a runnable kernel: a compiled candidate or a cuBLAS call.
type program struct {
	b      *Backend
	launch launcher
	unload func() error
}

func (pr *program) Close() error {
	if pr.unload != nil {
		return pr.unload()
	}
	return nil
}

// Run times n launches, one event between each pair, rotating input
// copies. A spin kernel holds the GPU until all n are queued, so the GPU runs
// them back to back and each interval is GPU time, not the host's pace.
func (pr *program) Run(ti tuner.Instance, n int) ([]float64, error) {
	in, err := gpuhost.Of(ti, device{pr.b}, "cuda")
	if err != nil {
		return nil, err
	}
	var secs []float64
	err = pr.b.ctx.Do(func(t *cudadrv.Thread) error {
		// The spin is sized from the host's pace of launching, measured
		// when the backend opened; a host slowed down since (compiles on
		// its cores) may not queue every launch before the spin ends, and
		// the GPU then waits for it between launches. Such samples are
		// taken again behind a longer spin.
		for try := 0; ; try++ {
			if err := pr.b.spin(t, n); err != nil {
				return err
			}
			ms, ahead, err := t.TimeLaunchesAhead(n, func(t *cudadrv.Thread, _ int) error {
				return pr.launch(t, in, in.Next())
			})
			if err != nil {
				return err
			}
			secs = seconds(ms)
			if ahead || try == maxSpinTries-1 || !pr.b.longerSpin() {
				return nil
			}
		}
	})
	return secs, err
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
func (pr *program) Output(ti tuner.Instance) ([]float32, error) {
	in, err := gpuhost.Of(ti, device{pr.b}, "cuda")
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
func (b *Backend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (tuner.Program, error) {
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
func (b *Backend) program(body *gpu.Body, dt kernels.DType, c search.Candidate, image []byte) (tuner.Program, error) {
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

// Ready reports whether a candidate's compile has ended (tuner.Readier).
func (b *Backend) Ready(k *kernels.Kernel, dt kernels.DType, c search.Candidate) bool {
	return b.compiles.Ready(k, dt, c)
}
