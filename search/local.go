package search

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/kerntune/kerntune/internal/stats"
)

// This file holds the strategies that spend samples where they matter:
// racing (random order, losers stopped early), iterated local search (ils),
// simulated annealing (anneal) and warm (ils from warm starts). They share
// one evaluation engine: a proposer names the next candidate, the engine
// races it against the incumbent and reports its cost back.

// raceDefaults fills the racing options.
func (o Options) raceDefaults() Options {
	if o.RaceFirst <= 0 {
		o.RaceFirst = 3
	}
	if o.RaceMax <= 0 {
		o.RaceMax = 20
	}
	o.RaceFirst = min(o.RaceFirst, o.RaceMax)
	if !(o.Alpha > 0 && o.Alpha < 1) {
		o.Alpha = 0.01
	}
	return o
}

// proposer chooses candidates; observe reports a candidate's cost (its
// median, +Inf when it failed). propose returns false when it has nothing left.
type proposer interface {
	propose() (Candidate, bool)
	observe(c Candidate, cost float64)
}

// batchProposer is a proposer that can name several candidates before it
// learns their costs (Options.Batch): proposeBatch returns at most k
// distinct unmeasured candidates, none of them in flight, or none when it
// has nothing left. Proposers without it propose one at a time.
type batchProposer interface {
	proposeBatch(k int) []Candidate
}

// raced evaluates proposed candidates, one at a time or in batches
// (Options.Batch). A candidate first gets RaceFirst samples; it is dropped
// as soon as a one-sided Mann-Whitney U test says it is slower than the
// incumbent (p < Alpha), and otherwise sampled up to RaceMax (doubling)
// and then compared by median. With NoRace every candidate gets RaceMax
// samples. A batch's survivors get their further samples together; the
// next batch is proposed when every candidate of the last one is decided.
//
// The first samples of a batch may be told in any order (Unordered) when
// they cannot make a candidate the incumbent (RaceFirst < RaceMax, racing
// on): each is then decided against the same incumbent, whatever the
// order. What depends on the order is kept out of it: the survivors' further
// samples are asked for in the order proposed, and the proposer learns the
// costs of the candidates decided in one round in that order too, at the
// next Next (ils moves and reshuffles its neighbours at each improvement,
// bo adds the costs to its process one by one). Without reordering this is
// the order in which they were told anyway.
type raced struct {
	name  string
	book  *book
	prop  proposer
	opts  Options
	evals int

	active  []Candidate // proposed and not yet decided
	pending []Request
	best    Candidate
	done    bool
	// rank is the proposal index of each candidate of the current batch;
	// decided are its candidates decided since the last Next, for the proposer.
	rank     map[string]int
	decided  []decision
	anyOrder bool
}

// decision is a candidate decided with its cost (proposer.observe).
type decision struct {
	c    Candidate
	cost float64
}

func newRaced(name string, p proposer, opts Options) *raced {
	return &raced{name: name, book: newBook(), prop: p, opts: opts}
}

func (r *raced) Name() string { return r.name }

func (r *raced) Next() []Request {
	r.report()
	r.anyOrder = false
	if r.pending != nil {
		reqs := r.pending
		r.pending = nil
		slices.SortStableFunc(reqs, func(a, b Request) int {
			return r.rank[a.Candidate.Key()] - r.rank[b.Candidate.Key()]
		})
		return reqs
	}
	if r.done || len(r.active) > 0 {
		return nil
	}
	k := 1
	if r.opts.Batch > 1 && r.best != nil {
		// The first candidate (the default) is measured alone: it becomes
		// the incumbent the others race against.
		k = r.opts.Batch
	}
	if r.opts.MaxCandidates > 0 {
		k = min(k, r.opts.MaxCandidates-r.evals)
	}
	if k <= 0 {
		r.done = true
		return nil
	}
	var cands []Candidate
	if bp, ok := r.prop.(batchProposer); ok && k > 1 {
		cands = bp.proposeBatch(k)
	} else if c, ok := r.prop.propose(); ok {
		cands = []Candidate{c}
	}
	if len(cands) == 0 {
		r.done = true
		return nil
	}
	n := r.opts.RaceFirst
	if r.opts.NoRace || r.best == nil {
		n = r.opts.RaceMax
	}
	reqs := make([]Request, len(cands))
	r.rank = make(map[string]int, len(cands))
	for i, c := range cands {
		reqs[i] = Request{Candidate: c, Samples: n}
		r.rank[c.Key()] = i
	}
	r.evals += len(cands)
	r.active = cands
	// With n = RaceMax (no racing, or no incumbent yet) a candidate may
	// become the incumbent at its first result and the next ones race
	// against it: the order of the results matters.
	r.anyOrder = n < r.opts.RaceMax
	return reqs
}

