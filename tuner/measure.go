package tuner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

// The measurement of one candidate, read top to bottom in
// measurement.measure: Tuner.Run hands the search driver one search.Target,
// searchTarget (tuner.go), whose Measure keeps the time spent answering
// apart from the search's own and asks the task's measurement, which holds
// as fields, each in its own file:
//
//	guard (drift.go)       the drift guard: re-time the anchor before a new candidate
//	journal (journal.go)   an earlier run's batch from the journal, else the live
//	                       measurer's, journaled
//	progress (progress.go) an Event to Config.Progress after every batch
//	live (here)            build → ready (verify, warm up) → sample
//
// A field that is not configured (journal, progress; the guard until the
// search calibrated) is nil. The drift guard's anchor timings and the final
// timing (retime.go) time programs with the live measurer directly.

type measurer interface {
	measure(c search.Candidate, n int) ([]float64, error)
}

// measureFunc is a measurer.
type measureFunc func(c search.Candidate, n int) ([]float64, error)

func (f measureFunc) measure(c search.Candidate, n int) ([]float64, error) { return f(c, n) }

// measurement is one task's measurement: the drift guard, the journal and
// the progress report around the live measurer.
type measurement struct {
	live     measurer    // the live measurer (*live), or a test's stand-in
	journal  *journaled  // answers from an interrupted run, journals; nil without a journal
	progress *progress   // nil without Config.Progress
	guard    *driftGuard // nil until the search calibrated, and when off
}

// measure answers a request of the search for n more samples of c: the
// drift guard checks the anchor first when c is a new candidate due for
// it, and notes the batch after.
func (m *measurement) measure(c search.Candidate, n int) ([]float64, error) {
	m.guard.before(c)
	s, err := m.again(c, n)
	if err == nil {
		m.guard.after(c, len(s))
	}
	return s, err
}

// again measures below the drift guard, which measures through it when it
// takes a candidate again: from the journal or live, then reported.
func (m *measurement) again(c search.Candidate, n int) ([]float64, error) {
	defer m.progress.report(c.Key()) // after the samples (or the failure) are recorded
	if m.journal != nil {
		return m.journal.measure(c, n)
	}
	return m.live.measure(c, n)
}

// live measures on the device: it holds the task's problems and its
// candidates' programs and samples.
type live struct {
	t        *Tuner
	task     Task
	problems []*loaded // timed
	odd      []*loaded // verified only
	cands    candidates
	clk      *clock // where the entry's time goes; nil outside Tuner.Run
	dataSeed uint64
	nloaded  uint64
	// verifyDevice is the last verification's time in runs and reads.
	verifyDevice time.Duration
	// drawn are the task's problems drawn ahead, or nil.
	drawn *Drawn
	// filled is the time fillWait spent on leaders during the current
	// measure, which is theirs.
	filled split
}

// newLive returns task's live measurer, which charges its time to clk
// (nil outside Tuner.Run).
func newLive(t *Tuner, task Task, clk *clock) *live {
	return &live{t: t, task: task, cands: candidates{}, clk: clk}
}

// measure builds, verifies and warms c up on first use, then takes n
// samples, and charges the time it took to c.
func (m *live) measure(c search.Candidate, n int) ([]float64, error) {
	key := c.Key()
	s0 := m.clk.split()
	m.filled = split{}
	s, err := m.samples(c, n)
	spent := m.clk.since(s0)
	cd := m.cands[key]
	for i := range spent {
		cd.spent[i] += spent[i] - m.filled[i]
	}
	if err == nil && m.t.cfg.Verbose {
		fmt.Fprintf(m.t.cfg.Log, "  %-40s %10.2f µs (n=%d)\n", key, medianUS(cd.samples), len(cd.samples))
		if spent[phaseCompile]+spent[phaseVerify] > 0 {
			fmt.Fprintf(m.t.cfg.Log, "  %-40s build %.3fs, verify %.3fs (its runs and reads on the device %.3fs)\n", key, spent.seconds(phaseCompile), spent.seconds(phaseVerify), m.verifyDevice.Seconds())
		}
	}
	return s, err
}

