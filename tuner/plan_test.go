package tuner

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

func TestAllot(t *testing.T) {
	s := time.Second
	tests := []struct {
		name      string
		left      time.Duration
		needs     []time.Duration
		i         int
		share, mx time.Duration
	}{
		{"the need and an even share of the slack", 20 * s, []time.Duration{s, 2 * s, 9 * s}, 0, s + 8*s/3, 20*s - 11*s},
		{"the last task takes what is left", 7 * s, []time.Duration{s, 2 * s, 3 * s}, 2, 7 * s, 7 * s},
		{"done tasks (need 0) take no slack", 10 * s, []time.Duration{s, 0, 4 * s}, 0, s + 5*s/2, 6 * s},
		{"short of time: the need's share", 9 * s / 2, []time.Duration{s, 4 * s, 5 * s}, 1, 2 * s, 2 * s},
		{"no time left", -s, []time.Duration{s, s}, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := allot(tt.left, tt.needs, tt.i)
			if d := a.Share - tt.share; d < -time.Millisecond || d > time.Millisecond || a.Max != tt.mx {
				t.Errorf("allot(%v, %v, %d) = %+v; want share %v, max %v", tt.left, tt.needs, tt.i, a, tt.share, tt.mx)
			}
		})
	}
	if a := evenShare(12*s, 2); a.Share != 6*s || a.Max != 6*s {
		t.Errorf("evenShare(12s, 2) = %+v, want 6s each", a)
	}
}

// The need grows with every cost of an entry and counts no more candidates
// than the space or the evaluation budget holds.
func TestNeed(t *testing.T) {
	tu := New(&fakeBackend{}, Config{})
	base := Estimate{Valid: 100, Setup: time.Second, Build: 10 * time.Millisecond, Sample: 20 * time.Millisecond}
	n0 := tu.Need(base)
	if n0 <= base.Setup+time.Duration(1+DefaultMinBeyondDefault)*(base.Build+raceFirst*base.Sample) {
		t.Errorf("need %v does not cover the setup and %d candidates of %v + %d × %v", n0, 1+DefaultMinBeyondDefault, base.Build, raceFirst, base.Sample)
	}
	for _, tt := range []struct {
		name string
		e    Estimate
	}{
		{"setup", Estimate{Valid: 100, Setup: 2 * time.Second, Build: base.Build, Sample: base.Sample}},
		{"build", Estimate{Valid: 100, Setup: base.Setup, Build: time.Second, Sample: base.Sample}},
		{"sample", Estimate{Valid: 100, Setup: base.Setup, Build: base.Build, Sample: 2 * base.Sample}},
	} {
		if n := tu.Need(tt.e); n <= n0 {
			t.Errorf("a larger %s needs %v, not more than %v", tt.name, n, n0)
		}
	}
	for _, tt := range []struct {
		valid, maxEvals, want int
	}{{100, 0, 1 + DefaultMinBeyondDefault}, {3, 0, 3}, {100, 4, 4}, {1, 0, 1}} {
		if got := New(&fakeBackend{}, Config{MaxEvals: tt.maxEvals}).minMeasured(tt.valid); got != tt.want {
			t.Errorf("minMeasured(%d) with MaxEvals %d = %d, want %d", tt.valid, tt.maxEvals, got, tt.want)
		}
	}
}

// sizedBackend is fakeBackend whose timed runs take wall time in proportion
// to the shape (n·k ns per sample of a gemv), so that entries of one run
// cost very different amounts, as a large GEMM and a small softmax do on a
// CPU.
type sizedBackend struct {
	fakeBackend
	nsPerElem float64
	// slower multiplies every duration once set (a load that arrives
	// after planning), in per cent; 0 is 100.
	slower atomic.Int64
}

type sizedProg struct {
	*fakeProg
	b *sizedBackend
}

