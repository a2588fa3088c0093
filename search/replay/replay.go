package replay

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/search/ktcache"
	"gonum.org/v1/gonum/stat"
)

// DefaultCompileS is the compile time charged for a configuration whose
// cache records none.
const DefaultCompileS = 1.0

// Config is one replay experiment.
type Config struct {
	// Strategy names the strategy (search.DefaultStrategy when empty).
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
	// Default stands for the kernel's un-tuned configuration, which Kernel
	// Tuner caches do not record (nil: none, as in Kernel Tuner's
	// simulation mode). As in kerntune tune it is measured first and always
	// competes; one not in the cache is ignored.
	Default search.Candidate
	// Warm are warm-start configurations (measured right after the
	// default, Keep), e.g. the best configurations of the same kernel on
	// sibling devices.
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
	var out []Budget
	for _, n := range cfg.Budgets {
		if n <= 0 {
			return nil, fmt.Errorf("evaluation budget must be positive, got %d", n)
		}
		b := Budget{Evals: n}
		ratios := make([]float64, 0, cfg.Runs)
		for run := 0; run < cfg.Runs; run++ {
			seed := cfg.Seed + uint64(run)*0x9e3779b9
			m := &cacheMeasure{c: c, rng: rand.New(rand.NewPCG(seed, 0x2545f4914f6cdd1d)), built: map[string]bool{}}
			opts := cfg.Options
			opts.Seed = seed
			d := search.Driver{
				Strategy: cfg.Strategy, Options: opts, Pool: pool,
				Default: cfg.Default, Warm: cfg.Warm, MaxEvals: n, Target: search.MeasureFunc(m.measure),
			}
			if limit := cfg.BudgetTime.Seconds(); limit > 0 {
				d.Target = timed{m: m, limit: limit}
			}
			res, err := d.Run()
			if err != nil {
				return nil, err
			}
			ratio := 0.0
			if res.Best != nil {
				if found, ok := c.Lookup(res.Best); ok && found.Valid {
					ratio = best.Time / found.Time
				}
			}
			ratios = append(ratios, ratio)
			b.SimTimeS += m.sim / float64(cfg.Runs)
			b.MeanEvals += float64(res.Evals) / float64(cfg.Runs)
		}
		b.summarize(ratios)
		out = append(out, b)
	}
	return out, nil
}

// cacheMeasure is the measure function of a replay: it reads the cache and
// keeps the simulated measurement time.
type cacheMeasure struct {
	c     *ktcache.Cache
	rng   *rand.Rand
	built map[string]bool // configurations whose compile time was charged
	sim   float64         // simulated seconds so far
}

func (m *cacheMeasure) measure(cand search.Candidate, n int) ([]float64, error) {
	k := cand.Key()
	cfg, ok := m.c.Lookup(cand)
	if !ok {
		return nil, fmt.Errorf("configuration %s is not in the cache", k)
	}
	if !m.built[k] {
		m.built[k] = true
		if cfg.CompileS > 0 {
			m.sim += cfg.CompileS
		} else {
			m.sim += DefaultCompileS
		}
	}
	if !cfg.Valid {
		return nil, fmt.Errorf("recorded failure: %s", cfg.Failure)
	}
	s := make([]float64, n)
	for i := range s {
		s[i] = cfg.Times[m.rng.IntN(len(cfg.Times))]
		m.sim += s[i]
	}
	return s, nil
}

// timed is a cache measured within a simulated time budget: the search
// fits into what is left after the calibration and stops once the
// simulated time reaches the limit.
type timed struct {
	m     *cacheMeasure
	limit float64 // seconds
}

func (t timed) Measure(c search.Candidate, n int) ([]float64, error) { return t.m.measure(c, n) }
func (t timed) Calibrated(float64) float64                           { return t.limit - t.m.sim }
func (t timed) Stop(search.Request) string {
	if t.m.sim >= t.limit {
		return "budget spent"
	}
	return ""
}
