package tuner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/tuner"
)

// openCPU opens the CPU backend for the test's duration.
func openCPU(t *testing.T) tuner.Backend {
	t.Helper()
	b, err := tuner.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// sessionRun tunes softmax on the given shapes on the CPU with cfg and
// returns the summary, the hook calls in order and the error.
func sessionRun(t *testing.T, cfg tuner.SessionConfig, shapes ...[]int) (*tuner.SessionSummary, []string, error) {
	t.Helper()
	b := openCPU(t)
	k, err := kernels.Get("softmax")
	if err != nil {
		t.Fatal(err)
	}
	var tasks []tuner.Task
	for _, s := range shapes {
		tasks = append(tasks, tuner.Task{Kernel: k, DType: kernels.F32, Cases: []kernels.Case{{Shape: s}}})
	}
	var calls []string
	cfg.Hooks = tuner.SessionHooks{
		Begin:   func(t tuner.Task, _ time.Duration) { calls = append(calls, "begin "+t.Key()) },
		End:     func(t tuner.Task) { calls = append(calls, "end "+t.Key()) },
		Tuned:   func(r *tuner.Result, _ time.Duration) { calls = append(calls, "tuned "+r.Task.Key()) },
		Decided: func(t tuner.Task, d *tuner.KeepDecision) { calls = append(calls, d.Action+" "+t.Key()) },
		Failed:  func(t tuner.Task, err error) { calls = append(calls, "failed "+t.Key()) },
		Skipped: func(t tuner.Task) { calls = append(calls, "skipped "+t.Key()) },
	}
	s, err := tuner.OpenSession(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := s.Run(context.Background(), tasks)
	if cerr := s.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	return sum, calls, err
}

// A session tunes the tasks cheapest first, merges each entry into Out as
// it finishes, tells its hooks in order, and removes the journal of a
// completed run; a second run decides by the keep rule.
func TestSessionRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), params.DefaultFileName)
	cfg := tuner.SessionConfig{Config: tuner.Config{Strategy: "ils", Seed: 1, MaxEvals: 3, FinalSamples: 5},
		Out: out, Budget: time.Minute, Generator: "kerntune test", Trace: out + ".trace.jsonl"}
	sum, calls, err := sessionRun(t, cfg, []int{16, 300}, []int{8, 300})
	if err != nil {
		t.Fatal(err)
	}
	want := "begin f32/8x300,end f32/8x300,tuned f32/8x300,added f32/8x300,begin f32/16x300,end f32/16x300,tuned f32/16x300,added f32/16x300"
	if got := strings.Join(calls, ","); got != want {
		t.Errorf("hooks:\n%s\nwant\n%s", got, want)
	}
	if len(sum.Results) != 2 || sum.Count(tuner.KeepAdded) != 2 || sum.Failed != 0 || sum.Interrupted || sum.StoppedEarly {
		t.Errorf("summary %+v", sum)
	}
	f, err := params.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if f.Generator != "kerntune test" || len(f.Devices) != 1 {
		t.Fatalf("file %+v", f)
	}
	for _, d := range f.Devices {
		if len(d.Kernels["softmax"]) != 2 || d.TunedAt == "" {
			t.Errorf("device record %+v", d)
		}
	}
	if _, err := os.Stat(tuner.JournalPath(out)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the journal of a completed run is still there (%v)", err)
	}
	if st, err := os.Stat(cfg.Trace); err != nil || st.Size() == 0 {
		t.Errorf("trace %s: %v", cfg.Trace, err)
	}
	// The file's entries are the incumbents now: each decision names one.
	sum, _, err = sessionRun(t, cfg, []int{8, 300})
	if err != nil {
		t.Fatal(err)
	}
	if d := sum.Decisions[0]; d.Action == tuner.KeepAdded || d.Old == nil || d.Reason == "" {
		t.Errorf("second run's decision %+v: want the file's entry weighed", d)
	}
}

// A budget that measures only the default is no result: the session
// stops with a TooSmallError, writes nothing and leaves no journal.
func TestSessionTooSmall(t *testing.T) {
	out := filepath.Join(t.TempDir(), params.DefaultFileName)
	cfg := tuner.SessionConfig{Config: tuner.Config{Strategy: "ils", MaxEvals: 1, FinalSamples: 5}, Out: out, Budget: time.Minute}
	_, _, err := sessionRun(t, cfg, []int{8, 300}, []int{16, 300})
	var small *tuner.TooSmallError
	if !errors.As(err, &small) || !small.EvaluationsSpent() || small.Entries != 2 || !strings.Contains(err.Error(), "measured only the default") {
		t.Fatalf("error %v, want a TooSmallError of the evaluation budget with 2 entries left", err)
	}
	for _, p := range []string{out, tuner.JournalPath(out)} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after a run that was too small (%v)", p, err)
		}
	}
}

// A journal of an interrupted run is in the way of a new session and
// missing for a resumed one; errors.Is tells which.
func TestOpenSessionJournal(t *testing.T) {
	b := openCPU(t)
	out := filepath.Join(t.TempDir(), params.DefaultFileName)
	if _, err := tuner.OpenSession(b, tuner.SessionConfig{Out: out, Resume: true}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("resume without a journal: %v", err)
	}
	s, err := tuner.OpenSession(b, tuner.SessionConfig{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tuner.OpenSession(b, tuner.SessionConfig{Out: out}); !errors.Is(err, os.ErrExist) {
		t.Errorf("a second session over the same journal: %v", err)
	}
	if s.JournalPath() != tuner.JournalPath(out) {
		t.Errorf("journal %s, want %s", s.JournalPath(), tuner.JournalPath(out))
	}
	s.Close() // not completed: the journal stays for a resume
	if _, err := os.Stat(tuner.JournalPath(out)); err != nil {
		t.Errorf("the journal of a run that did not complete is gone: %v", err)
	}
}
