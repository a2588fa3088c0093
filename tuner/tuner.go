package tuner

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"sync"
	"time"

	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
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
		return paramfile.EntryKey(string(t.DType), t.Class)
	}
	return paramfile.EntryKey(string(t.DType), families.ShapeString(t.Cases[0].Shape))
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
	// Facts are the device facts the run's floors read; nil: the
	// backend's (a session passes the params file's recorded bandwidth).
	Facts map[string]float64
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
	// MinBeyondDefault is how many candidates beyond the default each entry
	// measures at least, which planning gives time for (0:
	// DefaultMinBeyondDefault; a negative value: none).
	MinBeyondDefault int
	// ProbeSamples are the samples of the default a plan's probe takes
	// after a warm-up (0: probeSamples); a quick run takes one.
	ProbeSamples int
	// CheapFinal, when above 1, lets the final timing of an entry whose
	// samples are cheap take up to CheapFinal times FinalSamples, while
	// they fit a twentieth of its share (a quick run's few final samples
	// are otherwise decided by a passing load on the machine).
	CheapFinal int
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
	switch {
	case c.MinBeyondDefault == 0:
		c.MinBeyondDefault = DefaultMinBeyondDefault
	case c.MinBeyondDefault < 0:
		c.MinBeyondDefault = 0
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
	Entry   *paramfile.Entry
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
	Time *paramfile.TuneTime
	// BuildS is the time the backend's compile pool spent compiling (and
	// loading from the compile cache) while the entry ran, summed over its
	// goroutines, the next entry's compiles ahead included; 0 where the
	// backend does not say (device.BuildTimer).
	BuildS float64
	// Ahead is how many candidates were measured ahead of their turn while
	// the one due next compiled, AheadAsked how many of those the search
	// asked for later, Spared how many of those measured ahead were spares
	// the compile pool built when idle (search.Outcome).
	Ahead, AheadAsked, Spared int
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
	b   device.Backend
	cfg Config
	// spaces keeps the candidates the run's entries share (Space).
	spaces *spaceCache
	// sleep idles for the drift guard's cool-down; tests replace it with
	// a virtual clock.
	sleep func(ctx context.Context, d time.Duration)
}

// New creates a tuner.
func New(b device.Backend, cfg Config) *Tuner {
	return &Tuner{b: b, cfg: cfg.withDefaults(), sleep: sleepCtx, spaces: &spaceCache{}}
}

// loaded is a problem on the device with its physical floor.
type loaded struct {
	p     *kernels.Problem
	inst  device.Instance
	floor float64 // seconds
}

// candidate is the tuner's state for one candidate.
type candidate struct {
	prog    device.Program
	err     error
	samples []float64
	status  string // set for a failure replayed from the journal
	remeas  int
	cand    search.Candidate
	spent   split // time of its build, verification and samples, by phase
}

// run is the state of one task that Tuner.Run tunes: its measurement,
// built of layers (measure.go), and its budget.
type run struct {
	t    *Tuner
	task Task
	ctx  context.Context
	clk  *clock // where the entry's time goes
	m    *live  // the problems, the candidates and their measurement
	// journal is the journal's part of the measurement, nil without a
	// journal; meas the measurement the search asks.
	journal *journaled
	meas    *measurement
	budget  budget
}

// Run tunes one task within budget. It returns an error only when nothing
// could be recorded (no valid candidate, setup failure); candidate failures
// are recorded in the trace.
func (t *Tuner) Run(ctx context.Context, task Task, budget time.Duration) (*Result, error) {
	return t.RunPlanned(ctx, task, Allotment{Share: budget, Max: budget})
}

