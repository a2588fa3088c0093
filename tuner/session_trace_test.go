package tuner_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kerntune/kerntune/internal/trace"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner"
	"github.com/kerntune/kerntune/tuner/device"
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

// timedBuilds is a backend whose compile pool reports each Build as a
// quarter second of its time (device.BuildTimer).
type timedBuilds struct {
	device.Backend
	builds atomic.Int64
}

func (b *timedBuilds) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (device.Program, error) {
	b.builds.Add(1)
	return b.Backend.Build(k, dt, c)
}

func (b *timedBuilds) BuildSeconds() float64 { return 0.25 * float64(b.builds.Load()) }

// An entry's result and its trace line carry the compile pool's time
// while the entry ran, so that a wait for builds can be set against it.
func TestTraceEntryBuildSeconds(t *testing.T) {
	b := &timedBuilds{Backend: openCPU(t)}
	k, err := kernels.Get("softmax")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), paramfile.DefaultFileName)
	cfg := tuner.SessionConfig{Config: tuner.Config{Strategy: "ils", Seed: 1, MaxEvals: 3, FinalSamples: 5},
		Out: out, Budget: time.Minute, Trace: out + ".trace.jsonl"}
	s, err := tuner.OpenSession(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := s.Run(context.Background(), []tuner.Task{{Kernel: k, DType: kernels.F32, Cases: []kernels.Case{{Shape: []int{8, 300}}}}})
	if cerr := s.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	want := 0.25 * float64(b.builds.Load())
	if len(sum.Results) != 1 || want == 0 || sum.Results[0].BuildS != want {
		t.Fatalf("results %+v: want one with BuildS %g", sum.Results, want)
	}
	f, err := os.Open(cfg.Trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := trace.ReadEntries(f)
	if err != nil || len(entries) != 1 || entries[0].BuildS != want {
		t.Errorf("entry lines %+v (%v): want one with build_s %g", entries, err, want)
	}
}