// AnyOrder implements Unordered (see raced).
func (r *raced) AnyOrder() bool { return r.anyOrder }

// report hands the proposer the costs of the candidates decided since the
// last Next, in the order they were proposed.
func (r *raced) report() {
	slices.SortStableFunc(r.decided, func(a, b decision) int {
		return r.rank[a.c.Key()] - r.rank[b.c.Key()]
	})
	for _, d := range r.decided {
		r.prop.observe(d.c, d.cost)
	}
	r.decided = r.decided[:0]
}

func (r *raced) Tell(res Result) {
	r.book.tell(res)
	k := res.Candidate.Key()
	i := slices.IndexFunc(r.active, func(c Candidate) bool { return c.Key() == k })
	if i < 0 {
		return
	}
	if res.Err != nil {
		r.finish(i, math.Inf(1))
		return
	}
	s := r.book.samples[k]
	if r.best != nil && !r.opts.NoRace {
		if stats.MannWhitneyU(s, r.book.samples[r.best.Key()]).PGreater < r.opts.Alpha {
			r.finish(i, stats.Median(s)) // a loser: stop it early
			return
		}
	}
	if len(s) >= r.opts.RaceMax {
		med := stats.Median(s)
		if r.best == nil || med < r.book.median(r.best.Key()) {
			r.best = r.active[i]
		}
		r.finish(i, med)
		return
	}
	more := min(len(s), r.opts.RaceMax-len(s)) // doubling
	r.pending = append(r.pending, Request{Candidate: r.active[i], Samples: more})
}

// lookahead is implemented by proposers that can name what they expect to
// propose after the current batch (Lookahead).
type lookahead interface {
	upcoming(n int) []Candidate
}

// Upcoming implements Lookahead for proposers that can look ahead.
func (r *raced) Upcoming(n int) []Candidate {
	if la, ok := r.prop.(lookahead); ok && !r.done {
		return la.upcoming(n)
	}
	return nil
}

// finish decides active candidate i with its cost; the proposer learns it
// at the next Next (report).
func (r *raced) finish(i int, cost float64) {
	c := r.active[i]
	r.active = slices.Delete(r.active, i, i+1)
	r.decided = append(r.decided, decision{c, cost})
}

func (r *raced) Best() (Candidate, []float64, bool) {
	if r.best == nil {
		return nil, nil, false
	}
	return r.best, r.book.samples[r.best.Key()], true
}

// grid indexes the candidates by parameter value for neighbourhoods: the
// parameters are those the candidates name, each with its distinct values sorted.
type grid struct {
	names   []string
	values  [][]int
	pos     []map[int]int // value → index per parameter
	present map[string]Candidate
	list    []Candidate
}

func newGrid(cands []Candidate) *grid {
	g := &grid{present: map[string]Candidate{}}
	if len(cands) == 0 {
		return g
	}
	for n := range cands[0] {
		g.names = append(g.names, n)
	}
	sort.Strings(g.names)
	for _, n := range g.names {
		seen := map[int]bool{}
		var vs []int
		for _, c := range cands {
			if v, ok := c[n]; ok && !seen[v] {
				seen[v] = true
				vs = append(vs, v)
			}
		}
		sort.Ints(vs)
		pos := map[int]int{}
		for i, v := range vs {
			pos[v] = i
		}
		g.values = append(g.values, vs)
		g.pos = append(g.pos, pos)
	}
	for _, c := range cands {
		if _, dup := g.present[c.Key()]; !dup {
			g.present[c.Key()] = c
			g.list = append(g.list, c)
		}
	}
	return g
}

// neighbours are the candidates one step away from c along one parameter:
// for each parameter and direction, the nearest value for which the
// configuration exists (so restricted spaces stay connected).
func (g *grid) neighbours(c Candidate) []Candidate { return g.nb(c, false) }

// far are the other candidates that differ from c in one parameter (the
// Hamming neighbourhood without the adjacent values).
func (g *grid) far(c Candidate) []Candidate {
	adj := map[string]bool{}
	for _, a := range g.nb(c, false) {
		adj[a.Key()] = true
	}
	var out []Candidate
	for _, h := range g.nb(c, true) {
		if !adj[h.Key()] {
			out = append(out, h)
		}
	}
	return out
}

