package report

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/internal/trace"
	"github.com/kerntune/kerntune/params/paramfile"
)

func testFile() *paramfile.File {
	e := func(bn int, us, defUS float64, stopped string) *paramfile.Entry {
		return &paramfile.Entry{Params: map[string]int{"BN": bn}, MedianUS: us, Stopped: stopped,
			Default:    &paramfile.Reference{Params: map[string]int{"BN": 16}, MedianUS: defUS},
			Baseline:   &paramfile.Baseline{Name: "gonum", MedianUS: 2 * us},
			Candidates: paramfile.CandidateCounts{Valid: 8, Measured: 5, Failed: 1}}
	}
	return &paramfile.File{Generator: "kerntune test", Devices: map[string]*paramfile.Device{
		"cpu:m1": {Backend: "cpu", Family: "arm64", ComputeUnits: 8, Kernels: map[string]map[string]*paramfile.Entry{
			"gemv_nt": {"f32/mid": e(8, 90, 180, ""), "f32/tiny": e(16, 40, 40, paramfile.StoppedInterrupted)}}},
	}}
}

// One row per entry, classes in size order, speedups and the partial mark
// from the entry; the candidate plots come only with a trace.
func TestWrite(t *testing.T) {
	recs := []trace.Record{
		{Device: "cpu:m1", Kernel: "gemv_nt", DType: "f32", Key: "f32/mid", Params: map[string]int{"BN": 8}, MedianUS: 90, Samples: 5},
		{Device: "cpu:m1", Kernel: "gemv_nt", DType: "f32", Key: "f32/mid", Params: map[string]int{"BN": 4}, MedianUS: 120, Samples: 5},
	}
	dir := t.TempDir()
	rows, err := Write(testFile(), recs, Options{Dir: dir, Format: "svg", Source: "p.json", Trace: "p.trace.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Key != "f32/tiny" || !rows[0].Partial || !rows[0].IsDefault || rows[0].Traced != 0 || len(rows[0].Plots) != 1 {
		t.Fatalf("first row %+v: want f32/tiny, partial, the default, untraced, one plot", rows[0])
	}
	mid := rows[1]
	if mid.VsDefault != 2 || mid.VsBaseline != 2 || mid.Traced != 2 || len(mid.Plots) != 3 {
		t.Errorf("f32/mid row %+v: want 2× both, 2 traced candidates, 3 plots", mid)
	}
	md := testutil.ReadFile(t, filepath.Join(dir, "report.md"))
	for _, w := range []string{"From `p.json` (written by kerntune test); per-candidate data from `p.trace.jsonl` (2 candidates)",
		"| gemv_nt | f32/tiny | `BN=16` (the default) |", "5 / 8 / 1 **partial**", "2 candidates in the trace (0 failed)"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("report.md lacks %q:\n%s", w, md)
		}
	}
	for _, p := range mid.Plots {
		if st, err := os.Stat(filepath.Join(dir, p)); err != nil || st.Size() < 1000 {
			t.Errorf("plot %s: %v", p, err)
		}
	}
	if _, err := Write(testFile(), nil, Options{Dir: dir, Format: "gif"}); err == nil || !strings.Contains(err.Error(), `"gif"`) {
		t.Errorf("format gif: %v", err)
	}
}

func TestFormatUS(t *testing.T) {
	for us, want := range map[float64]string{12.345: "12.35 µs", 1234.5: "1.234 ms", 2.5e6: "2.5 s"} {
		if got := FormatUS(us); got != want {
			t.Errorf("FormatUS(%g) = %q, want %q", us, got, want)
		}
	}
}

