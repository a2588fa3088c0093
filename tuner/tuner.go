package tuner

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/search"
)

// Task is one entry to tune: a family, a dtype and the cases that stand for
// a shape class (Class set) or one exact shape (Class empty).
type Task struct {
	Kernel *kernels.Kernel
	DType  kernels.DType
	Cases  []kernels.Case
	Class  string
	// Incumbent, when set, are the parameters of the entry already in the
	// params file; the final timing times them interleaved with the winner
	// (Result.Retiming), so that the caller can keep the better of the two.
	Incumbent map[string]int
}

// Key is the task's entry key in the file: dtype/class or dtype/shape.
func (t Task) Key() string {
	if t.Class != "" {
		return params.EntryKey(string(t.DType), t.Class)
	}
	return params.EntryKey(string(t.DType), params.ShapeString(t.Cases[0].Shape))
}

// ClassTasks groups a family's workload by shape class, in class order.
func ClassTasks(k *kernels.Kernel, dt kernels.DType) ([]Task, error) {
	byClass := map[string][]kernels.Case{}
	for _, c := range k.Workload {
		cl, err := k.Classify(c.Shape)
		if err != nil {
			return nil, fmt.Errorf("%s workload: %w", k.Name, err)
		}
		byClass[cl] = append(byClass[cl], c)
	}
	var tasks []Task
	for _, cl := range k.Classes {
		if cs := byClass[cl.Name]; len(cs) > 0 {
			tasks = append(tasks, Task{Kernel: k, DType: dt, Cases: cs, Class: cl.Name})
		}
	}
	return tasks, nil
}

// Cost estimates a task's work (flops plus bytes), to order tasks cheapest
// first so that time they leave unused flows to the expensive ones.
func (t Task) Cost() float64 {
	var c float64
	for _, cs := range t.Cases {
		c += t.Kernel.Flops(cs) + t.Kernel.Bytes(cs, t.DType)
	}
	return c
}

// Config controls a tuning run.
type Config struct {
	// Strategy names the search strategy (search.Names; default
	// search.DefaultStrategy); the alias "default" is recorded as "warm".
	Strategy string
	Seed     uint64
	// Samples per candidate for fixed-sample strategies (exhaustive, random).
	Samples int
	// FinalSamples is how often the winner, the default and the baseline are
	// timed, interleaved, for the recorded numbers; fewer (at least
	// MinFinalSamples) when that would take more than a fifth of the budget.
	FinalSamples    int
	MinFinalSamples int
	// Warmup is the minimum time each candidate runs before it is timed.
	Warmup time.Duration
	// MaxBufferBytes caps the memory of one problem's rotated input copies.
	MaxBufferBytes int64
	Log            io.Writer
	Verbose        bool
	// DataSeed seeds the random inputs (each problem gets a seed derived
	// from it, recorded in Problem.Seed); 0 draws a fresh one per task.
	DataSeed uint64
	// MaxCV is the coefficient of variation of a batch of samples above which
	// the batch is taken once more (the quieter one is kept); default 0.25.
	MaxCV float64
	// Journal, when set, receives every measurement and replays those of an
	// earlier run instead of measuring them again (kerntune tune --resume).
	Journal Journal
	// MaxEvals caps the distinct candidates measured per entry (0: no cap);
	// the wall-time budget applies as well.
	MaxEvals int
	// WarmStart are candidates measured right after the default, e.g. the
	// entries of the same family for other classes or sibling devices; the
	// warm strategy climbs from them.
	WarmStart []map[string]int
	// Progress, when set, is called after every candidate measurement, on
	// the tuning goroutine; it must return quickly.
	Progress func(Event)
	// Finalists is how many candidates the final timing re-times
	// interleaved, with the default, before the winner is chosen; they are
	// the fastest of the search's best screenFactor × Finalists in a short
	// interleaved screen. 0 means DefaultFinalists; 1 times the search's
	// winner alone (retime.go).
	Finalists int
	// DriftEvery is how many new candidates are measured between two
	// re-timings of the anchor (the default) by the drift guard; 0 means
	// DefaultDriftEvery, a negative value turns the guard off (drift.go).
	DriftEvery int
	// DriftCooldown is how long the drift guard idles after the anchor
	// drifted before it times the anchor again; 0 does not wait.
	DriftCooldown time.Duration
	// Where narrows the search space (tune --where MMA=1): candidates
	// failing any of these are not valid in this run.
	Where []search.Constraint
	// VerifyFull compares every output with the reference element by
	// element, however large (tune --verify-full), instead of checking a
	// large one's finiteness in full and its values on a sample of rows
	// (sampled.go).
	VerifyFull bool
	// Batch is how many candidates the search proposes at once
	// (search.Driver.Batch); 0 picks BatchFor the backend.
	Batch int
}

