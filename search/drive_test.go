package search

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
)

// call is one Measure call: the candidate's key and the samples asked for.
type call struct {
	key string
	n   int
}

// line is a 1-D pool x=0..n-1 whose time per sample grows with x; the
// candidates in fail fail.
func line(n int) []Candidate {
	out := make([]Candidate, n)
	for i := range out {
		out[i] = Candidate{"x": i}
	}
	return out
}

func key(x int) string { return Candidate{"x": x}.Key() }

// recorder is a Measure that logs its calls.
type recorder struct {
	calls []call
	fail  map[int]bool
}

func (r *recorder) measure(c Candidate, n int) ([]float64, error) {
	r.calls = append(r.calls, call{c.Key(), n})
	if r.fail[c["x"]] {
		return nil, errors.New("does not build")
	}
	s := make([]float64, n)
	for i := range s {
		s[i] = 1e-3 * float64(1+c["x"])
	}
	return s, nil
}

// TestDriverOrder checks what is measured first: the default (calibration,
// then as the strategy's first candidate), the warm starts in the pool,
// then the rest in pool order (exhaustive keeps the pool's order).
func TestDriverOrder(t *testing.T) {
	budget := func(float64) float64 { return math.Inf(1) }
	tests := []struct {
		name    string
		def     Candidate
		warm    []Candidate
		budget  func(float64) float64
		fail    map[int]bool
		want    []call
		perSamp float64
	}{
		{name: "no default, no budget: no calibration",
			want: []call{{key(0), 2}, {key(1), 2}, {key(2), 2}, {key(3), 2}}},
		{name: "default first, calibrated with 3 samples", def: Candidate{"x": 2},
			want: []call{{key(2), 3}, {key(2), 2}, {key(0), 2}, {key(1), 2}, {key(3), 2}}, perSamp: 3e-3},
		{name: "warm starts after the default; duplicates and strangers dropped", def: Candidate{"x": 2},
			warm: []Candidate{{"x": 3}, {"x": 2}, {"x": 9}, {"x": 3}, {"x": 0, "y": 1}},
			want: []call{{key(2), 3}, {key(2), 2}, {key(3), 2}, {key(0), 2}, {key(1), 2}}, perSamp: 3e-3},
		{name: "default outside the pool is ignored", def: Candidate{"x": 7},
			want: []call{{key(0), 2}, {key(1), 2}, {key(2), 2}, {key(3), 2}}},
		{name: "with a budget and no default the first candidate that builds calibrates",
			budget: budget, fail: map[int]bool{0: true},
			want:    []call{{key(0), 3}, {key(1), 3}, {key(0), 2}, {key(1), 2}, {key(2), 2}, {key(3), 2}},
			perSamp: 2e-3},
		{name: "a default that fails: the budget calibrates on the pool", def: Candidate{"x": 3}, budget: budget, fail: map[int]bool{3: true},
			want:    []call{{key(3), 3}, {key(0), 3}, {key(3), 2}, {key(0), 2}, {key(1), 2}, {key(2), 2}},
			perSamp: 1e-3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{fail: tc.fail}
			var got float64
			d := Driver{Strategy: "exhaustive", Options: Options{Samples: 2}, Pool: line(4), Default: tc.def, Warm: tc.warm, Target: MeasureFunc(r.measure)}
			if tc.budget != nil {
				d.Target = withCalibrated{MeasureFunc(r.measure), func(s float64) float64 { got = s; return tc.budget(s) }}
			}
			out, err := d.Run()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.calls, tc.want) {
				t.Errorf("calls %v, want %v", r.calls, tc.want)
			}
			if out.PerSample != tc.perSamp || (tc.budget != nil && got != tc.perSamp) {
				t.Errorf("per sample %g (budget saw %g), want %g", out.PerSample, got, tc.perSamp)
			}
			if out.Stopped != "" || out.Evals != 4 {
				t.Errorf("outcome %+v: want all 4 evaluated, not stopped", out)
			}
			want := key(0)
			if tc.fail[0] {
				want = key(1)
			}
			if out.Best.Key() != want {
				t.Errorf("best %v, want %s", out.Best, want)
			}
		})
	}
}

// TestDriverStops checks the evaluation budget, a Stop reason, and the
// fallback to the calibration's measurement when the strategy measured nothing.
func TestDriverStops(t *testing.T) {
	t.Run("evaluation budget", func(t *testing.T) {
		r := &recorder{}
		// racing asks for one candidate at a time, so the cap is reached mid-search.
		out, err := Driver{Strategy: "racing", Options: Options{Seed: 1}, Pool: line(20), Default: Candidate{"x": 5}, MaxEvals: 6, Target: MeasureFunc(r.measure)}.Run()
		if err != nil {
			t.Fatal(err)
		}
		if out.Evals != 6 || out.Stopped != "evaluation budget spent" {
			t.Errorf("outcome %+v, want 6 evaluations and the evaluation budget spent", out)
		}
		distinct := map[string]bool{}
		for _, c := range r.calls {
			distinct[c.key] = true
		}
		if len(distinct) != 6 {
			t.Errorf("%d distinct candidates measured, want 6", len(distinct))
		}
	})
	t.Run("stop at once", func(t *testing.T) {
		r := &recorder{}
		asked := 0
		out, err := Driver{Strategy: "bo", Pool: line(20), Default: Candidate{"x": 7},
			Target: withStop{MeasureFunc(r.measure), func(Request) string { asked++; return "interrupted" }}}.Run()
		if err != nil {
			t.Fatal(err)
		}
		if asked != 1 || out.Stopped != "interrupted" || out.Evals != 1 || out.Best.Key() != key(7) {
			t.Errorf("outcome %+v after %d Stop calls: want the calibrated default as best", out, asked)
		}
		if !slices.Equal(r.calls, []call{{key(7), 3}}) {
			t.Errorf("calls %v, want only the calibration", r.calls)
		}
	})
	t.Run("nothing measurable", func(t *testing.T) {
		r := &recorder{fail: map[int]bool{0: true, 1: true, 2: true}}
		out, err := Driver{Strategy: "exhaustive", Pool: line(3), Target: MeasureFunc(r.measure)}.Run()
		if err != nil {
			t.Fatal(err)
		}
		if out.Best != nil || out.Evals != 3 {
			t.Errorf("outcome %+v, want no best after 3 failures", out)
		}
	})
	t.Run("unknown strategy measures nothing", func(t *testing.T) {
		r := &recorder{}
		if _, err := (Driver{Strategy: "magic", Pool: line(3), Default: Candidate{"x": 0}, Target: MeasureFunc(r.measure)}).Run(); err == nil || len(r.calls) != 0 {
			t.Errorf("err %v after %d calls", err, len(r.calls))
		}
	})
}