// samples builds and verifies c on first use, then takes n more samples,
// once more when they vary too much; it returns the new per-sample totals
// over the task's cases.
func (m *live) samples(c search.Candidate, n int) ([]float64, error) {
	key := c.Key()
	prog, err := m.program(c)
	if err != nil {
		return nil, err
	}
	cd := m.cands[key]
	tot, _, err := m.sample(prog, n)
	if err == nil && n >= 3 && cv(tot) > m.t.cfg.MaxCV {
		// A noisy batch (another process, a clock change) is taken again;
		// the quieter of the two is kept and the re-measurement recorded.
		again, _, err2 := m.sample(cd.prog, n)
		cd.remeas++
		first, kept := cv(tot), "first"
		if err2 == nil && cv(again) < first {
			tot, kept = again, "second"
		}
		if m.t.cfg.Verbose {
			// The spread that called for the second batch, the second's,
			// and which was kept: the kept one's alone says nothing.
			second := fmt.Sprintf("%.0f%%", 100*cv(again))
			if err2 != nil {
				second = "failed (" + err2.Error() + ")"
			}
			fmt.Fprintf(m.t.cfg.Log, "  %s: samples varied by %.0f%% (limit %.0f%%); measured again: %s; kept the %s batch\n",
				key, 100*first, 100*m.t.cfg.MaxCV, second, kept)
		}
	}
	if err != nil {
		cd.err = err
		return nil, err
	}
	cd.samples = append(cd.samples, tot...)
	return tot, nil
}

// program returns c's built, verified and warmed-up program.
func (m *live) program(c search.Candidate) (device.Program, error) {
	cd := m.built(c)
	if cd.err != nil {
		return nil, cd.err
	}
	return cd.prog, nil
}

// built returns c's state, building and verifying it on first use.
func (m *live) built(c search.Candidate) *candidate {
	key := c.Key()
	cd := m.cands.get(c)
	if cd.prog == nil && cd.err == nil {
		m.fillWait(c)
		tb := time.Now()
		prog, err := m.t.b.Build(m.task.Kernel, m.task.DType, c)
		m.clk.add(phaseCompile, tb)
		if err != nil {
			cd.err = fmt.Errorf("build: %w", err)
		} else {
			cd.prog = prog
			cd.err = m.ready(prog, c)
		}
		if cd.err != nil && m.t.cfg.Verbose {
			fmt.Fprintf(m.t.cfg.Log, "  %s %s: %v\n", key, StatusOf(cd.err), cd.err)
		}
	}
	return cd
}

// fillWait takes samples of the fastest candidates measured so far, one
// at a time, while c's compile is not done on a backend that says so
// (device.Readier): the device would otherwise wait, and the leaders'
// medians, from which the final timing picks the finalists it screens,
// gain samples that cost no wall time. The fastest few (as many as the
// final timing's finalists, at least two) are sampled in turn; one with
// fillMaxSamples gives its place to the next of the fillLeaders fastest.
// Without one left, or after a sample fails, Build waits.
func (m *live) fillWait(c search.Candidate) {
	r, ok := m.t.b.(device.Readier)
	if !ok {
		return
	}
	// The leaders are chosen once a wait (sorting every candidate's
	// samples each round would cost the host more than a sample).
	lead := m.cands.leaders(fillLeaders, fillMaxSamples)
	turn := max(2, m.t.cfg.Finalists)
	for len(lead) > 0 && !r.Ready(m.task.Kernel, m.task.DType, c) {
		lead = slices.DeleteFunc(lead, func(cd *candidate) bool { return len(cd.samples) >= fillMaxSamples })
		for _, cd := range lead[:min(turn, len(lead))] {
			s0 := m.clk.split()
			tot, _, err := m.sample(cd.prog, 1)
			// The leader's time, not the candidate's whose measure this is.
			d := m.clk.since(s0)
			for i := range d {
				cd.spent[i] += d[i]
				m.filled[i] += d[i]
			}
			if err != nil {
				return
			}
			cd.samples = append(cd.samples, tot...)
			if r.Ready(m.task.Kernel, m.task.DType, c) {
				return
			}
		}
	}
}

// fillMaxSamples bounds the samples fillWait gives a leader; fillLeaders
// is how far down the ranking it goes: the candidates a final timing could
// still take as finalists once more samples move their medians.
const (
	fillMaxSamples = 64
	fillLeaders    = 8
)

