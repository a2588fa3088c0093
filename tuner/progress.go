package tuner

import (
	"math"

	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/search"
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

// progressed is the layer that reports every batch, measured or
// replayed, to Config.Progress once the layers below recorded it.
type progressed struct {
	next  measurer
	t     *Tuner
	task  Task
	cands candidates
	valid int // size of the valid space
}

// withProgress wraps next, which measures into m's candidates, in the
// configured observer; next itself when there is none.
func withProgress(t *Tuner, m *live, valid int, next measurer) measurer {
	if t.cfg.Progress == nil {
		return next
	}
	return &progressed{next: next, t: t, task: m.task, cands: m.cands, valid: valid}
}

// measure reports c after the layers below measured or replayed it.
func (p *progressed) measure(c search.Candidate, n int) ([]float64, error) {
	defer p.progress(c.Key()) // after the samples (or the failure) are recorded
	return p.next.measure(c, n)
}

// progress sends an Event for candidate key to the configured observer.
// It walks the candidates (a few hundred at most), which costs far less than
// the measurement it reports.
func (p *progressed) progress(key string) {
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
