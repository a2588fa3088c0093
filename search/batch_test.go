package search

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// batchLog drives a strategy the way Driver does and records each ask's
// fresh candidates (not asked for before), in order.
func batchLog(t *testing.T, st Strategy, fail func(Candidate) bool) [][]string {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	asked := map[string]bool{}
	var batches [][]string
	for reqs := st.Next(); reqs != nil; reqs = st.Next() {
		var fresh []string
		for _, r := range reqs {
			k := r.Candidate.Key()
			if !asked[k] {
				asked[k] = true
				fresh = append(fresh, k)
			}
		}
		if len(fresh) > 0 {
			batches = append(batches, fresh)
		}
		for _, r := range reqs {
			answer(st, r, 0.01, rng, fail)
		}
	}
	return batches
}

// With Options.Batch the raced strategies propose up to Batch distinct,
// fresh candidates per ask, the first (the default, the incumbent to race
// against) alone; the evaluation budget holds, no candidate is asked for
// twice, and the search still finds the optimum.
func TestBatchesOfRacedStrategies(t *testing.T) {
	cands := testSpace().Enumerate()
	fail := func(c Candidate) bool { return c["TG"] == 256 && c["BN"] == 4 }
	for _, name := range []string{"racing", "ils", "warm", "model", "bo"} {
		t.Run(name, func(t *testing.T) {
			for _, batch := range []int{2, 5} {
				st, err := New(name, cands, Options{Seed: 3, Keep: 1, MaxCandidates: 30, Batch: batch})
				if err != nil {
					t.Fatal(err)
				}
				batches := batchLog(t, st, fail)
				if len(batches) == 0 || len(batches[0]) != 1 || batches[0][0] != cands[0].Key() {
					t.Fatalf("batch %d: first ask %v, want the default %s alone", batch, batches, cands[0].Key())
				}
				var all []string
				multi := 0
				for _, b := range batches {
					if len(b) > batch {
						t.Errorf("batch %d: an ask of %d fresh candidates", batch, len(b))
					}
					if len(b) > 1 {
						multi++
					}
					all = append(all, b...)
				}
				if len(all) > 30 {
					t.Errorf("batch %d: %d candidates measured with a budget of 30", batch, len(all))
				}
				if len(slices.Compact(slices.Sorted(slices.Values(all)))) != len(all) {
					t.Errorf("batch %d: a candidate asked for twice: %v", batch, all)
				}
				if multi < len(batches)/2 {
					t.Errorf("batch %d: only %d of %d asks hold more than one candidate", batch, multi, len(batches))
				}
				best, _, ok := st.Best()
				if name != "racing" && (!ok || best.Key() != "BN=16,TG=128,UNROLL=2") {
					t.Errorf("batch %d: best %v, want the optimum BN=16,TG=128,UNROLL=2", batch, best)
				}
			}
		})
	}
}

// Batch 1 is the sequential search: the same asks as without the option.
func TestBatchOneIsSequential(t *testing.T) {
	cands := testSpace().Enumerate()
	for _, name := range []string{"ils", "model", "bo", "racing", "anneal"} {
		a, err := New(name, cands, Options{Seed: 4, Keep: 1, MaxCandidates: 25})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := New(name, cands, Options{Seed: 4, Keep: 1, MaxCandidates: 25, Batch: 1})
		if x, y := batchLog(t, a, nil), batchLog(t, b, nil); !slices.EqualFunc(x, y, slices.Equal) {
			t.Errorf("%s: batch 1 asked %v, without a batch %v", name, y, x)
		}
	}
}

// Believing a batch's proposals and forgetting them restores the Gaussian
// process exactly, and a believed proposal is not picked again.
func TestBOBelieveForget(t *testing.T) {
	cands := testSpace().Enumerate()
	ls := newLocalState(cands, Options{Seed: 1, Keep: 1}, 3)
	b := newBO(ls, 50)
	for _, c := range ls.starts {
		b.observe(c, synthetic(c))
	}
	posteriors := func() []float64 {
		z, _, _ := b.gp.whitened()
		var out []float64
		for i := range b.pool {
			mu, sd := b.gp.posterior(i, z)
			out = append(out, mu, sd)
		}
		return out
	}
	before := posteriors()
	var picked []string
	for range 4 {
		c, ok := b.pick()
		if !ok {
			t.Fatal("no pick")
		}
		if slices.Contains(picked, c.Key()) {
			t.Fatalf("%s picked twice in one batch", c.Key())
		}
		picked = append(picked, c.Key())
		b.believe(c)
	}
	if len(b.gp.ys) != len(ls.starts)+4 {
		t.Fatalf("%d training points after believing 4 on %d", len(b.gp.ys), len(ls.starts))
	}
	if believed := posteriors(); slices.Equal(believed, before) {
		t.Fatal("believing 4 proposals left the posterior as it was")
	}
	b.forget()
	after := posteriors()
	for i := range before {
		if math.Abs(before[i]-after[i]) > 1e-12 {
			t.Fatalf("posterior value %d: %g before the batch, %g after forgetting it", i, before[i], after[i])
		}
	}
	for _, k := range picked {
		if b.done[b.index[k]] {
			t.Errorf("%s still marked measured after forgetting", k)
		}
	}
}

// The driver hands a batch to Prefetch before measuring the first of it,
// with the strategy's lookahead behind it, and never a measured candidate.
func TestDriverPrefetchesBatchesAhead(t *testing.T) {
	cands := testSpace().Enumerate()
	var events []string // "p:KEY" prefetched, "m:KEY" measured
	prefetched := map[string]bool{}
	measured := map[string]bool{}
	lookahead := 0
	d := Driver{Strategy: "bo", Pool: cands, Default: cands[0], MaxEvals: 40, Batch: 4,
		Target: withPrefetch{func(c Candidate, n int) ([]float64, error) {
			events = append(events, "m:"+c.Key())
			measured[c.Key()] = true
			s := make([]float64, n)
			for i := range s {
				s[i] = synthetic(c)
			}
			return s, nil
		}, func(fresh []Candidate) {
			if len(fresh) > 4 {
				lookahead++
			}
			for _, c := range fresh {
				if measured[c.Key()] {
					t.Errorf("prefetched %s after it was measured", c.Key())
				}
				prefetched[c.Key()] = true
				events = append(events, "p:"+c.Key())
			}
		}}}
	out, err := d.Run()
	if err != nil {
		t.Fatal(err)
	}
	if out.Evals < 30 {
		t.Fatalf("measured %d candidates", out.Evals)
	}
	seen := map[string]bool{}
	for _, e := range events {
		k := e[2:]
		if e[0] == 'p' {
			seen[k] = true
			continue
		}
		if !seen[k] && k != cands[0].Key() {
			t.Errorf("%s measured before it was prefetched", k)
		}
	}
	if lookahead == 0 {
		t.Error("no batch came with a lookahead")
	}
}
