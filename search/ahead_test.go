package search

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"testing"
)

// simPool is a Target with a compile pool on a virtual clock, as the GPU
// backends' (tuner/internal/compilepool): each announcement (Prefetch)
// goes ahead of the jobs announced before and not started, in its own
// order; a job takes build seconds on the first of workers free, or on the
// caller when Measure needs it before a worker took it. Measure waits for
// the compile (idle), verifies on first use, then takes n samples of cost
// seconds each (busy); the i-th sample of a candidate has the same value
// whenever it is taken.
type simPool struct {
	workers       []float64 // when each worker is free
	build, verify float64
	buildOf       func(Candidate) float64 // a candidate's build, if set (else build)
	cost          func(Candidate) float64
	deadline      float64 // Stop after it (0: never)
	fail          func(Candidate) bool

	now, idle, busy float64
	pending         []simJob           // announced, not started, next first
	done            map[string]float64 // compile end by key, once started
	taken           map[string]int     // samples taken by key
}

type simJob struct {
	key   string
	at    float64 // announced
	build float64
}

func (p *simPool) buildTime(c Candidate) float64 {
	if p.buildOf != nil {
		return p.buildOf(c)
	}
	return p.build
}

func newSimPool(workers int, build, verify float64, cost func(Candidate) float64) *simPool {
	return &simPool{workers: make([]float64, workers), build: build, verify: verify, cost: cost,
		done: map[string]float64{}, taken: map[string]int{}}
}

// advance starts the pending jobs that workers take up to p.now.
func (p *simPool) advance() {
	for len(p.pending) > 0 {
		w := slices.Index(p.workers, slices.Min(p.workers))
		j := p.pending[0]
		start := math.Max(p.workers[w], j.at)
		if start > p.now {
			return
		}
		p.pending = p.pending[1:]
		p.workers[w] = start + j.build
		p.done[j.key] = p.workers[w]
	}
}

func (p *simPool) Prefetch(fresh []Candidate) {
	p.advance()
	var jobs []simJob
	for _, c := range fresh {
		k := c.Key()
		if _, ok := p.done[k]; ok {
			continue
		}
		p.pending = slices.DeleteFunc(p.pending, func(j simJob) bool { return j.key == k })
		jobs = append(jobs, simJob{k, p.now, p.buildTime(c)})
	}
	p.pending = append(jobs, p.pending...)
}

func (p *simPool) Ready(c Candidate) bool {
	p.advance()
	end, ok := p.done[c.Key()]
	return ok && end <= p.now
}

func (p *simPool) Stop(Request) string {
	if p.deadline > 0 && p.now >= p.deadline {
		return "budget spent"
	}
	return ""
}

func (p *simPool) Measure(c Candidate, n int) ([]float64, error) {
	k := c.Key()
	p.advance()
	if _, ok := p.done[k]; !ok {
		p.pending = slices.DeleteFunc(p.pending, func(j simJob) bool { return j.key == k })
		p.done[k] = p.now + p.buildTime(c) // compiled by the caller
	}
	if end := p.done[k]; end > p.now {
		p.idle += end - p.now
		p.now = end
	}
	first := p.taken[k] == 0
	if first {
		p.now += p.verify
		p.busy += p.verify
	}
	if p.fail != nil && p.fail(c) {
		p.taken[k] = -1
		return nil, errors.New("verification failed")
	}
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = p.cost(c) * (1 + 0.05*noiseU(c, p.taken[k]+i))
		p.now += xs[i]
		p.busy += xs[i]
	}
	p.taken[k] += n
	return xs, nil
}

// noiseU is a deterministic value in [-0.5, 0.5) for the i-th sample of c.
func noiseU(c Candidate, i int) float64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", c.Key(), i)
	return float64(h.Sum64()%1000)/1000 - 0.5
}

// told wraps a strategy and logs each batch it proposes and each answer
// it is told, keeping its optional abilities.
type told struct {
	Strategy
	batches []string
	answers []string
}

func (w *told) Next() []Request {
	reqs := w.Strategy.Next()
	var b strings.Builder
	for _, r := range reqs {
		fmt.Fprintf(&b, "%s×%d ", r.Candidate.Key(), r.Samples)
	}
	w.batches = append(w.batches, b.String())
	return reqs
}

