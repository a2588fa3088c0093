package families

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
)

// TestExprTables runs the expression tables that the spec package and the
// Python loader run against this package's evaluator: every value must be
// the same (type and value) and every error case must fail. The messages
// are checked where the spec package runs them (with its file and field).
func TestExprTables(t *testing.T) {
	for _, file := range []string{"../testdata/conformance/expressions/expressions.json", "../../spec/testdata/expressions.json"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var suite struct {
			Cases []testutil.ExprCase `json:"cases"`
		}
		if err := json.Unmarshal(data, &suite); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(suite.Cases) < 40 {
			t.Fatalf("%s: %d cases", file, len(suite.Cases))
		}
		for _, c := range suite.Cases {
			env, types := map[string]any{}, map[string]string{}
			for k, raw := range c.Env {
				v := jsonValue(t, raw)
				env[k], types[k] = v, typeOf(v)
			}
			got, err := evalKind(c.Expr, c.Kind, env, types)
			if len(c.Error) > 0 {
				if err == nil {
					t.Errorf("%s: %q = %v; want an error", file, c.Expr, got)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %q: %v", file, c.Expr, err)
				continue
			}
			if want := jsonValue(t, c.Want); !sameValue(got, want, c.Kind) {
				t.Errorf("%s: %q = %#v; want %#v", file, c.Expr, got, want)
			}
		}
	}
}

// evalKind parses and evaluates src as a spec field of kind does.
func evalKind(src, kind string, env map[string]any, types map[string]string) (any, error) {
	e, err := ParseExpr(src, types)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "bool":
		if e.typ != typBool && e.typ != "" {
			return nil, mismatch("kind", e.typ, typBool)
		}
		return e.EvalBool(env)
	case "float":
		if !numeric(e.typ) {
			return nil, mismatch("kind", e.typ, typFloat)
		}
		return e.EvalFloat(env)
	}
	return e.EvalInt(env)
}

// jsonValue is testutil.ExprValue of raw; t fails when raw is none of its
// values.
func jsonValue(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	v, err := testutil.ExprValue(raw)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func sameValue(got, want any, kind string) bool {
	if kind == "float" {
		g, ok1 := got.(float64)
		w, ok2 := want.(float64)
		if !ok2 {
			if wi, ok := want.(int); ok {
				w, ok2 = float64(wi), true
			}
		}
		if !ok1 || !ok2 {
			return false
		}
		if math.IsNaN(w) {
			return math.IsNaN(g)
		}
		return g == w && math.Signbit(g) == math.Signbit(w)
	}
	if kind == "int" {
		if w, ok := want.(float64); ok && w == math.Trunc(w) {
			want = int(w)
		}
	}
	return got == want
}
