package tuner

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

// fakeBackend computes outputs with the float64 reference and reports
// synthetic run times with a known optimum, so the pipeline can be tested
// quickly and deterministically. Candidates with UNROLL=8 skip the last
// output element (it stays poisoned) and with UNROLL=4 compute a wrong value.
type fakeBackend struct {
	rng        *rand.Rand
	builds     int
	failBuild  bool
	tooFast    bool
	baseline   bool
	baseCost   float64 // seconds per case of the baseline; default 150 µs
	threadsCap int
	// runs, when set, records the n of every Run by program: a
	// candidate's key, or "baseline".
	runs map[string][]int
	// order, with runs, is the program of every Run in turn.
	order []string
}

func (f *fakeBackend) Info() device.DeviceInfo {
	return device.DeviceInfo{Key: "fake:1", Name: "fake", Backend: "cpu", Family: "fake", ComputeUnits: 2,
		LLCBytes: 1 << 20, PeakFlops: 1e15, PeakBandwidth: 1e13, Facts: map[string]float64{"bandwidth_gbps": 10},
		Limits: device.Limits{Threads: f.threadsCap}}
}

type fakeInst struct {
	p      *kernels.Problem
	copies int
}

func (*fakeInst) Close() error { return nil }

func (f *fakeBackend) Load(p *kernels.Problem, copies int) (device.Instance, error) {
	return &fakeInst{p: p, copies: copies}, nil
}

type fakeProg struct {
	f    *fakeBackend
	c    search.Candidate
	cost float64
}

func (f *fakeBackend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (device.Program, error) {
	f.builds++
	if f.failBuild && c["BN"] == 8 {
		return nil, errors.New("compiler says no")
	}
	// Optimum at BN=64, ROWS=2, UNROLL=2, THREADS=2.
	d := math.Abs(math.Log2(float64(c["BN"])/64)) + math.Abs(float64(c["ROWS"]-2)) +
		math.Abs(math.Log2(float64(c["UNROLL"])/2)) + math.Abs(math.Log2(float64(c["THREADS"])/2))
	return &fakeProg{f: f, c: c, cost: 100e-6 * (1 + 0.2*d)}, nil
}

func (f *fakeBackend) Baseline(*kernels.Kernel, kernels.DType) (device.Program, string, error) {
	if !f.baseline {
		return nil, "", nil
	}
	cost := 150e-6
	if f.baseCost > 0 {
		cost = f.baseCost
	}
	return &fakeProg{f: f, cost: cost}, "vendor", nil
}

func (*fakeBackend) Close() error { return nil }

func (p *fakeProg) Run(ti device.Instance, n int) ([]float64, error) {
	if p.f.runs != nil {
		key := "baseline"
		if p.c != nil {
			key = p.c.Key()
		}
		p.f.runs[key] = append(p.f.runs[key], n)
		p.f.order = append(p.f.order, key)
	}
	ts := make([]float64, n)
	for i := range ts {
		ts[i] = p.cost * (1 + 0.01*p.f.rng.NormFloat64())
		if p.f.tooFast {
			ts[i] = 1e-15
		}
	}
	return ts, nil
}

func (p *fakeProg) Output(ti device.Instance) ([]float32, error) {
	inst := ti.(*fakeInst)
	ref := inst.p.Reference()
	out := make([]float32, len(ref))
	for i, v := range ref {
		out[i] = float32(v)
	}
	switch p.c["UNROLL"] {
	case 8:
		out[len(out)-1] = float32(math.NaN())
	case 4:
		out[0] += 1
	}
	return out, nil
}

func (*fakeProg) Close() error { return nil }

func gemvTask(t *testing.T) Task {
	t.Helper()
	k, err := kernels.Get("gemv_nt")
	if err != nil {
		t.Fatal(err)
	}
	return Task{Kernel: k, DType: kernels.F32, Cases: []kernels.Case{{Shape: []int{1, 300, 200}}, {Shape: []int{1, 129, 77}, Options: []string{kernels.Bias}}}, Class: "tiny"}
}

func TestRunFindsOptimumAndRecordsFailures(t *testing.T) {
	for _, strategy := range search.Names {
		t.Run(strategy, func(t *testing.T) {
			fb := &fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), baseline: true, threadsCap: 4, failBuild: true}
			tu := New(fb, Config{Strategy: strategy, Seed: 3, FinalSamples: 20, Warmup: time.Microsecond})
			res, err := tu.Run(context.Background(), gemvTask(t), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			e := res.Entry
			want := search.Candidate{"BN": 64, "ROWS": 2, "UNROLL": 2, "THREADS": 2}
			if search.Candidate(e.Params).Key() != want.Key() {
				t.Errorf("winner %v, want %v", e.Params, want)
			}
			if e.Samples != 20 || e.MedianUS < 190 || e.MedianUS > 210 {
				t.Errorf("winner timing %v µs over %d samples, want ≈200 (two cases) over 20", e.MedianUS, e.Samples)
			}
			if len(e.ShapeMedianUS) != 2 || e.Default == nil || e.Default.MedianUS <= e.MedianUS {
				t.Errorf("per-shape or default timing missing or wrong: %+v %+v", e.ShapeMedianUS, e.Default)
			}
			if e.Baseline == nil || e.Baseline.Name != "vendor" || math.Abs(e.Baseline.MedianUS-300) > 15 {
				t.Errorf("baseline %+v", e.Baseline)
			}
			// 4 BN... × ... with THREADS ≤ 4: the space is BN(7)·ROWS(3)·UNROLL(4)·THREADS(3).
			if e.Candidates.Valid != 7*3*4*3 {
				t.Errorf("valid = %d", e.Candidates.Valid)
			}
			if e.Candidates.Failed == 0 || e.Candidates.Measured == 0 {
				t.Errorf("candidates %+v: failing ones must be recorded", e.Candidates)
			}
			for _, m := range res.Trace {
				c, _ := search.ParseKey(m.Key)
				bad := c["UNROLL"] >= 4 || c["BN"] == 8
				if bad != (m.Err != "") {
					t.Errorf("%s: error %q, expected failure %v", m.Key, m.Err, bad)
				}
				if c["UNROLL"] == 8 && c["BN"] != 8 && !strings.Contains(m.Err, "not finite") {
					t.Errorf("%s: unwritten output not reported as such: %q", m.Key, m.Err)
				}
				if c["THREADS"] > 4 {
					t.Errorf("%s violates the device constraint", m.Key)
				}
			}
			if e.Roofline == nil || e.Roofline.Bytes <= 0 || e.Roofline.Flops <= 0 {
				t.Errorf("roofline %+v", e.Roofline)
			}
		})
	}
}

