package tuner

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/internal/sysmem"
	"github.com/kerntune/kerntune/internal/trace"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/report"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

// SessionConfig configures a Session.
type SessionConfig struct {
	// Config is the tuner's configuration; the session sets its Journal
	// and, for the warm-start strategy, its WarmStart per task.
	Config
	// Out is the params file every finished entry is merged into; its
	// journal is Out+JournalSuffix.
	Out string
	// Force replaces an Out that cannot be parsed; Replace writes every
	// entry over Out's (no keep rule); Resume reuses the journal of an
	// interrupted run.
	Force, Replace, Resume bool
	// Budget is the wall time of the whole run. With more than one task
	// the run is planned first (plan.go): each task gets its need's share
	// of what is left, so time a task does not use goes to the next.
	Budget time.Duration
	// Extend makes Budget a target instead of a limit: when planning (or,
	// mid-run, the pace of the entries) says the entries need more than
	// the time left to measure each one's default and Config.MinBeyondDefault
	// more, the run takes that time instead of refusing the budget or
	// leaving an entry short (SessionSummary.Extended says how much).
	// A front door (make tune) must finish on a machine slower or busier
	// than the one its budget was chosen on.
	Extend bool
	// WarmSiblings, when positive, is how many distinct parameter sets of
	// the family's entries already in Out (this device's first: other
	// classes, among them those this run wrote) any strategy measures right
	// after the default: a winner of a neighbouring class is a good first
	// guess where a short search would not reach one.
	WarmSiblings int
	// Scouts, when positive (with WarmSiblings), makes each family's
	// cheapest entry of a planned run (same kernel and dtype, two entries
	// or more) its scout: tuned before the others and planned to measure
	// up to Scouts candidates, as many as scoutExtra beyond its plain need
	// allows, where they cost least, so that its winner is among the warm
	// starts of the family's costlier entries, which a short run gives a
	// few candidates each.
	Scouts int
	// SoftMin, when positive, is the candidates each entry on a backend
	// that compiles ahead (a GPU's) measures at least, or its whole space,
	// for up to twice its share: past its share it goes on into the run's
	// slack, where its plain minimum would stop it. The entries whose
	// candidates cost most are those with fewest, and a search of a few
	// dozen candidates has barely started (a second run, which shares the
	// budget by the file's records, gave a costly entry half its first
	// run's time). On a CPU the costliest candidates take seconds, and the
	// time would come from the entries after them.
	SoftMin int
	// Lean makes an extension cover what the entries need and a leaner
	// margin (leanCushion, leanPerEntry): a first run's wall time over the
	// room each entry has for more candidates.
	Lean bool
	// Trace, when set, is a file every measured candidate is appended to
	// (JSON lines, package internal/trace).
	Trace string
	// Generator is written to Out's generator field.
	Generator string
	// Hooks are told what the session does; the command line prints it.
	Hooks SessionHooks
}

// SessionHooks are called, when set, on the goroutine of Session.Run, in
// the order of the run.
type SessionHooks struct {
	// Begin and End bracket the tuning of a task (share: its budget).
	Begin func(task Task, share time.Duration)
	End   func(task Task)
	// Skipped: the journal records the task as done by the interrupted run.
	Skipped func(task Task)
	// Failed: the task could not be tuned.
	Failed func(task Task, err error)
	// Tuned: the task has a result (before it is written); elapsed includes
	// reading Out for warm starts and the incumbent.
	Tuned func(res *Result, elapsed time.Duration)
	// Decided: the result was merged into Out (added, replaced or kept).
	Decided func(task Task, d *KeepDecision)
	// Planning: the run with a wall-time budget probes its n entries
	// first; Probed: one was probed (err: it could not be timed); Planned:
	// the plan fits the time left (Plan.Extended: after the deadline
	// moved for it).
	Planning func(n int)
	Probed   func(task Task, est Estimate, need time.Duration, err error)
	Planned  func(p Plan)
	// Allotted: a planned task's allotment, its need at the speed the
	// plan now assumes, and that speed relative to the probes.
	Allotted func(task Task, a Allotment, need time.Duration, speed float64)
}

// Session tunes tasks on one backend and merges each finished entry into a
// params file at once, by the keep rule (paramfile.ChooseEntry), with a
// journal of every measurement so that an interrupted run can be resumed:
// what kerntune tune does beyond reading its flags and printing.
type Session struct {
	b    device.Backend
	cfg  SessionConfig
	info device.DeviceInfo
	jr   *sessionJournal
	// completed is set when the run finished (or was refused) so that the
	// journal goes on Close.
	completed bool
}

// SessionSummary is what a finished Session.Run did.
type SessionSummary struct {
	// Results are the tuned entries, Decisions what became of each in Out
	// (same order).
	Results   []*Result
	Decisions []*KeepDecision
	// Failed counts the tasks that could not be tuned, of Tasks.
	Failed, Tasks int
	// StoppedEarly: a task was not started because the run was interrupted.
	StoppedEarly bool
	// Interrupted: the run's context ended; the journal stays for a resume.
	Interrupted bool
	// Wall is the run's wall time; DeviceS the seconds the device was busy
	// (paramfile.TuneTime.DeviceS) summed over every task tuned, failed ones
	// included.
	Wall    time.Duration
	DeviceS float64
	// Extended is how much the run's deadline moved past its budget
	// (SessionConfig.Extend); 0 when the budget sufficed.
	Extended time.Duration
}

// BusyPct is the device-busy fraction of the whole run, in per cent: the
// device time of every task over the run's wall time (which also holds
// what lies between tasks: reading and writing the params file).
func (s *SessionSummary) BusyPct() float64 {
	if s.Wall <= 0 {
		return 0
	}
	return min(100, 100*s.DeviceS/s.Wall.Seconds())
}

