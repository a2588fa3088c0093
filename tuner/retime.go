package tuner

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

// DefaultFinalists is how many candidates the final timing re-times
// interleaved before one is chosen (Config.Finalists); screenFactor times
// as many of the search's best are screened first, in two short
// interleaved rounds, and the fastest there go on.
//
// A candidate's search median comes from one short stretch of samples
// (a few milliseconds on a CPU), and the search keeps the lowest of
// hundreds of them: a candidate measured while the machine happened to be
// quiet wins, and its median is not what it runs at (on a shared 2-core
// machine a multi-threaded candidate ran 0.53× its usual time in 2–3 % of
// 5-sample batches, and the search's winner recorded half its final time;
// docs/design/measurement.md). Re-timing the top few in the same interleaved rounds,
// as llama.cpp's Metal tuner and Triton's do_bench re-benchmark near-ties,
// chooses on comparable samples, and the chosen candidate's recorded
// figures are those samples. The screen keeps a run of candidates timed in
// one quiet stretch of the search from filling the final timing.
const (
	DefaultFinalists = 3
	screenFactor     = 3
)

// Finalist is one candidate the final timing screened or re-timed: its
// median in the search, in the screen and in the final rounds, per-sample
// totals over the task's shapes in µs (0 where it was not timed).
type Finalist struct {
	Params   map[string]int
	SearchUS float64
	ScreenUS float64
	FinalUS  float64
	// Final is set for the candidates of the final rounds; the others
	// were screened out.
	Final bool
	// Default is set for the un-tuned default, which always competes.
	Default bool
	// Err says why it dropped out of the final timing, or "".
	Err string
}

// timed is one program of the final interleaved timing and its samples.
type timed struct {
	cand     search.Candidate // nil for the baseline
	prog     device.Program
	searchUS float64
	screen   []float64   // the screen's samples
	tot      []float64   // per-sample totals over the task's shapes
	per      [][]float64 // per sample, per shape
	err      error
}

// finals is the outcome of the final timing.
type finals struct {
	screened []*timed // every candidate screened, in order of search median
	contest  []*timed // the finalists, fastest in the screen first, and the default
	def      *timed   // the default's timing (also in contest), or nil
	base     *timed
	chosen   *timed
	baseNm   string
	retime   *Retiming
	noHarm   string
	best     string // the search's winner
}

// finalists are the candidates the final timing screens: the search's
// winner, then the others measured without error in order of their search
// median, up to k in all.
func (cs candidates) finalists(best search.Candidate, k int) []search.Candidate {
	out := []search.Candidate{best}
	type m struct {
		key string
		med float64
		c   search.Candidate
	}
	var ms []m
	for key, cd := range cs {
		if key == best.Key() || cd.err != nil || len(cd.samples) == 0 {
			continue
		}
		ms = append(ms, m{key, stats.Median(cd.samples), cd.cand})
	}
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].med != ms[j].med {
			return ms[i].med < ms[j].med
		}
		return ms[i].key < ms[j].key
	})
	for _, x := range ms {
		if len(out) >= k {
			break
		}
		c := x.c
		if c == nil {
			c, _ = search.ParseKey(x.key)
		}
		out = append(out, c)
	}
	return out
}

