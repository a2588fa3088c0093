package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
)

// exprConformanceFile holds expression cases the Python loader
// (python/tests/test_expressions.py) runs too: values, integer and float
// results, and the messages of compile and run-time errors.
const exprConformanceFile = "../params/testdata/conformance/expressions/expressions.json"

// TestExprConformance runs the shared expression cases through the
// evaluator of spec fields: compileExpr, then evalInt, evalBool or
// evalFloat by kind.
func TestExprConformance(t *testing.T) {
	data, err := os.ReadFile(exprConformanceFile)
	if err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Doc   string              `json:"doc"`
		Cases []testutil.ExprCase `json:"cases"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&suite); err != nil {
		t.Fatal(err)
	}
	if len(suite.Cases) < 40 {
		t.Fatalf("%d cases; want at least 40", len(suite.Cases))
	}
	kinds := map[string]kind{"int": intKind, "bool": boolKind, "float": floatKind}
	for _, c := range suite.Cases {
		t.Run(c.Name, func(t *testing.T) {
			k, ok := kinds[c.Kind]
			if !ok {
				t.Fatalf("kind %q", c.Kind)
			}
			if (len(c.Error) == 0) == (len(c.Want) == 0) {
				t.Fatalf("give exactly one of want and error")
			}
			var want testutil.ExprError
			if len(c.Error) > 0 {
				dec := json.NewDecoder(bytes.NewReader(c.Error))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&want); err != nil {
					t.Fatalf("error: %v", err)
				}
			}
			env := map[string]any{}
			for n, raw := range c.Env {
				v, err := testutil.ExprValue(raw)
				if err != nil {
					t.Fatalf("env %s: %v", n, err)
				}
				env[n] = v
			}
			got, stage, err := evalCase(c.Expr, env, k)
			if len(c.Error) > 0 {
				if err == nil {
					t.Fatalf("%q = %v; want a %s error", c.Expr, got, want.Stage)
				}
				if stage != want.Stage {
					t.Errorf("%q: %s error %v; want a %s error", c.Expr, stage, err, want.Stage)
				}
				for _, sub := range want.Contains {
					if !strings.Contains(err.Error(), sub) {
						t.Errorf("%q: error %q lacks %q", c.Expr, err.Error(), sub)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("%q: %v", c.Expr, err)
			}
			if !sameResult(got, c.Want) {
				t.Errorf("%q = %s, want %s", c.Expr, fmtValue(got), c.Want)
			}
		})
	}
}

func evalCase(src string, env map[string]any, k kind) (any, string, error) {
	p, err := compileExpr("expressions.json", "expr", src, env, k)
	if err != nil {
		return nil, "compile", err
	}
	var v any
	switch k {
	case intKind:
		v, err = p.evalInt(env)
	case boolKind:
		v, err = p.evalBool(env)
	default:
		v, err = p.evalFloat(env)
	}
	return v, "run", err
}

// sameResult compares a result with the case's want: an integer, a
// float (a JSON number with a fraction or exponent, or "NaN", "Infinity",
// "-Infinity"), or a boolean, of the same type and value.
func sameResult(got any, want json.RawMessage) bool {
	w := strings.TrimSpace(string(want))
	f, isFloat := got.(float64)
	if !isFloat {
		return w == fmtValue(got)
	}
	var s string
	if json.Unmarshal(want, &s) == nil {
		return fmtValue(f) == w
	}
	if !strings.ContainsAny(w, ".eE") {
		return false
	}
	var x float64
	return json.Unmarshal(want, &x) == nil && x == f && math.Signbit(x) == math.Signbit(f)
}

// fmtValue writes a result as the cases give it: integers plain, floats
// as JSON numbers with a fraction or exponent ("Infinity", "-Infinity",
// "NaN" as strings), booleans as true or false.
func fmtValue(v any) string {
	switch x := v.(type) {
	case float64:
		switch {
		case math.IsNaN(x):
			return `"NaN"`
		case math.IsInf(x, 1):
			return `"Infinity"`
		case math.IsInf(x, -1):
			return `"-Infinity"`
		}
		s := fmt.Sprintf("%v", x)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		return s
	}
	return fmt.Sprint(v)
}

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
