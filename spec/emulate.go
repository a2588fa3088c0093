package spec

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kerntune/kerntune/internal/cover"
	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/internal/mslemu"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/search"
)

// EmulateAll asks Emulate for every valid candidate (EmulateOptions.Candidates).
const EmulateAll = -1

// emuBatch bounds the kernels compiled into one emulation program: clang
// compiles a batch in one process, so a smaller batch only adds the
// stand-in header's parse, while a larger one makes a single failing
// kernel cost a longer bisection.
const emuBatch = 24

// emuTunedElements is the default bound on the elements of a tuned shape
// (inputs and outputs together) that the emulation runs besides the
// verification shapes: the CPU runs every GPU thread as a fiber.
const emuTunedElements = 1 << 12

// appleLimits are what every Apple GPU that MLX runs on allows a
// threadgroup: 1024 threads and 32 KiB of threadgroup memory.
var appleLimits = gpu.Limits{API: gpu.Metal, MaxThreads: 1024, MaxShared: 32 << 10, SIMDWidth: 32, Features: []gpu.Feature{gpu.SIMDMatrix}}

// EmulateOptions say what Emulate runs.
type EmulateOptions struct {
	// Clang is the C++20 clang the emulation compiles with; empty:
	// gpu.FindClang ($KERNTUNE_CLANG, clang-14, clang).
	Clang string
	// DTypes are the element types to run (nil: the spec's).
	DTypes []kernels.DType
	// Candidates is how many candidates per dtype: 0, a covering sample
	// (every pair of parameter values some valid candidate takes, and the
	// default); EmulateAll, every valid candidate; N, N of them (the
	// covering sample's first N, or it and others spread over the rest).
	Candidates int
	// Where filters the valid candidates before sampling (all must hold).
	Where []func(search.Candidate) bool
	// Seed draws the inputs; 0: a fresh seed, recorded in the report.
	Seed uint64
	// TunedElements: tuned shapes whose buffers hold at most this many
	// elements in all run too; 0: emuTunedElements, negative: none.
	TunedElements int
	// Dir is where programs are built; empty: a temporary directory.
	Dir string
}

// EmulateReport is what Emulate found.
type EmulateReport struct {
	File    string         `json:"file"`
	Kernel  string         `json:"kernel"`
	Clang   string         `json:"clang"`
	Seed    uint64         `json:"seed"`
	DTypes  []EmulateDType `json:"dtypes"`
	Results []EmulateRun   `json:"runs"`
	Elapsed time.Duration  `json:"-"`
	Seconds float64        `json:"seconds"`
}

// EmulateDType summarises one element type: candidates count as passed
// when every shape they ran on passed.
type EmulateDType struct {
	DType kernels.DType `json:"dtype"`
	// Valid are the valid candidates (after Where); Unverifiable of them
	// no verification shape accepts, so none of those runs.
	Valid        int `json:"valid"`
	Unverifiable int `json:"unverifiable,omitempty"`
	Candidates   int `json:"candidates"`
	Shapes       int `json:"shapes"`
	Passed       int `json:"passed"`
	Failed       int `json:"failed"`
}

// EmulateRun is one candidate on one shape in one dtype.
type EmulateRun struct {
	DType     kernels.DType    `json:"dtype"`
	Candidate search.Candidate `json:"candidate"`
	Case      kernels.Case     `json:"-"`
	Shape     string           `json:"shape"`
	Err       error            `json:"-"`
	Error     string           `json:"error,omitempty"`

	spec *Compiled // whose kernel runs (its body may be another's copy)
}

// Failures are the runs that failed, in order.
func (r *EmulateReport) Failures() []EmulateRun {
	var out []EmulateRun
	for _, x := range r.Results {
		if x.Err != nil {
			out = append(out, x)
		}
	}
	return out
}

// Failed counts the candidates (per dtype) that failed on some shape.
func (r *EmulateReport) Failed() int {
	n := 0
	for _, d := range r.DTypes {
		n += d.Failed
	}
	return n
}

// ErrNoClang is returned (wrapped) by Emulate when no clang is found.
var ErrNoClang = errors.New("the MSL emulation needs a C++20 clang: set KERNTUNE_CLANG, or install clang-14 (apt-get install clang-14)")

