package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/search/ktcache"
	"github.com/kerntune/kerntune/search/replay"
)

func init() {
	commands = append(commands, func(f *Factory) *cobra.Command { return NewCmdReplay(f, nil) })
}

// ReplayOptions are what replay is asked to do: its flags and its streams.
type ReplayOptions struct {
	IO         IOStreams
	caches     []string
	strategies []string
	budgets    string
	budgetTime time.Duration
	runs       int
	seed       uint64
	json       bool
	markdown   bool
	noRace     bool
	warm       []string
	def        string
	batch      int
}

// replayHelp is replay's usage line, summary and help.
var replayHelp = cmdHelp{
	use:   "replay",
	short: "Run search strategies against recorded Kernel Tuner caches",
	long: `replay runs a search strategy against a Kernel Tuner cache file (.json or
.json.gz; the classic cache format or T4 results) instead of a device. The
space is the set of configurations in the cache; one evaluation is one
distinct configuration measured (built once, then sampled any number of
times; a configuration recorded as failed counts as an evaluation that
fails). Measuring draws samples, seeded and with replacement, from the
recorded raw times; the simulated measurement time is the sum of the samples
drawn plus the recorded compile time of each configuration evaluated.

Each run is the search kerntune tune makes: the default configuration is
measured first (it always competes), then the --warm starts and the
strategy. Caches do not record the kernel's default: --default first (the
default) takes every parameter's first value (the first listed in
tune_params, the smallest for T4 results), --default none measures none,
as Kernel Tuner's simulation mode, and NAME=value,... names one (it must be
in every cache). With --budget-time, halving sizes its first round to the
time left after the default, as tune sizes it to an entry's budget.

For each budget it prints the mean and worst, over --runs seeded runs, of
t_opt/t_found (t_found: the recorded mean time of the configuration the
strategy picks; 0 when it picks none) and the mean simulated time.

--cache and --strategy may be repeated (or comma lists); --markdown then
prints one table over all of them, with the mean over the caches.

Where to get caches: Kernel Tuner writes one when tune_kernel is given
cache="name.json" (the classic format), so a Kernel Tuner run of your own
kernel gives one. Kernel Tuner's repository (KernelTuner/kernel_tuner)
keeps small ones among its tests (test/test_cache_file.json,
test/test_cache_files/). The AutoTuningAssociation's benchmark_hub
repository, the data set of the autotuning methodology
(AutoTuningAssociation/autotuning_methodology), holds brute-forced spaces
of GEMM, convolution, dedispersion, hotspot and pnpoly on NVIDIA and AMD
GPUs under cachefiles/ (.json.gz in the classic format, the _T4 files in
the T4 format). replay reads .json and .json.gz files in either format; a
cache Kernel Tuner is still writing (without its closing braces) and KTT's
output are not read.`,
}

// NewCmdReplay builds the replay command; runF, when not nil, runs instead of runReplay.
func NewCmdReplay(fac *Factory, runF func(*ReplayOptions) error) *cobra.Command {
	f := &ReplayOptions{IO: fac.IO}
	cmd := newCmd(replayHelp, f, runF, runReplay, nil)
	fl := cmd.Flags()
	fl.StringSliceVar(&f.caches, "cache", nil, "Kernel Tuner cache file (repeatable)")
	fl.StringSliceVar(&f.strategies, "strategy", []string{search.DefaultStrategy}, "search strategy (repeatable): "+strings.Join(search.Names, ", ")+" (default: the old name of warm)")
	fl.StringVar(&f.budgets, "budget-evals", "100", "evaluation budgets, a comma list, e.g. 25,100,400,1600")
	fl.DurationVar(&f.budgetTime, "budget-time", 0, "also stop a run after this much simulated measurement time (e.g. 90s; 0: no limit)")
	fl.IntVar(&f.runs, "runs", 20, "seeded runs per strategy and budget")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the first run")
	fl.BoolVar(&f.json, "json", false, "print JSON")
	fl.BoolVar(&f.markdown, "markdown", false, "print a Markdown table over every cache and strategy")
	fl.BoolVar(&f.noRace, "no-race", false, "give every candidate of "+strings.Join(racedNames(), ", ")+" the maximum samples (the fixed-sample variant)")
	fl.StringVar(&f.def, "default", "first", "the configuration measured first, standing for the un-tuned kernel: first (every parameter's first value), none, or NAME=value,...")
	fl.IntVar(&f.batch, "batch", 1, "candidates the raced strategies propose at once before measuring any (tune proposes batches on backends that compile ahead; the strategy table uses 1)")
	fl.StringSliceVar(&f.warm, "warm", nil, "cache of the same kernel on a sibling device whose best configurations warm-start the warm strategy (repeatable)")
	return cmd
}

func parseBudgetEvals(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n <= 0 {
			return nil, usageErrorf("--budget-evals %q: %q is not a positive integer (want a comma list such as 25,100,400)", s, part)
		}
		out = append(out, n)
	}
	return out, nil
}

// loadCaches loads the Kernel Tuner caches a flag names.
func loadCaches(flag string, paths []string) ([]*ktcache.Cache, error) {
	caches := make([]*ktcache.Cache, len(paths))
	for i, p := range paths {
		c, err := ktcache.Load(p)
		if err != nil {
			return nil, usageErrorf("%s: %w", flag, err)
		}
		caches[i] = c
	}
	return caches, nil
}

