package tuner

import (
	"context"
	"time"
)

// budget is one task's wall time and the share of it the final timing
// keeps. The search driver asks it, through the run, how much time the
// search has (calibrate), what the plan reserves (planned) and whether to
// stop before a request (stop); the drift guard reads it to keep its idling
// and its measuring again out of the final timing's share.
type budget struct {
	start time.Time
	// share is the task's planned time (Allotment.Share); deadline is
	// start + share.
	share    time.Duration
	deadline time.Time
	// hard is how far the search may go past deadline while it has
	// measured fewer than min candidates (Allotment.Max); a scout's larger
	// minimum holds only until soft (Allotment.MinWithin; zero: until
	// hard), plain after it.
	hard, soft time.Time
	min, plain int
	// finalProgs is how many programs the final timing times, in whole
	// timings (Tuner.finalPrograms); finalSamples its samples of each.
	finalProgs   float64
	finalSamples int
	// perSample is one sample of the candidate the search calibrated on,
	// in seconds (0 until it did).
	perSample float64
	// reserve is what the final timing is expected to take, once planned.
	reserve time.Duration
}

// newBudget is the budget of a task started at start with allotment a,
// which must measure least candidates before its share may end the search.
// plain is the minimum it must reach up to hard when a.MinWithin limits
// how long least holds.
func newBudget(t *Tuner, task Task, start time.Time, a Allotment, least, plain int) budget {
	b := budget{start: start, share: a.Share, deadline: start.Add(a.Share), hard: start.Add(max(a.Max, a.Share)), min: least, plain: least,
		finalProgs: t.finalPrograms(task.Incumbent != nil), finalSamples: t.cfg.FinalSamples}
	if a.MinWithin > 0 {
		b.soft, b.plain = start.Add(min(max(a.MinWithin, a.Share), max(a.Max, a.Share))), min(plain, least)
	}
	return b
}

// left is the time until the deadline.
func (b *budget) left() time.Duration { return time.Until(b.deadline) }

// calibrate takes the calibrated time of one sample, s seconds: it fits
// the final timing's samples (at least minFinal) into a fifth of the share
// and returns what is left for the search after the final timing (screen,
// finalists, default, baseline and the incumbent × finalSamples). With
// cheap above 1 it takes more than planned where samples are cheap, up to
// cheap times, while they fit a twentieth of the share: a final timing of
// a few milliseconds is decided by a passing load on the machine, where
// the search's winner and a finalist a few per cent apart swap (a quick
// run's scout then hands the slower to every entry of its family).
func (b *budget) calibrate(s float64, minFinal, cheap int) float64 {
	b.perSample = s
	if s > 0 {
		per := b.finalProgs * s
		fit := int(b.share.Seconds() / 5 / per)
		more := b.finalSamples
		if cheap > 1 {
			more = max(more, min(int(b.share.Seconds()/20/per), cheap*b.finalSamples))
		}
		b.finalSamples = max(minFinal, min(more, fit))
	}
	return b.left().Seconds() - b.finalProgs*float64(b.finalSamples)*s
}

// plan sets the final timing's samples as planned (a resumed run's may
// differ) and what the final timing reserves.
func (b *budget) plan(finalSamples int) {
	b.finalSamples = finalSamples
	b.reserve = time.Duration(b.perSample * b.finalProgs * float64(finalSamples) * float64(time.Second))
}

// stop says why the search stops before a request of n samples, or "":
// "interrupted" when ctx ended, "budget spent" when the request and the
// final timing would end past the deadline, unless the search is short of
// its minimum (cs measured) and still before hard (a scout's minimum:
// before soft, then its plain one).
func (b *budget) stop(ctx context.Context, n int, cs candidates) string {
	if err := ctx.Err(); err != nil {
		return "interrupted"
	}
	nextCost := b.perSample * (float64(n) + b.finalProgs*float64(b.finalSamples))
	end := time.Now().Add(time.Duration(nextCost * float64(time.Second)))
	if !end.After(b.deadline) {
		return ""
	}
	// Past the share: short of the entry's minimum, the run's slack is
	// there for it (counted only here, not before every request).
	least := b.min
	if !b.soft.IsZero() && end.After(b.soft) {
		least = b.plain
	}
	if end.After(b.hard) || cs.measured() >= least {
		return "budget spent"
	}
	return ""
}