func (b *sizedBackend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (device.Program, error) {
	return b.fakeBackend.wrap(k, dt, c, func(p *fakeProg) device.Program { return &sizedProg{fakeProg: p, b: b} })
}

func (p *sizedProg) Run(ti device.Instance, n int) ([]float64, error) {
	d := p.duration(ti)
	ts := make([]float64, n)
	for i := range ts {
		t0 := time.Now()
		time.Sleep(d)
		ts[i] = time.Since(t0).Seconds()
	}
	return ts, nil
}

// duration is a run's: n·k·nsPerElem, times the fake's cost relative to
// its optimum (1 to 2.6 for the gemv space) over 3.
func (p *sizedProg) duration(ti device.Instance) time.Duration {
	shape := ti.(*fakeInst).p.Case.Shape
	d := time.Duration(float64(shape[1]*shape[2]) * p.b.nsPerElem * p.cost / 100e-6 / 3)
	if pct := p.b.slower.Load(); pct > 0 {
		d = d * time.Duration(pct) / 100
	}
	return d
}

func (p *sizedProg) Output(ti device.Instance) ([]float32, error) {
	time.Sleep(p.duration(ti))
	ref := ti.(*fakeInst).p.Reference()
	out := make([]float32, len(ref))
	for i, v := range ref {
		out[i] = float32(v) // every candidate is right: all count as measured
	}
	return out, nil
}

// sizedTasks are gemv entries whose default's samples take 0.5, 1, 1.5
// and 24 ms: the cheap ones could spend any share on their 252 candidates.
func sizedTasks(t *testing.T) []Task {
	k, err := kernels.Get("gemv_nt")
	if err != nil {
		t.Fatal(err)
	}
	var tasks []Task
	for _, nk := range [][2]int{{300, 300}, {400, 400}, {500, 500}, {2000, 2000}} {
		tasks = append(tasks, Task{Kernel: k, DType: kernels.F32, Cases: []kernels.Case{{Shape: []int{1, nk[0], nk[1]}}}})
	}
	return tasks
}

// A run whose costly entry costs 16 to 44 times the others and needs about
// 3 s, more than an even split of the budget (2.5 s each): the plan gives every entry its minimum
// (the default and DefaultMinBeyondDefault more) and the slack evenly, and time an
// entry leaves goes to the next. A budget the plan does not fit is refused
// before any work, with no file and no journal left, and the budget it
// suggests then tunes every entry.
func TestSessionPlansByCost(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps through planned runs of about 20 s")
	}
	newB := func() *sizedBackend {
		return &sizedBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4}, nsPerElem: 10}
	}
	cfg := func(out string, budget time.Duration) SessionConfig {
		return SessionConfig{Config: Config{Strategy: "bo", Seed: 1, Warmup: time.Millisecond}, Out: out, Budget: budget, Generator: "test"}
	}
	run := func(b device.Backend, c SessionConfig) (*SessionSummary, []Allotment, error) {
		var allots []Allotment
		c.Hooks.Begin = func(_ Task, share time.Duration) { allots = append(allots, Allotment{Share: share}) }
		s, err := OpenSession(b, c)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		sum, err := s.Run(context.Background(), sizedTasks(t))
		return sum, allots, err
	}

	out := filepath.Join(t.TempDir(), paramfile.DefaultFileName)
	start := time.Now()
	sum, allots, err := run(newB(), cfg(out, 10*time.Second))
	if err != nil {
		t.Fatalf("planned run: %v", err)
	}
	if took := time.Since(start); took > 11*time.Second {
		t.Errorf("the run took %v of a 10 s budget", took)
	}
	if len(sum.Results) != 4 || len(allots) != 4 {
		t.Fatalf("%d results, %d allotments; want 4", len(sum.Results), len(allots))
	}
	for _, r := range sum.Results {
		if m := r.Entry.Candidates.Measured; m < 1+DefaultMinBeyondDefault {
			t.Errorf("%s measured %d candidates (%d evaluations, %d failed, stopped %q), want at least %d", r.Task.Key(), m, r.Entry.Evaluations, r.Entry.Candidates.Failed, r.Stopped, 1+DefaultMinBeyondDefault)
		}
	}
	// The costliest first, with the larger share.
	if allots[0].Share < 2*allots[3].Share {
		t.Errorf("the costly entry's share %v is not well above the cheap one's %v", allots[0].Share, allots[3].Share)
	}

	// Too small: refused before any work, nothing left behind.
	small := filepath.Join(t.TempDir(), paramfile.DefaultFileName)
	_, allots, err = run(newB(), cfg(small, time.Second))
	var pe *PlanError
	if !errors.As(err, &pe) {
		t.Fatalf("a 1 s budget: error %v, want a *PlanError", err)
	}
	if len(allots) != 0 || pe.Entries != 4 || pe.Needed <= 0 || pe.Largest != "gemv_nt f32/1x2000x2000" {
		t.Errorf("plan error %+v after %d entries begun", pe, len(allots))
	}
	for _, p := range []string{small, JournalPath(small)} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after a refused budget (%v)", p, err)
		}
	}
	// The same budget with Extend: the run takes the time the plan needs,
	// says how much more, and every entry measures its minimum.
	extended := filepath.Join(t.TempDir(), paramfile.DefaultFileName)
	ec := cfg(extended, time.Second)
	ec.Extend = true
	var plan Plan
	ec.Hooks.Planned = func(p Plan) { plan = p }
	sum, _, err = run(newB(), ec)
	if err != nil {
		t.Fatalf("a 1 s budget with Extend: %v", err)
	}
	if plan.Extended <= 0 || sum.Extended < plan.Extended {
		t.Errorf("extended %v (the plan's %v), want the plan's positive and the run's at least that", sum.Extended, plan.Extended)
	}
	if sum.Wall < time.Second || len(sum.Results) != 4 {
		t.Errorf("an extended run took %v with %d results; want past its 1 s budget, 4 results", sum.Wall, len(sum.Results))
	}
	for _, r := range sum.Results {
		if m := r.Entry.Candidates.Measured; m < 1+DefaultMinBeyondDefault {
			t.Errorf("extended: %s measured %d candidates, want at least %d", r.Task.Key(), m, 1+DefaultMinBeyondDefault)
		}
	}
	// Lean: the extension covers the need, leanCushion and leanPerEntry,
	// and every entry still measures its minimum.
	lean := filepath.Join(t.TempDir(), paramfile.DefaultFileName)
	lc := cfg(lean, time.Second)
	lc.Extend, lc.Lean = true, true
	var leanPlan Plan
	lc.Hooks.Planned = func(p Plan) { leanPlan = p }
	sum, _, err = run(newB(), lc)
	if err != nil {
		t.Fatalf("a 1 s budget with Extend and Lean: %v", err)
	}
	// The extension beyond what is missing is the lean allowance alone,
	// where the plan above added 15 % of the need and 0.5 s an entry.
	leanExtra := leanPlan.Extended - (leanPlan.Needed - leanPlan.Left)
	extra := plan.Extended - (plan.Needed - plan.Left)
	if leanPlan.PerEntry != leanPerEntry || math.Abs(leanPlan.Margin-(leanCushion-1)) > 1e-9 || leanPlan.Extended <= 0 ||
		(leanExtra-4*leanPerEntry).Abs() > 50*time.Millisecond || leanExtra >= extra {
		t.Errorf("lean plan %+v: %v beyond what is missing, want %v an entry and less than the plan's %v", leanPlan, leanExtra, leanPerEntry, extra)
	}
	for _, r := range sum.Results {
		if m := r.Entry.Candidates.Measured; m < 1+DefaultMinBeyondDefault {
			t.Errorf("lean: %s measured %d candidates, want at least %d", r.Task.Key(), m, 1+DefaultMinBeyondDefault)
		}
	}
	// The budget the error suggests is enough.
	sum, _, err = run(newB(), cfg(small, pe.Suggested()))
	if err != nil {
		t.Fatalf("the suggested budget %v: %v", pe.Suggested(), err)
	}
	for _, r := range sum.Results {
		if m := r.Entry.Candidates.Measured; m < 1+DefaultMinBeyondDefault {
			t.Errorf("with the suggested budget, %s measured %d candidates", r.Task.Key(), m)
		}
	}
}

