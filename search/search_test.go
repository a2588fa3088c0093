package search

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func testSpace() *Space {
	return &Space{
		Params: []Param{
			{Name: "BN", Values: []int{4, 8, 16, 32, 64}},
			{Name: "TG", Values: []int{32, 64, 128, 256}},
			{Name: "UNROLL", Values: []int{1, 2, 4}},
		},
		Constraints: []Constraint{
			{Name: "threads ≤ 256 per BN·TG/8", Check: func(c Candidate) error {
				if c["BN"]*c["TG"] > 4096 {
					return errors.New("BN·TG > 4096")
				}
				return nil
			}},
			{Name: "UNROLL divides BN", Check: func(c Candidate) error {
				if c["BN"]%c["UNROLL"] != 0 {
					return fmt.Errorf("BN %% UNROLL != 0")
				}
				return nil
			}},
		},
	}
}

func TestEnumerateHonoursConstraints(t *testing.T) {
	s := testSpace()
	all := s.Enumerate()
	want := 0
	for _, bn := range s.Params[0].Values {
		for _, tg := range s.Params[1].Values {
			for _, u := range s.Params[2].Values {
				if bn*tg <= 4096 && bn%u == 0 {
					want++
				}
			}
		}
	}
	if len(all) != want || want == 0 || want == s.Size() {
		t.Fatalf("Enumerate gave %d candidates, want %d of %d", len(all), want, s.Size())
	}
	seen := map[string]bool{}
	for _, c := range all {
		if err := s.Check(c); err != nil {
			t.Errorf("enumerated invalid candidate %s: %v", c.Key(), err)
		}
		if seen[c.Key()] {
			t.Errorf("duplicate %s", c.Key())
		}
		seen[c.Key()] = true
	}
}

func TestCheckRejects(t *testing.T) {
	s := testSpace()
	tests := []struct {
		name string
		c    Candidate
	}{
		{"value not allowed", Candidate{"BN": 5, "TG": 32, "UNROLL": 1}},
		{"constraint", Candidate{"BN": 64, "TG": 256, "UNROLL": 1}},
		{"missing param", Candidate{"BN": 4, "TG": 32}},
		{"extra param", Candidate{"BN": 4, "TG": 32, "UNROLL": 1, "X": 1}},
	}
	for _, tt := range tests {
		if s.Check(tt.c) == nil {
			t.Errorf("%s: Check(%s) accepted an invalid candidate", tt.name, tt.c.Key())
		}
	}
}

