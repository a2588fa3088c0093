package paramfile

import (
	"encoding/json"
	"fmt"
)

// StoppedInterrupted is Entry.Stopped of an entry whose tuning run was
// interrupted before its search finished.
const StoppedInterrupted = "interrupted"

// Partial reports whether an entry is partial: its run was interrupted
// (stopped: interrupted) before the search finished. An entry that stopped
// at its budget ("budget spent", "evaluation budget spent") is complete for
// that budget; how much it saw is in Candidates.Measured.
func Partial(e *Entry) bool { return e != nil && e.Stopped == StoppedInterrupted }

// Evidence is what a choice between two entries for the same device,
// kernel and key rests on (see ChooseEntry).
type Evidence struct {
	// Replace: the caller asked for the new entry (kerntune tune --replace).
	Replace bool
	// Recorded: the entries come from different runs with no common timing
	// (kerntune merge); the smaller recorded median_us wins.
	Recorded bool
	// Retimed is a same-run timing of the old entry's parameters against
	// the new winner, or nil when there was none.
	Retimed *Retimed
}

// Retimed is a same-run, interleaved timing of a file's parameters against
// a new winner. The verdicts come from the caller's noise rule (package
// tuner's FasterBeyondNoise), so that this package needs nothing beyond
// the standard library.
type Retimed struct {
	// Params are the parameters that were timed as the file's; a timing of
	// other parameters than the file's entry holds does not count.
	Params map[string]int
	// Same: the new winner has these parameters.
	Same bool
	// Invalid: the parameters cannot run here (they break the space's
	// constraints, or fail to build or verify); Err says why.
	Invalid bool
	Err     string
	// Timed: both parameter sets have samples; OldUS and NewUS are their
	// medians in µs and the verdicts below are set.
	Timed        bool
	OldUS, NewUS float64
	// NewFaster is the verdict "the new winner is faster than the file's
	// parameters beyond noise", OldFaster the reverse.
	NewFaster, OldFaster Verdict
}

// Verdict is the outcome of a one-sided comparison of two sets of samples.
type Verdict struct {
	Faster bool
	// P is the test's p-value, Gain the relative drop of the median.
	P, Gain float64
}

// Choice is the outcome of ChooseEntry.
type Choice struct {
	KeepNew bool
	Reason  string
	// Same-run timing of both parameter sets, when it decided or was known.
	OldUS, NewUS, P float64
}

// ChooseEntry is the one policy for an entry that a file holds (old) and a
// run or another file brings (new); kerntune merge and kerntune tune both
// use it. In order:
//
//  1. Replace: new.
//  2. Recorded medians (merge): the smaller median_us; a tie keeps old;
//     an entry without a median loses to one with.
//  3. A same-run timing of old's parameters: new when its winner is faster
//     beyond noise; old when old's parameters are; new when old's
//     parameters cannot run here (invalid in the current space, or failing
//     to build or verify).
//  4. A partial new entry (interrupted) never replaces a complete one.
//  5. New when it measured at least as many candidates as old, else old.
func ChooseEntry(old, nw *Entry, ev Evidence) Choice {
	if ev.Replace {
		return Choice{KeepNew: true, Reason: "--replace"}
	}
	if ev.Recorded {
		// A median is positive when recorded (the reader refuses others);
		// an entry without one is no evidence of speed.
		if nw.MedianUS > 0 && (old.MedianUS == 0 || nw.MedianUS < old.MedianUS) {
			return Choice{KeepNew: true, Reason: fmt.Sprintf("faster: %.3f µs < %.3f µs", nw.MedianUS, old.MedianUS)}
		}
		return Choice{Reason: fmt.Sprintf("not faster: %.3f µs ≥ %.3f µs", nw.MedianUS, old.MedianUS)}
	}
	var c Choice
	if rt := ev.Retimed; rt != nil && SameParams(rt.Params, old.Params) {
		switch {
		case rt.Invalid:
			return Choice{KeepNew: true, Reason: "the file's parameters cannot run here (" + rt.Err + ")"}
		case !rt.Same && rt.Timed:
			c.OldUS, c.NewUS = rt.OldUS, rt.NewUS
			if f := rt.NewFaster; f.Faster {
				c.KeepNew, c.P = true, f.P
				c.Reason = fmt.Sprintf("faster in this run's interleaved timing: %.3f µs vs %.3f µs (%.1f %% faster, p = %.2g)", c.NewUS, c.OldUS, 100*f.Gain, f.P)
				return c
			}
			if f := rt.OldFaster; f.Faster {
				c.P = f.P
				c.Reason = fmt.Sprintf("the file's parameters were faster in this run's interleaved timing: %.3f µs vs %.3f µs (p = %.2g)", c.OldUS, c.NewUS, f.P)
				return c
			}
		}
	}
	nm, om := nw.Candidates.Measured, old.Candidates.Measured
	tie := ""
	if c.OldUS > 0 {
		tie = fmt.Sprintf("; within noise in this run's timing (%.3f µs vs %.3f µs)", c.NewUS, c.OldUS)
	}
	switch {
	case Partial(nw) && !Partial(old):
		c.Reason = fmt.Sprintf("the new entry is partial (stopped: interrupted, %s measured) and the file's is complete (%d)%s", plural(nm, "candidate"), om, tie)
	case nm >= om:
		c.KeepNew = true
		kind := "complete"
		if Partial(nw) {
			kind = "partial, as the file's"
		}
		c.Reason = fmt.Sprintf("%s, measured %s ≥ %d%s", kind, plural(nm, "candidate"), om, tie)
	default:
		c.Reason = fmt.Sprintf("measured %s < %d of the file's entry%s", plural(nm, "candidate"), om, tie)
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

// SameParams reports whether two parameter sets hold the same values.
func SameParams(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// DecodeEntry decodes an entry of a JSON tree, as MergeDevices and a
// KeepFunc see them.
func DecodeEntry(v any) (*Entry, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// Kept is what MergeEntry did about the entry the file held for the same
// device, family and key.
type Kept struct {
	// Old is the file's entry; nil when there was none (the new one was
	// added).
	Old *Entry
	// Choice is ChooseEntry's, when there was an Old.
	Choice Choice
	// Unreadable is why the file's entry could not be compared (it is then
	// kept); nil when it could.
	Unreadable error
}

// MergeEntry writes the one entry of update (one device, one family, one
// key) into the file at path, under the file's lock, as MergeIntoFileKeep
// does: an entry the file holds for the same device, family and key is
// weighed against the new one by ChooseEntry on ev, against the file as it
// is at that moment, and stays unless the choice is the new one; nothing
// else of the file changes but the device's record.
func MergeEntry(path string, update *File, force bool, ev Evidence) (Kept, error) {
	var nw *Entry
	for _, d := range update.Devices {
		for _, es := range d.Kernels {
			for _, e := range es {
				nw = e
			}
		}
	}
	if nw == nil {
		return Kept{}, fmt.Errorf("writing %s: the update holds no entry", path)
	}
	var k Kept
	keep := func(_, _, _ string, old, newRaw any) any {
		oe, err := DecodeEntry(old)
		if err != nil {
			// Cannot happen for a file that parsed; never lose the file's entry.
			k.Old, k.Unreadable = &Entry{}, err
			return old
		}
		k.Old, k.Choice = oe, ChooseEntry(oe, nw, ev)
		if k.Choice.KeepNew {
			return newRaw
		}
		return old
	}
	return k, MergeIntoFileKeep(path, update, force, keep)
}
