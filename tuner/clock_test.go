package tuner

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/search"
)

// slowBackend is fakeBackend with the wall time of a device: a build takes
// build, an output run output, and a timed run run per sample.
type slowBackend struct {
	fakeBackend
	build, output, run time.Duration
	outputs            int
}

type slowProg struct {
	*fakeProg
	b *slowBackend
}

func (b *slowBackend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (Program, error) {
	time.Sleep(b.build)
	p, err := b.fakeBackend.Build(k, dt, c)
	if err != nil {
		return nil, err
	}
	return &slowProg{fakeProg: p.(*fakeProg), b: b}, nil
}

func (p *slowProg) Run(ti Instance, n int) ([]float64, error) {
	time.Sleep(time.Duration(n) * p.b.run)
	return p.fakeProg.Run(ti, n)
}

func (p *slowProg) Output(ti Instance) ([]float32, error) {
	time.Sleep(p.b.output)
	p.b.outputs++
	return p.fakeProg.Output(ti)
}

// The entry's time adds up to its wall time, charges builds to compile,
// output runs to verify and timed runs to measure, counts output and timed
// runs as the device's time, and reaches the entry, the result, the trace
// and the journal.
func TestRunAccountsForItsTime(t *testing.T) {
	b := &slowBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(1, 2)), threadsCap: 4},
		build: 8 * time.Millisecond, output: 2 * time.Millisecond, run: time.Millisecond}
	j := &memJournal{}
	cfg := Config{Strategy: "random", Seed: 1, Samples: 3, FinalSamples: 5, MaxEvals: 6, Warmup: time.Microsecond, Journal: j}
	res, err := New(b, cfg).Run(context.Background(), gemvTask(t), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tt := res.Time
	if tt == nil || res.Entry.Time != tt {
		t.Fatalf("time %+v, entry's %+v", tt, res.Entry.Time)
	}
	const eps = 0.0051 // fields are rounded to ms
	parts := tt.SetupS + tt.CompileS + tt.VerifyS + tt.MeasureS + tt.SearchS + tt.JournalS + tt.OtherS
	if math.Abs(parts-tt.WallS) > eps {
		t.Errorf("parts add up to %.3fs, wall %.3fs: %+v", parts, tt.WallS, tt)
	}
	if want := float64(b.builds) * b.build.Seconds(); tt.CompileS < want-eps {
		t.Errorf("compile %.3fs for %d builds of %v", tt.CompileS, b.builds, b.build)
	}
	if want := float64(b.outputs) * b.output.Seconds(); tt.VerifyS < want-eps || tt.DeviceS < tt.MeasureS+want-eps {
		t.Errorf("verify %.3fs, device %.3fs, measure %.3fs for %d output runs of %v", tt.VerifyS, tt.DeviceS, tt.MeasureS, b.outputs, b.output)
	}
	if tt.DeviceS > tt.MeasureS+tt.VerifyS+eps {
		t.Errorf("device %.3fs beyond measure %.3fs + verify %.3fs", tt.DeviceS, tt.MeasureS, tt.VerifyS)
	}
	if math.Abs(tt.IdleS-(tt.WallS-tt.DeviceS)) > eps || math.Abs(tt.BusyPct-100*tt.DeviceS/tt.WallS) > 0.5 {
		t.Errorf("idle %.3fs, busy %.1f%% for device %.3fs of %.3fs", tt.IdleS, tt.BusyPct, tt.DeviceS, tt.WallS)
	}
	var perCand float64
	for _, m := range res.Trace {
		if m.Err == "" && m.CompileS < b.build.Seconds() {
			t.Errorf("%s: compile %.4fs, below one build", m.Key, m.CompileS)
		}
		perCand += m.CompileS
	}
	if perCand > tt.CompileS+eps {
		t.Errorf("candidates' compile %.3fs beyond the entry's %.3fs", perCand, tt.CompileS)
	}
	var timeRec *params.TuneTime
	measured := 0
	for _, rec := range j.recs {
		switch rec.Kind {
		case RecordTime:
			timeRec = rec.Time
		case RecordMeasure:
			if rec.CompileS > 0 {
				measured++
			}
		}
	}
	if timeRec == nil || *timeRec != *tt {
		t.Errorf("journal's time %+v, want %+v", timeRec, tt)
	}
	if measured != len(res.Trace) {
		t.Errorf("%d journaled measurements carry a build time, want %d (one per candidate)", measured, len(res.Trace))
	}
}
