package tuner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

// Candidate statuses recorded in the trace and the journal.
const (
	StatusOK      = "ok"      // verified and timed
	StatusFailed  = "failed"  // did not build, failed verification, or a measurement error
	StatusCrashed = "crashed" // took the process that ran it down (isolated runs only)
	StatusTimeout = "timeout" // exceeded the per-call time limit (isolated runs only)
)

// StatusOf classifies a candidate's error.
func StatusOf(err error) string {
	switch {
	case err == nil:
		return StatusOK
	case errors.Is(err, device.ErrCrashed):
		return StatusCrashed
	case errors.Is(err, device.ErrTimeout):
		return StatusTimeout
	}
	return StatusFailed
}

// Journal record kinds.
const (
	RecordPlan    = "plan"    // a task's search plan: first-round size and final samples
	RecordMeasure = "measure" // one batch of samples of one candidate, or its failure
	RecordDone    = "done"    // the task's entry was written (or the task failed for good)
	RecordAnchor  = "anchor"  // the drift guard timed the anchor (drift.go)
	RecordDrift   = "drift"   // the drift guard found the anchor drifted and measured again
	// RecordSession opens each run (and each resumed run) of a session:
	// its wall-time budget (BudgetS) and the time the run spent before it
	// (ElapsedS), so that a resumed run goes on with what is left.
	RecordSession = "session"
	RecordTime    = "time" // where the task's wall time went, when its search and final timing ended
)

// Record is one line of the journal: what a run learned, in order, so an
// interrupted run can be resumed without measuring again.
type Record struct {
	Kind   string `json:"kind"`
	Device string `json:"device"`
	Kernel string `json:"kernel"`
	Entry  string `json:"entry"` // the task's entry key, e.g. f32/tiny
	// Measure records.
	Cand       string    `json:"cand,omitempty"`
	Status     string    `json:"status,omitempty"`
	Samples    []float64 `json:"samples,omitempty"` // seconds, per-sample totals over the task's shapes
	Err        string    `json:"err,omitempty"`
	CV         float64   `json:"cv,omitempty"`         // coefficient of variation of Samples
	Remeasured bool      `json:"remeasured,omitempty"` // the first batch was too noisy and was taken again
	// Drift records: how far the anchor's median was off its reference
	// (percent, positive when slower), how many candidates were measured
	// again, the cool-down waited, and whether the anchor settled at a new
	// speed; Final marks a drift within the final timing, which is then
	// taken again. Samples are the anchor's samples that showed the drift.
	DriftPct float64 `json:"drift_pct,omitempty"`
	Redone   int     `json:"redone,omitempty"`
	WaitedS  float64 `json:"waited_s,omitempty"`
	Settled  bool    `json:"settled,omitempty"`
	Final    bool    `json:"final,omitempty"`
	// Seconds this measurement spent building, verifying and sampling the
	// candidate (clock.go); absent when none.
	CompileS float64 `json:"compile_s,omitempty"`
	VerifyS  float64 `json:"verify_s,omitempty"`
	MeasureS float64 `json:"measure_s,omitempty"`
	// Time records (RecordTime): where the task's wall time went.
	Time *paramfile.TuneTime `json:"time,omitempty"`
	// Plan records.
	MaxCandidates int    `json:"max_candidates,omitempty"`
	FinalSamples  int    `json:"final_samples,omitempty"`
	DataSeed      uint64 `json:"data_seed,omitempty"`
	// Session records: the run's wall-time budget in seconds.
	BudgetS float64 `json:"budget_s,omitempty"`
	// ElapsedS is the session's wall time in seconds when the record was
	// written, interrupted runs included (a session's journal stamps every
	// record), so the last record tells how much of the budget was spent.
	ElapsedS float64 `json:"elapsed_s,omitempty"`
}

// Journal receives every measurement as it is made and hands back those of
// an earlier, interrupted run. Record must make the record durable before
// it returns (the tuner measures the next candidate only afterwards).
type Journal interface {
	Record(rec Record)
	// Replay returns the task's records from an earlier run, in order.
	Replay(device, kernel, entry string) []Record
}

// cv is the coefficient of variation (standard deviation / mean) of xs.
func cv(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	var mean float64
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if mean <= 0 {
		return 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss/float64(len(xs)-1)) / mean
}

// statusOf is the candidate's status: replayed from the journal, or from its error.
func (c *candidate) statusOf() string {
	if c.status != "" {
		return c.status
	}
	return StatusOf(c.err)
}

// journaled is the journal's part of the measurement: it answers a
// request from the journal of an earlier, interrupted run when that holds
// the candidate's next batch, else asks the live measurer and journals
// what it measured. It also
// keeps the plan and the drift guard's anchor timings (drift.go). Its
// methods do nothing on a nil journaled (no journal configured).
type journaled struct {
	live  measurer // measures what the journal does not hold
	j     Journal
	t     *Tuner
	task  Task
	cands candidates // where replayed batches go: the live measurer's
	ctx   context.Context
	clk   *clock
	// replay are the journaled measurements by candidate key, anchors
	// the journaled anchor timings in order, plan the first plan.
	replay  map[string][]Record
	anchors []Record
	plan    *Record
}