// finalTiming screens the search's best, then times the finalists, the
// default, the baseline and the incumbent interleaved, n samples each in
// rounds of 5 whose order rotates, and chooses the winner: the fastest in
// median over the task's shapes that is not slower than the default beyond
// noise on any shape (noharm.go).
func (r *run) finalTiming(space *search.Space, best, def search.Candidate, defOK bool, n int) (*finals, error) {
	t, task := r.t, r.task
	f := &finals{best: best.Key()}
	searchUS := func(c search.Candidate) float64 {
		if cd := r.m.cands[c.Key()]; cd != nil && len(cd.samples) > 0 {
			return stats.Median(cd.samples) * 1e6
		}
		return 0
	}
	k := max(1, t.cfg.Finalists)
	screen := screenFactor * k
	if k == 1 {
		screen = 1 // the search's winner alone, as Config.Finalists says
	}
	for i, c := range r.m.cands.finalists(best, screen) {
		prog, err := r.m.program(c)
		if err != nil {
			if i == 0 {
				return nil, fmt.Errorf("%s %s: building the winner %s: %w", task.Kernel.Name, task.Key(), c.Key(), err)
			}
			continue
		}
		tm := &timed{cand: c, prog: prog, searchUS: searchUS(c)}
		if c.Key() == def.Key() {
			f.def = tm // the default is never screened out
			continue
		}
		f.screened = append(f.screened, tm)
	}
	f.contest = f.screen(r.m, k, max(2, n/5))
	if f.def == nil && defOK && r.m.cands[def.Key()] != nil && r.m.cands[def.Key()].err == nil {
		if prog, err := r.m.program(def); err == nil {
			f.def = &timed{cand: def, prog: prog, searchUS: searchUS(def)}
		}
	}
	if f.def != nil {
		f.contest = append(f.contest, f.def)
	}
	if len(f.contest) == 0 {
		return nil, fmt.Errorf("%s %s: screening the finalists: %w", task.Kernel.Name, task.Key(), firstErr(f.screened))
	}
	tb := time.Now()
	bp, name, berr := t.b.Baseline(task.Kernel, task.DType)
	r.clk.add(phaseCompile, tb)
	if berr == nil && bp != nil {
		if rerr := r.m.ready(bp, nil); rerr == nil {
			f.base, f.baseNm = &timed{prog: bp}, name
		} else {
			fmt.Fprintf(t.cfg.Log, "  baseline %s failed %v\n", name, rerr)
		}
		defer bp.Close()
	}
	var inc *timed
	if task.Incumbent != nil {
		f.retime = &Retiming{Params: task.Incumbent}
		prog, own := r.m.incumbent(space, f.retime, f.contest)
		if own {
			defer prog.Close()
		}
		if prog != nil {
			inc = &timed{prog: prog}
		}
	}
	progs := append([]*timed(nil), f.contest...)
	if f.base != nil {
		progs = append(progs, f.base)
	}
	if inc != nil {
		progs = append(progs, inc)
	}
	// A device that slowed down during the search cools down first; when
	// the anchor drifts within the final rounds, they are taken again once,
	// when what is left of the budget allows (drift.go).
	for attempt := 0; ; attempt++ {
		r.meas.guard.beforeFinal()
		start := time.Now()
		if err := f.rounds(r.m, progs, n); err != nil {
			return nil, err
		}
		if attempt > 0 || !r.meas.guard.finalDrifted(progs, r.budget.left() >= time.Since(start)) {
			break
		}
		for _, p := range progs {
			p.tot, p.per, p.err = nil, nil, nil
		}
	}
	if inc != nil {
		if inc.err != nil {
			f.retime.Err, f.retime.Samples = "timing: "+inc.err.Error(), nil
		} else {
			f.retime.Samples = inc.tot
		}
	}
	f.choose(r.m)
	if f.retime != nil {
		var others []search.Candidate
		var othersTot [][]float64
		for _, c := range f.contest {
			others, othersTot = append(others, c.cand), append(othersTot, c.tot)
		}
		finishRetiming(f.retime, f.chosen.cand, f.chosen.tot, others, othersTot)
	}
	return f, nil
}

// screen times the screened candidates interleaved in two rounds of n/2
// samples, the second in reverse order, and returns the k fastest by
// median, all of them when there are no more than k. A candidate that fails
// drops out.
func (f *finals) screen(m *live, k, n int) []*timed {
	cs := f.screened
	if len(cs) <= k {
		return append([]*timed(nil), cs...)
	}
	half := max(1, n/2)
	for round := 0; round < 2; round++ {
		for j := range cs {
			p := cs[j]
			if round == 1 {
				p = cs[len(cs)-1-j]
			}
			if p.err != nil {
				continue
			}
			tot, _, err := m.sample(p.prog, half)
			if err != nil {
				p.err = err
				continue
			}
			p.screen = append(p.screen, tot...)
		}
	}
	var ok []*timed
	for _, c := range cs {
		if c.err == nil {
			ok = append(ok, c)
		}
	}
	sort.SliceStable(ok, func(i, j int) bool { return stats.Median(ok[i].screen) < stats.Median(ok[j].screen) })
	return ok[:min(k, len(ok))]
}

