package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/report"
)

// show and report print the same speedup, reference time / tuned time,
// rounded once from the file's medians: 48.51 / 100 is 0.4851, which a
// figure rounded to 0.485 first would print as 0.48.
func TestShowAndReportSpeedupsAgree(t *testing.T) {
	pf := &paramfile.File{SchemaVersion: paramfile.SchemaVersion, Devices: map[string]*paramfile.Device{
		"cpu:x": {Backend: "cpu", Family: "amd64", ComputeUnits: 1, Kernels: map[string]map[string]*paramfile.Entry{
			"gemv_nt": {"f32/tiny": {Params: map[string]int{"BN": 8}, MedianUS: 100, Samples: 5, Shapes: [][]int{{1, 8, 8}},
				Default:  &paramfile.Reference{Params: map[string]int{"BN": 16}, MedianUS: 48.51},
				Baseline: &paramfile.Baseline{Name: "gonum", MedianUS: 148.51}}}}}}}
	var show bytes.Buffer
	printFile(&show, pf)
	dir := t.TempDir()
	if _, err := report.Write(pf, nil, report.Options{Dir: dir, Format: "svg", Source: "p.json"}); err != nil {
		t.Fatal(err)
	}
	md := testutil.ReadFile(t, filepath.Join(dir, "report.md"))
	for _, ref := range []float64{48.51, 148.51} {
		want := fmt.Sprintf("%.2f×", ref/100)
		if !strings.Contains(show.String(), " "+want+" ") {
			t.Errorf("show lacks the speedup %s:\n%s", want, show.String())
		}
		if !strings.Contains(string(md), "| "+want+" |") {
			t.Errorf("report.md lacks the speedup %s:\n%s", want, md)
		}
	}
	for _, h := range []string{"SPEEDUP (default/tuned)", "SPEEDUP (baseline/tuned)"} {
		if !strings.Contains(show.String(), h) {
			t.Errorf("show's header lacks %q", h)
		}
		if !strings.Contains(string(md), strings.ToLower(h)) {
			t.Errorf("report's header lacks %q", strings.ToLower(h))
		}
	}
}

// bench's speedup runs the way show's and report's do, baseline / tuned
// time, and its header says so; --json's speedup is the same figure and
// ratio its inverse.
func TestBenchSpeedupDirection(t *testing.T) {
	t.Parallel()
	jsonOut := filepath.Join(t.TempDir(), "bench.json")
	code, log := runCLI(t, "bench", "--backend", "cpu", "--kernel", "gemv_nt", "--shape", "1x96x200", "--samples", "5", "-q",
		"--params", filepath.Join(t.TempDir(), "none.json"), "--json-out", jsonOut)
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, log)
	}
	data := testutil.ReadFile(t, jsonOut)
	var got struct {
		Rows []benchRow `json:"rows"`
	}
	if err := json.Unmarshal(data, &got); err != nil || len(got.Rows) != 1 || got.Rows[0].BaseUS <= 0 {
		t.Fatalf("%v: %s", err, data)
	}
	r := got.Rows[0]
	if want := r.BaseUS / r.TunedUS; math.Abs(r.Speedup-want) > 0.0005 || math.Abs(r.Ratio-1/want) > 0.0005 {
		t.Errorf("speedup %v, ratio %v; baseline %v µs, tuned %v µs", r.Speedup, r.Ratio, r.BaseUS, r.TunedUS)
	}
	if !strings.Contains(log, "SPEEDUP (baseline/tuned)") || !strings.Contains(log, " "+fmt.Sprintf("%.2f×", r.BaseUS/r.TunedUS)+" ") {
		t.Errorf("bench's table lacks the header SPEEDUP (baseline/tuned) or the speedup %.2f×:\n%s", r.BaseUS/r.TunedUS, log)
	}
}

// bench marks a share of the floor above 100 % and prints why under the
// table, as report does.
func TestBenchFloorNote(t *testing.T) {
	for _, pct := range []float64{91, 104.2} {
		var out bytes.Buffer
		printBenchTable(&out, "cpu:x", "cpu", []benchRow{{Kernel: "gemv_nt", DType: "f32", Shape: "1x896x896",
			Params: map[string]int{"BN": 8}, TunedUS: 10, BaseUS: 20, Baseline: "gonum", PctOfFloor: pct}})
		cell, beaten := report.FloorCell(pct)
		if !strings.Contains(out.String(), " "+cell+" ") || strings.Contains(out.String(), report.FloorNote) != beaten {
			t.Errorf("%v %% of the floor: want the cell %q and the note %v:\n%s", pct, cell, beaten, out.String())
		}
	}
}

// Facts read as plain numbers, sizes in bytes also in binary units.
func TestFactString(t *testing.T) {
	for _, c := range []struct {
		key  string
		v    float64
		want string
	}{
		{"llc_bytes", 33554432, "33554432 (32 MiB)"},
		{"total_mem_bytes", 81559347200, "81559347200 (76 GiB)"},
		{"l2_bytes", 52428800, "52428800 (50 MiB)"},
		{"max_shared_per_block", 49152, "49152"},
		{"registers_per_block", 65536, "65536"},
		{"bandwidth_gbps", 3018.4, "3018.4"},
		{"peak_gflops", 6.7e+07, "67000000"},
		{"launch_overhead_us", 0.000125, "0.000125"},
		{"llc_bytes", 512, "512"},
	} {
		if got := factString(c.key, c.v); got != c.want {
			t.Errorf("factString(%s, %g) = %q, want %q", c.key, c.v, got, c.want)
		}
	}
}

// devices prints no number with an exponent.
func TestDevicesPlainNumbers(t *testing.T) {
	t.Parallel()
	code, out := runCLI(t, "devices")
	if code != 0 || !strings.Contains(out, "llc_bytes=") {
		t.Fatalf("devices exited %d:\n%s", code, out)
	}
	if strings.Contains(out, "e+") {
		t.Errorf("devices prints an exponent:\n%s", out)
	}
}