// newJournaled puts the configured journal around live (which measures
// into m's candidates), collecting the task's journaled records for replay;
// it returns nil when there is no journal.
func newJournaled(ctx context.Context, t *Tuner, m *live, live measurer) *journaled {
	j := t.cfg.Journal
	if j == nil {
		return nil
	}
	jl := &journaled{live: live, j: j, t: t, task: m.task, cands: m.cands, ctx: ctx, clk: m.clk, replay: map[string][]Record{}}
	for _, rec := range j.Replay(t.b.Info().Key, m.task.Kernel.Name, m.task.Key()) {
		switch rec.Kind {
		case RecordMeasure:
			jl.replay[rec.Cand] = append(jl.replay[rec.Cand], rec)
		case RecordAnchor:
			jl.anchors = append(jl.anchors, rec)
		case RecordPlan:
			if jl.plan == nil {
				rec := rec
				jl.plan = &rec
			}
		}
	}
	return jl
}

// measure answers a request for n samples of c: from the journal of an
// earlier run when it holds the next batch of c, else by measuring, and
// journals what it measured before returning.
func (j *journaled) measure(c search.Candidate, n int) ([]float64, error) {
	key := c.Key()
	if q := j.replay[key]; len(q) > 0 {
		rec := q[0]
		j.replay[key] = q[1:]
		cd := j.cands.get(c)
		switch {
		case rec.Status != StatusOK && rec.Err != "":
			cd.err, cd.status = errors.New(rec.Err), rec.Status
			return nil, cd.err
		case len(rec.Samples) == n && cd.err == nil:
			cd.samples = append(cd.samples, rec.Samples...)
			if rec.Remeasured {
				cd.remeas++
			}
			if j.t.cfg.Verbose {
				fmt.Fprintf(j.t.cfg.Log, "  %-40s %10.2f µs (n=%d, from the journal)\n", key, medianUS(cd.samples), len(cd.samples))
			}
			return rec.Samples, nil
		}
		// A batch of another size: the plan changed; measure afresh.
		j.replay[key] = nil
	}
	before, spent0 := 0, split{}
	if cd := j.cands[key]; cd != nil {
		before, spent0 = cd.remeas, cd.spent
	}
	s, err := j.live.measure(c, n)
	if err == nil || j.ctx.Err() == nil {
		cd := j.cands[key]
		spent := cd.spent.since(spent0)
		rec := Record{Kind: RecordMeasure, Cand: key, Status: StatusOf(err), Samples: s, CV: round3(cv(s)), Remeasured: cd.remeas > before,
			CompileS: round6(spent.seconds(phaseCompile)), VerifyS: round6(spent.seconds(phaseVerify)), MeasureS: round6(spent.seconds(phaseMeasure))}
		if err != nil {
			rec.Err = err.Error()
		}
		tj := time.Now()
		j.j.Record(j.stamp(rec))
		j.clk.journaled(tj)
	}
	return s, err
}

// planned records the task's search plan, or on a resumed run returns the
// plan of the interrupted one, so the strategy asks for the same
// candidates and the journaled measurements answer them.
func (j *journaled) planned(finalSamples, maxCandidates int, dataSeed uint64) (int, int) {
	if j == nil {
		return finalSamples, maxCandidates
	}
	if j.plan != nil {
		return j.plan.FinalSamples, j.plan.MaxCandidates
	}
	defer j.clk.journaled(time.Now())
	j.j.Record(j.stamp(Record{Kind: RecordPlan, FinalSamples: finalSamples, MaxCandidates: maxCandidates, DataSeed: dataSeed}))
	return finalSamples, maxCandidates
}

// anchor returns the next journaled anchor timing when it has n samples;
// one of another size (another plan) ends the replay of anchor timings.
func (j *journaled) anchor(n int) ([]float64, bool) {
	if j == nil || len(j.anchors) == 0 {
		return nil, false
	}
	rec := j.anchors[0]
	j.anchors = j.anchors[1:]
	if len(rec.Samples) != n {
		j.anchors = nil
		return nil, false
	}
	return rec.Samples, true
}

// replayingAnchors reports whether journaled anchor timings are left.
func (j *journaled) replayingAnchors() bool { return j != nil && len(j.anchors) > 0 }

// note journals rec (a drift guard's record, the task's time).
func (j *journaled) note(rec Record) {
	if j != nil {
		j.j.Record(j.stamp(rec))
	}
}

// stamp fills in the task's device, kernel and entry.
func (j *journaled) stamp(rec Record) Record {
	rec.Device, rec.Kernel, rec.Entry = j.t.b.Info().Key, j.task.Kernel.Name, j.task.Key()
	return rec
}

func medianUS(xs []float64) float64 { return stats.Median(xs) * 1e6 }

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }
