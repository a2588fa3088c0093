package families

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/kerntune/kerntune/family"
)

// The built-in families are data: one description per family in
// NAME.json in this directory (its dims, shape rules, classes and, per kind of
// backend, parameters and constraints, rules and constraints written in
// the expression language of Expr). The Python loader reads the same files
// (python/kerntune_params/families is a link to this directory), so a
// family is described once for the tuner and both loaders.
//
//go:embed *.json
var familyFiles embed.FS

// FamilyDesc is a family's description as its file holds it.
type FamilyDesc struct {
	Name string   `json:"name"`
	Doc  string   `json:"doc"`
	Dims []string `json:"dims"`
	// Operands are pairs of dims whose product is an operand's element
	// count, held to MaxElements.
	Operands [][2]string `json:"operands,omitempty"`
	// Shape are rules every shape must pass, in order, after the dims' range.
	Shape []RuleDesc `json:"shape,omitempty"`
	// Classes are tested in order: the first whose When holds is the
	// shape's; the last has no When (otherwise).
	Classes []ClassDesc `json:"classes"`
	// ClassVariants name dims whose every allowed value (a shape rule with
	// Dim and Values) makes its own set of the classes, named by
	// ClassSuffix, e.g. "_q{bits}g{group_size}".
	ClassVariants []string `json:"class_variants,omitempty"`
	ClassSuffix   string   `json:"class_suffix,omitempty"`
	// Spaces maps a kind of backend (cpu, gpu; see SpaceKind) to its space.
	Spaces map[string]SpaceDesc `json:"spaces"`
	// Mutants are the kinds of broken kernel the family's tests must catch
	// (kernels' mutation test); empty: every kind.
	Mutants []string `json:"mutants,omitempty"`
}

// RuleDesc is a rule on a shape or a constraint on parameters: where When
// holds (or is empty), Require must hold, else Error, a message in which
// {expression} is replaced by its value. A shape rule with Dim and Values
// requires the dim to be one of the values instead.
type RuleDesc struct {
	When    string `json:"when,omitempty"`
	Require string `json:"require,omitempty"`
	Error   string `json:"error,omitempty"`
	Dim     string `json:"dim,omitempty"`
	Values  []int  `json:"values,omitempty"`
}

// ClassDesc is a class: its name, its rule in words and as an expression.
type ClassDesc struct {
	Name string `json:"name"`
	Rule string `json:"rule"`
	When string `json:"when,omitempty"`
}

// SpaceDesc is a space's parameters and constraints.
type SpaceDesc struct {
	Params      []ParamDesc `json:"params"`
	Constraints []RuleDesc  `json:"constraints,omitempty"`
}

// ParamDesc is a parameter as the description writes it.
type ParamDesc struct {
	Name    string `json:"name"`
	Values  []int  `json:"values"`
	Default int    `json:"default"`
	Doc     string `json:"doc"`
}

// rule is a compiled RuleDesc.
type rule struct {
	when, require *Expr
	msg           *template
	dim           int // index of Dim; -1 for an expression rule
	values        []int
	// fastWhen and fastRequire evaluate when and require over the values
	// of the names in compileRules' order (nil: Eval only; fastWhen is
	// also nil without a when).
	fastWhen, fastRequire boolFn
	usesDims              bool // when or require names a dim
}

type class struct {
	ClassDesc
	when *Expr
}

// described is a compiled description: Family builds fresh values from it.
type described struct {
	desc     FamilyDesc
	operands [][2]int
	shape    []rule
	classes  []class
	variants []int // dim indices of ClassVariants
	suffix   *template
	spaces   map[string][]rule
	folder   string // family/NAME for a family in a folder, else ""
}

// ParseFamily reads a family description (the format of params/families/*.json)
// and returns the family it describes.
func ParseFamily(data []byte) (*Family, error) {
	d, err := compileFamily(data)
	if err != nil {
		return nil, err
	}
	return d.family(), nil
}

func compileFamily(data []byte) (*described, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var fd FamilyDesc
	if err := dec.Decode(&fd); err != nil {
		return nil, fmt.Errorf("family description: %w", err)
	}
	d, err := compileDesc(fd)
	if err != nil {
		return nil, fmt.Errorf("family %s: %w", fd.Name, err)
	}
	return d, nil
}

