package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/report"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner"
)

func init() {
	commands = append(commands, func(f *Factory) *cobra.Command { return NewCmdBench(f, nil) })
}

type benchRow struct {
	Kernel  string         `json:"kernel"`
	DType   string         `json:"dtype"`
	Shape   string         `json:"shape"`
	Params  map[string]int `json:"params"`
	Source  string         `json:"source"`
	TunedUS float64        `json:"tuned_us"`
	IQRUS   float64        `json:"iqr_us"`
	// FileUS is the median the params file records for these parameters
	// on this shape (shape_median_us of the entry they came from), when
	// they all came from one entry of this device that timed this shape:
	// tune and bench time the same way, so the two agree within noise.
	FileUS   float64 `json:"file_us,omitempty"`
	Baseline string  `json:"baseline,omitempty"`
	BaseUS   float64 `json:"baseline_us,omitempty"`
	// Speedup is baseline / tuned time (above 1: the tuned kernel is
	// faster), the direction show and report use; Ratio is its inverse,
	// tuned / baseline, kept for readers of the older JSON. Both are
	// rounded once, to three decimals, from the medians.
	Speedup    float64 `json:"speedup,omitempty"`
	Ratio      float64 `json:"ratio,omitempty"`
	PctOfFloor float64 `json:"pct_of_floor,omitempty"`
	GBPS       float64 `json:"gbps"`
	GFLOPS     float64 `json:"gflops"`
	// With --against: the other file's parameters for the shape, where
	// they came from, their time in the same rounds, and Ratio of the
	// times, this file's / the other's (at most 1.1: within 10 %; the
	// same parameters are the same kernel, 1).
	AgainstParams map[string]int `json:"against_params,omitempty"`
	AgainstSource string         `json:"against_source,omitempty"`
	AgainstUS     float64        `json:"against_us,omitempty"`
	AgainstRatio  float64        `json:"against_ratio,omitempty"`
	Error         string         `json:"error,omitempty"`
}

// withinAgainst is the ratio to the --against file's time up to which a
// shape counts as as fast as it.
const withinAgainst = 1.10

// BenchOptions are what bench is asked to do: its flags and its streams.
type BenchOptions struct {
	IO                   IOStreams
	ctx                  context.Context // the command's; runBench also stops on SIGINT
	backend, dtype, file string
	against              string // --against: a second params file
	kernelNames, shapes  []string
	samples              int
	asJSON, quiet        bool
	jsonOut              string
	backendOpts          backendOptions
	fac                  *Factory // opens the backend
}

// benchHelp is bench's usage line, summary and help.
var benchHelp = cmdHelp{
	use:   "bench",
	short: "Time the tuned parameters (from the params file) against the backend's baseline",
	long: `bench resolves each kernel's parameters for this device from the params file
exactly as an application would (env > exact shape > class > fallback > default),
verifies them, and times them and the baseline (cuBLAS, gonum) interleaved on
the default workload or the --shape list. SPEEDUP is baseline/tuned time (above
1: the tuned kernel is faster), as in show and report.

With --against OTHER.json, the parameters OTHER.json resolves to for each
shape are verified and timed in the same rounds too, and each row gets their
time and the ratio of this file's time to theirs; the last line counts the
shapes within 10 % (two files tuned with different efforts, or on different
days, compared under the same load).`,
}

// NewCmdBench builds the bench command; runF, when not nil, runs instead of runBench.
func NewCmdBench(f *Factory, runF func(*BenchOptions) error) *cobra.Command {
	o := &BenchOptions{IO: f.IO, fac: f}
	cmd := newCmd(benchHelp, o, runF, runBench, func(c *cobra.Command, _ []string) { o.ctx = c.Context() })
	fl := cmd.Flags()
	addBackendFlag(cmd, &o.backend, "")
	fl.StringArrayVar(&o.kernelNames, "kernel", nil, "kernel family (repeatable; default all)")
	fl.StringVar(&o.dtype, "dtype", "f32", "element type: "+strings.Join(dtypeNames(), ", "))
	fl.StringArrayVar(&o.shapes, "shape", nil, "shape to time (repeatable; needs one --kernel); default the workload")
	fl.StringVar(&o.file, "params", "", "params file (default $KERNTUNE_PARAMS, then ./hardware_params.json)")
	fl.StringVar(&o.against, "against", "", "a second params file whose parameters for each shape are timed in the same rounds (the ratio and a count within 10 %)")
	fl.IntVar(&o.samples, "samples", 50, "timed samples of each kernel")
	fl.BoolVar(&o.asJSON, "json", false, "print JSON")
	fl.StringVar(&o.jsonOut, "json-out", "", "also write the results as JSON to this file")
	fl.BoolVarP(&o.quiet, "quiet", "q", false, "no progress lines")
	addBackendFlags(cmd, &o.backendOpts)
	return cmd
}

