package tuner

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
)

// BenchAgainst times both candidates and the baseline in the same rounds of
// ten samples, the order reversed every other round, and reports each one's
// median; the same candidate twice is one kernel, timed once.
func TestBenchAgainst(t *testing.T) {
	fb := &fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), baseline: true, threadsCap: 4, runs: map[string][]int{}}
	tu := New(fb, Config{Warmup: time.Microsecond})
	task := gemvTask(t)
	c := kernels.Case{Shape: []int{1, 300, 200}}
	best := search.Candidate{"BN": 64, "ROWS": 2, "UNROLL": 2, "THREADS": 2}  // 100 µs
	other := search.Candidate{"BN": 16, "ROWS": 2, "UNROLL": 2, "THREADS": 2} // 2 steps off: 140 µs
	res, err := tu.BenchAgainst(context.Background(), task.Kernel, task.DType, c, best, other, 40)
	if err != nil {
		t.Fatal(err)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 0.05*want }
	if !near(res.MedianUS, 100) || !near(res.AgainstUS, 140) || !near(res.BaseUS, 150) || res.Against.Key() != other.Key() {
		t.Errorf("this %v µs, against %v (%v µs), baseline %v µs; want 100, 140, 150", res.MedianUS, res.Against, res.AgainstUS, res.BaseUS)
	}
	// The timed rounds: the last 4×3 runs of ten samples.
	keys := []string{best.Key(), other.Key(), "baseline"}
	rev := slices.Clone(keys)
	slices.Reverse(rev)
	tail := fb.order[len(fb.order)-12:]
	for r := range 4 {
		want := keys
		if r%2 == 1 {
			want = rev
		}
		if got := tail[3*r : 3*r+3]; !slices.Equal(got, want) {
			t.Errorf("round %d timed %v, want %v", r, got, want)
		}
	}
	for _, k := range keys {
		if n := fb.runs[k]; len(n) < 4 || !slices.Equal(n[len(n)-4:], []int{10, 10, 10, 10}) {
			t.Errorf("%s: runs %v, want the last four of ten samples", k, n)
		}
	}

	fb.order = nil
	res, err = tu.BenchAgainst(context.Background(), task.Kernel, task.DType, c, best, best, 20)
	if err != nil {
		t.Fatal(err)
	}
	if res.AgainstUS != res.MedianUS || res.Against.Key() != best.Key() {
		t.Errorf("against itself: %v µs against %v µs", res.MedianUS, res.AgainstUS)
	}
	if tail := fb.order[len(fb.order)-4:]; !slices.Equal(tail, []string{best.Key(), "baseline", "baseline", best.Key()}) {
		t.Errorf("against itself, the timed rounds ran %v", tail)
	}
}
