package tuner

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

// Tests of what the tuner does about measurements that cannot be taken at
// face value: a device whose speed drifts (drift.go), a winner that is
// slower than the default on one shape of its class (noharm.go), and a
// search median taken in a lucky moment (retime.go).

// modelBackend times candidates by a model: cost(c, shape) seconds per run,
// times speed(c) (throttling, load; 1 when nil), with 1 % noise. Outputs
// come from the fake backend, so UNROLL=4 and 8 fail verification.
type modelBackend struct {
	*fakeBackend
	cost  func(c search.Candidate, shape []int) float64
	speed func(c search.Candidate) float64
	runs  int
}

type modelProg struct {
	*fakeProg
	b *modelBackend
}

func newModel(cost func(search.Candidate, []int) float64) *modelBackend {
	return &modelBackend{fakeBackend: &fakeBackend{rng: rand.New(rand.NewPCG(5, 6)), threadsCap: 4}, cost: cost}
}

func (b *modelBackend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (device.Program, error) {
	return b.fakeBackend.wrap(k, dt, c, func(p *fakeProg) device.Program { return &modelProg{fakeProg: p, b: b} })
}

// Run times n runs. Warm-up runs (one at a time) neither count as work nor
// draw noise, so that a test does not depend on how many fit in the
// warm-up time.
func (p *modelProg) Run(ti device.Instance, n int) ([]float64, error) {
	shape := ti.(*fakeInst).p.Case.Shape
	ts := make([]float64, n)
	if n == 1 {
		ts[0] = p.b.cost(p.c, shape)
		return ts, nil
	}
	for j := range ts {
		f := 1.0
		if p.b.speed != nil {
			f = p.b.speed(p.c)
		}
		ts[j] = p.b.cost(p.c, shape) * f * (1 + 0.01*p.b.rng.NormFloat64())
		p.b.runs++
	}
	return ts, nil
}

// verifiable lists the task's valid candidates that pass the fake
// backend's verification (UNROLL ≤ 2), in the order exhaustive measures
// them, and the default.
func verifiable(t *testing.T, tu *Tuner, task Task) ([]search.Candidate, search.Candidate) {
	t.Helper()
	space, err := tu.Space(task)
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := task.Kernel.Space("cpu")
	def := search.Candidate(ps.Defaults())
	var out []search.Candidate
	for _, c := range space.Enumerate() {
		if c["UNROLL"] <= 2 && c.Key() != def.Key() {
			out = append(out, c)
		}
	}
	return out, def
}

// A fanless laptop: after a stretch of sustained work the device throttles
// to 1/1.3 of its speed until it idles for a cool-down. The best candidate
// comes last, when the device is throttled: without the guard it looks 17 %
// slower than candidates measured cool and is not even a finalist; with the
// guard its drifted samples are discarded and it is measured again after a
// cool-down, and it wins. Cool-downs run on a virtual clock.
func TestDriftGuardThrottling(t *testing.T) {
	const heatLimit = 600 // runs of sustained work before the device throttles
	// cool is a candidate's time over both shapes on a cool device, in µs.
	var cool func(key string) float64
	setup := func(guard bool) (*Tuner, *modelBackend, search.Candidate, *memJournal) {
		var cands []search.Candidate
		var def search.Candidate
		rel := map[string]float64{}
		fb := newModel(func(c search.Candidate, shape []int) float64 {
			r, ok := rel[c.Key()]
			if !ok {
				r = 1.2 // fails verification anyway
			}
			return float64(shape[1]) / 3 * 1e-6 * r // 100 µs and 43 µs
		})
		heat := 0
		fb.speed = func(search.Candidate) float64 {
			heat++
			if heat > heatLimit {
				return 1.3
			}
			return 1
		}
		j := &memJournal{}
		cfg := Config{Strategy: "exhaustive", Samples: 5, FinalSamples: 10, Warmup: time.Microsecond, DriftCooldown: time.Second, Journal: j}
		if !guard {
			cfg.DriftEvery = -1
		}
		tu := New(fb, cfg)
		tu.sleep = func(_ context.Context, d time.Duration) {
			if d >= time.Second {
				heat = 0
			}
		}
		cands, def = verifiable(t, tu, gemvTask(t))
		for i, c := range cands {
			rel[c.Key()] = 1 + 0.04*float64(i)/float64(len(cands))
		}
		rel[def.Key()] = 1.02
		best := cands[len(cands)-1]
		rel[best.Key()] = 0.9
		cool = func(key string) float64 { return (100 + 43) * rel[key] }
		return tu, fb, best, j
	}

	t.Run("without the guard", func(t *testing.T) {
		tu, _, best, _ := setup(false)
		res, err := tu.Run(context.Background(), gemvTask(t), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if got := search.Candidate(res.Entry.Params); got.Key() == best.Key() {
			t.Fatalf("the throttled device's best candidate %s won without the guard: the test does not throttle", best.Key())
		}
		if res.Entry.Drift != nil {
			t.Errorf("drift recorded with the guard off: %+v", res.Entry.Drift)
		}
		hot := 0
		for _, m := range res.Trace {
			if m.Err == "" && m.MedianUS > 1.2*cool(m.Key) {
				hot++
			}
		}
		if hot == 0 {
			t.Error("no candidate was measured throttled")
		}
	})

	t.Run("with the guard", func(t *testing.T) {
		tu, fb, best, j := setup(true)
		res, err := tu.Run(context.Background(), gemvTask(t), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if got := search.Candidate(res.Entry.Params); got.Key() != best.Key() {
			t.Errorf("winner %s, want %s (finalists %+v)", got.Key(), best.Key(), res.Finalists)
		}
		// Every sample taken while the device was throttled was discarded
		// and taken again cool.
		for _, m := range res.Trace {
			if m.Err == "" && math.Abs(m.MedianUS/cool(m.Key)-1) > 0.05 {
				t.Errorf("%s: median %.2f µs, %.2f µs cool: measured throttled", m.Key, m.MedianUS, cool(m.Key))
			}
		}
		d := res.Entry.Drift
		if d == nil || d.Events < 1 || d.Events > maxRedoEvents || d.Remeasured < 1 || d.Checks <= d.Events || d.MaxPct < 20 || d.MaxPct > 40 || d.WaitedS < 1 {
			t.Fatalf("drift record %+v: want events, candidates measured again, a drift near 30 %%, a cool-down", d)
		}
		// Each anchor timing of the search is journaled; the final timing
		// (two rounds) checks the anchor once per attempt, and an attempt
		// that drifted is an event journaled as final.
		anchors, events, final := 0, 0, 0
		for _, r := range j.recs {
			switch r.Kind {
			case RecordAnchor:
				want := anchorSamples
				if anchors == 0 {
					want *= 2 // the reference
				}
				anchors++
				if len(r.Samples) != want || r.Cand != search.Candidate(res.Entry.Default.Params).Key() {
					t.Errorf("anchor record %+v: want %d samples of the default", r, want)
				}
			case RecordDrift:
				events++
				if r.Final {
					final++
					continue
				}
				if r.DriftPct < 20 || r.DriftPct > 40 || r.Redone < 1 || r.WaitedS < 1 {
					t.Errorf("drift record %+v: want a drift near +30 %%, candidates measured again after a cool-down", r)
				}
			}
		}
		if anchors+1+final != d.Checks || events != d.Events {
			t.Errorf("journal: %d anchor timings, %d drift events; entry: %+v", anchors, events, d)
		}
		if fb.runs == 0 {
			t.Fatal("nothing ran")
		}

		// Resumed from the first half of its journal, the run replays the
		// guard's anchor timings and decisions: it journals no event twice,
		// and the best candidate still wins.
		cut := len(j.recs) / 2
		tu2, _, best2, j2 := setup(true)
		j2.old = append([]Record(nil), j.recs[:cut]...)
		res2, err := tu2.Run(context.Background(), gemvTask(t), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if got := search.Candidate(res2.Entry.Params); got.Key() != best2.Key() {
			t.Errorf("resumed winner %s, want %s", got.Key(), best2.Key())
		}
		for _, r := range j2.recs {
			for _, o := range j2.old {
				if r.Kind == RecordDrift && o.Kind == RecordDrift && sameSamples(r.Samples, o.Samples) {
					t.Errorf("the resumed run journaled the replayed drift event %+v again", o)
				}
			}
		}
	})
}

func sameSamples(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A stable device: the guard checks and finds nothing, and changes nothing.
func TestDriftGuardQuiet(t *testing.T) {
	for _, guard := range []int{0, -1} {
		fb := &fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4}
		res, err := New(fb, Config{Strategy: "exhaustive", Samples: 5, FinalSamples: 10, Warmup: time.Microsecond, DriftEvery: guard}).
			Run(context.Background(), gemvTask(t), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		want := search.Candidate{"BN": 64, "ROWS": 2, "UNROLL": 2, "THREADS": 2}
		if search.Candidate(res.Entry.Params).Key() != want.Key() {
			t.Errorf("DriftEvery %d: winner %v, want %v", guard, res.Entry.Params, want)
		}
		d := res.Entry.Drift
		switch {
		case guard < 0 && d != nil:
			t.Errorf("guard off, yet drift %+v", d)
		case guard == 0 && (d == nil || d.Checks < 126/DefaultDriftEvery || d.Events != 0 || d.Remeasured != 0 || d.MaxPct > 5):
			t.Errorf("guard on, stable device: drift %+v; want %d or more checks and no event", d, 126/DefaultDriftEvery)
		}
	}
}

// The no-harm rule on a class of two shapes (1x300x200 and 1x129x77+bias):
// x is the fastest over both but slower than the default on the small one.
func TestNoHarmInAClass(t *testing.T) {
	x := search.Candidate{"BN": 64, "ROWS": 2, "UNROLL": 2, "THREADS": 2}
	y := search.Candidate{"BN": 16, "ROWS": 1, "UNROLL": 1, "THREADS": 1}
	tests := []struct {
		name      string
		xSmall    float64 // x's time on the small shape, µs (the default takes 50)
		y         bool    // y (85 + 49 µs) is there; else it costs what the rest do
		want      search.Candidate
		wantNote  []string // parts of the no-harm note; none: no note
		defChosen bool
	}{
		{"another candidate harms no shape", 70, true, y,
			[]string{x.Key() + " was", "slower on 1x129x77+bias", "chose " + y.Key()}, false},
		{"only the default harms no shape", 70, false, nil,
			[]string{x.Key() + " was", "slower on 1x129x77+bias", "keeps the default", "--shape"}, true},
		{"the fastest harms no shape", 50, true, x, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var def search.Candidate
			fb := newModel(func(c search.Candidate, shape []int) float64 {
				big := shape[1] == 300
				us := map[bool]float64{true: 120, false: 60}[big] // every other candidate
				switch c.Key() {
				case def.Key():
					us = map[bool]float64{true: 100, false: 50}[big]
				case x.Key():
					us = map[bool]float64{true: 60, false: tt.xSmall}[big]
				case y.Key():
					if tt.y {
						us = map[bool]float64{true: 85, false: 49}[big]
					}
				}
				return us * 1e-6
			})
			tu := New(fb, Config{Strategy: "exhaustive", Samples: 5, FinalSamples: 20, Warmup: time.Microsecond})
			space, _ := tu.Space(gemvTask(t))
			for _, c := range []search.Candidate{x, y} {
				if err := space.Check(c); err != nil {
					t.Fatalf("%s is not valid in the test's space: %v", c.Key(), err)
				}
			}
			_, def = verifiable(t, tu, gemvTask(t))
			want := tt.want
			if tt.defChosen {
				want = def
			}
			res, err := tu.Run(context.Background(), gemvTask(t), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			e := res.Entry
			if got := search.Candidate(e.Params); got.Key() != want.Key() {
				t.Fatalf("winner %s, want %s (finalists %+v)", got.Key(), want.Key(), res.Finalists)
			}
			if len(tt.wantNote) == 0 && e.NoHarm != "" {
				t.Errorf("no-harm note %q, want none", e.NoHarm)
			}
			for _, part := range tt.wantNote {
				if !strings.Contains(e.NoHarm, part) {
					t.Errorf("no-harm note %q lacks %q", e.NoHarm, part)
				}
			}
			// The recorded per-shape times are the chosen candidate's, none
			// slower than the default's beyond noise.
			if len(e.ShapeMedianUS) != 2 || e.Default == nil || e.Default.MedianUS <= 0 {
				t.Fatalf("shape medians %v, default %+v", e.ShapeMedianUS, e.Default)
			}
			if e.ShapeMedianUS[1] > 50*1.03 {
				t.Errorf("chosen %s takes %.2f µs on the small shape, the default 50", want.Key(), e.ShapeMedianUS[1])
			}
			if tt.defChosen && e.MedianUS != e.Default.MedianUS {
				t.Errorf("the default chosen: median %v, default's %v; want one measurement", e.MedianUS, e.Default.MedianUS)
			}
		})
	}
}

// Selection bias, as on a shared 2-core machine: two multi-threaded
// candidates happened to be measured while the machine was quiet, and ran
// at 0.55 of their usual time. The search ranks them first. Re-timing the
// top few interleaved chooses the truly fastest, and the entry's figures
// agree with Bench's timing of the same parameters (kerntune bench against
// kerntune show).
func TestFinalistsUndoSelectionBias(t *testing.T) {
	lucky := []search.Candidate{
		{"BN": 64, "ROWS": 2, "UNROLL": 2, "THREADS": 4},
		{"BN": 32, "ROWS": 4, "UNROLL": 1, "THREADS": 2},
	}
	truth := search.Candidate{"BN": 16, "ROWS": 4, "UNROLL": 1, "THREADS": 1}
	run := func(finalists int) (*Result, *modelBackend, *Tuner) {
		fb := newModel(func(c search.Candidate, shape []int) float64 {
			us := 110.0
			switch c.Key() {
			case truth.Key():
				us = 95
			case lucky[0].Key(), lucky[1].Key():
				us = 105
			}
			return us * 1e-6 * float64(shape[1]) / 300
		})
		seen := map[string]int{}
		fb.speed = func(c search.Candidate) float64 {
			seen[c.Key()]++
			for _, l := range lucky {
				if c.Key() == l.Key() && seen[c.Key()] <= 30 {
					return 0.55 // quiet while the search measured it
				}
			}
			return 1
		}
		tu := New(fb, Config{Strategy: "exhaustive", Samples: 10, FinalSamples: 20, Warmup: time.Microsecond, Finalists: finalists})
		res, err := tu.Run(context.Background(), gemvTask(t), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return res, fb, tu
	}

	t.Run("winner of the search alone", func(t *testing.T) {
		res, _, _ := run(1)
		got := search.Candidate(res.Entry.Params)
		if got.Key() != lucky[0].Key() && got.Key() != lucky[1].Key() {
			t.Fatalf("winner %s: want a lucky candidate, or the test has no teeth", got.Key())
		}
		f := res.Finalists[0]
		if r := f.SearchUS / f.FinalUS; r > 0.65 {
			t.Errorf("search %.1f µs, final %.1f µs: want the lucky search median near 0.55 of the final", f.SearchUS, f.FinalUS)
		}
	})

	t.Run("top four re-timed", func(t *testing.T) {
		res, fb, tu := run(0)
		e := res.Entry
		if got := search.Candidate(e.Params); got.Key() != truth.Key() {
			t.Fatalf("winner %s, want %s (finalists %+v)", got.Key(), truth.Key(), res.Finalists)
		}
		final := 0
		for _, f := range res.Finalists {
			if f.Final {
				final++
			}
			if f.Final && f.Err == "" && f.FinalUS < e.MedianUS {
				t.Errorf("finalist %+v is faster than the chosen %.2f µs", f, e.MedianUS)
			}
		}
		if final != DefaultFinalists+1 || len(res.Finalists) != screenFactor*DefaultFinalists+1 {
			t.Errorf("%d finalists of %d screened; want %d of %d (the default included)", final, len(res.Finalists), DefaultFinalists+1, screenFactor*DefaultFinalists+1)
		}
		// Bench times the chosen parameters as kerntune bench does, shape by
		// shape, interleaved with no baseline: with 1 % noise the medians of
		// 20 and 50 samples agree within 3 %.
		task := gemvTask(t)
		for i, c := range task.Cases {
			b, err := tu.Bench(context.Background(), task.Kernel, task.DType, c, search.Candidate(e.Params), 50)
			if err != nil {
				t.Fatal(err)
			}
			if r := b.MedianUS / e.ShapeMedianUS[i]; math.Abs(r-1) > 0.03 {
				t.Errorf("%s: bench %.2f µs, entry %.2f µs", c, b.MedianUS, e.ShapeMedianUS[i])
			}
		}
		if fb.runs == 0 {
			t.Fatal("nothing ran")
		}
	})
}

// A device that changes speed for good: one that slowed down is let cool
// maxCooldowns times and then taken at its new speed; one that sped up is
// timed again once and taken at its new speed, without waiting (cooling
// cannot make a device slower).
func TestDriftGuardSettles(t *testing.T) {
	for _, tt := range []struct {
		name   string
		factor float64
		wait   float64 // virtual seconds waited, at least
	}{
		{"slows down", 1.3, maxCooldowns},
		{"speeds up", 0.7, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fb := newModel(func(c search.Candidate, shape []int) float64 {
				return float64(shape[1]) * 1e-6 * (1 + 0.1*float64(c["ROWS"]))
			})
			fb.speed = func(search.Candidate) float64 {
				if fb.runs > 600 {
					return tt.factor
				}
				return 1
			}
			tu := New(fb, Config{Strategy: "exhaustive", Samples: 5, FinalSamples: 10, Warmup: time.Microsecond, DriftCooldown: time.Second})
			slept := time.Duration(0)
			tu.sleep = func(_ context.Context, d time.Duration) { slept += d }
			res, err := tu.Run(context.Background(), gemvTask(t), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			d := res.Entry.Drift
			if d == nil || d.Events != 1 || d.Settled != 1 || d.Remeasured < 1 || math.Abs(d.MaxPct-100*math.Abs(tt.factor-1)) > 5 {
				t.Fatalf("drift %+v: want one event that settled, near %.0f %%", d, 100*math.Abs(tt.factor-1))
			}
			if d.WaitedS < tt.wait || (tt.wait == 0 && d.WaitedS != 0) || d.WaitedS != slept.Seconds() {
				t.Errorf("waited %v s (slept %v), want at least %v s", d.WaitedS, slept, tt.wait)
			}
		})
	}
}

// A device whose speed keeps changing (a shared machine whose other core
// comes and goes): after maxRedoEvents events the guard records drift but
// measures nothing again, so that it does not spend the budget chasing it.
func TestDriftGuardStopsChasing(t *testing.T) {
	fb := newModel(func(c search.Candidate, shape []int) float64 {
		return float64(shape[1]) * 1e-6 * (1 + 0.1*float64(c["ROWS"]))
	})
	fb.speed = func(search.Candidate) float64 {
		if fb.runs/150%2 == 1 {
			return 1.5
		}
		return 1
	}
	tu := New(fb, Config{Strategy: "exhaustive", Samples: 5, FinalSamples: 10, Warmup: time.Microsecond})
	res, err := tu.Run(context.Background(), gemvTask(t), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	d := res.Entry.Drift
	if d == nil || d.Events <= maxRedoEvents || d.Remeasured > maxRedoEvents*(DefaultDriftEvery+1) {
		t.Fatalf("drift %+v: want more than %d events and at most %d candidates measured again", d, maxRedoEvents, maxRedoEvents*(DefaultDriftEvery+1))
	}
}

// A quiet stretch of the search made six candidates in a row look 0.55 of
// their time, more than the final timing re-times: the screen, which times
// the search's best nine together, sees their real speed, and the truly
// fastest (seventh in the search) goes on to the final timing and wins.
func TestScreenOutlastsAQuietStretch(t *testing.T) {
	truth := search.Candidate{"BN": 16, "ROWS": 4, "UNROLL": 1, "THREADS": 1}
	var lucky map[string]bool
	fb := newModel(func(c search.Candidate, shape []int) float64 {
		us := 110.0
		switch {
		case c.Key() == truth.Key():
			us = 95
		case lucky[c.Key()]:
			us = 105
		}
		return us * 1e-6 * float64(shape[1]) / 300
	})
	seen := map[string]int{}
	fb.speed = func(c search.Candidate) float64 {
		seen[c.Key()]++
		if lucky[c.Key()] && seen[c.Key()] <= 20 { // the search's 10 samples on 2 shapes
			return 0.55
		}
		return 1
	}
	tu := New(fb, Config{Strategy: "exhaustive", Samples: 10, FinalSamples: 20, Warmup: time.Microsecond})
	cands, _ := verifiable(t, tu, gemvTask(t))
	lucky = map[string]bool{}
	for _, c := range cands[40:46] {
		if c.Key() == truth.Key() {
			t.Fatal("the truth is among the lucky")
		}
		lucky[c.Key()] = true
	}
	res, err := tu.Run(context.Background(), gemvTask(t), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := search.Candidate(res.Entry.Params); got.Key() != truth.Key() {
		t.Fatalf("winner %s, want %s (finalists %+v)", got.Key(), truth.Key(), res.Finalists)
	}
	// The search ranked the six lucky ones first: without the screen they
	// alone would have been re-timed.
	nLucky := 0
	for _, f := range res.Finalists {
		if lucky[search.Candidate(f.Params).Key()] {
			nLucky++
			if f.SearchUS > 0.6*f.ScreenUS {
				t.Errorf("lucky %+v: want its search median about 0.55 of the screen's", f)
			}
		}
	}
	if nLucky != len(lucky) {
		t.Errorf("%d of the %d lucky candidates were screened: want all (they lead the search)", nLucky, len(lucky))
	}
}

// With an evaluation budget (no wall time) the guard's cool-down is bounded
// by the entry's own time: it idles at most a fifth of it, so that 3 × 10 s
// of cool-down cannot make a 5-candidate run mostly idle.
func TestDriftGuardCooldownEvaluationBudget(t *testing.T) {
	fb := newModel(func(c search.Candidate, shape []int) float64 {
		return float64(shape[1]) * 1e-6 * (1 + 0.1*float64(c["ROWS"]))
	})
	fb.speed = func(search.Candidate) float64 {
		if fb.runs > 40 {
			return 1.3 // slowed down for good
		}
		return 1
	}
	tu := New(fb, Config{Strategy: "exhaustive", Samples: 5, FinalSamples: 10, Warmup: time.Microsecond, DriftCooldown: 10 * time.Second, DriftEvery: 2, MaxEvals: 5})
	slept := time.Duration(0)
	tu.sleep = func(_ context.Context, d time.Duration) { slept += d }
	start := time.Now()
	res, err := tu.Run(context.Background(), gemvTask(t), NoWallTime)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if d := res.Entry.Drift; d == nil || d.Events == 0 {
		t.Fatalf("drift %+v: want an event", res.Entry.Drift)
	}
	if slept > took/4+time.Millisecond {
		t.Errorf("the guard idled %v in an entry that worked %v: more than a fifth", slept, took)
	}
}