func (g *grid) nb(c Candidate, hammingNB bool) []Candidate {
	var out []Candidate
	for i, n := range g.names {
		at, ok := g.pos[i][c[n]]
		if !ok {
			continue
		}
		if hammingNB {
			for j, v := range g.values[i] {
				if j == at {
					continue
				}
				nc := c.Clone()
				nc[n] = v
				if p, ok := g.present[nc.Key()]; ok {
					out = append(out, p)
				}
			}
			continue
		}
		for _, d := range []int{-1, 1} {
			for j := at + d; j >= 0 && j < len(g.values[i]); j += d {
				nc := c.Clone()
				nc[n] = g.values[i][j]
				if p, ok := g.present[nc.Key()]; ok {
					out = append(out, p)
					break
				}
			}
		}
	}
	return out
}

// perturb changes k random parameters of c to random values and returns
// the first such configuration that exists and satisfies ok.
func (g *grid) perturb(c Candidate, k int, rng *rand.Rand, ok func(Candidate) bool) (Candidate, bool) {
	for try := 0; try < 50; try++ {
		nc := c.Clone()
		for j := 0; j < k; j++ {
			i := rng.IntN(len(g.names))
			nc[g.names[i]] = g.values[i][rng.IntN(len(g.values[i]))]
		}
		if p, found := g.present[nc.Key()]; found && ok(p) {
			return p, true
		}
	}
	return nil, false
}

// localState is what the local-search proposers share: the grid, the
// costs observed, the starting list and a random source.
type localState struct {
	g      *grid
	rng    *rand.Rand
	cost   map[string]float64
	starts []Candidate // measured first, in order
	order  []Candidate // random order over the space, for fresh picks
	next   int
	// started counts the starts proposed (or passed over as seen).
	started int
	// inflight are the candidates of the current batch not yet observed.
	inflight map[string]bool
}

func newLocalState(cands []Candidate, opts Options, nRandom int) *localState {
	ls := &localState{g: newGrid(cands), rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x5851f42d4c957f2d)),
		cost: map[string]float64{}, inflight: map[string]bool{}}
	k := min(max(opts.Keep, 0), len(cands))
	ls.order = shuffled(cands[k:], opts.Seed)
	ls.starts = append(ls.starts, cands[:k]...)
	for _, c := range ls.order {
		if len(ls.starts) >= k+nRandom {
			break
		}
		ls.starts = append(ls.starts, c)
	}
	return ls
}

// seen reports whether c was measured or is in flight (proposed in the
// current batch): either way it is not proposed again.
func (ls *localState) seen(c Candidate) bool {
	k := c.Key()
	_, ok := ls.cost[k]
	return ok || ls.inflight[k]
}

// nextStart returns the next start not yet seen, in order.
func (ls *localState) nextStart() (Candidate, bool) {
	for ls.started < len(ls.starts) {
		c := ls.starts[ls.started]
		ls.started++
		if !ls.seen(c) {
			return c, true
		}
	}
	return nil, false
}

// fresh returns an unmeasured candidate in random order.
func (ls *localState) fresh() (Candidate, bool) {
	for ; ls.next < len(ls.order); ls.next++ {
		if c := ls.order[ls.next]; !ls.seen(c) {
			return c, true
		}
	}
	return nil, false
}

// bestSeen is the lowest-cost measured candidate.
func (ls *localState) bestSeen() (Candidate, float64) {
	var best Candidate
	bc := math.Inf(1)
	for _, c := range ls.g.list {
		if v, ok := ls.cost[c.Key()]; ok && v < bc {
			best, bc = c, v
		}
	}
	return best, bc
}

// ils is iterated local search: after the starts, first-improvement hill
// climbing over the neighbourhood; at a local optimum it perturbs the best
// point found so far (Perturb random parameters) and climbs again.
type ils struct {
	*localState
	perturbK int
	cur      Candidate
	curCost  float64
	cands    []Candidate // unmeasured neighbours of cur, in random order
	widened  bool        // cands holds the far neighbours of cur
	pending  Candidate
	// model, when set (strategy model), orders the neighbours by predicted
	// time instead of at random and picks the perturbation it predicts fastest.
	model *surrogate
	// global, when set (strategy bo), proposes by expected improvement
	// after the starts and before the climb (bo.go); it is dropped when its
	// phase ends.
	global *bo
	// batch is the last batch proposed, in order (upcoming).
	batch []Candidate
}

