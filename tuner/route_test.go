package tuner

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kerntune/kerntune/search"
)

// samples draws n timings around median with a relative spread.
func samples(rng *rand.Rand, n int, median, spread float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = median * (1 + spread*rng.NormFloat64())
	}
	return xs
}

// The routing rule on synthetic samples: only a baseline faster beyond
// noise (p < 0.01) and by at least 3 % in median sends the app to it.
func TestUseOf(t *testing.T) {
	tests := []struct {
		name             string
		winner, baseline float64 // medians, µs
		spread           float64 // relative standard deviation of each sample
		n                int
		want             string
		significant      bool // the test alone would route: the 3 % rule decides
	}{
		{"clearly faster baseline (cuBLAS-like)", 208.8, 13.2, 0.02, 30, UseBaseline, false},
		{"baseline 10 % faster", 100, 90, 0.01, 30, UseBaseline, false},
		{"baseline 10 % faster, minimum samples", 100, 90, 0.01, 5, UseBaseline, false},
		{"baseline slower", 100, 150, 0.01, 30, UseTuned, false},
		{"same speed", 100, 100, 0.02, 30, UseTuned, false},
		{"significant but under 3 %", 100, 98.5, 0.002, 30, UseTuned, true},
		{"6 % faster within heavy noise", 100, 94, 0.5, 5, UseTuned, false},
		{"no baseline", 100, 0, 0.01, 30, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 11))
			w := samples(rng, tt.n, tt.winner, tt.spread)
			var b []float64
			if tt.baseline > 0 {
				b = samples(rng, tt.n, tt.baseline, tt.spread)
			}
			c := FasterBeyondNoise(b, w)
			if got := UseOf(w, b); got != tt.want {
				t.Errorf("UseOf = %q, want %q (p = %.3g, gain %.3f)", got, tt.want, c.P, c.Gain)
			}
			if tt.significant && c.P >= NoiseAlpha {
				t.Errorf("p = %.3g: the samples do not exercise the 3 %% rule", c.P)
			}
		})
	}
}

// Per-shape routes: written only when a shape's own samples route it
// otherwise than the entry's use (the lora decode class on the H200: the
// class sum went to cuBLAS, 4×896×896 to the fused kernel).
func TestShapeUses(t *testing.T) {
	// perShape draws n samples of len(medians) shapes each.
	perShape := func(rng *rand.Rand, n int, medians ...float64) [][]float64 {
		out := make([][]float64, n)
		for i := range out {
			for _, m := range medians {
				out[i] = append(out[i], m*(1+0.01*rng.NormFloat64()))
			}
		}
		return out
	}
	rng := rand.New(rand.NewPCG(3, 5))
	for _, tt := range []struct {
		name             string
		winner, baseline []float64 // per-shape medians, µs
		use              string
		want             []string
	}{
		{"the sum to the baseline, one shape to the kernel", []float64{8.3, 23.0}, []float64{15.0, 16.3}, UseBaseline, []string{UseTuned, UseBaseline}},
		{"every shape as the sum: none written", []float64{30, 23.0}, []float64{15.0, 16.3}, UseBaseline, nil},
		{"the kernel everywhere", []float64{8.3, 10}, []float64{15.0, 16.3}, UseTuned, nil},
		{"within noise at one shape: tuned there", []float64{8.3, 16.3}, []float64{15.0, 16.3}, UseBaseline, []string{UseTuned, UseTuned}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, b := perShape(rng, 30, tt.winner...), perShape(rng, 30, tt.baseline...)
			got := shapeUses(w, b, len(tt.winner), tt.use)
			if len(got) != len(tt.want) {
				t.Fatalf("shapeUses = %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("shapeUses = %q, want %q", got, tt.want)
				}
			}
		})
	}
}