// SVG plots name generic fallbacks after Liberation Sans (metric-compatible
// ones first) and hold every text to the width the layout measured, so a
// viewer without the font neither clips labels nor runs them into bars.
func TestSVGText(t *testing.T) {
	recs := []trace.Record{
		{Device: "cpu:m1", Kernel: "gemv_nt", DType: "f32", Key: "f32/mid", Params: map[string]int{"BN": 8}, MedianUS: 90, Samples: 5},
		{Device: "cpu:m1", Kernel: "gemv_nt", DType: "f32", Key: "f32/mid", Params: map[string]int{"BN": 4}, MedianUS: 120, Samples: 5},
	}
	dir := t.TempDir()
	rows, err := Write(testFile(), recs, Options{Dir: dir, Format: "svg", Source: "p.json"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rows {
		for _, p := range r.Plots {
			b := testutil.ReadFile(t, filepath.Join(dir, p))
			svg := string(b)
			texts := strings.Count(svg, "<text ")
			if texts == 0 || strings.Count(svg, `lengthAdjust="spacingAndGlyphs"`) != texts {
				t.Errorf("%s: %d texts, %d with a textLength", p, texts, strings.Count(svg, "textLength="))
			}
			if strings.Contains(svg, "font-family:Liberation Sans;") || strings.Count(svg, svgFontFamily) != texts {
				t.Errorf("%s: not every text names the fallbacks %q", p, svgFontFamily)
			}
			n++
		}
	}
	if n < 3 {
		t.Errorf("only %d plots checked", n)
	}
}

// Time axes are labelled in the unit that suits them with compact ticks
// ("50", not "50000.00"), and leave the legend room above the data.
func TestTimeAxis(t *testing.T) {
	tests := []struct {
		lo, hi float64
		unit   string
		log    bool
	}{
		{47500, 67500, "ms", false},
		{12.5, 40, "µs", false},
		{2.5e6, 4.6e6, "s", false},
		{30, 125000, "ms", true},
	}
	for _, tt := range tests {
		p := plot.New()
		timeAxis(p, tt.lo, tt.hi, legendHeadroom(4, 10*vg.Centimeter))
		if p.Y.Label.Text != "median time ("+tt.unit+")" {
			t.Errorf("%g..%g: label %q, want the unit %s", tt.lo, tt.hi, p.Y.Label.Text, tt.unit)
		}
		if _, isLog := p.Y.Scale.(plot.LogScale); isLog != tt.log {
			t.Errorf("%g..%g: log scale %v, want %v", tt.lo, tt.hi, isLog, tt.log)
		}
		labels := 0
		for _, tk := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
			if tk.Label == "" {
				continue
			}
			labels++
			if len(tk.Label) > 5 || strings.HasSuffix(tk.Label, "0") && strings.Contains(tk.Label, ".") {
				t.Errorf("%g..%g: tick label %q is not compact", tt.lo, tt.hi, tk.Label)
			}
		}
		if labels < 2 {
			t.Errorf("%g..%g: %d labelled ticks", tt.lo, tt.hi, labels)
		}
		// The legend's share of the axis (4 entries of about 12 points in
		// a plot of 10 cm, less 70 points of title and axis) lies above the data.
		top := func(v float64) float64 { return v }
		if tt.log {
			top = math.Log
		}
		above := (top(p.Y.Max) - top(tt.hi)) / (top(p.Y.Max) - top(p.Y.Min))
		if need := (4*12 + 8) / ((10 * vg.Centimeter).Points() - 70); above < need {
			t.Errorf("%g..%g: %.2f of the axis above the data; the legend needs %.2f", tt.lo, tt.hi, above, need)
		}
	}
	for v, want := range map[float64]string{47.5: "47.5", 250: "250", 0.125: "0.125", 1234.5678: "1235", 2e6: "2e+06", 0: "0"} {
		if got := compactNumber(v); got != want {
			t.Errorf("compactNumber(%g) = %q, want %q", v, got, want)
		}
	}
}

// Entries with a recorded time get a device-busy cell, a line over the
// device and one stacked bar each in the time plot; entries without one
// are left out of it.
func TestWriteTime(t *testing.T) {
	f := testFile()
	es := f.Devices["cpu:m1"].Kernels["gemv_nt"]
	es["f32/mid"].Time = &paramfile.TuneTime{WallS: 8, SetupS: 0.5, CompileS: 1, VerifyS: 1, MeasureS: 5, SearchS: 0.25, JournalS: 0.15, OtherS: 0.1,
		DeviceS: 5.5, IdleS: 2.5, BusyPct: 68.75}
	dir := t.TempDir()
	rows, err := Write(f, nil, Options{Dir: dir, Format: "svg", Source: "p.json"})
	if err != nil {
		t.Fatal(err)
	}
	mid := rows[1]
	if mid.Time == nil || len(mid.Plots) != 2 || len(rows[0].Plots) != 1 {
		t.Fatalf("rows %+v, %+v: want the time plot for f32/mid only", rows[0], mid)
	}
	md := testutil.ReadFile(t, filepath.Join(dir, "report.md"))
	for _, w := range []string{"| 5 / 8 / 1 | 69 % |", "| 5 / 8 / 1 **partial** | - |",
		"The device was busy 69 % of these entries' tuning time (5.5 of 8.0 s); candidates measured per entry: min 5, median 5, max 5.",
		"![tuning time per entry on cpu:m1, by part](plots/cpu-m1-time.svg)"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("report.md lacks %q:\n%s", w, md)
		}
	}
	svg := testutil.ReadFile(t, filepath.Join(dir, mid.Plots[1]))
	for _, w := range []string{"gemv_nt f32/mid", "5 measured, busy 69%", "compile (waiting)", "measure (timed runs)"} {
		if !strings.Contains(string(svg), w) {
			t.Errorf("the time plot lacks %q", w)
		}
	}
	if strings.Contains(string(svg), "gemv_nt f32/tiny") {
		t.Error("the time plot has a bar for an entry without a time")
	}
}