func (c Config) withDefaults() Config {
	if c.Strategy == "" {
		c.Strategy = search.DefaultStrategy
	}
	c.Strategy = search.Canonical(c.Strategy)
	if c.Samples <= 0 {
		c.Samples = 10
	}
	if c.FinalSamples <= 0 {
		c.FinalSamples = 30
	}
	if c.MinFinalSamples <= 0 || c.MinFinalSamples > c.FinalSamples {
		c.MinFinalSamples = min(5, c.FinalSamples)
	}
	if c.Warmup <= 0 {
		c.Warmup = 10 * time.Millisecond
	}
	if c.MaxBufferBytes <= 0 {
		c.MaxBufferBytes = 1 << 30
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.MaxCV <= 0 {
		c.MaxCV = 0.25
	}
	if c.Finalists <= 0 {
		c.Finalists = DefaultFinalists
	}
	if c.DriftEvery == 0 {
		c.DriftEvery = DefaultDriftEvery
	}
	return c
}

// Measurement is what the tuner learned about one candidate.
type Measurement struct {
	Key      string
	MedianUS float64 // median of the per-sample totals over the task's cases
	Samples  int
	Err      string // why the candidate failed, or ""
	// Status is StatusOK, StatusFailed, StatusCrashed or StatusTimeout.
	Status     string
	Remeasured int // batches taken again because they were too noisy
	// Seconds spent building, verifying and sampling it during the search.
	CompileS, VerifyS, MeasureS float64
}

// Result is a tuned entry and the trace of every candidate tried.
type Result struct {
	Task    Task
	Entry   *params.Entry
	Trace   []Measurement
	Stopped string // why tuning stopped before the strategy finished, or ""
	// DataSeed is the seed the task's inputs were drawn from.
	DataSeed uint64
	// Retiming is the same-run timing of Task.Incumbent against the winner,
	// or nil when the task has no incumbent.
	Retiming *Retiming
	// Needed estimates the budget this entry needs to measure one candidate
	// beyond the default (build, verification, samples and the final
	// timing), from what the default took; 0 when unknown.
	Needed time.Duration
	// Finalists are the candidates the final timing re-timed interleaved,
	// the search's winner first, with their search and final medians.
	Finalists []Finalist
	// Time is where the entry's wall time went (also in Entry.Time).
	Time *params.TuneTime
}

// Retiming is the incumbent (the parameters of the entry already in the
// file) timed in the same interleaved rounds as the winner, on the same
// inputs, in the same run: the only fair comparison of two runs' winners.
type Retiming struct {
	Params map[string]int
	// Same is set when the winner has the incumbent's parameters.
	Same bool
	// Invalid is set when the incumbent cannot run here: it breaks the
	// space's constraints, or fails to build or to verify. Err says why.
	Invalid bool
	// Err says why the incumbent was not timed (then Samples is empty).
	Err string
	// Samples and WinnerSamples are the per-sample totals over the task's
	// shapes, in seconds, of the incumbent and the winner from the same rounds.
	Samples, WinnerSamples []float64
}

// Tuner runs tasks on a backend.
type Tuner struct {
	b   Backend
	cfg Config
	// sleep idles for the drift guard's cool-down; tests replace it with
	// a virtual clock.
	sleep func(ctx context.Context, d time.Duration)
}

// New creates a tuner.
func New(b Backend, cfg Config) *Tuner {
	return &Tuner{b: b, cfg: cfg.withDefaults(), sleep: sleepCtx}
}

// loaded is a problem on the device with its physical floor.
type loaded struct {
	p     *kernels.Problem
	inst  Instance
	floor float64 // seconds
}

// candidate is the tuner's state for one candidate.
type candidate struct {
	prog    Program
	err     error
	samples []float64
	status  string // set for a failure replayed from the journal
	remeas  int
	cand    search.Candidate
	spent   split // time of its build, verification and samples, by phase
}

// run is the state of one task.
type run struct {
	t        *Tuner
	task     Task
	problems []*loaded // timed
	odd      []*loaded // verified only
	cands    map[string]*candidate
	deadline time.Time
	// hard is how far the run may go past deadline while it has measured
	// fewer than min candidates (Allotment.Max).
	hard     time.Time
	min      int
	ctx      context.Context
	dataSeed uint64
	nloaded  uint64
	replay   map[string][]Record // journaled measurements by candidate key
	plan     *Record
	valid    int    // size of the valid space, for progress events
	clk      *clock // where the entry's time goes; nil outside Tuner.Run
	// drift is the drift guard (drift.go); nil when off, as in Bench.
	drift        *driftGuard
	replayAnchor []Record // journaled anchor timings, in order
	// reserve is what the final timing is expected to take: the drift
	// guard measures nothing again that would eat into it.
	reserve time.Duration
}

// Run tunes one task within budget. It returns an error only when nothing
// could be recorded (no valid candidate, setup failure); candidate failures
// are recorded in the trace.
func (t *Tuner) Run(ctx context.Context, task Task, budget time.Duration) (*Result, error) {
	return t.RunPlanned(ctx, task, Allotment{Share: budget, Max: budget})
}

// RunPlanned tunes one task within its allotment: the search plans with
// a.Share, and goes on up to a.Max while fewer than the entry's minimum of
// candidates (the default and MinBeyondDefault more, or the whole space)
// are measured.
func (t *Tuner) RunPlanned(ctx context.Context, task Task, a Allotment) (*Result, error) {
	start := time.Now()
	budget := a.Share
	r := &run{t: t, task: task, cands: map[string]*candidate{}, deadline: start.Add(budget), hard: start.Add(max(a.Max, budget)), ctx: ctx, clk: newClock(start)}
	defer r.close()

	space, err := t.Space(task)
	if err != nil {
		return nil, err
	}
	valid := space.Enumerate()
	if len(valid) == 0 {
		return nil, fmt.Errorf("%s %s: no valid candidate in a space of %d on %s", task.Kernel.Name, task.Key(), space.Size(), t.b.Info().Key)
	}
	r.valid = len(valid)
	r.min = t.minMeasured(len(valid))
	if err := r.load(); err != nil {
		return nil, err
	}
	r.startJournal()

	ps, _ := task.Kernel.Space(t.b.Info().Backend)
	def := search.Candidate(ps.Defaults())
	defErr := space.Check(def)

	// Programs in the final timing: the finalists, default, baseline, and
	// the incumbent; the screen of screenFactor × Finalists candidates, a
	// fifth of the samples each, costs about 0.6 × Finalists more.
	finalProgs := float64(t.cfg.Finalists)*(1+screenFactor/5.0) + 2
	if task.Incumbent != nil {
		finalProgs++
	}
	// The search (search.Driver): the default first (it calibrates the
	// budget and is the reference point of the entry; a tuned entry is never
	// slower than no tuning), then the warm starts and the strategy.
	perSample, finalSamples := 0.0, t.cfg.FinalSamples
	d := search.Driver{
		Strategy: t.cfg.Strategy,
		Options:  search.Options{Seed: t.cfg.Seed, Samples: t.cfg.Samples, RaceMax: raceMaxFor(a.Sample)},
		Pool:     valid,
		MaxEvals: t.cfg.MaxEvals,
		Measure:  r.answer,
		Budget: func(s float64) float64 {
			perSample = s
			// The drift guard re-times what calibrated: the default, or
			// the first candidate that could be measured.
			// Its first timing of the anchor is measuring, not the search's own time.
			t0 := time.Now()
			r.drift = newDriftGuard(r, r.calibratedOn(def, defErr == nil, valid), budget)
			r.clk.answered(t0)
			if s > 0 {
				fit := int(budget.Seconds() / 5 / (finalProgs * s))
				finalSamples = max(t.cfg.MinFinalSamples, min(finalSamples, fit))
			}
			// What is left after the final timing (screen, finalists,
			// default, baseline and the incumbent × finalSamples).
			return time.Until(r.deadline).Seconds() - finalProgs*float64(finalSamples)*s
		},
		Plan: func(size int) int {
			finalSamples, size = r.journalPlan(finalSamples, size)
			r.reserve = time.Duration(perSample * finalProgs * float64(finalSamples) * float64(time.Second))
			return size
		},
		Stop: func(req search.Request) string {
			return r.stopReason(perSample * (float64(req.Samples) + finalProgs*float64(finalSamples)))
		},
	}
	if defErr == nil {
		d.Default = def
	}
	for _, w := range t.cfg.WarmStart {
		d.Warm = append(d.Warm, search.Candidate(w))
	}
	if pf, ok := t.b.(Prefetcher); ok && compilesAhead(t.b) {
		d.Prefetch = func(fresh []search.Candidate) { pf.Prefetch(task.Kernel, task.DType, fresh) }
		if rd, ok := t.b.(Readier); ok {
			d.Ready = func(c search.Candidate) bool { return rd.Ready(task.Kernel, task.DType, c) }
		}
	}
	d.Batch = t.cfg.Batch
	if d.Batch <= 0 {
		d.Batch = BatchFor(t.b)
	}
	searchStart := time.Now()
	r.clk.setup = searchStart.Sub(start)
	out, err := d.Run()
	r.clk.search = time.Since(searchStart) - r.clk.answering
	if err != nil {
		return nil, err
	}
	// What was measured since the anchor's last check is checked too.
	r.drift.final()
	best, stopped := out.Best, out.Stopped
	ok := best != nil
	// What this entry needs by its own measurements (as the plan estimates
	// it from a probe): its setup, the default's build, and its samples.
	needed := time.Duration(0)
	if perSample > 0 {
		needed = t.Need(Estimate{Valid: len(valid), Setup: r.clk.setup, Build: r.anchorBuild(), Sample: time.Duration(perSample * float64(time.Second))})
	}
	if !ok {
		tt := r.clk.result()
		r.journalTime(tt)
		return &Result{Task: task, Trace: r.trace(), Stopped: stopped, DataSeed: r.dataSeed, Needed: needed, Time: tt},
			fmt.Errorf("%s %s: every measured candidate failed (%s)", task.Kernel.Name, task.Key(), r.firstError())
	}

	// Final numbers: the search's best few, default, baseline and incumbent
	// timed interleaved, same sample count; the winner is chosen on them.
	fin, err := r.finalTiming(space, best, def, defErr == nil, finalSamples)
	if err != nil {
		return nil, err
	}
	entry := &params.Entry{Strategy: t.cfg.Strategy, Evaluations: len(r.cands), Stopped: stopped}
	fin.record(entry, ps.Defaults(), len(r.problems))
	for _, c := range task.Cases {
		entry.Shapes = append(entry.Shapes, append([]int(nil), c.Shape...))
	}
	entry.Candidates.Valid = len(valid)
	for _, c := range r.cands {
		switch {
		case c.err != nil:
			entry.Candidates.Failed++
		case len(c.samples) > 0:
			entry.Candidates.Measured++
		}
	}
	entry.Roofline = r.roofline(fin.chosen.cand, stats.Median(fin.chosen.tot))
	entry.Drift = r.drift.summary()
	entry.Time = r.clk.result()
	r.journalTime(entry.Time)
	return &Result{Task: task, Entry: entry, Trace: r.trace(), Stopped: stopped, DataSeed: r.dataSeed,
		Retiming: fin.retime, Needed: needed, Finalists: fin.finalistsOf(), Time: entry.Time}, nil
}

// calibratedOn is the candidate the search driver calibrated on (the
// default, else the first of the pool's first five measured without error),
// or nil when none was.
func (r *run) calibratedOn(def search.Candidate, defOK bool, pool []search.Candidate) search.Candidate {
	ok := func(c search.Candidate) bool {
		cd := r.cands[c.Key()]
		return cd != nil && cd.err == nil && len(cd.samples) > 0
	}
	if defOK && ok(def) {
		return def
	}
	for _, c := range pool[:min(len(pool), 5)] {
		if ok(c) {
			return c
		}
	}
	return nil
}

// incumbent prepares the final timing of the incumbent: it returns the
// program to time in the interleaved rounds, and whether the caller owns
// (must close) it. The program is nil when the incumbent is one of the
// contest (the finalists and the default, whose samples it shares) or
// cannot run here (recorded in rt). An incumbent the search did not measure
// is built apart from the run's candidates, so that it does not count as
// measured.
func (r *run) incumbent(space *search.Space, rt *Retiming, contest []*timed) (Program, bool) {
	inc := search.Candidate(rt.Params)
	for _, c := range contest {
		if inc.Key() == c.cand.Key() {
			return nil, false
		}
	}
	if err := space.Check(inc); err != nil {
		rt.Invalid, rt.Err = true, "not valid here: "+err.Error()
		return nil, false
	}
	if cd := r.cands[inc.Key()]; cd != nil {
		if cd.err == nil && cd.prog != nil {
			if prog, err := r.program(inc); err == nil {
				return prog, false
			}
		}
		if cd.err != nil {
			rt.Invalid, rt.Err = true, cd.err.Error()
			return nil, false
		}
	}
	tb := time.Now()
	prog, err := r.t.b.Build(r.task.Kernel, r.task.DType, inc)
	r.clk.add(phaseCompile, tb)
	if err != nil {
		rt.Invalid, rt.Err = true, "build: "+err.Error()
		return nil, false
	}
	if err := r.ready(prog, inc); err != nil {
		prog.Close()
		rt.Invalid, rt.Err = true, err.Error()
		return nil, false
	}
	return prog, true
}

// finishRetiming fills in the winner's samples and, where the incumbent
// shared a program with the search's winner or the default (others, with
// their samples), the incumbent's.
func finishRetiming(rt *Retiming, best search.Candidate, bestTot []float64, others []search.Candidate, othersTot [][]float64) {
	rt.WinnerSamples = bestTot
	key := search.Candidate(rt.Params).Key()
	if key == best.Key() {
		rt.Same, rt.Samples, rt.Err = true, bestTot, ""
		return
	}
	for i, o := range others {
		if key == o.Key() && len(othersTot[i]) > 0 {
			rt.Samples, rt.Err = othersTot[i], ""
			return
		}
	}
	if rt.Err == "" && len(rt.Samples) == 0 {
		rt.Err = "not timed"
	}
}

// Space is the task's search space: the family's parameters on this
// backend, its own constraints checked on every case, and the device's limits.
func (t *Tuner) Space(task Task) (*search.Space, error) {
	info := t.b.Info()
	ps, ok := task.Kernel.Space(info.Backend)
	if !ok {
		return nil, fmt.Errorf("%s has no parameter space for the %s backend", task.Kernel.Name, info.Backend)
	}
	sp := &search.Space{}
	for _, p := range ps.Params {
		sp.Params = append(sp.Params, search.Param{Name: p.Name, Values: p.Values})
	}
	if ps.Check != nil {
		// Constraints that hold for every shape apply even with no case.
		sp.Constraints = append(sp.Constraints, search.Constraint{
			Name:  task.Kernel.Name + " parameters",
			Check: func(cand search.Candidate) error { return ps.Check(nil, cand) },
		})
		for _, c := range task.Cases {
			shape := c.Shape
			sp.Constraints = append(sp.Constraints, search.Constraint{
				Name:  "valid for " + params.ShapeString(shape),
				Check: func(cand search.Candidate) error { return ps.Check(shape, cand) },
			})
		}
	}
	sp.Constraints = append(sp.Constraints, info.Limits.Constraints(task.Kernel, task.DType)...)
	sp.Constraints = append(sp.Constraints, t.cfg.Where...)
	return sp, nil
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func (r *run) stopReason(nextCost float64) string {
	if err := r.ctx.Err(); err != nil {
		return "interrupted"
	}
	end := time.Now().Add(time.Duration(nextCost * float64(time.Second)))
	if !end.After(r.deadline) {
		return ""
	}
	// Past the share: short of the entry's minimum, the run's slack is
	// there for it (counted only here, not before every request).
	if end.After(r.hard) || r.measured() >= r.min {
		return "budget spent"
	}
	return ""
}

// measured is how many distinct candidates have samples.
func (r *run) measured() int {
	n := 0
	for _, c := range r.cands {
		if c.err == nil && len(c.samples) > 0 {
			n++
		}
	}
	return n
}

// anchorBuild is the build time of the candidate the search calibrated on
// (the default, or the first measured), for Result.Needed.
func (r *run) anchorBuild() time.Duration {
	if r.drift != nil {
		if cd := r.cands[r.drift.anchor.Key()]; cd != nil {
			return time.Duration(cd.spent.seconds(phaseCompile) * float64(time.Second))
		}
	}
	return 0
}

func (r *run) load() error {
	for _, c := range r.task.Kernel.Odd {
		if err := r.loadOne(c, false); err != nil {
			return err
		}
	}
	for _, c := range r.task.Cases {
		if err := r.loadOne(c, true); err != nil {
			return err
		}
	}
	// The float64 references now, as part of the setup, rather than in
	// the first verification, whose time they would swell.
	for _, l := range append(append([]*loaded{}, r.odd...), r.problems...) {
		l.p.Reference()
	}
	return nil
}

// loadOne draws a case's inputs and loads them; timed cases of memory-bound
// families get enough input copies to stream past the last-level cache.
func (r *run) loadOne(c kernels.Case, timed bool) error {
	info := r.t.b.Info()
	if r.dataSeed == 0 {
		r.dataSeed = r.t.cfg.DataSeed
		for r.dataSeed == 0 {
			r.dataSeed = rand.Uint64()
		}
	}
	// Each problem has its own seed so a worker process can regenerate it.
	r.nloaded++
	p, err := kernels.NewSeededProblem(r.task.Kernel, r.task.DType, c, r.dataSeed^(r.nloaded*0x9e3779b97f4a7c15))
	if err != nil {
		return err
	}
	copies := 1
	if timed && r.task.Kernel.MemoryBound && info.LLCBytes > 0 {
		in := int64(p.Bytes()) - int64(r.task.Kernel.OutLen(c.Shape)*r.task.DType.Size())
		if in > 0 {
			copies = int(min(64, max(1, (2*info.LLCBytes+in-1)/in), max(1, r.t.cfg.MaxBufferBytes/in)))
		}
	}
	inst, err := r.t.b.Load(p, copies)
	if err != nil {
		return fmt.Errorf("loading %s %s on %s: %w", r.task.Kernel.Name, c, info.Key, err)
	}
	floor := math.Max(p.Flops()/info.PeakFlops, p.Bytes()/info.PeakBandwidth)
	l := &loaded{p: p, inst: inst, floor: floor}
	if timed {
		r.problems = append(r.problems, l)
	} else {
		r.odd = append(r.odd, l)
	}
	return nil
}

func (r *run) close() {
	for _, c := range r.cands {
		if c.prog != nil {
			c.prog.Close()
		}
	}
	for _, l := range append(r.odd, r.problems...) {
		l.inst.Close()
	}
}

// verify runs prog on every problem (odd shapes first) and compares with
// the reference (outputs larger than kernels.FullVerifyMax on a sample of
// rows, verifyOn). Odd shapes for which the family's constraints reject
// cand are skipped (cand is nil for a baseline, which takes every shape).
func (r *run) verify(prog Program, cand search.Candidate) error {
	defer r.clk.add(phaseVerify, time.Now())
	ps, _ := r.task.Kernel.Space(r.t.b.Info().Backend)
	checked := 0
	for i, l := range append(append([]*loaded{}, r.odd...), r.problems...) {
		if i < len(r.odd) && cand != nil && ps != nil && ps.Check != nil && ps.Check(l.p.Case.Shape, cand) != nil {
			continue
		}
		if err := r.verifyOn(prog, l, cand); err != nil {
			return err
		}
		checked++
	}
	if checked == 0 {
		// A candidate no verification shape accepts must not pass unverified.
		return fmt.Errorf("no verification shape satisfies its constraints, so it was not verified")
	}
	return nil
}

// built returns c's state, building and verifying it on first use.
func (r *run) built(c search.Candidate) *candidate {
	key := c.Key()
	cd := r.cands[key]
	if cd == nil {
		cd = &candidate{cand: c}
		r.cands[key] = cd
	}
	if cd.prog == nil && cd.err == nil {
		tb := time.Now()
		prog, err := r.t.b.Build(r.task.Kernel, r.task.DType, c)
		r.clk.add(phaseCompile, tb)
		if err != nil {
			cd.err = fmt.Errorf("build: %w", err)
		} else {
			cd.prog = prog
			cd.err = r.ready(prog, c)
		}
		if cd.err != nil && r.t.cfg.Verbose {
			fmt.Fprintf(r.t.cfg.Log, "  %s %s: %v\n", key, StatusOf(cd.err), cd.err)
		}
	}
	return cd
}

// measureLive builds and verifies c on first use, then takes n more samples; it
// returns the new per-sample totals over the task's cases.
func (r *run) measureLive(c search.Candidate, n int) ([]float64, error) {
	key := c.Key()
	prog, err := r.program(c)
	if err != nil {
		return nil, err
	}
	cd := r.cands[key]
	tot, _, err := r.sample(prog, n)
	if err == nil && n >= 3 && cv(tot) > r.t.cfg.MaxCV {
		// A noisy batch (another process, a clock change) is taken again;
		// the quieter of the two is kept and the re-measurement recorded.
		again, _, err2 := r.sample(cd.prog, n)
		cd.remeas++
		first, kept := cv(tot), "first"
		if err2 == nil && cv(again) < first {
			tot, kept = again, "second"
		}
		if r.t.cfg.Verbose {
			// The spread that called for the second batch, the second's,
			// and which was kept: the kept one's alone says nothing.
			second := fmt.Sprintf("%.0f%%", 100*cv(again))
			if err2 != nil {
				second = "failed (" + err2.Error() + ")"
			}
			fmt.Fprintf(r.t.cfg.Log, "  %s: samples varied by %.0f%% (limit %.0f%%); measured again: %s; kept the %s batch\n",
				key, 100*first, 100*r.t.cfg.MaxCV, second, kept)
		}
	}
	if err != nil {
		cd.err = err
		return nil, err
	}
	cd.samples = append(cd.samples, tot...)
	return tot, nil
}

// ready verifies a program and warms it up: the one path by which a
// search candidate, the incumbent and the baseline become ready to time, so
// that none of them is timed colder than the others (a GPU's clocks, its
// caches and a pipeline's first use all favour whoever ran just before).
// cand is nil for the baseline.
func (r *run) ready(prog Program, cand search.Candidate) error {
	if err := r.verify(prog, cand); err != nil {
		return fmt.Errorf("verification: %w", err)
	}
	if err := r.warmup(prog); err != nil {
		return fmt.Errorf("warmup: %w", err)
	}
	return nil
}

func (r *run) warmup(prog Program) error {
	start := time.Now()
	for time.Since(start) < r.t.cfg.Warmup {
		for _, l := range r.problems {
			t0 := time.Now()
			_, err := prog.Run(l.inst, 1)
			r.clk.onDevice(phaseMeasure, t0)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// sample times n runs on every problem; totals[j] sums run j over problems.
// A median below a problem's physical floor, or a non-positive one, is a
// measurement error.
func (r *run) sample(prog Program, n int) (totals []float64, perProblem [][]float64, err error) {
	totals = make([]float64, n)
	perProblem = make([][]float64, n)
	for j := range perProblem {
		perProblem[j] = make([]float64, len(r.problems))
	}
	for i, l := range r.problems {
		t0 := time.Now()
		ts, err := prog.Run(l.inst, n)
		r.clk.onDevice(phaseMeasure, t0)
		if err != nil {
			return nil, nil, fmt.Errorf("timing %s: %w", l.p.Case, err)
		}
		if len(ts) != n {
			return nil, nil, fmt.Errorf("timing %s: backend returned %d samples, want %d", l.p.Case, len(ts), n)
		}
		med := stats.Median(ts)
		if !(med > 0) {
			return nil, nil, fmt.Errorf("measurement error on %s: median %g s is not positive", l.p.Case, med)
		}
		if med < l.floor {
			return nil, nil, fmt.Errorf("measurement error on %s: median %.3g µs is below the physical floor %.3g µs", l.p.Case, med*1e6, l.floor*1e6)
		}
		for j, t := range ts {
			totals[j] += t
			perProblem[j][i] = t
		}
	}
	return totals, perProblem, nil
}

// roofline relates cand's median (seconds, summed over the task's
// problems) to the device's floors.
func (r *run) roofline(cand search.Candidate, median float64) *params.RooflineSummary {
	info := r.t.b.Info()
	var flops, bytes float64
	for _, l := range r.problems {
		flops += l.p.Flops()
		bytes += l.p.Bytes()
	}
	rs := &params.RooflineSummary{Flops: flops, Bytes: bytes}
	if median <= 0 {
		return rs
	}
	rs.GFLOPS = round3(flops / median / 1e9)
	rs.GBPS = round3(bytes / median / 1e9)
	// Memory-bound families are held to the measured copy bandwidth, the
	// others to the arithmetic peak of the units cand runs on, where the
	// backend knows it.
	var floor float64
	if bw := info.Facts["bandwidth_gbps"] * 1e9; r.task.Kernel.MemoryBound && bw > 0 {
		floor, rs.BoundByData = bytes/bw, true
	} else if peak := PeakGFLOPS(info, r.task.DType, cand) * 1e9; peak > 0 {
		floor = flops / peak
	}
	if floor > 0 {
		rs.PctOfFloor = round3(100 * floor / median)
	}
	return rs
}

func (r *run) trace() []Measurement {
	var out []Measurement
	for key, c := range r.cands {
		m := Measurement{Key: key, Samples: len(c.samples), Status: StatusOK, Remeasured: c.remeas,
			CompileS: c.spent.seconds(phaseCompile), VerifyS: c.spent.seconds(phaseVerify), MeasureS: c.spent.seconds(phaseMeasure)}
		if c.err != nil {
			m.Err = c.err.Error()
			m.Status = c.statusOf()
		} else if len(c.samples) > 0 {
			m.MedianUS = stats.Median(c.samples) * 1e6
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// firstError summarises the failures: each distinct reason with its count.
func (r *run) firstError() string {
	counts := map[string]int{}
	for _, c := range r.cands {
		if c.err != nil {
			counts[c.err.Error()]++
		}
	}
	if len(counts) == 0 {
		return "no candidate was measured"
	}
	var parts []string
	for msg, n := range counts {
		parts = append(parts, fmt.Sprintf("%d× %s", n, msg))
	}
	sort.Strings(parts)
	if len(parts) > 4 {
		parts = append(parts[:4], fmt.Sprintf("and %d more reasons", len(parts)-4))
	}
	return strings.Join(parts, "; ")
}
