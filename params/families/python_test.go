package families

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
)

// TestPythonBuiltinFamilies holds the Python loader's built-in families
// (builtin_families in python/kerntune_params) to this package's: the same
// names, docs, dims, classes and, per space kind, parameters with their
// values, defaults and docs, and the same space kind for every backend
// name. A family or backend added on one side only fails here; the
// conformance suite then checks that both resolve alike.
func TestPythonBuiltinFamilies(t *testing.T) {
	py := testutil.Python3(t)
	src, err := filepath.Abs(filepath.Join("..", "..", "python"))
	if err != nil {
		t.Fatal(err)
	}
	const script = `import json, sys, kerntune_params as kp
fams = {n: {"doc": f.doc, "dims": list(f.dims), "classes": [list(c) for c in f.classes],
            "spaces": {k: [[p.name, list(p.values), p.default, p.doc] for p in s.params] for k, s in f.spaces.items()}}
        for n, f in kp.builtin_families().items()}
kinds = {b: kp.space_kind(b) for b in sys.argv[1:]}
print(json.dumps({"families": fams, "space_kinds": kinds}))`
	type family struct {
		Doc     string             `json:"doc"`
		Dims    []string           `json:"dims"`
		Classes [][2]string        `json:"classes"`
		Spaces  map[string][][]any `json:"spaces"`
	}
	// Every registered backend (tuner's registry test holds them to
	// SpaceKind), the kind name gpu and a name that is none of them.
	backends := []string{"cpu", "cuda", "metal", "opencl", "gpu", "none"}
	cmd := exec.Command(py, append([]string{"-c", script}, backends...)...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+src, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var got struct {
		Families   map[string]family `json:"families"`
		SpaceKinds map[string]string `json:"space_kinds"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := map[string]family{}
	for name, f := range Builtin() {
		w := family{Doc: f.Doc, Dims: f.Dims, Spaces: map[string][][]any{}}
		for _, c := range f.Classes {
			w.Classes = append(w.Classes, [2]string{c.Name, c.Rule})
		}
		for kind, s := range f.Spaces {
			for _, p := range s.Params {
				vals := make([]any, len(p.Values))
				for i, v := range p.Values {
					vals[i] = float64(v) // as encoding/json decodes a number into any
				}
				w.Spaces[kind] = append(w.Spaces[kind], []any{p.Name, vals, float64(p.Default), p.Doc})
			}
		}
		want[name] = w
	}
	for _, name := range BuiltinNames() {
		g, ok := got.Families[name]
		if !ok {
			t.Errorf("family %s: missing from the Python loader's builtin_families", name)
			continue
		}
		if !reflect.DeepEqual(g, want[name]) {
			t.Errorf("family %s differs between the loaders:\nPython %+v\nGo     %+v", name, g, want[name])
		}
	}
	for name := range got.Families {
		if _, ok := want[name]; !ok {
			t.Errorf("family %s: in the Python loader only", name)
		}
	}
	for _, b := range backends {
		if g, w := got.SpaceKinds[b], SpaceKind(b); g != w {
			t.Errorf("space kind of %q: Python %q, Go %q", b, g, w)
		}
	}
}
