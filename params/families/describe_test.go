package families

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestFamilyConformance runs params/testdata/conformance/families/families.json,
// which the Python loader runs too (python/tests/test_families.py): every
// built-in family must classify each shape and accept or reject each
// parameter combination with the same class or message in both loaders.
// The cases were drawn from the hand-written families the descriptions
// replaced, which gave the same answer on every combination of every space.
func TestFamilyConformance(t *testing.T) {
	data, err := os.ReadFile("../testdata/conformance/families/families.json")
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

// TestFastPathAgrees: the compiled evaluation of the constraints gives the
// answer of Eval on the combinations of every built-in space (with 0 for
// an absent parameter; a space of more than 20000 combinations is sampled
// with a prime stride, which no product of the values' counts aliases),
// without a shape and with one.
func TestFastPathAgrees(t *testing.T) {
	for _, d := range builtinDescs {
		for kind, rules := range d.spaces {
			if len(rules) == 0 {
				continue
			}
			slow := make([]rule, len(rules))
			for i, r := range rules {
				if r.fastRequire == nil {
					t.Errorf("%s %s: constraint %q is not compiled", d.desc.Name, kind, r.require)
				}
				r.fastWhen, r.fastRequire = nil, nil
				slow[i] = r
			}
			f := d.family()
			fast, ps := f.Spaces[kind].Check, f.Spaces[kind].Params
			eval := d.checker(ps, slow)
			shape := exampleShape(d.desc.Name)
			total, stride := 1, 1
			for _, p := range ps {
				total *= len(p.Values) + 1
			}
			for stride = max(1, total/20000); !isPrime(stride); stride++ {
			}
			for idx := 0; idx < total; idx += stride {
				p := combination(ps, idx)
				for _, s := range [][]int{nil, shape} {
					if a, b := errString(fast(s, p)), errString(eval(s, p)); a != b {
						t.Fatalf("%s %s %v %v: compiled %q, Eval %q", d.desc.Name, kind, s, p, a, b)
					}
				}
			}
		}
	}
}

func isPrime(n int) bool {
	if n < 2 {
		return n == 1 // stride 1 takes every combination
	}
	for d := 2; d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}

func exampleShape(family string) []int {
	switch family {
	case GemvNT:
		return []int{1, 896, 1001}
	case QGemv:
		return []int{1, 896, 4864, 2, 32}
	case Softmax, RMSNorm:
		return []int{4, 1002}
	}
	return []int{512, 4864, 896}
}

// combination is the idx-th combination of the parameters' values and 0
// (the last parameter varies fastest).
func combination(ps []Param, idx int) map[string]int {
	p := make(map[string]int, len(ps))
	for i := len(ps) - 1; i >= 0; i-- {
		vals := append(slices.Clone(ps[i].Values), 0)
		p[ps[i].Name] = vals[idx%len(vals)]
		idx /= len(vals)
	}
	return p
}
