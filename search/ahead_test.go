package search

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// simPool is a Target with a compile pool on a virtual clock, as the GPU
// backends' (tuner/internal/compilepool): each announcement (Prefetch)
// goes ahead of the jobs announced before and not started, in its own
// order; a job takes build seconds on the first of workers free, or on the
// caller when Measure needs it before a worker took it. Measure waits for
// the compile (idle), verifies on first use, then takes n samples of cost
// seconds each (busy); the i-th sample of a candidate has the same value
// whenever it is taken. Spares (Spare) start on a free worker only when no
// announced job is due and fewer than half the workers are compiling.
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
	spares          []simJob           // announced at low priority, next first
	compiling       [][2]float64       // every compile started: start, end
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

// advance starts the jobs that workers take up to p.now: the worker free
// first takes the next announced job due by then, else a spare if fewer
// than half the workers are compiling; else it waits for the next
// announcement, or a compile's end.
func (p *simPool) advance() {
	for len(p.pending) > 0 || len(p.spares) > 0 {
		w := slices.Index(p.workers, slices.Min(p.workers))
		free := p.workers[w]
		if free > p.now {
			return
		}
		running, firstEnd := 0, math.Inf(1) // compiles under way at free, the first to end
		for _, iv := range p.compiling {
			if iv[0] <= free && iv[1] > free {
				running++
				firstEnd = math.Min(firstEnd, iv[1])
			}
		}
		start := func(j simJob) {
			p.workers[w] = free + j.build
			p.done[j.key] = p.workers[w]
			p.compiling = append(p.compiling, [2]float64{free, p.workers[w]})
		}
		switch {
		case len(p.pending) > 0 && p.pending[0].at <= free:
			start(p.pending[0])
			p.pending = p.pending[1:]
			continue
		case len(p.spares) > 0 && p.spares[0].at <= free && running < len(p.workers)/2:
			j := p.spares[0]
			p.spares = p.spares[1:]
			if _, ok := p.done[j.key]; !ok {
				start(j)
			}
			continue
		}
		// Nothing starts at free: the worker waits for what comes first
		// (each strictly after free).
		next := math.Inf(1)
		if len(p.pending) > 0 {
			next = p.pending[0].at
		}
		if len(p.spares) > 0 {
			if at := p.spares[0].at; at > free {
				next = math.Min(next, at)
			} else {
				next = math.Min(next, firstEnd) // half the pool busy
			}
		}
		if next > p.now {
			return
		}
		p.workers[w] = next
	}
}

