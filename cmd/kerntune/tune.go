package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/spec"
	"github.com/kerntune/kerntune/tuner"
)

func init() {
	commands = append(commands, func(f *Factory) *cobra.Command { return NewCmdTune(f, nil) })
}

// TuneOptions are what tune is asked to do: its flags, and its streams.
type TuneOptions struct {
	IO  IOStreams
	ctx context.Context // the command's; cancelled on SIGINT and SIGTERM by runTune

	backend  string
	kernels  []string
	dtype    string
	shapes   []string
	strategy string
	budget   time.Duration
	budgetS  string
	effort   string
	// budgetSet and driftSet: --budget and --drift-every were given, so
	// --effort does not set them.
	budgetSet, driftSet bool
	extend              bool
	maxEvals            int
	seed                uint64
	out                 string
	force               bool
	replace             bool
	verbose             bool
	quiet               bool
	specs               []string
	// Reliability (reliability.go).
	isolate     bool
	isolateSet  bool
	candTimeout time.Duration
	resume      bool
	trace       string
	asJSON      bool
	backendOpts backendOptions
	fac         *Factory // opens the backend
	where       []string
	// Drift guard (tuner/drift.go).
	driftEvery    int
	driftCooldown time.Duration
	batch         int
	verifyFull    bool
	// families is how many kernel families the run tunes (for advice).
	families int
}

// tuneHelp is tune's usage line, summary and help.
var tuneHelp = cmdHelp{
	use:   "tune",
	short: "Tune kernels on a device and merge the winners into hardware_params.json",
	long: `tune measures every family (or those named by --kernel) on the default
workload, one entry per shape class, or on the exact shapes given by --shape,
one entry per shape. Every candidate is verified against a float64 reference
before it is timed. The budget is shared by all entries; each finished entry is
merged into --out at once, so an interrupted run keeps what it measured.

Every measured candidate is also appended to a journal next to --out
(hardware_params.json.journal) before the next one starts; after a kill or a
crash, the same command with --resume reuses the journal's measurements and
finishes the run. The journal is deleted when a run completes. Ctrl-C stops
cleanly and writes what is done.

GPU backends (cuda, metal, opencl) run candidates in a worker process
(--isolate, on by default for them, off for cpu): a candidate that crashes the
worker or runs past --candidate-timeout is recorded as crashed or timeout and a
fresh worker goes on with the rest.

--budget is wall time for the whole run (3m), evaluations per entry (200e or
200evals: distinct candidates measured, each built and verified once), or
both (3m,200e); tuning an entry stops cleanly at whichever comes first and
the entry records how many candidates it measured and why it stopped. A budget
so small that no candidate beyond the default is measured is an error (exit 2)
and writes nothing. With --extend the wall time is a target instead: when
planning (or an entry's pace mid-run) says the entries need longer to measure
each one's default and 5 more candidates, the run takes that time, says how
much more it took, and exits 0 (make tune runs so: a slower or busier machine
than the budget was chosen on still gets a tuned file).

An entry --out already holds is replaced only when the new one is better:
when the new winner is faster beyond noise than the file's parameters, timed
interleaved in this run; or, within noise, when the new entry is complete (not
interrupted) and measured at least as many candidates. Otherwise the file's
entry is kept, and tune says so. --replace always writes the new entry.

An interrupted run (Ctrl-C, SIGTERM) writes what it finished and exits 130
(SIGINT) or 143 (SIGTERM).`,
}