func firstErr(ts []*timed) error {
	for _, t := range ts {
		if t.err != nil {
			return t.err
		}
	}
	return fmt.Errorf("no candidate to time")
}

// rounds times progs interleaved, n samples each in rounds of 5 whose
// order rotates so that no program always follows the same one. A program
// that fails drops out; every finalist failing is an error.
func (f *finals) rounds(m *live, progs []*timed, n int) error {
	for round, i := 0, 0; i < n; round, i = round+1, i+5 {
		size := min(5, n-i)
		for j := range progs {
			p := progs[(j+round)%len(progs)]
			if p.err != nil {
				continue
			}
			tot, per, err := m.sample(p.prog, size)
			switch {
			case err != nil && p == f.base:
				// A baseline round that fails is left out, as before.
			case err != nil:
				p.err, p.tot, p.per = err, nil, nil
			default:
				p.tot = append(p.tot, tot...)
				p.per = append(p.per, per...)
			}
		}
	}
	for _, c := range f.contest {
		if c.err == nil {
			return nil
		}
	}
	return fmt.Errorf("%s %s: timing the finalists: %w", m.task.Kernel.Name, m.task.Key(), firstErr(f.contest))
}

// choose picks the winner among the finalists that were timed to the end,
// and says so in the log when it is not the search's winner.
func (f *finals) choose(m *live) {
	var ok []*timed
	for _, c := range f.contest {
		if c.err == nil && len(c.tot) > 0 {
			ok = append(ok, c)
		}
	}
	sort.SliceStable(ok, func(i, j int) bool { return stats.Median(ok[i].tot) < stats.Median(ok[j].tot) })
	f.chosen, f.noHarm = chooseNoHarm(ok, f.def, m.shapeNames()) // ok is not empty: rounds succeeded
	t, task := m.t, m.task
	if f.chosen.cand.Key() != f.best || t.cfg.Verbose {
		var parts []string
		for _, fi := range f.finalistsOf() {
			s := fmt.Sprintf("%s %.2f", search.Candidate(fi.Params).Key(), fi.SearchUS)
			if fi.ScreenUS > 0 {
				s += fmt.Sprintf("→%.2f", fi.ScreenUS)
			}
			switch {
			case fi.Err != "":
				s += "→failed"
			case fi.Final:
				s += fmt.Sprintf("→%.2f", fi.FinalUS)
			}
			parts = append(parts, s+" µs")
		}
		fmt.Fprintf(t.cfg.Log, "  %s %s: re-timed interleaved (search→screen→final median): %s; chose %s\n",
			task.Kernel.Name, task.Key(), strings.Join(parts, ", "), f.chosen.cand.Key())
	}
	if f.noHarm != "" {
		fmt.Fprintf(t.cfg.Log, "  %s %s: no harm: %s\n", task.Kernel.Name, task.Key(), f.noHarm)
	}
}

// record fills in the entry's figures from the final timing.
func (f *finals) record(e *paramfile.Entry, defaults map[string]int, nshapes int) {
	best := f.chosen
	e.Params = best.cand
	sum := stats.Summarize(best.tot)
	e.MedianUS = round3(sum.Median * 1e6)
	e.IQRUS = round3(sum.IQR * 1e6)
	e.MinUS = round3(sum.Min * 1e6)
	e.Samples = sum.Count
	e.ShapeMedianUS = shapeMedians(best.per, nshapes)
	// When the winner is the default, both numbers are the same measurement
	// (two noisy timings of one kernel would record a spurious speedup).
	e.Default = &paramfile.Reference{Params: defaults}
	if f.def != nil && len(f.def.tot) > 0 {
		e.Default.MedianUS = round3(stats.Median(f.def.tot) * 1e6)
	}
	var baseTot []float64
	if f.base != nil && len(f.base.tot) > 0 {
		baseTot = f.base.tot
		e.Baseline = &paramfile.Baseline{Name: f.baseNm, MedianUS: round3(stats.Median(baseTot) * 1e6)}
	}
	e.Use = UseOf(best.tot, baseTot)
	if e.Baseline != nil && len(f.base.per) > 0 && nshapes > 1 {
		e.Baseline.ShapeMedianUS = shapeMedians(f.base.per, nshapes)
		e.ShapeUse = shapeUses(best.per, f.base.per, nshapes, e.Use)
	}
	e.NoHarm = f.noHarm
}

