package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/report"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner"
	"github.com/kerntune/kerntune/tuner/cpu"
)

// kerntune returns a command running this test binary as kerntune.
func kerntune(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(append(os.Environ(), "KTDEV_AS_KERNTUNE=1"), env...)
	return cmd
}

// candidateKeys are the valid CPU candidates of a softmax shape other than
// the default that have the parameter value where (NAME=VALUE), as tune
// --where selects them.
func candidateKeys(t *testing.T, shape []int, where string) []string {
	t.Helper()
	k, err := kernels.Get("softmax")
	if err != nil {
		t.Fatal(err)
	}
	b, err := cpu.Open()
	if err != nil {
		t.Fatal(err)
	}
	sp, err := tuner.New(b, tuner.Config{}).Space(tuner.Task{Kernel: k, DType: kernels.F32, Cases: []kernels.Case{{Shape: shape}}})
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := k.Space("cpu")
	def := search.Candidate(ps.Defaults()).Key()
	var keys []string
	for _, c := range sp.Enumerate() {
		if c.Key() != def && slices.Contains(strings.Split(c.Key(), ","), where) {
			keys = append(keys, c.Key())
		}
	}
	return keys
}

// A candidate that crashes its worker and one that hangs are recorded as
// crashed and timeout; the run finishes with every other candidate.
func TestTuneIsolatesCrashingCandidates(t *testing.T) {
	if testing.Short() {
		t.Skip("tunes on the CPU for a few seconds")
	}
	// The default's THREADS: a third of the space, default included.
	const where = "THREADS=4"
	keys := candidateKeys(t, []int{16, 300}, where)
	crash, hang := keys[len(keys)/3], keys[2*len(keys)/3]
	t.Setenv("KTDEV_AS_KERNTUNE", "1")
	t.Setenv("KTDEV_FAULT", "crash:"+crash+";hang:"+hang)
	out := filepath.Join(t.TempDir(), "hardware_params.json")
	// The drift guard is off: under load each drift would idle the run for
	// --drift-cooldown, and this test is about faults. The hanging
	// candidate costs --candidate-timeout; a healthy call takes milliseconds.
	code, log := runCLI(t, "tune", "--backend", "cpu", "--isolate", "--candidate-timeout", "1s", "--kernel", "softmax", "--shape", "16x300",
		"--strategy", "exhaustive", "--budget", "2m", "-v", "--out", out, "--drift-every", "0", "--where", where)
	if code != 0 {
		t.Fatalf("tune exited %d:\n%s", code, log)
	}
	for _, want := range []string{crash + " crashed", "index out of range", hang + " timeout", "did not finish within 1s"} {
		if !strings.Contains(log, want) {
			t.Errorf("log does not say %q:\n%s", want, log)
		}
	}
	f, err := paramfile.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Devices {
		e := d.Kernels["softmax"]["f32/16x300"]
		if e == nil || e.Candidates.Failed != 2 || e.Candidates.Measured != len(keys)+1-2 {
			t.Errorf("entry %+v: want every candidate but the two faulty ones measured", e)
		}
	}
}

var measuredLine = regexp.MustCompile(`(?m)^  \S+=\S+\s+[0-9.]+ µs \(n=\d+(, from the journal)?\)$`)

// countMeasured counts the log's measurement lines: live and replayed.
func countMeasured(log string) (live, replayed int) {
	for _, m := range measuredLine.FindAllStringSubmatch(log, -1) {
		if m[1] != "" {
			replayed++
		} else {
			live++
		}
	}
	return live, replayed
}

// countJournal counts the journal's measurements, and those of tasks it
// marks done (a resumed run skips those tasks instead of replaying them).
func countJournal(t *testing.T, path string) (measures, ofDone int) {
	t.Helper()
	return journalCounts(path)
}

// journalCounts is countJournal for the process under test, which has no T.
func journalCounts(path string) (measures, ofDone int) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0
	}
	perTask := map[string]int{}
	done := map[string]bool{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		var rec tuner.Record
		if json.Unmarshal(line, &rec) != nil {
			continue
		}
		key := rec.Kernel + " " + rec.Entry
		switch rec.Kind {
		case tuner.RecordMeasure:
			measures++
			perTask[key]++
		case tuner.RecordDone:
			done[key] = true
		}
	}
	for key := range done {
		ofDone += perTask[key]
	}
	return measures, ofDone
}

// entryShape is what must not depend on an interruption: the entries and
// how many candidates each measured.
func entryShape(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := paramfile.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	shape := map[string]string{}
	for dev, d := range f.Devices {
		for fam, es := range d.Kernels {
			for key, e := range es {
				if e.MedianUS <= 0 || e.Samples == 0 || len(e.Params) == 0 || e.Default == nil {
					t.Errorf("%s %s %s incomplete: %+v", dev, fam, key, e)
				}
				shape[dev+" "+fam+" "+key] = strings.Join([]string{e.Strategy, strconv.Itoa(e.Candidates.Valid), strconv.Itoa(e.Candidates.Measured), strconv.Itoa(e.Candidates.Failed)}, "/")
			}
		}
	}
	return shape
}

