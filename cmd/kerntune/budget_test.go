package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/tuner"
)

func TestParseBudget(t *testing.T) {
	tests := []struct {
		in    string
		wall  time.Duration
		evals int
		ok    bool
	}{
		{"3m", 3 * time.Minute, 0, true},
		{"200e", noWallLimit, 200, true},
		{"200evals", noWallLimit, 200, true},
		{"3m,200e", 3 * time.Minute, 200, true},
		{"50e, 90s", 90 * time.Second, 50, true},
		{"", 0, 0, false},
		{"0s", 0, 0, false},
		{"-1m", 0, 0, false},
		{"0e", 0, 0, false},
		{"1e", 0, 0, false},
		{"2e", noWallLimit, 2, true},
		{"xe", 0, 0, false},
		{"3m,4m", 0, 0, false},
		{"5e,6e", 0, 0, false},
		{"3m,5e,6e", 0, 0, false},
		{"three", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			wall, evals, err := parseBudget(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("parseBudget(%q) error %v, want ok=%v", tt.in, err, tt.ok)
			}
			if err != nil {
				var ue usageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--budget") {
					t.Errorf("error %q is not a usage error naming --budget", err)
				}
				return
			}
			if wall != tt.wall || evals != tt.evals {
				t.Errorf("parseBudget(%q) = %s, %d; want %s, %d", tt.in, wall, evals, tt.wall, tt.evals)
			}
		})
	}
}

// Tuning with an evaluation budget stops there and records it; the warm
// strategy then starts from the entry just written (--replace: each run's
// entry is written, whatever the keep rule would choose).
func TestTuneEvaluationBudgetCPU(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tunes on the CPU for a few seconds")
	}
	out := filepath.Join(t.TempDir(), "hardware_params.json")
	for _, strategy := range []string{"ils", "racing", "anneal", "warm"} {
		code, log := runCLI(t, "tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "64x500", "--budget", "20s,6e", "--strategy", strategy, "--replace", "--out", out)
		if code != 0 {
			t.Fatalf("%s: tune exited %d:\n%s", strategy, code, log)
		}
		f, err := paramfile.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Devices {
			e := d.Kernels["softmax"]["f32/64x500"]
			if e == nil || e.Strategy != strategy || e.Evaluations == 0 || e.Evaluations > 6 || e.Candidates.Measured+e.Candidates.Failed > 6 {
				raw, _ := json.Marshal(e)
				t.Fatalf("%s: entry %s", strategy, raw)
			}
			if e.Candidates.Valid > 6 && e.Stopped != "evaluation budget spent" {
				t.Errorf("%s: %d valid candidates, 6 evaluations, stopped %q", strategy, e.Candidates.Valid, e.Stopped)
			}
		}
	}
	if code, log := runCLI(t, "tune", "--backend", "cpu", "--kernel", "softmax", "--budget", "10x", "--out", out); code != exitUsage || !strings.Contains(log, "--budget") {
		t.Errorf("bad --budget: exit %d, %s", code, log)
	}
}

// A wall-time budget the plan does not fit is refused before any work
// (exit 2, no file, no journal), naming a budget that then tunes every
// entry; with one family it does not suggest tuning that family alone.
//
// Not parallel: the advice comes from timing the plan, and the advised run
// should find the machine as busy as planning did, not busier with this
// package's tuning tests beside it (other packages' test binaries may still
// run beside it: see the second run below).
func TestTuneBudgetAdviceWorks(t *testing.T) {
	if testing.Short() {
		t.Skip("tunes two small softmax entries on the CPU")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "hardware_params.json")
	args := []string{"tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "64x500", "--shape", "256x1000"}
	code, log := runCLI(t, append(args, "--out", out, "--budget", "1ms")...)
	if code != exitUsage || !strings.Contains(log, "--budget 1ms is too small") || strings.Contains(log, "--kernel") {
		t.Fatalf("exit %d, want %d naming --budget and no --kernel advice:\n%s", code, exitUsage, log)
	}
	advice := regexp.MustCompile(`give --budget (\S+) or more`)
	m := advice.FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no budget named:\n%s", log)
	}
	for _, p := range []string{out, out + tuner.JournalSuffix} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after a refused budget (%v)", p, err)
		}
	}
	// The advised run may find the machine busier than planning did (other
	// test binaries start beside it, and the race detector's cost varies
	// with them): a user then follows the advice again. What must hold is
	// that following the advice converges: a run that falls short either
	// names a larger budget (exit 2) or is tried again with the same one,
	// and one of three runs tunes every entry to its minimum.
	budget := m[1]
	var short []string
	for attempt := range 3 {
		o := filepath.Join(dir, fmt.Sprintf("advised%d.json", attempt))
		code, log = runCLI(t, append(slices.Clip(args), "--out", o, "--budget", budget)...)
		if code == exitUsage {
			next := advice.FindStringSubmatch(log)
			if next == nil || !longer(t, next[1], budget) {
				t.Fatalf("the advised --budget %s fell short and did not name a larger one:\n%s", budget, log)
			}
			t.Logf("advised run %d: --budget %s fell short; it advises %s", attempt+1, budget, next[1])
			short, budget = []string{"exit 2 with --budget " + budget}, next[1]
			continue
		}
		if code != 0 {
			t.Fatalf("the advised --budget %s: exit %d:\n%s", budget, code, log)
		}
		f, err := paramfile.ReadFile(o)
		if err != nil {
			t.Fatal(err)
		}
		short = nil
		for _, d := range f.Devices {
			for key, e := range d.Kernels["softmax"] {
				if min := min(e.Candidates.Valid, 1+tuner.DefaultMinBeyondDefault); e.Candidates.Measured < min {
					short = append(short, fmt.Sprintf("%s measured %d candidates with the advised budget %s, want %d", key, e.Candidates.Measured, budget, min))
				}
			}
		}
		if len(short) == 0 {
			return
		}
		t.Logf("advised run %d: %v", attempt+1, short)
	}
	t.Error(strings.Join(short, "; "))
}