// RunPlanned tunes one task within its allotment: the search plans with
// a.Share, and goes on up to a.Max while fewer than the entry's minimum of
// candidates (a.Min, else the default and Config.MinBeyondDefault more; at
// most the whole space) are measured.
func (t *Tuner) RunPlanned(ctx context.Context, task Task, a Allotment) (*Result, error) {
	start := time.Now()
	clk := newClock(start)
	clk.watchCache(t.b)
	r := &run{t: t, task: task, ctx: ctx, clk: clk, m: newLive(t, task, clk)}
	r.m.drawn = a.Drawn
	defer r.m.close()

	space, err := t.Space(task)
	if err != nil {
		return nil, err
	}
	valid := space.Enumerate()
	if len(valid) == 0 {
		return nil, fmt.Errorf("%s %s: no valid candidate in a space of %d on %s", task.Kernel.Name, task.Key(), space.Size(), t.b.Info().Key)
	}
	r.budget = newBudget(t, task, start, a, t.minOf(len(valid), a.Min), t.minOf(len(valid), 0))
	if err := r.m.load(); err != nil {
		return nil, err
	}
	// The measurement: the live measurer, the journal around it, progress
	// events, and the drift guard once the search calibrated.
	r.journal = newJournaled(ctx, t, r.m, r.m)
	r.meas = &measurement{live: r.m, journal: r.journal, progress: newProgress(t, r.m, len(valid))}

	// The search (search.Driver): the default first (it calibrates the
	// budget and is the reference point of the entry; a tuned entry is never
	// slower than no tuning), then the warm starts and the strategy.
	d, def, defErr := t.searchDriver(task, space, valid, raceMaxFor(a.Sample))
	d.Target = searchTarget{r: r, def: def, defOK: defErr == nil, pool: valid}
	if pf, ok := t.b.(device.Prefetcher); ok && compilesAhead(t.b) {
		rd, _ := t.b.(device.Readier)
		ct := compilingTarget{searchTarget: d.Target.(searchTarget), pf: pf, rd: rd}
		d.Target = ct
		if sp, ok := t.b.(device.Sparer); ok && rd != nil {
			d.Target = sparingTarget{compilingTarget: ct, sp: sp}
			d.SpareAfter = spareAfter
		}
	}
	searchStart := time.Now()
	r.clk.setup = searchStart.Sub(start)
	out, err := d.Run()
	r.clk.search = time.Since(searchStart) - r.clk.answering
	if err != nil {
		return nil, err
	}
	defer r.announce(a.Next)()
	// What was measured since the anchor's last check is checked too.
	r.meas.guard.final()
	best, stopped := out.Best, out.Stopped
	ok := best != nil
	// What this entry needs by its own measurements (as the plan estimates
	// it from a probe): its setup, the default's build, and its samples.
	needed := time.Duration(0)
	if perSample := r.budget.perSample; perSample > 0 {
		needed = t.Need(Estimate{Valid: len(valid), Setup: r.clk.setup, Build: r.meas.guard.anchorBuild(), Sample: time.Duration(perSample * float64(time.Second))})
	}
	if !ok {
		tt := r.clk.result()
		r.journal.note(Record{Kind: RecordTime, Time: tt})
		return &Result{Task: task, Trace: r.m.cands.trace(), Stopped: stopped, DataSeed: r.m.dataSeed, Needed: needed, Time: tt, BuildS: r.clk.buildSeconds(),
				Ahead: out.Ahead, AheadAsked: out.AheadAsked, Spared: out.Spared},
			fmt.Errorf("%s %s: every measured candidate failed (%s)", task.Kernel.Name, task.Key(), r.m.cands.firstError())
	}

	// Final numbers: the search's best few, default, baseline and incumbent
	// timed interleaved, same sample count; the winner is chosen on them.
	fin, err := r.finalTiming(space, best, def, defErr == nil, r.budget.finalSamples)
	if err != nil {
		return nil, err
	}
	entry := &paramfile.Entry{Strategy: t.cfg.Strategy, Evaluations: len(r.m.cands), Stopped: stopped}
	fin.record(entry, maps.Clone(def), len(r.m.problems))
	for _, c := range task.Cases {
		entry.Shapes = append(entry.Shapes, append([]int(nil), c.Shape...))
	}
	entry.Candidates.Valid = len(valid)
	for _, c := range r.m.cands {
		switch {
		case c.err != nil:
			entry.Candidates.Failed++
		case len(c.samples) > 0:
			entry.Candidates.Measured++
		}
	}
	entry.Roofline = r.m.roofline(fin.chosen.cand, stats.Median(fin.chosen.tot))
	entry.Drift = r.meas.guard.summary()
	entry.Time = r.clk.result()
	r.journal.note(Record{Kind: RecordTime, Time: entry.Time})
	return &Result{Task: task, Entry: entry, Trace: r.m.cands.trace(), Stopped: stopped, DataSeed: r.m.dataSeed,
		Retiming: fin.retime, Needed: needed, Finalists: fin.finalistsOf(), Time: entry.Time, BuildS: r.clk.buildSeconds(),
		Ahead: out.Ahead, AheadAsked: out.AheadAsked, Spared: out.Spared}, nil
}