// maxSamples bounds bench --samples: each sample is kept in memory and
// timed, and beyond this a median moves by less than its noise.
const maxSamples = 100000

func runBench(o *BenchOptions) error {
	dts, err := parseDTypes(o.dtype)
	if err != nil {
		return err
	}
	dt := dts[0]
	if err := countFlag("samples", o.samples, 1, maxSamples, ""); err != nil {
		return err
	}
	ks, err := parseKernels(o.kernelNames)
	if err != nil {
		return err
	}
	custom, err := parseShapes(ks, o.shapes)
	if err != nil {
		return err
	}
	if o.jsonOut != "" {
		if err := checkOutputFile("--json-out", o.jsonOut); err != nil {
			return err
		}
	}
	log := o.IO.ErrOut
	if o.quiet {
		log = io.Discard
	}
	b, err := o.fac.OpenBackend(backendRequest{Name: o.backend, Opts: o.backendOpts, Log: log})
	if err != nil {
		return err
	}
	defer b.Close()
	info := b.Info()
	l, err := params.Open(params.Options{Path: o.file, Device: info.Key, Backend: info.Backend, DeviceFamily: info.Family})
	if err != nil {
		return usageError{err}
	}
	var other *params.Loader
	if o.against != "" {
		other, err = params.Open(params.Options{Path: o.against, Device: info.Key, Backend: info.Backend, DeviceFamily: info.Family})
		if err != nil {
			return usageError{fmt.Errorf("--against: %w", err)}
		}
		if !other.FileFound() {
			return usageError{fmt.Errorf("--against %s: no such file", o.against)}
		}
	}
	ctx, stop := signal.NotifyContext(o.ctx, os.Interrupt)
	defer stop()
	tu := tuner.New(b, tuner.Config{Log: log})
	var pf *paramfile.File
	if l.FileFound() {
		pf, _ = paramfile.ReadFile(l.Path()) // Open read it already
	}
	var rows []benchRow
	for _, k := range ks {
		cases := custom
		if cases == nil {
			cases = k.Workload
		}
		for _, c := range cases {
			if ctx.Err() != nil {
				break
			}
			row := benchRow{Kernel: k.Name, DType: string(dt), Shape: c.String()}
			r, err := l.Resolve(k.Name, string(dt), c.Shape)
			if err != nil {
				return usageError{err}
			}
			row.Params = r.Ints()
			row.Source = sourceSummary(r)
			row.FileUS = pf.SourceMedianUS(row.Source, c.Shape)
			var res *tuner.BenchResult
			if other != nil {
				ro, err := other.Resolve(k.Name, string(dt), c.Shape)
				if err != nil {
					return usageError{fmt.Errorf("--against: %w", err)}
				}
				row.AgainstParams, row.AgainstSource = ro.Ints(), sourceSummary(ro)
				res, err = tu.BenchAgainst(ctx, k, dt, c, search.Candidate(row.Params), search.Candidate(row.AgainstParams), o.samples)
			} else {
				res, err = tu.Bench(ctx, k, dt, c, search.Candidate(row.Params), o.samples)
			}
			if err != nil {
				row.Error = err.Error()
			} else {
				if other != nil {
					row.AgainstUS, row.AgainstRatio = res.AgainstUS, round3(res.MedianUS/res.AgainstUS)
				}
				row.TunedUS, row.IQRUS, row.Baseline, row.BaseUS = res.MedianUS, res.IQRUS, res.Baseline, res.BaseUS
				row.Speedup = round3(report.Speedup(res.BaseUS, res.MedianUS))
				row.Ratio = round3(report.Speedup(res.MedianUS, res.BaseUS))
				row.PctOfFloor, row.GBPS, row.GFLOPS = res.Roofline.PctOfFloor, res.Roofline.GBPS, res.Roofline.GFLOPS
			}
			fmt.Fprintf(log, "%s %s %s: %s\n", k.Name, dt, c, benchLine(row))
			rows = append(rows, row)
		}
	}
	out := o.IO.Out
	doc := map[string]any{"device": info.Key, "backend": info.Backend, "facts": info.Facts, "rows": rows}
	if o.jsonOut != "" {
		data, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return err
		}
		if err := writeOutput("--json-out", o.jsonOut, append(data, '\n')); err != nil {
			return err
		}
	}
	if o.asJSON {
		return printJSON(out, doc)
	}
	printBenchTable(out, info.Key, info.Backend, rows)
	if other != nil {
		printAgainst(out, o.against, rows)
	}
	return nil
}