// Emulate runs candidates of an mlx spec's kernel on the CPU through the
// MSL emulation (internal/mslemu), as MLX would launch them (a grid in
// threads, threadgroups of min(threadgroup, grid)), on the verification
// shapes (views too where ensure_row_contiguous is false) and the small
// tuned shapes, with fresh random inputs and outputs poisoned with NaN
// (or filled with init_value), and verifies each against the reference.
// It proves results, not timings, and not what Apple's compiler accepts.
func (c *Compiled) Emulate(ctx context.Context, opts EmulateOptions) (*EmulateReport, error) {
	start := time.Now()
	if c.Body == nil || c.Body.MLX == nil {
		return nil, fmt.Errorf("%s: the emulation runs mlx kernels (source.mlx) only", c.File)
	}
	cc := opts.Clang
	if cc == "" {
		var err error
		if cc, err = gpu.FindClang(); err != nil {
			return nil, fmt.Errorf("%s: %w", c.File, ErrNoClang)
		}
	}
	dts := opts.DTypes
	if len(dts) == 0 {
		dts = c.DTypes()
	}
	for _, dt := range dts {
		if !slices.Contains(c.DTypes(), dt) {
			return nil, fmt.Errorf("%s: dtype %s: the spec's dtypes are %v", c.File, dt, c.Spec.DTypes)
		}
	}
	seed := opts.Seed
	if seed == 0 {
		seed = rand.Uint64() | 1
	}
	rep := &EmulateReport{File: c.File, Kernel: c.Kernel.Name, Clang: cc, Seed: seed}
	shapes := c.emuShapes(opts.TunedElements)
	ps, _ := c.Kernel.Space("gpu")
	var runs []EmulateRun
	for _, dt := range dts {
		cands, valid, unverifiable := c.emuCandidates(dt, opts)
		d := EmulateDType{DType: dt, Valid: valid, Unverifiable: unverifiable, Candidates: len(cands), Shapes: len(shapes)}
		rep.DTypes = append(rep.DTypes, d)
		for _, cand := range cands {
			for _, cs := range shapes {
				if ps.Check != nil && ps.Check(cs.Shape, cand) != nil {
					continue // the candidate's constraints refuse this shape
				}
				runs = append(runs, EmulateRun{DType: dt, Candidate: cand, Case: cs, Shape: cs.String(), spec: c})
			}
		}
	}
	dir := opts.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "kerntune-emu-")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.File, err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	if err := emulateRuns(ctx, cc, dir, seed, runs); err != nil {
		return nil, err
	}
	rep.Results = runs
	for i := range rep.DTypes {
		d := &rep.DTypes[i]
		failed := map[string]bool{}
		ran := map[string]bool{}
		for _, r := range runs {
			if r.DType != d.DType {
				continue
			}
			ran[r.Candidate.Key()] = true
			if r.Err != nil {
				failed[r.Candidate.Key()] = true
			}
		}
		d.Failed = len(failed)
		d.Passed = len(ran) - len(failed)
	}
	rep.Elapsed = time.Since(start)
	rep.Seconds = rep.Elapsed.Seconds()
	return rep, nil
}

// emuShapes are the verification shapes and the tuned shapes of at most
// limit elements in all (0: emuTunedElements; negative: none) that the
// kernel can run (CheckShape).
func (c *Compiled) emuShapes(limit int) []kernels.Case {
	out := slices.Clone(c.Kernel.Odd)
	if limit == 0 {
		limit = emuTunedElements
	}
	for _, cs := range c.Kernel.Workload {
		if limit < 0 || c.CheckShape(cs.Shape) != nil {
			continue
		}
		n := c.Kernel.OutLen(cs.Shape)
		for _, op := range c.Kernel.Inputs(cs) {
			n += op.Len
		}
		if n <= limit && !slices.ContainsFunc(out, func(o kernels.Case) bool { return o.String() == cs.String() }) {
			out = append(out, cs)
		}
	}
	return out
}

// emuCandidates picks the candidates to run in dt: the valid ones on an
// Apple GPU that opts.Where keeps and some verification shape accepts,
// sampled as opts.Candidates says. It returns the number valid (after
// Where) and how many of those no verification shape accepts.
func (c *Compiled) emuCandidates(dt kernels.DType, opts EmulateOptions) (picked []search.Candidate, valid, unverifiable int) {
	sp := c.Space()
	sp.Constraints = append(sp.Constraints, c.Body.Constraints(appleLimits, dt)...)
	ps, _ := c.Kernel.Space("gpu")
	var cands []search.Candidate
next:
	for _, cand := range sp.Enumerate() {
		for _, w := range opts.Where {
			if !w(cand) {
				continue next
			}
		}
		valid++
		if !c.Kernel.Verifiable(ps, cand) {
			unverifiable++
			continue
		}
		cands = append(cands, cand)
	}
	if opts.Candidates == EmulateAll || len(cands) == 0 {
		return cands, valid, unverifiable
	}
	cov := cover.Sample(sp.Params, cands, 1, cover.Pairs).Sample
	if opts.Candidates == 0 {
		def := search.Candidate(ps.Defaults())
		if i := slices.IndexFunc(cands, func(x search.Candidate) bool { return x.Key() == def.Key() }); i >= 0 &&
			!slices.ContainsFunc(cov, func(x search.Candidate) bool { return x.Key() == def.Key() }) {
			cov = append(cov, cands[i])
		}
		return cov, valid, unverifiable
	}
	n := min(opts.Candidates, len(cands))
	if n <= len(cov) {
		return cov[:n], valid, unverifiable
	}
	var rest []search.Candidate
	for _, x := range cands {
		if !slices.ContainsFunc(cov, func(y search.Candidate) bool { return y.Key() == x.Key() }) {
			rest = append(rest, x)
		}
	}
	more := n - len(cov)
	for i := range more {
		cov = append(cov, rest[i*len(rest)/more])
	}
	return cov, valid, unverifiable
}