func TestRunRejectsImpossiblyFastTimes(t *testing.T) {
	fb := &fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 2, tooFast: true}
	_, err := New(fb, Config{Strategy: "random", Warmup: time.Microsecond}).Run(context.Background(), gemvTask(t), time.Minute)
	if err == nil || !strings.Contains(err.Error(), "physical floor") {
		t.Fatalf("times below the physical floor were accepted: %v", err)
	}
}

func TestRunStopsAtBudgetAndOnCancel(t *testing.T) {
	fb := &fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := New(fb, Config{Strategy: "exhaustive", Warmup: time.Microsecond}).Run(ctx, gemvTask(t), time.Minute)
	// The default was measured before the strategy began, so a winner exists.
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "interrupted" || res.Entry.Candidates.Measured != 1 {
		t.Errorf("stopped %q with %d measured", res.Stopped, res.Entry.Candidates.Measured)
	}
}

func TestClassTasksCoverWorkload(t *testing.T) {
	for _, k := range kernels.All() {
		tasks, err := ClassTasks(k, kernels.F32)
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) != len(k.TunedClasses()) {
			t.Errorf("%s: %d class tasks for %d classes: every class needs a workload shape", k.Name, len(tasks), len(k.TunedClasses()))
		}
		n := 0
		for _, task := range tasks {
			n += len(task.Cases)
			if !strings.HasPrefix(task.Key(), "f32/") {
				t.Errorf("key %q", task.Key())
			}
		}
		if n != len(k.Workload) {
			t.Errorf("%s: tasks hold %d cases, workload has %d", k.Name, n, len(k.Workload))
		}
	}
}