// replayDefaults resolves --default for each cache: every parameter's
// first value ("first"; ignored by the search where the cache lacks it, as
// tune ignores a default the device cannot run), none, or a configuration
// key every cache must hold.
func replayDefaults(s string, caches []*ktcache.Cache) ([]search.Candidate, error) {
	out := make([]search.Candidate, len(caches))
	switch s {
	case "none":
		return out, nil
	case "first":
		for i, c := range caches {
			out[i] = c.FirstValues()
		}
		return out, nil
	}
	cand, err := search.ParseKey(s)
	if err == nil && len(cand) == 0 {
		err = errors.New("empty")
	}
	if err != nil {
		return nil, usageErrorf("--default %q: want first, none or a configuration NAME=value,... (%v)", s, err)
	}
	for i, c := range caches {
		if _, ok := c.Lookup(cand); !ok {
			return nil, usageErrorf("--default %s is not a configuration of %s (want first, none or one of its configurations)", s, c.Path)
		}
		out[i] = cand
	}
	return out, nil
}

func runReplay(f *ReplayOptions) error {
	if len(f.caches) == 0 {
		return usageErrorf("--cache is required (a Kernel Tuner cache file, e.g. gemm_RTX_3090.json.gz)")
	}
	budgets, err := parseBudgetEvals(f.budgets)
	if err != nil {
		return err
	}
	if err := countFlag("runs", f.runs, 1, 10_000, ""); err != nil {
		return err
	}
	if f.budgetTime < 0 {
		return usageErrorf("--budget-time must not be negative, got %s", f.budgetTime)
	}
	if err := countFlag("batch", f.batch, 1, maxBatch, ""); err != nil {
		return err
	}
	for _, s := range f.strategies {
		if _, err := search.New(s, []search.Candidate{{}}, search.Options{}); err != nil {
			return usageErrorf("--strategy: %w", err)
		}
	}
	warmCaches, err := loadCaches("--warm", f.warm)
	if err != nil {
		return err
	}
	warm := replay.WarmStarts(warmCaches, 5)
	caches, err := loadCaches("--cache", f.caches)
	if err != nil {
		return err
	}
	defaults, err := replayDefaults(f.def, caches)
	if err != nil {
		return err
	}
	index := make(map[*ktcache.Cache]int, len(caches))
	for i, c := range caches {
		index[c] = i
	}
	reports, err := replay.RunAll(caches, f.strategies, func(c *ktcache.Cache, _ string) replay.Config {
		return replay.Config{Budgets: budgets, BudgetTime: f.budgetTime, Runs: f.runs, Seed: f.seed,
			Options: search.Options{NoRace: f.noRace, Batch: f.batch}, Default: defaults[index[c]], Warm: warm}
	})
	if err != nil {
		return err
	}
	out := f.IO.Out
	switch {
	case f.markdown:
		printReplayMarkdown(out, reports, f)
	case f.json:
		if len(caches) == 1 && len(f.strategies) == 1 {
			return printJSON(out, reports[0][0])
		}
		var all []replay.Report
		for _, rs := range reports {
			all = append(all, rs...)
		}
		return printJSON(out, all)
	default:
		for _, rs := range reports {
			for _, r := range rs {
				fmt.Fprintf(out, "%s  %s  (%s%s)\n", r.Cache, r.Strategy, plural(r.Runs, "run", "runs"), map[bool]string{true: ", no racing"}[r.NoRace])
				fmt.Fprintf(out, "  %8s  %10s  %8s  %8s  %8s  %11s  %7s  %12s  %9s\n", "evals", "mean ratio", "± s.e.", "median", "10th pct", "worst ratio", "optimum", "sim time (s)", "measured")
				for _, b := range r.Budgets {
					fmt.Fprintf(out, "  %8d  %10.4f  %8.4f  %8.4f  %8.4f  %11.4f  %6.0f%%  %12.1f  %9.1f\n", b.Evals, b.MeanRatio, b.MeanRatioSE, b.MedianRatio, b.P10Ratio, b.WorstRatio, 100*b.OptimumRate, b.SimTimeS, b.MeanEvals)
				}
			}
		}
	}
	return nil
}

// printReplayMarkdown prints, per strategy and budget, the statistics over
// caches of replay.AcrossCaches: the mean of the mean ratios and its
// standard error, the worst ratio, the mean simulated time; then the
// per-cache mean ratios.
func printReplayMarkdown(w io.Writer, reports [][]replay.Report, f *ReplayOptions) {
	fmt.Fprintf(w, "| strategy | evals | mean ratio | ± s.e. | worst ratio | mean sim. time (s) |")
	for _, rs := range reports {
		fmt.Fprintf(w, " %s |", strings.TrimSuffix(strings.TrimSuffix(filepath.Base(rs[0].Cache), ".gz"), ".json"))
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, "|---|---:|---:|---:|---:|---:|")
	for range reports {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w)
	name := func(s string) string {
		if f.noRace && search.Races(s) {
			return s + " (no racing)"
		}
		return s
	}
	for si, s := range f.strategies {
		for bi := range reports[0][si].Budgets {
			a := replay.AcrossCaches(reports, si, bi)
			fmt.Fprintf(w, "| %s | %d | %.3f | %.3f | %.3f | %.1f |", name(s), a.Evals, a.MeanRatio, a.MeanRatioSE, a.WorstRatio, a.MeanSimTimeS)
			for _, r := range a.PerCache {
				fmt.Fprintf(w, " %.3f |", r)
			}
			fmt.Fprintln(w)
		}
	}
}

// racedNames are the strategies --no-race applies to.
func racedNames() []string {
	var out []string
	for _, n := range search.Names {
		if search.Races(n) {
			out = append(out, n)
		}
	}
	return out
}
