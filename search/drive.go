package search

import (
	"math"
	"slices"
	"time"

	"github.com/kerntune/kerntune/internal/stats"
)

// DefaultStrategy is the strategy used when none is named, by kerntune tune,
// kerntune replay and the tuner's Config alike.
const DefaultStrategy = "bo"

// calibrationSamples is how many samples the default (or, without one, the
// first candidate that can be measured) gets before the search starts.
const calibrationSamples = 3

// Target is where a search meets a device, or a recording of one
// (kerntune replay reads a Kernel Tuner cache): Driver asks it for samples
// and, where it has them, for the optional abilities below (Calibrator,
// Planner, Stopper, Prefetcher, Readier), each detected once by a type
// assertion.
type Target interface {
	// Measure answers a request: n more timing samples of c, in seconds
	// per run, or the reason c failed.
	Measure(c Candidate, n int) ([]float64, error)
}

// MeasureFunc is a Target that only measures.
type MeasureFunc func(c Candidate, n int) ([]float64, error)

// Measure calls f.
func (f MeasureFunc) Measure(c Candidate, n int) ([]float64, error) { return f(c, n) }

// Calibrator is a Target with a time budget. Calibrated is told once,
// after the calibration, its seconds per sample (0 when nothing could be
// measured) and returns the seconds the search may spend; a Sizer strategy
// fits into them. With a Calibrator and no default that can be measured,
// the first candidate of the pool that can be measured (of the first five)
// calibrates.
type Calibrator interface {
	Calibrated(perSample float64) float64
}

// Planner is a Target that fixes the size of the search: Plan receives
// the number of candidates a Sizer chose (0 when none did) and returns the
// number to use (a resumed run returns the one of the run it resumes, so
// that the strategy asks again for what that run measured).
type Planner interface {
	Plan(size int) int
}

// Stopper is a Target that can end the search: Stop is asked before every
// request and returns why the search must end before it (e.g. "budget
// spent"), or "".
type Stopper interface {
	Stop(Request) string
}

// Prefetcher is a Target that builds candidates ahead: Prefetch receives,
// before each batch of requests, its candidates not measured before (a
// backend builds them in parallel), before the first of them is measured.
type Prefetcher interface {
	Prefetch(fresh []Candidate)
}

// Readier is a Target that can say whether a candidate's build is done
// (its compile has finished, successfully or not), so that measuring it
// waits for no compile. Before each measurement of a batch the strategy
// takes in any order (Unordered), the driver measures the first remaining
// request whose candidate is ready or was measured before; when none is,
// the first remaining request (which then waits for its compile).
// Requests for candidates measured before thus keep their order and are
// never held back. A Target without it has every batch measured in the
// order proposed (kerntune replay, whose searches must not depend on
// compile times).
//
// With a Readier and a Prefetcher, the driver measures ahead while a
// fresh request's build is not done (Driver.NoAhead turns this off): it
// measures other fresh candidates whose builds are done, the batch's later
// requests first, then (once the default and the warm starts are
// measured) the strategy's guesses at its next batches (Lookahead), newest
// first, then the spares (Sparer). Their samples are kept and handed to
// the strategy, as its answer, when it asks for them, so the strategy sees
// the same answers as without measuring ahead; a guess it never asks for
// is a measured candidate all the same (Outcome.Evals, and the Target has
// its samples). A request of more samples than were measured ahead takes
// the rest then.
type Readier interface {
	Ready(Candidate) bool
}

// Sparer is a Prefetcher whose builds can also be asked for at low
// priority. With a Readier too, the driver keeps spareCount candidates the
// search has not measured, drawn at random from the pool (Options.Seed),
// announced through Spare after each batch's Prefetch: the Target builds
// them only when nothing announced waits. Measuring ahead takes them, when
// their builds are done, after the batch's requests and the guesses, so
// that a wait for a compile that neither covers is spent measuring more
// of the space; each spare measured is replaced by a fresh one at once.
// Spare(nil) drops them when the search ends.
type Sparer interface {
	Spare(cands []Candidate)
}

// spareCount is how many spares the driver keeps announced: enough to
// occupy the pool's idle workers between two batches.
const spareCount = 16

// Sizer is implemented by strategies that fit themselves to a budget
// (halving sizes its first round so that the whole search fits). The
// driver calls SizeTo before the first Next.
type Sizer interface {
	// SizeTo limits the search to what fits into about samples timing
	// samples, one more per candidate for building it (+Inf: no limit), and
	// to at most evals candidates (≤ 0: no cap). It returns how many
	// candidates the search will start with, before Options.MaxCandidates
	// caps them.
	SizeTo(evals int, samples float64) int
}

