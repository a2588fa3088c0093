package main

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kerntune/kerntune/params"
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
	if testing.Short() {
		t.Skip("tunes on the CPU for a few seconds")
	}
	out := filepath.Join(t.TempDir(), "hardware_params.json")
	for _, strategy := range []string{"ils", "racing", "anneal", "warm"} {
		code, log := runCLI(t, "tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "64x500", "--budget", "20s,6e", "--strategy", strategy, "--replace", "--out", out)
		if code != 0 {
			t.Fatalf("%s: tune exited %d:\n%s", strategy, code, log)
		}
		f, err := params.ReadFile(out)
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