// Spare replaces the spares, announced now.
func (p *simPool) Spare(cands []Candidate) {
	p.advance()
	p.spares = p.spares[:0]
	for _, c := range cands {
		if _, ok := p.done[c.Key()]; !ok {
			p.spares = append(p.spares, simJob{c.Key(), p.now, p.buildTime(c)})
		}
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
		p.spares = slices.DeleteFunc(p.spares, func(j simJob) bool { return j.key == k })
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

// sansSpare is a simPool that cannot build spares (no Sparer).
type sansSpare struct{ p *simPool }

func (s sansSpare) Measure(c Candidate, n int) ([]float64, error) { return s.p.Measure(c, n) }
func (s sansSpare) Prefetch(fresh []Candidate)                    { s.p.Prefetch(fresh) }
func (s sansSpare) Ready(c Candidate) bool                        { return s.p.Ready(c) }
func (s sansSpare) Stop(r Request) string                         { return s.p.Stop(r) }

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
// waits for compiles with the candidates whose builds are done, and spares
// built by the pool's idle workers fill more: the strategy proposes the
// same batches and is told the same answers (a run without measuring ahead
// is a prefix of one with it, on the same virtual budget), the device
// idles less, and more candidates are measured.
func TestMeasureAheadFillsCompileWaits(t *testing.T) {
	cands, cost := bigSpace()
	type result struct {
		idle, wall float64
		evals      int
		out        Outcome
		st         *told
	}
	const (
		noAhead = iota
		noSpares
		spares
	)
	run := func(mode int, slow bool) result {
		p := newSimPool(15, 0.45, 0.02, cost)
		if slow {
			// A pool the batches keep busy: a third of the builds take
			// 2.5 s (qgemv's large unrolls on the H200).
			p.buildOf = func(c Candidate) float64 {
				if c["C"] >= 256 {
					return 2.5
				}
				return 0.45
			}
		}
		p.deadline = 20
		p.fail = func(c Candidate) bool { return c["A"] == 8 && c["D"] == 8 }
		var target Target = p
		if mode != spares {
			target = sansSpare{p}
		}
		d := Driver{Strategy: "bo", Pool: cands, Default: cands[0], Batch: 8, Target: target, NoAhead: mode == noAhead, Options: Options{Seed: 3}}
		st, _, _, err := d.strategy()
		if err != nil {
			t.Fatal(err)
		}
		w := &told{Strategy: st}
		s := newSession(d)
		s.calibrate(cands[0])
		s.loop(w)
		if s.sparer != nil {
			s.sparer.Spare(nil)
		}
		return result{idle: p.idle, wall: p.now, evals: len(s.cands), out: Outcome{Ahead: s.ahead, AheadAsked: s.aheadAsked, Spared: s.spared}, st: w}
	}
	plain, ahead, spare := run(noAhead, false), run(noSpares, false), run(spares, false)
	t.Logf("without measuring ahead: idle %.1f of %.1f s, %d candidates", plain.idle, plain.wall, plain.evals)
	t.Logf("measuring ahead:         idle %.1f of %.1f s, %d candidates (%d measured ahead, %d of them asked for)",
		ahead.idle, ahead.wall, ahead.evals, ahead.out.Ahead, ahead.out.AheadAsked)
	t.Logf("with spares:             idle %.1f of %.1f s, %d candidates (%d measured ahead, %d of them asked for, %d spares)",
		spare.idle, spare.wall, spare.evals, spare.out.Ahead, spare.out.AheadAsked, spare.out.Spared)
	if plain.out.Ahead != 0 {
		t.Errorf("NoAhead measured %d ahead", plain.out.Ahead)
	}
	if ahead.out.Ahead == 0 || ahead.out.AheadAsked == 0 || ahead.out.Spared != 0 {
		t.Errorf("measured %d ahead, %d asked for, %d spares: want the first two > 0, no spares", ahead.out.Ahead, ahead.out.AheadAsked, ahead.out.Spared)
	}
	if spare.out.Spared == 0 {
		t.Error("no spare was measured")
	}
	if ahead.idle >= plain.idle || spare.idle >= ahead.idle {
		t.Errorf("idle %.2f s without measuring ahead, %.2f s with, %.2f s with spares: want each less", plain.idle, ahead.idle, spare.idle)
	}
	if float64(ahead.evals) < 1.1*float64(plain.evals) || spare.evals <= ahead.evals {
		t.Errorf("%d candidates without measuring ahead, %d with, %d with spares: want 10 %% more, then more", plain.evals, ahead.evals, spare.evals)
	}
	for _, other := range []result{ahead, spare} {
		sameAsks(t, plain.st, other.st)
	}
	// Where slow builds keep the pool busy, spares start only on a pool
	// half idle and delay the batches' builds little: the device idles no
	// larger share of the time (within a point), for no fewer candidates.
	slowAhead, slowSpare := run(noSpares, true), run(spares, true)
	t.Logf("slow builds, measuring ahead: idle %.1f of %.1f s, %d candidates", slowAhead.idle, slowAhead.wall, slowAhead.evals)
	t.Logf("slow builds, with spares:     idle %.1f of %.1f s, %d candidates (%d spares)", slowSpare.idle, slowSpare.wall, slowSpare.evals, slowSpare.out.Spared)
	if slowSpare.idle/slowSpare.wall > slowAhead.idle/slowAhead.wall+0.01 || slowSpare.evals < slowAhead.evals {
		t.Errorf("slow builds: idle %.2f s and %d candidates with spares, %.2f s and %d without", slowSpare.idle, slowSpare.evals, slowAhead.idle, slowAhead.evals)
	}
	sameAsks(t, slowAhead.st, slowSpare.st)
}

// sameAsks checks that the strategy proposed the same batches in b as in
// a, up to where the shorter run a stopped, and was told the same answer
// for each candidate.
func sameAsks(t *testing.T, a, b *told) {
	t.Helper()
	n := len(a.batches) - 1 // the last batch was cut by the budget
	if n < 5 || len(b.batches) < n || !slices.Equal(a.batches[:n], b.batches[:n]) {
		t.Errorf("the strategy proposed other batches measuring ahead (first %d of %d and %d)", n, len(a.batches), len(b.batches))
	}
	first := map[string]string{}
	for _, ans := range b.answers {
		k, _, _ := strings.Cut(ans, " ")
		if _, ok := first[k]; !ok {
			first[k] = ans
		}
	}
	seen := map[string]bool{}
	for _, ans := range a.answers {
		k, _, _ := strings.Cut(ans, " ")
		if seen[k] {
			continue
		}
		seen[k] = true
		if other, ok := first[k]; ok && other != ans {
			t.Errorf("%s measuring ahead, %s without", other, ans)
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

// sparing is allAbilities with spares (Sparer), which it records, with
// those announced after they were measured (seen).
type sparing struct {
	allAbilities
	lists [][]Candidate
	seen  func(Candidate) bool
	stale []Candidate
}

func (s *sparing) Spare(cs []Candidate) {
	s.lists = append(s.lists, slices.Clone(cs))
	for _, c := range cs {
		if s.seen(c) {
			s.stale = append(s.stale, c)
		}
	}
}

// Spares: announced after each batch's prefetch, fresh ones only, drawn
// from the pool; measured ahead after the batch's requests and the
// guesses, only when their builds are done; dropped when the search ends;
// none with MaxEvals or NoAhead.
func TestSpares(t *testing.T) {
	c := func(x int) Candidate { return Candidate{"x": x} }
	var pool []Candidate
	for x := range 40 {
		pool = append(pool, c(x))
	}
	tests := []struct {
		name     string
		noAhead  bool
		maxEvals int
		ready    func(x int) bool
		fills    bool     // ready spares fill the waits (checked below)
		want     []string // measured, where none does
		lists    bool     // Spare called
	}{
		{name: "a ready spare fills the wait", ready: func(x int) bool { return x >= 20 }, lists: true, fills: true},
		{name: "nothing ready", ready: func(int) bool { return false }, lists: true,
			want: []string{"0×2", "1×2", "2×2"}},
		{name: "NoAhead", noAhead: true, ready: func(x int) bool { return x >= 20 },
			want: []string{"0×2", "1×2", "2×2"}},
		{name: "MaxEvals", maxEvals: 30, ready: func(x int) bool { return x >= 20 },
			want: []string{"0×2", "1×2", "2×2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var measured []string
			target := &sparing{allAbilities: allAbilities{
				measure: func(x Candidate, n int) ([]float64, error) {
					measured = append(measured, fmt.Sprintf("%d×%d", x["x"], n))
					return make([]float64, n), nil
				},
				ready: func(x Candidate) bool { return tc.ready(x["x"]) },
				stop:  func(Request) string { return "" },
			}}
			target.seen = func(x Candidate) bool {
				for _, m := range measured {
					if strings.HasPrefix(m, fmt.Sprint(x["x"], "×")) {
						return true
					}
				}
				return false
			}
			d := Driver{Target: target, Pool: pool, Batch: 4, NoAhead: tc.noAhead, MaxEvals: tc.maxEvals, Options: Options{Seed: 9}}
			st := &scripted{batches: [][]Request{{{Candidate: c(0), Samples: 2}}, {{Candidate: c(1), Samples: 2}, {Candidate: c(2), Samples: 2}}}}
			s := newSession(d)
			s.loop(st)
			if s.sparer != nil {
				s.sparer.Spare(nil)
			}
			if !tc.lists {
				if len(target.lists) != 0 {
					t.Fatalf("Spare called %d times, want none", len(target.lists))
				}
			} else {
				// One per batch and one after each spare measured (a fresh
				// one in its place), then none.
				if n := len(target.lists); n != 3+s.spared || len(target.lists[n-1]) != 0 {
					t.Fatalf("%d Spare lists for %d spares measured, the last %v: want one per batch and per spare, then none", n, s.spared, target.lists[n-1])
				}
				for _, l := range target.lists[:len(target.lists)-1] {
					if len(l) != spareCount {
						t.Errorf("%d spares announced, want %d", len(l), spareCount)
					}
				}
			}
			if !tc.fills {
				if !slices.Equal(measured, tc.want) || s.spared != 0 {
					t.Errorf("measured %v (%d spares), want %v", measured, s.spared, tc.want)
				}
				return
			}
			// Each request waits behind ready spares, measured in the
			// order announced (those measured dropped from the next list),
			// none of them a request of the batch.
			if s.spared == 0 || s.spared != s.ahead || len(measured) != 3+s.spared {
				t.Fatalf("measured %v: %d ahead, %d spares", measured, s.ahead, s.spared)
			}
			seen := map[string]bool{}
			for _, m := range measured {
				if seen[m] {
					t.Errorf("%s measured twice", m)
				}
				seen[m] = true
			}
			first := target.lists[0]
			for _, x := range first {
				if x["x"] >= 20 {
					if want := fmt.Sprintf("%d×2", x["x"]); measured[0] != want {
						t.Errorf("first measured %s, want the first ready spare %s (list %v)", measured[0], want, first)
					}
					break
				}
			}
			if len(target.stale) > 0 {
				t.Errorf("spares announced after they were measured: %v", target.stale)
			}
		})
	}
}

// slowNext is a strategy whose Next takes d after its first.
type slowNext struct {
	Strategy
	d     time.Duration
	calls int
}

func (s *slowNext) Next() []Request {
	if s.calls++; s.calls > 1 {
		time.Sleep(s.d)
	}
	return s.Strategy.Next()
}

// With SpareAfter, a strategy slow to propose its next batch has the
// device measure ready spares meanwhile; without it, or with every build
// ready and a quick strategy, none.
func TestSparesWhileProposing(t *testing.T) {
	c := func(x int) Candidate { return Candidate{"x": x} }
	var pool []Candidate
	for x := range 40 {
		pool = append(pool, c(x))
	}
	for _, tc := range []struct {
		name       string
		after      time.Duration
		slow       time.Duration
		wantSpares bool
	}{
		{"slow strategy", time.Millisecond, 30 * time.Millisecond, true},
		{"SpareAfter 0", 0, 30 * time.Millisecond, false},
		{"quick strategy", time.Second, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var measured []string
			target := &sparing{allAbilities: allAbilities{
				measure: func(x Candidate, n int) ([]float64, error) {
					measured = append(measured, fmt.Sprint(x["x"]))
					time.Sleep(time.Millisecond)
					return make([]float64, n), nil
				},
				ready: func(Candidate) bool { return true },
				stop:  func(Request) string { return "" },
			}, seen: func(Candidate) bool { return false }}
			d := Driver{Target: target, Pool: pool, Batch: 4, SpareAfter: tc.after, Options: Options{Seed: 9}}
			st := &slowNext{Strategy: &scripted{batches: [][]Request{{{Candidate: c(0), Samples: 2}}, {{Candidate: c(1), Samples: 2}}, {{Candidate: c(2), Samples: 2}}}}, d: tc.slow}
			s := newSession(d)
			s.loop(st)
			t.Logf("measured %v, %d spares", measured, s.spared)
			if (s.spared > 0) != tc.wantSpares || s.spared != s.ahead {
				t.Errorf("%d spares (%d measured ahead), want spares: %v", s.spared, s.ahead, tc.wantSpares)
			}
			for _, r := range []string{"0", "1", "2"} {
				if !slices.Contains(measured, r) {
					t.Errorf("request %s not measured: %v", r, measured)
				}
			}
		})
	}
}

// slowTell is a strategy whose Tell of the i-th measurement returns only
// once the (i+1)-th has begun (measuring receives each one's index), or
// after a second, then noted as not overlapped.
type slowTell struct {
	scripted
	measuring   chan int
	overlapped  int
	sequential  int
	lastRequest string
}

func (s *slowTell) Tell(r Result) {
	s.scripted.Tell(r)
	if r.Candidate.Key() == s.lastRequest {
		return // nothing is measured after it
	}
	next := len(s.told) // the index of the measurement after this one
	timeout := time.After(time.Second)
	for {
		select {
		case i := <-s.measuring:
			if i == next {
				s.overlapped++
				return
			}
		case <-timeout:
			s.sequential++
			return
		}
	}
}

// On a device beside the host (Readier), the strategy is told of a
// request while the next of its batch is measured, and told of each in
// the order measured; without a Readier, Tell returns before the next
// measurement.
func TestTellOverlapsMeasure(t *testing.T) {
	c := func(x int) Candidate { return Candidate{"x": x} }
	for _, ready := range []bool{true, false} {
		var measured []string
		st := &slowTell{measuring: make(chan int, 16), lastRequest: c(3).Key()}
		st.batches = [][]Request{{{Candidate: c(0), Samples: 1}, {Candidate: c(1), Samples: 1}}, {{Candidate: c(2), Samples: 1}, {Candidate: c(3), Samples: 1}}}
		measure := func(x Candidate, n int) ([]float64, error) {
			measured = append(measured, x.Key())
			st.measuring <- len(measured) - 1
			return make([]float64, n), nil
		}
		var target Target = MeasureFunc(measure)
		if ready {
			target = &allAbilities{measure: measure, ready: func(Candidate) bool { return true }, stop: func(Request) string { return "" }}
		}
		s := newSession(Driver{Target: target})
		s.loop(st)
		if !slices.Equal(st.told, measured) || len(measured) != 4 {
			t.Errorf("ready %v: told %v, measured %v", ready, st.told, measured)
		}
		// With a Readier each Tell within a batch overlaps the next
		// measurement; the batch's last must end before the next batch is
		// proposed. Without, each waits out its timeout.
		if ready && (st.overlapped != 2 || st.sequential != 1) {
			t.Errorf("with a Readier: %d Tells overlapped the next measurement, %d did not; want 2 and 1", st.overlapped, st.sequential)
		}
		if !ready && (st.overlapped != 0 || st.sequential != 3) {
			t.Errorf("without a Readier: %d Tells overlapped the next measurement, %d did not; want 0 and 3", st.overlapped, st.sequential)
		}
	}
}