func (s *ils) propose() (Candidate, bool) {
	if c, ok := s.nextStart(); ok {
		return c, true
	}
	if s.global != nil {
		if s.global.active() {
			s.global.left--
			if c, ok := s.global.pick(); ok {
				return c, true
			}
			return s.fresh()
		}
		s.global = nil
	}
	if s.cur == nil {
		s.cur, s.curCost = s.bestSeen()
		if s.cur == nil {
			return s.fresh()
		}
		s.refill()
	}
	for {
		for len(s.cands) > 0 {
			c := s.cands[0]
			s.cands = s.cands[1:]
			if !s.seen(c) {
				return c, true
			}
		}
		if !s.widened {
			// No adjacent value helps: try every other value of each parameter.
			s.widened = true
			s.cands = s.g.far(s.cur)
			s.rng.Shuffle(len(s.cands), func(i, j int) { s.cands[i], s.cands[j] = s.cands[j], s.cands[i] })
			s.rankCands()
			continue
		}
		// Local optimum: perturb the best point found so far and climb from there.
		from, _ := s.bestSeen()
		if from == nil {
			return s.fresh()
		}
		p, ok := s.perturbFrom(from)
		if !ok {
			if p, ok = s.fresh(); !ok {
				return nil, false
			}
		}
		s.pending = p // climb from it whatever its cost
		return p, true
	}
}

func (s *ils) refill() {
	s.widened = false
	s.cands = s.g.neighbours(s.cur)
	s.rng.Shuffle(len(s.cands), func(i, j int) { s.cands[i], s.cands[j] = s.cands[j], s.cands[i] })
	s.rankCands()
}

func (s *ils) rankCands() {
	if s.model != nil {
		s.model.rank(s.cands)
	}
}

// perturbFrom is a random perturbation of from; with a model, the fastest
// predicted of modelPerturbTries perturbations.
func (s *ils) perturbFrom(from Candidate) (Candidate, bool) {
	unseen := func(c Candidate) bool { return !s.seen(c) }
	if s.model == nil {
		return s.g.perturb(from, s.perturbK, s.rng, unseen)
	}
	var tries []Candidate
	for i := 0; i < modelPerturbTries; i++ {
		if p, ok := s.g.perturb(from, s.perturbK, s.rng, unseen); ok {
			tries = append(tries, p)
		}
	}
	if len(tries) == 0 {
		return nil, false
	}
	s.model.rank(tries)
	return tries[0], true
}

// proposeBatch is up to k proposals made before any of them is measured:
// the starts, the global phase's picks (bo: each pick believes the model's
// prediction at the earlier ones, bo.go), the next neighbours of the
// current point in their order. A perturbation ends the batch, since the
// climb goes on from wherever it lands.
func (s *ils) proposeBatch(k int) []Candidate {
	s.batch = s.batch[:0]
	return batchOf(k, s.propose, func(c Candidate) bool {
		s.inflight[c.Key()] = true
		s.batch = append(s.batch, c)
		if s.global != nil && s.global.active() {
			s.global.believe(c)
		}
		return s.pending == nil
	})
}

// upcoming names candidates the search expects to propose after the
// current batch, without proposing them: the global phase's next n picks
// (believed like the batch's, until the first measurement comes back),
// then the 2n it ranks next by expected improvement as it stands (the
// picks after the batch's results often come from them); in
// the climb, the current point's next n neighbours, then n neighbours of
// the batch's candidate predicted fastest, where the climb goes next if
// it proves faster than the current point (a batch that moves the climb
// then finds its neighbours compiled).
func (s *ils) upcoming(n int) []Candidate {
	var out []Candidate
	if s.global != nil && s.global.active() {
		for len(out) < min(n, s.global.left) {
			c, ok := s.global.pick()
			if !ok {
				break
			}
			s.global.believe(c)
			out = append(out, c)
		}
		return append(out, s.global.ranked(2*n)...)
	}
	for _, c := range s.cands {
		if len(out) >= n {
			break
		}
		if !s.seen(c) {
			out = append(out, c)
		}
	}
	lead := s.leadInFlight()
	if lead == nil {
		return out
	}
	nb := s.g.neighbours(lead)
	if s.model != nil {
		s.model.rank(nb)
	}
	in := map[string]bool{}
	for _, c := range out {
		in[c.Key()] = true
	}
	for i, added := 0, 0; i < len(nb) && added < n; i++ {
		if c := nb[i]; !s.seen(c) && !in[c.Key()] {
			in[c.Key()] = true
			out = append(out, c)
			added++
		}
	}
	return out
}

