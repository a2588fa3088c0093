package metal

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// backendSource is the parsed Go source of this package, darwin files
// included (the parser ignores build tags), without tests.
type backendSource struct {
	fset  *token.FileSet
	files map[string]*ast.File
}

func parseBackend(t *testing.T) backendSource {
	t.Helper()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	src := backendSource{fset: token.NewFileSet(), files: map[string]*ast.File{}}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(src.fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		src.files[p] = f
	}
	return src
}

// selField returns the field name when e is sel.<field>.
func selField(e ast.Expr) (string, bool) {
	s, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	if x, ok := s.X.(*ast.Ident); ok && x.Name == "sel" {
		return s.Sel.Name, true
	}
	return "", false
}

// unwrap strips parentheses and conversions such as uintptr(sel.x).
func unwrap(e ast.Expr) ast.Expr {
	for {
		switch v := e.(type) {
		case *ast.ParenExpr:
			e = v.X
		case *ast.CallExpr:
			if !isConversion(v) {
				return e
			}
			e = v.Args[0]
		default:
			return e
		}
	}
}

// registered maps each field of the sel struct to the selector string
// registerSelectors gives it (sel.x = r("name"), r being objc.RegisterName).
func (s backendSource) registered(t *testing.T) map[string]string {
	t.Helper()
	regs := map[string]string{}
	found := false
	for name, f := range s.files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != "registerSelectors" {
				continue
			}
			found = true
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				as, ok := n.(*ast.AssignStmt)
				if !ok || len(as.Lhs) != len(as.Rhs) {
					return true
				}
				for i, lhs := range as.Lhs {
					field, ok := selField(lhs)
					if !ok {
						continue
					}
					call, ok := as.Rhs[i].(*ast.CallExpr)
					if !ok || len(call.Args) != 1 {
						t.Errorf("%s: sel.%s is not assigned a RegisterName call", s.fset.Position(lhs.Pos()), field)
						continue
					}
					lit, ok := call.Args[0].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Errorf("%s: sel.%s is registered from a non-literal", s.fset.Position(lhs.Pos()), field)
						continue
					}
					str, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					if _, dup := regs[field]; dup {
						t.Errorf("%s: sel.%s registered twice", name, field)
					}
					regs[field] = str
				}
				return true
			})
		}
	}
	if !found || len(regs) == 0 {
		t.Fatal("registerSelectors with sel.<field> = r(\"…\") assignments not found: the test no longer understands how the backend names selectors")
	}
	return regs
}

// selectorCall is one message send: the selector field and the number of
// arguments after the selector.
type selectorCall struct {
	field string
	args  int
	pos   token.Position
	call  *ast.CallExpr
	index int // of the selector among call.Args
}

// isConversion reports whether call converts its one argument to uintptr.
func isConversion(call *ast.CallExpr) bool {
	id, ok := call.Fun.(*ast.Ident)
	return ok && id.Name == "uintptr" && len(call.Args) == 1
}

// calls finds every call that passes sel.<field> as an argument. Any other
// use of sel.<field> outside registerSelectors would escape the argument
// count, and is returned as a problem, as is objc.RegisterName elsewhere.
func (s backendSource) calls() (out []selectorCall, problems []string) {
	for _, f := range s.files {
		inCall := map[ast.Expr]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if fd, ok := n.(*ast.FuncDecl); ok && fd.Name.Name == "registerSelectors" {
				return false
			}
			call, ok := n.(*ast.CallExpr)
			if !ok || isConversion(call) {
				return true
			}
			if fn, ok := call.Fun.(*ast.SelectorExpr); ok && fn.Sel.Name == "RegisterName" {
				problems = append(problems, fmt.Sprintf("%s: objc.RegisterName outside registerSelectors: register selectors there, where this test reads them", s.fset.Position(call.Pos())))
			}
			for i, a := range call.Args {
				u := unwrap(a)
				field, ok := selField(u)
				if !ok {
					continue
				}
				inCall[u.(*ast.SelectorExpr)] = true
				if call.Ellipsis != token.NoPos {
					problems = append(problems, fmt.Sprintf("%s: sel.%s sent with a variadic argument list: its argument count cannot be checked", s.fset.Position(call.Pos()), field))
				}
				out = append(out, selectorCall{field: field, args: len(call.Args) - i - 1, pos: s.fset.Position(call.Pos()), call: call, index: i})
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			if fd, ok := n.(*ast.FuncDecl); ok && fd.Name.Name == "registerSelectors" {
				return false
			}
			if e, ok := n.(*ast.SelectorExpr); ok {
				if field, ok := selField(e); ok && !inCall[e] {
					problems = append(problems, fmt.Sprintf("%s: sel.%s used other than as an argument of a call", s.fset.Position(e.Pos()), field))
				}
			}
			return true
		})
	}
	if len(out) == 0 {
		problems = append(problems, "no message sends found")
	}
	return out, problems
}

// checkedCalls is calls, failing t on any problem.
func (s backendSource) checkedCalls(t *testing.T) []selectorCall {
	t.Helper()
	out, problems := s.calls()
	for _, p := range problems {
		t.Error(p)
	}
	if len(out) == 0 {
		t.FailNow()
	}
	return out
}

// readSelectorList reads a testdata list: one selector a line, "#" starts a comment.
func readSelectorList(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "selectors", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("testdata/selectors/%s is empty", name)
	}
	return out
}

