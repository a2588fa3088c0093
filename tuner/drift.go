package tuner

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/report"
	"github.com/kerntune/kerntune/search"
)

// The drift guard. A device that cannot lock its clocks (an Apple laptop
// throttles within minutes of sustained load; a shared machine gains and
// loses cores) changes speed during a search, and candidates measured at
// different speeds are not comparable. The guard re-times the anchor (the
// entry's default, or the candidate that calibrated the budget when the
// default cannot run) every DriftEvery new candidates. When the anchor's
// median is more than DriftLimit off its reference, beyond noise, the
// measurements since the last good check are discarded: the guard idles for
// the cool-down, times the anchor again (up to maxCooldowns times until it
// is back), and measures those candidates again. An anchor that does not
// come back has settled at a new speed, which becomes the reference.
//
// Each anchor timing is journaled (RecordAnchor) and each event too
// (RecordDrift), so a resumed run replays the same decisions. The strategy
// is not told the new samples (it cannot forget the old ones); the final
// timing chooses among the candidates by the tuner's own samples, which
// hold the new ones (retime.go).
const (
	// DefaultDriftEvery is Config.DriftEvery's default: new candidates
	// between two re-timings of the anchor.
	DefaultDriftEvery = 10
	// DriftLimit is how far (relative to the reference median) the
	// anchor's median may move before its samples count as drifted.
	DriftLimit = 0.10
	// anchorSamples are taken at each re-timing of the anchor.
	anchorSamples = 5
	// maxCooldowns is how often the guard idles and re-times the anchor
	// after a drift before it takes the anchor's new speed as the reference.
	maxCooldowns = 3
	// maxWaitShare caps the guard's idling at this share of the entry's budget.
	maxWaitShare = 0.2
	// maxRedoEvents is how many events of an entry lead to measuring again:
	// a device whose speed keeps changing (a shared machine whose other
	// core comes and goes) would spend the budget on it, and the final
	// interleaved timing compares the finalists at one speed anyway.
	// Later events are recorded only.
	maxRedoEvents = 3
)

// sleepCtx idles for d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// driftGuard is the drift guard of one task.
type driftGuard struct {
	ctx context.Context
	m   *live // times the anchor; holds the candidates' samples
	// redo measures again below the guard (measurement.again).
	redo measurer
	j    *journaled // anchor timings replayed and journaled; nil without a journal
	b    *budget
	// sleep idles for the cool-down (Tuner.sleep).
	sleep   func(ctx context.Context, d time.Duration)
	anchor  search.Candidate
	every   int
	maxWait time.Duration
	waited  time.Duration
	ref     []float64    // the reference anchor samples
	since   []driftBatch // batches measured since the last good check, in order
	fresh   int          // new candidates among them
	isNew   bool         // the candidate being measured had no samples
	busy    bool         // checking: measurements are not batches to track
	off     bool         // the anchor could not be timed: no more checks
	slowed  bool         // an event found the device slower
	noWall  bool         // the run's length is set by evaluations, not wall time
	sum     paramfile.DriftSummary
}

// driftBatch is one batch of samples: cd.samples[start:start+n] of cand.
type driftBatch struct {
	cand  search.Candidate
	start int
	n     int
}

// newDriftGuard returns the guard of the task m measures, which measures
// again through redo, or nil when it is off or there is no anchor to
// re-time. The reference is a timing of 2 × anchorSamples taken now, after
// the anchor's build, warm-up and calibration: the very first runs of a
// process can be slow, and a reference taken from them would see every
// later timing as drift.
func newDriftGuard(ctx context.Context, m *live, redo measurer, j *journaled, b *budget, anchor search.Candidate) *driftGuard {
	t := m.t
	if t.cfg.DriftEvery < 0 || anchor == nil {
		return nil
	}
	g := &driftGuard{ctx: ctx, m: m, redo: redo, j: j, b: b, sleep: t.sleep, anchor: anchor, every: t.cfg.DriftEvery,
		maxWait: time.Duration(float64(b.share) * maxWaitShare), noWall: b.share >= NoWallTime || t.cfg.MaxEvals > 0}
	ref, _, ok := g.time(2 * anchorSamples)
	if !ok {
		return nil
	}
	g.ref = ref
	return g
}

// before is called before a batch of c is measured: before the first
// batch of a new candidate, once DriftEvery new ones were measured since the
// last check, the anchor is checked.
func (g *driftGuard) before(c search.Candidate) {
	if g == nil || g.busy || g.off {
		return
	}
	cd := g.m.cands[c.Key()]
	g.isNew = cd == nil || (cd.err == nil && len(cd.samples) == 0)
	if g.isNew && g.fresh >= g.every {
		g.check()
	}
}

// after records a batch of n samples of c that was just measured.
func (g *driftGuard) after(c search.Candidate, n int) {
	if g == nil || g.busy {
		return
	}
	cd := g.m.cands[c.Key()]
	if cd == nil || len(cd.samples) < n {
		return
	}
	g.since = append(g.since, driftBatch{cand: c, start: len(cd.samples) - n, n: n})
	if g.isNew {
		g.fresh++
		g.isNew = false
	}
}