// A run on a machine that turns four times as slow once planning is done:
// with Extend the run moves its deadline again for the entries left
// (beyond what the plan took, whose cushion is 15 % and 0.5 s an entry),
// so that each still measures its default and DefaultMinBeyondDefault more.
// Twice as slow is not enough to test it: on a busy machine planning's own
// overhead is timed too, and the cushion then absorbed the slowdown.
func TestSessionExtendsForLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps through a run of about 10 s")
	}
	b := &sizedBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4}, nsPerElem: 5}
	out := filepath.Join(t.TempDir(), paramfile.DefaultFileName)
	var plan Plan
	c := SessionConfig{Config: Config{Strategy: "bo", Seed: 1, Warmup: time.Millisecond}, Out: out, Generator: "test", Extend: true,
		Hooks: SessionHooks{
			Planned: func(p Plan) { plan = p; b.slower.Store(400); t.Logf("plan %+v", p) },
			Allotted: func(task Task, a Allotment, need time.Duration, speed float64) {
				t.Logf("allot %s %+v need %v speed %.2f", task.Key(), a, need, speed)
			},
			Tuned: func(res *Result, el time.Duration) {
				t.Logf("tuned %s needed %v elapsed %v measured %d", res.Task.Key(), res.Needed, el, res.Entry.Candidates.Measured)
			}}}
	c.Budget = 2 * time.Second
	s, err := OpenSession(b, c)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sum, err := s.Run(context.Background(), sizedTasks(t))
	if err != nil {
		t.Fatalf("extended run: %v", err)
	}
	if sum.Extended <= plan.Extended || len(sum.Results) != 4 {
		t.Errorf("four times as slow after planning: extended %v (the plan %v), %d results; want the deadline moved again mid-run and 4 results", sum.Extended, plan.Extended, len(sum.Results))
	}
	for _, r := range sum.Results {
		if m := r.Entry.Candidates.Measured; m < 1+DefaultMinBeyondDefault {
			t.Errorf("%s measured %d candidates (stopped %q), want at least %d", r.Task.Key(), m, r.Stopped, 1+DefaultMinBeyondDefault)
		}
	}
}