// A run killed with SIGKILL part way and resumed measures at most one
// candidate twice and ends with the file a clean run writes.
func TestTuneResumeAfterKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tunes on the CPU several times")
	}
	dir := t.TempDir()
	// The drift guard is off: what it measures again depends on how busy
	// the machine is, and this test counts measurements.
	args := []string{"tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "8x300", "--shape", "16x600", "--shape", "24x900",
		"--strategy", "exhaustive", "--budget", "5m", "-v", "--drift-every", "0",
		// A third of the space: still more than 30 measurements to interrupt.
		"--where", "THREADS=1"}
	clean := filepath.Join(dir, "clean.json")
	cleanStart := time.Now()
	out, err := kerntune(t, nil, append(args, "--out", clean)...).CombinedOutput()
	cleanTook := time.Since(cleanStart)
	if err != nil {
		t.Fatalf("clean run: %v\n%s", err, out)
	}
	total, _ := countMeasured(string(out))
	if total < 30 {
		t.Fatalf("clean run measured %d batches; too few to interrupt:\n%s", total, out)
	}

	path := filepath.Join(dir, "hardware_params.json")
	journal := path + tuner.JournalSuffix
	var log1 bytes.Buffer
	// The run stops itself (SIGSTOP) once half its measurements are
	// journaled, and is killed there: where it is killed does not depend on
	// how soon this process, on a busy machine, gets to look.
	cmd := kerntune(t, []string{fmt.Sprintf("KTDEV_STOP_AT=%d:%s", total/2, journal)}, append(args, "--out", path)...)
	cmd.Stdout, cmd.Stderr = &log1, &log1
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var runErr error
	ended := false
	deadline := time.Now().Add(5*time.Minute + 3*cleanTook)
	for n, _ := countJournal(t, journal); n < total/2 && time.Now().Before(deadline); n, _ = countJournal(t, journal) {
		select {
		case runErr = <-exited:
			ended = true
		case <-time.After(5 * time.Millisecond):
		}
		if ended {
			break
		}
	}
	if !ended {
		cmd.Process.Signal(syscall.SIGKILL)
		runErr = <-exited
	}
	journaled, ofDone := countJournal(t, journal)
	if journaled == 0 || journaled >= total {
		t.Fatalf("killed after %d of %d measurements: not part way (ended by itself: %v, %v); its log:\n%s", journaled, total, ended, runErr, log1.String())
	}

	// Without --resume the journal is not overwritten.
	if out, err := kerntune(t, nil, append(args, "--out", path)...).CombinedOutput(); err == nil || !strings.Contains(string(out), "--resume") {
		t.Errorf("a new run over an interrupted one's journal: %v\n%s", err, out)
	}
	out, err = kerntune(t, nil, append(args, "--out", path, "--resume")...).CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "resuming: the interrupted run spent ") || !strings.Contains(string(out), " of --budget 5m; ") {
		t.Errorf("the resumed run does not say how much of the budget is left:\n%s", out)
	}
	live, replayed := countMeasured(string(out))
	t.Logf("clean run: %d measurements; killed after %d journaled (%d of finished entries); resume replayed %d, measured %d", total, journaled, ofDone, replayed, live)
	if replayed != journaled-ofDone {
		t.Errorf("resume reused %d of the %d journaled measurements of unfinished entries", replayed, journaled-ofDone)
	}
	// Journaled + measured again = the clean run's measurements: the one in
	// flight at the kill is the only one measured twice.
	if journaled+live != total {
		t.Errorf("journaled %d + resumed %d measurements, clean run %d", journaled, live, total)
	}
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Errorf("the journal of the finished run is still there: %v", err)
	}
	got, want := entryShape(t, path), entryShape(t, clean)
	if len(got) != len(want) || len(want) != 3 {
		t.Errorf("entries after resume %v, clean %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: resumed %q, clean %q", k, got[k], v)
		}
	}
}

