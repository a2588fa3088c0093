package families

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Expr is a parsed expression of the language that spec files and the
// built-in family descriptions share, a subset of expr-lang: integers that
// stay integers under + - * %, "/" that divides as floats, ** a float
// power, comparisons that chain, && || !, and/or/not, ?:, the functions
// cdiv, idiv, is_pow2, min, max, abs, ceil, floor, round, int, float, exp,
// exp2, sqrt, rsqrt, log, log2, log10, pow, sin, cos, tan, asin, acos, atan,
// atan2, sinh, cosh, tanh, asinh, acosh, atanh, sigmoid (the float functions
// follow Go's math package: NaN outside a domain, ±Inf at a pole or on
// overflow), local bindings "let x = e; body" (the body extends as far as
// the expression does; a let name may not be a variable of the
// environment, a function, a keyword or a let name already in scope: no
// shadowing, as expr-lang's checker says "cannot redeclare"), and for the
// arrays of a spec's reference (the input buffers) x[i] (a negative index
// counts from the end), len(x), sum(x), the range a..b and reduce(x,
// body[, init]), whose body reads the element as #, its index as #index
// and the accumulator as #acc. The spec package and the family descriptions both evaluate it
// here, with the standard library alone; the Python loader's evaluator
// (python/kerntune_params/expressions.py) is the same language, and all
// run params/testdata/conformance/expressions/expressions.json.
type Expr struct {
	src    string
	root   *node
	typ    string
	idents map[string]bool
}

// Static types, as expr-lang's checker names them; "" is unknown until the
// expression runs.
const (
	typInt        = "int"
	typFloat      = "float64"
	typBool       = "bool"
	typArray      = "[]float64"
	typRangeArray = "[]int"
)

type node struct {
	tag  byte // 'l' literal, 'v' variable, 'u' unary, 'b' binary, 'c' conditional, 'f' call, 'x' index, 'r' reduce, 'p' #, #index or #acc, 'L' let op = args[0]; args[1]
	op   string
	val  any
	args []*node
}

// exprFuncs are the functions an expression may call.
var exprFuncs = map[string]bool{
	"cdiv": true, "idiv": true, "is_pow2": true, "exp": true, "sqrt": true, "rsqrt": true, "log": true,
	"tanh": true, "sigmoid": true, "min": true, "max": true, "abs": true, "ceil": true, "floor": true,
	"round": true, "int": true, "float": true, "len": true, "sum": true,
	"sin": true, "cos": true, "tan": true, "asin": true, "acos": true, "atan": true, "atan2": true,
	"sinh": true, "cosh": true, "asinh": true, "acosh": true, "atanh": true,
	"exp2": true, "log2": true, "log10": true, "pow": true,
}

// keywords cannot be let names.
var keywords = map[string]bool{
	"let": true, "true": true, "false": true, "and": true, "or": true, "not": true, "reduce": true,
}

// pointers are the names a reduce body reads its element, index and
// accumulator by.
var pointers = map[string]bool{"#": true, "#index": true, "#acc": true}

var binaryPrec = map[string]int{
	"or": 10, "||": 10, "and": 15, "&&": 15,
	"==": 20, "!=": 20, "<": 20, ">": 20, ">=": 20, "<=": 20, "..": 25,
	"+": 30, "-": 30, "*": 60, "/": 60, "%": 60, "**": 100, "^": 100,
}

var unaryPrec = map[string]int{"not": 50, "!": 50, "-": 90, "+": 90}

var operators = []string{"..", "**", "==", "!=", "<=", ">=", "&&", "||", "-", "+", "*", "/", "%", "^", "<", ">", "!", "?", ":", "(", ")", ",", "[", "]", "=", ";"}

func isComparison(op string) bool { return op == "<" || op == ">" || op == "<=" || op == ">=" }

type exprToken struct {
	kind byte // 'n' number, 'i' identifier, 'o' operator
	text string
}

// ParseExpr parses src; vars gives the names it may use and their static
// types ("int", "float64", "bool"; a name absent from vars is unknown).
func ParseExpr(src string, vars map[string]string) (*Expr, error) {
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("empty expression")
	}
	toks, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	p := &exprParser{toks: toks, vars: vars, idents: map[string]bool{}}
	root, err := p.expression(0)
	if err == nil && p.pos < len(p.toks) {
		err = fmt.Errorf("unexpected token %q", p.toks[p.pos].text)
	}
	if err != nil {
		return nil, err
	}
	typ, err := checkType(root, vars)
	if err != nil {
		return nil, err
	}
	return &Expr{src: src, root: root, typ: typ, idents: p.idents}, nil
}

// Type is the expression's static type: "int", "float64", "bool",
// "[]float64", "[]int", or "" where only a run tells.
func (e *Expr) Type() string { return e.typ }

// ParseIntExpr parses src with every name of vars an int.
func ParseIntExpr(src string, vars []string) (*Expr, error) {
	m := make(map[string]string, len(vars))
	for _, v := range vars {
		m[v] = typInt
	}
	return ParseExpr(src, m)
}

// String returns the expression's source.
func (e *Expr) String() string { return e.src }

// Uses reports whether the expression names any of names.
func (e *Expr) Uses(names []string) bool {
	for _, n := range names {
		if e.idents[n] {
			return true
		}
	}
	return false
}

func tokenize(src string) ([]exprToken, error) {
	var toks []exprToken
	i, n := 0, len(src)
	for i < n {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case isDigit(c) || c == '.' && i+1 < n && isDigit(src[i+1]):
			j, err := scanNumber(src, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, exprToken{'n', src[i:j]})
			i = j
		case isAlpha(c) || c == '_' || c == '#':
			j := i + 1
			for j < n && (isAlpha(src[j]) || isDigit(src[j]) || src[j] == '_') {
				j++
			}
			toks = append(toks, exprToken{'i', src[i:j]})
			i = j
		default:
			found := false
			for _, op := range operators {
				if strings.HasPrefix(src[i:], op) {
					toks = append(toks, exprToken{'o', op})
					i += len(op)
					found = true
					break
				}
			}
			if !found {
				return nil, fmt.Errorf("unrecognized character: %q", rune(c))
			}
		}
	}
	return toks, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// scanNumber returns the end of the number at src[i:], as expr-lang's lexer scans it.
