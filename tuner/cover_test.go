package tuner

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/kerntune/kerntune/search"
)

func TestCoveringSample(t *testing.T) {
	grid := &search.Space{Params: []search.Param{{Name: "A", Values: []int{1, 2, 4, 8}}, {Name: "B", Values: []int{16, 32, 64}}, {Name: "C", Values: []int{0, 1}}}}
	limited := &search.Space{Params: grid.Params, Constraints: []search.Constraint{{Name: "A·B ≤ 128", Check: func(c search.Candidate) error {
		if c["A"]*c["B"] > 128 {
			return fmt.Errorf("A·B = %d", c["A"]*c["B"])
		}
		return nil
	}}, {Name: "C=1 needs A ≥ 2", Check: func(c search.Candidate) error {
		if c["C"] == 1 && c["A"] < 2 {
			return fmt.Errorf("C=1 with A=%d", c["A"])
		}
		return nil
	}}}}
	noC1 := &search.Space{Params: grid.Params, Constraints: []search.Constraint{{Name: "C = 0", Check: func(c search.Candidate) error {
		if c["C"] != 0 {
			return fmt.Errorf("C=%d", c["C"])
		}
		return nil
	}}}}
	tests := []struct {
		name        string
		space       *search.Space
		values      int
		uncoverable []string
		maxSample   int
	}{
		{"full grid", grid, 9, nil, 4},
		{"constrained", limited, 9, nil, 6},
		{"a value no valid candidate takes", noC1, 8, []string{"C=1"}, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cands := tc.space.Enumerate()
			cov := CoveringSample(tc.space.Params, cands, 7)
			if cov.Values != tc.values || !reflect.DeepEqual(cov.Uncoverable, tc.uncoverable) {
				t.Fatalf("values %d, uncoverable %v; want %d, %v", cov.Values, cov.Uncoverable, tc.values, tc.uncoverable)
			}
			if len(cov.Sample) == 0 || len(cov.Sample) > tc.maxSample {
				t.Fatalf("sample of %d candidates, want 1..%d", len(cov.Sample), tc.maxSample)
			}
			valid := map[string]bool{}
			for _, c := range cands {
				valid[c.Key()] = true
			}
			seen := map[string]bool{}
			for _, c := range cov.Sample {
				if !valid[c.Key()] {
					t.Fatalf("sampled %s is not a valid candidate", c.Key())
				}
				for n, v := range c {
					seen[fmt.Sprintf("%s=%d", n, v)] = true
				}
			}
			if len(seen) != tc.values {
				t.Fatalf("sample covers %d values, want %d: %v", len(seen), tc.values, seen)
			}
			again := CoveringSample(tc.space.Params, cands, 7)
			if !reflect.DeepEqual(again.Sample, cov.Sample) {
				t.Fatal("the same seed gave a different sample")
			}
		})
	}
}
