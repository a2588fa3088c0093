package spec

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
)

// requireNumpy skips a test without a python3 that has numpy, unless
// KTDEV_REQUIRE_NUMPY (set in CI) says it must run.
func requireNumpy(t *testing.T) {
	t.Helper()
	if _, err := findPython(); err != nil {
		if os.Getenv("KTDEV_REQUIRE_NUMPY") != "" {
			t.Fatalf("KTDEV_REQUIRE_NUMPY is set: %v", err)
		}
		t.Skip(err)
	}
}

// scanRef is a recurrence, row by row, as its author would write it; it
// also checks what kerntune passes (a scalar constant, an array constant,
// the dims, the dtype).
const scanRef = `import numpy as np

def reference(Q, v, eps, shape, m, k, dtype):
    assert np.ndim(eps) == 0 and abs(eps - 1e-6) < 1e-9, eps
    assert list(shape) == [m, k], shape
    assert Q.shape == (m, k) and v.shape == (m,), (Q.shape, v.shape)
    assert dtype in ("f32", "f16", "bf16"), dtype
    y = np.zeros_like(Q)
    for r in range(m):
        acc = v[r]
        for j in range(k):
            acc = 0.5 * acc + Q[r, j]
            y[r, j] = acc
    return y

def two(Q, v, m, k, **kw):
    y = reference(Q, v, m=m, k=k, **kw)
    return {"rows": y[:, -1], "y": y}

def two_tuple(Q, v, m, k, **kw):
    y = reference(Q, v, m=m, k=k, **kw)
    return y, y[:, -1]

def wrong(Q, v, m, k, **kw):
    y = reference(Q, v, m=m, k=k, **kw)
    y[0, 0] += 1
    return y

def short(Q, **kw):
    return Q.ravel()[:-1]

def nan(Q, **kw):
    return Q * np.nan

def raises(Q, **kw):
    return Q[1000000]

def pair(Q, **kw):
    return Q, Q
`

// scan is scanRef computed in Go: the recurrence's outputs y (m×k) and,
// with rows, each row's last element.
func scan(q, v []float64, m, k int, rows bool) []float64 {
	y := make([]float64, m*k)
	last := make([]float64, m)
	for r := 0; r < m; r++ {
		acc := v[r]
		for j := 0; j < k; j++ {
			acc = 0.5*acc + q[r*k+j]
			y[r*k+j] = acc
		}
		last[r] = acc
	}
	if rows {
		return append(y, last...)
	}
	return y
}

// pySpec compiles the probe mlx spec with a Python reference (function fn
// of scanRef) and outputs y (m×k), and rows (m) when rows is set.
func pySpec(t *testing.T, fn string, rows bool, edit func(map[string]any)) (*Compiled, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "scan_ref.py"), []byte(scanRef), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := mlxDoc("y[0] = T(0);")
	m := doc["source"].(map[string]any)["mlx"].(map[string]any)
	bufs := []any{
		map[string]any{"name": "Q", "io": "in", "shape": []any{"m", "k"}},
		map[string]any{"name": "v", "io": "in", "length": "m"},
		map[string]any{"name": "y", "io": "out", "shape": []any{"m", "k"}},
	}
	m["output_names"] = []any{"y"}
	if rows {
		bufs = append(bufs, map[string]any{"name": "rows", "io": "out", "length": "m"})
		m["output_names"] = []any{"y", "rows"}
	}
	doc["buffers"] = bufs
	doc["reference"] = map[string]any{"python": map[string]any{"file": "scan_ref.py", "function": fn}}
	if edit != nil {
		edit(doc)
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return Parse(data, filepath.Join(dir, "scan.json"))
}

// pyProblem draws a problem of c and returns its reference and, computed
// in Go from the same inputs, the expected one.
func pyProblem(t *testing.T, c *Compiled, shape []int, rows bool) (*kernels.Problem, []float64) {
	t.Helper()
	p, err := kernels.NewProblem(c.Kernel, kernels.F32, kernels.Case{Shape: shape}, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	// Inputs in binding order: Q, eps, v, shape.
	q, v := make([]float64, len(p.Inputs[0])), make([]float64, len(p.Inputs[2]))
	for i, x := range p.Inputs[0] {
		q[i] = float64(x)
	}
	for i, x := range p.Inputs[2] {
		v[i] = float64(x)
	}
	return p, scan(q, v, shape[0], shape[1], rows)
}

func TestPythonReference(t *testing.T) {
	requireNumpy(t)
	tests := []struct {
		name, fn string
		rows     bool
	}{
		{"recurrence", "reference", false},
		{"two outputs by name", "two", true},
		{"two outputs in order", "two_tuple", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := pySpec(t, tt.fn, tt.rows, nil)
			if err != nil {
				t.Fatal(err)
			}
			p, want := pyProblem(t, c, []int{5, 37}, tt.rows)
			ref := p.Reference()
			if err := p.ReferenceErr(); err != nil {
				t.Fatal(err)
			}
			if len(ref) != len(want) {
				t.Fatalf("%d reference elements, want %d", len(ref), len(want))
			}
			for i := range ref {
				if math.Abs(ref[i]-want[i]) > 1e-12 {
					t.Fatalf("ref[%d] = %g, want %g", i, ref[i], want[i])
				}
			}
			out := make([]float32, len(want))
			for i, x := range want {
				out[i] = float32(x)
			}
			if err := p.Verify(out); err != nil {
				t.Fatal(err)
			}
			out[len(out)-1] += 0.5 // a wrong last element (of rows, with two outputs)
			if err := p.Verify(out); err == nil {
				t.Fatal("a wrong output passed verification")
			}
		})
	}
}

