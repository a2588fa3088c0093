package main

import (
	"os"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/tuner"
)

// The summary lines count in the singular where the count is one.
func TestDecisionCountsPlural(t *testing.T) {
	sum := func(actions ...string) *tuner.SessionSummary {
		s := &tuner.SessionSummary{}
		for _, a := range actions {
			s.Decisions = append(s.Decisions, &tuner.KeepDecision{Action: a})
		}
		return s
	}
	for _, c := range []struct {
		sum  *tuner.SessionSummary
		want string
	}{
		{sum(tuner.KeepAdded), "wrote 1 entry"},
		{sum(tuner.KeepAdded, tuner.KeepReplaced), "wrote 2 entries (1 replaced)"},
		{sum(tuner.KeepKept), "wrote 0 entries; kept 1 better entry already there"},
		{sum(tuner.KeepKept, tuner.KeepKept, tuner.KeepAdded), "wrote 1 entry; kept 2 better entries already there"},
	} {
		if got := decisionCounts(c.sum); got != c.want {
			t.Errorf("decisionCounts = %q, want %q", got, c.want)
		}
	}
}

// The message of an interrupted run counts its entries the same way.
func TestInterruptedPlural(t *testing.T) {
	for n, want := range map[int]string{1: "after writing 1 entry;", 2: "after writing 2 entries;"} {
		if got := (interruptedError{sig: os.Interrupt, written: n, journal: "j"}).Error(); !strings.Contains(got, want) {
			t.Errorf("interrupted after %d: %q lacks %q", n, got, want)
		}
	}
}