// Lookahead is implemented by strategies that can name candidates they
// expect to propose after the batch they just proposed (ils: the next
// neighbours; bo: the next picks of expected improvement). With Batch > 1
// the driver prefetches them too, behind the batch, so that their
// compiles are done, or under way, when the next batch comes; a guess that
// turns out wrong costs only a compile.
type Lookahead interface {
	Upcoming(n int) []Candidate
}

// Unordered is implemented by strategies that can say whether the batch of
// requests their last Next returned may be measured in another order than
// proposed. With a Target that is a Readier, the driver then measures the batch's
// fresh candidates (not measured before) whose builds are done before those
// still compiling.
type Unordered interface {
	// AnyOrder reports whether the fresh requests of the last batch may be
	// told in any order without changing what the strategy does next or
	// picks as best, given the same results.
	AnyOrder() bool
}

// Driver runs one search, the same way for kerntune tune and kerntune
// replay: the default is measured first (it calibrates the time budget and
// always competes), then the warm starts, then whatever the strategy asks
// for, until the strategy is done, Stop says so or MaxEvals distinct
// candidates have been measured.
type Driver struct {
	// Strategy is the strategy's name (DefaultStrategy when empty); Options
	// configure it (Keep and MaxCandidates are set by the driver).
	Strategy string
	Options  Options
	// Pool is every candidate the search may measure: the valid space
	// (tune), or the recorded configurations (replay).
	Pool []Candidate
	// Default is the un-tuned configuration, nil for none. It is measured
	// first and kept at the head of the pool (Options.Keep); one not in Pool
	// is ignored.
	Default Candidate
	// Warm are candidates measured right after the default and kept too,
	// e.g. the entries of sibling devices; those not in Pool are ignored.
	Warm []Candidate
	// MaxEvals caps the distinct candidates measured (0: no cap); it is the
	// strategy's evaluation budget (Options.MaxCandidates).
	MaxEvals int
	// Target takes the samples (and budgets, plans, stops, prefetches as
	// far as it implements the optional interfaces).
	Target Target
	// Batch is how many fresh candidates the strategy proposes per ask
	// (Options.Batch; ≤ 1: one), so that a backend with a compile pool
	// builds the next ones while the device times the first. The raced
	// strategies (racing, ils, warm, model, bo) propose batches; anneal
	// one candidate at a time; exhaustive, random and halving ask for
	// whole rounds anyway. kerntune replay keeps 1, the sequential
	// search the strategy table was made with.
	Batch int
	// NoAhead turns off measuring ahead (see Readier): while the
	// candidate due next still compiles, the driver measures other fresh
	// candidates whose builds are done.
	NoAhead bool
	// SpareAfter, when positive, is how long the driver waits for the
	// strategy's next batch before it measures spares (Sparer) while the
	// strategy computes; 0: it waits (kerntune replay, and a simulation
	// on a virtual clock, whose strategies cost no time).
	SpareAfter time.Duration
}

// Outcome is what a search found.
type Outcome struct {
	// Best is the strategy's pick or, when the strategy measured nothing,
	// the fastest candidate the calibration measured; nil when no candidate
	// was measured without error.
	Best Candidate
	// Stopped is why the search ended before the strategy finished: the
	// reason Stop gave, "evaluation budget spent", or "".
	Stopped string
	// Evals is the number of distinct candidates measured, failures included.
	Evals int
	// Ahead is how many of them were measured ahead, while the candidate
	// due next still compiled; AheadAsked how many of those the strategy
	// asked for later (their samples were handed to it then); Spared how
	// many of those measured ahead were spares (Sparer).
	Ahead, AheadAsked, Spared int
	// PerSample is the calibration's seconds per sample, 0 when none.
	PerSample float64
}