func (w *told) Tell(r Result) {
	w.answers = append(w.answers, fmt.Sprintf("%s %v %v", r.Candidate.Key(), r.Samples, r.Err != nil))
	w.Strategy.Tell(r)
}

func (w *told) Upcoming(n int) []Candidate { return w.Strategy.(Lookahead).Upcoming(n) }
func (w *told) AnyOrder() bool             { return w.Strategy.(Unordered).AnyOrder() }

// bigSpace is a space of 4·7·6·4 candidates with a smooth cost.
func bigSpace() ([]Candidate, func(Candidate) float64) {
	var out []Candidate
	for _, a := range []int{1, 2, 4, 8} {
		for _, b := range []int{4, 8, 16, 32, 64, 128, 256} {
			for _, c := range []int{32, 64, 128, 256, 512, 1024} {
				for _, d := range []int{1, 2, 4, 8} {
					out = append(out, Candidate{"A": a, "B": b, "C": c, "D": d})
				}
			}
		}
	}
	cost := func(c Candidate) float64 {
		l := func(v, at int) float64 { return math.Abs(math.Log2(float64(v) / float64(at))) }
		return 1e-3 * (1 + 0.2*l(c["A"], 2) + 0.1*l(c["B"], 32) + 0.15*l(c["C"], 256) + 0.05*l(c["D"], 4) + 0.03*float64(c["A"]*c["D"]%3))
	}
	return out, cost
}

// On a compile pool slower than the device, measuring ahead fills the
// waits for compiles with the candidates whose builds are done: the
// strategy proposes the same batches and is told the same answers (a run
// without measuring ahead is a prefix of one with it, on the same virtual
// budget), the device idles less, and more candidates are measured.
func TestMeasureAheadFillsCompileWaits(t *testing.T) {
	cands, cost := bigSpace()
	type result struct {
		idle, wall float64
		evals      int
		out        Outcome
		st         *told
	}
	run := func(noAhead bool) result {
		p := newSimPool(15, 0.45, 0.02, cost)
		p.deadline = 20
		p.fail = func(c Candidate) bool { return c["A"] == 8 && c["D"] == 8 }
		d := Driver{Strategy: "bo", Pool: cands, Default: cands[0], Batch: 8, Target: p, NoAhead: noAhead, Options: Options{Seed: 3}}
		st, _, _, err := d.strategy()
		if err != nil {
			t.Fatal(err)
		}
		w := &told{Strategy: st}
		s := newSession(d)
		s.calibrate(cands[0])
		s.loop(w)
		return result{idle: p.idle, wall: p.now, evals: len(s.cands), out: Outcome{Ahead: s.ahead, AheadAsked: s.aheadAsked}, st: w}
	}
	plain, ahead := run(true), run(false)
	t.Logf("without measuring ahead: idle %.1f of %.1f s, %d candidates", plain.idle, plain.wall, plain.evals)
	t.Logf("measuring ahead:         idle %.1f of %.1f s, %d candidates (%d measured ahead, %d of them asked for)",
		ahead.idle, ahead.wall, ahead.evals, ahead.out.Ahead, ahead.out.AheadAsked)
	if plain.out.Ahead != 0 {
		t.Errorf("NoAhead measured %d ahead", plain.out.Ahead)
	}
	if ahead.out.Ahead == 0 || ahead.out.AheadAsked == 0 {
		t.Errorf("measured %d ahead, %d asked for: want both > 0", ahead.out.Ahead, ahead.out.AheadAsked)
	}
	if ahead.idle >= plain.idle {
		t.Errorf("idle %.2f s measuring ahead against %.2f s without", ahead.idle, plain.idle)
	}
	if float64(ahead.evals) < 1.1*float64(plain.evals) {
		t.Errorf("%d candidates measuring ahead against %d without: want 10 %% more", ahead.evals, plain.evals)
	}
	// The strategy proposes the same batches, up to where the shorter run
	// stopped, and is told the same answer for each candidate.
	n := len(plain.st.batches) - 1 // the last batch was cut by the budget
	if n < 5 || len(ahead.st.batches) < n || !slices.Equal(plain.st.batches[:n], ahead.st.batches[:n]) {
		t.Errorf("the strategy proposed other batches measuring ahead (first %d of %d and %d)", n, len(plain.st.batches), len(ahead.st.batches))
	}
	first := map[string]string{}
	for _, a := range ahead.st.answers {
		k, _, _ := strings.Cut(a, " ")
		if _, ok := first[k]; !ok {
			first[k] = a
		}
	}
	seen := map[string]bool{}
	for _, a := range plain.st.answers {
		k, _, _ := strings.Cut(a, " ")
		if seen[k] {
			continue
		}
		seen[k] = true
		if b, ok := first[k]; ok && b != a {
			t.Errorf("%s measuring ahead, %s without", b, a)
		}
	}
}

