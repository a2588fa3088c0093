package search

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"testing"
)

// scripted is a strategy that asks for fixed batches and logs what it is told.
type scripted struct {
	batches  [][]Request
	anyOrder bool
	told     []string
}

func (s *scripted) Name() string { return "scripted" }

func (s *scripted) Next() []Request {
	if len(s.batches) == 0 {
		return nil
	}
	b := s.batches[0]
	s.batches = s.batches[1:]
	return b
}

func (s *scripted) Tell(r Result) { s.told = append(s.told, r.Candidate.Key()) }

func (s *scripted) Best() (Candidate, []float64, bool) { return nil, nil, false }

func (s *scripted) AnyOrder() bool { return s.anyOrder }

// The driver measures a batch's fresh candidates whose builds are ready
// before earlier ones still compiling; requests for candidates measured
// before keep their order and are not held back; without Ready, or for a
// batch the strategy wants told in order, nothing moves.
func TestDriverMeasuresReadyFirst(t *testing.T) {
	req := func(xs ...int) []Request {
		var out []Request
		for _, x := range xs {
			out = append(out, Request{Candidate: Candidate{"x": x}, Samples: 2})
		}
		return out
	}
	tests := []struct {
		name     string
		batches  [][]Request
		ready    []int // nil with noReady: a Target without Ready
		noReady  bool
		anyOrder bool
		want     []int
	}{
		{name: "ready before an unready earlier one", batches: [][]Request{req(0, 1, 2, 3)}, ready: []int{2}, anyOrder: true, want: []int{2, 0, 1, 3}},
		{name: "ready ones in their order", batches: [][]Request{req(0, 1, 2, 3)}, ready: []int{3, 1}, anyOrder: true, want: []int{1, 3, 0, 2}},
		{name: "none ready: in order", batches: [][]Request{req(0, 1, 2)}, anyOrder: true, want: []int{0, 1, 2}},
		{name: "Ready nil: in order", batches: [][]Request{req(0, 1, 2, 3)}, noReady: true, anyOrder: true, want: []int{0, 1, 2, 3}},
		{name: "strategy wants its order", batches: [][]Request{req(0, 1, 2, 3)}, ready: []int{2}, want: []int{0, 1, 2, 3}},
		{
			// 0 and 1 measured in the first batch: their further samples are
			// taken in order, ahead of the unready 5, and are not reordered
			// behind the ready 6.
			name:    "survivors keep their order",
			batches: [][]Request{req(0, 1), req(5, 1, 6, 0)}, ready: []int{6}, anyOrder: true,
			want: []int{0, 1, 1, 6, 0, 5},
		},
		{name: "survivors alone", batches: [][]Request{req(0, 1), req(1, 0)}, ready: []int{0, 1}, anyOrder: true, want: []int{0, 1, 1, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var measured []int
			measure := MeasureFunc(func(c Candidate, n int) ([]float64, error) {
				measured = append(measured, c["x"])
				return []float64{1, 1}[:n], nil
			})
			d := Driver{Target: measure}
			if !tc.noReady {
				d.Target = withReady{measure, func(c Candidate) bool {
					if slices.Contains(measured, c["x"]) {
						t.Errorf("asked Ready about %d, measured before", c["x"])
					}
					return slices.Contains(tc.ready, c["x"])
				}}
			}
			st := &scripted{batches: tc.batches, anyOrder: tc.anyOrder}
			s := newSession(d)
			if stop := s.loop(st); stop != "" {
				t.Fatalf("stopped: %s", stop)
			}
			if !slices.Equal(measured, tc.want) {
				t.Errorf("measured %v, want %v", measured, tc.want)
			}
			var told []int
			for _, k := range st.told {
				c, _ := ParseKey(k)
				told = append(told, c["x"])
			}
			if !slices.Equal(told, measured) {
				t.Errorf("told %v, measured %v", told, measured)
			}
		})
	}
}