// Run runs the search. It fails only when the strategy cannot be created
// (an unknown name, an empty pool); failed candidates are the
// Target's business and end up in Outcome only through Best.
func (d Driver) Run() (Outcome, error) {
	st, pool, keep, err := d.strategy()
	if err != nil {
		return Outcome{}, err
	}
	s := newSession(d)
	s.head = pool[:keep]

	var out Outcome
	if keep > 0 && d.Default != nil && pool[0].Key() == d.Default.Key() {
		out.PerSample = s.calibrate(pool[0])
	}
	sz, sizes := st.(Sizer)
	size := 0
	if cal, ok := d.Target.(Calibrator); ok {
		// No default measured: calibrate on the first candidate that can be measured.
		for _, c := range d.Pool[:min(len(d.Pool), 5)] {
			if out.PerSample > 0 {
				break
			}
			out.PerSample = s.calibrate(c)
		}
		left := cal.Calibrated(out.PerSample)
		if sizes && out.PerSample > 0 {
			size = sz.SizeTo(0, left/out.PerSample)
		}
	}
	if pl, ok := d.Target.(Planner); ok {
		if planned := pl.Plan(size); planned != size && sizes {
			sz.SizeTo(planned, math.Inf(1))
		}
	}

	out.Stopped = s.loop(st)
	if s.sparer != nil {
		s.sparer.Spare(nil)
	}
	out.Evals = len(s.cands)
	out.Ahead, out.AheadAsked, out.Spared = s.ahead, s.aheadAsked, s.spared
	if out.Stopped == "" && d.MaxEvals > 0 && out.Evals >= d.MaxEvals && out.Evals < len(d.Pool) {
		out.Stopped = "evaluation budget spent" // the strategy itself stopped at MaxCandidates
	}
	if best, _, ok := st.Best(); ok {
		out.Best = best
	} else {
		// The strategy measured nothing (stopped at once): the best the calibration measured.
		out.Best = s.bestMeasured()
	}
	return out, nil
}

// strategy creates the search's strategy on the pool as the search sees
// it (head), with how many candidates at its head are kept.
func (d Driver) strategy() (Strategy, []Candidate, int, error) {
	name := d.Strategy
	if name == "" {
		name = DefaultStrategy
	}
	pool, keep := d.head()
	opts := d.Options
	opts.Keep, opts.MaxCandidates = keep, d.MaxEvals
	if d.Batch > 0 {
		opts.Batch = d.Batch
	}
	st, err := New(name, pool, opts)
	return st, pool, keep, err
}

// FirstAsks are, in order, up to max of the candidates Run would measure
// first: the default and the warm starts, then the strategy's first batch
// and, for a strategy with a Lookahead, its guess at the next. It measures
// nothing and leaves d as it was; a caller that compiles ahead (the tuner,
// for the entry it tunes next) announces them before Run. A strategy that
// sizes itself to the budget may ask for others once sized: the guess then
// costs only compiles.
func (d Driver) FirstAsks(max int) []Candidate {
	st, pool, keep, err := d.strategy()
	if err != nil {
		return nil
	}
	var out []Candidate
	seen := map[string]bool{}
	add := func(c Candidate) {
		if k := c.Key(); !seen[k] && len(out) < max {
			seen[k] = true
			out = append(out, c)
		}
	}
	for _, c := range pool[:keep] {
		add(c)
	}
	for _, r := range st.Next() {
		add(r.Candidate)
	}
	if la, ok := st.(Lookahead); ok && d.Batch > 1 {
		for _, c := range la.Upcoming(d.Batch) {
			add(c)
		}
	}
	return out
}

// head orders the pool as the search sees it: the default (when in the
// pool), then the warm starts in the pool, then the rest in pool order; it
// returns the pool and how many candidates at its head are kept.
func (d Driver) head() ([]Candidate, int) {
	byKey := make(map[string]Candidate, len(d.Pool))
	for _, c := range d.Pool {
		byKey[c.Key()] = c
	}
	var head []Candidate
	inHead := map[string]bool{}
	add := func(c Candidate) {
		k := c.Key()
		if pc, ok := byKey[k]; ok && !inHead[k] {
			inHead[k] = true
			head = append(head, pc)
		}
	}
	if d.Default != nil {
		add(d.Default)
	}
	for _, w := range d.Warm {
		add(w)
	}
	if len(head) == 0 {
		return d.Pool, 0
	}
	pool := append(make([]Candidate, 0, len(d.Pool)), head...)
	for _, c := range d.Pool {
		if !inHead[c.Key()] {
			pool = append(pool, c)
		}
	}
	return pool, len(head)
}