// leaders are those of the k fastest candidates measured without error,
// by median, that have a program and fewer than max samples, the fastest
// first.
func (cs candidates) leaders(k, max int) []*candidate {
	var out []*candidate
	for _, cd := range cs {
		if cd.err == nil && cd.prog != nil && len(cd.samples) > 0 {
			out = append(out, cd)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		mi, mj := stats.Median(out[i].samples), stats.Median(out[j].samples)
		if mi != mj {
			return mi < mj
		}
		return out[i].cand.Key() < out[j].cand.Key()
	})
	out = out[:min(k, len(out))]
	return slices.DeleteFunc(out, func(cd *candidate) bool { return len(cd.samples) >= max })
}

// ready verifies a program and warms it up: the one path by which a
// search candidate, the incumbent and the baseline become ready to time, so
// that none of them is timed colder than the others (a GPU's clocks, its
// caches and a pipeline's first use all favour whoever ran just before).
// cand is nil for the baseline.
func (m *live) ready(prog device.Program, cand search.Candidate) error {
	if err := m.verify(prog, cand); err != nil {
		return fmt.Errorf("verification: %w", err)
	}
	if err := m.warmup(prog); err != nil {
		return fmt.Errorf("warmup: %w", err)
	}
	return nil
}

// verify runs prog on every problem (odd shapes first) and compares with
// the reference (outputs larger than kernels.FullVerifyMax on a sample of
// rows, verifyOn). Odd shapes for which the family's constraints reject
// cand are skipped (cand is nil for a baseline, which takes every shape).
func (m *live) verify(prog device.Program, cand search.Candidate) error {
	defer m.clk.add(phaseVerify, time.Now())
	if m.clk != nil {
		d0 := m.clk.device
		defer func() { m.verifyDevice = m.clk.device - d0 }()
	}
	ps, _ := m.task.Kernel.Space(m.t.b.Info().Backend)
	checked := 0
	for i, l := range append(append([]*loaded{}, m.odd...), m.problems...) {
		if i < len(m.odd) && cand != nil && ps != nil && ps.Check != nil && ps.Check(l.p.Case.Shape, cand) != nil {
			continue
		}
		if err := m.verifyOn(prog, l, cand); err != nil {
			return err
		}
		checked++
	}
	if checked == 0 {
		// A candidate no verification shape accepts must not pass unverified.
		return fmt.Errorf("no verification shape satisfies its constraints, so it was not verified")
	}
	return nil
}

// verifyOn runs prog once on problem l and compares its output with the
// reference: in full, or for a large output every element's finiteness and
// a sample of rows (kernels.RowSample), which differs from candidate to
// candidate (cand; nil for a baseline).
func (m *live) verifyOn(prog device.Program, l *loaded, cand search.Candidate) error {
	var salt uint64
	if cand != nil {
		salt = kernels.Salt(cand.Key())
	}
	s, sampled := l.p.SampleRows(salt)
	sampled = sampled && !m.t.cfg.VerifyFull
	t0 := time.Now()
	if !sampled {
		out, err := prog.Output(l.inst)
		m.clk.deviceOnly(t0)
		if err != nil {
			return fmt.Errorf("running on %s: %w", l.p.Case, err)
		}
		return l.p.VerifyFor(out, cand)
	}
	var (
		rows        []float32
		firstBad, n int
		err         error
	)
	if so, ok := prog.(device.SampledOutputer); ok {
		rows, firstBad, n, err = so.OutputSample(l.inst, s)
		m.clk.deviceOnly(t0)
	} else {
		var out []float32
		out, err = prog.Output(l.inst)
		m.clk.deviceOnly(t0)
		rows, firstBad = s.Extract(out)
		n = len(out)
	}
	if err != nil {
		return fmt.Errorf("running on %s: %w", l.p.Case, err)
	}
	return l.p.VerifySample(s, rows, firstBad, n, cand)
}