// shapeUses is Entry.ShapeUse: the use of each of nshapes shapes by the
// same rule as the entry's (UseOf) on that shape's samples, or nil when
// every shape's is the entry's use. A class entry routes by the sum over
// its shapes; where the baseline wins some shapes and loses others (lora's
// decode class: cuBLAS faster at k = 4864, the fused kernel at 0.67× of it
// at 4×896×896), an application asking for one of those shapes gets that
// shape's own route.
func shapeUses(winner, baseline [][]float64, nshapes int, use string) []string {
	out := make([]string, nshapes)
	differs := false
	for i := range out {
		out[i] = UseOf(column(winner, i), column(baseline, i))
		differs = differs || out[i] != use
	}
	if !differs {
		return nil
	}
	return out
}

// finalistsOf reports the screen and the final timing for
// Result.Finalists: the final rounds' candidates first, then those the
// screen left out.
func (f *finals) finalistsOf() []Finalist {
	var out []Finalist
	add := func(c *timed, final bool) {
		fi := Finalist{Params: c.cand, SearchUS: round3(c.searchUS), Default: c == f.def, Final: final}
		if len(c.screen) > 0 {
			fi.ScreenUS = round3(stats.Median(c.screen) * 1e6)
		}
		if c.err != nil {
			fi.Err = c.err.Error()
		} else if final && len(c.tot) > 0 {
			fi.FinalUS = round3(stats.Median(c.tot) * 1e6)
		}
		out = append(out, fi)
	}
	inFinal := map[*timed]bool{}
	for _, c := range f.contest {
		inFinal[c] = true
		add(c, true)
	}
	for _, c := range f.screened {
		if !inFinal[c] {
			add(c, false)
		}
	}
	return out
}

// shapeMedians is the median of each shape's column of per.
func shapeMedians(per [][]float64, nshapes int) []float64 {
	var out []float64
	for i := 0; i < nshapes; i++ {
		out = append(out, round3(stats.Median(column(per, i))*1e6))
	}
	return out
}

func column(per [][]float64, i int) []float64 {
	col := make([]float64, len(per))
	for j := range per {
		col[j] = per[j][i]
	}
	return col
}

// incumbent prepares the final timing of the incumbent: it returns the
// program to time in the interleaved rounds, and whether the caller owns
// (must close) it. The program is nil when the incumbent is one of the
// contest (the finalists and the default, whose samples it shares) or
// cannot run here (recorded in rt). An incumbent the search did not measure
// is built apart from the run's candidates, so that it does not count as
// measured.
func (m *live) incumbent(space *search.Space, rt *Retiming, contest []*timed) (device.Program, bool) {
	inc := search.Candidate(rt.Params)
	for _, c := range contest {
		if inc.Key() == c.cand.Key() {
			return nil, false
		}
	}
	// --where narrows the search, not what may run: the file's entry still
	// competes with the narrowed run's winner.
	if err := space.CheckValid(inc); err != nil {
		rt.Invalid, rt.Err = true, "not valid here: "+err.Error()
		return nil, false
	}
	if cd := m.cands[inc.Key()]; cd != nil {
		if cd.err == nil && cd.prog != nil {
			if prog, err := m.program(inc); err == nil {
				return prog, false
			}
		}
		if cd.err != nil {
			rt.Invalid, rt.Err = true, cd.err.Error()
			return nil, false
		}
	}
	tb := time.Now()
	prog, err := m.t.b.Build(m.task.Kernel, m.task.DType, inc)
	m.clk.add(phaseCompile, tb)
	if err != nil {
		rt.Invalid, rt.Err = true, "build: "+err.Error()
		return nil, false
	}
	if err := m.ready(prog, inc); err != nil {
		prog.Close()
		rt.Invalid, rt.Err = true, err.Error()
		return nil, false
	}
	return prog, true
}