func compileDesc(fd FamilyDesc) (*described, error) {
	if fd.Name == "" || len(fd.Dims) == 0 || len(fd.Classes) == 0 || len(fd.Spaces) == 0 {
		return nil, fmt.Errorf("name, dims, classes and spaces are required")
	}
	d := &described{desc: fd, spaces: map[string][]rule{}}
	dimIndex := func(name string) (int, error) {
		if i := slices.Index(fd.Dims, name); i >= 0 {
			return i, nil
		}
		return 0, fmt.Errorf("%q is not a dim (%s)", name, strings.Join(fd.Dims, ", "))
	}
	for _, op := range fd.Operands {
		a, err := dimIndex(op[0])
		if err != nil {
			return nil, fmt.Errorf("operands: %w", err)
		}
		b, err := dimIndex(op[1])
		if err != nil {
			return nil, fmt.Errorf("operands: %w", err)
		}
		d.operands = append(d.operands, [2]int{a, b})
	}
	var err error
	if d.shape, err = compileRules("shape", fd.Shape, fd.Dims, fd.Dims); err != nil {
		return nil, err
	}
	for i, c := range fd.Classes {
		cl := class{ClassDesc: c}
		switch {
		case c.When == "" && i != len(fd.Classes)-1:
			return nil, fmt.Errorf("class %s: only the last class may have no when", c.Name)
		case c.When != "":
			if cl.when, err = parseBool(c.When, fd.Dims); err != nil {
				return nil, fmt.Errorf("class %s: %w", c.Name, err)
			}
		}
		d.classes = append(d.classes, cl)
	}
	if d.classes[len(d.classes)-1].when != nil {
		return nil, fmt.Errorf("the last class (%s) must have no when: it takes every other shape", fd.Classes[len(fd.Classes)-1].Name)
	}
	for _, v := range fd.ClassVariants {
		i, err := dimIndex(v)
		if err != nil {
			return nil, fmt.Errorf("class_variants: %w", err)
		}
		if d.dimValues(i) == nil {
			return nil, fmt.Errorf("class_variants: %s has no shape rule listing its values", v)
		}
		d.variants = append(d.variants, i)
	}
	if (fd.ClassSuffix == "") != (len(fd.ClassVariants) == 0) {
		return nil, fmt.Errorf("class_suffix and class_variants go together")
	}
	if fd.ClassSuffix != "" {
		if d.suffix, err = parseTemplate(fd.ClassSuffix, fd.ClassVariants); err != nil {
			return nil, fmt.Errorf("class_suffix: %w", err)
		}
	}
	for kind, s := range fd.Spaces {
		names := make([]string, len(s.Params))
		for i, p := range s.Params {
			if slices.Contains(names[:i], p.Name) || slices.Contains(fd.Dims, p.Name) {
				return nil, fmt.Errorf("%s space: parameter %s named twice", kind, p.Name)
			}
			if !slices.Contains(p.Values, p.Default) {
				return nil, fmt.Errorf("%s space: %s's default %d is not one of its values", kind, p.Name, p.Default)
			}
			names[i] = p.Name
		}
		rules, err := compileRules(kind+" space", s.Constraints, fd.Dims, append(names, fd.Dims...))
		if err != nil {
			return nil, err
		}
		for _, r := range rules {
			if r.dim >= 0 {
				return nil, fmt.Errorf("%s space: a constraint needs require and error (dim and values are for shape rules)", kind)
			}
		}
		d.spaces[kind] = rules
	}
	return d, nil
}

func parseBool(src string, names []string) (*Expr, error) {
	e, err := ParseIntExpr(src, names)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", src, err)
	}
	if e.typ != typBool && e.typ != "" {
		return nil, fmt.Errorf("%q is %s, not a boolean", src, e.typ)
	}
	return e, nil
}

func compileRules(where string, descs []RuleDesc, dims, names []string) ([]rule, error) {
	var out []rule
	for i, rd := range descs {
		r := rule{dim: -1}
		var err error
		fail := func(err error) error { return fmt.Errorf("%s rule %d: %w", where, i+1, err) }
		if rd.Dim != "" {
			if r.dim = slices.Index(dims, rd.Dim); r.dim < 0 || len(rd.Values) == 0 || rd.Require != "" {
				return nil, fail(fmt.Errorf("a rule on dim %q needs values of a dim and no require", rd.Dim))
			}
			r.values = rd.Values
			out = append(out, r)
			continue
		}
		if rd.Require == "" || rd.Error == "" {
			return nil, fail(fmt.Errorf("require and error are required"))
		}
		if rd.When != "" {
			if r.when, err = parseBool(rd.When, names); err != nil {
				return nil, fail(err)
			}
		}
		if r.require, err = parseBool(rd.Require, names); err != nil {
			return nil, fail(err)
		}
		if r.msg, err = parseTemplate(rd.Error, names); err != nil {
			return nil, fail(err)
		}
		r.usesDims = r.require.Uses(dims) || r.when != nil && r.when.Uses(dims)
		slots := make(map[string]int, len(names))
		for i, n := range names {
			slots[n] = i
		}
		fw, okW := func() (boolFn, bool) {
			if r.when == nil {
				return nil, true
			}
			return r.when.compileBool(slots)
		}()
		if fr, okR := r.require.compileBool(slots); okW && okR {
			r.fastWhen, r.fastRequire = fw, fr
		}
		out = append(out, r)
	}
	return out, nil
}