// Progress events come after each measurement: a measured candidate's event
// carries its median, a failed one its reason, and the counts only grow.
func TestProgressEventsFollowMeasurements(t *testing.T) {
	fb := &fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4, failBuild: true}
	var evs []Event
	tu := New(fb, Config{Strategy: "exhaustive", Samples: 3, FinalSamples: 5, Warmup: time.Microsecond,
		Progress: func(e Event) { evs = append(evs, e) }})
	res, err := tu.Run(context.Background(), gemvTask(t), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 {
		t.Fatal("no progress event")
	}
	measured, failed := 0, 0
	for i, e := range evs {
		if (e.MedianUS > 0) == (e.Err != "") {
			t.Fatalf("event %d for %s: median %v and error %q; want exactly one", i, e.Candidate, e.MedianUS, e.Err)
		}
		if e.Measured < measured || e.Failed < failed || e.Valid != res.Entry.Candidates.Valid {
			t.Fatalf("event %d: counts %d/%d of %d went back from %d/%d", i, e.Measured, e.Failed, e.Valid, measured, failed)
		}
		measured, failed = e.Measured, e.Failed
	}
	last := evs[len(evs)-1]
	if last.Measured != res.Entry.Candidates.Measured || last.Failed != res.Entry.Candidates.Failed || last.BestUS <= 0 {
		t.Errorf("last event %+v; entry candidates %+v", last, res.Entry.Candidates)
	}
}

// Config.Where narrows the space: only candidates it admits are valid and
// measured, and the entry counts the narrowed space.
func TestWhereNarrowsSpace(t *testing.T) {
	fb := &fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4}
	where := search.Constraint{Name: "--where ROWS=2", Check: func(c search.Candidate) error {
		if c["ROWS"] != 2 {
			return errors.New("not ROWS=2")
		}
		return nil
	}}
	tu := New(fb, Config{Strategy: "exhaustive", Seed: 3, FinalSamples: 5, Warmup: time.Microsecond, Where: []search.Constraint{where}})
	res, err := tu.Run(context.Background(), gemvTask(t), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Entry.Candidates.Valid; got != 7*4*3 {
		t.Errorf("valid = %d, want %d (one ROWS value of three)", got, 7*4*3)
	}
	for _, m := range res.Trace {
		if c, _ := search.ParseKey(m.Key); c["ROWS"] != 2 {
			t.Errorf("%s measured although --where excludes it", m.Key)
		}
	}
	if res.Entry.Params["ROWS"] != 2 {
		t.Errorf("winner %v", res.Entry.Params)
	}
}

// The entry records the strategy by its canonical name: the default one
// when none is configured, warm for its alias "default".
func TestRunRecordsCanonicalStrategy(t *testing.T) {
	for _, tc := range []struct{ strategy, want string }{{"", search.DefaultStrategy}, {"default", "warm"}, {"ils", "ils"}} {
		fb := &fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4}
		res, err := New(fb, Config{Strategy: tc.strategy, Seed: 1, FinalSamples: 5, MaxEvals: 4, Warmup: time.Microsecond}).Run(context.Background(), gemvTask(t), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if res.Entry.Strategy != tc.want || res.Entry.Evaluations != 4 || res.Entry.Stopped != "evaluation budget spent" {
			t.Errorf("strategy %q: entry records %q, %d evaluations, stopped %q; want %q, 4, evaluation budget spent", tc.strategy, res.Entry.Strategy, res.Entry.Evaluations, res.Entry.Stopped, tc.want)
		}
	}
}

// wrap builds with the fake backend and wraps its program, for test
// backends that change how a fake program runs.
func (b *fakeBackend) wrap(k *kernels.Kernel, dt kernels.DType, c search.Candidate, wrap func(*fakeProg) device.Program) (device.Program, error) {
	p, err := b.Build(k, dt, c)
	if err != nil {
		return nil, err
	}
	return wrap(p.(*fakeProg)), nil
}

// rowsBackend runs softmax by its float64 reference, with a bug on large
// outputs chosen by the candidate's UNROLL: 2 leaves one element of a
// middle row unwritten, 4 gets the last row wrong. Its programs return samples of large outputs
// (SampledOutputer), as worker programs do, and count what they returned.
type rowsBackend struct {
	fakeBackend
	whole, sampled map[int]int // outputs returned in full / as samples, by output length
}

type rowsProg struct {
	fakeProg
	b *rowsBackend
}