// NewCmdTune builds the tune command; runF, when not nil, runs instead of runTune.
func NewCmdTune(f *Factory, runF func(*TuneOptions) error) *cobra.Command {
	opts := &TuneOptions{IO: f.IO, fac: f}
	cmd := newCmd(tuneHelp, opts, runF, runTune, func(c *cobra.Command, _ []string) {
		opts.isolateSet = c.Flags().Changed("isolate")
		opts.budgetSet, opts.driftSet = c.Flags().Changed("budget"), c.Flags().Changed("drift-every")
		opts.ctx = c.Context()
	})
	fl := cmd.Flags()
	addBackendFlag(cmd, &opts.backend, " (auto: metal on macOS, else cuda if a GPU is found, else cpu)")
	fl.StringArrayVar(&opts.kernels, "kernel", nil, "kernel family to tune (repeatable; default all): "+strings.Join(kernels.Names(), ", "))
	fl.StringVar(&opts.dtype, "dtype", "f32", "element type: "+strings.Join(dtypeNames(), ", "))
	fl.StringArrayVar(&opts.shapes, "shape", nil, "exact shape to tune, e.g. 1x896x4864 (repeatable; needs exactly one --kernel)")
	fl.StringVar(&opts.strategy, "strategy", search.DefaultStrategy, "search strategy: "+strings.Join(search.Names, ", ")+" (warm = ils climbing from the family's entries already in --out; default: the old name of warm)")
	fl.StringVar(&opts.budgetS, "budget", "3m", "budget: "+budgetHelp+" (default: --effort's)")
	fl.StringVar(&opts.effort, "effort", "default", "how hard to try: "+effortHelp())
	fl.BoolVar(&opts.extend, "extend", false, "take longer than --budget's wall time when the entries need it to measure each one's default and 5 more candidates, instead of refusing (the run says how much longer)")
	fl.Uint64Var(&opts.seed, "seed", 1, "seed of the search strategy")
	fl.StringVar(&opts.out, "out", paramfile.DefaultFileName, "params file to merge the results into")
	fl.BoolVar(&opts.force, "force", false, "replace an existing --out file that cannot be parsed")
	fl.BoolVar(&opts.replace, "replace", false, "write every tuned entry over the --out file's, even when the file's entry is better")
	fl.BoolVarP(&opts.verbose, "verbose", "v", false, "log every candidate")
	fl.BoolVarP(&opts.quiet, "quiet", "q", false, "print only errors")
	fl.StringArrayVar(&opts.specs, "spec", nil, "kernel spec file of a user kernel to tune (repeatable; without --kernel, only the specs' kernels are tuned)")
	fl.BoolVar(&opts.isolate, "isolate", false, "run candidates in a worker process that a crash or hang cannot take down (default: on for cuda, metal, opencl; off for cpu)")
	fl.DurationVar(&opts.candTimeout, "candidate-timeout", 2*time.Minute, "with --isolate: limit of one build, verification or timing call of a candidate")
	fl.BoolVar(&opts.resume, "resume", false, "finish an interrupted run from its journal (--out plus .journal), reusing its measurements")
	fl.StringVar(&opts.trace, "trace", "", "append every measured candidate to this JSON-lines file (read by kerntune report)")
	fl.BoolVar(&opts.asJSON, "json", false, "print the tuned entries as JSON on stdout")
	fl.IntVar(&opts.driftEvery, "drift-every", tuner.DefaultDriftEvery, "re-time the default every N new candidates and measure again what was measured while it drifted more than 10% (0: off)")
	fl.DurationVar(&opts.driftCooldown, "drift-cooldown", 10*time.Second, "idle this long after a drift before timing again (at most a fifth of an entry's budget in all)")
	fl.StringArrayVar(&opts.where, "where", nil, "search only candidates with this parameter value, e.g. MMA=1 (repeatable; all must hold)")
	fl.BoolVar(&opts.verifyFull, "verify-full", false, "compare every output with the reference element by element, however large (default: outputs over 2^20 elements are checked for finiteness in full and compared on a sample of rows)")
	fl.IntVar(&opts.batch, "batch", 0, fmt.Sprintf("candidates the search proposes at once, compiled in parallel while the device times the first (0: %d on GPU backends, 1 on cpu)", tuner.DefaultBatch))
	addBackendFlags(cmd, &opts.backendOpts)
	return cmd
}

