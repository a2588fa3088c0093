package tuner

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
)

// stubMeasurer answers every request with n samples of 1 ms and counts
// the requests, as the live measurer would into its candidates.
type stubMeasurer struct {
	cands candidates
	calls []string
}

func (s *stubMeasurer) measure(c search.Candidate, n int) ([]float64, error) {
	s.calls = append(s.calls, c.Key())
	out := make([]float64, n)
	for i := range out {
		out[i] = 1e-3
	}
	cd := s.cands.get(c)
	cd.samples = append(cd.samples, out...)
	return out, nil
}

// The journal answers from the journal while it holds the next batch of a
// candidate, of the size asked for, and journals what the live measurer
// measured; progress is reported after either.
func TestMeasurementLayers(t *testing.T) {
	k, err := kernels.Get("gemv_nt")
	if err != nil {
		t.Fatal(err)
	}
	a, b := search.Candidate{"BN": 1}, search.Candidate{"BN": 2}
	task := Task{Kernel: k, DType: kernels.F32, Cases: k.Workload[:1]}
	recorded := Record{Kind: RecordMeasure, Device: "fake:1", Kernel: k.Name, Entry: task.Key(), Cand: a.Key(), Status: StatusOK, Samples: []float64{2e-3, 2e-3, 2e-3}}
	for _, c := range []struct {
		name     string
		ask      []search.Candidate
		n        int
		measured []string // requests that reached the next layer
		journal  int      // measure records journaled
	}{
		{"replayed", []search.Candidate{a}, 3, nil, 0},
		{"replayed, then measured", []search.Candidate{a, a, b}, 3, []string{a.Key(), b.Key()}, 2},
		{"another size: measured afresh", []search.Candidate{a}, 5, []string{a.Key()}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := &memJournal{old: []Record{recorded}}
			var events []string
			tu := New(&fakeBackend{}, Config{Journal: j, Progress: func(ev Event) { events = append(events, ev.Candidate) }})
			m := newLive(tu, task, nil)
			stub := &stubMeasurer{cands: m.cands}
			top := &measurement{live: stub, journal: newJournaled(context.Background(), tu, m, stub), progress: newProgress(tu, m, 10)}
			var want []string
			for _, cand := range c.ask {
				if _, err := top.measure(cand, c.n); err != nil {
					t.Fatal(err)
				}
				want = append(want, cand.Key())
			}
			if !reflect.DeepEqual(stub.calls, c.measured) {
				t.Errorf("measured %v, want %v", stub.calls, c.measured)
			}
			if len(j.recs) != c.journal {
				t.Errorf("journaled %d records, want %d", len(j.recs), c.journal)
			}
			if !reflect.DeepEqual(events, want) {
				t.Errorf("events %v, want %v", events, want)
			}
		})
	}
}

// Without a journal or an observer their parts of the measurement are nil.
func TestMeasurementLayersOff(t *testing.T) {
	tu := New(&fakeBackend{}, Config{})
	m := newLive(tu, Task{}, nil)
	if jl := newJournaled(context.Background(), tu, m, m); jl != nil {
		t.Errorf("a journal without a journal configured")
	}
	if p := newProgress(tu, m, 1); p != nil {
		t.Errorf("progress without an observer")
	}
}

func TestBudgetStop(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	one := candidates{"a": {samples: []float64{1}}}
	for _, c := range []struct {
		name       string
		ctx        context.Context
		share, max time.Duration
		min        int
		n          int // samples asked for, 1 s each
		want       string
	}{
		{"within the share", context.Background(), time.Hour, time.Hour, 1, 3, ""},
		{"interrupted", cancelled, time.Hour, time.Hour, 1, 3, "interrupted"},
		{"past the share", context.Background(), 2 * time.Second, 2 * time.Second, 1, 3, "budget spent"},
		{"past the share, short of the minimum", context.Background(), 2 * time.Second, time.Hour, 2, 3, ""},
		{"past the slack too", context.Background(), 2 * time.Second, 3 * time.Second, 2, 4, "budget spent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := budget{share: c.share, deadline: time.Now().Add(c.share), hard: time.Now().Add(c.max), min: c.min, perSample: 1}
			if got := b.stop(c.ctx, c.n, one); got != c.want {
				t.Errorf("stop = %q, want %q", got, c.want)
			}
		})
	}
}

// The final timing's samples fit a fifth of the share, never fewer than
// the minimum; with cheap, cheap samples are taken up to that many times as
// many while they fit a twentieth; the search gets what is left after them.
func TestBudgetCalibrate(t *testing.T) {
	for _, c := range []struct {
		name        string
		share       time.Duration
		perSample   float64
		cheap       int
		wantSamples int
	}{
		{"room for all", time.Hour, 1e-3, 0, 30},
		{"cheap: five times", time.Hour, 1e-3, 5, 150},
		{"cheap: a twentieth of the share", 10 * time.Second, 1e-3, 5, 100},
		{"cheap: a twentieth is less than planned", 100 * time.Second, 0.1, 5, 30},
		{"cheap: a fifth of the share", 100 * time.Second, 1, 5, 4},
		{"a fifth of the share", 100 * time.Second, 1, 0, 4},
		{"the minimum", 10 * time.Second, 1, 0, 2},
		{"not calibrated", time.Hour, 0, 5, 30},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := budget{share: c.share, deadline: time.Now().Add(c.share), finalProgs: 5, finalSamples: 30}
			left := b.calibrate(c.perSample, 2, c.cheap)
			if b.finalSamples != c.wantSamples {
				t.Errorf("final samples %d, want %d", b.finalSamples, c.wantSamples)
			}
			want := c.share.Seconds() - 5*float64(c.wantSamples)*c.perSample
			if left > want || left < want-1 {
				t.Errorf("left for the search %.3fs, want about %.3fs", left, want)
			}
			b.plan(b.finalSamples)
			if r := time.Duration(c.perSample * 5 * float64(b.finalSamples) * float64(time.Second)); b.reserve != r {
				t.Errorf("reserve %v, want %v", b.reserve, r)
			}
		})
	}
}
