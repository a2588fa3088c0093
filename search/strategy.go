package search

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/kerntune/kerntune/internal/stats"
)

// Request asks the tuner for Samples more timing samples of a candidate.
type Request struct {
	Candidate Candidate
	Samples   int
}

// Result answers a Request: the new samples (seconds per run), or the
// reason the candidate failed (build, verification or measurement); a failed
// candidate is never requested again.
type Result struct {
	Candidate Candidate
	Samples   []float64
	Err       error
}

// Strategy decides what to measure next. The tuner calls Next, performs
// the requests in order (or, for a strategy that allows it, the fresh ones
// in any order: Unordered), calling Tell after each, and stops when Next returns
// no request or its budget is spent; Best then names the winner.
type Strategy interface {
	Name() string
	Next() []Request
	Tell(Result)
	// Best returns the best candidate measured so far and its samples.
	Best() (Candidate, []float64, bool)
}

// Options configure the strategies.
type Options struct {
	Seed uint64
	// Samples per candidate for exhaustive and random.
	Samples int
	// MaxCandidates caps how many candidates are tried (0: all).
	MaxCandidates int
	// Keep is how many candidates at the head of the list are always tried
	// (e.g. the un-tuned default); the rest are shuffled by random and halving.
	Keep int
	// Eta is the halving factor: each round keeps 1/Eta of the candidates.
	Eta int
	// MinSamples is the first halving round's samples per candidate.
	MinSamples int
	// MaxSamples caps any candidate's total samples in halving.
	MaxSamples int
	// RaceFirst is the first batch of samples of a raced candidate (racing,
	// ils, anneal, warm); RaceMax caps its samples (a candidate not shown
	// slower than the incumbent is sampled up to RaceMax, doubling).
	RaceFirst int
	RaceMax   int
	// Alpha is the significance level at which a raced candidate is dropped
	// as slower than the incumbent (one-sided Mann-Whitney U).
	Alpha float64
	// NoRace gives every candidate of a raced strategy RaceMax samples: the
	// fixed-sample variant of the same search, for comparison.
	NoRace bool
	// Perturb is how many parameters ils changes at a local optimum.
	Perturb int
	// Batch is how many fresh candidates a raced strategy proposes at once
	// (≤ 1: one at a time), so that a backend compiles them in parallel
	// while the device times the first; see Driver.Batch.
	Batch int
}

func (o Options) withDefaults() Options {
	if o.Samples <= 0 {
		o.Samples = 10
	}
	if o.Eta < 2 {
		o.Eta = 3
	}
	if o.MinSamples <= 0 {
		o.MinSamples = 3
	}
	if o.MaxSamples <= 0 {
		o.MaxSamples = 60
	}
	return o
}

// Names lists the strategies New knows.
var Names = []string{"exhaustive", "random", "halving", "racing", "anneal", "ils", "warm", "model", "bo"}

// Canonical returns the name New gives the strategy called name: "default",
// the earlier name of warm (it clashed with "the default parameters"), is
// accepted for it.
func Canonical(name string) string {
	if name == "default" {
		return "warm"
	}
	return name
}