func runTune(opts *TuneOptions) error {
	f := *opts // runTune resolves some flags in place (--kernel from --spec, --budget)
	in, err := resolveTune(&f)
	if err != nil {
		return err
	}
	where, specs, ks, tasks := in.where, in.specs, in.ks, in.tasks
	log := f.IO.ErrOut
	if f.quiet {
		log = io.Discard
	}

	if f.backend != "auto" {
		// Before opening a backend that could never run the kernel.
		if err := tuner.SpecsRunOn(tuner.MLXSpecs(specs), f.backend); err != nil {
			return usageErrorf("--spec: %w", err)
		}
	}
	b, err := openForTune(f, log)
	if err != nil {
		return err
	}
	defer b.Close()
	info := b.Info()
	if err := checkWhere(ks, info.Backend, f.where, true); err != nil {
		return err
	}
	if err := tuner.SpecsRunOn(specs, info.Backend); err != nil {
		return usageErrorf("--spec: %w", err)
	}
	ui := newProgressUI(f.IO.ErrOut, f.quiet, len(tasks), f.budget)
	defer ui.close()
	log = ui
	batch := f.batch
	if batch == 0 {
		batch = tuner.BatchFor(b)
	}
	batchNote := ""
	if batch > 1 {
		batchNote = fmt.Sprintf(" (batches of %d)", batch)
	}
	effortNote := ""
	if f.effort != "default" {
		effortNote = ", effort " + f.effort
	}
	fmt.Fprintf(log, "device %s (%s, %s); %s to tune in %s with %s%s%s\n",
		info.Key, info.Backend, plural(info.ComputeUnits, "compute unit", "compute units"), plural(len(tasks), "entry", "entries"), f.budgetS, f.strategy, batchNote, effortNote)

	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	sig := notifySignals(cancel)
	defer sig.stop()
	cfg := tuner.Config{Strategy: f.strategy, Seed: f.seed, Log: log, Verbose: f.verbose, MaxEvals: f.maxEvals, Progress: ui.event, Where: where,
		DriftEvery: f.driftEvery, DriftCooldown: f.driftCooldown, Batch: f.batch, VerifyFull: f.verifyFull}
	eff := efforts[f.effort]
	cfg.FinalSamples, cfg.MinFinalSamples, cfg.MinBeyondDefault = eff.finalSamples, eff.minFinalSamples, f.minBeyond()
	cfg.Finalists, cfg.ProbeSamples, cfg.CheapFinal = eff.finalists, eff.probeSamples, eff.cheapFinal
	if !f.driftSet && !eff.drift {
		f.driftEvery = 0
	}
	if f.driftEvery == 0 {
		cfg.DriftEvery = -1 // 0 on the command line turns the guard off
	}
	s, err := tuner.OpenSession(b, tuner.SessionConfig{
		Config: cfg,
		Out:    f.out, Force: f.force, Replace: f.replace, Resume: f.resume,
		Budget: f.budget, Extend: f.extend, Trace: f.trace, Generator: "kerntune " + version(),
		WarmSiblings: eff.warmSiblings, Scouts: eff.scouts, Lean: eff.lean, SoftMin: eff.softMin,
		Hooks: tuneHooks(f, ui, log),
	})
	if err != nil {
		return journalOpenError(f, err)
	}
	defer s.Close()
	if spent, recorded := s.Resumed(); f.resume && spent > 0 {
		fmt.Fprintln(log, resumeNote(spent, recorded, f.budget, f.budgetS))
	}
	sum, err := s.Run(ctx, tasks)
	var small *tuner.TooSmallError
	if err != nil && (!errors.As(err, &small) || sum == nil) {
		return sessionError(f, err)
	}
	if sum.StoppedEarly {
		fmt.Fprintln(log, "interrupted: stopping; finished entries are saved")
	}
	if sum.Interrupted {
		fmt.Fprintf(log, "the journal %s keeps this run's measurements: finish it with the same command and --resume\n", s.JournalPath())
	}
	if line := runSummary(sum); line != "" {
		fmt.Fprintln(log, line)
	}
	if sum.Extended > 0 {
		fmt.Fprintf(log, "--extend: the run took %s; its deadline moved %s past --budget %s so that every entry measured its default and %s more\n",
			sum.Wall.Round(time.Second), sum.Extended.Round(100*time.Millisecond), f.budgetS, plural(f.minBeyond(), "candidate", "candidates"))
	}
	ui.close()
	if f.asJSON {
		if err := printTuneJSON(f.IO.Out, info.Key, f.out, sum); err != nil {
			return err
		}
	} else if len(sum.Results) > 0 && !f.quiet {
		fmt.Fprintf(f.IO.Out, "%s for %s in %s\n", decisionCounts(sum), info.Key, f.out)
		if hint := nextHint(&f); hint != "" {
			fmt.Fprintln(f.IO.Out, hint)
		}
	}
	if small != nil {
		// The other entries are written; the too-small ones are a usage error.
		return sessionError(f, small)
	}
	if sig := sig.received(); sig != nil {
		return interruptedError{sig: sig, written: len(sum.Decisions) - sum.Count(tuner.KeepKept), journal: s.JournalPath()}
	}
	if sum.Failed > 0 {
		return fmt.Errorf("%d of %s could not be tuned", sum.Failed, plural(len(tasks), "entry", "entries"))
	}
	if len(sum.Results) == 0 {
		return errors.New("nothing was tuned")
	}
	return nil
}

// tuneHooks are what tune prints as the session goes: a line per entry
// tuned, failed or left as the interrupted run finished it, the plan, and
// with -v the planning and the shares of the budget.
func tuneHooks(f TuneOptions, ui *progressUI, log io.Writer) tuner.SessionHooks {
	line := func(task tuner.Task, format string, args ...any) {
		fmt.Fprintf(log, "%-10s %-22s "+format+"\n", append([]any{task.Kernel.Name, task.Key()}, args...)...)
	}
	return tuner.SessionHooks{
		Begin:   ui.begin,
		End:     func(tuner.Task) { ui.end() },
		Skipped: func(t tuner.Task) { line(t, "done before the interruption (in %s)", f.out) },
		Failed:  func(t tuner.Task, err error) { line(t, "FAILED: %v", err) },
		Tuned: func(res *tuner.Result, took time.Duration) {
			line(res.Task, "%s (%.1fs%s%s)", describe(res.Entry), took.Seconds(), busyNote(res.Time), stoppedNote(res.Stopped))
			if f.verbose && res.Time != nil {
				fmt.Fprintf(log, "  time: %s\n", timeSplit(res))
			}
		},
		Planning: func(n int) {
			fmt.Fprintf(log, "planning: timing the default of each of the %d entries the file has no record of, to share the budget by what each needs\n", n)
		},
		Probed: func(t tuner.Task, est tuner.Estimate, need time.Duration, err error) {
			switch {
			case err != nil:
				line(t, "planning: %v", err)
			case f.verbose:
				from := ""
				if est.Recorded {
					from = " (the file's record of its last run)"
				}
				line(t, "planning: %d valid; setup %.2fs, build %.2fs, one sample %s%s: needs about %.1fs", est.Valid, est.Setup.Seconds(), est.Build.Seconds(), fmtSeconds(est.Sample), from, need.Seconds())
			}
		},
		Planned: func(p tuner.Plan) {
			if p.Recorded > 0 {
				fmt.Fprintf(log, "plan: %d of the %d entries by what the file records of their last run\n", p.Recorded, p.Entries)
			}
			if p.Extended <= 0 {
				fmt.Fprintf(log, "plan: the %d entries need about %s of the %s left (planning took %s); each measures its default and at least %s more, or its whole space\n",
					p.Entries, roundS(p.Needed), roundS(p.Left), p.Took.Round(100*time.Millisecond), plural(f.minBeyond(), "candidate", "candidates"))
				return
			}
			// The numbers add up: left + extension = need + margin + overheads.
			fmt.Fprintf(log, "plan: the %d entries need about %s; --budget %s leaves %s after planning (which took %s), so --extend adds %s (what is missing, a %.0f%% margin and %s an entry): the run takes about %s more; each measures its default and at least %s more, or its whole space\n",
				p.Entries, roundS(p.Needed), f.budgetS, roundS(max(p.Left, 0)), p.Took.Round(100*time.Millisecond), roundS(p.Extended),
				100*p.Margin, p.PerEntry, roundS(max(p.Left, 0)+p.Extended), plural(f.minBeyond(), "candidate", "candidates"))
		},
		Allotted: func(t tuner.Task, a tuner.Allotment, need time.Duration, speed float64) {
			if f.verbose {
				line(t, "plan: share %.1fs (up to %.1fs until %d candidates are measured), needs %.1fs at %.2f× the planned speed",
					a.Share.Seconds(), a.Max.Seconds(), 1+f.minBeyond(), need.Seconds(), speed)
			}
		},
		Decided: func(t tuner.Task, d *tuner.KeepDecision) {
			if d.Action != tuner.KeepAdded {
				line(t, "%s", d)
			}
		},
	}
}

// tuneInput is what tune's flags resolve to before a backend is opened.
type tuneInput struct {
	where []search.Constraint
	specs []*spec.Compiled
	ks    []*kernels.Kernel
	tasks []tuner.Task
}

// resolveTune checks tune's flags and turns them into the entries to tune;
// it fills in f what follows from them (--budget's parts, the kernels of
// --spec without --kernel, the number of families).
func resolveTune(f *TuneOptions) (*tuneInput, error) {
	if f.verbose && f.quiet {
		return nil, usageErrorf("-v/--verbose and -q/--quiet together: choose one (-v logs every candidate, -q prints only errors)")
	}
	dts, err := parseDTypes(f.dtype)
	if err != nil {
		return nil, err
	}
	dt := dts[0]
	if f.effort == "" {
		f.effort = "default"
	}
	e, ok := efforts[f.effort]
	if !ok {
		return nil, usageErrorf("--effort %q: allowed are quick, default and thorough (%s)", f.effort, effortHelp())
	}
	if !f.budgetSet {
		f.budgetS = e.budget
	}
	f.extend = f.extend || e.extend
	if f.budget, f.maxEvals, err = parseBudget(f.budgetS); err != nil {
		return nil, err
	}
	if err := countFlag("batch", f.batch, 0, maxBatch, "candidates; 0: automatic"); err != nil {
		return nil, err
	}
	if _, err := search.New(f.strategy, []search.Candidate{{}}, search.Options{}); err != nil {
		return nil, usageErrorf("--strategy: %w", err)
	}
	where, err := whereConstraints(f.where)
	if err != nil {
		return nil, err
	}
	if err := countFlag("drift-every", f.driftEvery, 0, maxCount, "candidates; 0: off"); err != nil {
		return nil, err
	}
	if f.driftCooldown < 0 {
		return nil, usageErrorf("--drift-cooldown must not be negative, got %s", f.driftCooldown)
	}
	specs, err := loadSpecs(f.specs)
	if err != nil {
		return nil, err
	}
	if len(specs) > 0 && len(f.kernels) == 0 {
		for _, c := range specs {
			f.kernels = append(f.kernels, c.Kernel.Name)
		}
	}
	ks, err := parseKernels(f.kernels)
	if err != nil {
		return nil, err
	}
	cases, err := parseShapes(ks, f.shapes)
	if err != nil {
		return nil, err
	}
	if err := checkOutFile(f.out, f.force); err != nil {
		return nil, err
	}
	if err := checkOutDir(f.out); err != nil {
		return nil, err
	}
	if f.trace != "" {
		if err := checkTraceOut(f.trace); err != nil {
			return nil, err
		}
	}
	if err := validateReliabilityFlags(*f); err != nil {
		return nil, err
	}

	tasks, err := tuneTasks(specs, ks, cases, f.shapes, dt)
	if err != nil {
		return nil, err
	}
	fams := map[string]bool{}
	for _, t := range tasks {
		fams[t.Kernel.Name] = true
	}
	f.families = len(fams)
	return &tuneInput{where: where, specs: specs, ks: ks, tasks: tasks}, nil
}

// tuneTasks are the entries to tune: one per --shape (each checked
// against the spec that defines the kernel), else one per shape class of
// every kernel.
func tuneTasks(specs []*spec.Compiled, ks []*kernels.Kernel, cases []kernels.Case, shapes []string, dt kernels.DType) ([]tuner.Task, error) {
	var tasks []tuner.Task
	for i, cs := range cases {
		for _, c := range specs {
			if c.Kernel == ks[0] {
				if err := c.CheckShape(cs.Shape); err != nil {
					return nil, usageErrorf("--shape %s: %w", shapes[i], err)
				}
			}
		}
		tasks = append(tasks, tuner.Task{Kernel: ks[0], DType: dt, Cases: []kernels.Case{cs}})
	}
	if len(cases) == 0 {
		for _, k := range ks {
			ts, err := tuner.ClassTasks(k, dt)
			if err != nil {
				return nil, err
			}
			tasks = append(tasks, ts...)
		}
	}
	return tasks, nil
}

// resumeNote says how much of the budget a resumed run goes on with.
func resumeNote(spent, recorded, budget time.Duration, budgetS string) string {
	spent = spent.Round(100 * time.Millisecond)
	if budget >= noWallLimit {
		return fmt.Sprintf("resuming: the interrupted run spent %s (no wall-time budget)", spent)
	}
	left := (budget - spent).Round(100 * time.Millisecond)
	if recorded > 0 && recorded != budget {
		return fmt.Sprintf("resuming: the interrupted run spent %s of its %s budget; %s of --budget %s left", spent, recorded, left, budgetS)
	}
	return fmt.Sprintf("resuming: the interrupted run spent %s of --budget %s; %s left", spent, budgetS, left)
}