// longer reports whether budget a names more wall time than b (both as
// --budget takes them).
func longer(t *testing.T, a, b string) bool {
	t.Helper()
	wa, _, err := parseBudget(a)
	if err != nil {
		t.Fatalf("advised budget %q: %v", a, err)
	}
	wb, _, err := parseBudget(b)
	if err != nil {
		t.Fatalf("advised budget %q: %v", b, err)
	}
	return wa > wb
}

// --extend makes the budget the plan refuses a target: the run takes the
// time the entries need, exits 0, says how much more it took, and every
// entry measures its default and DefaultMinBeyondDefault more (or its space).
func TestTuneExtendTakesWhatThePlanNeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("tunes two small softmax entries on the CPU")
	}
	out := filepath.Join(t.TempDir(), "hardware_params.json")
	code, log := runCLI(t, "tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "64x500", "--shape", "256x1000",
		"--out", out, "--budget", "1ms", "--extend")
	if code != 0 || !strings.Contains(log, "--extend adds") || !strings.Contains(log, "past --budget 1ms") {
		t.Fatalf("--budget 1ms --extend: exit %d, want 0 and the extension said:\n%s", code, log)
	}
	// The plan's numbers add up: what is left plus the extension is what the
	// run takes, and the extension covers the need.
	m := regexp.MustCompile(`need about (\S+); --budget 1ms leaves (\S+) after planning .* --extend adds (\S+) .* the run takes about (\S+) more`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no plan line with the extension:\n%s", log)
	}
	var d [4]time.Duration
	for i := range d {
		var err error
		if d[i], err = time.ParseDuration(m[i+1]); err != nil {
			t.Fatalf("plan line %q: %v", m[0], err)
		}
	}
	need, left, ext, takes := d[0], d[1], d[2], d[3]
	if diff := left + ext - takes; diff < -200*time.Millisecond || diff > 200*time.Millisecond || left+ext < need {
		t.Errorf("plan line does not add up (left %v + extension %v vs takes %v, need %v): %q", left, ext, takes, need, m[0])
	}
	f, err := paramfile.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range f.Devices {
		for key, e := range d.Kernels["softmax"] {
			n++
			if min := min(e.Candidates.Valid, 1+tuner.DefaultMinBeyondDefault); e.Candidates.Measured < min {
				t.Errorf("%s measured %d candidates, want %d", key, e.Candidates.Measured, min)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d softmax entries written, want 2", n)
	}
}

// The advice after an entry ran out of time names a budget above the one
// that failed (a resumed run's too), and --kernel only when the run had
// several families.
func TestBudgetTooSmallAdvice(t *testing.T) {
	k, err := kernels.Get("gemv_nt")
	if err != nil {
		t.Fatal(err)
	}
	res := &tuner.Result{Task: tuner.Task{Kernel: k, DType: kernels.F32, Class: "largeN"}, Stopped: "budget spent"}
	for _, tt := range []struct {
		name     string
		budget   time.Duration
		families int
		written  int
		want     string
		kernel   bool
	}{
		{"one family", time.Minute, 1, 3, "give --budget 1m15s or more", false},
		{"several families", 3 * time.Minute, 5, 19, "give --budget 3m15s or more", true},
		{"nothing else written", 2 * time.Second, 5, 0, "give --budget 17s or more", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := &tuner.TooSmallError{Result: res, Entries: 1, Skipped: []string{"gemv_nt f32/largeN"}, Written: tt.written, Needed: 10 * time.Second}
			msg := budgetTooSmall(tt.budget.String(), tt.budget, e, tt.families, tuner.DefaultMinBeyondDefault).Error()
			if !strings.Contains(msg, tt.want) || strings.Contains(msg, "--kernel gemv_nt") != tt.kernel {
				t.Errorf("%s", msg)
			}
		})
	}
}
