// Package replay runs search strategies against recorded Kernel Tuner
// caches instead of a device: measuring a configuration draws timing samples
// (with replacement, seeded) from its recorded samples, a configuration
// recorded as failed fails, and the simulated measurement time is the sum
// of the samples drawn plus the recorded compile time of every configuration
// measured for the first time.
package replay

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/kerntune/kerntune/internal/ktcache"
	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/search"
	"gonum.org/v1/gonum/stat"
)

// DefaultCompileS is the compile time charged for a configuration whose
// cache records none.
const DefaultCompileS = 1.0

// Config is one replay experiment.
type Config struct {
	Strategy string
	// Budgets are evaluation budgets: the number of distinct configurations
	// a run may measure (each built once, failures included).
	Budgets []int
	// BudgetTime, when positive, also stops a run once its simulated
	// measurement time reaches it.
	BudgetTime time.Duration
	Runs       int
	Seed       uint64
	// Options are passed to the strategy; Seed, MaxCandidates and Keep are
	// set per run.
	Options search.Options
	// Warm are warm-start configurations (measured first, Keep), e.g. the
	// best configurations of the same kernel on sibling devices.
	Warm []search.Candidate
}

// Budget is the outcome of Runs runs at one evaluation budget.
type Budget struct {
	Evals      int     `json:"evals"`
	MeanRatio  float64 `json:"mean_ratio"`
	WorstRatio float64 `json:"worst_ratio"`
	SimTimeS   float64 `json:"sim_time_s"` // mean over runs
	// MeanEvals is the mean number of configurations measured.
	MeanEvals float64 `json:"mean_evals"`
	// MeanRatioSE is the standard error of MeanRatio over the runs: two
	// strategies whose mean ratios differ by less than about twice it are
	// not told apart by this many runs.
	MeanRatioSE float64 `json:"mean_ratio_se"`
	// MedianRatio and P10Ratio are the median and the 10th percentile
	// (nearest rank) of the runs' ratios: how a typical and an unlucky run end.
	MedianRatio float64 `json:"median_ratio"`
	P10Ratio    float64 `json:"p10_ratio"`
	// OptimumRate is the fraction of runs that picked a configuration within
	// 0.1 % of the fastest recorded time (ratio ≥ 0.999).
	OptimumRate float64 `json:"optimum_rate"`
}

// optimumRatio is the ratio from which a run counts as having found the optimum.
const optimumRatio = 0.999

// summarize fills b's ratio statistics from the runs' ratios.
func (b *Budget) summarize(ratios []float64) {
	n := float64(len(ratios))
	s := append([]float64(nil), ratios...)
	sort.Float64s(s)
	hits := 0
	for _, r := range s {
		if r >= optimumRatio {
			hits++
		}
	}
	b.OptimumRate = float64(hits) / n
	b.WorstRatio = s[0]
	var sd float64
	b.MeanRatio, sd = stat.MeanStdDev(s, nil) // sample (n−1) deviation
	if len(s) > 1 {
		b.MeanRatioSE = sd / math.Sqrt(n)
	}
	b.MedianRatio = stats.Median(s)
	b.P10Ratio = s[max(0, int(math.Ceil(0.1*n))-1)]
}

// Run replays cfg.Strategy on cache c at every budget.
func Run(c *ktcache.Cache, cfg Config) ([]Budget, error) {
	if cfg.Runs <= 0 {
		return nil, fmt.Errorf("runs must be positive, got %d", cfg.Runs)
	}
	best, ok := c.Best()
	if !ok {
		return nil, fmt.Errorf("%s: no valid configuration", c.Path)
	}
	pool := c.Candidates()
	keep := 0
	if len(cfg.Warm) > 0 {
		var warm []search.Candidate
		seen := map[string]bool{}
		for _, w := range cfg.Warm {
			if cw, ok := c.Lookup(w); ok && !seen[w.Key()] {
				seen[w.Key()] = true
				warm = append(warm, cw.Candidate)
			}
		}
		rest := make([]search.Candidate, 0, len(pool))
		for _, p := range pool {
			if !seen[p.Key()] {
				rest = append(rest, p)
			}
		}
		keep = len(warm)
		pool = append(warm, rest...)
	}
	var out []Budget
	for _, n := range cfg.Budgets {
		if n <= 0 {
			return nil, fmt.Errorf("evaluation budget must be positive, got %d", n)
		}
		b := Budget{Evals: n}
		ratios := make([]float64, 0, cfg.Runs)
		for run := 0; run < cfg.Runs; run++ {
			seed := cfg.Seed + uint64(run)*0x9e3779b9
			opts := cfg.Options
			opts.Seed, opts.MaxCandidates, opts.Keep = seed, n, keep
			st, err := search.New(cfg.Strategy, pool, opts)
			if err != nil {
				return nil, err
			}
			found, sim, evals := simulate(c, st, n, cfg.BudgetTime.Seconds(), seed)
			ratio := 0.0
			if found != nil {
				ratio = best.Time / found.Time
			}
			ratios = append(ratios, ratio)
			b.SimTimeS += sim / float64(cfg.Runs)
			b.MeanEvals += float64(evals) / float64(cfg.Runs)
		}
		b.summarize(ratios)
		out = append(out, b)
	}
	return out, nil
}

// simulate drives st against the cache until it finishes, would exceed
// maxEvals distinct configurations, or spends maxTime simulated seconds (0:
// no limit). It returns the configuration st picks (nil when none), the
// simulated time and the number of configurations measured.
func simulate(c *ktcache.Cache, st search.Strategy, maxEvals int, maxTime float64, seed uint64) (*ktcache.Config, float64, int) {
	rng := rand.New(rand.NewPCG(seed, 0x2545f4914f6cdd1d))
	measured := map[string]bool{}
	sim := 0.0
loop:
	for reqs := st.Next(); reqs != nil; reqs = st.Next() {
		for _, req := range reqs {
			if maxTime > 0 && sim >= maxTime {
				break loop
			}
			k := req.Candidate.Key()
			cfg, ok := c.Lookup(req.Candidate)
			if !ok {
				st.Tell(search.Result{Candidate: req.Candidate, Err: fmt.Errorf("configuration %s is not in the cache", k)})
				continue
			}
			if !measured[k] {
				if len(measured) >= maxEvals {
					break loop
				}
				measured[k] = true
				if cfg.CompileS > 0 {
					sim += cfg.CompileS
				} else {
					sim += DefaultCompileS
				}
			}
			if !cfg.Valid {
				st.Tell(search.Result{Candidate: req.Candidate, Err: fmt.Errorf("recorded failure: %s", cfg.Failure)})
				continue
			}
			s := make([]float64, req.Samples)
			for i := range s {
				s[i] = cfg.Times[rng.IntN(len(cfg.Times))]
				sim += s[i]
			}
			st.Tell(search.Result{Candidate: req.Candidate, Samples: s})
		}
	}
	cand, _, ok := st.Best()
	if !ok {
		return nil, sim, len(measured)
	}
	cfg, _ := c.Lookup(cand)
	return cfg, sim, len(measured)
}