// New creates a strategy over the given (valid) candidates.
func New(name string, cands []Candidate, opts Options) (Strategy, error) {
	opts = opts.withDefaults()
	if len(cands) == 0 {
		return nil, fmt.Errorf("no valid candidates to search")
	}
	b := newBook()
	switch name = Canonical(name); name {
	case "exhaustive":
		return &fixed{name: name, book: b, order: limit(cands, opts.MaxCandidates), samples: opts.Samples}, nil
	case "random":
		return &fixed{name: name, book: b, order: limit(keepShuffled(cands, opts), opts.MaxCandidates), samples: opts.Samples}, nil
	case "halving":
		order := keepShuffled(cands, opts)
		return &halving{book: b, order: order, survivors: limit(order, opts.MaxCandidates), opts: opts}, nil
	case "racing":
		return newRaced(name, &randomOrder{order: keepShuffled(cands, opts)}, opts.raceDefaults()), nil
	case "ils", "warm":
		// warm is ils from the Keep candidates (the un-tuned default and
		// warm starts from existing entries) without random starts, unless
		// there is no warm start beyond the default.
		n := localStarts(opts)
		if name == "warm" && opts.Keep > 1 {
			n = 0
		}
		return newRaced(name, &ils{localState: newLocalState(cands, opts, n), perturbK: perturbK(opts)}, opts.raceDefaults()), nil
	case "model":
		// ils ordered by a surrogate model (model.go), with ils's starts and perturbation.
		ls := newLocalState(cands, opts, localStarts(opts))
		return newRaced(name, &ils{localState: ls, perturbK: perturbK(opts), model: newSurrogate(ls.g)}, opts.raceDefaults()), nil
	case "bo":
		// Gaussian-process expected improvement, then model's local search (bo.go).
		n, global := boPhases(opts.MaxCandidates)
		ls := newLocalState(cands, opts, n)
		return newRaced(name, &ils{localState: ls, perturbK: perturbK(opts), model: newSurrogate(ls.g), global: newBO(ls, global)}, opts.raceDefaults()), nil
	case "anneal":
		budget := opts.MaxCandidates
		if budget <= 0 {
			budget = len(cands)
		}
		return newRaced(name, &anneal{localState: newLocalState(cands, opts, localStarts(opts)), budget: budget}, opts.raceDefaults()), nil
	}
	return nil, fmt.Errorf("unknown strategy %q (known: %s)", name, strings.Join(Names, ", "))
}

// Races reports whether strategy name races its candidates (Options.NoRace
// then gives it a fixed sample count); it asks New rather than keeping a
// second list of names.
func Races(name string) bool {
	st, err := New(name, []Candidate{{}}, Options{})
	if err != nil {
		return false
	}
	_, ok := st.(*raced)
	return ok
}

// perturbK is how many parameters ils changes at a local optimum (2 unless set).
func perturbK(opts Options) int {
	if opts.Perturb > 0 {
		return opts.Perturb
	}
	return 2
}

func limit(cs []Candidate, n int) []Candidate {
	if n > 0 && n < len(cs) {
		return cs[:n]
	}
	return cs
}

// keepShuffled keeps the first opts.Keep candidates in front and shuffles the rest.
func keepShuffled(cs []Candidate, opts Options) []Candidate {
	k := min(max(opts.Keep, 0), len(cs))
	return append(append([]Candidate(nil), cs[:k]...), shuffled(cs[k:], opts.Seed)...)
}