// Compiles are the kernels the tuned entries compiled and those they
// loaded from the backend's compile cache (paramfile.TuneTime), summed; both
// zero where the backend has no cache or it is off.
func (s *SessionSummary) Compiles() (compiled, cached int) {
	for _, r := range s.Results {
		if r.Entry != nil && r.Entry.Time != nil {
			compiled += r.Entry.Time.Compiled
			cached += r.Entry.Time.CacheHits
		}
	}
	return compiled, cached
}

// MeasuredPerEntry are the minimum, median and maximum, over the tuned
// entries, of the candidates measured (ok is false without entries).
func (s *SessionSummary) MeasuredPerEntry() (lo int, med float64, hi int, ok bool) {
	var ns []int
	for _, r := range s.Results {
		if r.Entry != nil {
			ns = append(ns, r.Entry.Candidates.Measured)
		}
	}
	if len(ns) == 0 {
		return 0, 0, 0, false
	}
	slices.Sort(ns)
	med = float64(ns[len(ns)/2])
	if len(ns)%2 == 0 {
		med = float64(ns[len(ns)/2-1]+ns[len(ns)/2]) / 2
	}
	return ns[0], med, ns[len(ns)-1], true
}

// Count is how many decisions took action (KeepAdded, KeepReplaced, KeepKept).
func (s *SessionSummary) Count(action string) int {
	n := 0
	for _, d := range s.Decisions {
		if d.Action == action {
			n++
		}
	}
	return n
}

// JournalPath is the journal of a session writing to out.
func JournalPath(out string) string { return out + JournalSuffix }

// OpenSession opens the journal of cfg.Out: a new one, or with cfg.Resume
// the one an interrupted run left. Without Resume an existing journal is an
// error satisfying errors.Is(err, os.ErrExist); with it, a missing one
// satisfies errors.Is(err, os.ErrNotExist).
func OpenSession(b device.Backend, cfg SessionConfig) (*Session, error) {
	fj, err := OpenFileJournal(JournalPath(cfg.Out), cfg.Resume)
	if err != nil {
		return nil, err
	}
	return &Session{b: b, cfg: cfg, info: keepRecordedBandwidth(b.Info(), cfg), jr: &sessionJournal{FileJournal: fj}}, nil
}

// keepRecordedBandwidth takes the copy bandwidth the params file already
// records for this device, where it does (and the run does not replace
// the file's entries): the memory-bound floors, and so "% of floor", then
// compare across runs instead of moving with each run's measurement of a
// machine whose load varies.
func keepRecordedBandwidth(info device.DeviceInfo, cfg SessionConfig) device.DeviceInfo {
	if cfg.Replace || cfg.Out == "" {
		return info
	}
	f, err := paramfile.ReadFile(cfg.Out)
	if err != nil {
		return info
	}
	d := f.Devices[info.Key]
	if d == nil || d.Facts["bandwidth_gbps"] <= 0 {
		return info
	}
	info.Facts = maps.Clone(info.Facts)
	if info.Facts == nil {
		info.Facts = map[string]float64{}
	}
	info.Facts["bandwidth_gbps"] = d.Facts["bandwidth_gbps"]
	return info
}

// Close closes the journal, deleting it when the run completed.
func (s *Session) Close() error { return s.jr.Close(s.completed) }

// JournalPath is the session's journal.
func (s *Session) JournalPath() string { return s.jr.Path() }

// JournalError is a failed journal write. The run stops at once, since
// measurements that cannot be journaled could be lost; Out was not changed
// after the error.
type JournalError struct{ Err error }

func (e *JournalError) Error() string { return e.Err.Error() }
func (e *JournalError) Unwrap() error { return e.Err }

// WriteError is a failure to merge a result into Out; Out was not changed
// and the journal keeps the measurements.
type WriteError struct {
	Path string
	Err  error
}

