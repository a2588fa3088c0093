package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/tuner"
)

// runCLI runs the command in-process and returns the exit code and its
// stdout and stderr together.
func runCLI(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var both syncBuffer
	code := runWith(testFactory(&both, &both), args)
	return code, both.String()
}

func TestTuneEndToEndCPU(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tunes on the CPU for a few seconds")
	}
	out := filepath.Join(t.TempDir(), "hardware_params.json")
	// One small class-sized exact shape per run and an evaluation budget
	// keep this quick, and as quick on a loaded machine.
	code, log := runCLI(t, "tune", "--backend", "cpu", "--kernel", "rmsnorm", "--shape", "64x300", "--budget", "12e", "--out", out)
	if code != 0 {
		t.Fatalf("tune exited %d:\n%s", code, log)
	}
	// Where the time went: on the entry's line and the run's last line;
	// the split of the entry's time only with -v (below).
	// ...and a run of part of the default workload says how to tune it whole.
	for _, w := range []string{"failed] (", ", device busy ", " % of the run; candidates measured per entry: min ",
		"next: kerntune show " + out + "; the whole default workload (every family, every shape class): kerntune tune --budget 6m --extend (make tune)"} {
		if !strings.Contains(log, w) {
			t.Errorf("tune's output lacks %q:\n%s", w, log)
		}
	}
	if strings.Contains(log, "  time: setup ") {
		t.Errorf("tune without -v splits the entry's time:\n%s", log)
	}
	code, log = runCLI(t, "tune", "--backend", "cpu", "-v", "--kernel", "gemv_nt", "--shape", "1x96x200", "--dtype", "f16", "--budget", "12e", "--out", out)
	if code != 0 {
		t.Fatalf("second tune exited %d:\n%s", code, log)
	}
	if !strings.Contains(log, "  time: setup ") || !strings.Contains(log, " build ") || !strings.Contains(log, "s, verify ") {
		t.Errorf("tune -v does not split the entry's time or show a candidate's build and verification:\n%s", log)
	}
	f, err := paramfile.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Devices) != 1 {
		t.Fatalf("want one device, got %d", len(f.Devices))
	}
	for key, d := range f.Devices {
		if !strings.HasPrefix(key, "cpu:") || d.Backend != "cpu" || d.ComputeUnits < 1 || d.Facts["bandwidth_gbps"] <= 0 {
			t.Errorf("device %q: %+v", key, d)
		}
		e := d.Kernels["rmsnorm"]["f32/64x300"]
		if e == nil {
			t.Fatalf("rmsnorm entry missing after the second run merged: %v", d.Kernels)
		}
		g := d.Kernels["gemv_nt"]["f16/1x96x200"]
		if g == nil {
			t.Fatalf("gemv_nt f16 entry missing: %v", d.Kernels)
		}
		for _, e := range []*paramfile.Entry{e, g} {
			if e.MedianUS <= 0 || e.Samples < 10 || e.Candidates.Valid == 0 || e.Candidates.Measured == 0 || len(e.Params) == 0 {
				t.Errorf("entry incomplete: %+v", e)
			}
			if e.Default == nil || e.Default.MedianUS <= 0 {
				t.Errorf("default not measured: %+v", e.Default)
			}
			if tt := e.Time; tt == nil || tt.WallS <= 0 || tt.DeviceS <= 0 || tt.BusyPct <= 0 || tt.BusyPct > 100 || tt.MeasureS <= 0 {
				t.Errorf("time not recorded: %+v", e.Time)
			}
		}
	}
	// The written file validates against the published schema.
	raw := testutil.ReadFile(t, out)
	if err := testutil.Validate(testutil.SchemaFile(t, filepath.Join("..", "..", "params", "schema.json")), raw); err != nil {
		t.Errorf("the tuner wrote a file that params/schema.json rejects: %v", err)
	}
	// kerntune get and the Go API resolve the tuned entry identically.
	// Stdout alone must be JSON whatever warnings go to stderr.
	code, stdout, stderr := runIn("get", "--kernel", "gemv_nt", "--shape", "1x96x200", "--dtype", "f16", "--params", out, "--json")
	if code != 0 {
		t.Fatalf("get exited %d: %s%s", code, stdout, stderr)
	}
	var got struct {
		Params map[string]params.Value `json:"params"`
	}
	testutil.DecodeJSON(t, stdout, &got)
	l, err := params.Load(out, params.Options{Lookup: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.Resolve("gemv_nt", "f16", []int{1, 96, 200})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Params) != len(r.Params) || len(r.Params) == 0 {
		t.Fatalf("get gave %v, library %v", got.Params, r.Params)
	}
	for name, v := range r.Params {
		if got.Params[name] != v || !strings.HasPrefix(v.Source, "file:cpu:") {
			t.Errorf("%s: get %+v, library %+v", name, got.Params[name], v)
		}
	}
	code, log = runCLI(t, "show", out)
	if code != 0 || !strings.Contains(log, "rmsnorm") || !strings.Contains(log, "f16/1x96x200") || !strings.Contains(log, "BUSY") {
		t.Errorf("show exited %d:\n%s", code, log)
	}
}

