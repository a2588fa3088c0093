package tuner

import (
	"context"
	"fmt"
	"time"

	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/search"
)

// The time plan of a run with a wall-time budget. An even split of the
// budget starves the entries whose one candidate costs seconds (a large
// GEMM on a 2-core CPU) while small entries finish their whole space early.
// So a session first probes every entry (draws its inputs, computes the
// reference, times its default a few times), turns each probe into the time
// the entry needs to measure its default and Config.MinBeyondDefault candidates
// beyond it and finish (Need), refuses a budget below the sum (PlanError),
// and gives each entry its need's share of the time left (Allotment): time
// an entry leaves unused goes to the entries after it, and an entry short
// of its minimum may overrun its share into the run's slack, never into
// what the entries after it need.

// DefaultMinBeyondDefault is how many candidates beyond the default each entry of
// a run with a wall-time budget is planned to measure (or its whole space).
const DefaultMinBeyondDefault = 5

// A raced candidate (bo, racing, ils, anneal, warm) takes raceFirst
// samples, and one not shown slower than the incumbent doubles them up to
// its race's cap: 20 by default, and in a planned run no more than fit in
// raceSeconds (at least raceMin) when one sample takes long. A 300 ms GEMM
// on a CPU would otherwise spend 6 s on one candidate; the final timing,
// interleaved, decides among the best anyway.
const (
	raceFirst   = 3
	raceCap     = 20
	raceMin     = 5
	raceSeconds = time.Second
)

// raceMaxFor is the race's cap for candidates whose one sample takes
// sample (0: unknown, the strategies' default).
func raceMaxFor(sample time.Duration) int {
	if sample <= 0 {
		return 0
	}
	return min(raceCap, max(raceMin, int(raceSeconds/sample)))
}

// otherSlower is how much slower than the default the candidates a
// search tries run, on average, for the plan.
const otherSlower = 1.5

// probeSamples are taken of the default when probing an entry, unless
// Config.ProbeSamples says otherwise.
const probeSamples = 3

// Estimate is what an entry is expected to cost, from a probe of it (or
// from its own run, for Result.Needed).
type Estimate struct {
	// Valid is the size of the entry's valid space.
	Valid int
	// Setup is drawing the inputs, computing the float64 reference and
	// loading the inputs on the device.
	Setup time.Duration
	// Build is building the default (the candidate probed).
	Build time.Duration
	// Sample is what one sample of the default costs: a run of every
	// timed shape, on a GPU over every rotated copy of its inputs (the wall
	// time of a probe's sample, at least the median the backend reports).
	Sample time.Duration
	// Took is the probe's own wall time.
	Took time.Duration
	// NoIncumbent is set when the entry has no incumbent in the file, so
	// that its final timing times one program less (Need).
	NoIncumbent bool
	// Recorded is set when the estimate comes from the params file's
	// record of the entry's last run, not from a probe.
	Recorded bool
	// Min, when positive, is the candidates the entry is to measure
	// instead of the default and Config.MinBeyondDefault more (a scout's,
	// SessionConfig.Scouts); still no more than its space or MaxEvals.
	Min int
}

// minMeasured is how many distinct candidates an entry of valid candidates
// is to measure at least: the default and Config.MinBeyondDefault more, or the
// whole space, within the evaluation budget.
func (t *Tuner) minMeasured(valid int) int {
	return t.minOf(valid, 0)
}

// minOf is minMeasured with the minimum want instead of the default and
// Config.MinBeyondDefault more, when want is positive (a scout's).
func (t *Tuner) minOf(valid, want int) int {
	n := min(valid, 1+t.cfg.MinBeyondDefault)
	if want > 0 {
		n = min(valid, want)
	}
	if t.cfg.MaxEvals > 0 {
		n = min(n, t.cfg.MaxEvals)
	}
	return n
}

// finalPrograms is how many programs the final timing times, counted in
// whole timings: the finalists, the screen of screenFactor × Finalists (a
// fifth of the samples each), the default and the baseline, and the
// incumbent when there is one.
func (t *Tuner) finalPrograms(incumbent bool) float64 {
	return t.finalProgramsOf(incumbent, t.cfg.Finalists*screenFactor)
}

// finalProgramsOf is finalPrograms after a search that measured measured
// candidates: the screen and the finalists are at most those.
func (t *Tuner) finalProgramsOf(incumbent bool, measured int) float64 {
	k := min(t.cfg.Finalists, measured)
	n := float64(k) + float64(min(t.cfg.Finalists*screenFactor, measured))/5 + 2
	if incumbent {
		n++
	}
	return n
}