func scanNumber(src string, i int) (int, error) {
	n := len(src)
	run := func(j int, chars string) int {
		for j < n && strings.IndexByte(chars, src[j]) >= 0 {
			j++
		}
		return j
	}
	digits := "0123456789_"
	if src[i] == '0' && i+1 < n && strings.IndexByte("xXoObB", src[i+1]) >= 0 {
		digits = map[byte]string{'x': "0123456789abcdefABCDEF_", 'o': "01234567_", 'b': "01_"}[src[i+1]|0x20]
		i += 2
	}
	i = run(i, digits)
	if i < n && src[i] == '.' {
		if i+1 < n && src[i+1] == '.' {
			return i, nil
		}
		i = run(i+1, digits)
	}
	if i < n && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < n && (src[i] == '+' || src[i] == '-') {
			i++
		}
		i = run(i, digits)
	}
	if i < n && (isAlpha(src[i]) || isDigit(src[i]) || src[i] == '_') {
		return 0, fmt.Errorf("bad number syntax: %q", src[:i+1])
	}
	return i, nil
}

type exprParser struct {
	toks   []exprToken
	pos    int
	vars   map[string]string
	idents map[string]bool
	bodies int      // reduce bodies open: where #, #index and #acc mean something
	lets   []string // let names in scope, innermost last
}

func (p *exprParser) peek() (exprToken, bool) {
	if p.pos < len(p.toks) {
		return p.toks[p.pos], true
	}
	return exprToken{}, false
}

func (p *exprParser) next() (exprToken, error) {
	t, ok := p.peek()
	if !ok {
		return t, fmt.Errorf("unexpected token EOF")
	}
	p.pos++
	return t, nil
}

func (p *exprParser) isOp(op string) bool {
	t, ok := p.peek()
	return ok && t.kind == 'o' && t.text == op
}

func (p *exprParser) expect(op string) error {
	t, err := p.next()
	if err != nil {
		return err
	}
	if t.kind != 'o' || t.text != op {
		return fmt.Errorf("expected %q, got %q", op, t.text)
	}
	return nil
}

func (p *exprParser) binop() string {
	t, ok := p.peek()
	if !ok {
		return ""
	}
	if _, isBin := binaryPrec[t.text]; isBin && (t.kind == 'o' || t.text == "and" || t.text == "or") {
		return t.text
	}
	return ""
}

// expression parses operators of precedence prec and above (Pratt parsing).
func (p *exprParser) expression(prec int) (*node, error) {
	if prec == 0 && p.isLet() {
		return p.let()
	}
	left, err := p.primary()
	if err != nil {
		return nil, err
	}
	for {
		op := p.binop()
		if op == "" || binaryPrec[op] < prec {
			break
		}
		p.pos++
		bp := binaryPrec[op]
		if isComparison(op) {
			// a < b < c means a < b && b < c.
			var chain *node
			for {
				right, err := p.expression(bp + 1)
				if err != nil {
					return nil, err
				}
				cmp := &node{tag: 'b', op: op, args: []*node{left, right}}
				if chain == nil {
					chain = cmp
				} else {
					chain = &node{tag: 'b', op: "&&", args: []*node{chain, cmp}}
				}
				left = right
				op = p.binop()
				if !isComparison(op) {
					break
				}
				p.pos++
			}
			left = chain
			continue
		}
		rp := bp + 1
		if op == "**" || op == "^" {
			rp = bp // right-associative
		}
		right, err := p.expression(rp)
		if err != nil {
			return nil, err
		}
		left = &node{tag: 'b', op: op, args: []*node{left, right}}
	}
	if prec == 0 {
		for p.isOp("?") {
			p.pos++
			if p.isOp(":") {
				p.pos++
				c, err := p.expression(0)
				if err != nil {
					return nil, err
				}
				left = &node{tag: 'c', args: []*node{left, left, c}}
				continue
			}
			a, err := p.expression(0)
			if err != nil {
				return nil, err
			}
			if err := p.expect(":"); err != nil {
				return nil, err
			}
			b, err := p.expression(0)
			if err != nil {
				return nil, err
			}
			left = &node{tag: 'c', args: []*node{left, a, b}}
		}
	}
	return left, nil
}

// primary parses an operand and the indexes that follow it.
func (p *exprParser) primary() (*node, error) {
	n, err := p.operand()
	if err != nil {
		return nil, err
	}
	for err == nil && p.isOp("[") {
		p.pos++
		var i *node
		if i, err = p.expression(0); err == nil {
			n, err = &node{tag: 'x', args: []*node{n, i}}, p.expect("]")
		}
	}
	return n, err
}

func (p *exprParser) operand() (*node, error) {
	t, err := p.next()
	if err != nil {
		return nil, err
	}
	if t.kind == 'o' && (t.text == "-" || t.text == "+" || t.text == "!") || t.kind == 'i' && t.text == "not" {
		x, err := p.expression(unaryPrec[t.text])
		if err != nil {
			return nil, err
		}
		return &node{tag: 'u', op: t.text, args: []*node{x}}, nil
	}
	switch t.kind {
	case 'o':
		if t.text == "(" {
			e, err := p.expression(0)
			if err != nil {
				return nil, err
			}
			return e, p.expect(")")
		}
	case 'n':
		v, err := parseNumber(t.text)
		if err != nil {
			return nil, err
		}
		return &node{tag: 'l', val: v}, nil
	case 'i':
		if t.text == "true" || t.text == "false" {
			return &node{tag: 'l', val: t.text == "true"}, nil
		}
		if pointers[t.text] {
			if p.bodies == 0 {
				return nil, fmt.Errorf("%s outside a reduce body", t.text)
			}
			return &node{tag: 'p', op: t.text}, nil
		}
		if t.text == "reduce" && p.isOp("(") {
			return p.reduce()
		}
		if p.isOp("(") {
			if !exprFuncs[t.text] {
				return nil, fmt.Errorf("unknown name %s", t.text)
			}
			p.pos++
			var args []*node
			if !p.isOp(")") {
				for {
					a, err := p.expression(0)
					if err != nil {
						return nil, err
					}
					args = append(args, a)
					if !p.isOp(",") {
						break
					}
					p.pos++
				}
			}
			if err := p.expect(")"); err != nil {
				return nil, err
			}
			return &node{tag: 'f', op: t.text, args: args}, nil
		}
		if slices.Contains(p.lets, t.text) {
			return &node{tag: 'v', op: t.text}, nil
		}
		if _, ok := p.vars[t.text]; !ok {
			return nil, fmt.Errorf("unknown name %s", t.text)
		}
		p.idents[t.text] = true
		return &node{tag: 'v', op: t.text}, nil
	}
	return nil, fmt.Errorf("unexpected token %q", t.text)
}

