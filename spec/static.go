package spec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/params/families"
)

// StaticCheck is the static check of one spec file (kerntune check prints
// it): the space per class, the sources generated for every valid
// candidate, dtype and API, and clang's check of the Metal sources.
type StaticCheck struct {
	File               string       `json:"file"`
	Kernel             string       `json:"kernel"`
	Dims               []string     `json:"dims"`
	Correctness        string       `json:"correctness"` // "reference expression", "Python reference <file>:<function>" or "implements <family> (its float64 reference)"
	APIs               []string     `json:"apis"`
	Params             []CheckParam `json:"params"`
	SpaceSize          int          `json:"space_size"`
	Valid              int          `json:"valid"` // valid for every shape
	Classes            []CheckClass `json:"classes"`
	VerificationShapes int          `json:"verification_shapes"`
	// Unverifiable counts the valid candidates that no verification shape
	// accepts (its constraints reject them on every odd shape): verify
	// refuses them as unverified; tune verifies them on its own shapes.
	Unverifiable        int    `json:"unverifiable,omitempty"`
	UnverifiableExample string `json:"unverifiable_example,omitempty"`
	Sources             int    `json:"sources_generated"`
	// SourceShapes counts the shapes a shape-dependent body's sources
	// were generated on (Sources then counts distinct sources); 0: the
	// sources do not depend on the shape.
	SourceShapes int       `json:"source_shapes,omitempty"`
	DTypes       int       `json:"-"`                   // dtypes the sources were generated for
	MSL          *MSLCheck `json:"msl_check,omitempty"` // absent without Metal sources
}

// CheckParam is a parameter with its values.
type CheckParam struct {
	Name    string `json:"name"`
	Values  []int  `json:"values"`
	Default int    `json:"default"`
}

// CheckClass is a shape class with its candidates valid on its workload shapes.
type CheckClass struct {
	Name   string   `json:"name"`
	Valid  int      `json:"valid"`
	Shapes []string `json:"shapes"`
}

// MSLCheck is the check of the Metal sources: passed (with the count,
// the compiler and its runs) or skipped (why: no compiler found, or
// --no-msl-check).
type MSLCheck struct {
	Passed  int    `json:"passed"`
	Clang   string `json:"clang,omitempty"`
	Runs    int    `json:"runs,omitempty"`
	Skipped string `json:"skipped,omitempty"`
	// Compiler names Apple's compiler where it checked instead of clang.
	Compiler string `json:"compiler,omitempty"`
	// MetalVersion is the Metal language version checked against.
	MetalVersion string `json:"metal_version,omitempty"`
	// NoCompiler: skipped because no compiler was found (check refuses
	// to go on without --no-msl-check).
	NoCompiler bool `json:"no_compiler,omitempty"`
}

// StaticOptions are the choices of a static check.
type StaticOptions struct {
	// NoMSLCheck skips the check of the Metal sources.
	NoMSLCheck bool
}

// StaticCheck enumerates the space per class, generates every valid
// candidate's source for each API the spec has, and checks the Metal
// sources with Apple's compiler or clang, where one is found (MSL.NoCompiler
// where none is). Metal sources that the compiler rejects give an
// *MSLError.
func (c *Compiled) StaticCheck(ctx context.Context) (*StaticCheck, error) {
	return c.StaticCheckWith(ctx, StaticOptions{})
}

// MetalVersion is the Metal language version the spec's Metal sources are
// checked against: its source.mlx.metal_version, else the checker's
// default (MLX's oldest, 3.1).
func (c *Compiled) MetalVersion() string {
	if v := c.Body.Compile.LanguageVersion; v != "" {
		return v
	}
	return mslcheck.DefaultVersion
}

