package tuner

import (
	"context"
	"testing"
	"time"

	"github.com/kerntune/kerntune/search"
)

// Past its share an entry short of its minimum goes on up to Max; a
// scout's larger minimum (Allotment.MinWithin) holds only until MinWithin,
// then its plain minimum alone, so that slow builds cannot spend the time
// of the entries after it.
func TestBudgetStopScoutMinimum(t *testing.T) {
	measured := func(n int) candidates {
		cs := candidates{}
		for i := range n {
			cs[search.Candidate{"X": i}.Key()] = &candidate{samples: []float64{1e-3}}
		}
		return cs
	}
	tu := New(&fakeBackend{}, Config{})
	task := Task{}
	tests := []struct {
		name     string
		a        Allotment
		least    int
		measured int
		elapsed  time.Duration // since the entry started
		want     string
	}{
		{"within the share", Allotment{Share: time.Second, Max: 10 * time.Second}, 24, 3, 0, ""},
		{"past the share, short of the minimum", Allotment{Share: time.Second, Max: 10 * time.Second}, 24, 3, 2 * time.Second, ""},
		{"past the share, minimum reached", Allotment{Share: time.Second, Max: 10 * time.Second}, 24, 24, 2 * time.Second, "budget spent"},
		{"past Max", Allotment{Share: time.Second, Max: 10 * time.Second}, 24, 3, 11 * time.Second, "budget spent"},
		{"scout before MinWithin", Allotment{Share: time.Second, Max: 10 * time.Second, MinWithin: 3 * time.Second}, 24, 3, 2 * time.Second, ""},
		{"scout past MinWithin, plain minimum reached", Allotment{Share: time.Second, Max: 10 * time.Second, MinWithin: 3 * time.Second}, 24, 3, 4 * time.Second, "budget spent"},
		{"scout past MinWithin, short of the plain minimum", Allotment{Share: time.Second, Max: 10 * time.Second, MinWithin: 3 * time.Second}, 24, 1, 4 * time.Second, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBudget(tu, task, time.Now().Add(-tt.elapsed), tt.a, tt.least, 2)
			if got := b.stop(context.Background(), 1, measured(tt.measured)); got != tt.want {
				t.Errorf("stop after %v with %d measured = %q, want %q", tt.elapsed, tt.measured, got, tt.want)
			}
		})
	}
}

// An entry's minimum: a scout's for a second past its share, else the
// soft minimum up to twice its share where the backend compiles ahead,
// else none (the plain minimum).
func TestEntryMinimum(t *testing.T) {
	tests := []struct {
		name        string
		scout, soft int
		ahead       bool
		min         int
		within      time.Duration
	}{
		{"scout", 24, 60, true, 24, 5*time.Second + scoutExtra},
		{"soft minimum on a GPU", 0, 60, true, 60, 10 * time.Second},
		{"soft minimum on the host's CPU", 0, 60, false, 0, 0},
		{"none", 0, 0, true, 0, 0},
	}
	for _, tc := range tests {
		n, within := entryMinimum(5*time.Second, tc.scout, tc.soft, tc.ahead)
		if n != tc.min || within != tc.within {
			t.Errorf("%s: %d within %v, want %d within %v", tc.name, n, within, tc.min, tc.within)
		}
	}
}