func TestTuneBadInput(t *testing.T) {
	dir := t.TempDir()
	broken := testutil.WriteFile(t, dir, "broken.json", "{not json")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown kernel", []string{"tune", "--kernel", "conv"}, "unknown kernel"},
		{"unknown backend", []string{"tune", "--backend", "vulkan"}, "unknown backend"},
		{"unknown dtype", []string{"tune", "--dtype", "f64"}, "unknown dtype"},
		{"unknown strategy", []string{"tune", "--strategy", "magic"}, "unknown strategy"},
		{"two dims for gemv", []string{"tune", "--kernel", "gemv_nt", "--shape", "1x896"}, "3 dims"},
		{"zero dim", []string{"tune", "--kernel", "gemv_nt", "--shape", "0x1x1"}, "at least 1"},
		{"letters", []string{"tune", "--kernel", "gemv_nt", "--shape", "ax2x3"}, "not a positive decimal"},
		{"overflow", []string{"tune", "--kernel", "gemv_nt", "--shape", "1x99999999999999999999x3"}, "exceeds"},
		{"gemv with m>1", []string{"tune", "--kernel", "gemv_nt", "--shape", "2x8x8"}, "m must be 1"},
		{"shape without kernel", []string{"tune", "--shape", "1x8x8"}, "exactly one --kernel"},
		{"negative budget", []string{"tune", "--budget", "-1s"}, "--budget"},
		{"negative drift-every", []string{"tune", "--drift-every", "-1"}, "--drift-every is -1; must be 0..1000000 (candidates; 0: off)"},
		{"negative drift-cooldown", []string{"tune", "--drift-cooldown", "-1s"}, "--drift-cooldown must not be negative"},
		{"negative batch", []string{"tune", "--batch", "-1"}, "--batch is -1; must be 0..4096 (candidates; 0: automatic)"},
		{"unparsable out file", []string{"tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "2x3", "--out", broken}, "refusing to overwrite"},
		{"unknown flag", []string{"tune", "--frobnicate"}, "unknown flag"},
		{"unknown command", []string{"tuen"}, "unknown command"},
		{"show missing file", []string{"show", filepath.Join(dir, "none.json")}, "no such file"},
		{"show broken file", []string{"show", broken}, "not valid JSON"},
		{"bench samples past the bound", []string{"bench", "--backend", "cpu", "--samples", "999999999999"}, "--samples is 999999999999; must be 1..100000"},
		{"bench no samples", []string{"bench", "--backend", "cpu", "--samples", "0"}, "must be 1..100000"},
		{"seed letters", []string{"tune", "--seed", "abc"}, `seed "abc": must be a non-negative integer`},
		{"seed too large", []string{"tune", "--seed", "99999999999999999999999"}, "must be a non-negative integer of at most 64 bits"},
		{"batch past the bound", []string{"tune", "--batch", "99999999999"}, "--batch is 99999999999; must be 0..4096"},
		{"drift-every past the bound", []string{"tune", "--drift-every", "99999999999999"}, "--drift-every is 99999999999999; must be 0..1000000"},
		{"evaluations past the bound", []string{"tune", "--budget", "99999999999999999999e"}, "more evaluations than a run makes; give at most 1000000e"},
		{"replay runs past the bound", []string{"replay", "--cache", "x.json.gz", "--runs", "999999999999"}, "--runs is 999999999999; must be 1..10000"},
		{"unknown effort", []string{"tune", "--effort", "fast"}, `--effort "fast": allowed are quick, default and thorough (quick (budget 40s, at least 1 candidate beyond the default, each family's cheapest entry first with up to 24 candidates (a second's worth), the family's entries of other classes tried first (up to 3), 2 finalists re-timed, 10 final samples (up to 50 where they are cheap), drift guard off)`},
		{"check sample past the bound", []string{"check", "--spec", "../../examples/mlx_add_one.json", "--sample", "99999999999"}, "--sample is 99999999999; must be 0..1000000"},
		{"check negative sample", []string{"check", "--spec", "../../examples/mlx_add_one.json", "--sample", "-1"}, "must be 0..1000000"},
		{"verify sample past the bound", []string{"verify", "--backend", "cpu", "--sample", "99999999999"}, "--sample is 99999999999; must be 1..1000000"},
		{"verify no sample", []string{"verify", "--backend", "cpu", "--sample", "0"}, "must be 1..1000000"},
		{"emulate candidates past the bound", []string{"verify", "--spec", "../../examples/mlx_add_one.json", "--emulate", "--candidates", "99999999999"}, "want a number of candidates per dtype, 1..1000000, or all"},
		{"get compute units past the bound", []string{"get", "--kernel", "softmax", "--shape", "2x3", "--compute-units", "99999999999"}, "--compute-units is 99999999999; must be 0..1000000"},
		{"cache with two arguments", []string{"cache", "clear", "extra"}, "kerntune cache takes at most one argument (clear); got 2: clear extra"},
		{"show with two files", []string{"show", "a.json", "b.json"}, "kerntune show takes at most one argument (the params file); got 2"},
		{"import-variants without a manifest", []string{"import-variants"}, "kerntune import-variants takes one argument (the variants manifest); got 0"},
		{"merge without inputs", []string{"merge", "--out", filepath.Join(dir, "m.json")}, "merge needs at least one params file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantExit(t, tt.args, exitUsage, tt.want)
		})
	}
	testutil.Unchanged(t, broken, "{not json")
}