func TestFasterBeyondNoise(t *testing.T) {
	fast := []float64{90, 91, 89, 90, 92, 90, 88, 91}
	slow := []float64{100, 101, 99, 100, 102, 100, 98, 101}
	c := FasterBeyondNoise(fast, slow)
	if !c.Faster || c.P >= NoiseAlpha || c.Gain < 0.09 || c.Gain > 0.11 {
		t.Errorf("fast vs slow: %+v", c)
	}
	if c := FasterBeyondNoise(slow, fast); c.Faster || c.Gain > 0 {
		t.Errorf("slow vs fast: %+v", c)
	}
	if c := FasterBeyondNoise(nil, slow); c.Faster || c.P != 1 {
		t.Errorf("no samples: %+v", c)
	}
}

// Run records use from its final timing: the fake baseline costs 150 µs a
// shape (the winner 100 µs) unless baseCost says otherwise.
func TestRunRecordsUse(t *testing.T) {
	for _, tt := range []struct {
		name     string
		baseline bool
		baseCost float64
		want     string
	}{
		{"no baseline", false, 0, ""},
		{"slower baseline", true, 0, UseTuned},
		{"baseline twice as fast", true, 50e-6, UseBaseline},
		{"baseline 1 % faster", true, 99e-6, UseTuned},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), baseline: tt.baseline, baseCost: tt.baseCost, threadsCap: 4}
			res, err := New(fb, Config{Strategy: "exhaustive", FinalSamples: 20, Warmup: time.Microsecond}).Run(context.Background(), gemvTask(t), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if res.Entry.Use != tt.want {
				t.Errorf("use %q, want %q (winner %.1f µs, baseline %+v)", res.Entry.Use, tt.want, res.Entry.MedianUS, res.Entry.Baseline)
			}
		})
	}
}

// The incumbent (the file's parameters) is timed with the winner in the
// final rounds without counting as a measured candidate; parameters that
// cannot run here are reported as invalid.
func TestRunRetimesIncumbent(t *testing.T) {
	winner := map[string]int{"BN": 64, "ROWS": 2, "UNROLL": 2, "THREADS": 2}
	slower := map[string]int{"BN": 32, "ROWS": 2, "UNROLL": 2, "THREADS": 2} // 20 % slower
	tests := []struct {
		name      string
		incumbent map[string]int
		same      bool
		invalid   bool
		faster    bool // the winner beats the incumbent beyond noise
	}{
		{"slower incumbent", slower, false, false, true},
		{"incumbent is the winner", winner, true, false, false},
		{"incumbent breaks a device limit", map[string]int{"BN": 64, "ROWS": 2, "UNROLL": 2, "THREADS": 8}, false, true, false},
		{"incumbent fails verification", map[string]int{"BN": 64, "ROWS": 2, "UNROLL": 4, "THREADS": 2}, false, true, false},
		{"incumbent is the default", nil, false, false, true},
	}
	fb := &fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4}
	base, err := New(fb, Config{Strategy: "exhaustive", FinalSamples: 20, Warmup: time.Microsecond}).Run(context.Background(), gemvTask(t), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := gemvTask(t)
			task.Incumbent = tt.incumbent
			if task.Incumbent == nil {
				task.Incumbent = base.Entry.Default.Params
			}
			fb := &fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4}
			res, err := New(fb, Config{Strategy: "exhaustive", FinalSamples: 20, Warmup: time.Microsecond}).Run(context.Background(), task, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			rt := res.Retiming
			if rt == nil {
				t.Fatal("no retiming for a task with an incumbent")
			}
			if search.Candidate(res.Entry.Params).Key() != search.Candidate(winner).Key() {
				t.Fatalf("winner %v", res.Entry.Params)
			}
			if rt.Same != tt.same || rt.Invalid != tt.invalid || (rt.Err != "") != tt.invalid {
				t.Errorf("retiming same=%v invalid=%v err=%q; want same=%v invalid=%v", rt.Same, rt.Invalid, rt.Err, tt.same, tt.invalid)
			}
			if !tt.invalid && (len(rt.Samples) != 20 || len(rt.WinnerSamples) != 20) {
				t.Errorf("%d incumbent and %d winner samples, want 20 each", len(rt.Samples), len(rt.WinnerSamples))
			}
			if got := FasterBeyondNoise(rt.WinnerSamples, rt.Samples).Faster; got != tt.faster {
				t.Errorf("winner faster than the incumbent: %v, want %v", got, tt.faster)
			}
			// Timing the incumbent does not change what the search saw.
			if res.Entry.Candidates != base.Entry.Candidates || res.Entry.Evaluations != base.Entry.Evaluations {
				t.Errorf("candidates %+v (%d evaluations), without an incumbent %+v (%d)", res.Entry.Candidates, res.Entry.Evaluations, base.Entry.Candidates, base.Entry.Evaluations)
			}
		})
	}
	if base.Retiming != nil {
		t.Errorf("retiming %+v for a task without an incumbent", base.Retiming)
	}
}