// printAgainst prints, for bench --against, each shape's time with both
// files' parameters and their ratio, and the count within 10 %.
func printAgainst(out io.Writer, against string, rows []benchRow) {
	fmt.Fprintf(out, "\nagainst %s (timed in the same rounds)\n", against)
	tw := newTable(out)
	fmt.Fprintln(tw, "FAMILY\tDTYPE\tSHAPE\tTHIS µs\tAGAINST µs\tRATIO (this/against)\tAGAINST PARAMS")
	within, n := 0, 0
	for _, r := range rows {
		if r.Error != "" {
			continue
		}
		n++
		note := ""
		if r.AgainstRatio <= withinAgainst {
			within++
		}
		if search.Candidate(r.AgainstParams).Key() == search.Candidate(r.Params).Key() {
			note = " (the same parameters)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%.2f\t%.2f%s\t%s\n", r.Kernel, r.DType, r.Shape, r.TunedUS, r.AgainstUS, r.AgainstRatio, note, search.Candidate(r.AgainstParams).Key())
	}
	tw.Flush()
	fmt.Fprintf(out, "%d of %d shapes within %.0f %% of %s's time\n", within, n, 100*(withinAgainst-1), against)
}

// printBenchTable prints bench's rows as a table with its notes.
func printBenchTable(out io.Writer, device, backend string, rows []benchRow) {
	fmt.Fprintf(out, "device %s (%s)\n", device, backend)
	tw := newTable(out)
	beaten := false
	fmt.Fprintln(tw, "FAMILY\tDTYPE\tSHAPE\tPARAMS\tTUNED µs\tFILE µs\tBASELINE µs\tSPEEDUP (baseline/tuned)\t% OF FLOOR\tGB/s\tGFLOP/s")
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\tFAILED: %s\n", r.Kernel, r.DType, r.Shape, search.Candidate(r.Params).Key(), r.Error)
			continue
		}
		base := "-"
		if r.BaseUS > 0 {
			base = fmt.Sprintf("%s %.2f", r.Baseline, r.BaseUS)
		}
		floor, b := report.FloorCell(r.PctOfFloor)
		beaten = beaten || b
		file := "-"
		if r.FileUS > 0 {
			file = fmt.Sprintf("%.2f", r.FileUS)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%.0f\t%.0f\n", r.Kernel, r.DType, r.Shape,
			search.Candidate(r.Params).Key(), r.TunedUS, file, base, report.SpeedupCell(r.BaseUS, r.TunedUS), floor, r.GBPS, r.GFLOPS)
	}
	tw.Flush()
	fmt.Fprintln(out, "SPEEDUP = baseline time / tuned time (above 1: the tuned kernel is faster); % OF FLOOR = bandwidth or compute floor / tuned time")
	fmt.Fprintln(out, "(the compute floor from the peak of the units the kernel runs on: the matrix units' for MMA=1);")
	fmt.Fprintln(out, "FILE = the time the params file records for these parameters on this shape (what show reports)")
	if beaten {
		fmt.Fprintln(out, report.FloorNote)
	}
}

// sourceSummary names where the parameters came from, e.g. "file:…/f32/tiny".
func sourceSummary(r *params.Resolved) string {
	seen := map[string]bool{}
	var out []string
	for _, n := range r.Names() {
		if s := r.Params[n].Source; !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return strings.Join(out, "; ")
}

// round3 rounds to three decimals, the precision of bench's JSON figures.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func benchLine(r benchRow) string {
	if r.Error != "" {
		return "FAILED: " + r.Error
	}
	s := fmt.Sprintf("%.2f µs", r.TunedUS)
	if r.BaseUS > 0 {
		s += fmt.Sprintf(", %s %.2f µs (speedup %s)", r.Baseline, r.BaseUS, report.SpeedupCell(r.BaseUS, r.TunedUS))
	}
	return s
}
