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
