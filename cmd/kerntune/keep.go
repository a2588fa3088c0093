package main

import (
	"encoding/json"
	"fmt"

	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner"
)

// What happened to an entry a run tuned (keepDecision.Action).
const (
	actionAdded    = "added"    // the file had no entry for the device, kernel and key
	actionReplaced = "replaced" // the new entry replaced the file's
	actionKept     = "kept"     // the file's entry stayed; the new one was not written
)

// stoppedInterrupted is Entry.Stopped of an entry whose run was interrupted.
const stoppedInterrupted = "interrupted"

// partial reports whether an entry is partial: its run was interrupted
// (stopped: interrupted) before the search finished. An entry that stopped
// at its budget ("budget spent", "evaluation budget spent") is complete for
// that budget; how much it saw is in candidates.measured.
func partial(e *params.Entry) bool { return e != nil && e.Stopped == stoppedInterrupted }

// evidence is what a choice between two entries for the same device,
// kernel and key rests on.
type evidence struct {
	// replace: --replace, the new entry wins.
	replace bool
	// recorded: the entries come from different runs with no common timing
	// (kerntune merge); the smaller recorded median_us wins.
	recorded bool
	// retime: tune timed the file's parameters and the new winner
	// interleaved in this run (nil when it could not).
	retime *tuner.Retiming
}

// choice is the outcome of chooseEntry.
type choice struct {
	keepNew bool
	reason  string
	// Same-run timing of both parameter sets, when it decided or was known.
	oldUS, newUS, p float64
}

// chooseEntry is the one policy for an entry that a file holds (old) and a
// run or another file brings (new); kerntune merge and kerntune tune both
// use it. In order:
//
//  1. --replace: new.
//  2. merge (recorded medians): the smaller median_us; a tie keeps old.
//  3. tune, with a same-run timing of old's parameters: new when its winner
//     is faster beyond noise (tuner.FasterBeyondNoise); old when old's
//     parameters are; new when old's parameters cannot run here (invalid
//     in the current space, or failing to build or verify).
//  4. a partial new entry (interrupted) never replaces a complete one.
//  5. new when it measured at least as many candidates as old, else old.
func chooseEntry(old, nw *params.Entry, ev evidence) choice {
	if ev.replace {
		return choice{keepNew: true, reason: "--replace"}
	}
	if ev.recorded {
		if nw.MedianUS < old.MedianUS {
			return choice{keepNew: true, reason: fmt.Sprintf("faster: %.3f µs < %.3f µs", nw.MedianUS, old.MedianUS)}
		}
		return choice{reason: fmt.Sprintf("not faster: %.3f µs ≥ %.3f µs", nw.MedianUS, old.MedianUS)}
	}
	var c choice
	if rt := ev.retime; rt != nil && sameParams(rt.Params, old.Params) {
		switch {
		case rt.Invalid:
			return choice{keepNew: true, reason: "the file's parameters cannot run here (" + rt.Err + ")"}
		case !rt.Same && len(rt.Samples) > 0 && len(rt.WinnerSamples) > 0:
			c.oldUS, c.newUS = medianUS(rt.Samples), medianUS(rt.WinnerSamples)
			if f := tuner.FasterBeyondNoise(rt.WinnerSamples, rt.Samples); f.Faster {
				c.keepNew, c.p = true, f.P
				c.reason = fmt.Sprintf("faster in this run's interleaved timing: %.3f µs vs %.3f µs (%.1f %% faster, p = %.2g)", c.newUS, c.oldUS, 100*f.Gain, f.P)
				return c
			}
			if f := tuner.FasterBeyondNoise(rt.Samples, rt.WinnerSamples); f.Faster {
				c.p = f.P
				c.reason = fmt.Sprintf("the file's parameters were faster in this run's interleaved timing: %.3f µs vs %.3f µs (p = %.2g)", c.oldUS, c.newUS, f.P)
				return c
			}
		}
	}
	nm, om := nw.Candidates.Measured, old.Candidates.Measured
	tie := ""
	if c.oldUS > 0 {
		tie = fmt.Sprintf("; within noise in this run's timing (%.3f µs vs %.3f µs)", c.newUS, c.oldUS)
	}
	switch {
	case partial(nw) && !partial(old):
		c.reason = fmt.Sprintf("the new entry is partial (stopped: interrupted, %s measured) and the file's is complete (%d)%s", plural(nm, "candidate"), om, tie)
	case nm >= om:
		c.keepNew = true
		kind := "complete"
		if partial(nw) {
			kind = "partial, as the file's"
		}
		c.reason = fmt.Sprintf("%s, measured %s ≥ %d%s", kind, plural(nm, "candidate"), om, tie)
	default:
		c.reason = fmt.Sprintf("measured %s < %d of the file's entry%s", plural(nm, "candidate"), om, tie)
	}
	return c
}

// plural is "1 candidate", "2 candidates".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func medianUS(xs []float64) float64 { return round3(stats.Median(xs) * 1e6) }

// entryBrief is what a decision reports about each entry.
type entryBrief struct {
	Params   map[string]int `json:"params"`
	MedianUS float64        `json:"median_us"`
	Measured int            `json:"measured"`
	Valid    int            `json:"valid"`
	Stopped  string         `json:"stopped,omitempty"`
	Partial  bool           `json:"partial,omitempty"`
}

func briefOf(e *params.Entry) *entryBrief {
	return &entryBrief{Params: e.Params, MedianUS: e.MedianUS, Measured: e.Candidates.Measured,
		Valid: e.Candidates.Valid, Stopped: e.Stopped, Partial: partial(e)}
}

// keepDecision is what tune did with one tuned entry (printed, and in tune --json).
type keepDecision struct {
	Action string `json:"action"` // added, replaced or kept
	Reason string `json:"reason"`
	// Old is the entry the file held (absent when added); New the run's.
	Old *entryBrief `json:"old,omitempty"`
	New *entryBrief `json:"new"`
	// The same-run interleaved timing of both parameter sets, when there was one.
	OldRetimedUS float64 `json:"old_retimed_us,omitempty"`
	NewRetimedUS float64 `json:"new_retimed_us,omitempty"`
	PValue       float64 `json:"p_value,omitempty"`
}

func (d *keepDecision) String() string {
	switch d.Action {
	case actionAdded:
		return "added to the file"
	case actionReplaced:
		return "replaced the file's entry " + search.Candidate(d.Old.Params).Key() + ": " + d.Reason
	}
	return "KEPT the file's entry " + search.Candidate(d.Old.Params).Key() + ", new entry not written: " + d.Reason
}

// entryOf decodes an entry of a JSON tree (as params.MergeDevices passes them).
func entryOf(v any) (*params.Entry, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var e params.Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, err
	}
	return &e, nil
}
