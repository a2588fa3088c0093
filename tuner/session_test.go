package tuner

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/tuner/device"
)

var (
	paramsA = map[string]int{"ROWS": 2, "THREADS": 1, "UNROLL": 4}
	paramsB = map[string]int{"ROWS": 8, "THREADS": 2, "UNROLL": 4}
	paramsC = map[string]int{"ROWS": 1, "THREADS": 2, "UNROLL": 2}
)

// testEntry is an entry with a winner, a median, candidates measured of
// 72 valid, and why its search stopped.
func testEntry(p map[string]int, medianUS float64, measured int, stopped string) *paramfile.Entry {
	return &paramfile.Entry{Params: p, MedianUS: medianUS, Samples: 30, Shapes: [][]int{{8, 300}},
		Candidates: paramfile.CandidateCounts{Valid: 72, Measured: measured}, Stopped: stopped}
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
func retimed(p map[string]int, oldUS, newUS float64) *Retiming {
	rng := rand.New(rand.NewPCG(3, 5))
	return &Retiming{Params: p, Samples: timings(rng, 30, oldUS), WinnerSamples: timings(rng, 30, newUS)}
}

// The keep rule as a session applies it: paramfile.ChooseEntry weighing a
// same-run timing through Retiming.Evidence and the noise rule.
func TestChooseEntry(t *testing.T) {
	complete72 := testEntry(paramsA, 10, 72, "")
	tests := []struct {
		name    string
		old, nw *paramfile.Entry
		ev      paramfile.Evidence
		keepNew bool
		reason  string // part of the reason
	}{
		{"--replace writes even a 1-candidate partial entry", complete72, testEntry(paramsB, 20, 1, "interrupted"), paramfile.Evidence{Replace: true}, true, "--replace"},
		{"merge: faster recorded median", complete72, testEntry(paramsB, 9, 3, ""), paramfile.Evidence{Recorded: true}, true, "faster"},
		{"merge: slower recorded median", complete72, testEntry(paramsB, 11, 72, ""), paramfile.Evidence{Recorded: true}, false, "not faster"},
		{"merge: a tie keeps the first", complete72, testEntry(paramsB, 10, 72, ""), paramfile.Evidence{Recorded: true}, false, "not faster"},
		{"short run whose winner is faster in this run's timing", complete72, testEntry(paramsB, 8, 4, "evaluation budget spent"),
			paramfile.Evidence{Retimed: retimed(paramsA, 10, 8).Evidence()}, true, "faster in this run's interleaved timing"},
		{"interrupted run whose winner is faster in this run's timing", complete72, testEntry(paramsB, 8, 4, "interrupted"),
			paramfile.Evidence{Retimed: retimed(paramsA, 10, 8).Evidence()}, true, "faster in this run's interleaved timing"},
		{"complete run whose winner is slower than the file's in this run's timing", complete72, testEntry(paramsB, 12, 72, ""),
			paramfile.Evidence{Retimed: retimed(paramsA, 10, 12).Evidence()}, false, "the file's parameters were faster"},
		{"complete run, as many candidates, within noise", complete72, testEntry(paramsB, 10, 72, ""),
			paramfile.Evidence{Retimed: retimed(paramsA, 10, 9.9).Evidence()}, true, "complete, measured 72 candidates ≥ 72; within noise"},
		{"5 s run: fewer candidates, within noise", complete72, testEntry(paramsB, 10, 9, "budget spent"),
			paramfile.Evidence{Retimed: retimed(paramsA, 10, 9.9).Evidence()}, false, "measured 9 candidates < 72"},
		{"2 % faster is within the rule's noise", complete72, testEntry(paramsB, 9.8, 9, "budget spent"),
			paramfile.Evidence{Retimed: retimed(paramsA, 10, 9.8).Evidence()}, false, "measured 9 candidates < 72"},
		{"1 ns run: the default only", complete72, testEntry(paramsC, 30, 1, "budget spent"), paramfile.Evidence{}, false, "measured 1 candidate < 72"},
		{"interrupted, more candidates, no timing", testEntry(paramsA, 10, 30, ""), testEntry(paramsB, 9, 40, "interrupted"), paramfile.Evidence{}, false, "partial"},
		{"both partial: more candidates win", testEntry(paramsA, 10, 30, "interrupted"), testEntry(paramsB, 11, 40, "interrupted"), paramfile.Evidence{}, true, "partial, as the file's"},
		{"a complete entry replaces a partial one", testEntry(paramsA, 10, 30, "interrupted"), testEntry(paramsB, 11, 40, ""), paramfile.Evidence{}, true, "complete"},
		{"the file's parameters cannot run here", complete72, testEntry(paramsB, 12, 2, "budget spent"),
			paramfile.Evidence{Retimed: (&Retiming{Params: paramsA, Invalid: true, Err: "verification: wrong value"}).Evidence()}, true, "cannot run here (verification"},
		{"the file changed since the timing: counts decide", complete72, testEntry(paramsB, 8, 4, "budget spent"),
			paramfile.Evidence{Retimed: retimed(paramsC, 10, 8).Evidence()}, false, "measured 4 candidates < 72"},
		{"same parameters, partial", complete72, testEntry(paramsA, 9, 5, "interrupted"),
			paramfile.Evidence{Retimed: (&Retiming{Params: paramsA, Same: true}).Evidence()}, false, "partial"},
		{"same parameters, complete", complete72, testEntry(paramsA, 9, 72, ""),
			paramfile.Evidence{Retimed: (&Retiming{Params: paramsA, Same: true}).Evidence()}, true, "complete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := paramfile.ChooseEntry(tt.old, tt.nw, tt.ev)
			if c.KeepNew != tt.keepNew || !strings.Contains(c.Reason, tt.reason) {
				t.Errorf("keepNew %v (%s); want %v with %q", c.KeepNew, c.Reason, tt.keepNew, tt.reason)
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
	task := Task{Kernel: k, DType: kernels.F32, Cases: []kernels.Case{{Shape: []int{8, 300}}}}
	info := device.DeviceInfo{Key: "cpu:test:2", Backend: "cpu", Name: "test", Family: "amd64", ComputeUnits: 2}
	path := filepath.Join(t.TempDir(), "hardware_params.json")

	d, err := WriteResult(path, false, false, info, "kerntune test", &Result{Task: task, Entry: testEntry(paramsA, 10, 72, "")})
	if err != nil || d.Action != KeepAdded {
		t.Fatalf("first write: %+v, %v", d, err)
	}
	// Another run wrote a complete entry of its own meanwhile.
	if _, err := WriteResult(path, false, true, info, "kerntune test", &Result{Task: task, Entry: testEntry(paramsC, 9, 72, "")}); err != nil {
		t.Fatal(err)
	}
	// This run timed A (the file's entry when it started) and beat it.
	res := &Result{Task: task, Entry: testEntry(paramsB, 8, 4, "budget spent"), Retiming: retimed(paramsA, 10, 8)}
	d, err = WriteResult(path, false, false, info, "kerntune test", res)
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != KeepKept || d.Old == nil || !paramfile.SameParams(d.Old.Params, paramsC) || !strings.Contains(d.Reason, "4 candidates < 72") {
		t.Errorf("decision %+v: want the file's current entry (C) kept on candidate counts", d)
	}
	f, err := paramfile.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Devices[info.Key].Kernels["softmax"][task.Key()]; !paramfile.SameParams(got.Params, paramsC) {
		t.Errorf("the file holds %v, want C %v", got.Params, paramsC)
	}
	// With the timing of C the new winner replaces it.
	res.Retiming = retimed(paramsC, 10, 8)
	if d, err = WriteResult(path, false, false, info, "kerntune test", res); err != nil || d.Action != KeepReplaced || d.OldRetimedUS <= d.NewRetimedUS {
		t.Errorf("decision %+v, %v: want replaced on the same-run timing", d, err)
	}
}

// A case too large for what the machine can give is refused, naming the
// family, dtype and shape; one that fits, or an unknown amount, passes.
func TestCheckMemory(t *testing.T) {
	k, err := kernels.Get("softmax")
	if err != nil {
		t.Fatal(err)
	}
	task := Task{Kernel: k, DType: kernels.F32, Cases: []kernels.Case{{Shape: []int{4, 64}}, {Shape: []int{1 << 20, 4096}}}}
	avail := func(n uint64, ok bool) func() (uint64, string, bool) {
		return func() (uint64, string, bool) { return n, "test", ok }
	}
	err = checkMemory([]Task{task}, avail(1<<30, true))
	var me *MemoryError
	if !errors.As(err, &me) || me.Shape != "1048576x4096" || !strings.Contains(err.Error(), "softmax f32 at shape 1048576x4096 needs at least 96.0 GiB") {
		t.Fatalf("1 GiB available: %v", err)
	}
	if err := checkMemory([]Task{task}, avail(1<<40, true)); err != nil {
		t.Errorf("1 TiB available: %v", err)
	}
	if err := checkMemory([]Task{task}, avail(0, false)); err != nil {
		t.Errorf("unknown memory: %v", err)
	}
}

// The floor's copy bandwidth is the one the params file records for the
// device, unless the run replaces the file's entries or the file has none.
func TestKeepRecordedBandwidth(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "hp.json")
	if err := os.WriteFile(out, []byte(`{"schema_version": 1, "devices": {"cpu:x": {"backend": "cpu", "name": "X", "family": "amd64",
		"facts": {"bandwidth_gbps": 12.5}, "kernels": {}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	measured := map[string]float64{"bandwidth_gbps": 30, "llc_bytes": 1 << 20}
	for _, tt := range []struct {
		name string
		key  string
		cfg  SessionConfig
		want float64
	}{
		{"recorded", "cpu:x", SessionConfig{Out: out}, 12.5},
		{"--replace measures anew", "cpu:x", SessionConfig{Out: out, Replace: true}, 30},
		{"another device", "cpu:y", SessionConfig{Out: out}, 30},
		{"no file", "cpu:x", SessionConfig{Out: filepath.Join(dir, "none.json")}, 30},
	} {
		got := keepRecordedBandwidth(device.DeviceInfo{Key: tt.key, Facts: measured}, tt.cfg)
		if got.Facts["bandwidth_gbps"] != tt.want || got.Facts["llc_bytes"] != 1<<20 {
			t.Errorf("%s: facts %v, want bandwidth %v", tt.name, got.Facts, tt.want)
		}
	}
	if measured["bandwidth_gbps"] != 30 {
		t.Error("the backend's facts were changed")
	}
}