func TestKernelsAndVersion(t *testing.T) {
	code, log := runCLI(t, "kernels", "--json")
	if code != 0 || !strings.Contains(log, `"gemv_nt"`) || !strings.Contains(log, `"largeK_smallN"`) {
		t.Errorf("kernels --json exited %d: %s", code, log)
	}
	code, log = runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(log, "kerntune ") {
		t.Errorf("version exited %d: %q", code, log)
	}
}

func TestBenchCPU(t *testing.T) {
	t.Parallel()
	code, log := runCLI(t, "bench", "--backend", "cpu", "--kernel", "gemv_nt", "--shape", "1x96x200", "--samples", "5", "--json", "-q",
		"--params", filepath.Join(t.TempDir(), "none.json"))
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, log)
	}
	var got struct {
		Rows []benchRow `json:"rows"`
	}
	testutil.DecodeJSON(t, log, &got)
	if len(got.Rows) != 1 || got.Rows[0].TunedUS <= 0 || got.Rows[0].BaseUS <= 0 || got.Rows[0].Baseline != "gonum" || got.Rows[0].Source != "default" {
		t.Errorf("bench rows %+v", got.Rows)
	}
	if code, _ := runCLI(t, "bench", "--samples", "0"); code != exitUsage {
		t.Errorf("--samples 0 exited %d", code)
	}
}