// emuSource is the MSL the emulation compiles for candidate cand in dt on
// a shape, and its kernel function: MLX's templated kernel instantiated as
// a plain one (gpu.ForSyntaxCheck), with the template's arguments.
func emuSource(b *gpu.Body, dt kernels.DType, cand search.Candidate, shape []int) (src, fn string, err error) {
	text, err := b.SourceForShape(gpu.Metal, dt, cand, shape)
	if err != nil {
		return "", "", err
	}
	fn, err = b.FuncNameForShape(dt, cand, shape)
	if err != nil {
		return "", "", err
	}
	return gpu.ForSyntaxCheck(text), fn, nil
}

// emuJob is one run being prepared: its problem, kernel, launch and the
// buffers of its outputs.
type emuJob struct {
	run    *EmulateRun
	p      *kernels.Problem
	kernel int // index into the kernels of all jobs
	launch *mslemu.Launch
	outs   []int
}

// emulateRuns runs each of runs, setting its Err: a generated source that
// fails, a launch that fails (a deadlock, a write out of bounds, a crash,
// a source the emulation cannot compile) or an output off the reference.
// The kernels are compiled in batches of emuBatch; a batch that does not
// compile is split until the kernels that do not are found.
func emulateRuns(ctx context.Context, cc, dir string, seed uint64, runs []EmulateRun) error {
	var ks []mslemu.Kernel
	index := map[string]int{}
	var jobs []*emuJob
	for i := range runs {
		r := &runs[i]
		c := r.spec
		p, err := kernels.NewProblem(c.Kernel, r.DType, r.Case, rand.New(rand.NewPCG(seed, uint64(i))))
		if err != nil {
			r.Err = fmt.Errorf("inputs: %w", err)
			continue
		}
		src, fn, err := emuSource(c.Body, r.DType, r.Candidate, r.Case.Shape)
		if err != nil {
			r.Err = fmt.Errorf("generating the source: %w", err)
			continue
		}
		k, l, outs, err := emuBind(c.Body, p, r.Candidate)
		if err != nil {
			r.Err = err
			continue
		}
		key := c.File + "\x00" + fn + "\x00" + src
		ki, ok := index[key]
		if !ok {
			ki = len(ks)
			index[key] = ki
			k.Name = fmt.Sprintf("%s %s %s", c.Kernel.Name, r.DType, r.Candidate.Key())
			k.Source, k.Func = src, fn
			// MLX's bfloat helpers need __HAVE_BFLOAT__: the spec's version, else MLX's oldest.
			k.Version = cmp.Or(c.Body.Compile.LanguageVersion, mslcheck.DefaultVersion)
			ks = append(ks, k)
		}
		jobs = append(jobs, &emuJob{run: r, p: p, kernel: ki, launch: l, outs: outs})
	}
	for lo := 0; lo < len(ks); lo += emuBatch {
		hi := min(lo+emuBatch, len(ks))
		if err := emuRunBatch(ctx, cc, dir, ks, lo, hi, jobs); err != nil {
			return err
		}
	}
	for _, j := range jobs {
		if j.run.Err != nil {
			continue
		}
		var got []float32
		for n, op := range j.p.Kernel.OutOperands(j.p.Case) {
			got = append(got, op.Elem.In(j.p.DType).Decode(j.launch.Buffers[j.outs[n]], op.Len)...)
		}
		j.run.Err = j.p.VerifyFor(got, j.run.Candidate)
	}
	for i := range runs {
		if runs[i].Err != nil {
			runs[i].Error = runs[i].Err.Error()
		}
	}
	return nil
}

