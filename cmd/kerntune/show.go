package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/report"
	"github.com/kerntune/kerntune/search"
)

func init() {
	commands = append(commands, func(f *Factory) *cobra.Command { return NewCmdShow(f, nil) })
}

// plural is "1 entry", "2 entries": the one spelling of counts in every
// command's output.
var plural = report.Plural

// ShowOptions are what show is asked to do.
type ShowOptions struct {
	IO   IOStreams
	File string // FILE, resolved as showFileArg resolves it
	JSON bool   // --json
}

// NewCmdShow builds the show command; runF, when not nil, runs instead of runShow.
func NewCmdShow(f *Factory, runF func(*ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "show [FILE]",
		Short: "Print a params file as a table per device, kernel and entry",
		Long: `show prints a params file as a table per device, kernel and entry. FILE
defaults to $KERNTUNE_PARAMS, else ./hardware_params.json, the file get, bench
and applications read.`,
		Args: atMostArgs("the params file"),
		RunE: func(_ *cobra.Command, args []string) error {
			opts.File = showFileArg(args)
			return runOr(opts, runF, runShow)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the parsed file as JSON")
	return cmd
}

func runShow(opts *ShowOptions) error {
	f, err := readParamsFile(opts.File)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO.Out, f)
	}
	printFile(opts.IO.Out, f)
	return nil
}

// showFileArg is the file show prints: FILE, else $KERNTUNE_PARAMS, else
// ./hardware_params.json, as the loader finds it.
func showFileArg(args []string) string {
	if len(args) == 0 {
		if v := os.Getenv(params.DefaultEnvPrefix + "_PARAMS"); v != "" {
			return v
		}
	}
	return paramsFileArg(args)
}

func printFile(out io.Writer, f *paramfile.File) {
	devKeys := make([]string, 0, len(f.Devices))
	for k := range f.Devices {
		devKeys = append(devKeys, k)
	}
	sort.Strings(devKeys)
	for _, dk := range devKeys {
		d := f.Devices[dk]
		fmt.Fprintf(out, "%s  (%s, family %s, %s, tuned %s)\n", dk, d.Backend, d.Family, plural(d.ComputeUnits, "compute unit", "compute units"), orDash(d.TunedAt))
		if bw := d.Facts["bandwidth_gbps"]; bw > 0 {
			fmt.Fprintf(out, "  copy bandwidth %.1f GB/s\n", bw)
		}
		tw := newTable(out)
		fmt.Fprintln(tw, "  KERNEL\tENTRY\tPARAMS\tMEDIAN µs\tIQR µs\tDEFAULT µs\tSPEEDUP (default/tuned)\tBASELINE\tSPEEDUP (baseline/tuned)\tUSE\tCANDIDATES\tBUSY\tNOTE")
		fams := make([]string, 0, len(d.Kernels))
		for k := range d.Kernels {
			fams = append(fams, k)
		}
		sort.Strings(fams)
		for _, fam := range fams {
			keys := make([]string, 0, len(d.Kernels[fam]))
			for k := range d.Kernels[fam] {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, ek := range keys {
				e := d.Kernels[fam][ek]
				def, defT := "-", 0.0
				if e.Default != nil && e.Default.MedianUS > 0 {
					defT = e.Default.MedianUS
					def = fmt.Sprintf("%.2f", defT)
				}
				base, baseT := "-", 0.0
				if e.Baseline != nil && e.Baseline.MedianUS > 0 {
					baseT = e.Baseline.MedianUS
					base = fmt.Sprintf("%s %.2f", e.Baseline.Name, baseT)
				}
				med, iqr := "-", "-"
				if e.MedianUS > 0 { // absent: an entry with parameters and no measurement
					med, iqr = fmt.Sprintf("%.2f", e.MedianUS), fmt.Sprintf("%.2f", e.IQRUS)
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d/%d\t%s\t%s\n", fam, ek, orDash(search.Candidate(e.Params).Key()),
					med, iqr, def, report.SpeedupCell(defT, e.MedianUS), base, report.SpeedupCell(baseT, e.MedianUS), showUse(e),
					e.Candidates.Measured, e.Candidates.Valid, e.Candidates.Failed, busyCell(e.Time), entryNote(e))
			}
		}
		tw.Flush()
		fmt.Fprintln(out, "  (SPEEDUP = reference time / tuned time: above 1 the tuned kernel is faster; USE baseline: the baseline beat the winner beyond noise,")
		fmt.Fprintln(out, "   call it; CANDIDATES = measured/valid/failed; BUSY: share of the entry's tuning time the device ran its kernels;")
		fmt.Fprintln(out, "   \"; tuned at SHAPE\" after USE: that shape's own times route it otherwise than the class (shape_use);")
		fmt.Fprintln(out, "   PARTIAL: the run was interrupted before its search finished;")
		fmt.Fprintln(out, "   MEDIAN of a class entry is the sum over its shapes; kerntune bench times each shape (FILE: this file's time))")
		fmt.Fprintln(out)
	}
}

// showUse is an entry's USE cell: its use, and the shapes that shape_use
// routes otherwise ("baseline; tuned at 4x896x896x16").
func showUse(e *paramfile.Entry) string {
	cell := orDash(e.Use)
	for i, u := range e.ShapeUse {
		if u != e.Use && i < len(e.Shapes) {
			cell += fmt.Sprintf("; %s at %s", u, families.ShapeString(e.Shapes[i]))
		}
	}
	return cell
}

// busyCell is an entry's device-busy share, or "-" when not recorded.
func busyCell(t *paramfile.TuneTime) string {
	if t == nil || t.WallS <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", t.BusyPct)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// entryNote marks a partial entry (see paramfile.Partial), a choice the no-harm rule
// changed, and drift the tuner's guard found.
func entryNote(e *paramfile.Entry) string {
	var notes []string
	if paramfile.Partial(e) {
		notes = append(notes, "PARTIAL (stopped: interrupted)")
	}
	if e.NoHarm != "" {
		notes = append(notes, "no-harm rule applied (show --json: no_harm)")
	}
	if d := e.Drift; d != nil && d.Events > 0 {
		notes = append(notes, fmt.Sprintf("drift: %s, up to %.0f%%, %s measured again", plural(d.Events, "event", "events"), d.MaxPct, plural(d.Remeasured, "candidate", "candidates")))
	}
	return strings.Join(notes, "; ")
}
