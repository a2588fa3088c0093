package report

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/kerntune/kerntune/internal/trace"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/search"
)

// Row is one entry of the report's table (and of report --json).
type Row struct {
	Device     string         `json:"device"`
	Kernel     string         `json:"kernel"`
	Key        string         `json:"key"`
	Params     map[string]int `json:"params"`
	MedianUS   float64        `json:"median_us"`
	DefaultUS  float64        `json:"default_us,omitempty"`
	VsDefault  float64        `json:"speedup_vs_default,omitempty"`
	Baseline   string         `json:"baseline,omitempty"`
	BaselineUS float64        `json:"baseline_us,omitempty"`
	VsBaseline float64        `json:"speedup_vs_baseline,omitempty"`
	PctRoof    float64        `json:"pct_of_roofline,omitempty"`
	Measured   int            `json:"measured"`
	Valid      int            `json:"valid"`
	Failed     int            `json:"failed"`
	Traced     int            `json:"traced_candidates"`
	IsDefault  bool           `json:"winner_is_default,omitempty"`
	Use        string         `json:"use,omitempty"`     // the entry's use: baseline or tuned
	Stopped    string         `json:"stopped,omitempty"` // why its search stopped early
	Partial    bool           `json:"partial,omitempty"` // stopped: interrupted
	// Time is where the entry's tuning time went (absent in older files).
	Time  *paramfile.TuneTime `json:"time,omitempty"`
	Plots []string            `json:"plots,omitempty"`
}

// Options says where and how Write writes the report.
type Options struct {
	// Dir receives report.md and the plots (Dir/plots).
	Dir string
	// Format of the plots: svg or png.
	Format string
	// Source is the params file the report is of; Trace the trace file the
	// records come from ("" for none), for the report's header.
	Source, Trace string
	// Entries are the trace's entry lines (trace.ReadEntries): their time
	// objects tell which run produced each entry of the file, whose records
	// alone the entry's candidate plots then show.
	Entries []trace.Entry
}

