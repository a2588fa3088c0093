package replay

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/search/ktcache"
)

// synthCache is a 6×6 space, cost growing with distance from (4, 1), where
// every configuration with x=2 failed to compile; samples spread by 1 %.
func synthCache(t *testing.T) *ktcache.Cache { return gridCache(t, 100, 200, 0.01) }

// gridCache is the 6×6 space of synthCache with the given compile times
// (ms) of the valid and the failed configurations and a relative spread of
// the three samples around each time.
func gridCache(t *testing.T, compileMS, failedCompileMS, spread float64) *ktcache.Cache {
	var b strings.Builder
	b.WriteString(`{"tune_params_keys":["x","y"],"tune_params":{"x":[0,1,2,3,4,5],"y":[0,1,2,3,4,5]},"cache":{`)
	for x := 0; x < 6; x++ {
		for y := 0; y < 6; y++ {
			if x+y > 0 {
				b.WriteString(",")
			}
			if x == 2 {
				fmt.Fprintf(&b, `"%d,%d":{"x":%d,"y":%d,"time":"CompilationFailedConfig","compile_time":%g}`, x, y, x, y, failedCompileMS)
				continue
			}
			m := 1 + 0.1*float64((x-4)*(x-4)+(y-1)*(y-1))
			fmt.Fprintf(&b, `"%d,%d":{"x":%d,"y":%d,"time":%g,"times":[%g,%g,%g],"compile_time":%g}`, x, y, x, y, m, m*(1-spread), m, m*(1+spread), compileMS)
		}
	}
	b.WriteString("}}")
	c, err := ktcache.Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestReplaySynthetic(t *testing.T) {
	c := synthCache(t)
	for _, s := range search.Names {
		t.Run(s, func(t *testing.T) {
			bs, err := Run(c, Config{Strategy: s, Budgets: []int{5, 36}, Runs: 4, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(bs) != 2 || bs[0].Evals != 5 || bs[1].Evals != 36 {
				t.Fatalf("budgets %+v", bs)
			}
			for _, b := range bs {
				if b.MeanEvals > float64(b.Evals) || b.SimTimeS < 0.1*b.MeanEvals || b.WorstRatio > b.MeanRatio || b.MeanRatio > 1 {
					t.Errorf("inconsistent %+v", b)
				}
			}
			// With the whole space as budget, the optimum (unique, well
			// separated) is found by every strategy in every run.
			if bs[1].WorstRatio != 1 && s != "halving" && s != "exhaustive" && s != "random" {
				t.Errorf("%s at 36 evaluations: worst ratio %.3f", s, bs[1].WorstRatio)
			}
		})
	}
}

func TestReplayTimeBudget(t *testing.T) {
	c := synthCache(t)
	// Each evaluation costs at least 0.1 s of compile time: 1 s stops a run after ~10.
	bs, err := Run(c, Config{Strategy: "ils", Budgets: []int{36}, BudgetTime: 1e9, Runs: 3, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if bs[0].MeanEvals > 11 || bs[0].SimTimeS > 1.2 {
		t.Errorf("time budget of 1 s: %+v", bs[0])
	}
}

func TestReplaySharedCaches(t *testing.T) {
	dir := os.Getenv("KTDEV_KT_CACHES")
	if dir == "" {
		dir = "../../../shared/testdata/kerneltuner"
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.json.gz"))
	if len(paths) == 0 {
		testutil.SkipUnlessRequired(t, "KTDEV_REQUIRE_KT_CACHES", "no Kernel Tuner caches (set KTDEV_KT_CACHES to their directory)")
	}
	for _, p := range paths {
		c, err := ktcache.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"ils", "racing"} {
			bs, err := Run(c, Config{Strategy: s, Budgets: []int{50}, Runs: 2, Seed: 1})
			if err != nil {
				t.Fatalf("%s %s: %v", filepath.Base(p), s, err)
			}
			if b := bs[0]; b.MeanRatio <= 0 || b.MeanRatio > 1 || b.MeanEvals > 50 {
				t.Errorf("%s %s: %+v", filepath.Base(p), s, b)
			}
		}
	}
}

// TestSummarize checks the ratio statistics against hand-computed values.
func TestSummarize(t *testing.T) {
	cases := []struct {
		name   string
		ratios []float64
		want   Budget
	}{
		{"one run", []float64{0.5}, Budget{MeanRatio: 0.5, WorstRatio: 0.5, MedianRatio: 0.5, P10Ratio: 0.5}},
		{
			// mean 0.75, sample variance ((−.25)²+(.25)²)/1 = 0.125, s.e. √(0.125/2) = 0.25
			"two runs", []float64{1, 0.5},
			Budget{MeanRatio: 0.75, WorstRatio: 0.5, MedianRatio: 0.75, P10Ratio: 0.5, OptimumRate: 0.5, MeanRatioSE: 0.25},
		},
		{
			// 10 runs: the 10th percentile is the lowest (rank ⌈1⌉); 0.9995 counts as the optimum;
			// s.e. = sample standard deviation / √10 (Python statistics.stdev: 0.217256…).
			"ten runs", []float64{0.9, 1, 0.8, 0.9995, 0.7, 0.6, 0.95, 0.9, 0.85, 0.3},
			Budget{MeanRatio: 0.79995, WorstRatio: 0.3, MedianRatio: 0.875, P10Ratio: 0.3, OptimumRate: 0.2, MeanRatioSE: 0.06870227},
		},
		{
			// 20 runs: rank ⌈2⌉, the second lowest; squared deviations sum to 1.0175, s.e. √(1.0175/19/20).
			"twenty runs", append(make([]float64, 0, 20), 0.1, 0.2, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9),
			Budget{MeanRatio: 0.825, WorstRatio: 0.1, MedianRatio: 0.9, P10Ratio: 0.2, MeanRatioSE: 0.05174584},
		},
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b Budget
			b.summarize(c.ratios)
			w := c.want
			if !near(b.MeanRatio, w.MeanRatio) || !near(b.WorstRatio, w.WorstRatio) || !near(b.MedianRatio, w.MedianRatio) ||
				!near(b.P10Ratio, w.P10Ratio) || !near(b.OptimumRate, w.OptimumRate) || !near(b.MeanRatioSE, w.MeanRatioSE) {
				t.Errorf("summarize(%v) = %+v, want %+v", c.ratios, b, w)
			}
		})
	}
}

// flatCache is synthCache's space with every configuration's samples equal
// to its time and compile times of 10 µs, so the time budget goes to samples.
func flatCache(t *testing.T) *ktcache.Cache { return gridCache(t, 0.01, 0.01, 0) }

// The default is measured first and always competes: with one evaluation,
// every strategy ends at the default.
func TestReplayDefaultFirst(t *testing.T) {
	c := flatCache(t)
	best, _ := c.Best()
	for _, def := range []search.Candidate{c.FirstValues(), {"x": 3, "y": 1}} {
		dc, ok := c.Lookup(def)
		if !ok || !dc.Valid {
			t.Fatalf("default %s must be a valid configuration", def.Key())
		}
		for _, s := range search.Names {
			bs, err := Run(c, Config{Strategy: s, Budgets: []int{1}, Runs: 3, Seed: 1, Default: def})
			if err != nil {
				t.Fatal(err)
			}
			if want := best.Time / dc.Time; math.Abs(bs[0].WorstRatio-want) > 1e-12 || bs[0].MeanEvals != 1 {
				t.Errorf("%s, default %s, 1 evaluation: %+v, want every run at ratio %.4f", s, def.Key(), bs[0], want)
			}
		}
	}
}

// With a time budget, halving sizes its first round to the time left after
// the default, from the default's time per sample, as in kerntune tune.
func TestReplayHalvingSizedToTime(t *testing.T) {
	c := flatCache(t)
	def := c.FirstValues()
	dc, _ := c.Lookup(def)
	const budget = 0.2 // seconds
	left := budget - dc.CompileS - 3*dc.Time
	n := len(c.Configs)
	for n > 2 && float64(search.HalvingSamples(n, search.Options{})+n) > left/dc.Time {
		n = n * 4 / 5
	}
	if n < 4 || n >= len(c.Configs)/2 {
		t.Fatalf("sized to %d of %d: the budget does not test the sizing", n, len(c.Configs))
	}
	bs, err := Run(c, Config{Strategy: "halving", Budgets: []int{36}, BudgetTime: budget * 1e9, Runs: 4, Seed: 1, Default: def})
	if err != nil {
		t.Fatal(err)
	}
	if bs[0].MeanEvals != float64(n) || bs[0].SimTimeS > budget {
		t.Errorf("halving in %g s: %+v; want %d configurations, within the budget", budget, bs[0], n)
	}
}
