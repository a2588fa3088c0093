package tuner

import (
	"math"

	"github.com/kerntune/kerntune/internal/stats"
)

// Event reports one measurement of a running task to Config.Progress: a
// candidate that was built, verified and timed (again), or one that failed.
// Counts are over the task so far; BestUS and BestKey are the fastest
// candidate measured so far (0 and "" while none is).
type Event struct {
	Task      Task
	Candidate string  // key of the candidate just measured
	MedianUS  float64 // its median so far, 0 when it failed
	Err       string  // why it failed, or ""
	Valid     int     // candidates in the task's valid space
	Measured  int     // distinct candidates measured without error
	Failed    int     // distinct candidates that failed
	BestKey   string
	BestUS    float64
}

// progress reports every batch, measured or replayed, to Config.Progress
// once the measurement recorded it.
type progress struct {
	t     *Tuner
	task  Task
	cands candidates
	valid int // size of the valid space
}

// newProgress reports into the configured observer what m measures; nil
// when there is none.
func newProgress(t *Tuner, m *live, valid int) *progress {
	if t.cfg.Progress == nil {
		return nil
	}
	return &progress{t: t, task: m.task, cands: m.cands, valid: valid}
}

// report sends an Event for candidate key to the configured observer (none
// on a nil progress). It walks the candidates (a few hundred at most),
// which costs far less than the measurement it reports.
func (p *progress) report(key string) {
	if p == nil {
		return
	}
	ev := Event{Task: p.task, Candidate: key, Valid: p.valid}
	best := math.Inf(1)
	for k, c := range p.cands {
		switch {
		case c.err != nil:
			ev.Failed++
		case len(c.samples) > 0:
			ev.Measured++
			if m := stats.Median(c.samples) * 1e6; m < best || (m == best && k < ev.BestKey) {
				best, ev.BestKey = m, k
			}
		}
	}
	if ev.BestKey != "" {
		ev.BestUS = best
	}
	if c := p.cands[key]; c != nil {
		if c.err != nil {
			ev.Err = c.err.Error()
		} else if len(c.samples) > 0 {
			ev.MedianUS = stats.Median(c.samples) * 1e6
		}
	}
	p.t.cfg.Progress(ev)
}