// sessionError turns the errors of a tuning session that the user must act
// on into usage errors naming the flag.
func sessionError(f TuneOptions, err error) error {
	var (
		small *tuner.TooSmallError
		jerr  *tuner.JournalError
		werr  *tuner.WriteError
		spent *tuner.BudgetSpentError
		plan  *tuner.PlanError
		mem   *tuner.MemoryError
	)
	switch {
	case errors.As(err, &mem):
		return usageError{err}
	case errors.As(err, &spent):
		return usageErrorCause(err, "--resume: %v; give a --budget larger than %s to finish it (the journal %s is kept)", err, spent.Spent.Round(time.Second), tuner.JournalPath(f.out))
	case errors.As(err, &plan):
		return usageError{planTooSmall(f.budgetS, plan)}
	case errors.As(err, &small):
		return usageError{budgetTooSmall(f.budgetS, f.budget, small, f.families, f.minBeyond())}
	case errors.As(err, &jerr):
		return usageError{fmt.Errorf("%w; nothing more was measured, and --out was not changed after the error (resume with --resume)", jerr)}
	case errors.As(err, &werr):
		return usageErrorf("--out %s: %w (the file was not changed; the journal keeps the measurements: fix this and run again with --resume)", f.out, werr.Err)
	}
	return err
}

// busyNote is the entry's device-busy share for its summary line.
func busyNote(t *paramfile.TuneTime) string {
	if t == nil {
		return ""
	}
	return fmt.Sprintf(", device busy %.0f%%", t.BusyPct)
}

// timeSplit says where an entry's tuning time went (tune -v), with the
// kernels compiled and those loaded from the compile cache where the
// backend has one, the compile pool's own time (BuildS, 0: not known): a
// wait for builds near it over the pool's workers says the compiler is too
// slow for the device; far above it, that compiles start too late; and
// the candidates measured ahead. res.Time must be set.
func timeSplit(res *tuner.Result) string {
	t, buildS, ahead := res.Time, res.BuildS, res.Ahead
	var notes []string
	if t.CacheHits > 0 || t.Compiled > 0 {
		notes = append(notes, fmt.Sprintf("%d compiled, %d from the cache", t.Compiled, t.CacheHits))
	}
	if buildS > 0 {
		notes = append(notes, fmt.Sprintf("the compile pool busy %.2fs", buildS))
	}
	if ahead > 0 {
		note := fmt.Sprintf("%d measured while another compiled, %d of them asked for later", ahead, res.AheadAsked)
		if res.Spared > 0 {
			note += fmt.Sprintf(", %d spares built by the idle compile pool", res.Spared)
		}
		notes = append(notes, note)
	}
	cache := ""
	if len(notes) > 0 {
		cache = " (" + strings.Join(notes, "; ") + ")"
	}
	return fmt.Sprintf("setup %.2fs, compile %.2fs%s, verify %.2fs, measure %.2fs, search %.2fs, journal %.2fs, other %.2fs of %.2fs; device busy %.2fs (%.0f%%), idle %.2fs",
		t.SetupS, t.CompileS, cache, t.VerifyS, t.MeasureS, t.SearchS, t.JournalS, t.OtherS, t.WallS, t.DeviceS, t.BusyPct, t.IdleS)
}

// runSummary is the last line of a run: how busy the device was and how
// many candidates each entry measured ("" when nothing was tuned).
func runSummary(sum *tuner.SessionSummary) string {
	lo, med, hi, ok := sum.MeasuredPerEntry()
	if !ok {
		return ""
	}
	cache := ""
	if compiled, cached := sum.Compiles(); compiled+cached > 0 {
		cache = fmt.Sprintf("; kernels compiled %d, from the compile cache %d", compiled, cached)
	}
	if waited, pool := compileTimes(sum); pool > 0 {
		cache += fmt.Sprintf("; waited for builds %.1fs, the compile pool busy %.1fs", waited, pool)
	}
	return fmt.Sprintf("device busy %.0f %% of the run; candidates measured per entry: min %d, median %g, max %d (%s)%s",
		sum.BusyPct(), lo, med, hi, plural(len(sum.Results), "entry", "entries"), cache)
}

// compileTimes are a run's wait for builds and its compile pool's time,
// summed over its entries (pool 0: the backend does not say).
func compileTimes(sum *tuner.SessionSummary) (waited, pool float64) {
	for _, r := range sum.Results {
		if r.Time != nil {
			waited += r.Time.CompileS
		}
		pool += r.BuildS
	}
	return waited, pool
}

