package params

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestFamilyConformance runs testdata/conformance/families/families.json,
// which the Python loader runs too (python/tests/test_families.py): every
// built-in family must classify each shape and accept or reject each
// parameter combination with the same class or message in both loaders.
// The cases were drawn from the hand-written families the descriptions
// replaced, which gave the same answer on every combination of every space.
func TestFamilyConformance(t *testing.T) {
	data, err := os.ReadFile("testdata/conformance/families/families.json")
	if err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Doc      string `json:"doc"`
		Classify []struct {
			Family string `json:"family"`
			Shape  []int  `json:"shape"`
			Class  string `json:"class"`
			Error  string `json:"error"`
		} `json:"classify"`
		Check []struct {
			Family string         `json:"family"`
			Space  string         `json:"space"`
			Shape  []int          `json:"shape"`
			Params map[string]int `json:"params"`
			Error  string         `json:"error"`
		} `json:"check"`
	}
	if err := json.Unmarshal(data, &suite); err != nil {
		t.Fatal(err)
	}
	if len(suite.Classify) < 100 || len(suite.Check) < 100 {
		t.Fatalf("%d classify and %d check cases; the suite holds at least 100 of each", len(suite.Classify), len(suite.Check))
	}
	fams := Builtin()
	for _, c := range suite.Classify {
		got, err := fams[c.Family].Classify(c.Shape)
		if msg := errString(err); got != c.Class || msg != c.Error {
			t.Errorf("%s.Classify(%v) = %q, %q; want %q, %q", c.Family, c.Shape, got, msg, c.Class, c.Error)
		}
	}
	for _, c := range suite.Check {
		msg := "valid"
		if err := fams[c.Family].Spaces[c.Space].Check(c.Shape, c.Params); err != nil {
			msg = err.Error()
		}
		if msg != c.Error {
			t.Errorf("%s %s Check(%v, %v) = %q; want %q", c.Family, c.Space, c.Shape, c.Params, msg, c.Error)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestParseFamilyErrors: a description that cannot be right is refused
// with a message naming what is wrong.
func TestParseFamilyErrors(t *testing.T) {
	const good = `{"name": "scale", "doc": "y = a·x", "dims": ["n"],
		"classes": [{"name": "small", "rule": "n ≤ 4096", "when": "n <= 4096"}, {"name": "large", "rule": "otherwise"}],
		"spaces": {"cpu": {"params": [{"name": "THREADS", "values": [1, 2], "default": 1, "doc": "goroutines"}],
		"constraints": [{"require": "THREADS <= n", "error": "THREADS={THREADS} exceeds n={n}"}]}}}`
	if _, err := ParseFamily([]byte(good)); err != nil {
		t.Fatalf("good description: %v", err)
	}
	tests := []struct {
		name, old, new, want string
	}{
		{"unknown field", `"doc"`, `"docs"`, "unknown field"},
		{"no name", `"name": "scale"`, `"name": ""`, "name, dims, classes and spaces are required"},
		{"default not a value", `"default": 1`, `"default": 3`, "THREADS's default 3 is not one of its values"},
		{"unknown name", `"THREADS <= n"`, `"THREADS <= m"`, "unknown name m"},
		{"not a boolean", `"THREADS <= n"`, `"THREADS + n"`, "is int, not a boolean"},
		{"bad template", `exceeds n={n}`, `exceeds n={n`, "{ without }"},
		{"last class has a when", `"rule": "otherwise"}`, `"rule": "otherwise", "when": "n > 4096"}`, "the last class (large) must have no when"},
		{"class without when", `"rule": "n ≤ 4096", "when": "n <= 4096"`, `"rule": "n ≤ 4096"`, "only the last class may have no when"},
		{"operand of no dim", `"dims": ["n"],`, `"dims": ["n"], "operands": [["n", "m"]],`, `"m" is not a dim`},
		{"param named as a dim", `{"name": "THREADS"`, `{"name": "n"`, "parameter n named twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(good, tc.old, tc.new, 1)
			if src == good {
				t.Fatalf("%q not in the description", tc.old)
			}
			_, err := ParseFamily([]byte(src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseFamily: %v; want an error containing %q", err, tc.want)
			}
		})
	}
}