// TestDriverSizesHalving checks that a Sizer is fitted to the budget the
// caller reports after the calibration, and that Plan can replace the size.
func TestDriverSizesHalving(t *testing.T) {
	const perSample = 1e-3
	pool := line(500)
	for _, tc := range []struct {
		seconds float64
		plan    int // 0: keep the driver's size
	}{{0.5, 0}, {2, 0}, {5, 0}, {1e6, 0}, {-1, 0}, {2, 17}} {
		t.Run(fmt.Sprint(tc.seconds, "s plan ", tc.plan), func(t *testing.T) {
			var calls []call
			measure := func(c Candidate, n int) ([]float64, error) {
				calls = append(calls, call{c.Key(), n})
				s := make([]float64, n)
				for i := range s {
					s[i] = perSample
				}
				return s, nil
			}
			sized := -1
			d := Driver{Strategy: "halving", Pool: pool, Default: Candidate{"x": 250}, Target: withPlan{
				withCalibrated{MeasureFunc(measure), func(s float64) float64 {
					if s != perSample {
						t.Errorf("budget called with %g s per sample, want %g", s, perSample)
					}
					return tc.seconds
				}},
				func(n int) int {
					sized = n
					if tc.plan > 0 {
						return tc.plan
					}
					return n
				}}}
			if _, err := d.Run(); err != nil {
				t.Fatal(err)
			}
			// The expected size, from the rule halving documents.
			want := len(pool)
			for want > 2 && float64(HalvingSamples(want, Options{})+want)*perSample > tc.seconds {
				want = want * 4 / 5
			}
			if sized != want {
				t.Errorf("size %d, want %d", sized, want)
			}
			first := map[string]bool{}
			samples := 0
			for _, c := range calls[1:] { // after the calibration
				samples += c.n
				if c.n == 3 {
					first[c.key] = true
				}
			}
			n := want
			if tc.plan > 0 {
				n = tc.plan
			}
			if len(first) != n || !first[key(250)] {
				t.Errorf("first round of %d candidates (default in it: %v), want %d", len(first), first[key(250)], n)
			}
			if tc.plan == 0 && n > 2 && float64(samples+n)*perSample > tc.seconds {
				t.Errorf("the search took %d samples, more than its %g s", samples, tc.seconds)
			}
		})
	}
}

func TestDriverPrefetchesFreshCandidates(t *testing.T) {
	r := &recorder{}
	var batches [][]string
	_, err := Driver{Strategy: "halving", Pool: line(9), Default: Candidate{"x": 4}, Target: withPrefetch{MeasureFunc(r.measure),
		func(fresh []Candidate) {
			var ks []string
			for _, c := range fresh {
				ks = append(ks, c.Key())
			}
			batches = append(batches, ks)
		}}}.Run()
	if err != nil {
		t.Fatal(err)
	}
	// The first batch is every candidate but the calibrated default; later
	// rounds re-measure survivors, which are not fresh.
	if len(batches) < 2 || len(batches[0]) != 8 || slices.Contains(batches[0], key(4)) {
		t.Fatalf("prefetched %v", batches)
	}
	for _, b := range batches[1:] {
		if len(b) != 0 {
			t.Errorf("later batch prefetched %v", b)
		}
	}
}

// FirstAsks names what Run measures first, in its order, and measures
// nothing itself.
func TestFirstAsks(t *testing.T) {
	for _, strategy := range []string{"exhaustive", "bo", "racing"} {
		t.Run(strategy, func(t *testing.T) {
			r := &recorder{}
			d := Driver{Strategy: strategy, Options: Options{Seed: 3}, Pool: line(40), Default: Candidate{"x": 7},
				Warm: []Candidate{{"x": 30}}, Batch: 4, Target: MeasureFunc(r.measure)}
			asks := d.FirstAsks(6)
			if len(r.calls) != 0 {
				t.Fatalf("FirstAsks measured %v", r.calls)
			}
			if len(asks) == 0 || len(asks) > 6 || asks[0].Key() != key(7) || asks[1].Key() != key(30) {
				t.Fatalf("asks %v: want the default, the warm start, then the strategy's", asks)
			}
			if _, err := d.Run(); err != nil {
				t.Fatal(err)
			}
			// Every ask is measured, and the first ones in the order given:
			// the calibration, then the strategy's first batch.
			measured := map[string]bool{}
			for _, c := range r.calls {
				measured[c.key] = true
			}
			for _, a := range asks {
				if !measured[a.Key()] {
					t.Errorf("asked %s, never measured (calls %v)", a.Key(), r.calls)
				}
			}
			if r.calls[0].key != key(7) {
				t.Errorf("first measured %s, want the default", r.calls[0].key)
			}
		})
	}
}