// final checks the anchor once more when anything was measured since the
// last check, so that no candidate enters the final timing with samples
// taken while the device drifted.
func (g *driftGuard) final() {
	if g == nil || g.off || g.fresh == 0 || g.ctx.Err() != nil {
		return
	}
	g.check()
}

// beforeFinal lets a device that slowed down during the search cool down
// before the final timing, so that the finalists are timed at the speed
// the reference was taken at rather than into the next throttling.
func (g *driftGuard) beforeFinal() {
	if g == nil || !g.slowed || g.ctx.Err() != nil {
		return
	}
	g.wait()
}

// finalDrifted checks the anchor's samples in the final timing (one of
// progs, in rounds of 5): when its last round is more than DriftLimit off
// its first, beyond noise, the final timing drifted and is an event. It
// reports whether to time it again: on drift, when again allows it.
func (g *driftGuard) finalDrifted(progs []*timed, again bool) bool {
	if g == nil || g.ctx.Err() != nil {
		return false
	}
	var a []float64
	for _, p := range progs {
		if p.cand != nil && p.cand.Key() == g.anchor.Key() && p.err == nil {
			a = p.tot
		}
	}
	if len(a) < 2*anchorSamples {
		return false
	}
	first, last := a[:anchorSamples], a[(len(a)-1)/anchorSamples*anchorSamples:]
	g.sum.Checks++
	pct := 100 * (stats.Median(last)/stats.Median(first) - 1)
	g.sum.MaxPct = math.Max(g.sum.MaxPct, math.Abs(pct))
	mw := stats.MannWhitneyU(last, first)
	if math.Abs(pct) <= 100*DriftLimit || math.Min(mw.PLess, mw.PGreater) >= NoiseAlpha {
		return false
	}
	g.sum.Events++
	g.slowed = g.slowed || pct > 0
	t, task := g.m.t, g.m.task
	what := "timing it again"
	if !again {
		what = "too little budget is left to time it again"
	}
	fmt.Fprintf(t.cfg.Log, "  %s %s: the anchor %s drifted %+.0f%% during the final timing; %s\n",
		task.Kernel.Name, task.Key(), g.anchor.Key(), pct, what)
	g.j.note(Record{Kind: RecordDrift, Cand: g.anchor.Key(), DriftPct: round3(pct), Samples: last, Final: true})
	return again
}

// summary is the entry's record of the guard; nil when it never checked.
func (g *driftGuard) summary() *paramfile.DriftSummary {
	if g == nil || g.sum.Checks == 0 {
		return nil
	}
	s := g.sum
	s.MaxPct = round3(s.MaxPct)
	s.WaitedS = round3(g.waited.Seconds())
	return &s
}

// check re-times the anchor and handles a drift.
func (g *driftGuard) check() {
	t, task := g.m.t, g.m.task
	g.busy = true
	defer func() { g.busy = false }()
	s, replayed, ok := g.time(anchorSamples)
	if !ok {
		return
	}
	pct, drifted := g.drifted(s)
	if !drifted {
		g.good()
		return
	}
	refUS := stats.Median(g.ref) * 1e6
	ev := Record{Kind: RecordDrift, Cand: g.anchor.Key(), DriftPct: round3(pct), Samples: s}
	if g.sum.Events >= maxRedoEvents {
		// The speed keeps changing: record the event, take the new speed
		// as the reference, and measure nothing again.
		g.sum.Events++
		g.ref, ev.Settled = s, true
		g.sum.Settled++
		fmt.Fprintf(t.cfg.Log, "  %s %s: the anchor %s drifted %+.0f%% (%.2f → %.2f µs); after %d events the guard no longer measures again\n",
			task.Kernel.Name, task.Key(), g.anchor.Key(), pct, refUS, stats.Median(s)*1e6, maxRedoEvents)
		if !replayed {
			g.j.note(ev)
		}
		g.good()
		return
	}
	before := g.waited
	// A device that slowed down idles to cool and is timed again, up to
	// maxCooldowns times; one that sped up cannot be helped by waiting and
	// is timed again once.
	tries := maxCooldowns
	if pct < 0 {
		tries = 1
	}
	back := false
	for i := 0; i < tries && !back && g.ctx.Err() == nil; i++ {
		if pct > 0 && !g.j.replayingAnchors() {
			g.wait() // a replayed anchor timing was taken after the original run's wait
		}
		again, rep, ok := g.time(anchorSamples)
		if !ok {
			return
		}
		s, replayed = again, replayed && rep
		_, drifted := g.drifted(s)
		back = !drifted
	}
	if g.ctx.Err() != nil {
		return
	}
	if !back {
		// The device settled at another speed: compare with that from now on.
		g.ref = s
		g.sum.Settled++
		ev.Settled = true
	}
	n := g.remeasure()
	g.sum.Events++
	g.slowed = g.slowed || pct > 0
	ev.Redone, ev.WaitedS = n, round3((g.waited - before).Seconds())
	settled := ""
	if ev.Settled {
		settled = "; it settled at that speed, now the reference"
	}
	fmt.Fprintf(t.cfg.Log, "  %s %s: the anchor %s drifted %+.0f%% (%.2f → %.2f µs); waited %.1fs, measured %s again%s\n",
		task.Kernel.Name, task.Key(), g.anchor.Key(), pct, refUS, stats.Median(ev.Samples)*1e6,
		(g.waited - before).Seconds(), report.Plural(n, "candidate", "candidates"), settled)
	if !replayed {
		// A resumed run that replays the anchor timings finds this event
		// again and does not journal it twice.
		g.j.note(ev)
	}
	g.good()
}