// A cheap entry timed in a moment of load barely moves the plan's speed;
// costly ones do, and a lasting change of speed is followed.
func TestPace(t *testing.T) {
	s := time.Second
	p := newPace([]time.Duration{s / 10, s / 10, 20 * s, 20 * s})
	if got := p.speed(); got != 1 {
		t.Errorf("speed %.2f before any entry, want 1", got)
	}
	if p.add(s/10*4, s/10); p.speed() > 1.1 {
		t.Errorf("a cheap entry 4× slower than planned moved the speed to %.2f", p.speed())
	}
	for range 3 {
		p.add(40*s, 20*s)
	}
	if got := p.speed(); got < 1.6 || got > 2 {
		t.Errorf("costly entries twice as slow as planned: speed %.2f, want near 2", got)
	}
	if p.add(1000*s, s); p.speed() != 3 {
		t.Errorf("speed %.2f, want the cap 3", p.speed())
	}
}

// Counts in messages are in the singular when they are one.
func TestCountInMessages(t *testing.T) {
	k, err := kernels.Get("gemv_nt")
	if err != nil {
		t.Fatal(err)
	}
	e := &TooSmallError{Result: &Result{Task: Task{Kernel: k, DType: kernels.F32, Class: "largeN"}}, Skipped: []string{"gemv_nt f32/largeN"}, Written: 1}
	if msg := e.Error(); !strings.Contains(msg, "the run's other 1 entry was tuned and written") {
		t.Errorf("%s", msg)
	}
}

