package replay

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/search/ktcache"
)

// RunAll gives each cache and strategy the report Run gives it alone, in
// cache-then-strategy order, and names the pair of the first failure.
func TestRunAll(t *testing.T) {
	a, b := synthCache(t), synthCache(t)
	a.Path, b.Path = "a.json", "b.json"
	cfg := Config{Budgets: []int{5, 20}, Runs: 3, Seed: 7, Options: search.Options{NoRace: true}}
	strategies := []string{"ils", "random"}
	reports, err := RunAll([]*ktcache.Cache{a, b}, strategies, func(*ktcache.Cache, string) Config { return cfg })
	if err != nil {
		t.Fatal(err)
	}
	for ci, c := range []*ktcache.Cache{a, b} {
		for si, s := range strategies {
			one := cfg
			one.Strategy = s
			want, err := Run(c, one)
			if err != nil {
				t.Fatal(err)
			}
			r := reports[ci][si]
			if r.Cache != c.Path || r.Strategy != s || r.Runs != 3 || !r.NoRace || !reflect.DeepEqual(r.Budgets, want) {
				t.Errorf("report [%d][%d] = %+v, want %s with %s: %+v", ci, si, r, c.Path, s, want)
			}
		}
	}
	_, err = RunAll([]*ktcache.Cache{a}, []string{"ils"}, func(*ktcache.Cache, string) Config { return Config{Budgets: []int{5}} })
	if err == nil || !strings.Contains(err.Error(), "a.json with ils") {
		t.Errorf("error %v does not name the cache and the strategy", err)
	}
}

// WarmStarts are the fastest valid configurations of each cache in turn.
func TestWarmStarts(t *testing.T) {
	c := synthCache(t) // fastest at (4, 1), then its four neighbours
	got := WarmStarts([]*ktcache.Cache{c, c}, 2)
	if len(got) != 4 || got[0].Key() != (search.Candidate{"x": 4, "y": 1}).Key() || got[2].Key() != got[0].Key() {
		t.Fatalf("warm starts %v", got)
	}
	first := got[1]
	if d := (first["x"]-4)*(first["x"]-4) + (first["y"]-1)*(first["y"]-1); d != 1 {
		t.Errorf("second warm start %v is not a neighbour of the optimum", first)
	}
	if n := len(WarmStarts(nil, 5)); n != 0 {
		t.Errorf("%d warm starts from no cache", n)
	}
}
