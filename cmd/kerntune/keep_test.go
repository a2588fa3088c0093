package main

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/tuner"
)

var (
	paramsA = map[string]int{"ROWS": 2, "THREADS": 1, "UNROLL": 4}
	paramsB = map[string]int{"ROWS": 8, "THREADS": 2, "UNROLL": 4}
	paramsC = map[string]int{"ROWS": 1, "THREADS": 2, "UNROLL": 2}
)

// testEntry is an entry with a winner, a median, candidates measured of
// 72 valid, and why its search stopped.
func testEntry(p map[string]int, medianUS float64, measured int, stopped string) *params.Entry {
	return &params.Entry{Params: p, MedianUS: medianUS, Samples: 30, Shapes: [][]int{{8, 300}},
		Candidates: params.CandidateCounts{Valid: 72, Measured: measured}, Stopped: stopped}
}

// timings draws n samples (seconds) around medianUS with a 1 % spread.
func timings(rng *rand.Rand, n int, medianUS float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = medianUS * 1e-6 * (1 + 0.01*rng.NormFloat64())
	}
	return xs
}

// retimed is a same-run timing of the file's parameters p (oldUS) against
// the new winner (newUS).
func retimed(p map[string]int, oldUS, newUS float64) *tuner.Retiming {
	rng := rand.New(rand.NewPCG(3, 5))
	return &tuner.Retiming{Params: p, Samples: timings(rng, 30, oldUS), WinnerSamples: timings(rng, 30, newUS)}
}

func TestChooseEntry(t *testing.T) {
	complete72 := testEntry(paramsA, 10, 72, "")
	tests := []struct {
		name    string
		old, nw *params.Entry
		ev      evidence
		keepNew bool
		reason  string // part of the reason
	}{
		{"--replace writes even a 1-candidate partial entry", complete72, testEntry(paramsB, 20, 1, "interrupted"), evidence{replace: true}, true, "--replace"},
		{"merge: faster recorded median", complete72, testEntry(paramsB, 9, 3, ""), evidence{recorded: true}, true, "faster"},
		{"merge: slower recorded median", complete72, testEntry(paramsB, 11, 72, ""), evidence{recorded: true}, false, "not faster"},
		{"merge: a tie keeps the first", complete72, testEntry(paramsB, 10, 72, ""), evidence{recorded: true}, false, "not faster"},
		{"short run whose winner is faster in this run's timing", complete72, testEntry(paramsB, 8, 4, "evaluation budget spent"),
			evidence{retime: retimed(paramsA, 10, 8)}, true, "faster in this run's interleaved timing"},
		{"interrupted run whose winner is faster in this run's timing", complete72, testEntry(paramsB, 8, 4, "interrupted"),
			evidence{retime: retimed(paramsA, 10, 8)}, true, "faster in this run's interleaved timing"},
		{"complete run whose winner is slower than the file's in this run's timing", complete72, testEntry(paramsB, 12, 72, ""),
			evidence{retime: retimed(paramsA, 10, 12)}, false, "the file's parameters were faster"},
		{"complete run, as many candidates, within noise", complete72, testEntry(paramsB, 10, 72, ""),
			evidence{retime: retimed(paramsA, 10, 9.9)}, true, "complete, measured 72 candidates ≥ 72; within noise"},
		{"5 s run: fewer candidates, within noise", complete72, testEntry(paramsB, 10, 9, "budget spent"),
			evidence{retime: retimed(paramsA, 10, 9.9)}, false, "measured 9 candidates < 72"},
		{"2 % faster is within the rule's noise", complete72, testEntry(paramsB, 9.8, 9, "budget spent"),
			evidence{retime: retimed(paramsA, 10, 9.8)}, false, "measured 9 candidates < 72"},
		{"1 ns run: the default only", complete72, testEntry(paramsC, 30, 1, "budget spent"), evidence{}, false, "measured 1 candidate < 72"},
		{"interrupted, more candidates, no timing", testEntry(paramsA, 10, 30, ""), testEntry(paramsB, 9, 40, "interrupted"), evidence{}, false, "partial"},
		{"both partial: more candidates win", testEntry(paramsA, 10, 30, "interrupted"), testEntry(paramsB, 11, 40, "interrupted"), evidence{}, true, "partial, as the file's"},
		{"a complete entry replaces a partial one", testEntry(paramsA, 10, 30, "interrupted"), testEntry(paramsB, 11, 40, ""), evidence{}, true, "complete"},
		{"the file's parameters cannot run here", complete72, testEntry(paramsB, 12, 2, "budget spent"),
			evidence{retime: &tuner.Retiming{Params: paramsA, Invalid: true, Err: "verification: wrong value"}}, true, "cannot run here (verification"},
		{"the file changed since the timing: counts decide", complete72, testEntry(paramsB, 8, 4, "budget spent"),
			evidence{retime: retimed(paramsC, 10, 8)}, false, "measured 4 candidates < 72"},
		{"same parameters, partial", complete72, testEntry(paramsA, 9, 5, "interrupted"),
			evidence{retime: &tuner.Retiming{Params: paramsA, Same: true}}, false, "partial"},
		{"same parameters, complete", complete72, testEntry(paramsA, 9, 72, ""),
			evidence{retime: &tuner.Retiming{Params: paramsA, Same: true}}, true, "complete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := chooseEntry(tt.old, tt.nw, tt.ev)
			if c.keepNew != tt.keepNew || !strings.Contains(c.reason, tt.reason) {
				t.Errorf("keepNew %v (%s); want %v with %q", c.keepNew, c.reason, tt.keepNew, tt.reason)
			}
		})
	}
}

