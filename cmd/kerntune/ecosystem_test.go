package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/report"
	"github.com/kerntune/kerntune/tuner"
)

func TestCompletionAndVersion(t *testing.T) {
	tests := []struct {
		args []string
		want []string // substrings of stdout
	}{
		{[]string{"completion", "bash"}, []string{"bash completion", "kerntune"}},
		{[]string{"completion", "zsh"}, []string{"#compdef kerntune"}},
		{[]string{"completion", "fish"}, []string{"complete -c kerntune"}},
		{[]string{"__complete", "tune", "--backend", ""}, []string{"auto\n", "cpu\n"}},
		{[]string{"__complete", "tune", "--kernel", ""}, []string{"gemv_nt\n", "softmax\n"}},
		{[]string{"__complete", "report", "--format", ""}, []string{"svg\n", "png\n"}},
		{[]string{"__complete", ""}, []string{"merge", "export", "report"}},
		{[]string{"version"}, []string{"kerntune ", "github.com/kerntune/kerntune"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runIn(tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("output lacks %q:\n%.400s", w, stdout)
				}
			}
		})
	}
	// A shell without a script, or none, is a usage error naming the shells.
	for _, args := range [][]string{{"completion", "tcsh"}, {"completion"}} {
		code, stdout, stderr := runIn(args...)
		if code != exitUsage || !strings.Contains(stderr, "bash, fish, powershell, zsh") || stdout != "" {
			t.Errorf("%v: exit %d, want %d naming the shells; stdout %.200q, stderr %q", args, code, exitUsage, stdout, stderr)
		}
	}
	code, stdout, _ := runIn("version", "--json")
	var bv buildVersion
	if err := json.Unmarshal([]byte(stdout), &bv); code != 0 || err != nil || bv.Module == "" || bv.Go == "" || bv.Version == "" {
		t.Fatalf("version --json: exit %d, err %v, %+v", code, err, bv)
	}
}

func TestReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pf := testutil.WriteFile(t, dir, "hardware_params.json", mergeDoc("cpu:m1", "2026-01-01T00:00:00Z", map[string]string{
		"f32/tiny": mergeEntry(64, 40), "f32/mid": mergeEntry(8, 90)}, ""))
	var lines []string
	for i, bn := range []int{4, 8, 16, 32, 64} {
		lines = append(lines, `{"device":"cpu:m1","kernel":"gemv_nt","dtype":"f32","key":"tiny","params":{"BN":`+
			itoa(bn)+`,"ROWS":`+itoa(1+i%2)+`},"median_us":`+itoa(100-10*i)+`,"samples":5}`)
	}
	lines = append(lines, `{"device":"cpu:m1","kernel":"gemv_nt","dtype":"f32","key":"f32/tiny","params":{"BN":128,"ROWS":1},"err":"verification: wrong"}`)
	// Found next to the params file without --trace.
	testutil.WriteFile(t, dir, "hardware_params.json.trace.jsonl", strings.Join(lines, "\n")+"\n")

	for _, format := range []string{"svg", "png"} {
		out := filepath.Join(dir, "report-"+format)
		code, stdout, stderr := runIn("report", pf, "--out", out, "--format", format, "--json")
		if code != 0 {
			t.Fatalf("report exited %d: %s", code, stderr)
		}
		var rows []report.Row
		if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 2 {
			t.Fatalf("report --json: %v, %d rows:\n%s", err, len(rows), stdout)
		}
		tiny := rows[0] // classes are in size order: tiny before mid
		if tiny.Key != "f32/tiny" || tiny.Traced != 6 || len(tiny.Plots) != 3 {
			t.Fatalf("first row %+v: want f32/tiny with 6 traced candidates and 3 plots", tiny)
		}
		md := testutil.ReadFile(t, filepath.Join(out, "report.md"))
		for _, w := range []string{"## cpu:m1", "| gemv_nt | f32/tiny | `BN=64` | 40.00 |", "6 candidates in the trace (1 failed)", "." + format + ")"} {
			if !bytes.Contains(md, []byte(w)) {
				t.Errorf("report.md lacks %q:\n%s", w, md)
			}
		}
		for _, p := range tiny.Plots {
			data := testutil.ReadFile(t, filepath.Join(out, p))
			magic := map[string]string{"svg": "<svg", "png": "\x89PNG"}[format]
			if !bytes.Contains(data[:min(len(data), 512)], []byte(magic)) || len(data) < 2000 {
				t.Errorf("plot %s (%d bytes) is not a %s image", p, len(data), format)
			}
		}
	}
	for _, bad := range [][]string{{"report", pf, "--format", "gif"}, {"report", filepath.Join(dir, "none.json")}, {"report", pf, "--trace", filepath.Join(dir, "none.jsonl")}} {
		if code, _, stderr := runIn(append(bad, "--out", filepath.Join(dir, "x"))...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", bad, code, exitUsage, stderr)
		}
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestProgressPlain: off a terminal the progress display passes log lines
// through unchanged and draws nothing; quiet drops them.
func TestProgressPlain(t *testing.T) {
	k, err := kernels.Get("softmax")
	if err != nil {
		t.Fatal(err)
	}
	task := tuner.Task{Kernel: k, DType: kernels.F32, Class: "short"}
	for _, quiet := range []bool{false, true} {
		var buf bytes.Buffer
		u := newProgressUI(&buf, quiet, 1, time.Minute)
		u.begin(task, time.Second)
		u.event(tuner.Event{Task: task, Valid: 10, Measured: 1, BestKey: "ROWS=1", BestUS: 5})
		u.Write([]byte("softmax f32/short done\n"))
		u.end()
		u.close()
		want := "softmax f32/short done\n"
		if quiet {
			want = ""
		}
		if buf.String() != want {
			t.Errorf("quiet=%v: output %q, want %q", quiet, buf.String(), want)
		}
	}
}