// dimValues returns the values a shape rule allows for dim i, nil if none.
func (d *described) dimValues(i int) []int {
	for _, r := range d.shape {
		if r.dim == i {
			return r.values
		}
	}
	return nil
}

// family builds a fresh Family from the description.
func (d *described) family() *Family {
	fd := d.desc
	f := &Family{Name: fd.Name, Doc: fd.Doc, Dims: slices.Clone(fd.Dims), Classify: d.classify, Spaces: map[string]*Space{},
		Mutants: slices.Clone(fd.Mutants), Folder: d.folder}
	for _, combo := range d.variantCombos() {
		env := map[string]any{}
		var words []string
		for j, i := range d.variants {
			env[fd.Dims[i]] = combo[j]
			words = append(words, fmt.Sprintf("%s=%d", fd.Dims[i], combo[j]))
		}
		suffix := ""
		if d.suffix != nil {
			suffix = d.suffix.render(env)
		}
		for _, c := range fd.Classes {
			r := c.Rule
			if len(words) > 0 {
				r = strings.Join(words, ", ") + ", " + r
			}
			f.Classes = append(f.Classes, Class{Name: c.Name + suffix, Rule: r})
		}
	}
	for kind, s := range fd.Spaces {
		sp := &Space{}
		for _, p := range s.Params {
			sp.Params = append(sp.Params, Param{Name: p.Name, Values: slices.Clone(p.Values), Default: p.Default, Doc: p.Doc})
		}
		if rules := d.spaces[kind]; len(rules) > 0 {
			sp.Check = d.checker(sp.Params, rules)
		}
		f.Spaces[kind] = sp
	}
	return f
}

// variantCombos lists every combination of the class variants' values, the
// first variant outermost; one empty combination when there are none.
func (d *described) variantCombos() [][]int {
	combos := [][]int{nil}
	for _, i := range d.variants {
		var next [][]int
		for _, c := range combos {
			for _, v := range d.dimValues(i) {
				next = append(next, append(slices.Clone(c), v))
			}
		}
		combos = next
	}
	return combos
}

func (d *described) shapeEnv(shape []int) map[string]any {
	env := make(map[string]any, len(shape))
	for i, n := range d.desc.Dims {
		env[n] = shape[i]
	}
	return env
}

func (d *described) classify(shape []int) (string, error) {
	fd := d.desc
	if err := checkDims(fd.Name, fd.Dims, shape, d.operands); err != nil {
		return "", err
	}
	env := d.shapeEnv(shape)
	for _, r := range d.shape {
		if r.dim >= 0 {
			if !slices.Contains(r.values, shape[r.dim]) {
				return "", fmt.Errorf("%s: %s=%d is not supported (allowed: %s)", fd.Name, fd.Dims[r.dim], shape[r.dim], joinInts(r.values))
			}
			continue
		}
		if err := r.check(env); err != nil {
			return "", err
		}
	}
	suffix := ""
	if d.suffix != nil {
		suffix = d.suffix.render(env)
	}
	for _, c := range d.classes {
		if c.when == nil {
			return c.Name + suffix, nil
		}
		ok, err := c.when.EvalBool(env)
		if err != nil {
			return "", fmt.Errorf("%s: class %s: %w", fd.Name, c.Name, err)
		}
		if ok {
			return c.Name + suffix, nil
		}
	}
	panic("unreachable: the last class has no when")
}