// session is the state of one Run: what was measured, by candidate key.
type session struct {
	d          Driver
	stopper    Stopper    // nil when the Target has none
	prefetcher Prefetcher // nil when the Target has none
	readier    Readier    // nil when the Target has none
	sparer     Sparer     // nil when the Target has none, or cannot use it
	samples    map[string][]float64
	failed     map[string]bool
	cands      map[string]Candidate // every candidate measured, failed or not
	// guesses are the strategy's guesses at its next batches that were
	// prefetched (Lookahead), oldest first, at most maxGuesses.
	guesses []Candidate
	// head are the default and the warm starts (Driver.head): no guess is
	// measured ahead before them, as a tight budget is theirs.
	head []Candidate
	// banked are the answers measured ahead that the strategy has not
	// asked for yet, by key.
	banked map[string]kept
	// spares are the spares announced last (Sparer), in order; draw is
	// the pool in the random order they are drawn from, drawn how many of
	// it were drawn.
	spares []Candidate
	draw   []Candidate
	drawn  int
	// spareSamples is the samples a spare takes between two batches: as
	// many as the last fresh request's.
	spareSamples int
	// telling is closed when the Tell in flight returns (tell); nil when
	// none is.
	telling chan struct{}
	// ahead, aheadAsked and spared count the candidates measured ahead,
	// those of them the strategy asked for, and the spares (Outcome).
	ahead, aheadAsked, spared int
}

// kept is a measurement made ahead, kept for the strategy.
type kept struct {
	xs    []float64
	err   error
	asked bool // the strategy asked for some of it
}

// maxGuesses bounds the guesses kept for measuring ahead: those of the
// last few batches, whose builds the pool has finished or is working on.
const maxGuesses = 32

func newSession(d Driver) *session {
	s := &session{d: d, samples: map[string][]float64{}, failed: map[string]bool{}, cands: map[string]Candidate{}, banked: map[string]kept{}}
	s.stopper, _ = d.Target.(Stopper)
	s.prefetcher, _ = d.Target.(Prefetcher)
	s.readier, _ = d.Target.(Readier)
	if sp, ok := d.Target.(Sparer); ok && s.readier != nil && s.prefetcher != nil && !d.NoAhead && d.MaxEvals <= 0 {
		s.sparer = sp
		s.draw = shuffled(d.Pool, d.Options.Seed^0x5eed)
		s.spareSamples = calibrationSamples
	}
	return s
}

// announceSpares keeps spareCount spares not measured yet announced to
// the Sparer: those announced before, then fresh draws from the pool.
func (s *session) announceSpares() {
	if s.sparer == nil {
		return
	}
	fresh := func(c Candidate) bool { _, seen := s.cands[c.Key()]; return !seen }
	keep := slices.DeleteFunc(s.spares, func(c Candidate) bool { return !fresh(c) })
	for len(keep) < spareCount && s.drawn < len(s.draw) {
		if c := s.draw[s.drawn]; fresh(c) {
			keep = append(keep, c)
		}
		s.drawn++
	}
	s.spares = keep
	s.sparer.Spare(keep)
}

func (s *session) measure(c Candidate, n int) ([]float64, error) {
	k := c.Key()
	s.cands[k] = c
	xs, err := s.d.Target.Measure(c, n)
	if err != nil {
		s.failed[k] = true
		return nil, err
	}
	s.samples[k] = append(s.samples[k], xs...)
	return xs, nil
}

// calibrate measures c and returns its median seconds per sample (0 when
// it failed). The strategy is not told: it measures c again when it asks.
func (s *session) calibrate(c Candidate) float64 {
	xs, err := s.measure(c, calibrationSamples)
	if err != nil {
		return 0
	}
	return stats.Median(xs)
}

