package registry

import (
	"slices"
	"strings"
	"testing"
)

func TestMap(t *testing.T) {
	var r Map[int]
	if _, ok := r.Get("a"); ok || len(r.Names()) != 0 {
		t.Fatal("the zero Map is not empty")
	}
	for _, tt := range []struct {
		name    string
		builtin bool
		v       int
		err     string
	}{
		{"a", false, 1, ""},
		{"b", false, 2, ""},
		{"a", false, 3, ""}, // replaces
		{"gemv_nt", true, 4, `kernel name "gemv_nt" is a built-in family; choose another name`},
	} {
		err := r.Add(tt.name, tt.builtin, tt.v)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("Add(%q, %v) = %v, want %q", tt.name, tt.builtin, err, tt.err)
		}
	}
	if v, ok := r.Get("a"); !ok || v != 3 {
		t.Errorf("Get(a) = %d, %v; want the replacement 3", v, ok)
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
