package replay

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/search/ktcache"
)

// Report is the outcome of one cache and strategy (kerntune replay --json
// prints it).
type Report struct {
	Cache    string `json:"cache"`
	Strategy string `json:"strategy"`
	Runs     int    `json:"runs"`
	NoRace   bool   `json:"no_race,omitempty"`
	// Default is the key of the configuration measured first, "" for none.
	Default string   `json:"default,omitempty"`
	Budgets []Budget `json:"budgets"`
}

// RunAll replays every strategy on every cache, one job per pair spread
// over GOMAXPROCS goroutines; configFor gives a job's Config (its Strategy
// is set to the job's). It returns the reports by cache, then strategy, or
// the first error, naming the cache and the strategy.
func RunAll(caches []*ktcache.Cache, strategies []string, configFor func(c *ktcache.Cache, strategy string) Config) ([][]Report, error) {
	type job struct{ ci, si int }
	reports := make([][]Report, len(caches))
	for i := range reports {
		reports[i] = make([]Report, len(strategies))
	}
	jobs := make(chan job)
	errs := make(chan error, len(caches)*len(strategies))
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				c, s := caches[j.ci], strategies[j.si]
				cfg := configFor(c, s)
				cfg.Strategy = s
				bs, err := Run(c, cfg)
				if err != nil {
					errs <- fmt.Errorf("%s with %s: %w", c.Path, s, err)
					continue
				}
				rep := Report{Cache: c.Path, Strategy: s, Runs: cfg.Runs, NoRace: cfg.Options.NoRace, Budgets: bs}
				if d := cfg.Default; d != nil {
					if _, ok := c.Lookup(d); ok {
						rep.Default = d.Key()
					}
				}
				reports[j.ci][j.si] = rep
			}
		}()
	}
	for ci := range caches {
		for si := range strategies {
			jobs <- job{ci, si}
		}
	}
	close(jobs)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	return reports, nil
}

// WarmStarts are the n fastest valid configurations of each cache, fastest
// first, cache after cache: warm starts from the same kernel on sibling
// devices.
func WarmStarts(caches []*ktcache.Cache, n int) []search.Candidate {
	var out []search.Candidate
	for _, c := range caches {
		valid := make([]*ktcache.Config, 0, len(c.Configs))
		for _, cfg := range c.Configs {
			if cfg.Valid {
				valid = append(valid, cfg)
			}
		}
		for i := 0; i < n && len(valid) > 0; i++ {
			bi := 0
			for j, cfg := range valid {
				if cfg.Time < valid[bi].Time {
					bi = j
				}
			}
			out = append(out, valid[bi].Candidate)
			valid = append(valid[:bi], valid[bi+1:]...)
		}
	}
	return out
}