// firstAsksAhead caps the candidates of the next entry announced ahead:
// its calibration and first batch, a few seconds of compiles at most.
const firstAsksAhead = 24

// announce tells a backend that compiles ahead what the next entry will
// build first (search.Driver.FirstAsks on its space), so that the compile
// pool works on it while this entry's final timing keeps the device busy.
// A wrong guess costs only compiles. Enumerating the space and asking the
// strategy is host work: it runs on a goroutine of its own, while this
// entry's final timing does, and the entry waits for it (the returned
// func) before it ends.
func (r *run) announce(next *Task) (wait func()) {
	if next == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.t.announce(*next)
	}()
	return func() { <-done }
}

// announce tells a backend that compiles ahead what task will build first.
func (t *Tuner) announce(next Task) {
	pf, ok := t.b.(device.Prefetcher)
	if !ok || !compilesAhead(t.b) {
		return
	}
	space, err := t.Space(next)
	if err != nil {
		return
	}
	d, _, _ := t.searchDriver(next, space, space.Enumerate(), 0)
	if asks := d.FirstAsks(firstAsksAhead); len(asks) > 0 {
		pf.Prefetch(next.Kernel, next.DType, asks)
	}
}

// searchDriver is the search of task over valid (space's candidates) as
// Run drives it, without its Target: the strategy and its options, the
// default (when space admits it: defErr nil) and the warm starts, the
// batch. raceMax caps the race of slow candidates (0: no cap). The same
// driver names the first candidates of an entry announced ahead.
func (t *Tuner) searchDriver(task Task, space *search.Space, valid []search.Candidate, raceMax int) (d search.Driver, def search.Candidate, defErr error) {
	ps, _ := kernelSpace(task.Kernel, t.b.Info().Backend)
	def = search.Candidate(ps.Defaults())
	defErr = space.Check(def)
	d = search.Driver{
		Strategy: t.cfg.Strategy,
		Options:  search.Options{Seed: t.cfg.Seed, Samples: t.cfg.Samples, RaceMax: raceMax},
		Pool:     valid,
		MaxEvals: t.cfg.MaxEvals,
		Batch:    t.cfg.Batch,
	}
	if defErr == nil {
		d.Default = def
	}
	for _, w := range t.cfg.WarmStart {
		d.Warm = append(d.Warm, search.Candidate(w))
	}
	if d.Batch <= 0 {
		d.Batch = BatchFor(t.b)
	}
	return d, def, defErr
}

// searchTarget is the search's search.Target: a run measures through its
// task's measurement, budgets, plans and stops.
type searchTarget struct {
	r     *run
	def   search.Candidate // the default, which calibrates when defOK
	defOK bool
	pool  []search.Candidate
}

// Measure answers through the task's measurement, with the time spent
// answering kept apart from the search's own.
func (s searchTarget) Measure(c search.Candidate, n int) ([]float64, error) {
	defer s.r.clk.answered(time.Now())
	return s.r.meas.measure(c, n)
}

// Calibrated arms the drift guard on what calibrated and returns the
// seconds the search may spend.
func (s searchTarget) Calibrated(perSample float64) float64 {
	s.r.armGuard(s.def, s.defOK, s.pool)
	return s.r.budget.calibrate(perSample, s.r.t.cfg.MinFinalSamples, s.r.t.cfg.CheapFinal)
}

func (s searchTarget) Plan(size int) int { return s.r.plan(size) }

func (s searchTarget) Stop(req search.Request) string {
	return s.r.budget.stop(s.r.ctx, req.Samples, s.r.m.cands)
}

// compilingTarget is the search's target on a backend that compiles
// candidates ahead: it announces each batch to the compile pool and says
// which builds are done (every one, when the backend cannot tell).
type compilingTarget struct {
	searchTarget
	pf device.Prefetcher
	rd device.Readier // nil: the backend cannot tell
}

func (c compilingTarget) Prefetch(fresh []search.Candidate) {
	c.pf.Prefetch(c.r.task.Kernel, c.r.task.DType, fresh)
}