func (b *rowsBackend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (device.Program, error) {
	return &rowsProg{fakeProg: fakeProg{f: &b.fakeBackend, c: c, cost: 1e-3 * (1 + 0.1*float64(c["ROWS"]))}, b: b}, nil
}

func (p *rowsProg) output(ti device.Instance) []float32 {
	inst := ti.(*fakeInst)
	ref := inst.p.Reference()
	out := make([]float32, len(ref))
	for i, v := range ref {
		out[i] = float32(v)
	}
	cols := inst.p.Case.Shape[1]
	if len(out) <= kernels.FullVerifyMax {
		return out // bugs that show only at scale
	}
	switch p.c["UNROLL"] {
	case 2:
		mid := len(out) / cols / 2
		out[mid*cols+cols/3] = float32(math.NaN())
	case 4:
		for i := len(out) - cols; i < len(out); i++ {
			out[i] *= 3
		}
	}
	return out
}

func (p *rowsProg) Output(ti device.Instance) ([]float32, error) {
	out := p.output(ti)
	p.b.whole[len(out)]++
	return out, nil
}

func (p *rowsProg) OutputSample(ti device.Instance, s kernels.RowSample) ([]float32, int, int, error) {
	out := p.output(ti)
	p.b.sampled[len(out)]++
	rows, bad := s.Extract(out)
	return rows, bad, len(out), nil
}

// A large shape is verified on a sample of rows through OutputSample, the
// odd shapes in full; a candidate that leaves an element unwritten outside
// the sample, or gets the last row wrong, fails all the same.
func TestRunVerifiesLargeOutputsOnSamples(t *testing.T) {
	k, err := kernels.Get("softmax")
	if err != nil {
		t.Fatal(err)
	}
	large := []int{2048, 1024} // 2M elements: sampled
	task := Task{Kernel: k, DType: kernels.F32, Cases: []kernels.Case{{Shape: large}}}
	b := &rowsBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4}, whole: map[int]int{}, sampled: map[int]int{}}
	res, err := New(b, Config{Strategy: "exhaustive", Samples: 3, FinalSamples: 5, Warmup: time.Microsecond}).Run(context.Background(), task, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	n := large[0] * large[1]
	if b.whole[n] != 0 || b.sampled[n] != len(res.Trace) {
		t.Errorf("large output returned whole %d times and as samples %d times, want 0 and %d (one per candidate)", b.whole[n], b.sampled[n], len(res.Trace))
	}
	odd := 0
	for size, c := range b.whole {
		if size <= kernels.FullVerifyMax {
			odd += c
		}
	}
	if odd == 0 {
		t.Error("no odd shape was verified in full")
	}
	failed := 0
	for _, m := range res.Trace {
		c, _ := search.ParseKey(m.Key)
		switch c["UNROLL"] {
		case 2:
			if !strings.Contains(m.Err, "not finite") || !strings.Contains(m.Err, "2048x1024") {
				t.Errorf("%s: an element unwritten outside the sample: %q", m.Key, m.Err)
			}
		case 4:
			if !strings.Contains(m.Err, "exceeds") || !strings.Contains(m.Err, "sampled rows") {
				t.Errorf("%s: a wrong last row: %q", m.Key, m.Err)
			}
		default:
			if m.Err != "" {
				t.Errorf("%s: a correct candidate failed: %s", m.Key, m.Err)
			}
		}
		if m.Err != "" {
			failed++
		}
	}
	if failed == 0 || res.Entry.Candidates.Failed != failed {
		t.Errorf("%d failures in the trace, %d in the entry", failed, res.Entry.Candidates.Failed)
	}

	// With VerifyFull the large output comes back whole, and both wrong
	// candidates still fail.
	b = &rowsBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4}, whole: map[int]int{}, sampled: map[int]int{}}
	res, err = New(b, Config{Strategy: "exhaustive", Samples: 3, FinalSamples: 5, Warmup: time.Microsecond, VerifyFull: true}).Run(context.Background(), task, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if b.sampled[n] != 0 || b.whole[n] < len(res.Trace) {
		t.Errorf("with VerifyFull: large output returned whole %d times and as samples %d times, want at least %d and 0", b.whole[n], b.sampled[n], len(res.Trace))
	}
	for _, m := range res.Trace {
		c, _ := search.ParseKey(m.Key)
		if bad := c["UNROLL"] == 2 || c["UNROLL"] == 4; bad != (m.Err != "") {
			t.Errorf("with VerifyFull, %s: error %q", m.Key, m.Err)
		}
	}
}