// The refusal says what was left after planning, never a negative time.
func TestPlanErrorMessage(t *testing.T) {
	s := time.Second
	for _, tt := range []struct {
		budget, probe time.Duration
		want          string
	}{
		{2 * s, 6 * s, "planning alone took the whole budget"},
		{10 * s, 4 * s, "more than the 6s left"},
	} {
		e := &PlanError{Budget: tt.budget, Probe: tt.probe, Needed: 30 * s, Entries: 2, Largest: "gemm_av f32/large", LargestNeed: 20 * s}
		if msg := e.Error(); !strings.Contains(msg, tt.want) || strings.Contains(msg, "-") {
			t.Errorf("%s", msg)
		}
	}
}

// A session announces every entry's first candidates to a compile pool
// before the first entry begins, so that the pool works from the start.
func TestSessionAnnouncesEveryEntry(t *testing.T) {
	b := &poolBackend{slowBackend: slowBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4},
		build: time.Millisecond, output: time.Millisecond, run: 100 * time.Microsecond}, ready: map[string]time.Time{}}
	before := -1
	c := SessionConfig{Config: Config{Strategy: "bo", Seed: 1, Warmup: time.Microsecond, MaxEvals: 4, FinalSamples: 3},
		Out: filepath.Join(t.TempDir(), paramfile.DefaultFileName), Budget: NoWallTime, Generator: "test",
		Hooks: SessionHooks{Begin: func(Task, time.Duration) {
			// The announcements run on a goroutine of their own: the first
			// entry waits here, up to 5 s, for one a task.
			for deadline := time.Now().Add(5 * time.Second); before < 0; {
				b.mu.Lock()
				n := len(b.announce)
				b.mu.Unlock()
				if n >= 4 || time.Now().After(deadline) {
					before = n
				}
				time.Sleep(time.Millisecond)
			}
		}}}
	s, err := OpenSession(b, c)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tasks := sizedTasks(t)
	if _, err := s.Run(context.Background(), tasks); err != nil {
		t.Fatal(err)
	}
	if before < len(tasks) {
		t.Errorf("%d announcements before the first entry began, want one for each of the %d entries", before, len(tasks))
	}
}

// Problems drawn ahead are the ones the entry would draw itself with the
// same data seed, references computed; another task's are not taken.
func TestDrawAhead(t *testing.T) {
	b := &fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4}
	tu := New(b, Config{DataSeed: 7})
	task := gemvTask(t)
	d := tu.DrawAhead(task)
	m := newLive(tu, task, nil)
	defer m.close()
	if err := m.load(); err != nil {
		t.Fatal(err)
	}
	own := append(append([]*loaded{}, m.odd...), m.problems...)
	got := d.take(task)
	if len(got) != len(own) {
		t.Fatalf("drawn %d problems, the entry draws %d", len(got), len(own))
	}
	for i, l := range own {
		if !slices.EqualFunc(got[i].Inputs, l.p.Inputs, slices.Equal[[]float32]) || got[i].Seed != l.p.Seed {
			t.Errorf("problem %d (%s): drawn ahead differs from the entry's own", i, l.p.Case)
		}
		if len(got[i].Reference()) == 0 {
			t.Errorf("problem %d: no reference", i)
		}
	}
	other := task
	other.Cases = task.Cases[:1]
	if d.take(other) != nil {
		t.Error("problems drawn for one task were taken by another")
	}
	// An entry given them draws nothing of its own: the same seed.
	m2 := newLive(New(b, Config{}), task, nil)
	defer m2.close()
	m2.drawn = d
	if err := m2.load(); err != nil {
		t.Fatal(err)
	}
	if m2.dataSeed != 7 || m2.problems[0].p != got[len(task.Kernel.Odd)] {
		t.Errorf("the entry given drawn problems has seed %d and its own problems", m2.dataSeed)
	}
}