// TestSelectors checks every selector the backend sends against Apple's
// published selectors (metal-cpp's headers, the MPS class reference for
// MPS, and Apple's Metal reference for macOS 15's), and that every send passes as many arguments as the selector has
// colons.
func TestSelectors(t *testing.T) {
	src := parseBackend(t)
	regs := src.registered(t)
	calls := src.checkedCalls(t)

	published := map[string]string{}
	for _, s := range readSelectorList(t, "metal-cpp.txt") {
		published[s] = "metal-cpp"
	}
	if len(published) < 1000 {
		t.Fatalf("metal-cpp.txt has %d selectors; a complete list has over 1000", len(published))
	}
	mps := readSelectorList(t, "mps.txt")
	for _, s := range mps {
		published[s] = "MPS"
	}
	macOS15 := readSelectorList(t, "macos15.txt")
	for _, s := range macOS15 {
		if published[s] == "metal-cpp" {
			t.Errorf("macos15.txt lists %q, which metal-cpp.txt has: remove it", s)
		}
		published[s] = "macOS 15"
	}

	used := map[string]bool{}
	for _, c := range calls {
		name, ok := regs[c.field]
		if !ok {
			t.Errorf("%s: sel.%s is sent but never registered", c.pos, c.field)
			continue
		}
		used[c.field] = true
		if want := strings.Count(name, ":"); c.args != want {
			t.Errorf("%s: %q sent with %d arguments, the selector takes %d", c.pos, name, c.args, want)
		}
	}
	for field, name := range regs {
		if _, ok := published[name]; !ok {
			t.Errorf("sel.%s = %q is in neither metal-cpp's selectors nor the MPS or macOS 15 lists", field, name)
		}
		if !used[field] {
			t.Errorf("sel.%s (%q) is registered but never sent", field, name)
		}
	}
	sent := map[string]bool{}
	for _, name := range regs {
		sent[name] = true
	}
	for list, names := range map[string][]string{"mps.txt": mps, "macos15.txt": macOS15} {
		for _, s := range names {
			if !sent[s] {
				t.Errorf("%s lists %q, which the backend does not send: remove it", list, s)
			}
		}
	}
	t.Logf("%d selectors, %d message sends checked", len(regs), len(calls))
}

// TestSelectorCheckHasTeeth runs the argument count and the list check on
// wrong sends: a missing argument, an extra one, and an invented selector.
func TestSelectorCheckHasTeeth(t *testing.T) {
	const code = `package p
func registerSelectors() {
	r := objc.RegisterName
	sel.setBuffer = r("setBuffer:offset:atIndex:")
	sel.commit = r("commit")
	sel.bogus = r("setBufferz:")
}
func f(enc, cb objc.ID) {
	enc.Send(sel.setBuffer, buf, uint64(0))
	cb.Send(sel.commit, 1)
	enc.Send(sel.bogus, 1)
	x := sel.commit
	_ = x
}`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", code, 0)
	if err != nil {
		t.Fatal(err)
	}
	src := backendSource{fset: fset, files: map[string]*ast.File{"p.go": f}}
	regs := src.registered(t)
	calls, problems := src.calls()
	if len(problems) != 1 || !strings.Contains(problems[0], "sel.commit used other than as an argument") {
		t.Errorf("problems %q, want one: the bare use of sel.commit, which escapes the argument count", problems)
	}
	bad := 0
	for _, c := range calls {
		if strings.Count(regs[c.field], ":") != c.args {
			bad++
		}
	}
	if bad != 2 {
		t.Errorf("%d sends with a wrong argument count found, want 2 (setBuffer with 2 of 3, commit with 1 of 0)", bad)
	}
	published := readSelectorList(t, "metal-cpp.txt")
	if slices.Contains(published, "setBufferz:") || !slices.Contains(published, "setBuffer:offset:atIndex:") {
		t.Error("the metal-cpp list does not tell an invented selector from a real one")
	}
}

// TestCompileOptionsExplicit checks that newLibraryWithSource:options:error:
// is never sent with nil options (Metal's defaults enable fast math).
func TestCompileOptionsExplicit(t *testing.T) {
	src := parseBackend(t)
	regs := src.registered(t)
	n := 0
	for _, c := range src.checkedCalls(t) {
		if regs[c.field] != "newLibraryWithSource:options:error:" {
			continue
		}
		n++
		if c.index+2 >= len(c.call.Args) {
			t.Errorf("%s: newLibraryWithSource:options:error: without its options argument", c.pos)
			continue
		}
		opts := unwrap(c.call.Args[c.index+2])
		if conv, ok := opts.(*ast.CallExpr); ok && len(conv.Args) == 1 {
			opts = conv.Args[0] // objc.ID(0)
		}
		if lit, ok := opts.(*ast.BasicLit); ok && lit.Value == "0" {
			t.Errorf("%s: newLibraryWithSource:options:error: sent with nil options: fast math would be on implicitly", c.pos)
		}
		if id, ok := opts.(*ast.Ident); ok && id.Name == "nil" {
			t.Errorf("%s: newLibraryWithSource:options:error: sent with nil options", c.pos)
		}
	}
	if n == 0 {
		t.Fatal("no newLibraryWithSource:options:error: send found")
	}
}