func (m *live) warmup(prog device.Program) error {
	start := time.Now()
	for time.Since(start) < m.t.cfg.Warmup {
		for _, l := range m.problems {
			t0 := time.Now()
			_, err := prog.Run(l.inst, 1)
			m.clk.onDevice(phaseMeasure, t0)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// sample times n runs on every problem; totals[j] sums run j over problems.
// A median below a problem's physical floor, or a non-positive one, is a
// measurement error.
func (m *live) sample(prog device.Program, n int) (totals []float64, perProblem [][]float64, err error) {
	totals = make([]float64, n)
	perProblem = make([][]float64, n)
	for j := range perProblem {
		perProblem[j] = make([]float64, len(m.problems))
	}
	for i, l := range m.problems {
		t0 := time.Now()
		ts, err := prog.Run(l.inst, n)
		m.clk.onDevice(phaseMeasure, t0)
		if err != nil {
			return nil, nil, fmt.Errorf("timing %s: %w", l.p.Case, err)
		}
		if len(ts) != n {
			return nil, nil, fmt.Errorf("timing %s: backend returned %d samples, want %d", l.p.Case, len(ts), n)
		}
		med := stats.Median(ts)
		if !(med > 0) {
			return nil, nil, fmt.Errorf("measurement error on %s: median %g s is not positive", l.p.Case, med)
		}
		if med < l.floor {
			return nil, nil, fmt.Errorf("measurement error on %s: median %.3g µs is below the physical floor %.3g µs", l.p.Case, med*1e6, l.floor*1e6)
		}
		for j, t := range ts {
			totals[j] += t
			perProblem[j][i] = t
		}
	}
	return totals, perProblem, nil
}

func (m *live) load() error {
	pre := m.drawn.take(m.task)
	if pre != nil {
		m.dataSeed = m.drawn.seed
	}
	cases := append(append([]kernels.Case{}, m.task.Kernel.Odd...), m.task.Cases...)
	for i, c := range cases {
		var p *kernels.Problem
		if pre != nil {
			p = pre[i]
		}
		if err := m.loadOne(c, i >= len(m.task.Kernel.Odd), p); err != nil {
			return err
		}
	}
	// The float64 references now, as part of the setup, rather than in
	// the first verification, whose time they would swell.
	for _, l := range append(append([]*loaded{}, m.odd...), m.problems...) {
		l.p.Reference()
	}
	return nil
}

// Drawn are a task's problems (its odd shapes, then its cases), drawn
// with their float64 references on a goroutine of their own ahead of the
// entry (Allotment.Drawn): a device other than the host's CPU then times
// the entry before instead of waiting for them.
type Drawn struct {
	task  Task
	seed  uint64
	done  chan struct{}
	probs []*kernels.Problem
	err   error
}

// DrawAhead starts drawing task's problems as its entry would, with the
// configured data seed (a random one without).
func (t *Tuner) DrawAhead(task Task) *Drawn {
	d := &Drawn{task: task, seed: t.cfg.DataSeed, done: make(chan struct{})}
	for d.seed == 0 {
		d.seed = rand.Uint64()
	}
	go func() {
		defer close(d.done)
		for i, c := range append(append([]kernels.Case{}, task.Kernel.Odd...), task.Cases...) {
			p, err := kernels.NewSeededProblem(task.Kernel, task.DType, c, problemSeed(d.seed, uint64(i+1)))
			if err != nil {
				d.err = err
				return
			}
			p.Reference()
			d.probs = append(d.probs, p)
		}
	}()
	return d
}

// take waits for the problems when they are task's, drawn without error;
// otherwise (nil d included) it returns nil and the entry draws its own.
func (d *Drawn) take(task Task) []*kernels.Problem {
	if d == nil || d.task.Kernel != task.Kernel || d.task.DType != task.DType || d.task.Key() != task.Key() {
		return nil
	}
	<-d.done
	if d.err != nil || len(d.probs) != len(task.Kernel.Odd)+len(task.Cases) {
		return nil
	}
	return d.probs
}

// problemSeed is the seed of the n-th problem (from 1) an entry draws from
// its data seed: each problem has its own, so that a worker process can
// draw it again.
func problemSeed(seed, n uint64) uint64 { return seed ^ (n * 0x9e3779b97f4a7c15) }

// loadOne draws a case's inputs (or takes p, drawn ahead) and loads them;
// timed cases of memory-bound families get enough input copies to stream
// past the last-level cache.
func (m *live) loadOne(c kernels.Case, timed bool, p *kernels.Problem) error {
	info := m.t.b.Info()
	if m.dataSeed == 0 {
		m.dataSeed = m.t.cfg.DataSeed
		for m.dataSeed == 0 {
			m.dataSeed = rand.Uint64()
		}
	}
	m.nloaded++
	if p == nil {
		var err error
		if p, err = kernels.NewSeededProblem(m.task.Kernel, m.task.DType, c, problemSeed(m.dataSeed, m.nloaded)); err != nil {
			return err
		}
	}
	copies := 1
	if timed && m.task.Kernel.MemoryBound && info.LLCBytes > 0 {
		in := int64(p.Bytes()) - int64(m.task.Kernel.OutLen(c.Shape)*m.task.DType.Size())
		if in > 0 {
			copies = int(min(64, max(1, (2*info.LLCBytes+in-1)/in), max(1, m.t.cfg.MaxBufferBytes/in)))
		}
	}
	inst, err := m.t.b.Load(p, copies)
	if err != nil {
		return fmt.Errorf("loading %s %s on %s: %w", m.task.Kernel.Name, c, info.Key, err)
	}
	floor := math.Max(p.Flops()/info.PeakFlops, p.Bytes()/info.PeakBandwidth)
	l := &loaded{p: p, inst: inst, floor: floor}
	if timed {
		m.problems = append(m.problems, l)
	} else {
		m.odd = append(m.odd, l)
	}
	return nil
}

func (m *live) close() {
	for _, c := range m.cands {
		if c.prog != nil {
			c.prog.Close()
		}
	}
	for _, l := range append(m.odd, m.problems...) {
		l.inst.Close()
	}
}

// roofline relates cand's median (seconds, summed over the task's
// problems) to the device's floors.
func (m *live) roofline(cand search.Candidate, median float64) *paramfile.RooflineSummary {
	info := m.t.b.Info()
	if m.t.cfg.Facts != nil {
		info.Facts = m.t.cfg.Facts
	}
	var flops, bytes float64
	for _, l := range m.problems {
		flops += l.p.Flops()
		bytes += l.p.Bytes()
	}
	rs := &paramfile.RooflineSummary{Flops: flops, Bytes: bytes}
	if median <= 0 {
		return rs
	}
	rs.GFLOPS = round3(flops / median / 1e9)
	rs.GBPS = round3(bytes / median / 1e9)
	// Memory-bound families are held to the measured copy bandwidth, the
	// others to the arithmetic peak of the units cand runs on, where the
	// backend knows it.
	var floor float64
	if bw := info.Facts["bandwidth_gbps"] * 1e9; m.task.Kernel.MemoryBound && bw > 0 {
		floor, rs.BoundByData = bytes/bw, true
	} else if peak := device.PeakGFLOPS(info, m.task.DType, cand) * 1e9; peak > 0 {
		floor = flops / peak
	}
	if floor > 0 {
		rs.PctOfFloor = round3(100 * floor / median)
	}
	return rs
}

// shapeNames are the task's timed shapes as the file writes them.
func (m *live) shapeNames() []string {
	var out []string
	for _, l := range m.problems {
		out = append(out, l.p.Case.String())
	}
	return out
}

// candidates are a task's candidates by key.
type candidates map[string]*candidate

// get returns c's state, empty on first use.
func (cs candidates) get(c search.Candidate) *candidate {
	cd := cs[c.Key()]
	if cd == nil {
		cd = &candidate{cand: c}
		cs[c.Key()] = cd
	}
	return cd
}

// measured is how many distinct candidates have samples.
func (cs candidates) measured() int {
	n := 0
	for _, c := range cs {
		if c.err == nil && len(c.samples) > 0 {
			n++
		}
	}
	return n
}

func (cs candidates) trace() []Measurement {
	var out []Measurement
	for key, c := range cs {
		m := Measurement{Key: key, Samples: len(c.samples), Status: StatusOK, Remeasured: c.remeas,
			CompileS: c.spent.seconds(phaseCompile), VerifyS: c.spent.seconds(phaseVerify), MeasureS: c.spent.seconds(phaseMeasure)}
		if c.err != nil {
			m.Err = c.err.Error()
			m.Status = c.statusOf()
		} else if len(c.samples) > 0 {
			m.MedianUS = stats.Median(c.samples) * 1e6
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// firstError summarises the failures: each distinct reason with its count.
func (cs candidates) firstError() string {
	counts := map[string]int{}
	for _, c := range cs {
		if c.err != nil {
			counts[c.err.Error()]++
		}
	}
	if len(counts) == 0 {
		return "no candidate was measured"
	}
	var parts []string
	for msg, n := range counts {
		parts = append(parts, fmt.Sprintf("%d× %s", n, msg))
	}
	sort.Strings(parts)
	if len(parts) > 4 {
		parts = append(parts[:4], fmt.Sprintf("and %d more reasons", len(parts)-4))
	}
	return strings.Join(parts, "; ")
}
