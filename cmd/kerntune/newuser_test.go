package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/tuner"
)

// What a new user gets wrong: each case exits 2 with a message naming the
// problem, and no existing file is changed.
func TestTuneNewUserErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	valid := `{"schema_version": 1, "devices": {}}`
	write := func(name, content string) string { return testutil.WriteFile(t, dir, name, content) }
	v2 := write("v2/hardware_params.json", `{"schema_version": 2, "devices": {}}`)
	withJournal := write("interrupted/hardware_params.json", valid)
	write("interrupted/hardware_params.json"+tuner.JournalSuffix, `{"kind":"plan"}`+"\n")
	spent := write("spent/hardware_params.json", valid)
	write("spent/hardware_params.json"+tuner.JournalSuffix, `{"kind":"session","budget_s":2,"elapsed_s":3}`+"\n")
	fresh := filepath.Join(dir, "fresh", "hardware_params.json")
	os.MkdirAll(filepath.Dir(fresh), 0o755)
	readOnly := filepath.Join(dir, "ro")
	os.MkdirAll(readOnly, 0o555)
	if os.Geteuid() == 0 {
		// root writes anywhere it may chmod; /proc refuses new files even to root.
		readOnly = "/proc"
	}
	cpu := []string{"tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "8x300", "--budget", "2s"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"read-only output directory", append(cpu, "--out", filepath.Join(readOnly, "hardware_params.json")), "is not writable"},
		{"missing output directory", append(cpu, "--out", filepath.Join(dir, "no", "such", "x.json")), "no such file or directory"},
		{"output is a directory", append(cpu, "--out", dir), "is a directory"},
		{"file of another schema version", append(cpu, "--out", v2), "schema_version"},
		{"resume without a journal", append(cpu, "--out", fresh, "--resume"), "no journal"},
		{"journal of an interrupted run", append(cpu, "--out", withJournal), "finish that run with --resume"},
		{"zero candidate timeout", append(cpu, "--out", fresh, "--candidate-timeout", "0s"), "--candidate-timeout must be positive"},
		{"malformed duration", append(cpu, "--out", fresh, "--candidate-timeout", "soon"), "invalid argument"},
		{"bad boolean", append(cpu, "--out", fresh, "--isolate=maybe"), `--isolate "maybe": must be true or false`},
		{"budget without unit", append(cpu, "--out", fresh, "--budget", "10"), `--budget "10"`},
		{"-v and -q together", append(cpu, "--out", fresh, "-v", "-q"), "-v/--verbose and -q/--quiet together"},
		{"resume with the budget spent", append(cpu, "--out", spent, "--resume"), "--resume: the interrupted run already spent 3s of its 2s budget"},
		{"missing flag value", []string{"tune", "--out"}, "flag needs an argument"},
		{"stray argument", []string{"tune", "gemv_nt"}, "unknown command"},
	}
	before := map[string]string{}
	for _, p := range []string{v2, withJournal, withJournal + tuner.JournalSuffix, spent, spent + tuner.JournalSuffix} {
		before[p] = string(testutil.ReadFile(t, p))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantExit(t, tt.args, exitUsage, tt.want)
		})
	}
	for p, want := range before {
		testutil.Unchanged(t, p, want)
	}
	if _, err := os.Stat(fresh); err == nil {
		t.Errorf("%s was created by a run that was refused", fresh)
	}
}

// A write error (a full disk, simulated by a file size limit) stops the run
// with exit 2 and a message naming the file; the existing --out is intact.
func TestTuneWriteErrorKeepsFile(t *testing.T) {
	if testing.Short() {
		t.Skip("tunes on the CPU")
	}
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("needs Linux for RLIMIT_FSIZE")
	}
	const valid = `{"schema_version": 1, "devices": {}}`
	path := testutil.WriteFile(t, t.TempDir(), "hardware_params.json", valid)
	cmd := kerntune(t, []string{"KTDEV_FSIZE=600"}, "tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "8x300", "--budget", "20s", "--out", path)
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != exitUsage {
		t.Fatalf("exit code %d (%v), want %d:\n%s", code, err, exitUsage, out)
	}
	if !strings.Contains(string(out), "file too large") || !strings.Contains(string(out), path) {
		t.Errorf("the message does not name the file and the error:\n%s", out)
	}
	testutil.Unchanged(t, path, valid)
}
