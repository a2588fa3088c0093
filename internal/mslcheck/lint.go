package mslcheck

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Diag is one finding of Lint: a line of the source and what Metal
// rejects there, with what it allows.
type Diag struct {
	Line int
	Msg  string
}

func (d Diag) String() string { return fmt.Sprintf("line %d: error: %s", d.Line, d.Msg) }

// maxBufferIndex is the last index of Metal's buffer argument table (31
// entries on every Metal GPU family).
const maxBufferIndex = 30

// attributes are the attribute names Metal accepts (the MSL specification's
// function, argument and variable attributes, and C++'s standard ones).
var attributes = map[string]bool{}

func init() {
	for _, a := range strings.Fields(`kernel vertex fragment visible stitchable host_name patch
		buffer texture sampler threadgroup threadgroup_imageblock function_constant id user
		stage_in position attribute color raster_order_group point_size clip_distance render_target_array_index
		viewport_array_index sample_id sample_mask front_facing point_coord barycentric_coord primitive_id
		vertex_id instance_id base_vertex base_instance amplification_id amplification_count payload
		flat center_perspective center_no_perspective centroid_perspective centroid_no_perspective
		sample_perspective sample_no_perspective early_fragment_tests depth stencil
		thread_position_in_grid thread_position_in_threadgroup thread_index_in_threadgroup
		threadgroup_position_in_grid threads_per_grid threads_per_threadgroup threadgroups_per_grid
		thread_index_in_simdgroup simdgroup_index_in_threadgroup threads_per_simdgroup simdgroups_per_threadgroup
		thread_index_in_quadgroup quadgroup_index_in_threadgroup quadgroups_per_threadgroup thread_execution_width
		dispatch_threads_per_threadgroup dispatch_quadgroups_per_threadgroup dispatch_simdgroups_per_threadgroup
		grid_origin grid_size max_total_threads_per_threadgroup required_threads_per_threadgroup
		object mesh intersection object_data mesh_id mesh_grid_properties
		maybe_unused nodiscard noreturn fallthrough likely unlikely deprecated carries_dependency no_unique_address`) {
		attributes[a] = true
	}
}

// addressSpaces qualify a pointer's or reference's pointee in MSL.
var addressSpaces = map[string]bool{"device": true, "constant": true, "threadgroup": true, "thread": true,
	"threadgroup_imageblock": true, "ray_data": true, "object_data": true}

// notCalls are names followed by a parenthesis that are not functions.
var notCalls = map[string]bool{"if": true, "for": true, "while": true, "switch": true, "return": true,
	"sizeof": true, "alignof": true, "alignas": true, "decltype": true, "static_assert": true,
	"_Pragma": true, "__attribute__": true, "noexcept": true, "defined": true, "catch": true}

type token struct {
	s    string
	line int
}

// tokenize splits MSL into C++ tokens with their lines, dropping comments,
// string and character literals (kept as one placeholder token) and
// preprocessor lines.
func tokenize(src string) []token {
	var out []token
	line := 1
	atLineStart := true
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			atLineStart = true
			i++
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '#' && atLineStart:
			// A directive runs to an unescaped newline.
			for i < len(src) && src[i] != '\n' {
				if src[i] == '\\' && i+1 < len(src) && src[i+1] == '\n' {
					line++
					i++
				}
				i++
			}
			continue
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				end = len(src) - i - 2
			}
			line += strings.Count(src[i:i+2+end], "\n")
			i += end + 4
			continue
		}
		atLineStart = false
		start := i
		switch {
		case c == '"' || c == '\'':
			i++
			for i < len(src) && src[i] != c && src[i] != '\n' {
				if src[i] == '\\' {
					i++
				}
				i++
			}
			i++
			out = append(out, token{string(c) + string(c), line})
			continue
		case isIdent(c) || c >= '0' && c <= '9':
			for i < len(src) && (isIdent(src[i]) || src[i] >= '0' && src[i] <= '9' || src[i] == '.' && !isIdent(c)) {
				i++
			}
		case strings.HasPrefix(src[i:], "::") || strings.HasPrefix(src[i:], "->"):
			i += 2
		default:
			i++
		}
		out = append(out, token{src[start:i], line})
	}
	return out
}