// loop is the ask/tell loop; it returns why it stopped early, or "".
func (s *session) loop(st Strategy) string {
	defer s.settle()
	for reqs := s.next(st); reqs != nil; reqs = s.next(st) {
		if s.prefetcher != nil {
			var fresh []Candidate
			inBatch := map[string]bool{}
			for _, req := range reqs {
				k := req.Candidate.Key()
				if _, seen := s.cands[k]; !seen && !inBatch[k] {
					inBatch[k] = true
					fresh = append(fresh, req.Candidate)
				}
			}
			if la, ok := st.(Lookahead); ok && s.d.Batch > 1 && len(fresh) > 0 {
				for _, c := range la.Upcoming(s.d.Batch) {
					k := c.Key()
					if _, seen := s.cands[k]; !seen && !inBatch[k] {
						inBatch[k] = true
						fresh = append(fresh, c)
						s.guess(c)
					}
				}
			}
			s.prefetcher.Prefetch(fresh)
			s.announceSpares()
		}
		reorder := s.readier != nil && len(reqs) > 1
		if un, ok := st.(Unordered); !ok || !un.AnyOrder() {
			reorder = false
		}
		if reorder || s.readier != nil {
			// The strategy's slice is left as it was, and is not read
			// while a Tell runs (tell).
			reqs = slices.Clone(reqs)
		}
		for len(reqs) > 0 {
			i := 0
			if reorder {
				i = s.pick(reqs)
			}
			req := reqs[i]
			if i == 0 {
				reqs = reqs[1:] // the strategy's slice is not written to
			} else {
				reqs = slices.Delete(reqs, i, i+1) // a clone (reorder)
			}
			if s.stopper != nil {
				if reason := s.stopper.Stop(req); reason != "" {
					return reason
				}
			}
			if _, seen := s.cands[req.Candidate.Key()]; !seen && s.d.MaxEvals > 0 && len(s.cands) >= s.d.MaxEvals {
				return "evaluation budget spent"
			}
			s.measureAhead(req, reqs)
			if _, seen := s.cands[req.Candidate.Key()]; !seen {
				s.spareSamples = req.Samples
			}
			xs, err := s.answer(req.Candidate, req.Samples)
			s.tell(st, Result{Candidate: req.Candidate, Samples: xs, Err: err})
		}
	}
	return ""
}

// tell tells st r. With a Readier (a device beside the host, not the
// host's own cores) it does so on a goroutine, so that the strategy's
// update (a Gaussian process over thousands of candidates takes
// milliseconds) runs while the device measures the next request; settle
// waits for it before the strategy is asked anything else. The strategy
// sees the same calls in the same order either way.
func (s *session) tell(st Strategy, r Result) {
	s.settle()
	if s.readier == nil {
		st.Tell(r)
		return
	}
	done := make(chan struct{})
	s.telling = done
	go func() {
		defer close(done)
		st.Tell(r)
	}()
}

// settle waits for a Tell in flight (tell).
func (s *session) settle() {
	if s.telling != nil {
		<-s.telling
		s.telling = nil
	}
}

// guess keeps c, a guess at the strategy's next batches just prefetched,
// for measuring ahead.
func (s *session) guess(c Candidate) {
	if len(s.guesses) == maxGuesses {
		s.guesses = slices.Delete(s.guesses, 0, 1)
	}
	s.guesses = append(s.guesses, c)
}

// answer is the answer to a request for n samples of c: the samples
// measured ahead first, then what is left to take.
func (s *session) answer(c Candidate, n int) ([]float64, error) {
	k := c.Key()
	a, ok := s.banked[k]
	if !ok {
		return s.measure(c, n)
	}
	if !a.asked {
		s.aheadAsked++
	}
	if a.err != nil {
		delete(s.banked, k)
		return nil, a.err
	}
	m := min(n, len(a.xs))
	if m < len(a.xs) {
		s.banked[k] = kept{xs: a.xs[m:], asked: true}
	} else {
		delete(s.banked, k)
	}
	xs := a.xs[:m:m]
	if m == n {
		return xs, nil
	}
	more, err := s.measure(c, n-m)
	if err != nil {
		return nil, err
	}
	return append(xs, more...), nil
}

// measureAhead measures, while req's build is not done, other fresh
// candidates whose builds are (Readier): the later fresh requests of the
// batch (rest), then the guesses, newest first; each gets as many samples
// as a fresh request of the batch. It stops when req is ready, nothing
// else is, or Stop says so (the request itself is then stopped by the
// loop or measured past its compile). With MaxEvals set, or before the
// default and the warm starts are measured, only the batch's requests are
// measured ahead: a guess would count against the cap, or take the
// budget of a warm start that a short run gives little more.
func (s *session) measureAhead(req Request, rest []Request) {
	if s.d.NoAhead || s.readier == nil || s.prefetcher == nil {
		return
	}
	if _, seen := s.cands[req.Candidate.Key()]; seen {
		return
	}
	for !s.readier.Ready(req.Candidate) {
		c, n, spare := s.readyElse(req, rest)
		if c == nil {
			return
		}
		if s.stopper != nil && s.stopper.Stop(Request{Candidate: c, Samples: n}) != "" {
			return
		}
		s.bankAhead(c, n, spare)
	}
}