// With Scouts and WarmSiblings, a planned run tunes each family's cheapest
// entry first, planned for Scouts candidates, and its winner is among the
// warm starts the family's costlier entries measure right after their
// default; those follow costliest first.
func TestSessionScouts(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps through a planned run of a few seconds")
	}
	const scouts = 12
	// Runs of 1 to 12 ms: well above the sleep's granularity on a loaded
	// machine, so that the scout's search finds a winner other than the
	// default.
	b := &sizedBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4}, nsPerElem: 40}
	k, err := kernels.Get("gemv_nt")
	if err != nil {
		t.Fatal(err)
	}
	var tasks []Task
	for _, n := range []int{300, 400, 500, 700} {
		tasks = append(tasks, Task{Kernel: k, DType: kernels.F32, Cases: []kernels.Case{{Shape: []int{1, n, n}}}})
	}
	out := filepath.Join(t.TempDir(), paramfile.DefaultFileName)
	var order []string
	measured := map[string][]string{} // by entry, the candidates in the order first measured
	var current string
	needs := map[string]time.Duration{} // as probed
	c := SessionConfig{Config: Config{Strategy: "bo", Seed: 1, Warmup: time.Millisecond, MinBeyondDefault: 1,
		Progress: func(e Event) {
			if e.Candidate != "" && !slices.Contains(measured[current], e.Candidate) {
				measured[current] = append(measured[current], e.Candidate)
			}
		}},
		Out: out, Generator: "test", Budget: time.Second, Extend: true, Lean: true, WarmSiblings: 3, Scouts: scouts,
		Hooks: SessionHooks{
			Probed: func(task Task, _ Estimate, need time.Duration, _ error) { needs[task.Key()] = need },
			Begin:  func(task Task, _ time.Duration) { current = task.Key(); order = append(order, current) }}}
	sum := mustRun(t, b, c, tasks)
	// The cheapest as probed (the two cheapest are close: either may be it),
	// then the others, the costliest first.
	want := slices.Collect(maps.Keys(needs))
	slices.SortFunc(want, func(a, b string) int { return cmp.Compare(needs[b], needs[a]) })
	want = append(want[len(want)-1:], want[:len(want)-1]...)
	if len(want) != 4 || !slices.Equal(order, want) {
		t.Fatalf("entries in the order %v, want the scout, then the costliest first: %v", order, want)
	}
	var scout string
	for _, r := range sum.Results {
		t.Logf("%s: %d measured, winner %v %.1f µs, default %.1f µs", r.Task.Key(), r.Entry.Candidates.Measured, r.Entry.Params, r.Entry.MedianUS, r.Entry.Default.MedianUS)
		if r.Task.Key() != want[0] {
			continue
		}
		scout = search.Candidate(r.Entry.Params).Key()
		if m := r.Entry.Candidates.Measured; m < scouts {
			t.Errorf("the scout measured %d candidates, want at least %d", m, scouts)
		}
	}
	next := measured[want[1]]
	ps, _ := k.Space(b.Info().Backend)
	if def := search.Candidate(ps.Defaults()).Key(); scout == def {
		t.Fatalf("the scout's winner is the default %s", def)
	}
	if len(next) < 2 || !slices.Contains(next[1:min(len(next), 4)], scout) {
		t.Errorf("%s measured %v first; want the scout's winner %s among the first after its default", want[1], next, scout)
	}
}