// StaticCheckWith is StaticCheck with options. A Python reference runs
// once first (CheckReference).
func (c *Compiled) StaticCheckWith(ctx context.Context, o StaticOptions) (*StaticCheck, error) {
	if c.c.py != nil {
		if err := c.CheckReference(); err != nil {
			return nil, err
		}
	}
	k := c.Kernel
	sc := &StaticCheck{File: c.File, Kernel: k.Name, Dims: k.Dims, Correctness: "reference expression",
		Params: []CheckParam{}, Classes: []CheckClass{}, VerificationShapes: len(k.Odd), DTypes: len(c.DTypes())}
	switch {
	case c.Base != nil:
		sc.Correctness = "implements " + c.Base.Name + " (its float64 reference)"
	case c.c.py != nil:
		sc.Correctness = "Python reference " + c.c.py.File + ":" + c.c.py.Function
	}
	for _, a := range c.APIs {
		sc.APIs = append(sc.APIs, string(a))
	}
	ps, _ := k.Space("gpu")
	for _, p := range ps.Params {
		sc.Params = append(sc.Params, CheckParam{Name: p.Name, Values: p.Values, Default: p.Default})
	}
	all := c.Space().Enumerate()
	sc.SpaceSize, sc.Valid = c.Space().Size(), len(all)
	for _, cand := range all {
		if !k.Verifiable(ps, cand) {
			if sc.Unverifiable == 0 {
				sc.UnverifiableExample = cand.Key()
			}
			sc.Unverifiable++
		}
	}
	byClass := map[string][][]int{}
	for _, cs := range k.Workload {
		cl, err := k.Classify(cs.Shape)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.File, err)
		}
		byClass[cl] = append(byClass[cl], cs.Shape)
	}
	for _, cl := range k.Classes {
		shapes := byClass[cl.Name]
		if len(shapes) == 0 {
			continue
		}
		var names []string
		for _, s := range shapes {
			names = append(names, families.ShapeString(s))
		}
		sc.Classes = append(sc.Classes, CheckClass{Name: cl.Name, Valid: len(c.Space(shapes...).Enumerate()), Shapes: names})
	}
	// A shape-dependent body is generated on every shape the spec tunes
	// or verifies that accepts the candidate; identical sources are
	// checked once.
	shapes := [][]int{nil}
	if c.Body.ShapeDependent() {
		shapes = shapes[:0]
		for _, cs := range append(append([]kernels.Case{}, k.Workload...), k.Odd...) {
			shapes = append(shapes, cs.Shape)
		}
		sc.SourceShapes = len(shapes)
	}
	var msl []gpu.MSLSource
	seen := map[string]bool{}
	for _, api := range c.APIs {
		for _, dt := range c.DTypes() {
			for _, cand := range all {
				for _, shape := range shapes {
					if shape != nil && ps.Check(shape, cand) != nil {
						continue
					}
					src, err := c.Body.SourceForShape(api, dt, cand, shape)
					where := cand.Key()
					if shape != nil {
						where += " on " + families.ShapeString(shape)
					}
					if err != nil {
						return nil, fmt.Errorf("%s: generating %s source for %s: %w", c.File, api, where, err)
					}
					if shape != nil && seen[string(api)+"\x00"+src] {
						continue
					}
					seen[string(api)+"\x00"+src] = true
					if api == gpu.Metal {
						fn, err := c.Body.FuncNameForShape(dt, cand, shape)
						if err != nil {
							return nil, fmt.Errorf("%s: %s: %w", c.File, where, err)
						}
						msl = append(msl, gpu.MSLSource{Name: fmt.Sprintf("%s %s %s", c.Kernel.Name, dt, where), Func: fn, Text: src})
					}
					sc.Sources++
				}
			}
		}
	}
	if len(msl) == 0 {
		return sc, nil
	}
	if o.NoMSLCheck {
		sc.MSL = &MSLCheck{Skipped: "--no-msl-check"}
		return sc, nil
	}
	mc, err := gpu.FindMSLCompiler(c.MetalVersion())
	if err != nil {
		sc.MSL = &MSLCheck{Skipped: err.Error(), NoCompiler: true}
		return sc, nil
	}
	runs, err := gpu.CheckMSLWith(ctx, mc, msl)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", c.File, err)
		}
		return nil, mslError(ctx, c, mc, msl, err)
	}
	sc.MSL = &MSLCheck{Passed: len(msl), Runs: runs, MetalVersion: mc.Version}
	if mc.Xcrun != "" {
		sc.MSL.Compiler = mc.Name()
	} else {
		sc.MSL.Clang = filepath.Base(mc.Clang)
	}
	return sc, nil
}

// clangError is one error line of clang's output about a .metal file:
// file, line, message.
var clangError = regexp.MustCompile(`(?m)^(?:\[[^\]\n]*\] )?(\S+\.metal):(\d+):\d+: (?:fatal )?error: (.*)$`)

// maxMSLErrors is how many of clang's errors mslError quotes.
const maxMSLErrors = 5

