package search

import (
	"fmt"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
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

// A space given Within (an enumeration under some of its constraints)
// enumerates exactly what the walk of its product does, in the same order,
// and hands out copies that do not alias Within.
func TestEnumerateWithin(t *testing.T) {
	mod := func(name string, m, r int) Constraint {
		return Constraint{Name: name, Check: func(c Candidate) error {
			if (c["A"]+c["B"]+c["C"])%m != r {
				return fmt.Errorf("%s", name)
			}
			return nil
		}}
	}
	ps := []Param{{Name: "A", Values: []int{1, 2, 3, 4, 5}}, {Name: "B", Values: []int{1, 2, 4, 8}}, {Name: "C", Values: []int{0, 3, 6}}}
	shared := &Space{Params: ps, Constraints: []Constraint{mod("odd", 2, 1)}}
	within := shared.Enumerate()
	for _, r := range []int{0, 1, 2} {
		perShape := mod(fmt.Sprint("mod 3 = ", r), 3, r)
		perShape.PerShape = true
		full := &Space{Params: ps, Constraints: []Constraint{mod("odd", 2, 1), perShape}}
		want := full.Enumerate()
		full.Within = within
		got := full.Enumerate()
		if err := testutil.SameKeys(got, want); err != nil || len(want) == 0 {
			t.Fatalf("r=%d: from Within, %v; %d from the product", r, err, len(want))
		}
		got[0]["A"] = 99
		for _, c := range within {
			if c["A"] == 99 {
				t.Fatal("Enumerate's candidates alias Within's")
			}
		}
	}
}
