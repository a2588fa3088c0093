package gpuhost

import (
	"errors"
	"sync/atomic"
	"testing"

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
