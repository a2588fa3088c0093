package search

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// orderOf drives st like drive and returns the candidates in the order first requested.
func orderOf(t *testing.T, st Strategy, seed uint64, fail func(Candidate) bool) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 9))
	var order []string
	seen := map[string]bool{}
	for reqs := st.Next(); reqs != nil; reqs = st.Next() {
		for _, r := range reqs {
			if k := r.Candidate.Key(); !seen[k] {
				seen[k] = true
				order = append(order, k)
			}
			answer(st, r, 0.01, rng, fail)
		}
	}
	return order
}

// measuredOrder is the order in which strategy name, with seed and a
// budget of that many candidates, first requests the candidates of testSpace.
func measuredOrder(t *testing.T, name string, seed uint64, budget int) []string {
	t.Helper()
	st, err := New(name, testSpace().Enumerate(), Options{Seed: seed, MaxCandidates: budget})
	if err != nil {
		t.Fatal(err)
	}
	return orderOf(t, st, seed, nil)
}

// checkDeterministic checks that strategy name measures the same order
// twice with one seed, and exactly its budget of candidates; it returns
// the order.
func checkDeterministic(t *testing.T, name string, seed uint64, budget int) []string {
	t.Helper()
	a, b := measuredOrder(t, name, seed, budget), measuredOrder(t, name, seed, budget)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("the same seed measured %v, then %v", a, b)
	}
	if len(a) != budget {
		t.Errorf("measured %d candidates with a budget of %d", len(a), budget)
	}
	return a
}

func TestModelDeterministic(t *testing.T) {
	a := checkDeterministic(t, "model", 3, 15)
	if reflect.DeepEqual(a, measuredOrder(t, "model", 4, 15)) {
		t.Errorf("seeds 3 and 4 measured the same order %v", a)
	}
}

func TestModelHandlesFailures(t *testing.T) {
	cands := testSpace().Enumerate()
	// Every candidate with TG=256 fails; the optimum (TG=128) does not.
	fail := func(c Candidate) bool { return c["TG"] == 256 }
	for seed := uint64(0); seed < 10; seed++ {
		st, _ := New("model", cands, Options{Seed: seed})
		orderOf(t, st, seed, fail)
		got, samples, ok := st.Best()
		if !ok || fail(got) || len(samples) == 0 {
			t.Fatalf("seed %d: best %v (ok %v, %d samples) after failures", seed, got, ok, len(samples))
		}
		if got.Key() != "BN=16,TG=128,UNROLL=2" {
			t.Errorf("seed %d: best %s, want the optimum BN=16,TG=128,UNROLL=2", seed, got.Key())
		}
	}
}

func TestSurrogateLearnsAdditiveSpace(t *testing.T) {
	// On a smooth space, a model fitted on half the candidates must rank the
	// other half better than chance: Spearman-like agreement of the orders.
	cands := testSpace().Enumerate()
	g := newGrid(cands)
	s := newSurrogate(g)
	var held []Candidate
	for i, c := range g.list {
		if i%2 == 0 {
			s.observe(c, synthetic(c))
		} else {
			held = append(held, c)
		}
	}
	s.observe(Candidate{"BN": 99}, 1) // not in the space: ignored
	if len(s.xs) != (len(g.list)+1)/2 {
		t.Fatalf("model holds %d points, want %d", len(s.xs), (len(g.list)+1)/2)
	}
	pred := s.predict(held)
	agree, pairs := 0, 0
	for i := range held {
		for j := i + 1; j < len(held); j++ {
			ti, tj := synthetic(held[i]), synthetic(held[j])
			if ti == tj {
				continue
			}
			pairs++
			if (ti < tj) == (pred[i] < pred[j]) {
				agree++
			}
		}
	}
	if frac := float64(agree) / float64(pairs); frac < 0.8 {
		t.Errorf("model orders %.2f of held-out pairs correctly, want ≥ 0.8", frac)
	}
	for _, p := range pred {
		if math.IsNaN(p) || math.IsInf(p, 0) {
			t.Fatalf("prediction %v", p)
		}
	}
}
