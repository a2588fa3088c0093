package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/trace"
	"github.com/kerntune/kerntune/params"
)

func testFile() *params.File {
	e := func(bn int, us, defUS float64, stopped string) *params.Entry {
		return &params.Entry{Params: map[string]int{"BN": bn}, MedianUS: us, Stopped: stopped,
			Default:    &params.Reference{Params: map[string]int{"BN": 16}, MedianUS: defUS},
			Baseline:   &params.Baseline{Name: "gonum", MedianUS: 2 * us},
			Candidates: params.CandidateCounts{Valid: 8, Measured: 5, Failed: 1}}
	}
	return &params.File{Generator: "kerntune test", Devices: map[string]*params.Device{
		"cpu:m1": {Backend: "cpu", Family: "arm64", ComputeUnits: 8, Kernels: map[string]map[string]*params.Entry{
			"gemv_nt": {"f32/mid": e(8, 90, 180, ""), "f32/tiny": e(16, 40, 40, params.StoppedInterrupted)}}},
	}}
}

// One row per entry, classes in size order, speedups and the partial mark
// from the entry; the candidate plots come only with a trace.
func TestWrite(t *testing.T) {
	recs := []trace.Record{
		{Device: "cpu:m1", Kernel: "gemv_nt", DType: "f32", Key: "f32/mid", Params: map[string]int{"BN": 8}, MedianUS: 90, Samples: 5},
		{Device: "cpu:m1", Kernel: "gemv_nt", DType: "f32", Key: "f32/mid", Params: map[string]int{"BN": 4}, MedianUS: 120, Samples: 5},
	}
	dir := t.TempDir()
	rows, err := Write(testFile(), recs, Options{Dir: dir, Format: "svg", Source: "p.json", Trace: "p.trace.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Key != "f32/tiny" || !rows[0].Partial || !rows[0].IsDefault || rows[0].Traced != 0 || len(rows[0].Plots) != 1 {
		t.Fatalf("first row %+v: want f32/tiny, partial, the default, untraced, one plot", rows[0])
	}
	mid := rows[1]
	if mid.VsDefault != 2 || mid.VsBaseline != 2 || mid.Traced != 2 || len(mid.Plots) != 3 {
		t.Errorf("f32/mid row %+v: want 2× both, 2 traced candidates, 3 plots", mid)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"From `p.json` (written by kerntune test); per-candidate data from `p.trace.jsonl` (2 candidates)",
		"| gemv_nt | f32/tiny | `BN=16` (the default) |", "5 / 8 / 1 **partial**", "2 candidates in the trace (0 failed)"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("report.md lacks %q:\n%s", w, md)
		}
	}
	for _, p := range mid.Plots {
		if st, err := os.Stat(filepath.Join(dir, p)); err != nil || st.Size() < 1000 {
			t.Errorf("plot %s: %v", p, err)
		}
	}
	if _, err := Write(testFile(), nil, Options{Dir: dir, Format: "gif"}); err == nil || !strings.Contains(err.Error(), `"gif"`) {
		t.Errorf("format gif: %v", err)
	}
}

func TestFormatUS(t *testing.T) {
	for us, want := range map[float64]string{12.345: "12.35 µs", 1234.5: "1.234 ms", 2.5e6: "2.5 s"} {
		if got := FormatUS(us); got != want {
			t.Errorf("FormatUS(%g) = %q, want %q", us, got, want)
		}
	}
}
