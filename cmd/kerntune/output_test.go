package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/tuner"
)

// A bad output location exits 2 (as docs/reference/cli.md promises for every
// command), with a message naming the flag and the path, and nothing is
// written: a missing directory, a directory or device where a file is
// wanted, a file where report wants a directory.
func TestBadOutputExits2(t *testing.T) {
	path := getEnv(t) // a valid params file
	dir := t.TempDir()
	missing := filepath.Join(dir, "no", "such", "out.json")
	manifest := testutil.WriteFile(t, dir, "variants.json", `[{"name": "gemv_bn64", "enabled": true}, {"name": "gemv_bn32", "enabled": true}]`)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"merge: missing directory", []string{"merge", path, "--out", missing}, []string{"--out " + missing, "no such file or directory"}},
		{"merge: a directory", []string{"merge", path, "--out", dir}, []string{"--out " + dir, "is a directory, not a regular file"}},
		{"export: missing directory", []string{"export", "--t4", path, "--out", missing}, []string{"--out " + missing, "no such file or directory"}},
		{"export: a device", []string{"export", "--t4", path, "--out", "/dev/full"}, []string{"--out /dev/full", "is a character device, not a regular file"}},
		{"report: missing parent", []string{"report", path, "--out", filepath.Join(path, "r")}, []string{"--out " + filepath.Join(path, "r"), "cannot create the directory"}},
		{"report: a file", []string{"report", path, "--out", path}, []string{"--out " + path, "not a directory"}},
		{"import-variants: missing directory", []string{"import-variants", manifest, "--name", "my_gemv", "--out", missing}, []string{"--out " + missing, "no such file or directory"}},
		{"bench: missing directory", []string{"bench", "--backend", "cpu", "--params", path, "--json-out", missing}, []string{"--json-out " + missing, "no such file or directory"}},
		{"tune: a device", []string{"tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "8x300", "--out", "/dev/full"}, []string{"--out /dev/full", "is a character device, not a regular file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, a := range tt.args {
				if strings.HasPrefix(a, "/dev/") {
					if _, err := os.Stat(a); err != nil {
						t.Skip(err)
					}
				}
			}
			wantExit(t, tt.args, exitUsage, tt.want...)
		})
	}
	if _, err := os.Stat(filepath.Dir(missing)); err == nil {
		t.Errorf("%s was created", filepath.Dir(missing))
	}
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		t.Errorf("the params file was replaced: %v", err)
	}
}

// A write that fails after the checks (a full disk, simulated by a file
// size limit) is also exit 2, naming --out; the old file stays.
func TestMergeWriteErrorExits2(t *testing.T) {
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("needs Linux for RLIMIT_FSIZE")
	}
	in := getEnv(t)
	const old = `{"schema_version": 1, "devices": {}}`
	out := testutil.WriteFile(t, t.TempDir(), "merged.json", old)
	// export replaces the params file in the way only with --force.
	for _, args := range [][]string{{"merge", in, "--out", out}, {"export", "--t4", in, "--out", out, "--force"}} {
		cmd := kerntune(t, []string{"KTDEV_FSIZE=200"}, args...)
		log, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != exitUsage {
			t.Errorf("%s: exit code %d (%v), want %d:\n%s", args[0], code, err, exitUsage, log)
		}
		if !strings.Contains(string(log), "--out "+out) || !strings.Contains(string(log), "file too large") {
			t.Errorf("%s: the message does not name --out and the error:\n%s", args[0], log)
		}
		if b, _ := os.ReadFile(out); string(b) != old {
			t.Errorf("%s: --out was changed: %s", args[0], b)
		}
	}
}

// Reading a device that never ends (show /dev/zero, a params file, a
// trace) stops at the limit with exit 2 and the limit named, in well under
// the time a test may take.
func TestReadDevZeroExits2(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero here")
	}
	path := getEnv(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"show", "/dev/zero"}, "/dev/zero: not a regular file, and it yields more than 64 MiB, the limit of a params file"},
		{[]string{"get", "--kernel", "gemv_nt", "--shape", "1x896x896", "--params", "/dev/zero"}, "the limit of a params file"},
		{[]string{"merge", "/dev/zero", "--out", filepath.Join(t.TempDir(), "m.json")}, "the limit of a params file"},
		{[]string{"report", path, "--trace", "/dev/zero", "--out", t.TempDir()}, "more than 256 MiB, the limit of a trace file"},
		{[]string{"check", "--spec", "/dev/zero", "--backend", "none"}, "the limit of a spec file"},
		{[]string{"replay", "--cache", "/dev/zero"}, "not a Kernel Tuner cache"},
	}
	for _, tt := range tests {
		t.Run(tt.args[0], func(t *testing.T) {
			start := time.Now()
			wantExit(t, tt.args, exitUsage, tt.want)
			t.Logf("%s: %v", tt.args[0], time.Since(start))
		})
	}
}