func isIdent(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isName(s string) bool { return s != "" && isIdent(s[0]) }

// match returns the index of the token closing the bracket at toks[i].
func match(toks []token, i int) int {
	open := toks[i].s
	close := map[string]string{"(": ")", "[": "]", "{": "}"}[open]
	depth := 0
	for j := i; j < len(toks); j++ {
		switch toks[j].s {
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return len(toks) - 1
}

// Lint reports what Metal's compiler rejects and a clang check against the
// stand-in headers cannot see: pointers without an address space (in
// parameters, members and variables), double, recursion, attributes Metal
// does not know, [[buffer(n)]] above 30 or repeated in one function's
// parameters, and program-scope variables outside the constant address
// space. It reads tokens (comments, strings and preprocessor lines
// dropped), so what macros expand to is not seen.
func Lint(src string) []Diag {
	l := &linter{toks: tokenize(src), funcs: map[string][]fnDef{}}
	l.attributesAndDouble()
	l.scope(0, len(l.toks), scopeNamespace)
	l.recursion()
	sort.SliceStable(l.diags, func(i, j int) bool { return l.diags[i].Line < l.diags[j].Line })
	return l.diags
}

type scopeKind int

const (
	scopeNamespace scopeKind = iota
	scopeClass
	scopeFunction
)

type fnDef struct {
	line       int
	start, end int // the body's tokens
}

type linter struct {
	toks  []token
	diags []Diag
	funcs map[string][]fnDef
}

func (l *linter) errorf(line int, format string, args ...any) {
	l.diags = append(l.diags, Diag{line, fmt.Sprintf(format, args...)})
}

// attributesAndDouble checks every [[...]] and every use of double.
func (l *linter) attributesAndDouble() {
	t := l.toks
	for i := 0; i < len(t); i++ {
		if t[i].s == "double" {
			l.errorf(t[i].line, "double: Metal has no 64-bit floating point type; use float (or half)")
		}
		if t[i].s != "[" || i+1 >= len(t) || t[i+1].s != "[" {
			continue
		}
		end := match(t, i)
		// Each comma-separated attribute of [[a, b(c)]].
		for j := i + 2; j < end-1; j++ {
			if !isName(t[j].s) {
				continue
			}
			name := t[j].s
			k := j + 1
			for k+1 < end && t[k].s == "::" && isName(t[k+1].s) {
				name += "::" + t[k+1].s
				k += 2
			}
			if !strings.Contains(name, "::") && !attributes[name] {
				l.errorf(t[j].line, "unknown attribute [[%s]]%s: Metal accepts its own attributes (buffer(n), thread_position_in_grid, threadgroup_position_in_grid, host_name(\"f\"), kernel, …) and C++'s standard ones", name, suggest(name))
			}
			if k < end && t[k].s == "(" {
				k = match(t, k)
			}
			j = k
		}
		i = end
	}
}

// suggest names the known attribute closest to a misspelled one.
func suggest(name string) string {
	best, bestD := "", 4
	for a := range attributes {
		if d := editDistance(name, a); d < bestD || d == bestD && a < best {
			best, bestD = a, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean [[" + best + "]]?)"
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// scope walks the statements of toks[from:to], a namespace's or class's
// body (or the whole file).
func (l *linter) scope(from, to int, kind scopeKind) {
	t := l.toks
	for i := from; i < to; {
		// One statement: up to a ; or a body's { at depth 0.
		j := i
		for j < to && t[j].s != ";" && t[j].s != "{" && t[j].s != "}" {
			if t[j].s == "(" || t[j].s == "[" {
				j = match(t, j)
			}
			j++
		}
		if j < to && t[j].s == "}" {
			i = j + 1
			continue
		}
		stmt := t[i:j]
		if j < to && t[j].s == "{" {
			end := match(t, j)
			switch {
			case hasTok(stripTemplate(stmt), "="):
				// A braced initializer: the statement runs on to its ;.
				for j = end + 1; j < to && t[j].s != ";"; j++ {
				}
				l.declaration(t[i:j], kind)
			case len(stmt) > 0 && stmt[0].s == "namespace" || len(stmt) >= 2 && stmt[0].s == "extern" && stmt[1].s == `""`:
				l.scope(j+1, end, scopeNamespace)
				j = end
			case isClassHead(stmt):
				l.scope(j+1, end, scopeClass)
				j = end
				for j+1 < to && t[j+1].s != ";" && t[j+1].s != "}" { // struct S {...} s;
					j++
				}
			default:
				if name, params, ok := funcHead(stmt); ok {
					l.params(stmt, params)
					l.funcs[name] = append(l.funcs[name], fnDef{stmt[0].line, j + 1, end})
					l.body(j+1, end)
				}
				j = end
			}
		} else if len(stmt) > 0 {
			l.declaration(stmt, kind)
		}
		i = j + 1
	}
}

func hasTok(stmt []token, s string) bool {
	for k := 0; k < len(stmt); k++ {
		if stmt[k].s == "(" || stmt[k].s == "[" {
			k = match(stmt, k)
			continue
		}
		if stmt[k].s == s {
			return true
		}
	}
	return false
}

// stripTemplate drops a leading template <...> and attributes.
func stripTemplate(stmt []token) []token {
	for len(stmt) > 0 {
		switch {
		case stmt[0].s == "template" && len(stmt) > 1 && stmt[1].s == "<":
			depth, k := 0, 1
			for ; k < len(stmt); k++ {
				if stmt[k].s == "<" {
					depth++
				} else if stmt[k].s == ">" {
					if depth--; depth == 0 {
						break
					}
				}
			}
			stmt = stmt[min(k+1, len(stmt)):]
		case stmt[0].s == "[" && len(stmt) > 1 && stmt[1].s == "[":
			stmt = stmt[min(match(stmt, 0)+1, len(stmt)):]
		default:
			return stmt
		}
	}
	return stmt
}

func isClassHead(stmt []token) bool {
	stmt = stripTemplate(stmt)
	return len(stmt) > 0 && (stmt[0].s == "struct" || stmt[0].s == "class" || stmt[0].s == "union" || stmt[0].s == "enum")
}

// funcHead finds a function declarator in stmt: its name and the index of
// its parameter list's (. Not one: an initialisation, a call.
func funcHead(stmt []token) (string, int, bool) {
	for k := len(stmt) - len(stripTemplate(stmt)) + 1; k < len(stmt); k++ {
		s := stmt[k].s
		if s == "=" {
			return "", 0, false
		}
		if s == "[" {
			k = match(stmt, k)
			continue
		}
		if s == "(" {
			name := stmt[k-1].s
			if !isName(name) || notCalls[name] || name == "operator" {
				if k >= 2 && stmt[k-2].s == "operator" {
					return "operator" + name, k, true
				}
				return "", 0, false
			}
			return name, k, true
		}
	}
	return "", 0, false
}

// params checks a function's parameters: pointers need an address space,
// buffer indices are at most 30 and unique.
func (l *linter) params(stmt []token, open int) {
	close := match(stmt, open)
	kernel := false
	for _, tk := range stmt[:open] {
		if tk.s == "kernel" {
			kernel = true
		}
	}
	buffers := map[int]int{}
	start := open + 1
	for k := open + 1; k <= close; k++ {
		s := stmt[k].s
		if s == "(" || s == "[" {
			if s == "[" && k+1 < close && stmt[k+1].s == "[" {
				e := match(stmt, k)
				l.bufferIndex(stmt[k:e+1], buffers)
				k = e
				continue
			}
			k = match(stmt, k)
			continue
		}
		if s == "," || k == close {
			l.pointer(stmt[start:k], kernel, "parameter")
			start = k + 1
		}
	}
}

// bufferIndex checks one [[buffer(n)]].
func (l *linter) bufferIndex(attr []token, seen map[int]int) {
	for k := 0; k+3 < len(attr); k++ {
		if attr[k].s != "buffer" || attr[k+1].s != "(" || attr[k+3].s != ")" {
			continue
		}
		n, err := strconv.Atoi(attr[k+2].s)
		if err != nil {
			continue // an expression or macro: Metal's compiler judges it
		}
		line := attr[k].line
		if n > maxBufferIndex {
			l.errorf(line, "[[buffer(%d)]]: Metal's buffer argument table has indices 0 … %d", n, maxBufferIndex)
		}
		if prev, dup := seen[n]; dup {
			l.errorf(line, "[[buffer(%d)]] is also the index of the parameter on line %d: each buffer argument of a function needs an index of its own", n, prev)
		} else {
			seen[n] = line
		}
	}
}

// pointer reports a declaration (tokens of one parameter, member or
// variable) of a pointer, or a kernel's reference parameter, whose pointee
// has no address space.
func (l *linter) pointer(decl []token, kernel bool, what string) {
	depth := 0
	for k, tk := range decl {
		switch tk.s {
		case "<", "(", "[":
			depth++
		case ">", ")", "]":
			depth--
		case "=":
			if depth == 0 {
				return // the initialiser's * and & are operators
			}
		case "*", "&":
			if depth != 0 || tk.s == "&" && !kernel || k == 0 {
				continue
			}
			for _, q := range decl[:k] {
				if addressSpaces[q.s] {
					return
				}
			}
			kind := "pointer"
			if tk.s == "&" {
				kind = "reference"
			}
			l.errorf(tk.line, "%s %s without an address space: Metal needs device, constant, threadgroup or thread before the pointee type (e.g. device float* x)", what, kind)
			return
		}
	}
}

// declaration checks a declaration outside function bodies: a member's
// or variable's pointer, a program-scope variable's address space, and a
// function declaration's parameters.
func (l *linter) declaration(stmt []token, kind scopeKind) {
	s := stripTemplate(stmt)
	if len(s) == 0 {
		return
	}
	if len(s) >= 2 && s[1].s == ":" && (s[0].s == "public" || s[0].s == "private" || s[0].s == "protected") {
		s = s[2:]
	}
	if len(s) == 0 {
		return
	}
	switch s[0].s {
	case "typedef", "using", "static_assert", "namespace", "friend", "public", "private", "protected", "template":
		return
	}
	if isClassHead(s) && !hasTok(s, "=") {
		return // a declaration or definition of a type
	}
	if name, open, ok := funcHead(stmt); ok && name != "" {
		l.params(stmt, open)
		return
	}
	l.pointer(s, false, map[scopeKind]string{scopeNamespace: "program-scope variable", scopeClass: "member"}[kind])
	if kind != scopeNamespace {
		return
	}
	for _, tk := range s {
		if tk.s == "=" {
			break
		}
		if tk.s == "constant" {
			return
		}
	}
	if len(s) >= 2 && s[0].s == "constexpr" && s[1].s == "sampler" {
		return
	}
	l.errorf(s[0].line, "a program-scope variable must be in the constant address space: Metal allows `constant T name = value;` outside functions (threadgroup and device variables are declared inside a kernel)")
}

// body checks a function body: local pointer declarations, and records
// the calls for the recursion check (scanned again there).
func (l *linter) body(from, to int) {
	t := l.toks
	stmtStart := from
	for k := from; k < to; k++ {
		switch t[k].s {
		case ";", "{", "}":
			l.local(t[stmtStart:k])
			stmtStart = k + 1
		case "(":
			if k > from && t[k-1].s == "for" {
				stmtStart = k + 1
			}
		}
	}
}

// scalarTypes are MSL's built-in type names that start a declaration.
var scalarTypes = map[string]bool{"float": true, "half": true, "bfloat": true, "int": true, "uint": true,
	"short": true, "ushort": true, "char": true, "uchar": true, "long": true, "ulong": true, "bool": true,
	"void": true, "auto": true, "size_t": true, "unsigned": true, "signed": true}

// local reports a statement in a function body that declares a pointer
// without an address space: [const] type * [const] name (=|;|,).
func (l *linter) local(stmt []token) {
	k := 0
	for k < len(stmt) && (stmt[k].s == "const" || stmt[k].s == "static" || stmt[k].s == "volatile") {
		k++
	}
	if k >= len(stmt) || !isName(stmt[k].s) {
		return
	}
	ty := stmt[k].s
	base := strings.TrimRight(ty, "234x")
	if addressSpaces[ty] || ty == "auto" || !(scalarTypes[ty] || scalarTypes[base] || strings.HasSuffix(ty, "_t")) {
		return
	}
	k++
	if k < len(stmt) && stmt[k].s == "<" {
		for depth := 0; k < len(stmt); k++ {
			if stmt[k].s == "<" {
				depth++
			} else if stmt[k].s == ">" {
				if depth--; depth == 0 {
					k++
					break
				}
			}
		}
	}
	for k < len(stmt) && stmt[k].s == "const" {
		k++
	}
	if k+1 < len(stmt) && stmt[k].s == "*" && isName(stmt[k+1].s) {
		l.errorf(stmt[k].line, "variable pointer without an address space: Metal needs device, constant, threadgroup or thread before the pointee type (e.g. thread float* p)")
	}
}

// recursion reports every call that closes a cycle of the source's
// functions (by name: overloads are one node).
func (l *linter) recursion() {
	t := l.toks
	calls := map[string]map[string]int{} // caller → callee → line
	for name, defs := range l.funcs {
		for _, d := range defs {
			for k := d.start; k < d.end; k++ {
				if k+1 < d.end && t[k+1].s == "(" && l.funcs[t[k].s] != nil && !notCalls[t[k].s] {
					if k > 0 && (t[k-1].s == "." || t[k-1].s == "->" || t[k-1].s == "::") {
						continue
					}
					if calls[name] == nil {
						calls[name] = map[string]int{}
					}
					if _, ok := calls[name][t[k].s]; !ok {
						calls[name][t[k].s] = t[k].line
					}
				}
			}
		}
	}
	names := make([]string, 0, len(calls))
	for n := range calls {
		names = append(names, n)
	}
	sort.Strings(names)
	reported := map[string]bool{}
	for _, start := range names {
		if path := cycle(calls, start); path != nil && !reported[path[0]] {
			for _, n := range path {
				reported[n] = true
			}
			l.errorf(calls[path[len(path)-2]][start], "recursion (%s): Metal does not allow a function to call itself, directly or through others; use a loop", strings.Join(path, " → "))
		}
	}
}

// cycle returns a call path from start back to start, or nil.
func cycle(calls map[string]map[string]int, start string) []string {
	seen := map[string]bool{}
	var walk func(n string, path []string) []string
	walk = func(n string, path []string) []string {
		callees := make([]string, 0, len(calls[n]))
		for c := range calls[n] {
			callees = append(callees, c)
		}
		sort.Strings(callees)
		for _, c := range callees {
			if c == start {
				return append(append([]string{}, path...), c)
			}
			if !seen[c] {
				seen[c] = true
				if p := walk(c, append(path, c)); p != nil {
					return p
				}
			}
		}
		return nil
	}
	return walk(start, []string{start})
}
