package cover

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/kerntune/kerntune/search"
)

// takes lists what c takes at strength s, spelled as Missing spells it,
// computed here apart from the package's numbering.
func takes(params []search.Param, c search.Candidate, s int) []string {
	var singles []string
	for _, p := range params {
		if v, ok := c[p.Name]; ok && slices.Contains(p.Values, v) {
			singles = append(singles, fmt.Sprintf("%s=%d", p.Name, v))
		}
	}
	out := slices.Clone(singles)
	if s == Pairs {
		for a := range singles {
			for b := a + 1; b < len(singles); b++ {
				out = append(out, singles[a]+","+singles[b])
			}
		}
	}
	return out
}

func TestSampleCovers(t *testing.T) {
	check := func(name string, f func(c search.Candidate) bool) search.Constraint {
		return search.Constraint{Name: name, Check: func(c search.Candidate) error {
			if !f(c) {
				return fmt.Errorf("%s: %v", name, c)
			}
			return nil
		}}
	}
	params := []search.Param{{Name: "A", Values: []int{1, 2, 4, 8}}, {Name: "B", Values: []int{16, 32, 64}}, {Name: "C", Values: []int{0, 1}}}
	grid := &search.Space{Params: params}
	limited := &search.Space{Params: params, Constraints: []search.Constraint{
		check("A·B ≤ 128", func(c search.Candidate) bool { return c["A"]*c["B"] <= 128 }),
		check("C=1 needs A ≥ 2", func(c search.Candidate) bool { return c["C"] == 0 || c["A"] >= 2 }),
	}}
	noC1 := &search.Space{Params: params, Constraints: []search.Constraint{check("C = 0", func(c search.Candidate) bool { return c["C"] == 0 })}}
	// Like the GEMM space: a mode switch (MMA) under which other
	// parameters take other values.
	mma := &search.Space{Params: []search.Param{
		{Name: "BM", Values: []int{16, 32, 48, 64}}, {Name: "TM", Values: []int{1, 2, 4}},
		{Name: "WM", Values: []int{1, 2, 4}}, {Name: "STAGES", Values: []int{1, 2, 3}}, {Name: "MMA", Values: []int{0, 1}},
	}, Constraints: []search.Constraint{check("MMA rules", func(c search.Candidate) bool {
		if c["MMA"] == 1 {
			return c["TM"] == 1 && c["BM"]%(8*c["WM"]) == 0
		}
		return c["WM"] == 1 && c["STAGES"] <= 2 && c["BM"] != 48
	})}}
	tests := []struct {
		name        string
		space       *search.Space
		strength    int
		items       int
		uncoverable []string
		maxSample   int
	}{
		{"full grid", grid, Values, 9, nil, 4},
		{"constrained", limited, Values, 9, nil, 6},
		{"a value no valid candidate takes", noC1, Values, 8, []string{"C=1"}, 4},
		{"full grid, pairs", grid, Pairs, 9 + 4*3 + 4*2 + 3*2, nil, 16},
		{"constrained, pairs", limited, Pairs, 0, nil, 20},
		{"mode switch", mma, Values, 15, nil, 6},
		{"mode switch, pairs", mma, Pairs, 0, nil, 30},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cands := tc.space.Enumerate()
			want := map[string]bool{}
			for _, c := range cands {
				for _, it := range takes(tc.space.Params, c, tc.strength) {
					want[it] = true
				}
			}
			cov := Sample(tc.space.Params, cands, 7, tc.strength)
			if cov.Items != len(want) || (tc.items != 0 && cov.Items != tc.items) || !reflect.DeepEqual(cov.Uncoverable, tc.uncoverable) {
				t.Fatalf("items %d, uncoverable %v; want %d (%d counted here), %v", cov.Items, cov.Uncoverable, tc.items, len(want), tc.uncoverable)
			}
			if len(cov.Sample) == 0 || len(cov.Sample) > tc.maxSample {
				t.Fatalf("sample of %d candidates, want 1..%d", len(cov.Sample), tc.maxSample)
			}
			valid := map[string]bool{}
			for _, c := range cands {
				valid[c.Key()] = true
			}
			got := map[string]bool{}
			for _, c := range cov.Sample {
				if !valid[c.Key()] {
					t.Fatalf("sampled %s is not a valid candidate", c.Key())
				}
				for _, it := range takes(tc.space.Params, c, tc.strength) {
					got[it] = true
				}
			}
			for it := range want {
				if !got[it] {
					t.Errorf("the sample misses %s", it)
				}
			}
			if m := Missing(tc.space.Params, cands, cov.Sample, tc.strength); len(m) != 0 {
				t.Errorf("Missing of the sample: %v, want none", m)
			}
			// Missing has teeth: without any one sampled candidate, it
			// names exactly what only that one took.
			unique := 0
			for i := range cov.Sample {
				rest := slices.Concat(cov.Sample[:i:i], cov.Sample[i+1:])
				have := map[string]bool{}
				for _, c := range rest {
					for _, it := range takes(tc.space.Params, c, tc.strength) {
						have[it] = true
					}
				}
				var only []string
				for _, it := range takes(tc.space.Params, cov.Sample[i], tc.strength) {
					if !have[it] {
						only = append(only, it)
					}
				}
				m := Missing(tc.space.Params, cands, rest, tc.strength)
				slices.Sort(only)
				slices.Sort(m)
				if !slices.Equal(m, only) {
					t.Errorf("Missing without %s: %v, want %v", cov.Sample[i].Key(), m, only)
				}
				unique += len(only)
			}
			if unique == 0 {
				t.Error("no sampled candidate takes anything the others do not: the check above tested nothing")
			}
			again := Sample(tc.space.Params, cands, 7, tc.strength)
			if !reflect.DeepEqual(again.Sample, cov.Sample) {
				t.Fatal("the same seed gave a different sample")
			}
		})
	}
}
