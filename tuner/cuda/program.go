package cuda

import (
	"fmt"

	"github.com/kerntune/kerntune/internal/cudadrv"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner"
	"github.com/kerntune/kerntune/tuner/internal/compilepool"
)

// instance is a problem resident on the GPU: input copies and the output.
type instance struct {
	b      *Backend
	p      *kernels.Problem
	inputs [][]cudadrv.DevPtr // [copy][operand]
	out    cudadrv.DevPtr
	outLen int
	words  int // 32-bit words of the output buffer, for poisoning
	next   int
}

// Load uploads copies of the inputs and allocates the output (rounded up to
// whole 32-bit words so it can be poisoned with NaN words).
func (b *Backend) Load(p *kernels.Problem, copies int) (tuner.Instance, error) {
	copies = max(copies, 1)
	inst := &instance{b: b, p: p, outLen: p.Kernel.OutLen(p.Case.Shape)}
	inst.words = (inst.outLen*p.DType.Size() + 3) / 4
	host := make([][]byte, len(p.Inputs))
	for i, x := range p.Inputs {
		host[i] = toDevice(p.DType, x)
	}
	err := b.ctx.Do(func(t *cudadrv.Thread) error {
		for c := 0; c < copies; c++ {
			ptrs := make([]cudadrv.DevPtr, len(host))
			for i, h := range host {
				d, err := t.Alloc(int64(max(len(h), 4)))
				if err != nil {
					return err
				}
				ptrs[i] = d
				if err := t.CopyHtoD(d, h); err != nil {
					return err
				}
			}
			inst.inputs = append(inst.inputs, ptrs)
		}
		out, err := t.Alloc(int64(4 * inst.words))
		if err != nil {
			return err
		}
		inst.out = out
		return nil
	})
	if err != nil {
		inst.Close()
		return nil, fmt.Errorf("loading %s on %s: %w", p.Case, b.info.Key, err)
	}
	return inst, nil
}

// Close frees the device buffers.
func (in *instance) Close() error {
	return in.b.ctx.Do(func(t *cudadrv.Thread) error {
		var first error
		for _, ptrs := range in.inputs {
			for _, d := range ptrs {
				if err := t.Free(d); err != nil && first == nil {
					first = err
				}
			}
		}
		in.inputs = nil
		if in.out != 0 {
			if err := t.Free(in.out); err != nil && first == nil {
				first = err
			}
			in.out = 0
		}
		return first
	})
}

// poison fills the output with NaN so that unwritten elements fail verification.
func (in *instance) poison(t *cudadrv.Thread) error {
	pattern := uint32(0x7fc00000)
	if in.p.DType == kernels.F16 {
		pattern = 0x7e007e00
	}
	return t.MemsetD32(in.out, pattern, in.words)
}

func (in *instance) readOutput(t *cudadrv.Thread) ([]float32, error) {
	buf := make([]byte, 4*in.words)
	if err := t.CopyDtoH(buf, in.out); err != nil {
		return nil, err
	}
	return fromDevice(in.p.DType, buf[:in.outLen*in.p.DType.Size()]), nil
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
	in, ok := ti.(*instance)
	if !ok {
		return nil, fmt.Errorf("cuda backend: foreign instance %T", ti)
	}
	var secs []float64
	err := pr.b.ctx.Do(func(t *cudadrv.Thread) error {
		if err := pr.b.spin(t, n); err != nil {
			return err
		}
		ms, err := t.TimeLaunches(n, func(t *cudadrv.Thread, _ int) error {
			c := in.next % len(in.inputs)
			in.next++
			return pr.launch(t, in, c)
		})
		if err != nil {
			return err
		}
		secs = make([]float64, len(ms))
		for i, m := range ms {
			secs[i] = m / 1e3
		}
		return nil
	})
	return secs, err
}

// Output poisons the output, runs once on the first copy and reads the result.
func (pr *program) Output(ti tuner.Instance) ([]float32, error) {
	in, ok := ti.(*instance)
	if !ok {
		return nil, fmt.Errorf("cuda backend: foreign instance %T", ti)
	}
	var out []float32
	err := pr.b.ctx.Do(func(t *cudadrv.Thread) error {
		if err := in.poison(t); err != nil {
			return err
		}
		if err := pr.launch(t, in, 0); err != nil {
			return err
		}
		if err := t.Sync(); err != nil {
			return err
		}
		var err error
		out, err = in.readOutput(t)
		return err
	})
	return out, err
}

func jobKey(k *kernels.Kernel, dt kernels.DType, c search.Candidate) string {
	return k.Name + "|" + string(dt) + "|" + c.Key()
}

// compile finds or creates the compile job of a candidate: NVRTC on the
// CUDA source generated from the family's body.
func (b *Backend) compile(body *gpu.Body, k *kernels.Kernel, dt kernels.DType, c search.Candidate) *compilepool.Job[[]byte] {
	c = c.Clone()
	return b.compiles.Job(jobKey(k, dt, c), func() ([]byte, error) {
		src, err := body.SourceFor(gpu.CUDA, dt, c)
		if err != nil {
			return nil, err
		}
		img, log, err := b.lib.Compile(src, body.Func+".cu", b.nvrtcOptions())
		if err != nil {
			return nil, fmt.Errorf("NVRTC: %w\n%s", err, log)
		}
		return img, nil
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
	jobs := make([]*compilepool.Job[[]byte], len(cands))
	for i, c := range cands {
		jobs[i] = b.compile(body, k, dt, c)
	}
	b.compiles.Enqueue(jobs...)
}

// Build waits for a candidate's compile, loads the module and checks that
// the kernel can run with the candidate's threads (registers permitting).
func (b *Backend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (tuner.Program, error) {
	body, err := gpu.Get(k.Name)
	if err != nil {
		return nil, err
	}
	image, err := b.compile(body, k, dt, c).Wait()
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
		g := body.Geometry(in.p.Case.Shape, c)
		args := make([]any, 0, len(body.Args))
		scalars := body.Scalars(in.p.Case, in.p.Eps)
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
		return t.Launch(fn, [3]uint32{uint32(g.Grid[0]), uint32(g.Grid[1]), 1}, [3]uint32{uint32(g.Threads), 1, 1}, uint32(dyn), args...)
	}
	return pr, nil
}