// leadInFlight is the candidate of the current batch, not yet observed,
// that the model predicts fastest (without a model, the first), or nil.
func (s *ils) leadInFlight() Candidate {
	var fl []Candidate
	for _, c := range s.batch {
		if s.inflight[c.Key()] {
			fl = append(fl, c)
		}
	}
	if len(fl) == 0 {
		return nil
	}
	if s.model != nil {
		s.model.rank(fl)
	}
	return fl[0]
}

func (s *ils) observe(c Candidate, cost float64) {
	delete(s.inflight, c.Key())
	if s.global != nil {
		s.global.observe(c, cost)
	}
	if s.model != nil {
		s.model.observe(c, cost)
	}
	s.cost[c.Key()] = cost
	if s.cur == nil {
		return
	}
	jump := s.pending != nil && s.pending.Key() == c.Key()
	if jump && !math.IsInf(cost, 1) || cost < s.curCost {
		s.cur, s.curCost = c, cost
		s.refill()
	}
	if jump {
		s.pending = nil
	}
}

// anneal is simulated annealing over the neighbourhood: a random neighbour
// replaces the current point when faster, or when slower by a relative
// amount δ with probability exp(−δ/T); T falls geometrically from T0 to T1
// over the evaluation budget. Measured neighbours cost nothing to revisit.
type anneal struct {
	*localState
	budget  int
	evals   int
	cur     Candidate
	curCost float64
}

const annealT0, annealT1 = 0.5, 0.005

func (s *anneal) temperature() float64 {
	f := math.Min(1, float64(s.evals)/float64(max(1, s.budget)))
	return annealT0 * math.Pow(annealT1/annealT0, f)
}

func (s *anneal) propose() (Candidate, bool) {
	if c, ok := s.nextStart(); ok {
		return c, true
	}
	if s.cur == nil {
		if s.cur, s.curCost = s.bestSeen(); s.cur == nil {
			return s.fresh()
		}
	}
	// Walk through measured neighbours for free; propose the first unmeasured one.
	for step := 0; step < 200; step++ {
		nb := s.g.neighbours(s.cur)
		if len(nb) == 0 {
			break
		}
		c := nb[s.rng.IntN(len(nb))]
		if !s.seen(c) {
			return c, true
		}
		s.consider(c, s.cost[c.Key()])
	}
	// Stuck among measured points: restart from a fresh one.
	c, ok := s.fresh()
	if ok {
		s.cur = nil
	}
	return c, ok
}

func (s *anneal) consider(c Candidate, cost float64) {
	if math.IsInf(cost, 1) {
		return
	}
	if s.cur == nil || cost < s.curCost {
		s.cur, s.curCost = c, cost
		return
	}
	delta := (cost - s.curCost) / s.curCost
	if s.rng.Float64() < math.Exp(-delta/s.temperature()) {
		s.cur, s.curCost = c, cost
	}
}

func (s *anneal) observe(c Candidate, cost float64) {
	s.cost[c.Key()] = cost
	s.evals++
	if s.started >= len(s.starts) {
		s.consider(c, cost)
	}
}

// randomOrder proposes the Keep candidates, then the rest shuffled.
type randomOrder struct {
	order []Candidate
	i     int
}

func (p *randomOrder) propose() (Candidate, bool) {
	if p.i >= len(p.order) {
		return nil, false
	}
	p.i++
	return p.order[p.i-1], true
}

func (p *randomOrder) observe(Candidate, float64) {}

// proposeBatch is the next k candidates of the order.
func (p *randomOrder) proposeBatch(k int) []Candidate {
	return batchOf(k, p.propose, nil)
}

// batchOf is up to k proposals of propose, fewer where it runs out; took,
// when not nil, sees each one as it is taken and ends the batch by
// returning false.
func batchOf(k int, propose func() (Candidate, bool), took func(Candidate) bool) []Candidate {
	var out []Candidate
	for len(out) < k {
		c, ok := propose()
		if !ok {
			break
		}
		out = append(out, c)
		if took != nil && !took(c) {
			break
		}
	}
	return out
}

// localStarts is how many random candidates a local search measures before
// climbing: a fifth of the evaluation budget, at least 3 (10 without an
// evaluation budget). Chosen on the shared caches as a whole (a tenth and a
// twentieth did worse on average at 100 evaluations), not per cache.
func localStarts(opts Options) int {
	if opts.MaxCandidates <= 0 {
		return 10
	}
	return max(3, opts.MaxCandidates/5)
}
