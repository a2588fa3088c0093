package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/tuner"
)

// readEntry is the file's entry for a kernel and key on its only device.
func readEntry(t *testing.T, path, kernel, key string) *paramfile.Entry {
	t.Helper()
	f, err := paramfile.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Devices {
		return d.Kernels[kernel][key]
	}
	return nil
}

// parseTuneJSON reads tune --json output.
func parseTuneJSON(t *testing.T, out []byte) tunedJSON {
	t.Helper()
	var tj tunedJSON
	testutil.DecodeJSON(t, out, &tj)
	return tj
}

// checkNotLowered checks the keep rule's promise for one entry: the file's
// entry before a run (old) is either still there unchanged, or was replaced
// by the run's entry because that was complete and measured at least as
// many candidates, or was faster beyond noise in the run's own timing.
func checkNotLowered(t *testing.T, old, now *paramfile.Entry, te tunedEntry) {
	t.Helper()
	d := te.Decision
	if d == nil {
		t.Fatalf("%s: no decision reported", te.Key)
	}
	t.Logf("%s: %s %s", te.Key, d.Action, d.Reason)
	switch d.Action {
	case tuner.KeepKept:
		if !reflect.DeepEqual(old, now) {
			t.Errorf("%s: reported kept, but the entry changed:\nold %+v\nnow %+v", te.Key, old, now)
		}
		if d.Old == nil || !paramfile.SameParams(d.Old.Params, old.Params) {
			t.Errorf("%s: the decision names %+v, the file held %v", te.Key, d.Old, old.Params)
		}
	case tuner.KeepReplaced:
		if !reflect.DeepEqual(te.Entry, now) {
			t.Errorf("%s: reported replaced, but the file does not hold the run's entry", te.Key)
		}
		faster := strings.Contains(d.Reason, "faster in this run's interleaved timing") && d.NewRetimedUS < d.OldRetimedUS*(1-tuner.NoiseMinGain)
		complete := !paramfile.Partial(now) && now.Candidates.Measured >= old.Candidates.Measured
		if !faster && !complete {
			t.Errorf("%s: a %s entry measuring %d candidates replaced one measuring %d (%s)",
				te.Key, orDash(now.Stopped), now.Candidates.Measured, old.Candidates.Measured, d.Reason)
		}
	default:
		t.Errorf("%s: action %q for an entry the file held", te.Key, d.Action)
	}
}

// Re-running tune over a complete entry with a 1 ns budget, a 5 s budget
// or a short trial never lowers it; --replace forces the new entry.
func TestTuneNeverLowersAnEntry(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tunes on the CPU")
	}
	out := filepath.Join(t.TempDir(), "hardware_params.json")
	// gemv_nt f32 has a baseline on the CPU (gonum), so entries record use.
	// The drift guard is off: the tests beside this one load the machine,
	// and each drift they cause would idle the run for --drift-cooldown.
	// --where keeps a quarter of the space, so the exhaustive run is short.
	tune := []string{"tune", "--backend", "cpu", "--kernel", "gemv_nt", "--shape", "1x96x200", "-q", "--json", "--out", out, "--drift-every", "0",
		"--where", "UNROLL=4"}
	const key = "f32/1x96x200"
	code, log := runCLI(t, append(tune, "--strategy", "exhaustive", "--budget", "2m")...)
	if code != 0 {
		t.Fatalf("complete run exited %d:\n%s", code, log)
	}
	first := parseTuneJSON(t, []byte(log))
	if len(first.Entries) != 1 || first.Entries[0].Decision.Action != tuner.KeepAdded {
		t.Fatalf("first run: %s", log)
	}
	complete := readEntry(t, out, "gemv_nt", key)
	if complete.Candidates.Measured != complete.Candidates.Valid || complete.Stopped != "" {
		t.Fatalf("the exhaustive run is not complete: %+v", complete.Candidates)
	}
	if complete.Use != "baseline" && complete.Use != "tuned" {
		t.Errorf("entry with a baseline records use %q", complete.Use)
	}

	t.Run("1ns", func(t *testing.T) {
		before := testutil.ReadFile(t, out)
		code, log := runCLI(t, append(tune, "--budget", "1ns")...)
		if code != exitUsage || !strings.Contains(log, "--budget 1ns is too small") || !strings.Contains(log, "only the default") {
			t.Errorf("exit %d, want %d with a message naming --budget:\n%s", code, exitUsage, log)
		}
		testutil.Unchanged(t, out, string(before))
		if _, err := os.Stat(out + tuner.JournalSuffix); err == nil {
			t.Errorf("a refused run left its journal, which would block the next run")
		}
	})
	for _, budget := range []string{"5s", "5s,4e"} {
		t.Run(budget, func(t *testing.T) {
			old := readEntry(t, out, "gemv_nt", key)
			code, log := runCLI(t, append(tune, "--budget", budget)...)
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, log)
			}
			tj := parseTuneJSON(t, []byte(log))
			if len(tj.Entries) != 1 {
				t.Fatalf("entries %+v", tj.Entries)
			}
			checkNotLowered(t, old, readEntry(t, out, "gemv_nt", key), tj.Entries[0])
		})
	}
	t.Run("--replace", func(t *testing.T) {
		code, log := runCLI(t, append(tune, "--budget", "5s,3e", "--replace")...)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, log)
		}
		d := parseTuneJSON(t, []byte(log)).Entries[0].Decision
		now := readEntry(t, out, "gemv_nt", key)
		if d.Action != tuner.KeepReplaced || d.Reason != "--replace" || now.Candidates.Measured > 3 {
			t.Errorf("decision %+v, entry measured %d: want the 3-evaluation entry written", d, now.Candidates.Measured)
		}
	})
}

// An interrupted run (SIGINT) exits 130 and never lowers the complete
// entries already in the file; its partial entry is kept out unless it is
// faster in the run's own timing.
func TestTuneInterruptedNeverLowers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tunes on the CPU")
	}
	path := filepath.Join(t.TempDir(), "hardware_params.json")
	args := []string{"tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "8x300", "--shape", "16x600",
		"--strategy", "exhaustive", "--budget", "5m", "--json", "--out", path,
		// The interrupt is placed by counting journal lines; the drift
		// guard's re-measurements depend on the machine's load.
		"--drift-every", "0",
		// A third of the space: two entries are still worth interrupting.
		"--where", "THREADS=1"}
	if out, err := kerntune(t, nil, args...).CombinedOutput(); err != nil {
		t.Fatalf("complete run: %v\n%s", err, out)
	}
	old := map[string]*paramfile.Entry{}
	for _, key := range []string{"f32/8x300", "f32/16x600"} {
		old[key] = readEntry(t, path, "softmax", key)
	}
	valid := old["f32/8x300"].Candidates.Valid

	// Interrupt part way through the second entry.
	cmd := kerntune(t, []string{fmt.Sprintf("KTDEV_STOP_AT=%d:%s", valid+10, path+tuner.JournalSuffix)}, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	signalStopped(t, cmd, os.Interrupt, &stderr)
	waitExit(t, cmd, 130, &stderr)

	tj := parseTuneJSON(t, stdout.Bytes())
	partials := 0
	for _, te := range tj.Entries {
		if te.Stopped == "interrupted" {
			partials++
		}
		checkNotLowered(t, old[te.Key], readEntry(t, path, "softmax", te.Key), te)
	}
	if partials != 1 {
		t.Errorf("%d partial entries in the interrupted run, want 1:\n%s", partials, stderr.String())
	}
}
