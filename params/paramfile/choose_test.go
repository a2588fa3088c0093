package paramfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/params/families"
)

func chooseTestEntry(p map[string]int, medianUS float64, measured int, stopped string) *Entry {
	return &Entry{Params: p, MedianUS: medianUS, Samples: 30, Shapes: [][]int{{8, 300}},
		Candidates: CandidateCounts{Valid: 72, Measured: measured}, Stopped: stopped}
}

// ChooseEntry's rules in order, with the timing verdicts given as data (the
// tuner's noise rule computes them; see tuner's TestChooseEntry for the
// rule on real samples).
func TestChooseEntryRules(t *testing.T) {
	a, b := map[string]int{"BN": 8}, map[string]int{"BN": 16}
	old := chooseTestEntry(a, 10, 72, "")
	faster := &Retimed{Params: a, Timed: true, OldUS: 10, NewUS: 8, NewFaster: Verdict{Faster: true, P: 0.001, Gain: 0.2}}
	slower := &Retimed{Params: a, Timed: true, OldUS: 10, NewUS: 12, OldFaster: Verdict{Faster: true, P: 0.002, Gain: 0.17}}
	tie := &Retimed{Params: a, Timed: true, OldUS: 10, NewUS: 9.9}
	tests := []struct {
		name    string
		nw      *Entry
		ev      Evidence
		keepNew bool
		reason  string
		oldUS   float64
	}{
		{"replace wins over everything", chooseTestEntry(b, 20, 1, StoppedInterrupted), Evidence{Replace: true, Retimed: slower}, true, "--replace", 0},
		{"recorded: smaller median", chooseTestEntry(b, 9, 1, ""), Evidence{Recorded: true}, true, "faster: 9.000 µs < 10.000 µs", 0},
		{"recorded: tie keeps old", chooseTestEntry(b, 10, 99, ""), Evidence{Recorded: true}, false, "not faster", 0},
		{"timed: new faster", chooseTestEntry(b, 8, 4, "budget spent"), Evidence{Retimed: faster}, true, "(20.0 % faster, p = 0.001)", 10},
		{"timed: old faster", chooseTestEntry(b, 12, 72, ""), Evidence{Retimed: slower}, false, "the file's parameters were faster", 10},
		{"timed: tie, fewer candidates", chooseTestEntry(b, 10, 9, ""), Evidence{Retimed: tie}, false, "measured 9 candidates < 72 of the file's entry; within noise", 10},
		{"timed: tie, as many", chooseTestEntry(b, 10, 72, ""), Evidence{Retimed: tie}, true, "complete, measured 72 candidates ≥ 72; within noise", 10},
		{"timing of other parameters does not count", chooseTestEntry(b, 8, 4, ""), Evidence{Retimed: &Retimed{Params: b, Timed: true, NewFaster: Verdict{Faster: true}}}, false, "measured 4 candidates < 72", 0},
		{"old cannot run here", chooseTestEntry(b, 12, 2, ""), Evidence{Retimed: &Retimed{Params: a, Invalid: true, Err: "build: no"}}, true, "cannot run here (build: no)", 0},
		{"same parameters: counts decide", chooseTestEntry(a, 9, 1, ""), Evidence{Retimed: &Retimed{Params: a, Same: true, Timed: true, NewFaster: Verdict{Faster: true}}}, false, "measured 1 candidate < 72", 0},
		{"partial never replaces complete", chooseTestEntry(b, 9, 100, StoppedInterrupted), Evidence{}, false, "the new entry is partial", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ChooseEntry(old, tt.nw, tt.ev)
			if c.KeepNew != tt.keepNew || !strings.Contains(c.Reason, tt.reason) || c.OldUS != tt.oldUS {
				t.Errorf("%+v; want keepNew %v, reason with %q, old µs %g", c, tt.keepNew, tt.reason, tt.oldUS)
			}
		})
	}
}

// MergeFiles names a missing or invalid input as a *PathError of that
// file, and keeps the entry with the smaller recorded median of two.
func TestMergeFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, medianUS float64) string {
		upd := typicalUpdate()
		upd.Devices["cpu:test-2c"].Kernels[families.GemvNT]["f32/tiny"].MedianUS = medianUS
		data, err := Merge(nil, upd)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	slow, fast := write("slow.json", 50), write("fast.json", 40)
	sum, data, err := MergeFiles([]string{slow, fast})
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Devices["cpu:test-2c"].Kernels[families.GemvNT]["f32/tiny"].MedianUS; got != 40 {
		t.Errorf("kept median %g, want the faster 40", got)
	}
	if len(sum.Conflicts) != 1 || sum.Conflicts[0].Kept != fast || sum.Conflicts[0].Dropped != slow || sum.Devices != 1 {
		t.Errorf("summary %+v", sum)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"schema_version": 2, "devices": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{filepath.Join(dir, "none.json"), bad} {
		_, _, err := MergeFiles([]string{slow, in})
		var pe *PathError
		if !errors.As(err, &pe) || pe.File != in {
			t.Errorf("%s: error %v is not a *PathError naming the file", in, err)
		}
	}
}