// scriptedAhead is a scripted strategy with guesses at its next batch.
type scriptedAhead struct {
	scripted
	guesses [][]Candidate
}

func (s *scriptedAhead) Upcoming(int) []Candidate {
	if len(s.guesses) == 0 {
		return nil
	}
	g := s.guesses[0]
	s.guesses = s.guesses[1:]
	return g
}

// What is measured ahead, and when: only while the request due next is
// not ready; the batch's later ready requests first, then the newest
// ready guess; never a candidate measured before; not past Stop, not
// with NoAhead, and no guess under MaxEvals. An answer measured ahead is
// handed out when asked for, the rest of a larger request taken then.
func TestMeasureAheadOrder(t *testing.T) {
	c := func(x int) Candidate { return Candidate{"x": x} }
	req := func(n int, xs ...int) []Request {
		var out []Request
		for _, x := range xs {
			out = append(out, Request{Candidate: c(x), Samples: n})
		}
		return out
	}
	tests := []struct {
		name     string
		batches  [][]Request
		guesses  [][]Candidate
		ready    []int // ready from the start
		readyAt  int   // every build ready after this many measurements (0: never)
		noAhead  bool
		maxEvals int
		stopAt   int // Stop once this many measurements were taken (0: never)
		head     []int
		want     []string
		ahead    int
		asked    int
	}{
		{name: "ready request ahead of an unready one", batches: [][]Request{req(2, 0, 1, 2)}, ready: []int{2}, readyAt: 1,
			want: []string{"2×2", "0×2", "1×2"}, ahead: 1, asked: 1},
		{name: "the newest ready guess", batches: [][]Request{req(2, 0, 1), req(2, 5)}, guesses: [][]Candidate{{c(7), c(8)}, {c(9)}}, ready: []int{7, 8},
			readyAt: 2, want: []string{"8×2", "7×2", "0×2", "1×2", "5×2"}, ahead: 2},
		{name: "guess asked for later, more samples", batches: [][]Request{req(2, 0), req(3, 7)}, guesses: [][]Candidate{{c(7)}}, ready: []int{7},
			readyAt: 1, want: []string{"7×2", "0×2", "7×1"}, ahead: 1, asked: 1},
		{name: "nothing ready: the request waits", batches: [][]Request{req(2, 0, 1)}, guesses: [][]Candidate{{c(7)}},
			want: []string{"0×2", "1×2"}},
		{name: "request ready: nothing ahead", batches: [][]Request{req(2, 0)}, guesses: [][]Candidate{{c(7)}}, ready: []int{0, 7},
			want: []string{"0×2"}},
		{name: "NoAhead", batches: [][]Request{req(2, 0, 1)}, guesses: [][]Candidate{{c(7)}}, ready: []int{1, 7}, noAhead: true,
			want: []string{"0×2", "1×2"}},
		{name: "MaxEvals: the batch only", batches: [][]Request{req(2, 0, 1)}, guesses: [][]Candidate{{c(7)}}, ready: []int{1, 7}, readyAt: 1, maxEvals: 5,
			want: []string{"1×2", "0×2"}, ahead: 1, asked: 1},
		{name: "Stop ends measuring ahead", batches: [][]Request{req(2, 0, 1)}, guesses: [][]Candidate{{c(7), c(8)}}, ready: []int{7, 8}, stopAt: 1,
			want: []string{"8×2", "0×2"}, ahead: 1},
		{name: "no guess before the head", batches: [][]Request{req(2, 0, 1)}, guesses: [][]Candidate{{c(7)}}, ready: []int{7}, readyAt: 1, head: []int{0},
			want: []string{"0×2", "1×2"}},
		{name: "guesses once the head is measured", batches: [][]Request{req(2, 0), req(2, 1)}, guesses: [][]Candidate{{c(7)}}, ready: []int{0, 7}, head: []int{0},
			want: []string{"0×2", "7×2", "1×2"}, ahead: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var measured []string
			ready := func(x Candidate) bool {
				return slices.Contains(tc.ready, x["x"]) || tc.readyAt > 0 && len(measured) >= tc.readyAt
			}
			target := &allAbilities{
				measure: func(x Candidate, n int) ([]float64, error) {
					measured = append(measured, fmt.Sprintf("%d×%d", x["x"], n))
					xs := make([]float64, n)
					for i := range xs {
						xs[i] = float64(len(measured)*10 + i)
					}
					return xs, nil
				},
				ready: ready,
				stop: func(Request) string {
					if tc.stopAt > 0 && len(measured) >= tc.stopAt {
						return "budget spent"
					}
					return ""
				},
			}
			d := Driver{Target: target, Batch: 4, NoAhead: tc.noAhead, MaxEvals: tc.maxEvals}
			st := &scriptedAhead{scripted: scripted{batches: tc.batches}, guesses: tc.guesses}
			w := &told{Strategy: st}
			s := newSession(d)
			for _, x := range tc.head {
				s.head = append(s.head, c(x))
			}
			s.loop(w)
			if !slices.Equal(measured, tc.want) {
				t.Errorf("measured %v, want %v", measured, tc.want)
			}
			if s.ahead != tc.ahead || s.aheadAsked != tc.asked {
				t.Errorf("%d measured ahead, %d asked for; want %d and %d", s.ahead, s.aheadAsked, tc.ahead, tc.asked)
			}
			// Every answer has the samples asked for, whenever measured.
			for _, a := range w.answers {
				if strings.Contains(a, "[]") {
					t.Errorf("an empty answer: %s", a)
				}
			}
		})
	}
}