// A reference that disagrees with the kernel fails its verification.
func TestPythonReferenceWrong(t *testing.T) {
	requireNumpy(t)
	c, err := pySpec(t, "wrong", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, want := pyProblem(t, c, []int{3, 9}, false)
	out := make([]float32, len(want))
	for i, x := range want {
		out[i] = float32(x)
	}
	if err := p.Verify(out); err == nil {
		t.Fatal("outputs right by the Go computation passed a wrong reference")
	}
}

func TestPythonReferenceErrors(t *testing.T) {
	requireNumpy(t)
	tests := []struct {
		name, fn string
		rows     bool
		edit     func(map[string]any)
		want     []string
	}{
		{"missing function", "nothere", false, nil, []string{"reference.python", "scan_ref.py", "no function 'nothere'", "two_tuple"}},
		{"wrong count", "pair", false, nil, []string{"reference.python", "returned 2 array(s)", "1 output(s) (y)"}},
		{"wrong count of two", "reference", true, nil, []string{"returned 1 array(s)", "2 output(s) (y, rows)"}},
		{"wrong length", "short", false, nil, []string{"output y has", "want"}},
		{"not finite", "nan", false, nil, []string{"scan_ref.py", "not finite", "NaN"}},
		{"raises", "raises", false, nil, []string{"scan_ref.py, function raises) raised", "IndexError", "Q[1000000]"}},
		{"missing file", "reference", false, func(d map[string]any) {
			d["reference"] = map[string]any{"python": map[string]any{"file": "nothere.py"}}
		}, []string{"reference.python.file", "nothere.py", "relative to the spec"}},
		{"expr and python", "reference", false, func(d map[string]any) {
			d["reference"].(map[string]any)["expr"] = "0"
		}, []string{"reference.expr or reference.python, not both"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := pySpec(t, tt.fn, tt.rows, tt.edit)
			if err == nil {
				err = c.CheckReference()
			}
			if err == nil {
				t.Fatal("compiled and checked")
			}
			t.Log(err)
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// Loading a spec with a Python reference needs no Python (resolving
// parameters must not); checking it, or verifying against it, without
// numpy fails naming reference.python and how to install numpy.
func TestPythonReferenceWithoutNumpy(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "python3")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'No module named numpy' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KERNTUNE_PYTHON", fake)
	c, err := pySpec(t, "reference", false, nil)
	if err != nil {
		t.Fatalf("loading needs numpy: %v", err)
	}
	p, err := kernels.NewProblem(c.Kernel, kernels.F32, kernels.Case{Shape: []int{9, 3}}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{c.CheckReference(), p.Verify(make([]float32, 27))} {
		if err == nil {
			t.Fatal("checked without numpy")
		}
		for _, w := range []string{"reference.python", "apt-get install python3-numpy", "pip install numpy", "KERNTUNE_PYTHON"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error lacks %q:\n%v", w, err)
			}
		}
	}
}

// The spec fields of a Python reference and of input distributions are
// in the schema.
func TestPythonReferenceSchema(t *testing.T) {
	s := testutil.Schema(t, "schema.json", SchemaJSON)
	ex, err := os.ReadFile(examplePath("mlx_ema_scan.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := testutil.Validate(s, ex); err != nil {
		t.Fatalf("mlx_ema_scan.json: %v", err)
	}
	doc := mlxDoc("out[0] = T(0);")
	doc["reference"] = map[string]any{"python": map[string]any{"file": "scan_ref.py", "function": "two"}}
	doc["buffers"].([]any)[0].(map[string]any)["dist"] = "sorted"
	data, _ := json.Marshal(doc)
	if err := testutil.Validate(s, data); err != nil {
		t.Fatal(err)
	}
	doc["buffers"].([]any)[0].(map[string]any)["dist"] = "gauss"
	data, _ = json.Marshal(doc)
	if err := testutil.Validate(s, data); err == nil {
		t.Fatal("the schema takes dist gauss")
	}
	doc["buffers"].([]any)[0].(map[string]any)["dist"] = "int"
	doc["reference"] = map[string]any{"python": map[string]any{"function": "two"}}
	data, _ = json.Marshal(doc)
	if err := testutil.Validate(s, data); err == nil {
		t.Fatal("the schema takes reference.python without a file")
	}
}
