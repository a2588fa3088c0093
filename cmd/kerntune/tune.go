package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/internal/trace"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner"
)

func init() { commands = append(commands, newTuneCmd) }

type tuneFlags struct {
	backend  string
	kernels  []string
	dtype    string
	shapes   []string
	strategy string
	budget   time.Duration
	budgetS  string
	maxEvals int
	seed     uint64
	out      string
	force    bool
	verbose  bool
	quiet    bool
	specs    []string
	// Reliability (reliability.go).
	isolate     bool
	isolateSet  bool
	candTimeout time.Duration
	resume      bool
	trace       string
	asJSON      bool
}

func newTuneCmd() *cobra.Command {
	var f tuneFlags
	cmd := &cobra.Command{
		Use:   "tune",
		Short: "Tune kernels on a device and merge the winners into hardware_params.json",
		Long: `tune measures every family (or those named by --kernel) on the default
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
the entry records how many candidates it measured and why it stopped.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.isolateSet = cmd.Flags().Changed("isolate")
			return runTune(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.backend, "backend", "auto", "backend: auto, "+strings.Join(tuner.Backends(), ", ")+" (auto: metal on macOS, else cuda if a GPU is found, else cpu)")
	fl.StringArrayVar(&f.kernels, "kernel", nil, "kernel family to tune (repeatable; default all): "+strings.Join(kernels.Names(), ", "))
	fl.StringVar(&f.dtype, "dtype", "f32", "element type: f32 or f16")
	fl.StringArrayVar(&f.shapes, "shape", nil, "exact shape to tune, e.g. 1x896x4864 (repeatable; needs exactly one --kernel)")
	fl.StringVar(&f.strategy, "strategy", search.DefaultStrategy, "search strategy: "+strings.Join(search.Names, ", ")+" (warm = ils climbing from the family's entries already in --out; default: the old name of warm)")
	fl.StringVar(&f.budgetS, "budget", "3m", "budget: "+budgetHelp)
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the search strategy")
	fl.StringVar(&f.out, "out", params.DefaultFileName, "params file to merge the results into")
	fl.BoolVar(&f.force, "force", false, "replace an existing --out file that cannot be parsed")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log every candidate")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only errors")
	fl.StringArrayVar(&f.specs, "spec", nil, "kernel spec file of a user kernel to tune (repeatable; without --kernel, only the specs' kernels are tuned)")
	fl.BoolVar(&f.isolate, "isolate", false, "run candidates in a worker process that a crash or hang cannot take down (default: on for cuda, metal, opencl; off for cpu)")
	fl.DurationVar(&f.candTimeout, "candidate-timeout", 2*time.Minute, "with --isolate: limit of one build, verification or timing call of a candidate")
	fl.BoolVar(&f.resume, "resume", false, "finish an interrupted run from its journal (--out plus .journal), reusing its measurements")
	fl.StringVar(&f.trace, "trace", "", "append every measured candidate to this JSON-lines file (read by kerntune report)")
	fl.BoolVar(&f.asJSON, "json", false, "print the tuned entries as JSON on stdout")
	return cmd
}

// pickBackend resolves "auto": metal on macOS, else cuda where it opens, else cpu.
func pickBackend(name string, log io.Writer) (tuner.Backend, error) {
	if name != "auto" {
		b, err := tuner.Open(name)
		if err != nil {
			return nil, usageError{fmt.Errorf("--backend %s: %w", name, err)}
		}
		return b, nil
	}
	var order []string
	if runtime.GOOS == "darwin" {
		order = append(order, "metal")
	}
	order = append(order, "cuda", "cpu")
	for _, n := range order {
		b, err := tuner.Open(n)
		if err == nil {
			return b, nil
		}
		if !strings.Contains(err.Error(), "unknown backend") {
			fmt.Fprintf(log, "backend %s not used: %v\n", n, err)
		}
	}
	return nil, usageErrorf("no backend could be opened")
}

func runTune(cmd *cobra.Command, f tuneFlags) error {
	dt, err := kernels.ParseDType(f.dtype)
	if err != nil {
		return usageErrorf("--dtype: %v", err)
	}
	if f.budget, f.maxEvals, err = parseBudget(f.budgetS); err != nil {
		return err
	}
	if _, err := search.New(f.strategy, []search.Candidate{{}}, search.Options{}); err != nil {
		return usageErrorf("--strategy: %v", err)
	}
	specs, err := loadSpecs(f.specs)
	if err != nil {
		return err
	}
	if len(specs) > 0 && len(f.kernels) == 0 {
		for _, c := range specs {
			f.kernels = append(f.kernels, c.Kernel.Name)
		}
	}
	ks := kernels.All()
	if len(f.kernels) > 0 {
		ks = nil
		for _, name := range f.kernels {
			k, err := kernels.Get(name)
			if err != nil {
				return usageErrorf("--kernel: %v", err)
			}
			ks = append(ks, k)
		}
	}
	if len(f.shapes) > 0 && len(ks) != 1 {
		return usageErrorf("--shape needs exactly one --kernel (shapes differ between families)")
	}
	if err := checkOutFile(f.out, f.force); err != nil {
		return err
	}
	if err := checkOutDir(f.out); err != nil {
		return err
	}
	if err := validateReliabilityFlags(f); err != nil {
		return err
	}

	log := cmd.ErrOrStderr()
	if f.quiet {
		log = io.Discard
	}
	var tasks []tuner.Task
	for _, s := range f.shapes {
		shape, err := params.ParseShape(s)
		if err != nil {
			return usageErrorf("--shape: %v", err)
		}
		if _, err := ks[0].Classify(shape); err != nil {
			return usageErrorf("--shape %s: %v", s, err)
		}
		tasks = append(tasks, tuner.Task{Kernel: ks[0], DType: dt, Cases: []kernels.Case{{Shape: shape}}})
	}
	if len(f.shapes) == 0 {
		for _, k := range ks {
			ts, err := tuner.ClassTasks(k, dt)
			if err != nil {
				return err
			}
			tasks = append(tasks, ts...)
		}
	}

	sort.SliceStable(tasks, func(i, j int) bool { return tasks[i].Cost() < tasks[j].Cost() })
	b, err := pickBackend(f.backend, log)
	if err != nil {
		return err
	}
	if b, err = isolateBackend(b, f, log); err != nil {
		return err
	}
	defer b.Close()
	info := b.Info()
	if len(specs) > 0 && params.SpaceKind(info.Backend) != "gpu" {
		return usageErrorf("--spec: spec kernels are GPU code and the %s backend cannot run them; use --backend cuda or metal", info.Backend)
	}
	ui := newProgressUI(cmd.ErrOrStderr(), f.quiet, len(tasks), f.budget)
	defer ui.close()
	log = ui
	fmt.Fprintf(log, "device %s (%s, %d compute units); %d entries to tune in %s with %s\n",
		info.Key, info.Backend, info.ComputeUnits, len(tasks), f.budgetS, f.strategy)

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jr, err := openJournal(f, cancel)
	if err != nil {
		return err
	}
	completed := false
	defer func() { jr.Close(completed) }()
	cfg := tuner.Config{Strategy: f.strategy, Seed: f.seed, Log: log, Verbose: f.verbose, Journal: jr, MaxEvals: f.maxEvals, Progress: ui.event}
	tu := tuner.New(b, cfg)
	deadline := time.Now().Add(f.budget)
	var results []*tuner.Result
	failed := 0
	for i, task := range tasks {
		if ctx.Err() != nil {
			fmt.Fprintln(log, "interrupted: stopping; finished entries are saved")
			break
		}
		if jr.Done(info.Key, task.Kernel.Name, task.Key()) {
			fmt.Fprintf(log, "%-10s %-22s done before the interruption (in %s)\n", task.Kernel.Name, task.Key(), f.out)
			continue
		}
		// Each task gets an equal share of what is left; time a task does not use goes to the next.
		share := time.Until(deadline) / time.Duration(len(tasks)-i)
		start := time.Now()
		if search.Canonical(f.strategy) == "warm" {
			cfg.WarmStart = warmStartFor(f.out, info, task)
			tu = tuner.New(b, cfg)
		}
		ui.begin(task, share)
		res, err := tu.Run(ctx, task, share)
		ui.end()
		if f.trace != "" && res != nil {
			if terr := trace.Append(f.trace, traceRecords(info.Key, res)); terr != nil {
				return terr
			}
		}
		if jerr := jr.journalErr(); jerr != nil {
			return jerr
		}
		if err != nil {
			if ctx.Err() == nil {
				jr.MarkDone(info.Key, task.Kernel.Name, task.Key(), err.Error())
			}
			failed++
			fmt.Fprintf(log, "%-10s %-22s FAILED: %v\n", task.Kernel.Name, task.Key(), err)
			continue
		}
		results = append(results, res)
		fmt.Fprintf(log, "%-10s %-22s %s (%.1fs%s)\n", task.Kernel.Name, task.Key(), describe(res.Entry), time.Since(start).Seconds(), stoppedNote(res.Stopped))
		if err := writeResults(f.out, f.force, info, []*tuner.Result{res}); err != nil {
			return usageErrorf("--out %s: %v (the file was not changed; the journal keeps the measurements: fix this and run again with --resume)", f.out, err)
		}
		if res.Stopped != "interrupted" {
			jr.MarkDone(info.Key, task.Kernel.Name, task.Key(), "")
		}
	}
	if jerr := jr.journalErr(); jerr != nil {
		return jerr
	}
	if ctx.Err() == nil {
		completed = true
	} else {
		fmt.Fprintf(log, "the journal %s keeps this run's measurements: finish it with the same command and --resume\n", jr.Path())
	}
	ui.close()
	if f.asJSON {
		if err := printTuneJSON(cmd.OutOrStdout(), info.Key, f.out, results); err != nil {
			return err
		}
	} else if len(results) > 0 && !f.quiet {
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %d entries for %s to %s\n", len(results), info.Key, f.out)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d entries could not be tuned", failed, len(tasks))
	}
	if len(results) == 0 {
		return errors.New("nothing was tuned")
	}
	return nil
}

func stoppedNote(s string) string {
	if s == "" {
		return ""
	}
	return ", " + s
}

// describe is the one-line summary of an entry.
func describe(e *params.Entry) string {
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

// checkOutFile refuses, before any work, an output file that exists but is
// not a valid params file (unless --force), or a directory that cannot be written.
func checkOutFile(path string, force bool) error {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return usageErrorf("--out %s: %v", path, err)
	default:
		if _, perr := params.Parse(data); perr != nil && !force {
			return usageErrorf("--out %s: %v; %v", path, params.ErrUnparsable, perr)
		}
	}
	return nil
}

// writeResults merges results into the params file.
func writeResults(path string, force bool, info tuner.DeviceInfo, results []*tuner.Result) error {
	dev := &params.Device{
		Backend: info.Backend, Name: info.Name, Family: info.Family,
		ComputeUnits: info.ComputeUnits, TunedAt: time.Now().UTC().Format(time.RFC3339),
		Facts: info.Facts, Kernels: map[string]map[string]*params.Entry{},
	}
	for _, r := range results {
		fam := r.Task.Kernel.Name
		if dev.Kernels[fam] == nil {
			dev.Kernels[fam] = map[string]*params.Entry{}
		}
		dev.Kernels[fam][r.Task.Key()] = r.Entry
	}
	upd := &params.File{SchemaVersion: params.SchemaVersion, Generator: "kerntune " + version(), Devices: map[string]*params.Device{info.Key: dev}}
	if err := params.MergeIntoFile(path, upd, force); err != nil {
		if errors.Is(err, params.ErrUnparsable) {
			return usageError{err}
		}
		return err
	}
	return nil
}