// good marks a good check: measurements before it are kept.
func (g *driftGuard) good() {
	g.since, g.fresh = nil, 0
}

// drifted reports how far s's median is from the reference, in percent,
// and whether that is drift: more than DriftLimit and beyond noise (a
// two-sided Mann-Whitney U test at NoiseAlpha per side).
func (g *driftGuard) drifted(s []float64) (float64, bool) {
	ref := stats.Median(g.ref)
	if !(ref > 0) {
		return 0, false
	}
	pct := 100 * (stats.Median(s)/ref - 1)
	g.sum.MaxPct = math.Max(g.sum.MaxPct, math.Abs(pct))
	mw := stats.MannWhitneyU(s, g.ref)
	return pct, math.Abs(pct) > 100*DriftLimit && math.Min(mw.PLess, mw.PGreater) < NoiseAlpha
}

// time takes n samples of the anchor, from the journal of an interrupted
// run when it holds the next anchor timing. ok is false (and the guard
// stops) when the anchor cannot be timed.
func (g *driftGuard) time(n int) (s []float64, replayed, ok bool) {
	if s, ok := g.j.anchor(n); ok {
		g.sum.Checks++
		return s, true, true
	}
	// Another plan, or none journaled: time afresh.
	prog, err := g.m.program(g.anchor)
	var tot []float64
	if err == nil {
		tot, _, err = g.m.sample(prog, n)
	}
	if err != nil {
		fmt.Fprintf(g.m.t.cfg.Log, "  %s %s: the drift guard stops: timing the anchor %s: %v\n", g.m.task.Kernel.Name, g.m.task.Key(), g.anchor.Key(), err)
		g.off = true
		return nil, false, false
	}
	g.sum.Checks++
	if g.ctx.Err() == nil {
		g.j.note(Record{Kind: RecordAnchor, Cand: g.anchor.Key(), Samples: tot})
	}
	return tot, false, true
}

// wait idles for the cool-down, within the guard's share of the budget,
// never past half of what is left of it beyond the time kept for the final
// timing. With an evaluation budget (alone or with a wall time), whose
// length the evaluations set, it idles in all at most maxWaitShare of the
// entry's time so far, so that idling never becomes most of what a run
// does.
func (g *driftGuard) wait() {
	d := g.m.t.cfg.DriftCooldown
	d = min(d, g.maxWait-g.waited, (g.b.left()-g.b.reserve)/2)
	if g.noWall {
		working := time.Since(g.b.start) - g.waited
		d = min(d, time.Duration(float64(working)*maxWaitShare/(1-maxWaitShare))-g.waited)
	}
	if d <= 0 {
		return
	}
	g.sleep(g.ctx, d)
	g.waited += d
}

// remeasure discards the batches measured since the last good check and
// measures each candidate's share again, in one batch per candidate, in the
// order they were first measured. A candidate keeps its old samples when
// the budget ends before its turn. It returns the candidates measured again.
func (g *driftGuard) remeasure() int {
	type redo struct {
		cand  search.Candidate
		start int
		n     int
	}
	var order []string
	redos := map[string]*redo{}
	for _, b := range g.since {
		key := b.cand.Key()
		if d := redos[key]; d != nil {
			d.n += b.n
			continue
		}
		redos[key] = &redo{cand: b.cand, start: b.start, n: b.n}
		order = append(order, key)
	}
	done := 0
	for _, key := range order {
		d := redos[key]
		cd := g.m.cands[key]
		if cd == nil || cd.err != nil || len(cd.samples) < d.start+d.n {
			continue
		}
		cost := time.Duration(stats.Median(cd.samples) * float64(d.n) * float64(time.Second))
		if g.ctx.Err() != nil || g.b.left() < g.b.reserve+cost {
			break // the final timing's share of the budget is not spent here
		}
		old := cd.samples
		cd.samples = append([]float64(nil), old[:d.start]...)
		if _, err := g.redo.measure(d.cand, d.n); err != nil {
			if cd.err == nil {
				cd.samples = old
			}
			continue
		}
		done++
	}
	g.sum.Remeasured += done
	return done
}

// anchorBuild is the build time of the candidate the search calibrated on
// (the default, or the first measured), for Result.Needed.
func (g *driftGuard) anchorBuild() time.Duration {
	if g != nil {
		if cd := g.m.cands[g.anchor.Key()]; cd != nil {
			return time.Duration(cd.spent.seconds(phaseCompile) * float64(time.Second))
		}
	}
	return 0
}