// bench prints, next to its own timing, the time the params file records
// for the same parameters and shape (FILE µs, what show reports as the
// entry's median): tune and bench time alike, so the two agree within
// noise. The tight check is the tuner's TestFinalistsUndoSelectionBias on a
// fake noisy backend. Here, on a shared machine where a multi-threaded
// kernel runs at about 0.5× or 1× of its usual time as the other core is
// free or busy (docs/design/measurement.md), only a factor of 2.5 either way is
// asserted: that catches a figure in another unit or summed over shapes,
// not noise.
func TestBenchAgreesWithTheFile(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tunes on the CPU")
	}
	out := filepath.Join(t.TempDir(), "p.json")
	if code, log := runCLI(t, "tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "64x1024", "--budget", "10e", "--out", out, "-q"); code != 0 {
		t.Fatalf("tune exited %d: %s", code, log)
	}
	f, err := paramfile.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var e *paramfile.Entry
	for _, d := range f.Devices {
		e = d.Kernels["softmax"]["f32/64x1024"]
	}
	if e == nil || len(e.ShapeMedianUS) != 1 || e.ShapeMedianUS[0] <= 0 {
		t.Fatalf("tuned entry %+v", e)
	}
	code, log := runCLI(t, "bench", "--backend", "cpu", "--kernel", "softmax", "--shape", "64x1024", "--samples", "30", "--json", "-q", "--params", out)
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, log)
	}
	var got struct {
		Rows []benchRow `json:"rows"`
	}
	if err := json.Unmarshal([]byte(log), &got); err != nil || len(got.Rows) != 1 {
		t.Fatalf("%v: %s", err, log)
	}
	row := got.Rows[0]
	if !strings.HasPrefix(row.Source, "file:") || row.FileUS != e.ShapeMedianUS[0] {
		t.Errorf("bench row from %q records the file's %v µs; the entry holds %v", row.Source, row.FileUS, e.ShapeMedianUS)
	}
	if r := row.TunedUS / row.FileUS; r < 0.4 || r > 2.5 {
		t.Errorf("bench %.2f µs, the file %.2f µs", row.TunedUS, row.FileUS)
	}
	if code, log := runCLI(t, "show", out); code != 0 || !strings.Contains(log, fmt.Sprintf("%.2f", e.MedianUS)) {
		t.Errorf("show exited %d without the entry's median %.2f:\n%s", code, e.MedianUS, log)
	}
}

// tune --json says how busy the device was and how many candidates the
// entries measured, and each entry carries its time.
func TestTuneJSONBusy(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tunes on the CPU for a few seconds")
	}
	out := filepath.Join(t.TempDir(), "hardware_params.json")
	code, log := runCLI(t, "tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "64x300", "--shape", "8x1000",
		// An evaluation budget: a wall-time one is refused as too small
		// when other work loads both cores.
		"--budget", "12e", "-q", "--json", "--out", out)
	if code != 0 {
		t.Fatalf("tune exited %d:\n%s", code, log)
	}
	tj := parseTuneJSON(t, []byte(log))
	if tj.BusyPct <= 0 || tj.BusyPct > 100 || tj.Measured == nil || len(tj.Entries) != 2 {
		t.Fatalf("device_busy_pct %v, measured_per_entry %+v, %d entries", tj.BusyPct, tj.Measured, len(tj.Entries))
	}
	lo, hi := tj.Entries[0].Entry.Candidates.Measured, tj.Entries[1].Entry.Candidates.Measured
	if lo > hi {
		lo, hi = hi, lo
	}
	if tj.Measured.Min != lo || tj.Measured.Max != hi || tj.Measured.Median != float64(lo+hi)/2 {
		t.Errorf("measured_per_entry %+v for entries measuring %d and %d", *tj.Measured, lo, hi)
	}
	for _, te := range tj.Entries {
		if te.Entry.Time == nil || te.Entry.Time.BusyPct <= 0 {
			t.Errorf("%s: time %+v", te.Key, te.Entry.Time)
		}
	}
}

