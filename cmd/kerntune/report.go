package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/internal/trace"
	"github.com/kerntune/kerntune/report"
)

func init() {
	commands = append(commands, func(f *Factory) *cobra.Command { return NewCmdReport(f, nil) })
}

// ReportOptions are what report is asked to do: its flags and its streams.
type ReportOptions struct {
	IO                     IOStreams
	File                   string // FILE, or the default params file
	out, tracePath, format string
	asJSON                 bool
}

// reportHelp is report's usage line, summary and help.
var reportHelp = cmdHelp{
	use:   "report [FILE] [--out DIR]",
	short: "Write a Markdown report with plots for every device of a params file",
	long: `report writes DIR/report.md and its plots (DIR/plots) for every device of the
params file: per family and class the winner, the default, the baseline, the
speedups, the % of the roofline floor, and a chart of the speedups. With a
trace (tune --trace FILE, or FILE.trace.jsonl / FILE.journal found next to the
params file) each entry also gets the time of every measured candidate, sorted,
and the effect of each parameter (best and all times per value).`,
}

// NewCmdReport builds the report command; runF, when not nil, runs instead of runReport.
func NewCmdReport(fac *Factory, runF func(*ReportOptions) error) *cobra.Command {
	f := &ReportOptions{IO: fac.IO}
	cmd := newCmd(reportHelp, f, runF, runReport, func(_ *cobra.Command, args []string) { f.File = paramsFileArg(args) })
	cmd.Args = atMostArgs("the params file")
	fl := cmd.Flags()
	fl.StringVar(&f.out, "out", "report", "directory to write report.md and plots/ into")
	fl.StringVar(&f.tracePath, "trace", "", "trace file (JSON lines, see tune --trace); default FILE.trace.jsonl or FILE.journal when present")
	fl.StringVar(&f.format, "format", "svg", "plot format: svg or png")
	fl.BoolVar(&f.asJSON, "json", false, "print the report's table as JSON on stdout")
	return cmd
}

func runReport(f *ReportOptions) error {
	path := f.File
	if f.format != "svg" && f.format != "png" {
		return usageErrorf("--format %q: allowed are svg and png", f.format)
	}
	pf, err := readParamsFile(path)
	if err != nil {
		return err
	}
	if err := checkReportDir(f.out); err != nil {
		return err
	}
	var recs []trace.Record
	tracePath := f.tracePath
	if tracePath != "" {
		if recs, err = readTrace(tracePath); err != nil {
			return err
		}
	} else {
		for _, cand := range []string{path + ".trace.jsonl", path + ".journal"} {
			if r, err := trace.ReadFile(cand); err == nil && len(r) > 0 {
				recs, tracePath = r, cand
				break
			} else if err != nil && !errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(f.IO.ErrOut, "report: ignoring %v\n", err)
			}
		}
	}
	var entries []trace.Entry
	if len(recs) > 0 {
		// The entry lines tie each entry of the file to the run that
		// produced it; the records were read, so these read too.
		entries, _ = trace.ReadFileEntries(tracePath)
	}
	rows, err := report.Write(pf, recs, report.Options{Dir: f.out, Format: f.format, Source: path, Trace: tracePath, Entries: entries})
	var pe *fs.PathError
	if errors.As(err, &pe) {
		// Writing into --out failed (a full disk, a file in the way).
		return usageErrorCause(err, "--out %s: %v", f.out, err)
	}
	if err != nil {
		return err
	}
	if f.asJSON {
		return printJSON(f.IO.Out, rows)
	}
	fmt.Fprintf(f.IO.Out, "wrote %s (%s, %s)\n", filepath.Join(f.out, "report.md"), plural(len(pf.Devices), "device", "devices"), plural(len(rows), "entry", "entries"))
	return nil
}

// checkReportDir refuses, before any work, a report --out that is not a
// directory or cannot be created or written: a usage error (exit 2).
func checkReportDir(dir string) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return usageErrorf("--out %s: not a directory (report writes DIR/report.md and DIR/plots/)", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return usageErrorCause(err, "--out %s: cannot create the directory: %v", dir, err)
	}
	probe, err := os.CreateTemp(dir, ".report.probe-*")
	if err != nil {
		return usageErrorCause(err, "--out %s: the directory is not writable: %v", dir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}