// tune --trace is an output location like --out: one that cannot be
// appended to (a device, a directory, a missing directory, a file of
// another kind) exits 2 naming --trace before anything is tuned, and leaves
// no journal that would block the next run.
func TestTuneBadTraceExits2(t *testing.T) {
	dir := t.TempDir()
	params := getEnv(t)
	tests := []struct {
		name, trace string
		want        []string
	}{
		{"a device", "/dev/full", []string{"--trace /dev/full", "is a character device, not a regular file"}},
		{"a directory", dir, []string{"--trace " + dir, "is a directory, not a regular file"}},
		{"missing directory", filepath.Join(dir, "no", "t.jsonl"), []string{"--trace " + filepath.Join(dir, "no", "t.jsonl"), "no such file or directory"}},
		{"a params file", params, []string{"--trace " + params, "is not a trace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := os.Stat(tt.trace); strings.HasPrefix(tt.trace, "/dev/") && err != nil {
				t.Skip(err)
			}
			out := filepath.Join(t.TempDir(), "p.json")
			code, log := runCLI(t, "tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "8x300", "--budget", "2e", "-q", "--out", out, "--trace", tt.trace)
			if code != exitUsage {
				t.Errorf("exit code %d, want %d; output:\n%s", code, exitUsage, log)
			}
			for _, w := range tt.want {
				if !strings.Contains(log, w) {
					t.Errorf("output %q does not mention %q", log, w)
				}
			}
			for _, p := range []string{out, tuner.JournalPath(out)} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s was left behind", p)
				}
			}
			testutil.Unchanged(t, params, getFile)
		})
	}
}

// merge, import-variants and export --t4 replace an existing --out only
// when it is of the kind they write (a params file, a spec, T4 results,
// gzipped or not); any other file is kept, with exit 2 naming --out and
// --force, and replaced with --force.
func TestOutOfAnotherKindNeedsForce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	paramsDoc := mergeDoc("cpu:m1", "2026-01-01T00:00:00Z", map[string]string{"f32/tiny": mergeEntry(16, 50)}, "")
	in := testutil.WriteFile(t, dir, "in.json", paramsDoc)
	manifest := testutil.WriteFile(t, dir, "variants.json", `[{"name": "gemv_bn64", "enabled": true}, {"name": "gemv_bn32", "enabled": true}]`)
	specDoc := testutil.ReadFile(t, "../../examples/swiglu.json")
	t4Doc := func(gz bool) string {
		p := filepath.Join(t.TempDir(), "r.json")
		if gz {
			p += ".gz"
		}
		other := testutil.WriteFile(t, t.TempDir(), "other.json", mergeDoc("cpu:m2", "2026-01-02T00:00:00Z", map[string]string{"f32/mid": mergeEntry(8, 90)}, ""))
		if code, log := runCLI(t, "export", "--t4", other, "--out", p); code != 0 {
			t.Fatalf("export: exit %d\n%s", code, log)
		}
		data := testutil.ReadFile(t, p)
		return string(data)
	}
	kinds := map[string]string{
		"params": paramsDoc, "spec": string(specDoc), "t4": t4Doc(false), "t4.gz": t4Doc(true),
		"garbage": "not json at all\n", "empty": "",
	}
	commands := []struct {
		name string
		args []string
		own  []string // kinds the command replaces without --force
	}{
		{"merge", []string{"merge", in}, []string{"params", "empty"}},
		{"import-variants", []string{"import-variants", manifest, "--name", "my_gemv"}, []string{"spec", "empty"}},
		{"export", []string{"export", "--t4", in}, []string{"t4", "t4.gz", "empty"}},
	}
	for _, c := range commands {
		for kind, content := range kinds {
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				out := testutil.WriteFile(t, t.TempDir(), "out", content)
				args := append(slices.Clone(c.args), "--out", out)
				code, log := runCLI(t, args...)
				after, _ := os.ReadFile(out)
				if slices.Contains(c.own, kind) {
					if code != 0 || string(after) == content {
						t.Errorf("exit %d, replaced %v; want it replaced with exit 0:\n%s", code, string(after) != content, log)
					}
					return
				}
				if code != exitUsage || string(after) != content {
					t.Errorf("exit %d, file kept %v; want exit %d and the file kept:\n%s", code, string(after) == content, exitUsage, log)
				}
				for _, w := range []string{"--out " + out, "--force"} {
					if !strings.Contains(log, w) {
						t.Errorf("output %q does not mention %q", log, w)
					}
				}
				if code, log := runCLI(t, append(args, "--force")...); code != 0 {
					t.Errorf("with --force: exit %d\n%s", code, log)
				} else if after, _ := os.ReadFile(out); string(after) == content {
					t.Errorf("with --force: the file was not replaced")
				}
			})
		}
	}
}
