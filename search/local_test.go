package search

import (
	"math/rand/v2"
	"testing"
)

func TestRaceSearchesFindOptimum(t *testing.T) {
	cands := testSpace().Enumerate()
	const best = "BN=16,TG=128,UNROLL=2"
	for _, name := range []string{"racing", "ils", "anneal", "default", "model", "bo"} {
		for _, noRace := range []bool{false, true} {
			found := 0
			for seed := uint64(0); seed < 40; seed++ {
				st, err := New(name, cands, Options{Seed: seed, NoRace: noRace})
				if err != nil {
					t.Fatal(err)
				}
				drive(t, st, 0.01, rand.New(rand.NewPCG(seed, 5)), nil)
				if got, _, ok := st.Best(); ok && got.Key() == best {
					found++
				}
			}
			// Without an evaluation budget every strategy can reach the
			// optimum; noise may cost a near-tie now and then.
			if found < 38 {
				t.Errorf("%s (noRace %v): found the optimum in %d of 40 runs", name, noRace, found)
			}
		}
	}
}

func TestRacingStopsLosersEarly(t *testing.T) {
	cands := testSpace().Enumerate()
	opts := Options{Seed: 2, RaceFirst: 3, RaceMax: 20}
	raced, _ := New("racing", cands, opts)
	req := drive(t, raced, 0.01, rand.New(rand.NewPCG(2, 2)), nil)
	opts.NoRace = true
	fixed, _ := New("racing", cands, opts)
	reqFixed := drive(t, fixed, 0.01, rand.New(rand.NewPCG(2, 2)), nil)
	total, totalFixed, early := 0, 0, 0
	for k, n := range req {
		total += n
		if n == 3 {
			early++
		}
		if reqFixed[k] != 20 {
			t.Errorf("fixed variant gave %s %d samples, want 20", k, reqFixed[k])
		}
		totalFixed += reqFixed[k]
	}
	if len(req) != len(cands) || early < len(cands)/2 {
		t.Errorf("racing measured %d of %d candidates, %d stopped after the first batch", len(req), len(cands), early)
	}
	if 2*total > totalFixed {
		t.Errorf("racing spent %d samples, the fixed variant %d", total, totalFixed)
	}
	if got, _, _ := raced.Best(); got.Key() != "BN=16,TG=128,UNROLL=2" || req[got.Key()] != 20 {
		t.Errorf("racing picked %v with %d samples", got, req[got.Key()])
	}
}

func TestRaceSearchesRespectBudget(t *testing.T) {
	cands := testSpace().Enumerate()
	for _, name := range []string{"racing", "ils", "anneal", "default", "random", "halving", "model", "bo"} {
		st, _ := New(name, cands, Options{Seed: 4, MaxCandidates: 7})
		req := drive(t, st, 0.01, rand.New(rand.NewPCG(4, 4)), nil)
		if len(req) > 7 || len(req) == 0 {
			t.Errorf("%s measured %d candidates with a budget of 7", name, len(req))
		}
		if _, _, ok := st.Best(); !ok {
			t.Errorf("%s has no best after its budget", name)
		}
	}
}

func TestGridNeighbours(t *testing.T) {
	// A restricted 2-D space: x in 0..4, y in 0..2, without x=1 (any y) and x=3,y=0.
	var cands []Candidate
	for x := 0; x <= 4; x++ {
		for y := 0; y <= 2; y++ {
			if x != 1 && (x != 3 || y != 0) {
				cands = append(cands, Candidate{"x": x * 10, "y": y})
			}
		}
	}
	g := newGrid(cands)
	tests := []struct {
		from      Candidate
		adjacent  []string
		farValues int
	}{
		// x=1 is absent: the nearest present x along the line is 2; y moves by one.
		{Candidate{"x": 0, "y": 0}, []string{"x=20,y=0", "x=0,y=1"}, 2}, // far: x=40,y=0 and x=0,y=2
		// x=3,y=0 absent: from x=2,y=0 upwards the nearest is x=4.
		{Candidate{"x": 20, "y": 0}, []string{"x=0,y=0", "x=40,y=0", "x=20,y=1"}, 1},
	}
	for _, tt := range tests {
		got := map[string]bool{}
		for _, c := range g.neighbours(tt.from) {
			got[c.Key()] = true
		}
		if len(got) != len(tt.adjacent) {
			t.Errorf("neighbours of %s: %v, want %v", tt.from.Key(), got, tt.adjacent)
		}
		for _, k := range tt.adjacent {
			if !got[k] {
				t.Errorf("neighbours of %s lack %s", tt.from.Key(), k)
			}
		}
		if far := g.far(tt.from); len(far) != tt.farValues {
			t.Errorf("far neighbours of %s: %d, want %d", tt.from.Key(), len(far), tt.farValues)
		}
	}
}

func TestDefaultStartsFromWarmEntries(t *testing.T) {
	cands := testSpace().Enumerate()
	warm := []Candidate{{"BN": 32, "TG": 64, "UNROLL": 1}, {"BN": 16, "TG": 64, "UNROLL": 2}}
	pool := append(append([]Candidate{}, warm...), cands...)
	st, _ := New("default", pool, Options{Seed: 1, Keep: len(warm)})
	var order []string
	for reqs := st.Next(); reqs != nil && len(order) < 2; reqs = st.Next() {
		for _, r := range reqs {
			if len(order) == 0 || order[len(order)-1] != r.Candidate.Key() {
				order = append(order, r.Candidate.Key())
			}
			s := make([]float64, r.Samples)
			for i := range s {
				s[i] = synthetic(r.Candidate)
			}
			st.Tell(Result{Candidate: r.Candidate, Samples: s})
		}
	}
	if len(order) < 2 || order[0] != warm[0].Key() || order[1] != warm[1].Key() {
		t.Errorf("default measured %v first, want the warm starts %s, %s", order, warm[0].Key(), warm[1].Key())
	}
}