// fmtSeconds prints a short duration in the unit that reads best.
func fmtSeconds(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

func stoppedNote(s string) string {
	if s == "" {
		return ""
	}
	return ", " + s
}

// describe is the one-line summary of an entry.
func describe(e *paramfile.Entry) string {
	s := fmt.Sprintf("%s  %.2f µs", search.Candidate(e.Params).Key(), e.MedianUS)
	if e.Default != nil && e.Default.MedianUS > 0 {
		s += fmt.Sprintf("  default %.2f µs (%.2fx)", e.Default.MedianUS, e.Default.MedianUS/e.MedianUS)
	}
	if e.Baseline != nil && e.Baseline.MedianUS > 0 {
		s += fmt.Sprintf("  %s %.2f µs (%.2fx)", e.Baseline.Name, e.Baseline.MedianUS, e.Baseline.MedianUS/e.MedianUS)
	}
	s += fmt.Sprintf("  [%d valid, %d measured, %d failed]", e.Candidates.Valid, e.Candidates.Measured, e.Candidates.Failed)
	return s
}

// checkOutFile refuses, before any work, an output path that is not a
// regular file (/dev/full, a directory: the atomic write would rename over
// it), or a file that exists but is not a valid params file (unless
// --force; a file over paramfile.MaxFileSize is not one). It reads at most
// paramfile.MaxFileSize bytes.
func checkOutFile(path string, force bool) error {
	if err := paramfile.CheckRegular(path); err != nil {
		return usageErrorCause(err, "--out %s: %v; name a file", path, err)
	}
	_, err := paramfile.ReadFile(path)
	var perr *paramfile.PathError
	switch {
	case errors.Is(err, os.ErrNotExist):
	case errors.As(err, &perr):
		if !force {
			return usageErrorf("--out %s: %w; %w", path, paramfile.ErrUnparsable, perr)
		}
	case err != nil:
		return usageErrorf("--out %s: %w", path, err)
	}
	return nil
}

// decisionCounts summarises what a run did to the file.
func decisionCounts(sum *tuner.SessionSummary) string {
	added, replaced, kept := sum.Count(tuner.KeepAdded), sum.Count(tuner.KeepReplaced), sum.Count(tuner.KeepKept)
	s := "wrote " + plural(added+replaced, "entry", "entries")
	if replaced > 0 {
		s += fmt.Sprintf(" (%d replaced)", replaced)
	}
	if kept > 0 {
		s += fmt.Sprintf("; kept %s already there", plural(kept, "better entry", "better entries"))
	}
	return s
}

// tunedJSON is what tune --json prints: the entries this run tuned, and
// for each whether it was written.
type tunedJSON struct {
	Device  string       `json:"device"`
	Out     string       `json:"out"`
	Entries []tunedEntry `json:"entries"`
	// BusyPct is the device-busy share of the whole run (per cent);
	// Measured the candidates measured per entry.
	BusyPct  float64        `json:"device_busy_pct"`
	Measured *measuredStats `json:"measured_per_entry,omitempty"`
	// CompileWaitS is the run's wait for builds, CompilePoolS its compile
	// pool's time (where the backend says: device.BuildTimer).
	CompileWaitS float64 `json:"compile_wait_s,omitempty"`
	CompilePoolS float64 `json:"compile_pool_s,omitempty"`
}

type measuredStats struct {
	Min    int     `json:"min"`
	Median float64 `json:"median"`
	Max    int     `json:"max"`
}

type tunedEntry struct {
	Kernel  string           `json:"kernel"`
	Key     string           `json:"key"`
	Stopped string           `json:"stopped,omitempty"`
	Entry   *paramfile.Entry `json:"entry"`
	// Decision says whether Entry was written to Out (added, replaced) or
	// the better entry already there was kept, and why.
	Decision *tuner.KeepDecision `json:"decision,omitempty"`
}

func printTuneJSON(w io.Writer, device, out string, sum *tuner.SessionSummary) error {
	tj := tunedJSON{Device: device, Out: out, Entries: []tunedEntry{}, BusyPct: round1(sum.BusyPct())}
	if lo, med, hi, ok := sum.MeasuredPerEntry(); ok {
		tj.Measured = &measuredStats{Min: lo, Median: med, Max: hi}
	}
	if waited, pool := compileTimes(sum); pool > 0 {
		tj.CompileWaitS, tj.CompilePoolS = round1(waited), round1(pool)
	}
	for i, r := range sum.Results {
		te := tunedEntry{Kernel: r.Task.Kernel.Name, Key: r.Task.Key(), Stopped: r.Stopped, Entry: r.Entry}
		if i < len(sum.Decisions) {
			te.Decision = sum.Decisions[i]
		}
		tj.Entries = append(tj.Entries, te)
	}
	return printJSON(w, tj)
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

// roundS rounds a plan's duration so that it still reads when small.
func roundS(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// nextHint says what to run after a run that tuned part of the default
// workload (some families, or shapes of one's own): a first quick run
// should say how to tune fully.
func nextHint(f *TuneOptions) string {
	if len(f.specs) > 0 || len(f.kernels) == 0 && len(f.shapes) == 0 {
		return ""
	}
	return fmt.Sprintf("next: kerntune show %s; the whole default workload (every family, every shape class): kerntune tune --budget 6m --extend (make tune)", f.out)
}

// effort is what --effort sets: the wall-time budget (unless --budget is
// given), the final re-timing's samples of the winner, default and
// baseline, and whether the drift guard re-times the default during the
// search (unless --drift-every is given).
type effort struct {
	budget                        string
	finalSamples, minFinalSamples int
	drift                         bool
	// minBeyond: candidates beyond the default each entry measures at
	// least, which planning gives time for.
	minBeyond int
	// extend: as --extend, so that a first run never refuses its budget.
	extend bool
	// finalists: Config.Finalists (0: the tuner's default).
	finalists int
	// warmSiblings: SessionConfig.WarmSiblings; lean: SessionConfig.Lean;
	// probeSamples: Config.ProbeSamples.
	warmSiblings int
	lean         bool
	probeSamples int
	// scouts: SessionConfig.Scouts (with warmSiblings).
	scouts int
	// cheapFinal: Config.CheapFinal.
	cheapFinal int
	// softMin: SessionConfig.SoftMin.
	softMin int
}

// minBeyond is the candidates beyond the default each entry measures at
// least under f's effort (the default's before resolveTune checked it).
func (f *TuneOptions) minBeyond() int {
	if e, ok := efforts[f.effort]; ok {
		return e.minBeyond
	}
	return efforts["default"].minBeyond
}

// efforts: quick is a first result in about a minute (one candidate beyond
// the default at least, each family's cheapest entry first with up to 24
// (what a second buys), whose winner the family's other entries try first
// with those of other classes, two finalists re-timed against the default, fewer final samples
// (up to five times as many where a twentieth of the share holds them), no drift guard, a lean extension, planning on one sample of each default:
// a ranking less sure where the winners are close); default
// is the measured default; thorough gives the search five times the time
// and the final timing twice the samples.
var efforts = map[string]effort{
	"quick":    {budget: "40s", finalSamples: 10, minFinalSamples: 3, minBeyond: 1, extend: true, finalists: 2, warmSiblings: 3, scouts: 24, lean: true, probeSamples: 1, cheapFinal: 5},
	"default":  {budget: "3m", finalSamples: 30, minFinalSamples: 5, minBeyond: tuner.DefaultMinBeyondDefault, drift: true, softMin: 60},
	"thorough": {budget: "15m", finalSamples: 60, minFinalSamples: 10, minBeyond: tuner.DefaultMinBeyondDefault, drift: true, softMin: 60},
}

func effortHelp() string {
	var parts []string
	for _, n := range []string{"quick", "default", "thorough"} {
		e := efforts[n]
		guard := "drift guard on"
		if !e.drift {
			guard = "drift guard off"
		}
		extra := ""
		if e.scouts > 0 {
			extra += fmt.Sprintf(", each family's cheapest entry first with up to %d candidates (a second's worth)", e.scouts)
		}
		if e.warmSiblings > 0 {
			extra += fmt.Sprintf(", the family's entries of other classes tried first (up to %d)", e.warmSiblings)
		}
		if e.finalists > 0 {
			extra += fmt.Sprintf(", %d finalists re-timed", e.finalists)
		}
		if e.softMin > 0 {
			extra += fmt.Sprintf(", on a GPU each entry up to twice its share until it measured %d", e.softMin)
		}
		final := fmt.Sprintf("%d final samples", e.finalSamples)
		if e.cheapFinal > 1 {
			final += fmt.Sprintf(" (up to %d where they are cheap)", e.cheapFinal*e.finalSamples)
		}
		parts = append(parts, fmt.Sprintf("%s (budget %s, at least %s beyond the default%s, %s, %s)", n, e.budget, plural(e.minBeyond, "candidate", "candidates"), extra, final, guard))
	}
	return strings.Join(parts, ", ")
}