// Need is the wall time an entry needs, by e, to measure minMeasured
// candidates and finish: its setup; per candidate a build, a verification
// run, a warm-up run and its samples (raced or fixed); the drift guard's anchor
// timings; the baseline's verification and warm-up; and the final timing at
// MinFinalSamples of what minMeasured candidates leave to screen (with an
// incumbent unless e says there is none).
func (t *Tuner) Need(e Estimate) time.Duration {
	n := float64(t.minOf(e.Valid, e.Min))
	s := e.Sample.Seconds()
	// Half the candidates raced to the cap (a run finds a new best often
	// while it measures few), or Samples of every one.
	rmax := raceMaxFor(e.Sample)
	if rmax == 0 {
		rmax = raceCap
	}
	per := float64(raceFirst) + float64(rmax-raceFirst)/2
	if c := t.cfg.Strategy; c == "exhaustive" || c == "random" {
		per = float64(t.cfg.Samples)
	}
	// The default, then the others, which run slower than the default on
	// average (1.2–2× for the CPU's GEMMs: the default is a good guess).
	secs := e.Build.Seconds() + (per+2)*s + (n-1)*(e.Build.Seconds()+(per+2)*s*otherSlower)
	if t.cfg.DriftEvery > 0 {
		// The reference (2 × anchorSamples), then a check every DriftEvery
		// new candidates and one at the end.
		checks := 2 + float64(int(n)/t.cfg.DriftEvery) + 1
		secs += checks * anchorSamples * s
	}
	secs += 2 * s
	secs += t.finalProgramsOf(!e.NoIncumbent, int(n)) * float64(t.cfg.MinFinalSamples) * s
	return e.Setup + time.Duration(secs*float64(time.Second))
}

// Probe estimates what tuning task costs: it enumerates the space, draws
// and loads the inputs with their reference as Run does, builds the default
// (or, when it cannot run, the first of the valid candidates that can) and
// times it probeSamples (Config.ProbeSamples) times after a warm-up. Nothing is journaled or
// recorded. An error means no candidate of the first few could be timed;
// the estimate then holds what was learned (the setup).
func (t *Tuner) Probe(ctx context.Context, task Task) (Estimate, error) {
	return t.probe(ctx, task, nil)
}

// probe is Probe with task's problems drawn ahead (nil: it draws them).
func (t *Tuner) probe(ctx context.Context, task Task, drawn *Drawn) (Estimate, error) {
	start := time.Now()
	var e Estimate
	defer func() { e.Took = time.Since(start) }()
	m := newLive(t, task, newClock(start))
	m.drawn = drawn
	defer m.close()
	space, err := t.Space(task)
	if err != nil {
		return e, err
	}
	valid := space.Enumerate()
	e.Valid = len(valid)
	if len(valid) == 0 {
		return e, fmt.Errorf("%s %s: no valid candidate", task.Kernel.Name, task.Key())
	}
	if err := m.load(); err != nil {
		return e, err
	}
	e.Setup = time.Since(start)
	var tries []search.Candidate
	if ps, ok := task.Kernel.Space(t.b.Info().Backend); ok {
		if def := search.Candidate(ps.Defaults()); space.Check(def) == nil {
			tries = append(tries, def)
		}
	}
	tries = append(tries, valid[:min(len(valid), 3)]...)
	var lastErr error
	for _, c := range tries {
		if ctx.Err() != nil {
			return e, ctx.Err()
		}
		tb := time.Now()
		prog, err := t.b.Build(task.Kernel, task.DType, c)
		if err != nil {
			lastErr = fmt.Errorf("build %s: %w", c.Key(), err)
			continue
		}
		build := time.Since(tb)
		m.cands[c.Key()] = &candidate{cand: c, prog: prog} // closed with r
		if err := m.warmup(prog); err != nil {
			lastErr = fmt.Errorf("warm-up %s: %w", c.Key(), err)
			continue
		}
		n := probeSamples
		if t.cfg.ProbeSamples > 0 {
			n = t.cfg.ProbeSamples
		}
		ts := time.Now()
		tot, _, err := m.sample(prog, n)
		if err != nil {
			lastErr = fmt.Errorf("%s: %w", c.Key(), err)
			continue
		}
		// A GPU reports a sample as the time of one run, but a sample runs
		// the kernel over every rotated copy of its inputs (64 launches of a
		// 0.7 ms LoRA): the plan budgets by what a sample costs.
		e.Build = build
		e.Sample = max(time.Duration(stats.Median(tot)*float64(time.Second)), time.Since(ts)/time.Duration(n))
		return e, nil
	}
	return e, fmt.Errorf("%s %s: no candidate could be timed to plan the budget: %w", task.Kernel.Name, task.Key(), lastErr)
}

// NoWallTime is the budget of a run limited by evaluations alone: no wall
// time (a probe, which measures a fixed amount, runs under it too).
const NoWallTime = 30 * 24 * time.Hour

