package tuner

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

// timingBackend wraps the fake backend and replaces every candidate's times
// by a fixed pattern, to test what the tuner accepts as a measurement.
type timingBackend struct {
	*fakeBackend
	times func(cost float64, i int) float64 // time of the i-th run of a program of this cost
	runs  int
}

type timingProg struct {
	*fakeProg
	b *timingBackend
	i int
}

func (b *timingBackend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (device.Program, error) {
	return b.fakeBackend.wrap(k, dt, c, func(p *fakeProg) device.Program { return &timingProg{fakeProg: p, b: b} })
}

func (p *timingProg) Run(_ device.Instance, n int) ([]float64, error) {
	ts := make([]float64, n)
	for j := range ts {
		ts[j] = p.b.times(p.cost, p.i)
		p.i++
		p.b.runs++
	}
	return ts, nil
}

func TestTimingSanity(t *testing.T) {
	tests := []struct {
		name       string
		times      func(cost float64, i int) float64
		wantErr    string // every candidate fails with this
		remeasured bool   // some batch was re-measured
	}{
		{"zero", func(float64, int) float64 { return 0 }, "is not positive", false},
		{"negative", func(float64, int) float64 { return -1e-3 }, "is not positive", false},
		{"below the physical floor", func(float64, int) float64 { return 1e-15 }, "below the physical floor", false},
		// Every other run takes 5× as long: a coefficient of variation near 1.
		{"noisy", func(c float64, i int) float64 { return c * float64(1+4*(i%2)) }, "", true},
		{"quiet", func(c float64, i int) float64 { return c * (1 + 0.001*float64(i%3)) }, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &timingBackend{fakeBackend: &fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 2}, times: tt.times}
			res, err := New(b, Config{Strategy: "random", Samples: 6, Warmup: time.Microsecond}).Run(context.Background(), gemvTask(t), time.Minute)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "measurement error") {
					t.Fatalf("got %v, want every candidate rejected with a measurement error %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			remeasured := 0
			for _, m := range res.Trace {
				remeasured += m.Remeasured
			}
			if (remeasured > 0) != tt.remeasured {
				t.Errorf("%d batches re-measured, want re-measurement %v", remeasured, tt.remeasured)
			}
		})
	}
}

// memJournal keeps records in memory.
type memJournal struct {
	mu   sync.Mutex
	recs []Record
	old  []Record
}

func (j *memJournal) Record(rec Record) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.recs = append(j.recs, rec)
}

func (j *memJournal) Replay(device, kernel, entry string) []Record {
	return taskRecords(j.old, device, kernel, entry)
}

// A run interrupted part way and resumed from its journal measures nothing
// twice and ends with the winner of an uninterrupted run.
func TestJournalResume(t *testing.T) {
	for _, strategy := range search.Names {
		t.Run(strategy, func(t *testing.T) {
			cfg := Config{Strategy: strategy, Seed: 3, FinalSamples: 10, Warmup: time.Microsecond}
			// Clean run, journaled.
			full := &memJournal{}
			cfg.Journal = full
			// Times depend only on the candidate, so both runs rank alike.
			quiet := func(c float64, i int) float64 { return c * (1 + 0.001*float64(i%3)) }
			fb := &timingBackend{fakeBackend: &fakeBackend{threadsCap: 4, failBuild: true}, times: quiet}
			clean, err := New(fb, cfg).Run(context.Background(), gemvTask(t), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			var measures []Record
			plans := 0
			for _, r := range full.recs {
				switch r.Kind {
				case RecordMeasure:
					measures = append(measures, r)
				case RecordPlan:
					plans++
				}
			}
			if len(measures) < 4 || plans != 1 {
				t.Fatalf("journal of the clean run: %d measure records, %d plans", len(measures), plans)
			}
			// Resume from the first half of the journal, as after a kill.
			cut := len(full.recs) / 2
			resumed := &memJournal{old: append([]Record(nil), full.recs[:cut]...)}
			cfg.Journal = resumed
			fb2 := &timingBackend{fakeBackend: &fakeBackend{threadsCap: 4, failBuild: true}, times: quiet}
			res, err := New(fb2, cfg).Run(context.Background(), gemvTask(t), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			// The resumed run journals only what it measured: old + new = the clean run's measurements.
			seen := map[string]int{}
			for _, r := range append(resumed.old, resumed.recs...) {
				if r.Kind == RecordMeasure {
					seen[r.Cand]++
				}
			}
			want := map[string]int{}
			for _, r := range measures {
				want[r.Cand]++
			}
			for k, n := range seen {
				if n != want[k] {
					t.Errorf("%s measured %d times over both runs, %d in the clean run", k, n, want[k])
				}
			}
			if search.Candidate(res.Entry.Params).Key() != search.Candidate(clean.Entry.Params).Key() {
				t.Errorf("resumed winner %v, clean %v", res.Entry.Params, clean.Entry.Params)
			}
			if fb2.runs >= fb.runs {
				t.Errorf("the resumed run timed %d runs, the clean one %d: the journal saved nothing", fb2.runs, fb.runs)
			}
			if res.Entry.Candidates != clean.Entry.Candidates {
				t.Errorf("candidate counts: resumed %+v, clean %+v", res.Entry.Candidates, clean.Entry.Candidates)
			}
		})
	}
}
