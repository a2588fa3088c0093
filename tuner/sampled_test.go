package tuner

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
)

// rowsBackend runs softmax by its float64 reference, with a bug on large
// outputs chosen by the candidate's UNROLL: 2 leaves one element of a
// middle row unwritten, 4 gets the last row wrong. Its programs return samples of large outputs
// (SampledOutputer), as worker programs do, and count what they returned.
type rowsBackend struct {
	fakeBackend
	whole, sampled map[int]int // outputs returned in full / as samples, by output length
}

type rowsProg struct {
	fakeProg
	b *rowsBackend
}

func (b *rowsBackend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (Program, error) {
	return &rowsProg{fakeProg: fakeProg{f: &b.fakeBackend, c: c, cost: 1e-3 * (1 + 0.1*float64(c["ROWS"]))}, b: b}, nil
}

func (p *rowsProg) output(ti Instance) []float32 {
	inst := ti.(*fakeInst)
	ref := inst.p.Reference()
	out := make([]float32, len(ref))
	for i, v := range ref {
		out[i] = float32(v)
	}
	cols := inst.p.Case.Shape[1]
	if len(out) <= kernels.FullVerifyMax {
		return out // bugs that show only at scale
	}
	switch p.c["UNROLL"] {
	case 2:
		mid := len(out) / cols / 2
		out[mid*cols+cols/3] = float32(math.NaN())
	case 4:
		for i := len(out) - cols; i < len(out); i++ {
			out[i] *= 3
		}
	}
	return out
}

func (p *rowsProg) Output(ti Instance) ([]float32, error) {
	out := p.output(ti)
	p.b.whole[len(out)]++
	return out, nil
}

func (p *rowsProg) OutputSample(ti Instance, s kernels.RowSample) ([]float32, int, int, error) {
	out := p.output(ti)
	p.b.sampled[len(out)]++
	rows, bad := s.Extract(out)
	return rows, bad, len(out), nil
}

// A large shape is verified on a sample of rows through OutputSample, the
// odd shapes in full; a candidate that leaves an element unwritten outside
// the sample, or gets the last row wrong, fails all the same.
func TestRunVerifiesLargeOutputsOnSamples(t *testing.T) {
	k, err := kernels.Get("softmax")
	if err != nil {
		t.Fatal(err)
	}
	large := []int{2048, 1024} // 2M elements: sampled
	task := Task{Kernel: k, DType: kernels.F32, Cases: []kernels.Case{{Shape: large}}}
	b := &rowsBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4}, whole: map[int]int{}, sampled: map[int]int{}}
	res, err := New(b, Config{Strategy: "exhaustive", Samples: 3, FinalSamples: 5, Warmup: time.Microsecond}).Run(context.Background(), task, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	n := large[0] * large[1]
	if b.whole[n] != 0 || b.sampled[n] != len(res.Trace) {
		t.Errorf("large output returned whole %d times and as samples %d times, want 0 and %d (one per candidate)", b.whole[n], b.sampled[n], len(res.Trace))
	}
	odd := 0
	for size, c := range b.whole {
		if size <= kernels.FullVerifyMax {
			odd += c
		}
	}
	if odd == 0 {
		t.Error("no odd shape was verified in full")
	}
	failed := 0
	for _, m := range res.Trace {
		c, _ := search.ParseKey(m.Key)
		switch c["UNROLL"] {
		case 2:
			if !strings.Contains(m.Err, "not finite") || !strings.Contains(m.Err, "2048x1024") {
				t.Errorf("%s: an element unwritten outside the sample: %q", m.Key, m.Err)
			}
		case 4:
			if !strings.Contains(m.Err, "exceeds") || !strings.Contains(m.Err, "sampled rows") {
				t.Errorf("%s: a wrong last row: %q", m.Key, m.Err)
			}
		default:
			if m.Err != "" {
				t.Errorf("%s: a correct candidate failed: %s", m.Key, m.Err)
			}
		}
		if m.Err != "" {
			failed++
		}
	}
	if failed == 0 || res.Entry.Candidates.Failed != failed {
		t.Errorf("%d failures in the trace, %d in the entry", failed, res.Entry.Candidates.Failed)
	}

	// With VerifyFull the large output comes back whole, and both wrong
	// candidates still fail.
	b = &rowsBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4}, whole: map[int]int{}, sampled: map[int]int{}}
	res, err = New(b, Config{Strategy: "exhaustive", Samples: 3, FinalSamples: 5, Warmup: time.Microsecond, VerifyFull: true}).Run(context.Background(), task, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if b.sampled[n] != 0 || b.whole[n] < len(res.Trace) {
		t.Errorf("with VerifyFull: large output returned whole %d times and as samples %d times, want at least %d and 0", b.whole[n], b.sampled[n], len(res.Trace))
	}
	for _, m := range res.Trace {
		c, _ := search.ParseKey(m.Key)
		if bad := c["UNROLL"] == 2 || c["UNROLL"] == 4; bad != (m.Err != "") {
			t.Errorf("with VerifyFull, %s: error %q", m.Key, m.Err)
		}
	}
}
