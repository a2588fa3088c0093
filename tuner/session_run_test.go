package tuner_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/tuner"
	"github.com/kerntune/kerntune/tuner/device"
)

// openCPU opens the CPU backend for the test's duration.
func openCPU(t *testing.T) device.Backend {
	t.Helper()
	b, err := device.Open("cpu")
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
	out := filepath.Join(t.TempDir(), paramfile.DefaultFileName)
	cfg := tuner.SessionConfig{Config: tuner.Config{Strategy: "ils", Seed: 1, MaxEvals: 3, FinalSamples: 5},
		Out: out, Budget: time.Minute, Generator: "kerntune test", Trace: out + ".trace.jsonl"}
	// 64 rows against 8: a need 8 times larger, an order that the
	// probe's noise on a loaded machine does not flip.
	sum, calls, err := sessionRun(t, cfg, []int{64, 300}, []int{8, 300})
	if err != nil {
		t.Fatal(err)
	}
	// A planned run: the larger need first.
	want := "begin f32/64x300,end f32/64x300,tuned f32/64x300,added f32/64x300,begin f32/8x300,end f32/8x300,tuned f32/8x300,added f32/8x300"
	if got := strings.Join(calls, ","); got != want {
		t.Errorf("hooks:\n%s\nwant\n%s", got, want)
	}
	if len(sum.Results) != 2 || sum.Count(tuner.KeepAdded) != 2 || sum.Failed != 0 || sum.Interrupted || sum.StoppedEarly {
		t.Errorf("summary %+v", sum)
	}
	f, err := paramfile.ReadFile(out)
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
// tries every entry (one too-small entry does not cost the others theirs),
// then returns a TooSmallError naming each, writes nothing and leaves no
// journal.
func TestSessionTooSmall(t *testing.T) {
	out := filepath.Join(t.TempDir(), paramfile.DefaultFileName)
	cfg := tuner.SessionConfig{Config: tuner.Config{Strategy: "ils", MaxEvals: 1, FinalSamples: 5}, Out: out, Budget: time.Minute}
	_, calls, err := sessionRun(t, cfg, []int{8, 300}, []int{16, 300})
	var small *tuner.TooSmallError
	if !errors.As(err, &small) || !small.EvaluationsSpent() || small.Entries != 2 || len(small.Skipped) != 2 || small.Written != 0 ||
		!strings.Contains(err.Error(), "measured only the default") || !strings.Contains(err.Error(), "nor for 1 more") {
		t.Fatalf("error %v, want a TooSmallError of the evaluation budget naming both entries", err)
	}
	if got := strings.Join(calls, "; "); strings.Count(got, "failed ") != 2 || strings.Contains(got, "tuned ") {
		t.Errorf("hook calls %q, want both entries tried and reported as failed, none tuned", got)
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
	out := filepath.Join(t.TempDir(), paramfile.DefaultFileName)
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

// journalTimes reads what a journal records of the session's time: the
// budgets of its session records and the largest elapsed_s.
func journalTimes(t *testing.T, path string) (budgets []float64, sessionElapsed []float64, spent float64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec tuner.Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			continue
		}
		if rec.Kind == tuner.RecordSession {
			budgets = append(budgets, rec.BudgetS)
			sessionElapsed = append(sessionElapsed, rec.ElapsedS)
		}
		spent = max(spent, rec.ElapsedS)
	}
	return budgets, sessionElapsed, spent
}

// A resumed run goes on with the budget the interrupted run left, not a
// fresh one: the journal records the budget and stamps every record with
// the session's wall time, interrupted runs included; a run whose budget
// is spent cannot be resumed without a larger one.
func TestSessionResumeKeepsBudget(t *testing.T) {
	b := openCPU(t)
	k, err := kernels.Get("softmax")
	if err != nil {
		t.Fatal(err)
	}
	var tasks []tuner.Task
	for _, s := range [][]int{{8, 300}, {16, 300}, {24, 300}} {
		tasks = append(tasks, tuner.Task{Kernel: k, DType: kernels.F32, Cases: []kernels.Case{{Shape: s}}})
	}
	out := filepath.Join(t.TempDir(), paramfile.DefaultFileName)
	journal := tuner.JournalPath(out)
	const budget = time.Minute
	// run tunes, interrupting after stopAfter tasks of this run (0: never),
	// and returns the share of the budget each task was given.
	run := func(resume bool, stopAfter int) []time.Duration {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var shares []time.Duration
		cfg := tuner.SessionConfig{Config: tuner.Config{Strategy: "ils", Seed: 1, MaxEvals: 3, FinalSamples: 5},
			Out: out, Budget: budget, Resume: resume, Generator: "kerntune test",
			Hooks: tuner.SessionHooks{
				Begin: func(_ tuner.Task, share time.Duration) { shares = append(shares, share) },
				Decided: func(tuner.Task, *tuner.KeepDecision) {
					if len(shares) == stopAfter {
						cancel()
					}
				},
			}}
		s, err := tuner.OpenSession(b, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Run(ctx, tasks); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return shares
	}
	// checkShare: the first task of a resumed run gets what is left of the
	// budget over the tasks left, not a share of a fresh budget (planned,
	// with two left: its need and half the slack, within a second of half
	// of what is left for these small entries).
	checkShare := func(got time.Duration, spent float64, left int) {
		t.Helper()
		want := (budget - time.Duration(spent*float64(time.Second))) / time.Duration(left)
		if got > want+time.Second || got < want-time.Second {
			t.Errorf("share %v; want about %v (%.3fs of %v spent, %d tasks left)", got, want, spent, budget, left)
		}
	}

	run(false, 1)
	budgets, sessions, spent1 := journalTimes(t, journal)
	if len(budgets) != 1 || budgets[0] != budget.Seconds() || sessions[0] != 0 || spent1 <= 0 {
		t.Fatalf("after the first run: session budgets %v, elapsed %v, spent %.3fs; want one session record of %v and time spent", budgets, sessions, spent1, budget)
	}
	shares := run(true, 1)
	checkShare(shares[0], spent1, 2)
	budgets, sessions, spent2 := journalTimes(t, journal)
	if len(budgets) != 2 || sessions[1] < spent1 || spent2 <= spent1 {
		t.Fatalf("after the resumed run: session elapsed %v, spent %.3fs; want the second session to start at %.3fs and the time to add up", sessions, spent2, spent1)
	}
	shares = run(true, 0)
	checkShare(shares[0], spent2, 1)
	if _, err := os.Stat(journal); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the journal of the finished run is still there: %v", err)
	}

	// An interrupted run that spent its whole budget.
	if err := os.WriteFile(journal, []byte(`{"kind":"session","device":"","kernel":"","entry":"","budget_s":60,"elapsed_s":61.5}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := tuner.OpenSession(b, tuner.SessionConfig{Config: tuner.Config{Strategy: "ils"}, Out: out, Budget: budget, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if spent, recorded := s.Resumed(); spent != 61500*time.Millisecond || recorded != budget {
		t.Errorf("Resumed() = %v, %v; want 1m1.5s, 1m0s", spent, recorded)
	}
	_, err = s.Run(context.Background(), tasks)
	var bs *tuner.BudgetSpentError
	if !errors.As(err, &bs) || bs.Spent != 61500*time.Millisecond || !strings.Contains(err.Error(), "already spent 1m1.5s of its 1m0s budget") {
		t.Errorf("resume with the budget spent: %v", err)
	}
	s.Close()
	if _, err := os.Stat(journal); err != nil {
		t.Errorf("the journal went with the refused run: %v", err)
	}
}

// WarmSiblings: the family's entry of another class in Out is measured
// right after the default, whatever the strategy.
func TestSessionWarmSiblings(t *testing.T) {
	out := filepath.Join(t.TempDir(), paramfile.DefaultFileName)
	var seen []string
	cfg := tuner.SessionConfig{Config: tuner.Config{Strategy: "bo", Seed: 1, MaxEvals: 3, FinalSamples: 3,
		Progress: func(e tuner.Event) {
			if !slices.Contains(seen, e.Candidate) {
				seen = append(seen, e.Candidate)
			}
		}}, Out: out, Budget: tuner.NoWallTime, Generator: "kerntune test"}
	if _, _, err := sessionRun(t, cfg, []int{64, 300}); err != nil {
		t.Fatal(err)
	}
	if len(seen) < 2 {
		t.Fatalf("the first run measured %v, want at least 2 candidates", seen)
	}
	// The sibling entry: a candidate the first run measured, not the
	// default, written as the entry's parameters.
	sibling := seen[len(seen)-1]
	var doc map[string]any
	if err := json.Unmarshal(testutil.ReadFile(t, out), &doc); err != nil {
		t.Fatal(err)
	}
	ps := map[string]any{}
	for _, kv := range strings.Split(sibling, ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("candidate key %q: %v", sibling, err)
		}
		ps[k] = n
	}
	for _, d := range doc["devices"].(map[string]any) {
		d.(map[string]any)["kernels"].(map[string]any)["softmax"].(map[string]any)["f32/64x300"].(map[string]any)["params"] = ps
	}
	text, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, text, 0o644); err != nil {
		t.Fatal(err)
	}
	seen = nil
	cfg.MaxEvals, cfg.WarmSiblings = 2, 1
	if _, _, err := sessionRun(t, cfg, []int{64, 200}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[1] != sibling {
		t.Errorf("measured %v, want the default, then the sibling entry's %s", seen, sibling)
	}
}