// The choice is made under the file's lock against the entry the file
// holds then: a timing of parameters the file no longer holds does not
// count, and the decision names the file's entry.
func TestWriteResultDecidesAgainstTheFileAtWriteTime(t *testing.T) {
	k, err := kernels.Get("softmax")
	if err != nil {
		t.Fatal(err)
	}
	task := tuner.Task{Kernel: k, DType: kernels.F32, Cases: []kernels.Case{{Shape: []int{8, 300}}}}
	info := tuner.DeviceInfo{Key: "cpu:test:2", Backend: "cpu", Name: "test", Family: "amd64", ComputeUnits: 2}
	path := filepath.Join(t.TempDir(), "hardware_params.json")

	d, err := writeResult(path, false, false, info, &tuner.Result{Task: task, Entry: testEntry(paramsA, 10, 72, "")})
	if err != nil || d.Action != actionAdded {
		t.Fatalf("first write: %+v, %v", d, err)
	}
	// Another run wrote a complete entry of its own meanwhile.
	if _, err := writeResult(path, false, true, info, &tuner.Result{Task: task, Entry: testEntry(paramsC, 9, 72, "")}); err != nil {
		t.Fatal(err)
	}
	// This run timed A (the file's entry when it started) and beat it.
	res := &tuner.Result{Task: task, Entry: testEntry(paramsB, 8, 4, "budget spent"), Retiming: retimed(paramsA, 10, 8)}
	d, err = writeResult(path, false, false, info, res)
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != actionKept || d.Old == nil || !sameParams(d.Old.Params, paramsC) || !strings.Contains(d.Reason, "4 candidates < 72") {
		t.Errorf("decision %+v: want the file's current entry (C) kept on candidate counts", d)
	}
	f, err := params.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Devices[info.Key].Kernels["softmax"][task.Key()]; !sameParams(got.Params, paramsC) {
		t.Errorf("the file holds %v, want C %v", got.Params, paramsC)
	}
	// With the timing of C the new winner replaces it.
	res.Retiming = retimed(paramsC, 10, 8)
	if d, err = writeResult(path, false, false, info, res); err != nil || d.Action != actionReplaced || d.OldRetimedUS <= d.NewRetimedUS {
		t.Errorf("decision %+v, %v: want replaced on the same-run timing", d, err)
	}
}