// Every program the final rounds time is warmed up first, by the same path:
// the search's candidates, an incumbent the search never measured, and the
// baseline each run once per shape (the warmup's runs of one sample) before
// their first timed samples.
func TestFinalProgramsWarmedAlike(t *testing.T) {
	task := gemvTask(t)
	incumbent := search.Candidate{"BN": 16, "ROWS": 4, "UNROLL": 1, "THREADS": 1}
	task.Incumbent = incumbent
	fb := &fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4, baseline: true, runs: map[string][]int{}}
	res, err := New(fb, Config{Strategy: "random", Seed: 1, MaxEvals: 3, FinalSamples: 10, Warmup: time.Microsecond}).Run(context.Background(), task, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Entry.Baseline == nil || res.Retiming == nil || len(res.Retiming.Samples) == 0 {
		t.Fatalf("baseline %+v, retiming %+v: the test needs both timed", res.Entry.Baseline, res.Retiming)
	}
	for _, m := range res.Trace {
		if m.Key == incumbent.Key() {
			t.Fatalf("the search measured the incumbent %s; the test needs one built for the final timing alone", m.Key)
		}
	}
	shapes := len(task.Cases)
	for _, key := range []string{search.Candidate(res.Entry.Params).Key(), incumbent.Key(), "baseline"} {
		ns := fb.runs[key]
		if len(ns) < shapes+1 {
			t.Errorf("%s: runs %v; want warmup runs, then samples", key, ns)
			continue
		}
		for i, n := range ns[:shapes] {
			if n != 1 {
				t.Errorf("%s: run %d took %d samples before any warmup (runs %v): timed cold", key, i, n, ns)
				break
			}
		}
	}
}

// tune --where narrows the search, not what may run: a file's entry outside
// it is still timed against the narrowed run's winner, so that the better
// of the two is kept (a --where MMA=1 run must not drop a faster MMA=0 entry).
func TestWhereKeepsIncumbentOutside(t *testing.T) {
	best := search.Candidate{"BN": 64, "ROWS": 2, "UNROLL": 2, "THREADS": 2}
	where := search.Constraint{Name: "--where ROWS=4", Check: func(c search.Candidate) error {
		if c["ROWS"] != 4 {
			return errors.New("not ROWS=4")
		}
		return nil
	}}
	task := gemvTask(t)
	task.Incumbent = best
	fb := &fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4}
	res, err := New(fb, Config{Strategy: "exhaustive", FinalSamples: 20, Warmup: time.Microsecond, Where: []search.Constraint{where}}).Run(context.Background(), task, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Entry.Params["ROWS"] != 4 {
		t.Fatalf("winner %v outside --where", res.Entry.Params)
	}
	rt := res.Retiming
	if rt == nil || rt.Invalid {
		t.Fatalf("retiming %+v: the incumbent outside --where must be timed, not refused", rt)
	}
	if len(rt.Samples) != 20 {
		t.Errorf("%d incumbent samples, want 20", len(rt.Samples))
	}
	if !FasterBeyondNoise(rt.Samples, rt.WinnerSamples).Faster {
		t.Errorf("the incumbent %v (ROWS=2) should beat the narrowed winner %v", best, res.Entry.Params)
	}
}
