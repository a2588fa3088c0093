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

// progress sends an Event for candidate key to the configured observer.
// It walks the candidates (a few hundred at most), which costs far less than
// the measurement it reports.
func (r *run) progress(key string) {
	if r.t.cfg.Progress == nil {
		return
	}
	ev := Event{Task: r.task, Candidate: key, Valid: r.valid}
	best := math.Inf(1)
	for k, c := range r.m.cands {
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
	if c := r.m.cands[key]; c != nil {
		if c.err != nil {
			ev.Err = c.err.Error()
		} else if len(c.samples) > 0 {
			ev.MedianUS = stats.Median(c.samples) * 1e6
		}
	}
	r.t.cfg.Progress(ev)
}