// isLet reports whether a let binding starts here: let and a name (a
// variable may still be called let where no name follows).
func (p *exprParser) isLet() bool {
	return p.pos+1 < len(p.toks) && p.toks[p.pos].kind == 'i' && p.toks[p.pos].text == "let" && p.toks[p.pos+1].kind == 'i'
}

// let parses "let name = value; body".
func (p *exprParser) let() (*node, error) {
	p.pos++ // let
	name := p.toks[p.pos].text
	p.pos++
	switch {
	case pointers[name] || name[0] == '#':
		return nil, fmt.Errorf("cannot redeclare %s (a reduce body's)", name)
	case keywords[name] || exprFuncs[name]:
		return nil, fmt.Errorf("cannot redeclare builtin %s", name)
	case slices.Contains(p.lets, name):
		return nil, fmt.Errorf("cannot redeclare variable %s (a let name in scope is not shadowed)", name)
	}
	if _, ok := p.vars[name]; ok {
		return nil, fmt.Errorf("cannot redeclare %s (a variable of the expression)", name)
	}
	if err := p.expect("="); err != nil {
		return nil, err
	}
	val, err := p.expression(0)
	if err != nil {
		return nil, err
	}
	if err := p.expect(";"); err != nil {
		return nil, err
	}
	p.lets = append(p.lets, name)
	body, err := p.expression(0)
	p.lets = p.lets[:len(p.lets)-1]
	if err != nil {
		return nil, err
	}
	return &node{tag: 'L', op: name, args: []*node{val, body}}, nil
}

// reduce parses the arguments of reduce(x, body[, init]); the body reads
// the pointers.
func (p *exprParser) reduce() (*node, error) {
	p.pos++ // (
	x, err := p.expression(0)
	if err != nil {
		return nil, err
	}
	if err := p.expect(","); err != nil {
		return nil, err
	}
	p.bodies++
	body, err := p.expression(0)
	p.bodies--
	if err != nil {
		return nil, err
	}
	args := []*node{x, body}
	if p.isOp(",") {
		p.pos++
		init, err := p.expression(0)
		if err != nil {
			return nil, err
		}
		args = append(args, init)
	}
	return &node{tag: 'r', args: args}, p.expect(")")
}

func parseNumber(text string) (any, error) {
	s := strings.ToLower(strings.ReplaceAll(text, "_", ""))
	if !strings.HasPrefix(s, "0x") && strings.ContainsAny(s, ".e") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !strings.Contains(err.Error(), "range") {
			return nil, fmt.Errorf("bad number syntax: %q", text)
		}
		return f, nil
	}
	base, digits := 10, s
	if len(s) > 1 && s[0] == '0' && strings.IndexByte("xob", s[1]) >= 0 {
		base, digits = map[byte]int{'x': 16, 'o': 8, 'b': 2}[s[1]], s[2:]
	}
	n, err := strconv.ParseUint(digits, base, 64)
	if err != nil && !strings.Contains(err.Error(), "range") {
		return nil, fmt.Errorf("bad number syntax: %q", text)
	}
	if err != nil || n >= 1<<63 {
		return nil, fmt.Errorf("invalid integer literal: strconv.ParseInt: parsing %q: value out of range", text)
	}
	return int(n), nil
}

// userFuncs are the functions the spec package adds to expr-lang's:
// argument types accepted and result.
var userFuncs = map[string]struct {
	args   []string
	result string
}{
	"cdiv": {[]string{typInt, typInt}, typInt}, "idiv": {[]string{typInt, typInt}, typInt},
	"is_pow2": {[]string{typInt}, typBool},
	"exp":     {[]string{typFloat}, typFloat}, "sqrt": {[]string{typFloat}, typFloat},
	"rsqrt": {[]string{typFloat}, typFloat}, "log": {[]string{typFloat}, typFloat},
	"tanh": {[]string{typFloat}, typFloat}, "sigmoid": {[]string{typFloat}, typFloat},
	"sin": {[]string{typFloat}, typFloat}, "cos": {[]string{typFloat}, typFloat},
	"tan": {[]string{typFloat}, typFloat}, "asin": {[]string{typFloat}, typFloat},
	"acos": {[]string{typFloat}, typFloat}, "atan": {[]string{typFloat}, typFloat},
	"sinh": {[]string{typFloat}, typFloat}, "cosh": {[]string{typFloat}, typFloat},
	"asinh": {[]string{typFloat}, typFloat}, "acosh": {[]string{typFloat}, typFloat},
	"atanh": {[]string{typFloat}, typFloat}, "exp2": {[]string{typFloat}, typFloat},
	"log2": {[]string{typFloat}, typFloat}, "log10": {[]string{typFloat}, typFloat},
	"atan2": {[]string{typFloat, typFloat}, typFloat}, "pow": {[]string{typFloat, typFloat}, typFloat},
}

func numeric(t string) bool { return t == typInt || t == typFloat || t == "" }

// ValueType is the static type of a value as an expression's variable:
// "int", "float64", "bool", "[]float64", "[]int", or "".
func ValueType(v any) string { return typeOf(v) }

func typeOf(v any) string {
	switch v.(type) {
	case bool:
		return typBool
	case int:
		return typInt
	case float64:
		return typFloat
	case []float64:
		return typArray
	case []int:
		return typRangeArray
	}
	return ""
}

// elemType is the type of an element of an array of type t.
func elemType(t string) string {
	switch t {
	case typArray:
		return typFloat
	case typRangeArray:
		return typInt
	}
	return ""
}