// mslError turns a failed MSL check (err) of spec c's Metal sources into a
// *MSLError that names the spec and quotes the lines of the user's own
// text (the body in the spec's JSON, a body or source file) that clang
// rejected: the batch's line numbers are those of a deleted temporary
// file, so the first failing candidate is checked again alone and its
// errors mapped back with spec.Locate. A failure without clang errors
// (clang could not run) is returned as it is.
func mslError(ctx context.Context, c *Compiled, mc gpu.MSLCompiler, srcs []gpu.MSLSource, err error) error {
	if len(srcs) == 0 {
		return fmt.Errorf("%s: %w", c.File, err)
	}
	msg := err.Error()
	first := 0
	for i, s := range srcs {
		if strings.Contains(msg, "["+s.Name+"] ") {
			first = i
			break
		}
	}
	s := srcs[first]
	dir, derr := os.MkdirTemp("", "kerntune-msl-")
	if derr != nil {
		return fmt.Errorf("%s: %w", c.File, err)
	}
	defer os.RemoveAll(dir)
	// Each way the first failing candidate is checked again alone.
	var checks []func() error
	if mc.Xcrun != "" {
		a, aerr := mslcheck.NewApple(mc.Xcrun, dir, mc.Version)
		if aerr != nil {
			return fmt.Errorf("%s: %w", c.File, err)
		}
		checks = append(checks, func() error { return a.CheckText(ctx, s.Name, gpu.ForSyntaxCheck(s.Text)) })
	} else {
		chk, cerr := mslcheck.NewVersion(mc.Clang, dir, mc.Version)
		if cerr != nil {
			return fmt.Errorf("%s: %w", c.File, err)
		}
		for _, mode := range mslcheck.Modes {
			checks = append(checks, func() error { return chk.CheckText(mode, s.Name, gpu.ForSyntaxCheck(s.Text)) })
		}
	}
	var lines []string
	var missing []string
	seen := map[string]bool{}
	for _, check := range checks {
		e := check()
		if e == nil {
			continue
		}
		gen := strings.Split(s.Text, "\n")
		for _, m := range clangError.FindAllStringSubmatch(e.Error(), -1) {
			if !strings.HasPrefix(m[1], dir) || len(lines) >= maxMSLErrors {
				continue
			}
			n, _ := strconv.Atoi(m[2])
			if mc.Xcrun == "" {
				if u := undeclared.FindStringSubmatch(m[3]); u != nil && !slices.Contains(missing, u[1]) {
					missing = append(missing, u[1])
				}
			}
			var l string
			if o, ok := c.Locate(s.Text, n); ok {
				l = fmt.Sprintf("  %s: error: %s\n      %s", o, m[3], strings.TrimRight(o.Text, " \t\r"))
			} else if n >= 1 && n <= len(gen) {
				l = fmt.Sprintf("  line %d of the source kerntune generates around the spec's: error: %s\n      %s", n, m[3], strings.TrimRight(gen[n-1], " \t\r"))
			} else {
				l = fmt.Sprintf("  error: %s", m[3])
			}
			if !seen[l] {
				seen[l] = true
				lines = append(lines, l)
			}
		}
		if len(lines) > 0 {
			break
		}
	}
	if len(lines) == 0 {
		return fmt.Errorf("%s: %w", c.File, err)
	}
	me := &MSLError{File: c.File, Source: s.Name, Lines: lines, Compiler: mc.Name()}
	if len(missing) > 0 {
		me.Note = fmt.Sprintf("note: clang checks against kerntune's stand-in for <metal_stdlib>, not Apple's; if %s is part of Metal's standard library, the stand-in lacks it: "+
			"run check with --no-msl-check to go on without the MSL check, and report the name so that the stand-in declares it", quoteAll(missing))
	}
	return me
}

// undeclared matches clang's errors about a name that may belong to
// Metal's standard library but that the stand-in does not declare.
var undeclared = regexp.MustCompile(`^(?:use of undeclared identifier|unknown type name|no template named|no member named) '([A-Za-z_][A-Za-z0-9_]*)'(?:$|;| in namespace 'metal)`)

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return strings.Join(q, ", ")
}

// MSLError reports Metal sources of a spec that clang rejects, quoting
// the lines of the user's own text it rejected: a fault of the spec, not
// of the machine.
type MSLError struct {
	File     string   // the spec file
	Source   string   // the first failing candidate's source, named
	Lines    []string // the compiler's errors, placed in the user's text where they could be
	Compiler string   // the compiler that rejected it, named
	Note     string   // how to go on where the stand-in may lack a name; "" if not
}

func (e *MSLError) Error() string {
	msg := fmt.Sprintf("%s: the Metal source of %s does not compile (the MSL check by %s of the first failing candidate):\n%s",
		e.File, e.Source, e.Compiler, strings.Join(e.Lines, "\n"))
	if e.Note != "" {
		msg += "\n" + e.Note
	}
	return msg
}
