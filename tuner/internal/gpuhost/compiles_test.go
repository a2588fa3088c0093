package gpuhost

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/search"
)

// A candidate compiles once whoever asks first, keyed by family, dtype and
// candidate; the compile sees its own copy of the candidate.
func TestCompilesOncePerKey(t *testing.T) {
	var n atomic.Int32
	cs := NewCompiles(2, errors.New("closed"), func(body *gpu.Body, dt kernels.DType, c search.Candidate) (string, error) {
		n.Add(1)
		return body.Family + "/" + string(dt) + "/" + c.Key(), nil
	})
	defer cs.Close()
	k, _ := kernels.Get("softmax")
	body, err := cs.Body(k.Name)
	if err != nil {
		t.Fatal(err)
	}
	c := search.Candidate{"ROWS": 1, "TG": 64}
	cands := []search.Candidate{c, {"ROWS": 2, "TG": 64}}
	cs.Prefetch(k, kernels.F32, cands)
	c["TG"] = 128 // the caller's later change does not reach the queued job
	for i := range 2 {
		got, err := cs.For(body, k, kernels.F32, search.Candidate{"TG": 64, "ROWS": 1}).Wait()
		if err != nil || got != "softmax/f32/ROWS=1,TG=64" {
			t.Fatalf("round %d: %q %v", i, got, err)
		}
	}
	if got, err := cs.For(body, k, kernels.F32, cands[1]).Wait(); err != nil || got != "softmax/f32/ROWS=2,TG=64" {
		t.Fatalf("%q %v", got, err)
	}
	if got := n.Load(); got != 2 {
		t.Errorf("%d compiles for 2 candidates", got)
	}
	if Key(k, kernels.F16, cands[1]) != "softmax|f16|ROWS=2,TG=64" {
		t.Errorf("key %q", Key(k, kernels.F16, cands[1]))
	}
}

// BuildSeconds sums the time of every compile, those of the pool and
// those a waiter ran itself, and grows by nothing while none runs.
func TestCompilesBuildSeconds(t *testing.T) {
	const each = 20 * time.Millisecond
	cs := NewCompiles(2, errors.New("closed"), func(*gpu.Body, kernels.DType, search.Candidate) (int, error) {
		time.Sleep(each)
		return 1, nil
	})
	defer cs.Close()
	if got := cs.BuildSeconds(); got != 0 {
		t.Fatalf("%gs before any compile", got)
	}
	k, _ := kernels.Get("softmax")
	body, err := cs.Body(k.Name)
	if err != nil {
		t.Fatal(err)
	}
	cands := []search.Candidate{{"ROWS": 1}, {"ROWS": 2}, {"ROWS": 4}}
	cs.Prefetch(k, kernels.F32, cands[:2])
	for _, c := range cands { // the third is compiled by its waiter
		if _, err := cs.For(body, k, kernels.F32, c).Wait(); err != nil {
			t.Fatal(err)
		}
	}
	got := cs.BuildSeconds()
	if want := 3 * each.Seconds(); got < want || got > want+1 {
		t.Errorf("%gs for 3 compiles of %v", got, each)
	}
	if again := cs.BuildSeconds(); again != got {
		t.Errorf("%gs, then %gs with no compile running", got, again)
	}
}

// A family without a body is not prefetched; Build reports it.
func TestPrefetchWithoutBody(t *testing.T) {
	cs := NewCompiles(1, errors.New("closed"), func(*gpu.Body, kernels.DType, search.Candidate) (int, error) {
		t.Error("compiled a family without a body")
		return 0, nil
	})
	defer cs.Close()
	cs.Body = func(string) (*gpu.Body, error) { return nil, errors.New("no body") }
	k, _ := kernels.Get("softmax")
	cs.Prefetch(k, kernels.F32, []search.Candidate{{"ROWS": 1}})
}

// Ready is true once a candidate's compile has ended, successfully or not,
// and false for one never announced, for which it makes no job.
func TestReady(t *testing.T) {
	release := make(chan struct{})
	cs := NewCompiles(2, errors.New("closed"), func(body *gpu.Body, dt kernels.DType, c search.Candidate) (int, error) {
		if c["TG"] == 128 {
			<-release
		}
		if c["TG"] == 256 {
			return 0, errors.New("does not compile")
		}
		return c["TG"], nil
	})
	defer cs.Close()
	k, _ := kernels.Get("softmax")
	body, err := cs.Body(k.Name)
	if err != nil {
		t.Fatal(err)
	}
	fast, slow, bad := search.Candidate{"TG": 64}, search.Candidate{"TG": 128}, search.Candidate{"TG": 256}
	cs.Prefetch(k, kernels.F32, []search.Candidate{fast, slow, bad})
	for _, c := range []search.Candidate{fast, bad} {
		cs.For(body, k, kernels.F32, c).Wait()
	}
	tests := []struct {
		name string
		c    search.Candidate
		dt   kernels.DType
		want bool
	}{
		{"compiled", fast, kernels.F32, true},
		{"failed", bad, kernels.F32, true},
		{"compiling", slow, kernels.F32, false},
		{"never announced", search.Candidate{"TG": 32}, kernels.F32, false},
		{"another dtype", fast, kernels.F16, false},
	}
	for _, tc := range tests {
		if got := cs.Ready(k, tc.dt, tc.c); got != tc.want {
			t.Errorf("%s: Ready %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, ok := cs.Lookup(Key(k, kernels.F32, search.Candidate{"TG": 32})); ok {
		t.Error("Ready made a job")
	}
	close(release)
	cs.For(body, k, kernels.F32, slow).Wait()
	if !cs.Ready(k, kernels.F32, slow) {
		t.Error("not ready after its compile")
	}
}
