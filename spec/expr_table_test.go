package spec

import (
	"encoding/json"
	"os"
	"testing"
)

// TestExpressionTable runs testdata/expressions.json, which the Python
// loader (python/tests/test_expressions.py) runs too: both evaluators of the
// expression language must agree on every spec expression it reads.
func TestExpressionTable(t *testing.T) {
	data, err := os.ReadFile("testdata/expressions.json")
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Cases []struct {
			Expr  string         `json:"expr"`
			Kind  string         `json:"kind"`
			Env   map[string]int `json:"env"`
			Want  any            `json:"want"`
			Error string         `json:"error"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatal(err)
	}
	if len(table.Cases) < 40 {
		t.Fatalf("%d cases", len(table.Cases))
	}
	kinds := map[string]kind{"int": intKind, "bool": boolKind, "float": floatKind}
	for _, c := range table.Cases {
		env := map[string]any{}
		for k, v := range c.Env {
			env[k] = v
		}
		k, ok := kinds[c.Kind]
		if !ok {
			t.Fatalf("%q: kind %q", c.Expr, c.Kind)
		}
		p, err := compileExpr("expressions.json", "expr", c.Expr, env, k)
		if c.Error == "compile" {
			if err == nil {
				t.Errorf("%q compiled; want a compile error", c.Expr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.Expr, err)
			continue
		}
		var got any
		switch k {
		case intKind:
			var n int
			n, err = p.evalInt(env)
			got = float64(n)
		case boolKind:
			got, err = p.evalBool(env)
		case floatKind:
			got, err = p.evalFloat(env)
		}
		switch {
		case c.Error == "run":
			if err == nil {
				t.Errorf("%q = %v; want a run-time error", c.Expr, got)
			}
		case err != nil:
			t.Errorf("%q: %v", c.Expr, err)
		case got != c.Want:
			t.Errorf("%q = %v, want %v", c.Expr, got, c.Want)
		}
	}
}