// emuRunBatch builds kernels ks[lo:hi] into one program and runs the jobs
// of those kernels. A batch of several kernels that does not compile is
// split in two; a single kernel that does not compile fails its jobs.
// Only a canceled ctx or a file system error stops it.
func emuRunBatch(ctx context.Context, cc, dir string, ks []mslemu.Kernel, lo, hi int, jobs []*emuJob) error {
	var mine []*emuJob
	for _, j := range jobs {
		if j.kernel >= lo && j.kernel < hi && j.run.Err == nil {
			mine = append(mine, j)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	prog, err := mslemu.Build(ctx, cc, dir, ks[lo:hi])
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if hi-lo > 1 {
			mid := (lo + hi) / 2
			if err := emuRunBatch(ctx, cc, dir, ks, lo, mid, jobs); err != nil {
				return err
			}
			return emuRunBatch(ctx, cc, dir, ks, mid, hi, jobs)
		}
		for _, j := range mine {
			j.run.Err = fmt.Errorf("the emulation cannot compile the source: %s\n%w", firstCompileError(err), err)
		}
		return nil
	}
	ls := make([]*mslemu.Launch, len(mine))
	for i, j := range mine {
		j.launch.Kernel = j.kernel - lo
		ls[i] = j.launch
	}
	// A launch that crashes the program fails alone; the rest run again.
	for len(ls) > 0 {
		res, err := prog.Run(ctx, ls)
		for i, r := range res {
			if r.Err != nil {
				mine[i].run.Err = r.Err
			}
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		at := len(res)
		if at >= len(ls) {
			return fmt.Errorf("%s: %w", mine[0].run.spec.File, err)
		}
		mine[at].run.Err = fmt.Errorf("the launch crashed the emulation (a read or write far outside a buffer?): %w", err)
		ls, mine = ls[at+1:], mine[at+1:]
	}
	return nil
}

// firstCompileError is clang's first error message in a failed build,
// without the temporary file's name, or "clang failed" when it has none.
func firstCompileError(err error) string {
	for _, line := range strings.Split(err.Error(), "\n") {
		if _, msg, ok := strings.Cut(line, "error: "); ok {
			return msg
		}
	}
	return "clang failed"
}

// emuBind binds one problem to the MLX signature: inputs, outputs
// (poisoned, or filled with the kernel's init value) and the constant
// arguments as buffers in the order of MLX's signature (a scalar input
// and an ndim by reference), then the attributes the body names, and
// MLX's launch (a grid in threads). It returns the buffers of the outputs.
func emuBind(b *gpu.Body, p *kernels.Problem, cand search.Candidate) (mslemu.Kernel, *mslemu.Launch, []int, error) {
	consts := b.Consts(p.Case)
	ops := p.Kernel.Inputs(p.Case)
	outs := p.Kernel.OutOperands(p.Case)
	var args []mslemu.Arg
	var bufs [][]byte
	var outBufs []int
	nIn, nOut, nConst := 0, 0, 0
	for _, bd := range b.MLX.Bindings() {
		i := len(bufs)
		switch bd.Kind {
		case gpu.In:
			if nIn >= len(ops) {
				return mslemu.Kernel{}, nil, nil, fmt.Errorf("binding: input %s has no operand on %s", bd.Name, p.Case)
			}
			bufs = append(bufs, ops[nIn].Elem.In(p.DType).Encode(p.Inputs[nIn]))
			if b.MLX.Inputs[bd.Input].Scalar {
				args = append(args, mslemu.Ref(i))
			} else {
				args = append(args, mslemu.Buf(i))
			}
			nIn++
		case gpu.Out:
			if nOut >= len(outs) {
				return mslemu.Kernel{}, nil, nil, fmt.Errorf("binding: output %s has no operand on %s", bd.Name, p.Case)
			}
			e := outs[nOut].Elem.In(p.DType)
			n := outs[nOut].Len
			var init []byte
			if v := p.Kernel.Init; v != nil {
				init = e.Fill(*v, n)
			} else {
				for len(init) < n*e.Size() {
					init = append(init, e.Poison()...)
				}
			}
			bufs = append(bufs, init)
			outBufs = append(outBufs, i)
			args = append(args, mslemu.Buf(i))
			nOut++
		case gpu.Bytes:
			if nConst >= len(consts) {
				return mslemu.Kernel{}, nil, nil, fmt.Errorf("binding: %s has no contents on %s", bd.Name, p.Case)
			}
			bufs = append(bufs, consts[nConst])
			nConst++
			if bd.Part == gpu.PartNDim {
				args = append(args, mslemu.Ref(i))
			} else {
				args = append(args, mslemu.Buf(i))
			}
		}
	}
	for _, a := range b.MLX.Attributes() {
		if !slices.Contains(mslemu.Attributes(), a) {
			return mslemu.Kernel{}, nil, nil, fmt.Errorf("the emulation does not provide the attribute %s", a)
		}
		args = append(args, mslemu.Attr(a))
	}
	l := b.Geometry(p.Case.Shape, cand)
	if n := l.Group[0] * l.Group[1] * l.Group[2]; n > appleLimits.MaxThreads {
		return mslemu.Kernel{}, nil, nil, fmt.Errorf("launch: %d threads per threadgroup on %s (at most %d)", n, p.Case, appleLimits.MaxThreads)
	}
	return mslemu.Kernel{Args: args}, &mslemu.Launch{Threads: l.ThreadGrid, Group: l.Group, Buffers: bufs}, outBufs, nil
}
