package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/params/paramfile"
)

// mergeEntry is a minimal valid entry with the given params value and median.
func mergeEntry(bn int, median float64) string {
	b, _ := json.Marshal(map[string]any{
		"params": map[string]int{"BN": bn}, "median_us": median, "iqr_us": 1, "samples": 10,
		"shapes": [][]int{{1, 896, 896}}, "candidates": map[string]int{"valid": 4, "measured": 4, "failed": 0},
	})
	return string(b)
}

func mergeDoc(device, tunedAt string, entries map[string]string, extra string) string {
	var parts []string
	for k, e := range entries {
		parts = append(parts, `"`+k+`": `+e)
	}
	return `{"schema_version": 1, "generator": "test"` + extra + `, "devices": {"` + device +
		`": {"backend": "cpu", "name": "X", "family": "amd64", "compute_units": 2, "tuned_at": "` + tunedAt +
		`", "facts": {"bandwidth_gbps": 10}, "kernels": {"gemv_nt": {` + strings.Join(parts, ", ") + `}}}}}`
}

func TestMerge(t *testing.T) {
	dir := t.TempDir()
	a := testutil.WriteFile(t, dir, "a.json", mergeDoc("cpu:m1", "2026-01-01T00:00:00Z", map[string]string{
		"f32/tiny": mergeEntry(16, 50), "f32/mid": mergeEntry(32, 70)}, `, "team": "x"`))
	b := testutil.WriteFile(t, dir, "b.json", mergeDoc("cpu:m1", "2026-02-01T00:00:00Z", map[string]string{
		"f32/tiny": mergeEntry(64, 40), "f32/mid": mergeEntry(8, 90), "f32/largeN": mergeEntry(128, 900)}, ""))
	c := testutil.WriteFile(t, dir, "c.json", mergeDoc("cpu:m2", "2026-03-01T00:00:00Z", map[string]string{"f32/tiny": mergeEntry(32, 99)}, ""))
	out := filepath.Join(dir, "out.json")

	code, stdout, stderr := runIn("merge", a, b, c, "--out", out, "--json")
	if code != 0 {
		t.Fatalf("merge exited %d: %s", code, stderr)
	}
	var sum paramfile.MergeSummary
	testutil.DecodeJSON(t, stdout, &sum)
	if sum.Devices != 2 || sum.Entries != 4 || len(sum.Conflicts) != 2 {
		t.Fatalf("summary %+v: want 2 devices, 4 entries, 2 conflicts", sum)
	}
	f, err := paramfile.ReadFile(out)
	if err != nil {
		t.Fatalf("merged file does not parse: %v", err)
	}
	tests := []struct {
		dev, key string
		bn       int
		median   float64
	}{
		{"cpu:m1", "f32/tiny", 64, 40},     // b is faster
		{"cpu:m1", "f32/mid", 32, 70},      // a is faster
		{"cpu:m1", "f32/largeN", 128, 900}, // only in b
		{"cpu:m2", "f32/tiny", 32, 99},     // another device
	}
	for _, tc := range tests {
		e := f.Devices[tc.dev].Kernels["gemv_nt"][tc.key]
		if e == nil || e.Params["BN"] != tc.bn || e.MedianUS != tc.median {
			t.Errorf("%s %s: got %+v, want BN=%d median %g", tc.dev, tc.key, e, tc.bn, tc.median)
		}
	}
	for _, cf := range sum.Conflicts {
		want := map[string]string{"f32/tiny": b, "f32/mid": a}[cf.Key]
		if cf.Kept != want || cf.KeptUS >= cf.DroppedU {
			t.Errorf("conflict %+v: want kept %s with the smaller median", cf, want)
		}
	}
	if got := f.Devices["cpu:m1"].TunedAt; got != "2026-02-01T00:00:00Z" {
		t.Errorf("tuned_at %q, want the newest", got)
	}
	raw, _ := os.ReadFile(out)
	if !strings.Contains(string(raw), `"team": "x"`) {
		t.Errorf("extra top-level field was dropped:\n%s", raw)
	}

	// The same file twice: identical entries are no conflict.
	code, stdout, _ = runIn("merge", a, a, "--out", out, "--json")
	if err := json.Unmarshal([]byte(stdout), &sum); code != 0 || err != nil || len(sum.Conflicts) != 0 || sum.Entries != 2 {
		t.Errorf("merge a a: exit %d, %v, %+v; want 2 entries and no conflict", code, err, sum)
	}

	// Without --json the conflicts are said in words.
	code, stdout, _ = runIn("merge", a, b, "--out", out)
	if code != 0 || !strings.Contains(stdout, "conflict cpu:m1 gemv_nt f32/tiny: kept "+b) {
		t.Errorf("merge (text) exited %d, stdout:\n%s", code, stdout)
	}
}

func TestMergeBadInput(t *testing.T) {
	dir := t.TempDir()
	good := testutil.WriteFile(t, dir, "good.json", mergeDoc("cpu:m1", "2026-01-01T00:00:00Z", map[string]string{"f32/tiny": mergeEntry(16, 50)}, ""))
	v2 := testutil.WriteFile(t, dir, "v2.json", strings.Replace(mergeDoc("cpu:m1", "x", map[string]string{}, ""), `"schema_version": 1`, `"schema_version": 2`, 1))
	bad := testutil.WriteFile(t, dir, "bad.json", `{"schema_version": 1, "devices": {"cpu:x": {"kernels": 3}}}`)
	out := filepath.Join(dir, "out.json")
	tests := []struct {
		name string
		args []string
		want []string // substrings of stderr
	}{
		{"other schema version", []string{"merge", good, v2, "--out", out}, []string{v2, "schema_version", "only 1"}},
		{"schema violation", []string{"merge", good, bad, "--out", out}, []string{bad, "devices"}},
		{"missing file", []string{"merge", good, filepath.Join(dir, "nope.json"), "--out", out}, []string{"nope.json", "no such file"}},
		{"no --out", []string{"merge", good}, []string{"--out"}},
		{"no inputs", []string{"merge", "--out", out}, []string{"needs at least one params file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantUsageError(t, tc.args, tc.want)
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written despite the error", out)
			}
		})
	}
}