// A second planned run plans each entry the file records by what its last
// run took, without probing it again; an entry of other shapes, or a run
// that replaces the file's entries, is probed.
func TestSessionPlansFromTheFile(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps through three planned runs of a few seconds")
	}
	out := filepath.Join(t.TempDir(), paramfile.DefaultFileName)
	run := func(replace bool, tasks []Task) (probed, recorded int, plan Plan) {
		t.Helper()
		b := &sizedBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4}, nsPerElem: 10}
		c := SessionConfig{Config: Config{Strategy: "bo", Seed: 1, Warmup: time.Millisecond}, Out: out, Generator: "test",
			Budget: 2 * time.Second, Extend: true, Replace: replace,
			Hooks: SessionHooks{
				Probed: func(_ Task, est Estimate, need time.Duration, err error) {
					if err != nil || need <= 0 || est.Sample <= 0 || est.Valid <= 0 {
						t.Errorf("planned %+v, need %v, error %v", est, need, err)
					}
					if est.Recorded {
						recorded++
					} else {
						probed++
					}
				},
				Planned: func(p Plan) { plan = p },
			}}
		sum := mustRun(t, b, c, tasks)
		for _, r := range sum.Results {
			if m := r.Entry.Candidates.Measured; m < 1+DefaultMinBeyondDefault {
				t.Errorf("%s measured %d candidates, want at least %d", r.Task.Key(), m, 1+DefaultMinBeyondDefault)
			}
		}
		return probed, recorded, plan
	}
	tasks := sizedTasks(t)[:3]
	if p, r, _ := run(false, tasks); p != 3 || r != 0 {
		t.Errorf("a first run probed %d entries and planned %d from the file, want 3 and 0", p, r)
	}
	p, r, plan := run(false, tasks)
	if p != 0 || r != 3 || plan.Recorded != 3 {
		t.Errorf("a second run probed %d entries and planned %d from the file (plan %+v), want 0 and 3", p, r, plan)
	}
	// Replace probes all; an entry's other shapes are not its record.
	if p, r, _ := run(true, tasks); p != 3 || r != 0 {
		t.Errorf("with Replace: probed %d, planned %d from the file; want 3 and 0", p, r)
	}
	other := slices.Clone(tasks)
	other[0].Cases = []kernels.Case{{Shape: []int{1, 300, 300}}, {Shape: []int{1, 301, 300}}}
	if p, r, _ := run(false, other); p != 1 || r != 2 {
		t.Errorf("with one entry's shapes changed: probed %d, planned %d from the file; want 1 and 2", p, r)
	}
}

// mustRun runs a session of tasks on b with c, failing the test on an error.
func mustRun(t *testing.T, b device.Backend, c SessionConfig, tasks []Task) *SessionSummary {
	t.Helper()
	s, err := OpenSession(b, c)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sum, err := s.Run(context.Background(), tasks)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// A scout is planned for as many candidates, up to Scouts, as scoutExtra
// beyond its plain need buys: all of them where candidates cost
// milliseconds, a few where each is a second's build, none past its space.
func TestScoutMin(t *testing.T) {
	tu := New(&fakeBackend{}, Config{Strategy: "bo"})
	tests := []struct {
		name   string
		e      Estimate
		lo, hi int // the minimum planned, within
	}{
		{"cheap candidates", Estimate{Valid: 100, Sample: 50 * time.Microsecond}, 24, 24},
		{"builds of 0.3 s", Estimate{Valid: 100, Sample: 50 * time.Microsecond, Build: 300 * time.Millisecond}, 7, 9},
		{"builds of 2 s", Estimate{Valid: 100, Sample: 50 * time.Microsecond, Build: 2 * time.Second}, 0, 0},
		{"a space of 10", Estimate{Valid: 10, Sample: 50 * time.Microsecond}, 10, 10},
		{"a space of its plain minimum", Estimate{Valid: 6, Sample: 50 * time.Microsecond}, 0, 0},
	}
	for _, tt := range tests {
		plain := tu.Need(tt.e)
		n, need := scoutMin(tu, tt.e, 24, plain+scoutExtra)
		if n < tt.lo || n > tt.hi || n > 0 && (need > plain+scoutExtra || need <= plain) || n == 0 && need != 0 {
			t.Errorf("%s: %d candidates, needing %v (plain %v); want %d to %d within %v more", tt.name, n, need, plain, tt.lo, tt.hi, scoutExtra)
		}
	}
}

// A probe's Sample is what a sample costs, not the per-run median a GPU
// reports: a GPU sample runs the kernel over every rotated copy of its
// inputs, and a plan by the median gave a scout ten times its share.
func TestProbeSampleIsItsCost(t *testing.T) {
	b := &slowBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4}, run: 4 * time.Millisecond}
	task := gemvTask(t)
	e, err := New(b, Config{Strategy: "random", Seed: 1, Warmup: time.Microsecond, ProbeSamples: 3}).Probe(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Duration(len(task.Cases)) * b.run; e.Sample < want {
		t.Errorf("Sample %v, want at least %v (a run of %v on each of %d shapes)", e.Sample, want, b.run, len(task.Cases))
	}
}