// Driver.Run with Ready on a real strategy: exhaustive measures the ready
// candidate first and finds the same best as without Ready.
func TestDriverRunReady(t *testing.T) {
	run := func(ready func(Candidate) bool) ([]string, Outcome) {
		r := &recorder{}
		d := Driver{Strategy: "exhaustive", Pool: line(4), Target: MeasureFunc(r.measure)}
		if ready != nil {
			d.Target = withReady{MeasureFunc(r.measure), ready}
		}
		out, err := d.Run()
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, c := range r.calls {
			keys = append(keys, c.key)
		}
		return keys, out
	}
	plain, outPlain := run(nil)
	if want := []string{key(0), key(1), key(2), key(3)}; !slices.Equal(plain, want) {
		t.Errorf("without Ready: %v, want %v", plain, want)
	}
	got, out := run(func(c Candidate) bool { return c["x"] == 3 })
	if want := []string{key(3), key(0), key(1), key(2)}; !slices.Equal(got, want) {
		t.Errorf("with 3 ready: %v, want %v", got, want)
	}
	if out.Best.Key() != outPlain.Best.Key() || out.Evals != outPlain.Evals {
		t.Errorf("outcome %+v, without Ready %+v", out, outPlain)
	}
}

// noisy is a deterministic timing of the i-th sample of c, whatever the
// order in which candidates are measured.
func noisy(c Candidate, i int) float64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", c.Key(), i)
	u := float64(h.Sum64()%1000)/1000 - 0.5
	return synthetic(c) * (1 + 0.05*u)
}

// tellLog drives st, telling the fresh requests of each batch it allows
// (Unordered) in the order perm gives, and logs every request and the best.
func tellLog(t *testing.T, st Strategy, perm func([]Request) []Request) (string, int) {
	t.Helper()
	var log strings.Builder
	have := map[string]int{}
	measured := map[string]bool{}
	unordered := 0
	for reqs := st.Next(); reqs != nil; reqs = st.Next() {
		for _, r := range reqs {
			fmt.Fprintf(&log, "%s×%d ", r.Candidate.Key(), r.Samples)
		}
		log.WriteString("| ")
		if un, ok := st.(Unordered); ok && un.AnyOrder() && len(reqs) > 1 {
			unordered++
			var fresh, rest []Request
			for _, r := range reqs {
				if measured[r.Candidate.Key()] {
					rest = append(rest, r)
				} else {
					fresh = append(fresh, r)
				}
			}
			reqs = append(perm(slices.Clone(fresh)), rest...)
		}
		for _, r := range reqs {
			k := r.Candidate.Key()
			measured[k] = true
			if r.Candidate["TG"] == 256 && r.Candidate["BN"] == 4 {
				st.Tell(Result{Candidate: r.Candidate, Err: errors.New("fails")})
				continue
			}
			s := make([]float64, r.Samples)
			for i := range s {
				s[i] = noisy(r.Candidate, have[k]+i)
			}
			have[k] += r.Samples
			st.Tell(Result{Candidate: r.Candidate, Samples: s})
		}
	}
	if c, xs, ok := st.Best(); ok {
		fmt.Fprintf(&log, "best %s %d", c.Key(), len(xs))
	}
	return log.String(), unordered
}

// Where a strategy lets its batches be told in any order, the order does
// not change what it asks for next or picks: every strategy told each such
// batch reversed, or rotated, asks for the same requests as told in order.
// Raced strategies without racing keep their order.
func TestUnorderedBatchesDoNotChangeTheSearch(t *testing.T) {
	cands := testSpace().Enumerate()
	reverse := func(rs []Request) []Request { slices.Reverse(rs); return rs }
	rotate := func(rs []Request) []Request {
		if len(rs) < 2 {
			return rs
		}
		return append(rs[1:], rs[0])
	}
	for _, name := range Names {
		for _, noRace := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/norace=%v", name, noRace), func(t *testing.T) {
				opts := Options{Seed: 5, Keep: 1, MaxCandidates: 40, Batch: 4, NoRace: noRace, Samples: 5}
				mk := func() Strategy {
					st, err := New(name, cands, opts)
					if err != nil {
						t.Fatal(err)
					}
					return st
				}
				want, _ := tellLog(t, mk(), func(rs []Request) []Request { return rs })
				for pname, perm := range map[string]func([]Request) []Request{"reverse": reverse, "rotate": rotate} {
					got, n := tellLog(t, mk(), perm)
					if got != want {
						t.Errorf("%s: told in another order the search differs:\n%s\nin order:\n%s", pname, got, want)
					}
					_, raced := mk().(*raced)
					if raced && noRace && n > 0 {
						t.Errorf("%s without racing: %d batches in any order", name, n)
					}
					if name != "anneal" && !(raced && noRace) && n == 0 {
						t.Errorf("%s: no batch in any order", name)
					}
				}
			})
		}
	}
}