func isArray(t string) bool { return t == typArray || t == typRangeArray || t == "" }

// or names an unknown type as expr-lang does.
func or(t string) string {
	if t == "" {
		return "interface {}"
	}
	return t
}

func mismatch(op, a, b string) error {
	return fmt.Errorf("invalid operation: %s (mismatched types %s and %s)", op, or(a), or(b))
}

// checkType returns the static type of n, or the error expr-lang's checker gives.
func checkType(n *node, vars map[string]string) (string, error) {
	switch n.tag {
	case 'l':
		return typeOf(n.val), nil
	case 'v', 'p':
		return vars[n.op], nil
	case 'x':
		return checkIndex(n, vars)
	case 'r':
		return checkReduce(n, vars)
	case 'L':
		t, err := checkType(n.args[0], vars)
		if err != nil {
			return "", err
		}
		inner := make(map[string]string, len(vars)+1)
		for k, v := range vars {
			inner[k] = v
		}
		inner[n.op] = t
		return checkType(n.args[1], inner)
	case 'u':
		t, err := checkType(n.args[0], vars)
		if err != nil {
			return "", err
		}
		if n.op == "!" || n.op == "not" {
			if t != typBool && t != "" {
				return "", fmt.Errorf("invalid operation: %s (mismatched type %s)", n.op, t)
			}
			return typBool, nil
		}
		if !numeric(t) {
			return "", fmt.Errorf("invalid operation: %s (mismatched type %s)", n.op, t)
		}
		return t, nil
	case 'c':
		ts, err := checkArgs(n, vars)
		if err != nil {
			return "", err
		}
		if ts[0] != typBool && ts[0] != "" {
			return "", fmt.Errorf("non-bool expression (type %s) used as condition", ts[0])
		}
		if ts[1] == ts[2] {
			return ts[1], nil
		}
		return "", nil
	case 'f':
		ts, err := checkArgs(n, vars)
		if err != nil {
			return "", err
		}
		return checkCall(n.op, ts)
	}
	ts, err := checkArgs(n, vars)
	if err != nil {
		return "", err
	}
	a, b, op := ts[0], ts[1], n.op
	switch {
	case op == "..":
		if a != typInt && a != "" || b != typInt && b != "" {
			return "", mismatch(op, a, b)
		}
		return typRangeArray, nil
	case op == "&&" || op == "and" || op == "||" || op == "or":
		if a != typBool && a != "" || b != typBool && b != "" {
			return "", mismatch(op, a, b)
		}
		return typBool, nil
	case op == "==" || op == "!=":
		if a != b && a != "" && b != "" && !(numeric(a) && numeric(b)) || a == typArray || a == typRangeArray || b == typArray || b == typRangeArray {
			return "", mismatch(op, a, b)
		}
		return typBool, nil
	case !numeric(a) || !numeric(b):
		return "", mismatch(op, a, b)
	case isComparison(op):
		return typBool, nil
	case op == "/" || op == "**" || op == "^":
		return typFloat, nil
	case op == "%":
		if a == typFloat || b == typFloat {
			return "", mismatch(op, a, b)
		}
		return typInt, nil
	case a == typInt && b == typInt:
		return typInt, nil
	case a != "" && b != "":
		return typFloat, nil
	}
	return "", nil
}

// checkArgs types the arguments of n, in order.
func checkArgs(n *node, vars map[string]string) ([]string, error) {
	ts := make([]string, len(n.args))
	for i, a := range n.args {
		t, err := checkType(a, vars)
		if err != nil {
			return nil, err
		}
		ts[i] = t
	}
	return ts, nil
}

func checkIndex(n *node, vars map[string]string) (string, error) {
	ts, err := checkArgs(n, vars)
	if err != nil {
		return "", err
	}
	a, i := ts[0], ts[1]
	if !isArray(a) {
		return "", fmt.Errorf("invalid operation: cannot index %s", a)
	}
	if i != typInt && i != "" {
		return "", fmt.Errorf("invalid operation: cannot use %s as index to %s", i, or(a))
	}
	return elemType(a), nil
}

// checkReduce types reduce(x, body[, init]): # is an element of x, #index
// an int, #acc init's type (x's element's without init) where the body
// keeps it, else unknown.
func checkReduce(n *node, vars map[string]string) (string, error) {
	x, err := checkType(n.args[0], vars)
	if err != nil {
		return "", err
	}
	if !isArray(x) {
		return "", fmt.Errorf("invalid argument for reduce (type %s)", x)
	}
	acc := elemType(x)
	if len(n.args) == 3 {
		if acc, err = checkType(n.args[2], vars); err != nil {
			return "", err
		}
	}
	inner := make(map[string]string, len(vars)+3)
	for k, v := range vars {
		inner[k] = v
	}
	inner["#"], inner["#index"], inner["#acc"] = elemType(x), typInt, acc
	body, err := checkType(n.args[1], inner)
	if err != nil || body == acc {
		return body, err
	}
	inner["#acc"] = ""
	if _, err := checkType(n.args[1], inner); err != nil {
		return "", err
	}
	return "", nil
}

func checkCall(name string, args []string) (string, error) {
	if sig, ok := userFuncs[name]; ok {
		if len(args) < len(sig.args) {
			return "", fmt.Errorf("not enough arguments to call %s", name)
		}
		if len(args) > len(sig.args) {
			return "", fmt.Errorf("too many arguments to call %s", name)
		}
		for i, a := range args {
			w := sig.args[i]
			if !(a == "" || a == w || w == typFloat && a == typInt) {
				return "", fmt.Errorf("cannot use %s as argument (type int) to call %s", a, name)
			}
		}
		return sig.result, nil
	}
	if name == "min" || name == "max" {
		allInt, allFloat := len(args) > 0, len(args) > 0
		for _, a := range args {
			if !numeric(a) {
				return "", fmt.Errorf("invalid argument for %s (type %s)", name, a)
			}
			allInt = allInt && a == typInt
			allFloat = allFloat && a == typFloat
		}
		switch {
		case allInt:
			return typInt, nil
		case allFloat:
			return typFloat, nil
		}
		return "", nil
	}
	if len(args) != 1 {
		if len(args) < 1 {
			return "", fmt.Errorf("not enough arguments to call %s", name)
		}
		return "", fmt.Errorf("too many arguments to call %s", name)
	}
	if name == "len" || name == "sum" {
		if !isArray(args[0]) {
			return "", fmt.Errorf("invalid argument for %s (type %s)", name, args[0])
		}
		if name == "len" {
			return typInt, nil
		}
		return elemType(args[0]), nil
	}
	if !numeric(args[0]) {
		return "", fmt.Errorf("invalid argument for %s (type %s)", name, args[0])
	}
	switch name {
	case "abs":
		return args[0], nil
	case "int":
		return typInt, nil
	}
	return typFloat, nil
}