// Write writes o.Dir/report.md and its plots (o.Dir/plots) for every
// device of pf: per family and class the winner, the default, the
// baseline, the speedups, the % of the roofline floor and a chart of the
// speedups; with trace records, the time of every measured candidate,
// sorted, and the effect of each parameter: of the run that produced the
// file's entry where o.Entries tell which it was, else the latest record of
// each candidate over every run. It returns the report's table.
func Write(pf *paramfile.File, recs []trace.Record, o Options) ([]Row, error) {
	if o.Format != "svg" && o.Format != "png" {
		return nil, fmt.Errorf("report: plot format %q: allowed are svg and png", o.Format)
	}
	plotDir := filepath.Join(o.Dir, "plots")
	if err := os.MkdirAll(plotDir, 0o755); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# kerntune report\n\nFrom `%s`", filepath.Base(o.Source))
	if pf.Generator != "" {
		fmt.Fprintf(&md, " (written by %s)", pf.Generator)
	}
	if o.Trace != "" {
		fmt.Fprintf(&md, "; per-candidate data from `%s` (%s)", filepath.Base(o.Trace), Plural(len(trace.Latest(recs)), "candidate", "candidates"))
	}
	md.WriteString(".\n\n")
	var rows []Row
	for _, dk := range sortedKeys(pf.Devices) {
		r, err := device(&md, dk, pf.Devices[dk], recs, o.Entries, o.Dir, o.Format)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	md.WriteString(notes)
	if err := paramfile.WriteFileAtomic(filepath.Join(o.Dir, "report.md"), []byte(md.String())); err != nil {
		return nil, err
	}
	return rows, nil
}

const notes = `## Reading this report

- **median µs**: the winner's median time per sample, summed over the entry's shapes; default and baseline were timed interleaved with it, same sample count.
- **speedup (default/tuned)**, **speedup (baseline/tuned)**: the default's or the baseline's time over the winner's: how many times faster the winner is (above 1: faster); kerntune show and bench print the same figure. The JSON (speedup_vs_default, speedup_vs_baseline) rounds it to three decimals.
- **% of roofline**: the physical floor (bytes over the measured copy bandwidth for memory-bound families, flops over the peak of the units the winner runs on otherwise: the matrix units' for MMA=1) as a share of the winner's time; 100 % would be at the floor, and a share above it is marked * (see the note under the table).
- **use**: **baseline** when the baseline was faster than the winner beyond noise in the final interleaved timing (Mann-Whitney U, p < 0.01, and at least 3 % faster in median): the application should call the baseline; tuned when it was not; - without a baseline.
- **candidates**: measured / valid / failed in the entry's search space; **partial**: the tuning run was interrupted before the entry's search finished (stopped: interrupted).
- **device busy**: the share of the entry's tuning time during which the device ran its kernels: timed samples and warm-up runs, and the runs that produced outputs for verification (each call from its start to its return). The time plot stacks the rest: waiting for compiles, comparing outputs, the search's own work, setting up the inputs and the reference, the journal.
- **(the default)**: the search kept the default; winner and default are then the same program timed twice, so a speedup over the default other than 1 shows the timing noise.
- Candidate plots show each candidate's median from the search; candidates measured in an early round of successive halving have fewer samples.
`

var slugRE = regexp.MustCompile(`[^A-Za-z0-9]+`)

func slug(s string) string {
	return strings.Trim(slugRE.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

func device(md *strings.Builder, dk string, d *paramfile.Device, recs []trace.Record, entries []trace.Entry, outDir, format string) ([]Row, error) {
	fmt.Fprintf(md, "## %s\n\n", dk)
	fmt.Fprintf(md, "Backend %s, family %s, %d compute units", d.Backend, d.Family, d.ComputeUnits)
	if d.TunedAt != "" {
		fmt.Fprintf(md, ", tuned %s", d.TunedAt)
	}
	if bw := d.Facts["bandwidth_gbps"]; bw > 0 {
		fmt.Fprintf(md, "; measured copy bandwidth %.1f GB/s", bw)
	}
	if pk := d.Facts["peak_gflops"]; pk > 0 {
		fmt.Fprintf(md, ", peak %.0f GFLOP/s", pk)
	}
	for _, u := range []struct{ fact, name string }{{"peak_mma_f16_gflops", "f16"}, {"peak_mma_tf32_gflops", "tf32"}, {"peak_mma_f32_gflops", "f32"}} {
		if pk := d.Facts[u.fact]; pk > 0 {
			fmt.Fprintf(md, ", matrix units %.0f GFLOP/s %s", pk, u.name)
		}
	}
	md.WriteString(".\n\n")

	var rows []Row
	for _, fam := range sortedKeys(d.Kernels) {
		keys := sortedKeys(d.Kernels[fam])
		sort.SliceStable(keys, func(i, j int) bool { return entryOrder(keys[i]) < entryOrder(keys[j]) })
		for _, ek := range keys {
			e := d.Kernels[fam][ek]
			r := Row{Device: dk, Kernel: fam, Key: ek, Params: e.Params, MedianUS: e.MedianUS,
				Measured: e.Candidates.Measured, Valid: e.Candidates.Valid, Failed: e.Candidates.Failed}
			if e.Default != nil && e.Default.MedianUS > 0 && e.MedianUS > 0 {
				r.DefaultUS, r.VsDefault = e.Default.MedianUS, round3(Speedup(e.Default.MedianUS, e.MedianUS))
			}
			if e.Baseline != nil && e.Baseline.MedianUS > 0 && e.MedianUS > 0 {
				r.Baseline, r.BaselineUS, r.VsBaseline = e.Baseline.Name, e.Baseline.MedianUS, round3(Speedup(e.Baseline.MedianUS, e.MedianUS))
			}
			r.IsDefault = e.Default != nil && paramfile.SameParams(e.Default.Params, e.Params)
			r.Use, r.Stopped, r.Partial = e.Use, e.Stopped, paramfile.Partial(e)
			r.Time = e.Time
			if e.Roofline != nil {
				r.PctRoof = e.Roofline.PctOfFloor
			}
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		md.WriteString("No entries.\n\n")
		return nil, nil
	}
	sp := filepath.Join("plots", slug(dk)+"-speedup."+format)
	if err := speedupPlot(filepath.Join(outDir, sp), dk, rows); err != nil {
		return nil, err
	}
	fmt.Fprintf(md, "![speedups of the tuned kernels on %s](%s)\n\n", dk, filepath.ToSlash(sp))
	md.WriteString("| kernel | entry | winner | median µs | default µs | speedup (default/tuned) | baseline µs | speedup (baseline/tuned) | use | % of roofline | candidates | device busy |\n")
	md.WriteString("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |\n")
	for _, r := range rows {
		winner := "`" + search.Candidate(r.Params).Key() + "`"
		if r.IsDefault {
			// Same program timed twice: any gap is measurement noise.
			winner += " (the default)"
		}
		cands := fmt.Sprintf("%d / %d / %d", r.Measured, r.Valid, r.Failed)
		if r.Partial {
			cands += " **partial**"
		}
		fmt.Fprintf(md, "| %s | %s | %s | %.2f | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Kernel, r.Key,
			winner, r.MedianUS, numOrDash(r.DefaultUS, "%.2f"), SpeedupCell(r.DefaultUS, r.MedianUS),
			baselineCell(r), SpeedupCell(r.BaselineUS, r.MedianUS), useCell(r.Use), pctCell(r.PctRoof), cands, busyCell(r.Time))
	}
	md.WriteString("\n")
	for _, r := range rows {
		if _, beaten := FloorCell(r.PctRoof); beaten {
			md.WriteString(FloorNote + ".\n\n")
			break
		}
	}
	tp := filepath.Join("plots", slug(dk)+"-time."+format)
	hasTime, err := timePlot(filepath.Join(outDir, tp), dk, rows)
	if err != nil {
		return nil, err
	}
	if hasTime {
		fmt.Fprintf(md, "### Where the tuning time went\n\n%s\n\n![tuning time per entry on %s, by part](%s)\n\n", timeSummary(rows), dk, filepath.ToSlash(tp))
	}

	traced := 0
	for i := range rows {
		r := &rows[i]
		cands, runNote := entryRecords(dk, r, d.Kernels[r.Kernel][r.Key], recs, entries)
		r.Plots = append(r.Plots, sp)
		if hasTime && r.Time != nil && r.Time.WallS > 0 {
			r.Plots = append(r.Plots, tp)
		}
		r.Traced = len(cands)
		if len(cands) == 0 {
			continue
		}
		if traced == 0 {
			md.WriteString("### Candidates per entry\n\n")
		}
		traced++
		base := slug(dk + "-" + r.Kernel + "-" + r.Key)
		sorted := filepath.Join("plots", base+"-sorted."+format)
		effect := filepath.Join("plots", base+"-params."+format)
		if err := sortedPlot(filepath.Join(outDir, sorted), r, cands); err != nil {
			return nil, err
		}
		ok, err := paramPlot(filepath.Join(outDir, effect), r, cands)
		if err != nil {
			return nil, err
		}
		failed := 0
		for _, c := range cands {
			if c.Err != "" {
				failed++
			}
		}
		fmt.Fprintf(md, "#### %s %s\n\n%s in the trace (%d failed)%s.\n\n![%s %s: every measured candidate, sorted](%s)\n",
			r.Kernel, r.Key, Plural(len(cands), "candidate", "candidates"), failed, runNote, r.Kernel, r.Key, filepath.ToSlash(sorted))
		r.Plots = append(r.Plots, sorted)
		if ok {
			fmt.Fprintf(md, "![%s %s: effect of each parameter](%s)\n", r.Kernel, r.Key, filepath.ToSlash(effect))
			r.Plots = append(r.Plots, effect)
		}
		md.WriteString("\n")
	}
	if traced == 0 {
		md.WriteString("No per-candidate trace for this device: tune with `--trace FILE` and pass it to `kerntune report --trace FILE` for the candidate plots.\n\n")
	}
	return rows, nil
}

// entryRecords are the trace records of the entry of row r, and a note on
// which run they come from. A trace appended to by several runs can hold
// runs whose result the file did not keep (the keep rule kept the older
// entry): when an entry line's time object is the entry's own, only that
// run's records are the entry's. Otherwise the latest record of each
// candidate over every run is taken, and the note says they mix runs.
func entryRecords(dk string, r *Row, e *paramfile.Entry, recs []trace.Record, entries []trace.Entry) ([]trace.Record, string) {
	var all []trace.Record
	runs := map[string]bool{}
	for _, rec := range recs {
		if rec.Device == dk && rec.Kernel == r.Kernel && rec.EntryKey() == r.Key {
			all = append(all, rec)
			runs[rec.Run] = true
		}
	}
	if len(runs) <= 1 {
		return trace.Latest(all), ""
	}
	run, found := "", false
	if e != nil && e.Time != nil {
		for _, en := range entries {
			k := trace.Record{Key: en.Key, DType: en.DType}.EntryKey()
			if en.Device == dk && en.Kernel == r.Kernel && k == r.Key && en.Time != nil && *en.Time == *e.Time {
				run, found = en.Run, true
			}
		}
	}
	if !found {
		return trace.Latest(all), fmt.Sprintf("; from %d tuning runs of this entry, which the trace does not tie to the file's entry: each candidate's latest record", len(runs))
	}
	var own []trace.Record
	for _, rec := range all {
		if rec.Run == run {
			own = append(own, rec)
		}
	}
	return trace.Latest(own), fmt.Sprintf("; of the run that produced the file's entry (the trace holds %d runs of it; the others' results were not kept)", len(runs))
}

// entryOrder sorts class entries by size (the classes' usual order), then shapes.
func entryOrder(key string) string {
	_, cls, _ := strings.Cut(key, "/")
	order := map[string]string{"tiny": "0", "small": "0", "short": "0", "skinny": "1", "mid": "1", "largeK_smallN": "2",
		"medium": "2", "long": "3", "largeN": "3", "large": "3", "xlong": "4"}
	dt, _, _ := strings.Cut(key, "/")
	if o, ok := order[cls]; ok {
		return dt + "/0" + o
	}
	return dt + "/1" + cls
}

func numOrDash(x float64, format string) string {
	if x <= 0 || math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf(format, x)
}

func baselineCell(r Row) string {
	if r.BaselineUS <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f (%s)", r.BaselineUS, r.Baseline)
}

// pctCell shows small percentages with the digits that tell them apart.
func pctCell(x float64) string {
	cell, _ := FloorCell(x)
	return cell
}

func busyCell(t *paramfile.TuneTime) string {
	if t == nil || t.WallS <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f %%", t.BusyPct)
}

// timeSummary is the device-busy share over the entries with a time, and
// the candidates they measured.
func timeSummary(rows []Row) string {
	var wall, dev float64
	var measured []int
	for _, r := range rows {
		if r.Time != nil && r.Time.WallS > 0 {
			wall += r.Time.WallS
			dev += r.Time.DeviceS
			measured = append(measured, r.Measured)
		}
	}
	slices.Sort(measured)
	med := float64(measured[len(measured)/2])
	if len(measured)%2 == 0 {
		med = float64(measured[len(measured)/2-1]+measured[len(measured)/2]) / 2
	}
	return fmt.Sprintf("The device was busy %.0f %% of these entries' tuning time (%.1f of %.1f s); candidates measured per entry: min %d, median %g, max %d.",
		100*dev/wall, dev, wall, measured[0], med, measured[len(measured)-1])
}

func useCell(use string) string {
	switch use {
	case "":
		return "-"
	case "baseline":
		return "**baseline**"
	}
	return use
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