// allAbilities is a Target that measures, stops, prefetches (nothing)
// and says what is ready.
type allAbilities struct {
	measure func(Candidate, int) ([]float64, error)
	ready   func(Candidate) bool
	stop    func(Request) string
}

func (a *allAbilities) Measure(c Candidate, n int) ([]float64, error) { return a.measure(c, n) }
func (a *allAbilities) Ready(c Candidate) bool                        { return a.ready(c) }
func (a *allAbilities) Stop(r Request) string                         { return a.stop(r) }
func (a *allAbilities) Prefetch([]Candidate)                          {}

// ranked is the unmeasured candidates of greatest expected improvement,
// best first, and believes nothing: the process is as before.
func TestBORanked(t *testing.T) {
	cands, cost := bigSpace()
	ls := newLocalState(cands, Options{Seed: 1}.withDefaults(), 0)
	b := newBO(ls, 50)
	for _, i := range []int{0, 17, 200, 333, 500, 650} {
		b.observe(cands[i], cost(cands[i]))
	}
	n := len(b.gp.ys)
	got := b.ranked(6)
	if len(got) != 6 || len(b.gp.ys) != n {
		t.Fatalf("ranked %d, process of %d points after, %d before", len(got), len(b.gp.ys), n)
	}
	z, best, _ := b.gp.whitened()
	ei := func(c Candidate) float64 {
		mu, sd := b.gp.posterior(b.index[c.Key()], z)
		return expectedImprovement(mu, sd, best, boXi)
	}
	for i, c := range got {
		if b.done[b.index[c.Key()]] {
			t.Errorf("ranked %s, measured", c.Key())
		}
		if i > 0 && ei(c) > ei(got[i-1]) {
			t.Errorf("%s ranked after %s with a greater expected improvement", c.Key(), got[i-1].Key())
		}
	}
	worst := ei(got[len(got)-1])
	for i, c := range b.pool {
		if !b.done[i] && ei(c) > worst && !slices.ContainsFunc(got, func(g Candidate) bool { return g.Key() == c.Key() }) {
			t.Errorf("%s has a greater expected improvement than the last ranked, not ranked", c.Key())
		}
	}
	if p, ok := b.pick(); !ok || p.Key() != got[0].Key() {
		t.Errorf("pick %v, ranked first %s", p, got[0].Key())
	}
}