// Eval evaluates the expression; a name env lacks reads 0.
func (e *Expr) Eval(env map[string]any) (any, error) { return eval(e.root, env, nil) }

// frame is the element, index and accumulator of the innermost reduce
// body being evaluated.
type frame struct {
	elem, acc any
	index     int
	lets      *binding // the let bindings in scope
}

// binding is a let name's value, and the bindings of the scope around it.
type binding struct {
	name  string
	val   any
	outer *binding
}

// lookup is the value of a let name in scope.
func (f *frame) lookup(name string) (any, bool) {
	if f == nil {
		return nil, false
	}
	for b := f.lets; b != nil; b = b.outer {
		if b.name == name {
			return b.val, true
		}
	}
	return nil, false
}

// EvalBool evaluates a boolean expression.
func (e *Expr) EvalBool(env map[string]any) (bool, error) {
	v, err := e.Eval(env)
	if err != nil {
		return false, err
	}
	return AsBool(v)
}

// AsBool is a value of an expression as a boolean.
func AsBool(v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("is %v (%s), not a boolean", v, goType(v))
	}
	return b, nil
}

// EvalInt evaluates an integer expression: a float result is an integer
// only if it is whole ("/" divides as floats).
func (e *Expr) EvalInt(env map[string]any) (int, error) {
	v, err := e.Eval(env)
	if err != nil {
		return 0, err
	}
	return AsInt(v, env)
}

// AsInt is a value of an expression over env as an integer: a float is
// one only if it is whole.
func AsInt(v any, env map[string]any) (int, error) {
	switch x := v.(type) {
	case int:
		return x, nil
	case float64:
		if !math.IsInf(x, 0) && x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int(x), nil
		}
		return 0, fmt.Errorf("is %g, not an integer, with %s (\"/\" divides as floats: use idiv(a, b) or cdiv(a, b))", x, DescribeEnv(env))
	}
	return 0, fmt.Errorf("is %v (%s), not an integer", v, goType(v))
}

// EvalFloat evaluates a numeric expression as a float.
func (e *Expr) EvalFloat(env map[string]any) (float64, error) {
	v, err := e.Eval(env)
	if err != nil {
		return 0, err
	}
	return AsFloat(v)
}

// AsFloat is a value of an expression as a float.
func AsFloat(v any) (float64, error) {
	switch x := v.(type) {
	case int:
		return float64(x), nil
	case float64:
		return x, nil
	}
	return 0, fmt.Errorf("is %v (%s), not a number", v, goType(v))
}

func goType(v any) string {
	if t := typeOf(v); t != "" {
		return t
	}
	return fmt.Sprintf("%T", v)
}

// DescribeEnv lists the integer variables of env, sorted by name: "n=896, BN=64".
func DescribeEnv(env map[string]any) string {
	keys := make([]string, 0, len(env))
	for k, v := range env {
		if _, ok := v.(int); ok {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "no variables"
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, env[k])
	}
	return strings.Join(parts, ", ")
}

func toFloat(v any) float64 {
	if i, ok := v.(int); ok {
		return float64(i)
	}
	return v.(float64)
}

func num(v any, what string) (any, error) {
	switch v.(type) {
	case int, float64:
		return v, nil
	}
	return nil, fmt.Errorf("invalid operation: %s (mismatched type %s)", what, goType(v))
}

// boolean is v as an operand of the logical operator op.
func boolean(v any, op string) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("invalid operation: %s (mismatched type %s)", op, goType(v))
	}
	return b, nil
}

