package search

import (
	"fmt"
	"testing"
)

// Enumerate checks large products in parallel pieces; the result is the
// same as a plain walk of the product in order, for sizes below, at and
// across the piece boundaries.
func TestEnumerateInOrder(t *testing.T) {
	vals := func(n int) []int {
		v := make([]int, n)
		for i := range v {
			v[i] = i + 1
		}
		return v
	}
	for _, dims := range [][]int{{}, {1}, {7}, {64, 64}, {64, 64, 3}, {10, 9, 8, 7, 6, 5}} {
		sp := &Space{Constraints: []Constraint{{Name: "sum odd", Check: func(c Candidate) error {
			s := 0
			for _, v := range c {
				s += v
			}
			if s%2 == 0 {
				return fmt.Errorf("even")
			}
			return nil
		}}}}
		for i, d := range dims {
			sp.Params = append(sp.Params, Param{Name: fmt.Sprintf("P%d", i), Values: vals(d)})
		}
		var want []string
		idx := make([]int, len(dims))
		for {
			c := Candidate{}
			for i, p := range sp.Params {
				c[p.Name] = p.Values[idx[i]]
			}
			if sp.Check(c) == nil {
				want = append(want, c.Key())
			}
			i := len(idx) - 1
			for ; i >= 0; i-- {
				if idx[i]++; idx[i] < dims[i] {
					break
				}
				idx[i] = 0
			}
			if i < 0 {
				break
			}
		}
		got := sp.Enumerate()
		if len(got) != len(want) {
			t.Fatalf("dims %v: %d candidates, want %d", dims, len(got), len(want))
		}
		for i := range got {
			if got[i].Key() != want[i] {
				t.Fatalf("dims %v: candidate %d is %s, want %s", dims, i, got[i].Key(), want[i])
			}
		}
	}
}
