package stats

import (
	"math"
	"testing"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"one", []float64{3}, 3},
		{"odd unsorted", []float64{5, 1, 3}, 3},
		{"even takes mean of middle two", []float64{4, 1, 3, 2}, 2.5},
		{"duplicates", []float64{2, 2, 2, 9}, 2},
		{"negative", []float64{-1, -5, -3}, -3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.in...)
			if got := Median(tt.in); got != tt.want {
				t.Errorf("Median(%v) = %v, want %v", tt.in, got, tt.want)
			}
			for i := range in {
				if in[i] != tt.in[i] {
					t.Fatalf("Median modified its input")
				}
			}
		})
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median(nil) should be NaN")
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{1, 2, 3, 4, 5, 6, 7, 8})
	if s.Count != 8 || s.Median != 4.5 || s.Min != 1 || s.Max != 8 || s.Mean != 4.5 {
		t.Errorf("unexpected summary %+v", s)
	}
	// Linear interpolation: Q1 at 2.5, Q3 at 6.5 for 1..8 (gonum's LinInterp: p·n-th point).
	if math.Abs(s.IQR-4) > 1e-12 {
		t.Errorf("IQR = %v, want 4", s.IQR)
	}
	if one := Summarize([]float64{2}); one.IQR != 0 || one.CV != 0 || one.Median != 2 {
		t.Errorf("single sample summary %+v", one)
	}
}