// The time split names the kernels compiled and those taken from the
// compile cache where the backend counted them, and says nothing of a
// cache otherwise.
func TestTimeSplitCacheHits(t *testing.T) {
	tests := []struct {
		name  string
		t     paramfile.TuneTime
		build float64
		ahead [3]int
		want  string
	}{
		{"counted", paramfile.TuneTime{CompileS: 1.5, Compiled: 2, CacheHits: 40}, 0, [3]int{}, "compile 1.50s (2 compiled, 40 from the cache), verify"},
		{"all from the cache", paramfile.TuneTime{CacheHits: 9}, 0, [3]int{}, "compile 0.00s (0 compiled, 9 from the cache), verify"},
		{"no cache", paramfile.TuneTime{CompileS: 1.5}, 0, [3]int{}, "compile 1.50s, verify"},
		{"pool timed", paramfile.TuneTime{CompileS: 1.5, Compiled: 2, CacheHits: 40}, 12.25, [3]int{}, "compile 1.50s (2 compiled, 40 from the cache; the compile pool busy 12.25s), verify"},
		{"pool timed, no cache", paramfile.TuneTime{CompileS: 1.5}, 3, [3]int{}, "compile 1.50s (the compile pool busy 3.00s), verify"},
		{"measured ahead", paramfile.TuneTime{CompileS: 1.5, Compiled: 2}, 3, [3]int{7, 5, 0}, "compile 1.50s (2 compiled, 0 from the cache; the compile pool busy 3.00s; 7 measured while another compiled, 5 of them asked for later), verify"},
		{"spares", paramfile.TuneTime{CompileS: 1.5, Compiled: 2}, 3, [3]int{7, 5, 2}, "7 measured while another compiled, 5 of them asked for later, 2 spares built by the idle compile pool), verify"},
	}
	for _, tc := range tests {
		res := &tuner.Result{Time: &tc.t, BuildS: tc.build, Ahead: tc.ahead[0], AheadAsked: tc.ahead[1], Spared: tc.ahead[2]}
		if got := timeSplit(res); !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q does not contain %q", tc.name, got, tc.want)
		}
	}
	sum := &tuner.SessionSummary{Wall: time.Second, Results: []*tuner.Result{
		{Entry: &paramfile.Entry{Time: &paramfile.TuneTime{Compiled: 3, CacheHits: 1}}},
		{Entry: &paramfile.Entry{Time: &paramfile.TuneTime{CacheHits: 5}}},
	}}
	if got, want := runSummary(sum), "kernels compiled 3, from the compile cache 6"; !strings.Contains(got, want) || strings.Contains(got, "compile pool") {
		t.Errorf("run summary %q does not contain %q, or names a pool that was not timed", got, want)
	}
	sum.Results[0].Time, sum.Results[0].BuildS = &paramfile.TuneTime{CompileS: 0.5}, 7.5
	sum.Results[1].BuildS = 2
	if got, want := runSummary(sum), "waited for builds 0.5s, the compile pool busy 9.5s"; !strings.Contains(got, want) {
		t.Errorf("run summary %q does not contain %q", got, want)
	}
}

// A shape that passes validation but would not fit in memory is refused
// before anything is allocated: exit 2 naming the shape, no output file
// and no journal that would block the next run.
func TestTuneShapeTooLargeForMemory(t *testing.T) {
	out := filepath.Join(t.TempDir(), "t4.json")
	wantExit(t, []string{"tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "2147483647x64", "--budget", "10s", "--out", out},
		exitUsage, "at shape 2147483647x64 needs at least", "choose a smaller shape")
	for _, p := range []string{out, out + ".journal"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", p, err)
		}
	}
}