// bankAhead measures c ahead, n samples, and keeps them for the strategy.
// A spare measured is replaced at once: a long wait (a build of seconds)
// outlasts the spares announced with the batch.
func (s *session) bankAhead(c Candidate, n int, spare bool) {
	xs, err := s.measure(c, n)
	s.banked[c.Key()] = kept{xs: xs, err: err}
	s.ahead++
	if spare {
		s.spared++
		s.announceSpares()
	}
}

// readyElse is a fresh candidate other than req's whose build is done,
// with its samples and whether it is a spare (measureAhead), or nil.
func (s *session) readyElse(req Request, rest []Request) (Candidate, int, bool) {
	fresh := func(c Candidate) bool {
		_, seen := s.cands[c.Key()]
		return !seen && c.Key() != req.Candidate.Key()
	}
	asked := 0
	for _, r := range rest {
		if asked == readyWindow {
			break
		}
		if fresh(r.Candidate) {
			asked++
			if s.readier.Ready(r.Candidate) {
				return r.Candidate, r.Samples, false
			}
		}
	}
	if s.d.MaxEvals > 0 || !s.headMeasured() {
		return nil, 0, false
	}
	for i := len(s.guesses) - 1; i >= 0; i-- {
		if c := s.guesses[i]; fresh(c) && s.readier.Ready(c) {
			return c, req.Samples, false
		}
	}
	if c := s.readySpare(req.Candidate); c != nil {
		return c, req.Samples, true
	}
	return nil, 0, false
}

// readySpare is the first spare not measured whose build is done, other
// than not, or nil.
func (s *session) readySpare(not Candidate) Candidate {
	for _, c := range s.spares {
		if _, seen := s.cands[c.Key()]; !seen && (not == nil || c.Key() != not.Key()) && s.readier.Ready(c) {
			return c
		}
	}
	return nil
}

// next is the strategy's next batch. With spares and SpareAfter, once
// the default and the warm starts are measured, the strategy proposes it
// on a goroutine of its own, and if it takes longer than SpareAfter the
// device measures spares whose builds are done meanwhile: a Gaussian
// process over thousands of candidates takes milliseconds a batch, which
// the device would otherwise idle. The strategy is not told of them, as
// of any candidate measured ahead.
func (s *session) next(st Strategy) []Request {
	s.settle()
	if s.sparer == nil || s.d.SpareAfter <= 0 || !s.headMeasured() {
		return st.Next()
	}
	proposed := make(chan []Request, 1)
	go func() { proposed <- st.Next() }()
	wait := time.NewTimer(s.d.SpareAfter)
	defer wait.Stop()
	select {
	case reqs := <-proposed:
		return reqs
	case <-wait.C:
	}
	for {
		select {
		case reqs := <-proposed:
			return reqs
		default:
		}
		c := s.readySpare(nil)
		if c == nil || s.stopper != nil && s.stopper.Stop(Request{Candidate: c, Samples: s.spareSamples}) != "" {
			return <-proposed
		}
		s.bankAhead(c, s.spareSamples, true)
	}
}

// headMeasured reports whether the default and the warm starts are
// measured.
func (s *session) headMeasured() bool {
	for _, c := range s.head {
		if _, seen := s.cands[c.Key()]; !seen {
			return false
		}
	}
	return true
}

// readyWindow bounds how many fresh requests pick asks the Readier about
// before one measurement: a strategy that asks for a whole round at once
// (exhaustive, random, halving) proposes the entire pool, whose compiles
// the pool finishes near the front of its order anyway, and each question
// may cost a call to a worker process.
const readyWindow = 32

// pick is the index of the request of reqs to measure next (Readier):
// the first for a candidate measured before or whose build is ready, among
// the first readyWindow fresh ones; else 0.
func (s *session) pick(reqs []Request) int {
	fresh := 0
	for i, req := range reqs {
		if _, seen := s.cands[req.Candidate.Key()]; seen {
			return i
		}
		if fresh == readyWindow {
			break
		}
		fresh++
		if s.readier.Ready(req.Candidate) {
			return i
		}
	}
	return 0
}

// bestMeasured is the candidate of lowest median among those measured
// without error (ties to the lower key), or nil.
func (s *session) bestMeasured() Candidate {
	bestKey, bestMed := "", math.Inf(1)
	for k, xs := range s.samples {
		if s.failed[k] || len(xs) == 0 {
			continue
		}
		if m := stats.Median(xs); m < bestMed || (m == bestMed && k < bestKey) {
			bestKey, bestMed = k, m
		}
	}
	if bestKey == "" {
		return nil
	}
	return s.cands[bestKey]
}
