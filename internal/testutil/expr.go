package testutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// ExprCase is a case of the expression tables that the params and spec
// evaluators and the Python loader all run: the conformance suite
// (params/testdata/conformance/expressions) and the spec package's
// table. Error is the conformance suite's object (see ExprError) or the
// spec table's stage, "compile" or "run"; empty when the case has a Want.
type ExprCase struct {
	Name  string                     `json:"name"`
	Expr  string                     `json:"expr"`
	Kind  string                     `json:"kind"`
	Env   map[string]json.RawMessage `json:"env"`
	Want  json.RawMessage            `json:"want"`
	Error json.RawMessage            `json:"error"`
}

// ExprError is the conformance suite's error of a case: the stage that
// fails and what its message must contain.
type ExprError struct {
	Stage    string   `json:"stage"`
	Contains []string `json:"contains"`
}

// ExprValue reads a value of a case (an env value or a want): an int (a
// JSON number without fraction or exponent), a float, a bool, "NaN",
// "Infinity", "-Infinity", or an array of floats (a buffer).
func ExprValue(raw json.RawMessage) (any, error) {
	s := string(bytes.TrimSpace(raw))
	if strings.HasPrefix(s, "[") {
		var xs []float64
		if err := json.Unmarshal(raw, &xs); err != nil {
			return nil, fmt.Errorf("value %s: %w", s, err)
		}
		return xs, nil
	}
	switch s {
	case "true", "false":
		return s == "true", nil
	case `"NaN"`:
		return math.NaN(), nil
	case `"Infinity"`:
		return math.Inf(1), nil
	case `"-Infinity"`:
		return math.Inf(-1), nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("value %s: %w", s, err)
	}
	if strings.ContainsAny(s, ".eE") {
		return f, nil
	}
	var i int
	if err := json.Unmarshal(raw, &i); err != nil {
		return nil, fmt.Errorf("value %s: %w", s, err)
	}
	return i, nil
}