func eval(n *node, env map[string]any, f *frame) (any, error) {
	switch n.tag {
	case 'l':
		return n.val, nil
	case 'v':
		if v, ok := f.lookup(n.op); ok {
			return v, nil
		}
		if v, ok := env[n.op]; ok {
			return v, nil
		}
		return 0, nil
	case 'L':
		v, err := eval(n.args[0], env, f)
		if err != nil {
			return nil, err
		}
		inner := &frame{}
		if f != nil {
			*inner = *f
		}
		inner.lets = &binding{name: n.op, val: v, outer: inner.lets}
		return eval(n.args[1], env, inner)
	case 'p':
		switch n.op {
		case "#index":
			return f.index, nil
		case "#acc":
			return f.acc, nil
		}
		return f.elem, nil
	case 'x':
		return evalIndex(n, env, f)
	case 'r':
		return evalReduce(n, env, f)
	case 'u':
		v, err := eval(n.args[0], env, f)
		if err != nil {
			return nil, err
		}
		if n.op == "!" || n.op == "not" {
			b, err := boolean(v, n.op)
			if err != nil {
				return nil, err
			}
			return !b, nil
		}
		if v, err = num(v, n.op); err != nil || n.op == "+" {
			return v, err
		}
		if i, ok := v.(int); ok {
			return -i, nil
		}
		return -v.(float64), nil
	case 'c':
		c, err := eval(n.args[0], env, f)
		if err != nil {
			return nil, err
		}
		b, ok := c.(bool)
		if !ok {
			return nil, fmt.Errorf("non-bool expression (type %s) used as condition", goType(c))
		}
		if b {
			return eval(n.args[1], env, f)
		}
		return eval(n.args[2], env, f)
	case 'f':
		args := make([]any, len(n.args))
		for i, a := range n.args {
			v, err := eval(a, env, f)
			if err != nil {
				return nil, err
			}
			args[i] = v
		}
		return call(n.op, args)
	}
	op := n.op
	a, err := eval(n.args[0], env, f)
	if err != nil {
		return nil, err
	}
	if op == "&&" || op == "and" || op == "||" || op == "or" {
		ab, err := boolean(a, op)
		if err != nil {
			return nil, err
		}
		if (op == "&&" || op == "and") != ab {
			return ab, nil // short-circuit
		}
		b, err := eval(n.args[1], env, f)
		if err != nil {
			return nil, err
		}
		bb, err := boolean(b, op)
		if err != nil {
			return nil, err
		}
		return bb, nil
	}
	b, err := eval(n.args[1], env, f)
	if err != nil {
		return nil, err
	}
	if t, u := typeOf(a), typeOf(b); elemType(t) != "" || elemType(u) != "" {
		// Arrays take part in no operator: they are indexed, reduced or measured.
		return nil, fmt.Errorf("invalid operation: %s (mismatched types %s and %s)", op, goType(a), goType(b))
	}
	if op == "==" || op == "!=" {
		return equal(a, b) == (op == "=="), nil
	}
	if op == ".." {
		return intRange(a, b)
	}
	if a, err = num(a, op); err != nil {
		return nil, err
	}
	if b, err = num(b, op); err != nil {
		return nil, err
	}
	ai, aInt := a.(int)
	bi, bInt := b.(int)
	if aInt && bInt {
		if v, ok := arith(op, ai, bi); ok {
			return v, nil
		}
		if op == "%" {
			if bi == 0 {
				return nil, fmt.Errorf("runtime error: integer divide by zero")
			}
			if bi == -1 {
				return 0, nil // MinInt % -1 would trap
			}
			return ai % bi, nil
		}
	}
	af, bf := toFloat(a), toFloat(b)
	if v, ok := arith(op, af, bf); ok {
		return v, nil
	}
	switch op {
	case "/":
		return af / bf, nil
	case "**", "^":
		return math.Pow(af, bf), nil
	case "%":
		return nil, fmt.Errorf("invalid operation: %% (mismatched types float64 and int)")
	}
	return nil, fmt.Errorf("unknown operator %s", op)
}

// intRange is a..b: the ints from a to b, none where b < a.
func intRange(a, b any) (any, error) {
	lo, ok1 := a.(int)
	hi, ok2 := b.(int)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("invalid operation: .. (mismatched types %s and %s)", goType(a), goType(b))
	}
	if hi < lo {
		return []int{}, nil
	}
	if hi-lo >= 1<<26 {
		return nil, fmt.Errorf("range %d..%d has more than %d elements", lo, hi, 1<<26)
	}
	r := make([]int, hi-lo+1)
	for i := range r {
		r[i] = lo + i
	}
	return r, nil
}

// addValues is a + b: an int for two ints, else a float.
func addValues(a, b any) (any, error) {
	if _, err := num(b, "sum"); err != nil {
		return nil, err
	}
	ai, aInt := a.(int)
	bi, bInt := b.(int)
	if aInt && bInt {
		return ai + bi, nil
	}
	return toFloat(a) + toFloat(b), nil
}

// array is v as an array: its length and its element i.
func array(v any, what string) (int, func(i int) any, error) {
	switch x := v.(type) {
	case []float64:
		return len(x), func(i int) any { return x[i] }, nil
	case []int:
		return len(x), func(i int) any { return x[i] }, nil
	}
	return 0, nil, fmt.Errorf("invalid operation: %s of %s", what, goType(v))
}

// evalPair evaluates the two arguments of n, in order.
func evalPair(n *node, env map[string]any, f *frame) (any, any, error) {
	a, err := eval(n.args[0], env, f)
	if err != nil {
		return nil, nil, err
	}
	b, err := eval(n.args[1], env, f)
	if err != nil {
		return nil, nil, err
	}
	return a, b, nil
}

func evalIndex(n *node, env map[string]any, f *frame) (any, error) {
	a, iv, err := evalPair(n, env, f)
	if err != nil {
		return nil, err
	}
	size, at, err := array(a, "index")
	if err != nil {
		return nil, err
	}
	i, ok := iv.(int)
	if !ok {
		return nil, fmt.Errorf("invalid operation: cannot use %s as index to %s", goType(iv), goType(a))
	}
	if i < 0 {
		i += size
	}
	if i < 0 || i >= size {
		return nil, fmt.Errorf("index out of range: %d (array length is %d)", iv, size)
	}
	return at(i), nil
}

// evalReduce runs reduce(x, body[, init]); a range a..b as x is walked
// without being built.
func evalReduce(n *node, env map[string]any, outer *frame) (any, error) {
	var (
		size, lo int
		at       func(i int) any
	)
	if x := n.args[0]; x.tag == 'b' && x.op == ".." {
		a, b, err := evalPair(x, env, outer)
		if err != nil {
			return nil, err
		}
		l, ok1 := a.(int)
		h, ok2 := b.(int)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("invalid operation: .. (mismatched types %s and %s)", goType(a), goType(b))
		}
		lo, size = l, max(0, h-l+1)
	} else {
		v, err := eval(x, env, outer)
		if err != nil {
			return nil, err
		}
		if size, at, err = array(v, "reduce"); err != nil {
			return nil, err
		}
	}
	elem := func(i int) any {
		if at != nil {
			return at(i)
		}
		return lo + i
	}
	f := &frame{}
	if outer != nil {
		f.lets = outer.lets // the body sees the let names around reduce
	}
	start := 0
	if len(n.args) == 3 {
		init, err := eval(n.args[2], env, outer)
		if err != nil {
			return nil, err
		}
		f.acc = init
	} else {
		if size == 0 {
			return nil, fmt.Errorf("reduce of an empty array with no initial value")
		}
		f.acc, start = elem(0), 1
	}
	for i := start; i < size; i++ {
		f.elem, f.index = elem(i), i
		v, err := eval(n.args[1], env, f)
		if err != nil {
			return nil, err
		}
		f.acc = v
	}
	return f.acc, nil
}

// arith applies the operators that ints and floats share; ok is false for
// the others.
func arith[T int | float64](op string, a, b T) (v any, ok bool) {
	switch op {
	case "<":
		return a < b, true
	case ">":
		return a > b, true
	case "<=":
		return a <= b, true
	case ">=":
		return a >= b, true
	case "+":
		return a + b, true
	case "-":
		return a - b, true
	case "*":
		return a * b, true
	}
	return nil, false
}

