package registry

import (
	"slices"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
)

func TestMap(t *testing.T) {
	var r Map[int]
	if _, ok := r.Get("a"); ok || len(r.Names()) != 0 {
		t.Fatal("the zero Map is not empty")
	}
	for i, name := range []string{"a", "b", "a"} { // the second a replaces the first
		if err := r.Add(name, false, i); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WantErr(t, r.Add("gemv_nt", true, 9), `kernel name "gemv_nt" is a built-in family; choose another name`)
	if v, ok := r.Get("a"); !ok || v != 2 {
		t.Errorf("Get(a) = %d, %v; want the replacement 2", v, ok)
	}
	if _, ok := r.Get("gemv_nt"); ok {
		t.Error("a refused name was added")
	}
	names := r.Names()
	slices.Sort(names)
	if !slices.Equal(names, []string{"a", "b"}) {
		t.Errorf("Names() = %v, want [a b]", names)
	}
}