func TestKeyRoundTrip(t *testing.T) {
	c := Candidate{"TG": 128, "BN": 8, "UNROLL": 2}
	if c.Key() != "BN=8,TG=128,UNROLL=2" {
		t.Fatalf("Key = %q", c.Key())
	}
	d, err := ParseKey(c.Key())
	if err != nil || d.Key() != c.Key() {
		t.Fatalf("ParseKey round trip: %v %v", d, err)
	}
	for _, bad := range []string{"BN", "BN=x", "BN=1,,"} {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
}

// synthetic is a space with a known optimum: time grows with distance from
// BN=16, TG=128, UNROLL=2, and every sample carries multiplicative noise.
func synthetic(c Candidate) float64 {
	d := math.Abs(math.Log2(float64(c["BN"])/16)) + math.Abs(math.Log2(float64(c["TG"])/128)) + math.Abs(math.Log2(float64(c["UNROLL"])/2))
	return 1e-5 * (1 + 0.1*d)
}

// answer tells st how request r went: a failure where fail rejects the
// candidate, else r.Samples synthetic times with relative noise.
func answer(st Strategy, r Request, noise float64, rng *rand.Rand, fail func(Candidate) bool) {
	if fail != nil && fail(r.Candidate) {
		st.Tell(Result{Candidate: r.Candidate, Err: errors.New("verification failed")})
		return
	}
	samples := make([]float64, r.Samples)
	for i := range samples {
		samples[i] = synthetic(r.Candidate) * (1 + noise*rng.NormFloat64())
	}
	st.Tell(Result{Candidate: r.Candidate, Samples: samples})
}

func drive(t *testing.T, st Strategy, noise float64, rng *rand.Rand, fail func(Candidate) bool) (requested map[string]int) {
	t.Helper()
	requested = map[string]int{}
	for reqs := st.Next(); reqs != nil; reqs = st.Next() {
		for _, r := range reqs {
			requested[r.Candidate.Key()] += r.Samples
			answer(st, r, noise, rng, fail)
		}
	}
	return requested
}

func TestStrategiesFindOptimum(t *testing.T) {
	s := testSpace()
	cands := s.Enumerate()
	const best = "BN=16,TG=128,UNROLL=2"
	if s.Check(Candidate{"BN": 16, "TG": 128, "UNROLL": 2}) != nil {
		t.Fatal("the optimum must be valid")
	}
	for _, name := range []string{"exhaustive", "halving"} {
		for seed := uint64(0); seed < 100; seed++ {
			st, err := New(name, cands, Options{Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(seed, 1))
			req := drive(t, st, 0.01, rng, nil)
			for k := range req {
				if _, err := ParseKey(k); err != nil {
					t.Fatal(err)
				}
			}
			got, samples, ok := st.Best()
			if !ok || got.Key() != best {
				t.Fatalf("%s seed %d: best %v (%d samples), want %s", name, seed, got, len(samples), best)
			}
		}
	}
}

func TestHalvingSpendsLessThanExhaustive(t *testing.T) {
	cands := testSpace().Enumerate()
	st, _ := New("halving", cands, Options{Seed: 1, MinSamples: 3, Eta: 3})
	req := drive(t, st, 0.01, rand.New(rand.NewPCG(1, 2)), nil)
	total := 0
	for _, n := range req {
		total += n
	}
	if est := HalvingSamples(len(cands), Options{MinSamples: 3, Eta: 3}); est != total {
		t.Errorf("HalvingSamples = %d, strategy spent %d", est, total)
	}
	if exhaustive := 10 * len(cands); total >= exhaustive {
		t.Errorf("halving spent %d samples, exhaustive with 10 each spends %d", total, exhaustive)
	}
	// Survivors get more samples than losers.
	if req["BN=16,TG=128,UNROLL=2"] < 3*3*3 {
		t.Errorf("winner measured only %d times", req["BN=16,TG=128,UNROLL=2"])
	}
}

func TestFailuresAreSkipped(t *testing.T) {
	cands := testSpace().Enumerate()
	failBN16 := func(c Candidate) bool { return c["BN"] == 16 }
	for _, name := range Names {
		st, _ := New(name, cands, Options{Seed: 3})
		req := drive(t, st, 0.005, rand.New(rand.NewPCG(3, 3)), failBN16)
		got, _, ok := st.Best()
		if !ok || got["BN"] == 16 {
			t.Errorf("%s picked failed candidate %v", name, got)
		}
		for k, n := range req {
			c, _ := ParseKey(k)
			if c["BN"] == 16 && n > 10 {
				t.Errorf("%s asked again for failed %s (%d samples)", name, k, n)
			}
		}
	}
}

func TestAllFail(t *testing.T) {
	cands := testSpace().Enumerate()
	for _, name := range Names {
		st, _ := New(name, cands, Options{})
		drive(t, st, 0, rand.New(rand.NewPCG(0, 0)), func(Candidate) bool { return true })
		if _, _, ok := st.Best(); ok {
			t.Errorf("%s reported a best candidate when all failed", name)
		}
	}
}

func TestMaxCandidatesAndSeed(t *testing.T) {
	cands := testSpace().Enumerate()
	a, _ := New("random", cands, Options{Seed: 7, MaxCandidates: 5})
	b, _ := New("random", cands, Options{Seed: 7, MaxCandidates: 5})
	ra, rb := a.Next(), b.Next()
	if len(ra) != 5 {
		t.Fatalf("random with MaxCandidates 5 asked for %d", len(ra))
	}
	for i := range ra {
		if ra[i].Candidate.Key() != rb[i].Candidate.Key() {
			t.Fatal("same seed gave different orders")
		}
	}
	head := cands[len(cands)-1]
	withHead := append([]Candidate{head}, cands[:len(cands)-1]...)
	for _, name := range Names {
		st, _ := New(name, withHead, Options{Seed: 9, Keep: 1, MaxCandidates: 3})
		if r := st.Next(); len(r) == 0 || r[0].Candidate.Key() != head.Key() {
			t.Errorf("%s: the kept candidate is not tried first", name)
		}
	}
	if _, err := New("nope", cands, Options{}); err == nil {
		t.Error("unknown strategy accepted")
	}
	if _, err := New("random", nil, Options{}); err == nil {
		t.Error("empty space accepted")
	}
}

func TestRaces(t *testing.T) {
	for name, want := range map[string]bool{
		"exhaustive": false, "random": false, "halving": false, "unknown": false,
		"racing": true, "anneal": true, "ils": true, "warm": true, "default": true, "model": true, "bo": true,
	} {
		if got := Races(name); got != want {
			t.Errorf("Races(%q) = %v, want %v", name, got, want)
		}
	}
}

// "default" is the earlier name of warm and still accepted; every other
// name is its own canonical name.
func TestCanonicalNames(t *testing.T) {
	cands := testSpace().Enumerate()
	for _, name := range append([]string{"default"}, Names...) {
		st, err := New(name, cands, Options{Seed: 1})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := name
		if name == "default" {
			want = "warm"
		}
		if got := Canonical(name); got != want || st.Name() != want {
			t.Errorf("%s: Canonical %q, Name %q; want %q", name, got, st.Name(), want)
		}
	}
	if Canonical("magic") != "magic" {
		t.Error("an unknown name must pass through for New to reject it")
	}
	if !slices.Contains(Names, DefaultStrategy) || slices.Contains(Names, "default") {
		t.Errorf("Names %v must hold DefaultStrategy %q and not the alias", Names, DefaultStrategy)
	}
}