// equal is expr-lang's ==: numbers compare by value, a bool equals only a bool.
func equal(a, b any) bool {
	ab, aBool := a.(bool)
	bb, bBool := b.(bool)
	if aBool || bBool {
		return aBool && bBool && ab == bb
	}
	if ai, ok := a.(int); ok {
		if bi, ok := b.(int); ok {
			return ai == bi
		}
	}
	return toFloat(a) == toFloat(b)
}

func call(name string, args []any) (any, error) {
	ints := func(n int) ([]int, error) {
		if len(args) != n {
			return nil, fmt.Errorf("%s takes %d integer argument(s)", name, n)
		}
		out := make([]int, n)
		for i, a := range args {
			v, ok := a.(int)
			if !ok {
				return nil, fmt.Errorf("%s takes %d integer argument(s)", name, n)
			}
			out[i] = v
		}
		return out, nil
	}
	oneNum := func() (any, error) {
		if len(args) != 1 {
			return nil, fmt.Errorf("%s takes 1 argument", name)
		}
		return num(args[0], name)
	}
	switch name {
	case "cdiv", "idiv":
		v, err := ints(2)
		if err != nil {
			return nil, err
		}
		a, b := v[0], v[1]
		if b == 0 {
			return nil, fmt.Errorf("%s(%d, 0): division by zero", name, a)
		}
		if name == "cdiv" {
			a = a + b - 1
		}
		if b == -1 {
			return -a, nil // MinInt / -1 wraps
		}
		return a / b, nil
	case "is_pow2":
		v, err := ints(1)
		if err != nil {
			return nil, err
		}
		return v[0] > 0 && v[0]&(v[0]-1) == 0, nil
	case "min", "max":
		if len(args) == 0 {
			return nil, fmt.Errorf("not enough arguments to call %s", name)
		}
		best, err := num(args[0], name)
		if err != nil {
			return nil, err
		}
		for _, a := range args[1:] {
			if a, err = num(a, name); err != nil {
				return nil, err
			}
			if name == "min" && toFloat(a) < toFloat(best) || name == "max" && toFloat(a) > toFloat(best) {
				best = a
			}
		}
		return best, nil
	case "abs":
		v, err := oneNum()
		if err != nil {
			return nil, err
		}
		if i, ok := v.(int); ok {
			if i < 0 {
				return -i, nil
			}
			return i, nil
		}
		return math.Abs(v.(float64)), nil
	case "len", "sum":
		if len(args) != 1 {
			return nil, fmt.Errorf("%s takes 1 argument", name)
		}
		size, at, err := array(args[0], name)
		if err != nil || name == "len" {
			return size, err
		}
		var total any = 0
		if _, ok := args[0].([]float64); ok {
			total = 0.0
		}
		for i := 0; i < size; i++ {
			if total, err = addValues(total, at(i)); err != nil {
				return nil, err
			}
		}
		return total, nil
	case "int":
		v, err := oneNum()
		if err != nil {
			return nil, err
		}
		if i, ok := v.(int); ok {
			return i, nil
		}
		f := v.(float64)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, nil
		}
		return int(f), nil
	}
	if name == "atan2" || name == "pow" {
		if len(args) != 2 {
			return nil, fmt.Errorf("%s takes 2 arguments", name)
		}
		a, err := num(args[0], name)
		if err != nil {
			return nil, err
		}
		b, err := num(args[1], name)
		if err != nil {
			return nil, err
		}
		if name == "pow" {
			return math.Pow(toFloat(a), toFloat(b)), nil
		}
		return math.Atan2(toFloat(a), toFloat(b)), nil
	}
	v, err := oneNum()
	if err != nil {
		return nil, err
	}
	x := toFloat(v)
	switch name {
	case "float":
		return x, nil
	case "ceil":
		return math.Ceil(x), nil
	case "floor":
		return math.Floor(x), nil
	case "round":
		return math.Round(x), nil
	case "exp":
		return math.Exp(x), nil
	case "sqrt":
		return math.Sqrt(x), nil
	case "rsqrt":
		return 1 / math.Sqrt(x), nil
	case "log":
		return math.Log(x), nil
	case "tanh":
		return math.Tanh(x), nil
	case "sigmoid":
		return 1 / (1 + math.Exp(-x)), nil
	case "sin":
		return math.Sin(x), nil
	case "cos":
		return math.Cos(x), nil
	case "tan":
		return math.Tan(x), nil
	case "asin":
		return math.Asin(x), nil
	case "acos":
		return math.Acos(x), nil
	case "atan":
		return math.Atan(x), nil
	case "sinh":
		return math.Sinh(x), nil
	case "cosh":
		return math.Cosh(x), nil
	case "asinh":
		return math.Asinh(x), nil
	case "acosh":
		return math.Acosh(x), nil
	case "atanh":
		return math.Atanh(x), nil
	case "exp2":
		return math.Exp2(x), nil
	case "log2":
		return math.Log2(x), nil
	case "log10":
		return math.Log10(x), nil
	}
	return nil, fmt.Errorf("unknown func %s", name)
}

// Fast evaluation of integer expressions: the constraints of a family run
// for every candidate of its space when the search enumerates it (half a
// million for the GEMMs), so an expression over int variables only is
// compiled to closures over a slice of the variables' values. Any other
// expression, and any run-time error (a zero divisor), takes Eval's path,
// which gives the value or the message.

// intFn and boolFn return false where Eval must decide.
type (
	intFn  func(v []int) (int, bool)
	boolFn func(v []int) (bool, bool)
)

// compileBool compiles a boolean expression over slots (a variable's index
// in the values); ok is false if it is not one fast evaluation handles.
func (e *Expr) compileBool(slots map[string]int) (boolFn, bool) {
	return fastBool(e.root, slots)
}