func (e *WriteError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// TooSmallError is a budget that ran out before a candidate beyond the
// default was measured, in a space that has others: such an entry only
// restates the default, so nothing is written and the journal goes (the
// run is to be repeated with a larger budget, not resumed).
type TooSmallError struct {
	// Result is the first such entry's.
	Result *Result
	// Entries is how many tasks were left at the first, it included.
	Entries int
	// Skipped names every such entry of the run (kernel and key), and
	// Written how many entries the run tuned; Run returns the error with
	// its summary after tuning the others.
	Skipped []string
	Written int
	// Needed is what the skipped entries need, by their own measurements,
	// to measure Config.MinBeyondDefault candidates beyond the default (Need).
	Needed time.Duration
}

func (e *TooSmallError) Error() string {
	msg := fmt.Sprintf("%s %s measured only the default before the budget ran out, so it has nothing to compare the default with and no entry was written",
		e.Result.Task.Kernel.Name, e.Result.Task.Key())
	if len(e.Skipped) > 1 {
		msg += fmt.Sprintf(" (nor for %d more: %s)", len(e.Skipped)-1, strings.Join(e.Skipped[1:], ", "))
	}
	if e.Written > 0 {
		msg += fmt.Sprintf("; the run's other %s tuned and written", report.Plural(e.Written, "entry was", "entries were"))
	}
	return msg
}

// EvaluationsSpent reports whether the evaluation budget (not the wall
// time) ran out.
func (e *TooSmallError) EvaluationsSpent() bool { return e.Result.Stopped == "evaluation budget spent" }

// BudgetSpentError is a resumed run whose interrupted run had already
// spent the whole wall-time budget: nothing is left to tune with. The
// journal stays; a larger budget finishes the run.
type BudgetSpentError struct {
	Budget, Spent time.Duration
}

func (e *BudgetSpentError) Error() string {
	return fmt.Sprintf("the interrupted run already spent %s of its %s budget; nothing is left to finish it with", e.Spent.Round(100*time.Millisecond), e.Budget)
}

// Resumed says what the interrupted run this session resumes recorded:
// the wall time it spent and its budget (0 when it recorded none). Both
// are 0 for a new run.
func (s *Session) Resumed() (spent, budget time.Duration) { return s.jr.Spent(), s.jr.Budget() }

// MemoryError is a shape whose problem needs more memory than the machine
// can give: refused before anything is allocated, and a new run leaves no
// journal.
type MemoryError struct {
	Kernel, DType, Shape string
	Need, Available      float64
	Source               string // what bounds Available
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("%s %s at shape %s needs at least %s of memory for its inputs, outputs and float64 reference; %s available (%s): choose a smaller shape",
		e.Kernel, e.DType, e.Shape, gib(e.Need), gib(e.Available), e.Source)
}

func gib(b float64) string { return fmt.Sprintf("%.1f GiB", b/(1<<30)) }

// checkMemory refuses the first case of tasks whose problem would not fit
// in what available says the process can allocate.
func checkMemory(tasks []Task, available func() (uint64, string, bool)) error {
	avail, src, ok := available()
	if !ok {
		return nil
	}
	for _, t := range tasks {
		for _, c := range t.Cases {
			if need := t.Kernel.HostBytes(c); need > float64(avail) {
				return &MemoryError{Kernel: t.Kernel.Name, DType: string(t.DType), Shape: families.ShapeString(c.Shape),
					Need: need, Available: float64(avail), Source: src}
			}
		}
	}
	return nil
}

// tooSmall reports whether res is no result (see TooSmallError).
func tooSmall(res *Result) bool {
	e := res.Entry
	budgetSpent := res.Stopped == "budget spent" || res.Stopped == "evaluation budget spent"
	return e != nil && budgetSpent && e.Evaluations <= 1 && e.Candidates.Valid > 1
}

// Run tunes the tasks, cheapest first (a planned run: the largest need
// first, plan.go), and merges each finished entry into Out. It stops at
// the first write error of the journal, the trace or Out, and at a budget
// too small to tune anything (*TooSmallError). When ctx
// ends it stops after the entry in progress, which is written as partial.
func (s *Session) Run(ctx context.Context, tasks []Task) (*SessionSummary, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.jr.cancel = cancel
	tasks = slices.Clone(tasks)
	sort.SliceStable(tasks, func(i, j int) bool { return tasks[i].Cost() < tasks[j].Cost() })
	cfg := s.cfg.Config
	cfg.Journal = s.jr
	cfg.Facts = s.info.Facts
	tu := New(s.b, cfg)
	h := s.cfg.Hooks
	runStart := time.Now()
	runID := runStart.UTC().Format(time.RFC3339Nano)
	sum := &SessionSummary{Tasks: len(tasks)}
	defer func() { sum.Wall = time.Since(runStart) }()
	key := s.info.Key
	var small *TooSmallError
	// A resumed run goes on with the budget the interrupted one left.
	spent := s.jr.Spent()
	if spent > 0 && spent >= s.cfg.Budget && !s.cfg.Extend {
		return nil, &BudgetSpentError{Budget: s.cfg.Budget, Spent: spent}
	}
	deadline := time.Now().Add(s.cfg.Budget - spent)
	s.jr.start, s.jr.base = time.Now(), spent
	s.jr.Record(Record{Kind: RecordSession, BudgetS: s.cfg.Budget.Seconds()})
	if err := checkMemory(tasks, sysmem.Available); err != nil {
		s.completed = spent == 0
		return nil, err
	}
	needs, samples, mins, ext, err := s.plan(ctx, tu, tasks, deadline, spent)
	if err != nil {
		// A budget refused before any work: a new run leaves no journal.
		s.completed = spent == 0
		return nil, err
	}
	deadline = deadline.Add(ext)
	sum.Extended += ext
	if needs != nil {
		tasks, needs, samples, mins = costliestFirst(tasks, needs, samples, mins)
	}
	// Every entry's first candidates go to the compile pool now, the first
	// entry's last (the pool compiles the newest announcement first), so
	// that its workers are busy from the start and an entry finds its first
	// batch compiled; each entry's own requests, announced later, go first.
	// The announcements enumerate spaces and ask the strategies on the
	// host: on a goroutine of their own, while the first entry sets up.
	var undone []Task
	for _, t := range tasks {
		if !s.jr.Done(key, t.Kernel.Name, t.Key()) {
			undone = append(undone, t)
		}
	}
	announced := make(chan struct{})
	defer func() { <-announced }() // the backend outlives the announcements
	go func(tu *Tuner) {
		defer close(announced)
		for i := len(undone) - 1; i >= 0 && ctx.Err() == nil; i-- {
			tu.announce(undone[i])
		}
	}(tu)
	var ahead *Drawn // the next entry's problems, drawn ahead
	sched := &schedule{deadline: deadline, needs: needs, samples: samples, pace: newPace(needs), extend: s.cfg.Extend, cushion: planCushion}
	if s.cfg.Lean {
		sched.cushion = leanCushion
	}
	for i, task := range tasks {
		if ctx.Err() != nil {
			sum.StoppedEarly = true
			break
		}
		if s.jr.Done(key, task.Kernel.Name, task.Key()) {
			if h.Skipped != nil {
				h.Skipped(task)
			}
			continue
		}
		a, moved, speed := sched.allot(i, func() int { return s.todo(tasks[i:]) })
		scout := 0
		if mins != nil {
			scout = mins[i]
		}
		a.Min, a.MinWithin = entryMinimum(a.Share, scout, s.cfg.SoftMin, compilesAhead(tu.b))
		sum.Extended += moved
		if h.Allotted != nil && needs != nil {
			h.Allotted(task, a, time.Duration(float64(needs[i])*speed), speed)
		}
		for _, nt := range tasks[i+1:] {
			if !s.jr.Done(key, nt.Kernel.Name, nt.Key()) {
				a.Next = &nt
				break
			}
		}
		// The next entry's problems are drawn while this one is timed
		// (drawsAhead).
		a.Drawn = ahead
		ahead = nil
		if a.Next != nil && s.drawsAhead() {
			ahead = tu.DrawAhead(*a.Next)
		}
		share := a.Share
		start := time.Now()
		if ws := s.warmStart(task); ws != nil || cfg.WarmStart != nil {
			cfg.WarmStart = ws
			tu = New(s.b, cfg)
		}
		if !s.cfg.Replace {
			// Re-checked under the file's lock when the entry is written.
			task.Incumbent = incumbentFor(s.cfg.Out, key, task)
		}
		if h.Begin != nil {
			h.Begin(task, share)
		}
		res, err := tu.RunPlanned(ctx, task, a)
		if h.End != nil {
			h.End(task)
		}
		if res != nil && res.Time != nil {
			sum.DeviceS += res.Time.DeviceS
		}
		if res != nil {
			sched.took(i, res.Needed)
		}
		if s.cfg.Trace != "" && res != nil {
			// Every line names the run, so that a trace appended to by
			// several runs tells the file's entry's records from the others'.
			recs, ents := traceRecords(key, res), traceEntries(key, res)
			for i := range recs {
				recs[i].Run = runID
			}
			for i := range ents {
				ents[i].Run = runID
			}
			if terr := trace.Append(s.cfg.Trace, recs, ents...); terr != nil {
				return nil, terr
			}
		}
		if jerr := s.jr.Err(); jerr != nil {
			return nil, &JournalError{jerr}
		}
		if err != nil {
			if ctx.Err() == nil {
				s.jr.MarkDone(key, task.Kernel.Name, task.Key(), err.Error())
			}
			sum.Failed++
			if h.Failed != nil {
				h.Failed(task, err)
			}
			continue
		}
		if tooSmall(res) {
			// Not written, and the other entries go on: one entry whose
			// candidates cost more than its share of the budget must not
			// cost the run its other entries. Run reports it at the end.
			if small == nil {
				small = &TooSmallError{Result: res, Entries: len(tasks) - i}
			}
			small.Skipped = append(small.Skipped, res.Task.Kernel.Name+" "+res.Task.Key())
			small.Needed += res.Needed
			if h.Failed != nil {
				h.Failed(task, &TooSmallError{Result: res, Entries: 1})
			}
			continue
		}
		RecordBackendOptions(s.info, res.Entry)
		sum.Results = append(sum.Results, res)
		if h.Tuned != nil {
			h.Tuned(res, time.Since(start))
		}
		d, err := s.write(res)
		if err != nil {
			return nil, &WriteError{Path: s.cfg.Out, Err: err}
		}
		sum.Decisions = append(sum.Decisions, d)
		if h.Decided != nil {
			h.Decided(task, d)
		}
		if res.Stopped != paramfile.StoppedInterrupted {
			s.jr.MarkDone(key, task.Kernel.Name, task.Key(), "")
		}
	}
	if jerr := s.jr.Err(); jerr != nil {
		return nil, &JournalError{jerr}
	}
	sum.Interrupted = ctx.Err() != nil
	s.completed = !sum.Interrupted
	if small != nil && !sum.Interrupted {
		small.Written = len(sum.Results)
		return sum, small
	}
	return sum, nil
}

// plan probes the tasks not done yet when the run has a wall-time budget
// and more than one of them, and returns what each needs (by task index;
// nil without a plan). When their needs exceed the time left it returns a
// *PlanError, or with Extend how much later the deadline must be (ext).
func (s *Session) plan(ctx context.Context, tu *Tuner, tasks []Task, deadline time.Time, spent time.Duration) (needs, samples []time.Duration, mins []int, ext time.Duration, err error) {
	if s.cfg.Budget >= NoWallTime {
		return nil, nil, nil, 0, nil
	}
	var todo []int
	for i, task := range tasks {
		if s.todo([]Task{task}) == 1 {
			todo = append(todo, i)
		}
	}
	if len(todo) < 2 {
		return nil, nil, nil, 0, nil // one entry has the whole budget: nothing to share
	}
	h := s.cfg.Hooks
	start := time.Now()
	needs = make([]time.Duration, len(tasks))
	samples = make([]time.Duration, len(tasks))
	ests := make([]*Estimate, len(tasks)) // the probes that timed
	pe := &PlanError{Budget: s.cfg.Budget, Spent: spent, Entries: len(todo), MinBeyond: tu.cfg.MinBeyondDefault}
	families := map[string]bool{}
	// Entries Out records are planned by what their last run took; the
	// others are probed.
	var recorded map[int]Estimate
	if !s.cfg.Replace {
		recorded = recordedEstimates(s.cfg.Out, s.info.Key, tu, tasks, todo)
	}
	var probed []int
	for _, i := range todo {
		if _, ok := recorded[i]; !ok {
			probed = append(probed, i)
		}
	}
	if h.Planning != nil && len(probed) > 0 {
		h.Planning(len(probed))
	}
	// The next probe's problems are drawn while this one times (drawsAhead).
	ahead := s.drawsAhead()
	var drawn *Drawn
	next := 0 // probed[next] is the next entry to probe
	for _, i := range todo {
		if ctx.Err() != nil {
			return nil, nil, nil, 0, nil // interrupted: the loop stops at once
		}
		task := tasks[i]
		est, err := recorded[i], error(nil)
		if _, ok := recorded[i]; !ok {
			if ahead && drawn == nil {
				drawn = tu.DrawAhead(task)
			}
			this := drawn
			drawn = nil
			if next++; ahead && next < len(probed) {
				drawn = tu.DrawAhead(tasks[probed[next]])
			}
			est, err = tu.probe(ctx, task, this)
		}
		// Without a timing the entry needs at least its setup; its run
		// tells the rest.
		needs[i] = max(est.Setup, time.Millisecond) // positive: still to tune
		if err == nil {
			// A recorded entry is the incumbent (recordedEstimates read it).
			est.NoIncumbent = s.cfg.Replace || !est.Recorded && incumbentFor(s.cfg.Out, s.info.Key, task) == nil
			needs[i], samples[i] = tu.Need(est), est.Sample
			ests[i] = &est
		}
		if h.Probed != nil {
			h.Probed(task, est, needs[i], err)
		}
		pe.Needed += needs[i]
		families[task.Kernel.Name] = true
		if needs[i] > pe.LargestNeed {
			pe.Largest, pe.LargestNeed = task.Kernel.Name+" "+task.Key(), needs[i]
		}
	}
	if s.cfg.Scouts > 0 && s.cfg.WarmSiblings > 0 {
		for i, sc := range scoutsOf(tasks, todo, needs, ests) {
			if !sc {
				continue
			}
			if n, need := scoutMin(tu, *ests[i], s.cfg.Scouts, needs[i]+scoutExtra); n > 0 {
				if mins == nil {
					mins = make([]int, len(tasks))
				}
				mins[i] = n
				pe.Needed += need - needs[i]
				needs[i] = need
			}
		}
	}
	pe.Probe, pe.Families = time.Since(start), len(families)
	margin, overhead := planCushion-1, entryOverhead
	if short := pe.Needed - time.Until(deadline); short > 0 {
		if !s.cfg.Extend {
			return nil, nil, nil, 0, pe
		}
		// The plan's cushion and the per-entry overhead too, as the
		// budget PlanError.Suggested advises would have had.
		cushion, perEntry := planCushion, entryOverhead
		if s.cfg.Lean {
			cushion, perEntry = leanCushion, leanPerEntry
		}
		ext = short + time.Duration(float64(pe.Needed)*(cushion-1)) + time.Duration(len(todo))*perEntry
		margin, overhead = cushion-1, perEntry
	}
	if h.Planned != nil {
		h.Planned(Plan{Entries: len(todo), Recorded: len(recorded), Needed: pe.Needed, Left: time.Until(deadline), Took: pe.Probe, Extended: ext, Margin: margin, PerEntry: overhead})
	}
	return needs, samples, mins, ext, nil
}

// recordedEstimates are the estimates of the todo tasks whose entry in
// the params file at path, on device, records what its last run took
// (paramfile.TuneTime) and the default's time on the same shapes: a
// second run plans by them instead of probing each entry again (drawing
// its inputs and reference, building and timing the default), which on a
// GPU left the device idle for the whole of planning. The run's pace
// corrects a record that no longer holds. Keyed by task index.
func recordedEstimates(path, device string, tu *Tuner, tasks []Task, todo []int) map[int]Estimate {
	f, err := paramfile.ReadFile(path)
	if err != nil || f.Devices[device] == nil {
		return nil
	}
	out := map[int]Estimate{}
	for _, i := range todo {
		task := tasks[i]
		e := f.Devices[device].Kernels[task.Kernel.Name][task.Key()]
		if e == nil || e.Time == nil || e.Default == nil || e.Default.MedianUS <= 0 || !sameShapes(e.Shapes, task.Cases) {
			continue
		}
		space, err := tu.Space(task)
		if err != nil {
			continue
		}
		est := Estimate{
			Valid: len(space.Enumerate()),
			Setup: seconds(e.Time.SetupS),
			// The default's median: on a GPU less than a sample costs where
			// a sample covers many copies of the inputs (Probe measures that).
			Sample:   time.Duration(e.Default.MedianUS * float64(time.Microsecond)),
			Recorded: true,
		}
		// The wait for a build, on average over the kernels the entry
		// built or loaded from the compile cache.
		if n := e.Time.Compiled + e.Time.CacheHits; n > 0 {
			est.Build = seconds(e.Time.CompileS / float64(n))
		}
		out[i] = est
	}
	return out
}

// sameShapes says whether an entry's shapes are the cases', in order.
func sameShapes(shapes [][]int, cases []kernels.Case) bool {
	if len(shapes) != len(cases) {
		return false
	}
	for i, c := range cases {
		if !slices.Equal(shapes[i], c.Shape) {
			return false
		}
	}
	return true
}

// entryMinimum is an entry's Allotment.Min and MinWithin for its share:
// a scout's minimum (scout > 0) for scoutExtra past its share, else on a
// backend that compiles ahead SessionConfig.SoftMin up to twice its share;
// zero for the plain minimum.
func entryMinimum(share time.Duration, scout, softMin int, ahead bool) (int, time.Duration) {
	switch {
	case scout > 0:
		return scout, share + scoutExtra
	case softMin > 0 && ahead:
		return softMin, 2 * share
	}
	return 0, 0
}

// scoutExtra is the most a scout is planned for beyond its plain need: on
// a GPU, where a candidate's build can take a second, a scout then
// measures what that second buys, not Scouts builds.
const scoutExtra = time.Second

// scoutMin is the most candidates, up to want, that an entry of estimate e
// can measure within limit, and its need then; 0 when no more than its
// plain minimum fit.
func scoutMin(tu *Tuner, e Estimate, want int, limit time.Duration) (int, time.Duration) {
	plain := tu.minOf(e.Valid, 0)
	for n := tu.minOf(e.Valid, want); n > plain; n-- {
		e.Min = n
		if need := tu.Need(e); need <= limit {
			return n, need
		}
	}
	return 0, 0
}

// scoutsOf marks, among the todo tasks whose probe timed (ests), the
// cheapest of each kernel and dtype that has two or more: its scout
// (SessionConfig.Scouts). nil when there is none.
func scoutsOf(tasks []Task, todo []int, needs []time.Duration, ests []*Estimate) []bool {
	type fam struct {
		kernel string
		dt     kernels.DType
	}
	cheapest, count := map[fam]int{}, map[fam]int{}
	for _, i := range todo {
		if ests[i] == nil {
			continue
		}
		f := fam{tasks[i].Kernel.Name, tasks[i].DType}
		count[f]++
		if j, ok := cheapest[f]; !ok || needs[i] < needs[j] {
			cheapest[f] = i
		}
	}
	var scouts []bool
	for f, i := range cheapest {
		if count[f] < 2 {
			continue
		}
		if scouts == nil {
			scouts = make([]bool, len(tasks))
		}
		scouts[i] = true
	}
	return scouts
}

// An entry of an extended run short of its minimum may go on up to
// extendSlack times its need at the run's pace, and at least extendFloor
// past it: a cheap entry's need (a fraction of a second) leaves out fixed
// costs that weigh on it alone (without the floor, gemm_at_b f32/small
// stopped one candidate short of its minimum at 0.2 s on a 2-core CPU).
const (
	extendSlack = 4
	extendFloor = 2 * time.Second
)

// remaining is the sum of the needs from task i on.
func remaining(needs []time.Duration, i int) time.Duration {
	var sum time.Duration
	for _, d := range needs[i:] {
		sum += max(d, 0)
	}
	return sum
}

// costliestFirst orders a planned run's tasks by need, the largest first
// (stable): an entry that needs seconds a candidate is the one a change of
// load can leave short of its minimum, and the cheap entries, whose
// minimum takes a fraction of a second, are the ones that can make do with
// what is left; time an entry leaves still goes to those after it. The
// scouts (a positive minimum in mins; nil: none) go before all the
// others, so that their winners are in the file when their families'
// other entries start.
func costliestFirst(tasks []Task, needs, samples []time.Duration, mins []int) ([]Task, []time.Duration, []time.Duration, []int) {
	idx := make([]int, len(tasks))
	for i := range idx {
		idx[i] = i
	}
	scout := func(i int) bool { return mins != nil && mins[i] > 0 }
	sort.SliceStable(idx, func(a, b int) bool {
		if sa, sb := scout(idx[a]), scout(idx[b]); sa != sb {
			return sa
		}
		return needs[idx[a]] > needs[idx[b]]
	})
	t2, n2, s2 := make([]Task, len(tasks)), make([]time.Duration, len(tasks)), make([]time.Duration, len(tasks))
	var m2 []int
	if mins != nil {
		m2 = make([]int, len(tasks))
	}
	for i, j := range idx {
		t2[i], n2[i], s2[i] = tasks[j], needs[j], samples[j]
		if mins != nil {
			m2[i] = mins[j]
		}
	}
	return t2, n2, s2, m2
}

// planCushion is how much more than planned the entries are given room
// for when the slack is shared: an entry's final timing can overrun its
// share under a sudden load, and the entries after it must not pay for it.
const planCushion = 1.15

// leanCushion is a Lean extension's margin over the entries' need, and
// leanPerEntry its allowance an entry: the cheap entries, whose need is a
// fraction of a second, measure a few more candidates with it, where a
// candidate costs least.
const (
	leanCushion  = 1.0
	leanPerEntry = 400 * time.Millisecond
)

// pace follows how much longer than planned the entries take: a ratio of
// sums weighted by cost, so that a cheap entry timed in a moment of load
// does not rescale the whole plan, with older entries' weight decaying so
// that it follows a change of load. It starts at 1 with the weight of a
// quarter of the plan.
type pace struct{ took, planned float64 }

const paceDecay = 0.7

func newPace(needs []time.Duration) *pace {
	var total time.Duration
	for _, d := range needs {
		total += d
	}
	w := float64(total) / 4
	return &pace{took: w, planned: w}
}

// add records an entry that needed took where the plan said planned.
func (p *pace) add(took, planned time.Duration) {
	p.took = p.took*paceDecay + float64(took)
	p.planned = p.planned*paceDecay + float64(planned)
}

// speed is how much longer than planned the entries take, to plan the next
// ones at (between 0.5 and 3; 1 before any entry).
func (p *pace) speed() float64 {
	if p.planned <= 0 {
		return 1
	}
	return min(3, max(0.5, p.took/p.planned))
}

// todo counts the tasks the journal does not record as done.
func (s *Session) todo(tasks []Task) int {
	n := 0
	for _, t := range tasks {
		if !s.jr.Done(s.info.Key, t.Kernel.Name, t.Key()) {
			n++
		}
	}
	return n
}

// scaled is needs times speed (nil stays nil).
func scaled(needs []time.Duration, speed float64) []time.Duration {
	if needs == nil || speed == 1 {
		return needs
	}
	out := make([]time.Duration, len(needs))
	for i, d := range needs {
		out[i] = time.Duration(float64(d) * speed)
	}
	return out
}

// Plan is what planning found (SessionHooks.Planned).
type Plan struct {
	Entries int
	// Recorded is how many of them were planned by what Out records of
	// their last run instead of a probe (Estimate.Recorded).
	Recorded int
	// Needed is the sum of the entries' needs, Left the time the budget
	// leaves to tune them in, Took what planning took.
	Needed, Left, Took time.Duration
	// Extended is how far past the budget the deadline moved for the plan
	// (SessionConfig.Extend): Needed - Left, plus Margin of Needed and
	// PerEntry for each entry.
	Extended time.Duration
	Margin   float64
	PerEntry time.Duration
}

// evenShare is an unplanned task's allotment: an even share of left among
// the todo tasks still to tune, it included.
func evenShare(left time.Duration, todo int) Allotment {
	share := max(left, 0) / time.Duration(max(todo, 1))
	return Allotment{Share: share, Max: share}
}

// allot is planned task i's allotment of left: its need and an even share
// of the slack (left less the needs from i on) among the tasks still to
// tune from i on (those of positive need; done ones have none), and up to
// left less what the later tasks need while it is short of its minimum.
// When left is less than the needs (the device slowed down), each gets its
// need's share.
func allot(left time.Duration, needs []time.Duration, i int) Allotment {
	left = max(left, 0)
	var rest time.Duration
	todo := 1
	for _, d := range needs[i+1:] {
		if d > 0 {
			rest += d
			todo++
		}
	}
	total := needs[i] + rest
	if total <= 0 {
		return Allotment{Share: left, Max: left}
	}
	var share time.Duration
	if slack := left - total; slack >= 0 {
		share = needs[i] + slack/time.Duration(todo)
	} else {
		share = time.Duration(float64(left) * float64(needs[i]) / float64(total))
	}
	return Allotment{Share: share, Max: max(share, left-rest)}
}

// sessionJournal stamps every record with the session's wall time (base,
// what interrupted runs spent, plus the time since start), and stops the
// run (cancels its context) at the first write error, since measurements
// that cannot be journaled could be lost.
type sessionJournal struct {
	*FileJournal
	cancel context.CancelFunc
	start  time.Time
	base   time.Duration
}

func (j *sessionJournal) Record(rec Record) {
	if !j.start.IsZero() {
		rec.ElapsedS = round3((j.base + time.Since(j.start)).Seconds())
	}
	j.FileJournal.Record(rec)
	if j.Err() != nil && j.cancel != nil {
		j.cancel()
	}
}

// What a session did with a tuned entry (KeepDecision.Action).
const (
	KeepAdded    = "added"    // the file had no entry for the device, kernel and key
	KeepReplaced = "replaced" // the new entry replaced the file's
	KeepKept     = "kept"     // the file's entry stayed; the new one was not written
)

// EntryBrief is what a decision reports about each entry.
type EntryBrief struct {
	Params   map[string]int `json:"params"`
	MedianUS float64        `json:"median_us"`
	Measured int            `json:"measured"`
	Valid    int            `json:"valid"`
	Stopped  string         `json:"stopped,omitempty"`
	Partial  bool           `json:"partial,omitempty"`
}

func briefOf(e *paramfile.Entry) *EntryBrief {
	return &EntryBrief{Params: e.Params, MedianUS: e.MedianUS, Measured: e.Candidates.Measured,
		Valid: e.Candidates.Valid, Stopped: e.Stopped, Partial: paramfile.Partial(e)}
}

// KeepDecision is what a session did with one tuned entry (kerntune tune
// prints it, and tune --json holds it).
type KeepDecision struct {
	Action string `json:"action"` // added, replaced or kept
	Reason string `json:"reason"`
	// Old is the entry the file held (absent when added); New the run's.
	Old *EntryBrief `json:"old,omitempty"`
	New *EntryBrief `json:"new"`
	// The same-run interleaved timing of both parameter sets, when there was one.
	OldRetimedUS float64 `json:"old_retimed_us,omitempty"`
	NewRetimedUS float64 `json:"new_retimed_us,omitempty"`
	PValue       float64 `json:"p_value,omitempty"`
}

func (d *KeepDecision) String() string {
	switch d.Action {
	case KeepAdded:
		return "added to the file"
	case KeepReplaced:
		return "replaced the file's entry " + search.Candidate(d.Old.Params).Key() + ": " + d.Reason
	}
	return "KEPT the file's entry " + search.Candidate(d.Old.Params).Key() + ", new entry not written: " + d.Reason
}

// Evidence is the timing as paramfile.ChooseEntry weighs it: the medians and
// the noise rule's verdicts (FasterBeyondNoise) in both directions.
func (rt *Retiming) Evidence() *paramfile.Retimed {
	if rt == nil {
		return nil
	}
	e := &paramfile.Retimed{Params: rt.Params, Same: rt.Same, Invalid: rt.Invalid, Err: rt.Err}
	if len(rt.Samples) > 0 && len(rt.WinnerSamples) > 0 {
		e.Timed = true
		e.OldUS, e.NewUS = round3(stats.Median(rt.Samples)*1e6), round3(stats.Median(rt.WinnerSamples)*1e6)
		e.NewFaster = verdict(FasterBeyondNoise(rt.WinnerSamples, rt.Samples))
		e.OldFaster = verdict(FasterBeyondNoise(rt.Samples, rt.WinnerSamples))
	}
	return e
}

func verdict(c Comparison) paramfile.Verdict {
	return paramfile.Verdict{Faster: c.Faster, P: c.P, Gain: c.Gain}
}

// WriteResult merges a tuned entry into the params file at path (its
// device record from info, generator as the file's generator), keeping the
// file's entry for the same device, kernel and key when it is better
// (paramfile.ChooseEntry; never with replace). The choice is made under the
// file's lock, against the entry the file holds at that moment. An
// existing file that does not parse is kept and the error wraps
// paramfile.ErrUnparsable, unless force is set.
func WriteResult(path string, force, replace bool, info device.DeviceInfo, generator string, res *Result) (*KeepDecision, error) {
	// A backend not registered in this process (a test's) writes no space:
	// the loaders then take the kind its name gives.
	tr, _ := device.TraitsOf(info.Backend)
	dev := &paramfile.Device{
		Backend: info.Backend, Space: tr.Space, Name: info.Name, Family: info.Family,
		ComputeUnits: info.ComputeUnits, TunedAt: time.Now().UTC().Format(time.RFC3339),
		Facts: info.Facts, Kernels: map[string]map[string]*paramfile.Entry{
			res.Task.Kernel.Name: {res.Task.Key(): res.Entry},
		},
	}
	upd := &paramfile.File{SchemaVersion: paramfile.SchemaVersion, Generator: generator, Devices: map[string]*paramfile.Device{info.Key: dev}}
	k, err := paramfile.MergeEntry(path, upd, force, paramfile.Evidence{Replace: replace, Retimed: res.Retiming.Evidence()})
	if err != nil {
		return nil, err
	}
	d := &KeepDecision{Action: KeepAdded, New: briefOf(res.Entry)}
	switch {
	case k.Old == nil:
	case k.Unreadable != nil:
		d.Action, d.Reason, d.Old = KeepKept, "the file's entry could not be compared: "+k.Unreadable.Error(), &EntryBrief{}
	default:
		d.Old, d.Reason, d.Action = briefOf(k.Old), k.Choice.Reason, KeepKept
		d.OldRetimedUS, d.NewRetimedUS, d.PValue = k.Choice.OldUS, k.Choice.NewUS, k.Choice.P
		if k.Choice.KeepNew {
			d.Action = KeepReplaced
		}
	}
	return d, nil
}

func (s *Session) write(res *Result) (*KeepDecision, error) {
	return WriteResult(s.cfg.Out, s.cfg.Force, s.cfg.Replace, s.info, s.cfg.Generator, res)
}

// RecordBackendOptions writes into a tuned entry the backend options its
// numbers depend on, from the facts of the backend that sets them (Metal):
// the math mode the kernels were compiled with (the fact math_mode,
// MTLMathMode 0, 1 or 2) as "math_mode", and whether that is fast math
// (the fact fast_math, 0 or 1) as "fast_math", which older readers know.
// The backend's traits, not its name, decide: any backend that takes
// OptionMathMode records it the same way.
func RecordBackendOptions(info device.DeviceInfo, e *paramfile.Entry) {
	if tr, err := device.TraitsOf(info.Backend); e == nil || err != nil || !tr.Takes(device.OptionMathMode) {
		return
	}
	if v, ok := info.Facts["fast_math"]; ok {
		fast := v == 1
		e.FastMath = &fast
	}
	if v, ok := info.Facts["math_mode"]; ok && v >= 0 && int(v) < len(paramfile.MathModes) && v == float64(int(v)) {
		e.MathMode = paramfile.MathModes[int(v)] // MTLMathMode order: safe, relaxed, fast
	}
}

// traceRecords turns a task's trace into trace-file records (see package trace).
func traceRecords(device string, res *Result) []trace.Record {
	recs := make([]trace.Record, 0, len(res.Trace))
	for _, m := range res.Trace {
		if m.Samples == 0 && m.Err == "" {
			continue // created but never timed
		}
		p, err := search.ParseKey(m.Key)
		if err != nil {
			continue // keys come from Candidate.Key, so this does not happen
		}
		recs = append(recs, trace.Record{
			Device: device, Kernel: res.Task.Kernel.Name, DType: string(res.Task.DType), Key: res.Task.Key(),
			Params: p, MedianUS: round3(m.MedianUS), Samples: m.Samples, Err: m.Err,
			CompileS: round6(m.CompileS), VerifyS: round6(m.VerifyS), MeasureS: round6(m.MeasureS),
		})
	}
	return recs
}

// traceEntries is the trace line of where a task's time went (none when
// the result has no time).
func traceEntries(device string, res *Result) []trace.Entry {
	if res.Time == nil {
		return nil
	}
	return []trace.Entry{{Device: device, Kernel: res.Task.Kernel.Name, DType: string(res.Task.DType), Key: res.Task.Key(), Time: res.Time, BuildS: res.BuildS,
		Ahead: res.Ahead, AheadAsked: res.AheadAsked, Spared: res.Spared}}
}

// drawsAhead says whether the next entry's problems are drawn while this
// one is timed: on a device other than the host's CPU (whose cores are the
// device) and on a host with drawAheadCores or more, where the drawing has
// a core of its own beside the tuner's host work (verification, the
// search, the compile pool's feeding).
func (s *Session) drawsAhead() bool {
	return !s.b.Info().OnHostCPU && runtime.NumCPU() >= drawAheadCores
}

// drawAheadCores is the fewest host cores drawsAhead draws ahead with.
const drawAheadCores = 4

// warmStart is what task's search measures right after the default: for
// the warm strategy every entry warmStartFor finds, otherwise the first
// WarmSiblings distinct ones (none when it is 0).
func (s *Session) warmStart(task Task) []map[string]int {
	all := search.Canonical(s.cfg.Strategy) == "warm"
	if !all && s.cfg.WarmSiblings <= 0 {
		return nil
	}
	ws := warmStartFor(s.cfg.Out, s.info, task)
	if all {
		return ws
	}
	var out []map[string]int
	seen := map[string]bool{}
	for _, w := range ws {
		if k := search.Candidate(w).Key(); !seen[k] && len(out) < s.cfg.WarmSiblings {
			seen[k] = true
			out = append(out, w)
		}
	}
	return out
}

// warmStartFor collects, from the existing params file, the parameters
// recorded for the task's family on this device (other classes or shapes)
// and on other devices of the same backend: starting points for the
// warm-start strategy. A missing or unreadable file gives none.
func warmStartFor(path string, info device.DeviceInfo, task Task) []map[string]int {
	f, err := paramfile.ReadFile(path) // within paramfile.MaxFileSize
	if err != nil {
		return nil
	}
	var own, siblings []map[string]int
	for _, key := range sortedKeys(f.Devices) {
		dev := f.Devices[key]
		if dev == nil || dev.Backend != info.Backend {
			continue
		}
		entries := dev.Kernels[task.Kernel.Name]
		for _, entryKey := range sortedKeys(entries) {
			e := entries[entryKey]
			if e == nil || len(e.Params) == 0 {
				continue
			}
			switch {
			case key == info.Key && entryKey == task.Key():
				own = append([]map[string]int{e.Params}, own...) // the previous result first
			case key == info.Key:
				own = append(own, e.Params)
			default:
				siblings = append(siblings, e.Params)
			}
		}
	}
	return append(own, siblings...)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// incumbentFor returns the parameters of the entry path holds for the
// device and task, or nil (no file, no entry, an unreadable file).
func incumbentFor(path, device string, task Task) map[string]int {
	pf, err := paramfile.ReadFile(path)
	if err != nil {
		return nil
	}
	d := pf.Devices[device]
	if d == nil {
		return nil
	}
	if e := d.Kernels[task.Kernel.Name][task.Key()]; e != nil {
		return e.Params
	}
	return nil
}
