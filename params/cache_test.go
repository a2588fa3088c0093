package params

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
)

// TestResolveCache: a result from the cache is the result a first resolve
// gives, a copy the caller may change, and follows the variables.
func TestResolveCache(t *testing.T) {
	vars := map[string]string{}
	var mu sync.Mutex
	lookup := func(k string) (string, bool) { mu.Lock(); defer mu.Unlock(); v, ok := vars[k]; return v, ok }
	setVar := func(k, v string) { mu.Lock(); defer mu.Unlock(); vars[k] = v }
	l, err := LoadBytes([]byte(precedenceFile), Options{Device: "cpu:a", Lookup: lookup})
	if err != nil {
		t.Fatal(err)
	}
	fresh := func(shape []int) *Resolved {
		t.Helper()
		l2, err := LoadBytes([]byte(precedenceFile), Options{Device: "cpu:a", Lookup: lookup})
		if err != nil {
			t.Fatal(err)
		}
		r, err := l2.Resolve(GemvNT, "f32", shape)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	shape := []int{1, 896, 4864}
	first, err := l.Resolve(GemvNT, "f32", shape)
	if err != nil {
		t.Fatal(err)
	}
	want := fresh(shape)
	// The caller's changes reach neither the cache nor later results.
	first.Params["BN"] = Value{1, "mine"}
	first.Shape[1] = 7
	for i := range 3 {
		r, err := l.Resolve(GemvNT, "f32", shape)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r, want) {
			t.Fatalf("resolve %d: %+v\nwant %+v", i, r, want)
		}
		r.Params["ROWS"] = Value{3, "mine"}
		r.Shape[0] = 5
	}
	setVar("KERNTUNE_GEMV_NT_BN", "8")
	r, err := l.Resolve(GemvNT, "f32", shape)
	if err != nil {
		t.Fatal(err)
	}
	if r.Params["BN"] != (Value{8, "env:KERNTUNE_GEMV_NT_BN"}) || !reflect.DeepEqual(r, fresh(shape)) {
		t.Errorf("after setting the variable: %+v", r.Params)
	}
	setVar("KERNTUNE_GEMV_NT_BN", "7")
	if _, err := l.Resolve(GemvNT, "f32", shape); err == nil {
		t.Error("a bad value of a variable after a cached resolve is no error")
	}
	setVar("KERNTUNE_GEMV_NT_BN", "")
	if r, err := l.Resolve(GemvNT, "f32", shape); err != nil || !reflect.DeepEqual(r, want) {
		t.Errorf("variable emptied: %+v, %v", r, err)
	}
}

// TestResolveCacheBounded: more shapes than the cache holds, from many
// goroutines, each resolved exactly; the cache never holds more than
// ResolveCacheSize results of a family.
func TestResolveCacheBounded(t *testing.T) {
	l, err := LoadBytes([]byte(precedenceFile), Options{Device: "cpu:a", Lookup: env()})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3 * ResolveCacheSize {
				n := 1 + (i*7+g)%2047
				shape := []int{1, n, 896}
				r, err := l.Resolve(GemvNT, "f32", shape)
				if err != nil {
					t.Error(err)
					return
				}
				if r.Shape[1] != n || r.Class != "tiny" {
					t.Errorf("shape %v: %+v", shape, r)
					return
				}
			}
		}()
	}
	wg.Wait()
	c := &l.fams[GemvNT].cache
	n := len(c.dirty)
	if m := c.read.Load(); m != nil {
		n += len(*m)
	}
	if n == 0 || n > ResolveCacheSize {
		t.Errorf("the cache holds %d results; at most %d", n, ResolveCacheSize)
	}
	for _, s := range [][]int{{1, 5, 896}, {1, 2000, 896}} {
		r, err := l.Resolve(GemvNT, "f32", s)
		if err != nil || fmt.Sprint(r.Shape) != fmt.Sprint(s) {
			t.Errorf("%v: %+v %v", s, r, err)
		}
	}
}

// TestLaunch: Launch gives what Resolve gives, shared and unchangeable;
// Resolved makes the copy a caller may change.
func TestLaunch(t *testing.T) {
	l, err := LoadBytes([]byte(precedenceFile), Options{Device: "cpu:a", Lookup: env("KERNTUNE_GEMV_NT_ROWS", "2")})
	if err != nil {
		t.Fatal(err)
	}
	shape := []int{1, 896, 4864}
	x, err := l.Launch(GemvNT, "f32", shape)
	if err != nil {
		t.Fatal(err)
	}
	want, err := l.Resolve(GemvNT, "f32", shape)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range want.Names() {
		if v, ok := x.Value(name); !ok || v != want.Params[name] || x.Int(name) != want.Int(name) {
			t.Errorf("%s: %v %v, want %v", name, v, ok, want.Params[name])
		}
	}
	if _, ok := x.Value("XX"); ok || x.Int("XX") != 0 {
		t.Error("a parameter the family does not have")
	}
	if x.UseBaseline() != want.UseBaseline || x.Baseline() != want.Baseline || !reflect.DeepEqual(x.Names(), want.Names()) {
		t.Errorf("launch %+v, want %+v", x, want)
	}
	r := x.Resolved()
	if !reflect.DeepEqual(r, want) {
		t.Errorf("Resolved() = %+v, want %+v", r, want)
	}
	r.Params["BN"] = Value{1, "mine"}
	x.Names()[0] = "mine"
	if x2, _ := l.Launch(GemvNT, "f32", shape); x2 != x || x.Int("BN") == 1 || x.Names()[0] == "mine" {
		t.Errorf("the shared result changed, or was not shared: %+v", x2)
	}
	if _, err := l.Launch("nope", "f32", shape); err == nil {
		t.Error("unknown family")
	}
}