func shuffled(cs []Candidate, seed uint64) []Candidate {
	out := append([]Candidate(nil), cs...)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// book accumulates samples and failures per candidate key.
type book struct {
	samples map[string][]float64
	failed  map[string]bool
	cands   map[string]Candidate
}

func newBook() *book {
	return &book{samples: map[string][]float64{}, failed: map[string]bool{}, cands: map[string]Candidate{}}
}

func (b *book) tell(r Result) {
	k := r.Candidate.Key()
	b.cands[k] = r.Candidate
	if r.Err != nil {
		b.failed[k] = true
		delete(b.samples, k)
		return
	}
	b.samples[k] = append(b.samples[k], r.Samples...)
}

func (b *book) median(k string) float64 {
	s := b.samples[k]
	if len(s) == 0 {
		return math.Inf(1)
	}
	return stats.Median(s)
}

// best returns the lowest median among candidates with the most samples,
// so a candidate lucky in one short round cannot beat survivors of longer ones.
func (b *book) best(minSamples int) (Candidate, []float64, bool) {
	bestKey, bestMed := "", math.Inf(1)
	keys := make([]string, 0, len(b.samples))
	for k := range b.samples {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if len(b.samples[k]) < minSamples {
			continue
		}
		if m := b.median(k); m < bestMed {
			bestKey, bestMed = k, m
		}
	}
	if bestKey == "" {
		return nil, nil, false
	}
	return b.cands[bestKey], b.samples[bestKey], true
}

func (b *book) maxSamples() int {
	n := 0
	for _, s := range b.samples {
		n = max(n, len(s))
	}
	return n
}

// fixed measures each candidate of a fixed order once with the same number of samples.
type fixed struct {
	name    string
	book    *book
	order   []Candidate
	samples int
	issued  bool
}

func (f *fixed) Name() string { return f.name }

func (f *fixed) Next() []Request {
	if f.issued {
		return nil
	}
	f.issued = true
	reqs := make([]Request, len(f.order))
	for i, c := range f.order {
		reqs[i] = Request{Candidate: c, Samples: f.samples}
	}
	return reqs
}

func (f *fixed) Tell(r Result) { f.book.tell(r) }

// AnyOrder implements Unordered: Tell only books the samples, and Best
// breaks ties by key, so the order of the results does not matter.
func (f *fixed) AnyOrder() bool { return true }

func (f *fixed) Best() (Candidate, []float64, bool) { return f.book.best(1) }

// halving is successive halving: every survivor is measured up to the
// round's sample count, the best 1/Eta by median survive, and the sample
// count grows by Eta each round until one candidate is left.
type halving struct {
	book      *book
	order     []Candidate // every candidate, Keep first, the rest shuffled
	survivors []Candidate
	opts      Options
	round     int
	done      bool
	asked     bool
}

func (h *halving) Name() string { return "halving" }

// roundSamples is the total samples each survivor has after round r.
func (h *halving) roundSamples(r int) int {
	s := float64(h.opts.MinSamples) * math.Pow(float64(h.opts.Eta), float64(r))
	return int(math.Min(s, float64(h.opts.MaxSamples)))
}

func (h *halving) Next() []Request {
	if h.done {
		return nil
	}
	if h.asked {
		// The previous round is complete: keep the best 1/Eta of those still valid.
		var alive []Candidate
		for _, c := range h.survivors {
			if !h.book.failed[c.Key()] {
				alive = append(alive, c)
			}
		}
		sort.SliceStable(alive, func(i, j int) bool {
			return h.book.median(alive[i].Key()) < h.book.median(alive[j].Key())
		})
		if len(alive) <= 1 {
			h.survivors, h.done = alive, true
			return nil
		}
		keep := (len(alive) + h.opts.Eta - 1) / h.opts.Eta
		h.survivors = alive[:keep]
		h.round++
	}
	target := h.roundSamples(h.round)
	var reqs []Request
	for _, c := range h.survivors {
		if more := target - len(h.book.samples[c.Key()]); more > 0 {
			reqs = append(reqs, Request{Candidate: c, Samples: more})
		}
	}
	h.asked = true
	if len(reqs) == 0 {
		// Sample cap reached and nothing left to learn at this size: one more cut.
		if len(h.survivors) <= 1 {
			h.done = true
			return nil
		}
		return h.Next()
	}
	return reqs
}

func (h *halving) Tell(r Result) { h.book.tell(r) }

// AnyOrder implements Unordered: Tell only books the samples, and the
// survivors are chosen when the whole round is in, sorted stably in the
// strategy's own order.
func (h *halving) AnyOrder() bool { return true }

// SizeTo sizes the first round: the largest count, shrinking by a fifth
// from the whole pool, whose search (HalvingSamples, plus one sample per
// candidate for building it) fits into samples, but at least 2 candidates.
func (h *halving) SizeTo(evals int, samples float64) int {
	n := len(h.order)
	for n > 2 && float64(HalvingSamples(n, h.opts)+n) > samples {
		n = n * 4 / 5
	}
	if evals > 0 && evals < n {
		n = evals
	}
	h.survivors = limit(limit(h.order, n), h.opts.MaxCandidates)
	return n
}

func (h *halving) Best() (Candidate, []float64, bool) {
	if len(h.survivors) == 1 && h.done {
		c := h.survivors[0]
		return c, h.book.samples[c.Key()], true
	}
	// Stopped early (budget) or every candidate failed: the best of the most-measured.
	return h.book.best(h.book.maxSamples())
}

// HalvingSamples estimates the total samples successive halving spends on n
// candidates with opts, so a tuner can size n to a time budget.
func HalvingSamples(n int, opts Options) int {
	opts = opts.withDefaults()
	total, have, r := 0, 0, 0
	for n >= 1 {
		target := int(math.Min(float64(opts.MinSamples)*math.Pow(float64(opts.Eta), float64(r)), float64(opts.MaxSamples)))
		total += n * (target - have)
		have = target
		if n == 1 {
			break
		}
		n = (n + opts.Eta - 1) / opts.Eta
		r++
	}
	return total
}
