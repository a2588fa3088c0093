package tuner_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kerntune/kerntune/internal/trace"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/tuner"
)

// Every trace line names its run, and the file's entry has the time object
// of its run's entry line: two runs appended to one trace stay apart, and
// the entry the file kept is tied to its own run's records.
func TestSessionTraceNamesRuns(t *testing.T) {
	out := filepath.Join(t.TempDir(), paramfile.DefaultFileName)
	cfg := tuner.SessionConfig{Config: tuner.Config{Strategy: "ils", Seed: 1, MaxEvals: 3, FinalSamples: 5},
		Out: out, Budget: time.Minute, Trace: out + ".trace.jsonl"}
	for range 2 {
		if _, _, err := sessionRun(t, cfg, []int{8, 300}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := trace.ReadFile(cfg.Trace)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(cfg.Trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := trace.ReadEntries(f)
	if err != nil || len(entries) != 2 || entries[0].Run == entries[1].Run {
		t.Fatalf("entry lines %+v (%v): want two, of two runs", entries, err)
	}
	for _, r := range recs {
		if r.Run != entries[0].Run && r.Run != entries[1].Run {
			t.Errorf("record %+v names no run of the trace", r)
		}
		if _, err := time.Parse(time.RFC3339Nano, r.Run); err != nil {
			t.Errorf("record's run %q: %v", r.Run, err)
		}
	}
	pf, err := paramfile.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	tied := 0
	for _, d := range pf.Devices {
		e := d.Kernels["softmax"]["f32/8x300"]
		for _, en := range entries {
			if e != nil && e.Time != nil && *en.Time == *e.Time {
				tied++
			}
		}
	}
	if tied != 1 {
		t.Errorf("the file's entry has the time object of %d entry lines, want 1", tied)
	}
}