func fastInt(n *node, slots map[string]int) (intFn, bool) {
	switch n.tag {
	case 'l':
		v, ok := n.val.(int)
		return func([]int) (int, bool) { return v, true }, ok
	case 'v':
		i, ok := slots[n.op]
		return func(v []int) (int, bool) { return v[i], true }, ok
	case 'u':
		x, ok := fastInt(n.args[0], slots)
		switch {
		case !ok:
			return nil, false
		case n.op == "-":
			return func(v []int) (int, bool) { a, ok := x(v); return -a, ok }, true
		case n.op == "+":
			return x, true
		}
		return nil, false
	case 'c':
		c, ok1 := fastBool(n.args[0], slots)
		a, ok2 := fastInt(n.args[1], slots)
		b, ok3 := fastInt(n.args[2], slots)
		return func(v []int) (int, bool) {
			cv, ok := c(v)
			if !ok {
				return 0, false
			}
			if cv {
				return a(v)
			}
			return b(v)
		}, ok1 && ok2 && ok3
	case 'f':
		args := make([]intFn, len(n.args))
		for i, a := range n.args {
			f, ok := fastInt(a, slots)
			if !ok {
				return nil, false
			}
			args[i] = f
		}
		return fastCall(n.op, args)
	case 'b':
		a, ok1 := fastInt(n.args[0], slots)
		b, ok2 := fastInt(n.args[1], slots)
		if !ok1 || !ok2 {
			return nil, false
		}
		var f func(x, y int) (int, bool)
		switch n.op {
		case "+":
			f = func(x, y int) (int, bool) { return x + y, true }
		case "-":
			f = func(x, y int) (int, bool) { return x - y, true }
		case "*":
			f = func(x, y int) (int, bool) { return x * y, true }
		case "%":
			f = func(x, y int) (int, bool) {
				if y == 0 || y == -1 {
					return 0, y == -1
				}
				return x % y, true
			}
		default:
			return nil, false
		}
		return func(v []int) (int, bool) {
			x, ok := a(v)
			if !ok {
				return 0, false
			}
			y, ok := b(v)
			if !ok {
				return 0, false
			}
			return f(x, y)
		}, true
	}
	return nil, false
}

func fastCall(name string, args []intFn) (intFn, bool) {
	two := func(f func(a, b int) (int, bool)) (intFn, bool) {
		if len(args) != 2 {
			return nil, false
		}
		return func(v []int) (int, bool) {
			a, ok := args[0](v)
			if !ok {
				return 0, false
			}
			b, ok := args[1](v)
			if !ok {
				return 0, false
			}
			return f(a, b)
		}, true
	}
	switch name {
	case "idiv":
		return two(func(a, b int) (int, bool) {
			if b == 0 || b == -1 {
				return 0, false // Eval: the error, or MinInt's wrap
			}
			return a / b, true
		})
	case "cdiv":
		return two(func(a, b int) (int, bool) {
			if b == 0 || b == -1 {
				return 0, false
			}
			return (a + b - 1) / b, true
		})
	case "min", "max":
		if len(args) == 0 {
			return nil, false
		}
		isMin := name == "min"
		return func(v []int) (int, bool) {
			best, ok := args[0](v)
			for _, f := range args[1:] {
				x, ok2 := f(v)
				ok = ok && ok2
				if isMin && x < best || !isMin && x > best {
					best = x
				}
			}
			return best, ok
		}, true
	}
	return nil, false
}

func fastBool(n *node, slots map[string]int) (boolFn, bool) {
	switch n.tag {
	case 'l':
		v, ok := n.val.(bool)
		return func([]int) (bool, bool) { return v, true }, ok
	case 'u':
		if n.op != "!" && n.op != "not" {
			return nil, false
		}
		x, ok := fastBool(n.args[0], slots)
		return func(v []int) (bool, bool) { b, ok := x(v); return !b, ok }, ok
	case 'f':
		if n.op != "is_pow2" || len(n.args) != 1 {
			return nil, false
		}
		x, ok := fastInt(n.args[0], slots)
		return func(v []int) (bool, bool) { a, ok := x(v); return a > 0 && a&(a-1) == 0, ok }, ok
	case 'c':
		c, ok1 := fastBool(n.args[0], slots)
		a, ok2 := fastBool(n.args[1], slots)
		b, ok3 := fastBool(n.args[2], slots)
		return func(v []int) (bool, bool) {
			cv, ok := c(v)
			if !ok {
				return false, false
			}
			if cv {
				return a(v)
			}
			return b(v)
		}, ok1 && ok2 && ok3
	case 'b':
	default:
		return nil, false
	}
	switch n.op {
	case "&&", "and", "||", "or":
		a, ok1 := fastBool(n.args[0], slots)
		b, ok2 := fastBool(n.args[1], slots)
		and := n.op == "&&" || n.op == "and"
		return func(v []int) (bool, bool) {
			x, ok := a(v)
			if !ok || x != and {
				return x, ok // short-circuit
			}
			return b(v)
		}, ok1 && ok2
	}
	if (n.op == "==" || n.op == "!=") && n.args[0].tag != 'v' {
		// bool == bool compares booleans; ints are below.
		if a, ok1 := fastBool(n.args[0], slots); ok1 {
			b, ok2 := fastBool(n.args[1], slots)
			eq := n.op == "=="
			return func(v []int) (bool, bool) {
				x, ok := a(v)
				y, ok2 := b(v)
				return (x == y) == eq, ok && ok2
			}, ok2
		}
	}
	a, ok1 := fastInt(n.args[0], slots)
	b, ok2 := fastInt(n.args[1], slots)
	if !ok1 || !ok2 {
		return nil, false
	}
	var f func(x, y int) bool
	switch n.op {
	case "<":
		f = func(x, y int) bool { return x < y }
	case ">":
		f = func(x, y int) bool { return x > y }
	case "<=":
		f = func(x, y int) bool { return x <= y }
	case ">=":
		f = func(x, y int) bool { return x >= y }
	case "==":
		f = func(x, y int) bool { return x == y }
	case "!=":
		f = func(x, y int) bool { return x != y }
	default:
		return nil, false
	}
	return func(v []int) (bool, bool) {
		x, ok := a(v)
		if !ok {
			return false, false
		}
		y, ok := b(v)
		if !ok {
			return false, false
		}
		return f(x, y), true
	}, true
}