// Ctrl-C (SIGINT) or SIGTERM stops cleanly: finished entries and the
// partial one are written, the journal stays for --resume, and the exit code
// is 128 + the signal (130, 143); show marks the partial entry.
func TestTuneInterruptWritesWhatIsDone(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tunes on the CPU")
	}
	for _, tt := range []struct {
		sig  os.Signal
		code int
	}{{os.Interrupt, 130}, {syscall.SIGTERM, 143}} {
		t.Run(signalName(tt.sig), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hardware_params.json")
			cmd := kerntune(t, []string{"KTDEV_STOP_AT=10:" + path + tuner.JournalSuffix},
				"tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "8x300", "--shape", "16x600",
				"--strategy", "exhaustive", "--budget", "5m", "--out", path)
			var log bytes.Buffer
			cmd.Stdout, cmd.Stderr = &log, &log
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			signalStopped(t, cmd, tt.sig, &log)
			waitExit(t, cmd, tt.code, &log)
			if len(entryShape(t, path)) == 0 {
				t.Errorf("nothing written after %s:\n%s", tt.sig, log.String())
			}
			for _, want := range []string{"--resume", "interrupted by " + signalName(tt.sig)} {
				if !strings.Contains(log.String(), want) {
					t.Errorf("the log does not say %q:\n%s", want, log.String())
				}
			}
			if _, err := os.Stat(path + tuner.JournalSuffix); err != nil {
				t.Errorf("journal gone after an interruption: %v", err)
			}
			// The interrupted entry is marked partial by show and report.
			partial := ""
			f, err := paramfile.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Devices {
				for key, e := range d.Kernels["softmax"] {
					if e.Stopped == "interrupted" {
						partial = key
					}
				}
			}
			if partial == "" {
				t.Fatalf("no partial entry after %s:\n%s", tt.sig, log.String())
			}
			out, err := kerntune(t, nil, "show", path).CombinedOutput()
			if err != nil || !regexp.MustCompile(regexp.QuoteMeta(partial)+`\s.*PARTIAL \(stopped: interrupted\)`).Match(out) {
				t.Errorf("show does not mark %s partial (%v):\n%s", partial, err, out)
			}
			out, err = kerntune(t, nil, "report", path, "--out", filepath.Join(t.TempDir(), "report"), "--json").Output()
			var rows []report.Row
			if err != nil || json.Unmarshal(out, &rows) != nil {
				t.Fatalf("report --json: %v\n%s", err, out)
			}
			for _, r := range rows {
				if r.Partial != (r.Key == partial) {
					t.Errorf("report row %s: partial %v", r.Key, r.Partial)
				}
			}
		})
	}
}

// signalStopped waits until cmd, started with KTDEV_STOP_AT, has stopped
// itself, then sends sig and lets it go on: where the signal lands does not
// depend on how soon this process, on a busy machine, gets to look.
func signalStopped(t *testing.T, cmd *exec.Cmd, sig os.Signal, log *bytes.Buffer) {
	t.Helper()
	stat := fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		cmd.Process.Kill()
		t.Skip("needs /proc to see the run stop itself")
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		state := procState(stat)
		if state == 'T' {
			break
		}
		if state == 'Z' || state == 0 || time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the run did not stop itself at the journal count KTDEV_STOP_AT gives (state %q):\n%s", state, log.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// procState is the state letter of /proc/PID/stat (0: unreadable).
func procState(stat string) byte {
	data, err := os.ReadFile(stat)
	// The command name in parentheses may hold spaces; the state follows it.
	i := bytes.LastIndexByte(data, ')')
	if err != nil || i < 0 || i+2 >= len(data) {
		return 0
	}
	return data[i+2]
}

// waitExit waits for cmd (signalled to stop) and checks its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd, code int, log *bytes.Buffer) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		if got := cmd.ProcessState.ExitCode(); got != code {
			t.Fatalf("exit code %d, want %d:\n%s", got, code, log.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("tune did not stop within 30 s of the signal:\n%s", log.String())
	}
}

// A tune whose candidates run in a worker opens the device once, in the
// worker: a parent that opened it too would warm the GPU up and measure
// the device's facts twice. Without isolation the parent opens it.
func TestTuneOpensBackendOnce(t *testing.T) {
	for _, tc := range []struct {
		isolate string
		want    string
	}{
		{"--isolate", "process cpu\n"},
		{"--isolate=false", "test cpu\n"},
	} {
		t.Run(tc.isolate, func(t *testing.T) {
			opens := filepath.Join(t.TempDir(), "opens")
			t.Setenv("KTDEV_AS_KERNTUNE", "1") // the worker is this test binary
			t.Setenv("KTDEV_OPENS", opens)
			opened = func(name string) { noteOpen("test", name) }
			t.Cleanup(func() { opened = nil })
			out := filepath.Join(t.TempDir(), "hardware_params.json")
			code, log := runCLI(t, "tune", "--backend", "cpu", tc.isolate, "--kernel", "softmax", "--shape", "16x300",
				"--budget", "20s,2e", "--out", out)
			if code != 0 {
				t.Fatalf("tune exited %d:\n%s", code, log)
			}
			got := testutil.ReadFile(t, opens)
			if string(got) != tc.want {
				t.Errorf("backends opened (by this process: test, by a worker: process):\n%swant\n%s", got, tc.want)
			}
		})
	}
}