// When the trace holds a later run of an entry whose result the file did
// not keep, the entry's candidate plots show the records of the run that
// produced the file's entry (tied to it by the entry line's time), not the
// other run's.
func TestReportRecordsOfTheKeptRun(t *testing.T) {
	kept, later := &paramfile.TuneTime{WallS: 10, BusyPct: 50}, &paramfile.TuneTime{WallS: 12, BusyPct: 40}
	rec := func(run string, bn int, us float64) trace.Record {
		return trace.Record{Device: "cpu:m1", Kernel: "gemv_nt", DType: "f32", Key: "f32/mid", Params: map[string]int{"BN": bn}, MedianUS: us, Samples: 5, Run: run}
	}
	recs := []trace.Record{rec("a", 8, 90), rec("a", 4, 120), rec("b", 8, 50), rec("b", 2, 60), rec("b", 1, 70)}
	entries := []trace.Entry{
		{Kind: trace.KindEntry, Device: "cpu:m1", Kernel: "gemv_nt", DType: "f32", Key: "f32/mid", Time: kept, Run: "a"},
		{Kind: trace.KindEntry, Device: "cpu:m1", Kernel: "gemv_nt", DType: "f32", Key: "f32/mid", Time: later, Run: "b"},
	}
	for _, c := range []struct {
		name   string
		time   *paramfile.TuneTime
		traced int
		note   string
	}{
		{"tied to run a", &paramfile.TuneTime{WallS: 10, BusyPct: 50}, 2, "of the run that produced the file's entry (the trace holds 2 runs of it"},
		{"not tied", nil, 4, "from 2 tuning runs of this entry, which the trace does not tie to the file's entry"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pf := testFile()
			pf.Devices["cpu:m1"].Kernels["gemv_nt"]["f32/mid"].Time = c.time
			dir := t.TempDir()
			rows, err := Write(pf, recs, Options{Dir: dir, Format: "svg", Source: "p.json", Trace: "p.trace.jsonl", Entries: entries})
			if err != nil {
				t.Fatal(err)
			}
			if rows[1].Key != "f32/mid" || rows[1].Traced != c.traced {
				t.Errorf("row %s: %d traced candidates, want %d", rows[1].Key, rows[1].Traced, c.traced)
			}
			md := testutil.ReadFile(t, filepath.Join(dir, "report.md"))
			if !strings.Contains(string(md), c.note) {
				t.Errorf("report.md lacks %q:\n%s", c.note, md)
			}
		})
	}
}
