package spec

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
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
	prog             *vm.Program
	idents           map[string]bool // identifiers the expression names
}

// functions available in every expression, beyond expr's builtins (min,
// max, abs, ceil, floor, sum, ...). expr's "/" is float division, so
// integer expressions use idiv and cdiv.
func functions() []expr.Option {
	intOp := func(name string, f func(a, b int) int) expr.Option {
		return expr.Function(name, func(args ...any) (any, error) {
			a, b := args[0].(int), args[1].(int)
			if b == 0 {
				return nil, fmt.Errorf("%s(%d, 0): division by zero", name, a)
			}
			return f(a, b), nil
		}, new(func(int, int) int))
	}
	floatFn := func(name string, f func(float64) float64) expr.Option {
		return expr.Function(name, func(args ...any) (any, error) {
			switch v := args[0].(type) {
			case float64:
				return f(v), nil
			case int:
				return f(float64(v)), nil
			}
			return nil, fmt.Errorf("%s of %T", name, args[0])
		}, new(func(float64) float64), new(func(int) float64))
	}
	return []expr.Option{
		intOp("cdiv", func(a, b int) int { return (a + b - 1) / b }),
		intOp("idiv", func(a, b int) int { return a / b }),
		expr.Function("is_pow2", func(args ...any) (any, error) {
			v := args[0].(int)
			return v > 0 && v&(v-1) == 0, nil
		}, new(func(int) bool)),
		floatFn("exp", math.Exp),
		floatFn("sqrt", math.Sqrt),
		floatFn("rsqrt", func(x float64) float64 { return 1 / math.Sqrt(x) }),
		floatFn("log", math.Log),
		floatFn("tanh", math.Tanh),
		floatFn("sigmoid", func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }),
	}
}

// reserved names cannot be dims, params, buffers or scalars.
var reserved = map[string]bool{
	"cdiv": true, "idiv": true, "is_pow2": true, "exp": true, "sqrt": true, "rsqrt": true, "log": true,
	"tanh": true, "sigmoid": true, "bias": true, "eps": true, "i": true, "NTHREADS": true,
	"min": true, "max": true, "abs": true, "ceil": true, "floor": true, "sum": true, "len": true,
}

// compileExpr compiles src against env (names → example values, which give
// their types); errors name the file, the field and the expression.
func compileExpr(file, field, src string, env map[string]any, k kind) (*program, error) {
	fail := func(msg string) error { return &Error{File: file, Field: field, Expr: src, Msg: msg} }
	if strings.TrimSpace(src) == "" {
		return nil, fail("empty expression")
	}
	opts := append([]expr.Option{expr.Env(env)}, functions()...)
	switch k {
	case boolKind:
		opts = append(opts, expr.AsBool())
	case floatKind:
		opts = append(opts, expr.AsFloat64())
	}
	prog, err := expr.Compile(src, opts...)
	if err != nil {
		return nil, fail(compileMsg(err, env))
	}
	p := &program{file: file, field: field, src: src, kind: k, prog: prog, idents: map[string]bool{}}
	node := prog.Node()
	ast.Walk(&node, identVisitor(p.idents))
	return p, nil
}

// compileMsg shortens expr's message to its first line and lists the names in scope.
func compileMsg(err error, env map[string]any) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return fmt.Sprintf("%s (names in scope: %s)", msg, strings.Join(sortedKeys(env), ", "))
}

type identVisitor map[string]bool

func (v identVisitor) Visit(n *ast.Node) {
	if id, ok := (*n).(*ast.IdentifierNode); ok {
		v[id.Value] = true
	}
}

// uses reports whether the expression names any of names.
func (p *program) uses(names []string) bool {
	for _, n := range names {
		if p.idents[n] {
			return true
		}
	}
	return false
}

// errorf is an error about this expression.
func (p *program) errorf(format string, args ...any) error {
	return &Error{File: p.file, Field: p.field, Expr: p.src, Msg: fmt.Sprintf(format, args...)}
}

func (p *program) run(env map[string]any) (any, error) {
	v, err := expr.Run(p.prog, env)
	if err != nil {
		msg := err.Error()
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return nil, p.errorf("%s (with %s)", msg, describeEnv(env))
	}
	return v, nil
}

// evalInt runs an integer expression; a float result must be integral.
func (p *program) evalInt(env map[string]any) (int, error) {
	v, err := p.run(env)
	if err != nil {
		return 0, err
	}
	switch x := v.(type) {
	case int:
		return x, nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int(x), nil
		}
		return 0, p.errorf("is %g, not an integer, with %s (\"/\" divides as floats: use idiv(a, b) or cdiv(a, b))", x, describeEnv(env))
	}
	return 0, p.errorf("is %v (%T), not an integer", v, v)
}

func (p *program) evalBool(env map[string]any) (bool, error) {
	v, err := p.run(env)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, p.errorf("is %v (%T), not a boolean", v, v)
	}
	return b, nil
}

func (p *program) evalFloat(env map[string]any) (float64, error) {
	v, err := p.run(env)
	if err != nil {
		return 0, err
	}
	switch x := v.(type) {
	case float64:
		return x, nil
	case int:
		return float64(x), nil
	}
	return 0, p.errorf("is %v (%T), not a number", v, v)
}

// describeEnv renders the integer variables of an environment, e.g. "n=896, BN=64".
func describeEnv(env map[string]any) string {
	var parts []string
	for _, k := range sortedKeys(env) {
		if v, ok := env[k].(int); ok {
			parts = append(parts, fmt.Sprintf("%s=%d", k, v))
		}
	}
	if len(parts) == 0 {
		return "no variables"
	}
	return strings.Join(parts, ", ")
}

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