// Allotment is the time one entry gets: Share is its planned share of the
// run's time; while the entry has measured fewer than its minimum
// (minMeasured), it may go on up to Max, the time left less what the
// entries after it need.
type Allotment struct {
	Share, Max time.Duration
	// Sample is the planned time of one sample of the default (0:
	// unknown); it caps the race of slow candidates (raceMaxFor).
	Sample time.Duration
	// Next is the entry tuned after this one (nil: none, or not known).
	// On a backend that compiles ahead its first candidates are announced
	// once this entry's search ends, so that they compile while this
	// entry's finalists are timed and the next entry is set up.
	Next *Task
	// Drawn are this entry's problems drawn ahead (Tuner.DrawAhead), or
	// nil: the entry draws its own.
	Drawn *Drawn
	// Min, when positive, is the entry's minimum of candidates instead of
	// the default and Config.MinBeyondDefault more (a scout's,
	// SessionConfig.Scouts); still no more than its space or MaxEvals.
	Min int
	// MinWithin, when positive, is how long after its start Min holds;
	// after it the entry is held to its plain minimum alone (a scout's
	// builds can take longer than its probe said, and the time past its
	// share is the entries' after it).
	MinWithin time.Duration
}

// PlanError is a wall-time budget below what the plan needs: refused
// before any entry is tuned.
type PlanError struct {
	Budget time.Duration
	// Spent is what an interrupted run spent (a resumed run), Probe what
	// planning took.
	Spent, Probe time.Duration
	// Needed is the sum of the entries' needs; Entries their count.
	Needed  time.Duration
	Entries int
	// Largest is the entry that needs the most, and its need.
	Largest     string
	LargestNeed time.Duration
	// Families is how many kernel families the entries belong to.
	Families int
	// MinBeyond is the candidates beyond the default each entry measures.
	MinBeyond int
}

func (e *PlanError) Error() string {
	left := "planning alone took the whole budget"
	if l := e.Budget - e.Spent - e.Probe; l > 0 {
		left = "more than the " + l.Round(100*time.Millisecond).String() + " left"
	}
	cands := "candidates"
	if e.MinBeyond == 1 {
		cands = "candidate"
	}
	return fmt.Sprintf("measuring the default and %d %s beyond it of each of the %d entries needs about %s (timed by planning, which took %s; the most: %s, %s), %s",
		e.MinBeyond, cands, e.Entries, e.Needed.Round(time.Second), e.Probe.Round(100*time.Millisecond), e.Largest, e.LargestNeed.Round(100*time.Millisecond), left)
}

// Suggested is a budget that fits the plan with room for noise: what was
// spent, planning again, the entries' needs with half more, and per entry
// entryOverhead for what the plan does not count (writing the file, the
// journal).
func (e *PlanError) Suggested() time.Duration {
	return e.Spent + e.Probe + e.Needed*3/2 + time.Duration(e.Entries)*entryOverhead
}

// entryOverhead is what an entry costs beyond its need, for advice: reading
// and merging the params file, syncing the journal.
const entryOverhead = 500 * time.Millisecond

// schedule allots the entries of a run their time: by the plan's needs at
// the pace the run goes, or evenly without a plan.
type schedule struct {
	deadline       time.Time
	needs, samples []time.Duration // by task index; nil without a plan
	// The device's load changes during a run: the entries to come are
	// planned at the pace the last ones took (pace.speed).
	pace   *pace
	extend bool // SessionConfig.Extend
	// cushion is how much more than its need at the run's pace each entry
	// to come is given room for (planCushion, or leanCushion).
	cushion float64
}

// allot is task i's allotment, how far it moved the deadline (with
// extend) and the pace it planned at; todo counts the tasks from i on
// still to tune.
func (sc *schedule) allot(i int, todo func() int) (a Allotment, moved time.Duration, speed float64) {
	speed = sc.pace.speed()
	if sc.needs == nil {
		return evenShare(time.Until(sc.deadline), todo()), 0, speed
	}
	ahead := scaled(sc.needs, speed*max(sc.cushion, 1))
	if sc.extend {
		// The entries from this one on get at least what they need at
		// the pace the run now goes.
		if short := remaining(ahead, i) - time.Until(sc.deadline); short > 0 {
			sc.deadline = sc.deadline.Add(short)
			moved = short
		}
	}
	a = allot(time.Until(sc.deadline), ahead, i)
	if sc.extend {
		// An entry slower than even that pace may still finish its
		// minimum: the deadline of the entries after it moves by what it
		// overran.
		a.Max = max(a.Max, extendSlack*ahead[i], ahead[i]+extendFloor)
	}
	if sc.samples != nil {
		a.Sample = time.Duration(float64(sc.samples[i]) * speed)
	}
	return a, moved, speed
}

// took records that task i needed needed (Result.Needed; 0: unknown).
func (sc *schedule) took(i int, needed time.Duration) {
	if sc.needs != nil && needed > 0 && sc.needs[i] > 0 {
		sc.pace.add(needed, sc.needs[i])
	}
}