func (c compilingTarget) Ready(cand search.Candidate) bool {
	return c.rd == nil || c.rd.Ready(c.r.task.Kernel, c.r.task.DType, cand)
}

// spareAfter is how long a search waits for its strategy's next batch
// before the device measures spares meanwhile (search.Driver.SpareAfter):
// a spare takes a few milliseconds to verify and time, so a strategy
// quicker than that is waited for.
const spareAfter = 2 * time.Millisecond

// sparingTarget is a compilingTarget whose compile pool also builds, when
// idle, candidates the search has not asked for (search.Sparer).
type sparingTarget struct {
	compilingTarget
	sp device.Sparer
}

func (s sparingTarget) Spare(cands []search.Candidate) {
	s.sp.Spare(s.r.task.Kernel, s.r.task.DType, cands)
}

// armGuard starts the drift guard once the search calibrated: it re-times
// what calibrated, the default or the first candidate that could be
// measured. Its first timing of the anchor is measuring, not the search's
// own time.
func (r *run) armGuard(def search.Candidate, defOK bool, pool []search.Candidate) {
	t0 := time.Now()
	r.meas.guard = newDriftGuard(r.ctx, r.m, measureFunc(r.meas.again), r.journal, &r.budget, r.m.cands.calibratedOn(def, defOK, pool))
	r.clk.answered(t0)
}

// plan is the search's Plan function: the journal's plan (a resumed run's
// is the interrupted one's), which the budget reserves the final timing by.
func (r *run) plan(size int) int {
	finalSamples, size := r.journal.planned(r.budget.finalSamples, size, r.m.dataSeed)
	r.budget.plan(finalSamples)
	return size
}

// calibratedOn is the candidate the search driver calibrated on (the
// default, else the first of the pool's first five measured without error),
// or nil when none was.
func (cs candidates) calibratedOn(def search.Candidate, defOK bool, pool []search.Candidate) search.Candidate {
	ok := func(c search.Candidate) bool {
		cd := cs[c.Key()]
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

// kernelSpace is the family's parameter space on the backend, of the kind
// the backend's Traits name, so that a backend brings its space with its
// registration rather than by its name.
func kernelSpace(k *kernels.Kernel, backend string) (*families.Space, bool) {
	tr, err := device.TraitsOf(backend)
	if err != nil {
		return nil, false
	}
	ps, ok := k.Spaces[tr.Space]
	return ps, ok
}

// Space is the task's search space: the family's parameters on this
// backend, its own constraints checked on every case, and the device's limits.
func (t *Tuner) Space(task Task) (*search.Space, error) {
	info := t.b.Info()
	ps, ok := kernelSpace(task.Kernel, info.Backend)
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
				Name:     "valid for " + families.ShapeString(shape),
				Check:    func(cand search.Candidate) error { return ps.Check(shape, cand) },
				PerShape: true,
			})
		}
	}
	sp.Constraints = append(sp.Constraints, info.Limits.Constraints(task.Kernel, task.DType)...)
	for _, w := range t.cfg.Where {
		w.Narrow = true
		sp.Constraints = append(sp.Constraints, w)
	}
	sp.Within = t.spaces.within(task.Kernel.Name+"/"+string(task.DType), sp)
	return sp, nil
}

// spaceCache keeps, per family and dtype, the candidates that pass the
// constraints every entry of a run shares (the family's shape-free ones,
// the device's limits, --where), so that each entry's space filters those
// few thousand by its shapes rather than walking the whole product again
// (3 million combinations for gemm_av's matrix-unit space).
type spaceCache struct {
	mu sync.Mutex
	m  map[string][]search.Candidate
}

// within is the shared candidates of sp, enumerated on the first call for
// key: under sp's constraints but its per-shape and tune-only ones (verify
// lifts those), which sp.Enumerate then checks alone (search.Space.Within).
func (c *spaceCache) within(key string, sp *search.Space) []search.Candidate {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w, ok := c.m[key]; ok {
		return w
	}
	shared := &search.Space{Params: sp.Params}
	for _, con := range sp.Constraints {
		if !con.TuneOnly && !con.PerShape {
			shared.Constraints = append(shared.Constraints, con)
		}
	}
	w := shared.Enumerate()
	if w == nil {
		w = []search.Candidate{}
	}
	if c.m == nil {
		c.m = map[string][]search.Candidate{}
	}
	c.m[key] = w
	return w
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