// checker is a Space.Check from the constraints: those that name a dim are
// skipped without a shape (nil, or not of the family's dims).
func (d *described) checker(ps []Param, rules []rule) func([]int, map[string]int) error {
	dims := d.desc.Dims
	names := make([]string, 0, len(ps)+len(dims))
	for _, q := range ps {
		names = append(names, q.Name)
	}
	names = append(names, dims...)
	return func(shape []int, p map[string]int) error {
		// The values in compileRules' order: parameters, then dims.
		vals := make([]int, len(ps)+len(dims))
		for i, q := range ps {
			vals[i] = p[q.Name] // a missing parameter reads 0: Check may see a partial map
		}
		hasShape := len(shape) == len(dims)
		if hasShape {
			copy(vals[len(ps):], shape)
		}
		var env map[string]any // for Eval and messages, made when needed
		for _, r := range rules {
			if !hasShape && r.usesDims {
				continue
			}
			if r.fastRequire != nil {
				applies, ok := true, true
				if r.fastWhen != nil {
					applies, ok = r.fastWhen(vals)
				}
				if ok && !applies {
					continue
				}
				if ok {
					holds, ok2 := r.fastRequire(vals)
					if ok2 && holds {
						continue
					}
					if ok2 {
						n := len(ps)
						if hasShape {
							n = len(names)
						}
						return &brokenRule{msg: r.msg, names: names[:n], vals: vals[:n]}
					}
				}
			}
			if env == nil {
				env = make(map[string]any, len(vals))
				for i, q := range ps {
					env[q.Name] = vals[i]
				}
				if hasShape {
					for i, n := range dims {
						env[n] = shape[i]
					}
				}
			}
			if err := r.check(env); err != nil {
				return err
			}
		}
		return nil
	}
}

// check returns the rule's error if it applies and fails.
// brokenRule is a rule a candidate breaks, its message rendered only when
// read: walking a GEMM space's product breaks rules millions of times and
// reads none of the messages (rendering each took most of the walk).
type brokenRule struct {
	msg   *template
	names []string
	vals  []int
}

func (e *brokenRule) Error() string {
	env := make(map[string]any, len(e.names))
	for i, n := range e.names {
		env[n] = e.vals[i]
	}
	return e.msg.render(env)
}

func (r rule) check(env map[string]any) error {
	if r.when != nil {
		ok, err := r.when.EvalBool(env)
		if err != nil {
			return fmt.Errorf("%s: %w", r.when, err)
		}
		if !ok {
			return nil
		}
	}
	ok, err := r.require.EvalBool(env)
	if err != nil {
		return fmt.Errorf("%s: %w", r.require, err)
	}
	if !ok {
		return fmt.Errorf("%s", r.msg.render(env))
	}
	return nil
}

// template is a message with {expression} holes.
type template struct {
	text  []string // len(exprs)+1 pieces around the holes
	exprs []*Expr
}

func parseTemplate(src string, names []string) (*template, error) {
	t := &template{}
	for {
		i := strings.IndexByte(src, '{')
		if i < 0 {
			t.text = append(t.text, src)
			return t, nil
		}
		j := strings.IndexByte(src[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("%q: { without }", src)
		}
		e, err := ParseIntExpr(src[i+1:i+j], names)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", src, err)
		}
		t.text = append(t.text, src[:i])
		t.exprs = append(t.exprs, e)
		src = src[i+j+1:]
	}
}

func (t *template) render(env map[string]any) string {
	var b strings.Builder
	for i, e := range t.exprs {
		b.WriteString(t.text[i])
		v, err := e.Eval(env)
		if err != nil {
			b.WriteString("{" + e.String() + "}")
			continue
		}
		fmt.Fprint(&b, v)
	}
	b.WriteString(t.text[len(t.text)-1])
	return b.String()
}

func joinInts(vs []int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ", ")
}

// builtinDescs compiles the embedded descriptions once: this package's
// and those of the families that live in folders (package family); an
// invalid one is a bug, caught by the tests.
var builtinDescs = func() []*described {
	out := compileDir(familyFiles, ".", "params/families", "")
	dirs, err := family.Descriptions.ReadDir(".")
	if err != nil {
		panic(err)
	}
	for _, d := range dirs {
		if d.IsDir() {
			out = append(out, compileDir(family.Descriptions, d.Name(), "family/"+d.Name(), "family/"+d.Name())...)
		}
	}
	return out
}()

// compileDir compiles the descriptions in dir of fsys, each named after its
// family; label names dir in errors, folder the family's folder ("" for
// this package's own).
func compileDir(fsys embed.FS, dir, label, folder string) []*described {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		panic(err)
	}
	var out []*described
	for _, n := range names {
		if !strings.HasSuffix(n.Name(), ".json") {
			continue
		}
		data, err := fsys.ReadFile(path.Join(dir, n.Name()))
		if err != nil {
			panic(err)
		}
		d, err := compileFamily(data)
		if err != nil {
			panic(fmt.Sprintf("params: %s/%s: %v", label, n.Name(), err))
		}
		if d.desc.Name+".json" != n.Name() || (folder != "" && path.Base(folder) != d.desc.Name) {
			panic(fmt.Sprintf("params: %s/%s describes %q; the file (and a family's folder) is named after its family", label, n.Name(), d.desc.Name))
		}
		d.folder = folder
		out = append(out, d)
	}
	return out
}
