package spec

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kerntune/kerntune/params/families"
)

// kind is the type an expression must have.
type kind int

const (
	intKind kind = iota
	boolKind
	floatKind
)

func (k kind) String() string {
	switch k {
	case boolKind:
		return "a boolean"
	case floatKind:
		return "a number"
	}
	return "an integer"
}

// program is one compiled expression and where it came from.
type program struct {
	file, field, src string
	kind             kind
	expr             *families.Expr
}

// reserved names cannot be dims, params, buffers or scalars.
var reserved = map[string]bool{
	"cdiv": true, "idiv": true, "is_pow2": true, "exp": true, "sqrt": true, "rsqrt": true, "log": true,
	"tanh": true, "sigmoid": true, "bias": true, "eps": true, "i": true, "NTHREADS": true,
	"min": true, "max": true, "abs": true, "ceil": true, "floor": true, "sum": true, "len": true,
}

// compileExpr compiles src in params' expression language against env
// (names → example values, which give their types); errors name the file,
// the field and the expression.
func compileExpr(file, field, src string, env map[string]any, k kind) (*program, error) {
	if strings.TrimSpace(src) == "" {
		return nil, &Error{File: file, Field: field, Expr: src, Msg: "empty expression"}
	}
	types := make(map[string]string, len(env))
	for n, v := range env {
		types[n] = families.ValueType(v)
	}
	e, err := families.ParseExpr(src, types)
	if err == nil {
		err = k.admits(e.Type())
	}
	if err != nil {
		msg := fmt.Sprintf("%s (names in scope: %s)", firstLine(err.Error()), strings.Join(sortedKeys(env), ", "))
		return nil, &Error{File: file, Field: field, Expr: src, Msg: msg}
	}
	return &program{file: file, field: field, src: src, kind: k, expr: e}, nil
}

// admits is nil if an expression of static type t can give a value of
// kind k: a boolean for a bool, a number for a float; an int kind takes
// any (a float must be whole when it runs).
func (k kind) admits(t string) error {
	switch {
	case k == boolKind && t != "bool" && t != "":
		return fmt.Errorf("expected bool, but got %s", t)
	case k == floatKind && t != "int" && t != "float64" && t != "":
		return fmt.Errorf("expected float64, but got %s", t)
	}
	return nil
}

// uses reports whether the expression names any of names.
func (p *program) uses(names []string) bool { return p.expr.Uses(names) }

// errorf is an error about this expression.
func (p *program) errorf(format string, args ...any) error {
	return &Error{File: p.file, Field: p.field, Expr: p.src, Msg: fmt.Sprintf(format, args...)}
}

// evalAs runs the expression and converts its value. A run-time error,
// and a value of the wrong kind from an expression whose type only the
// run tells (cast names the conversion), say the variables it ran with.
func evalAs[T any](p *program, env map[string]any, cast string, conv func(any) (T, error)) (T, error) {
	v, err := p.expr.Eval(env)
	if err == nil {
		var x T
		if x, err = conv(v); err == nil {
			return x, nil
		}
		if cast == "" || p.expr.Type() != "" {
			return x, p.errorf("%v", err)
		}
		err = fmt.Errorf("invalid operation: %s(%T)", cast, v)
	}
	var zero T
	return zero, p.errorf("%s (with %s)", firstLine(err.Error()), describeEnv(env))
}

// evalInt runs an integer expression; a float result must be integral.
func (p *program) evalInt(env map[string]any) (int, error) {
	return evalAs(p, env, "", func(v any) (int, error) { return families.AsInt(v, env) })
}

func (p *program) evalBool(env map[string]any) (bool, error) {
	return evalAs(p, env, "bool", families.AsBool)
}

func (p *program) evalFloat(env map[string]any) (float64, error) {
	return evalAs(p, env, "float64", families.AsFloat)
}

// describeEnv renders the integer variables of an environment, e.g. "n=896, BN=64".
var describeEnv = families.DescribeEnv

// joinErrors joins errors, or returns nil for none.
func joinErrors(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}