// --effort sets the budget and the final timing unless --budget is given,
// and the run says which effort it uses.
func TestTuneEffort(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tunes on the CPU")
	}
	out := filepath.Join(t.TempDir(), "hardware_params.json")
	code, log := runCLI(t, "tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "8x300", "--where", "THREADS=1", "--effort", "quick", "--out", out)
	if code != 0 || !strings.Contains(log, "to tune in 40s with bo, effort quick") {
		t.Fatalf("--effort quick: exit %d, want 0 and the header to name the effort and its budget:\n%s", code, log)
	}
	if strings.Contains(log, "drifted") {
		t.Errorf("--effort quick ran the drift guard:\n%s", log)
	}
	code, log = runCLI(t, "tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "8x300", "--where", "THREADS=1", "--effort", "thorough", "--budget", "6e", "--out", out)
	if code != 0 || !strings.Contains(log, "to tune in 6e with bo, effort thorough") {
		t.Errorf("--effort thorough --budget 6e: exit %d, want 0 and --budget kept:\n%s", code, log)
	}
}

// bench --against times a second file's parameters for each shape in the
// same rounds: the row carries them, their time and the ratio, and the
// text counts the shapes within 10 %; a missing file is a usage error
// that names the flag.
func TestBenchAgainst(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tunes on the CPU")
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	if code, log := runCLI(t, "tune", "--backend", "cpu", "--kernel", "gemv_nt", "--shape", "1x96x200", "--budget", "3e", "--out", a, "-q"); code != 0 {
		t.Fatalf("tune exited %d: %s", code, log)
	}
	// b: the same entry with other parameters.
	f, err := paramfile.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	var mine map[string]int
	for _, d := range f.Devices {
		e := d.Kernels["gemv_nt"]["f32/1x96x200"]
		if e == nil {
			t.Fatalf("no entry in %s", a)
		}
		mine = maps.Clone(e.Params)
		e.Params["UNROLL"] = 5 - e.Params["UNROLL"] // 1 ↔ 4
		e.Params["BN"] = 16
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, log := runCLI(t, "bench", "--backend", "cpu", "--kernel", "gemv_nt", "--shape", "1x96x200", "--samples", "20", "--json", "-q",
		"--params", a, "--against", b)
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, log)
	}
	var got struct {
		Rows []benchRow `json:"rows"`
	}
	testutil.DecodeJSON(t, log, &got)
	if len(got.Rows) != 1 {
		t.Fatalf("rows %+v", got.Rows)
	}
	r := got.Rows[0]
	if !maps.Equal(r.Params, mine) || r.AgainstParams["BN"] != 16 || !strings.HasPrefix(r.AgainstSource, "file:") {
		t.Errorf("params %v, against %v from %q", r.Params, r.AgainstParams, r.AgainstSource)
	}
	if r.TunedUS <= 0 || r.AgainstUS <= 0 || math.Abs(r.AgainstRatio-r.TunedUS/r.AgainstUS) > 0.01 {
		t.Errorf("this %v µs, against %v µs, ratio %v", r.TunedUS, r.AgainstUS, r.AgainstRatio)
	}
	code, log = runCLI(t, "bench", "--backend", "cpu", "--kernel", "gemv_nt", "--shape", "1x96x200", "--samples", "5", "-q", "--params", a, "--against", a)
	if code != 0 || !strings.Contains(log, "1.00 (the same parameters)") || !strings.Contains(log, "1 of 1 shapes within 10 % of "+a) {
		t.Errorf("bench --against itself exited %d:\n%s", code, log)
	}
	code, log = runCLI(t, "bench", "--backend", "cpu", "--kernel", "gemv_nt", "--shape", "1x96x200", "-q", "--params", a, "--against", filepath.Join(dir, "none.json"))
	if code != exitUsage || !strings.Contains(log, "--against") {
		t.Errorf("bench --against a missing file exited %d: %s", code, log)
	}
}
