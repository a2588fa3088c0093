package spec

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/params/paramfile"
)

// Compiled is a parsed, checked spec: the kernel and its GPU body, ready
// to Register.
type Compiled struct {
	Spec *Spec
	File string
	// Kernel is the catalog entry: family, space, workload, reference.
	Kernel *kernels.Kernel
	// Body is what the GPU backends compile.
	Body *gpu.Body
	// APIs are those the source can be built for: all three for a body,
	// the given ones for raw files.
	APIs []gpu.API
	// Base is the implemented built-in family, or nil.
	Base *kernels.Kernel

	c *compiler
	// data is the spec file's JSON, for Locate.
	data []byte
}

// compiler holds the compiled expressions of one spec.
type compiler struct {
	file, dir  string
	s          *Spec
	dims       []string
	paramNames []string
	errs       []error

	constraints []*program
	threads     *program
	grid        []*program
	shared      *program
	defines     map[string]*program
	defineNames []string
	lengths     []*program   // per buffer
	shapes      [][]*program // per buffer: its shape (mlx), or nil
	scalars     []*program
	classes     []*program // nil for a catch-all class
	flops       *program
	reference   *program
	py          *PythonRef // reference.python, or nil
	outIndex    int        // index of the (first) output buffer
	outs        []int      // indexes of the output buffers, in order
	outRefs     []*program
	ranges      [][2]*program // per buffer: its range, or nils
	dists       []string      // per buffer: its distribution (uniform by default)
	elems       []kernels.Elem
	inOps       []inOp // the inputs in binding order
	base        *kernels.Kernel
	mlx         *mlxCompiled

	seen   map[string]string // names of the expressions' namespace, by the field that took each
	cNames map[string]string // names of the kernel source's namespace, likewise
}

func (c *compiler) fail(field, exprText, format string, args ...any) {
	c.errs = append(c.errs, &Error{File: c.file, Field: field, Expr: exprText, Msg: fmt.Sprintf(format, args...)})
}

func (c *compiler) compile(field, src string, env map[string]any, k kind) *program {
	p, err := compileExpr(c.file, field, src, env, k)
	if err != nil {
		c.errs = append(c.errs, err)
		return nil
	}
	return p
}

// dialectNames are the macros and types of the kernels/gpu dialect.
var dialectNames = map[string]bool{
	"T": true, "NTHREADS": true, "LID": true, "GROUP_X": true, "GROUP_Y": true, "LOAD": true, "STORE": true,
	"LOADV": true, "STOREV": true, "LOADV_STREAM": true, "STOREV_STREAM": true, "SHARED": true, "BARRIER": true, "SEG_SUM": true, "SEG_MAX": true,
	"EXP": true, "RSQRT": true, "FMAX": true, "FMA": true, "NEG_BIG": true, "UNROLL_LOOP": true,
}

// envOf builds a type environment: every name an int, plus extras.
func envOf(extra map[string]any, names ...[]string) map[string]any {
	env := map[string]any{}
	for _, ns := range names {
		for _, n := range ns {
			env[n] = 0
		}
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

func compile(s *Spec, file, dir string) (*Compiled, error) {
	c := &compiler{file: file, dir: dir, s: s, seen: map[string]string{}, cNames: map[string]string{}}
	out := &Compiled{Spec: s, File: file, c: c}
	c.compileName(out)
	c.compileDims(out)
	c.compileDTypes()
	space := c.compileParams()
	c.compileConstraints()
	c.compileLaunch()
	nOut, inNames := c.compileBuffers()
	c.compileScalars()
	c.compileClasses()
	c.compileCorrectness(out, nOut, inNames)
	c.compileSource(out)

	if len(c.errs) > 0 {
		return nil, joinErrors(c.errs)
	}
	c.build(out, space)
	if len(c.errs) > 0 {
		return nil, joinErrors(c.errs)
	}
	if err := c.checkCases(out); err != nil {
		return nil, err
	}
	return out, nil
}

// compileName checks the kernel's name and the family it implements.
func (c *compiler) compileName(out *Compiled) {
	s := c.s
	builtin := families.Builtin()
	switch {
	case !nameRE.MatchString(s.Name):
		c.fail("name", "", "%q is not a lower-case identifier ([a-z][a-z0-9_]*); it names the kernel in hardware_params.json and KERNTUNE_<NAME>_<PARAM>", s.Name)
	case builtin[s.Name] != nil:
		c.fail("name", "", "%q is a built-in family; choose another name (implements: %q reuses its reference)", s.Name, s.Name)
	}
	if s.Implements != "" {
		if builtin[s.Implements] == nil {
			c.fail("implements", "", "%q is not a built-in family (allowed: %s)", s.Implements, strings.Join(families.BuiltinNames(), ", "))
		} else {
			out.Base, _ = kernels.Get(s.Implements)
			c.base = out.Base
		}
	}
}

// compileDims checks the shape's dimensions (the implemented family's
// by default) and claims their names.
func (c *compiler) compileDims(out *Compiled) {
	s := c.s
	c.dims = s.Dims
	if out.Base != nil {
		if len(s.Dims) == 0 {
			c.dims = out.Base.Dims
		} else if !slices.Equal(s.Dims, out.Base.Dims) {
			c.fail("dims", "", "%s takes dims %s, not %s", s.Implements, strings.Join(out.Base.Dims, ", "), strings.Join(s.Dims, ", "))
			c.dims = out.Base.Dims
		}
	} else if len(s.Dims) == 0 && s.Implements == "" {
		c.fail("dims", "", "required: the names of the shape's dimensions (or implements: a built-in family)")
	}
	for i, d := range c.dims {
		c.claim(fmt.Sprintf("dims[%d]", i), d)
	}
}

// claim takes name for the namespace of expressions (dims, parameters,
// the reference's input buffers), or reports why it cannot.
func (c *compiler) claim(field, name string) bool {
	return c.claimIn(c.seen, field, name, reserved[name], "a reserved name in expressions", "")
}

// claimC takes name for the kernel source's namespace: parameters,
// defines, buffers and scalars share it (parameters and defines are
// macros there).
func (c *compiler) claimC(field, name string) bool {
	dialect := dialectNames[name] || strings.HasPrefix(name, "KT_") || strings.HasPrefix(name, "kt_")
	return c.claimIn(c.cNames, field, name, dialect, "a name the kernel dialect defines (reserved: T, NTHREADS, LID, LOAD, ... and the KT_ prefix)",
		" (parameters, defines, buffers and scalars share the kernel's namespace)")
}

// claimIn takes name for field in the namespace taken (each name by the
// field that took it) unless it is no identifier, is reserved (isReserved;
// why says as what) or is taken already (shared explains the namespace).
func (c *compiler) claimIn(taken map[string]string, field, name string, isReserved bool, why, shared string) bool {
	if !identRE.MatchString(name) {
		c.fail(field, "", "%q is not an identifier", name)
		return false
	}
	if isReserved {
		c.fail(field, "", "%q is %s", name, why)
		return false
	}
	if prev, ok := taken[name]; ok {
		c.fail(field, "", "%q is already used by %s%s", name, prev, shared)
		return false
	}
	taken[name] = field
	return true
}

// compileDTypes checks the element types (f32 and f16 by default).
func (c *compiler) compileDTypes() {
	s := c.s
	if len(s.DTypes) == 0 {
		s.DTypes = []string{"f32", "f16"}
	}
	for i, d := range s.DTypes {
		if _, err := kernels.ParseDType(d); err != nil {
			c.fail(fmt.Sprintf("dtypes[%d]", i), "", "%v", err)
		}
	}
}

// compileParams checks the parameters and returns them as a space.
func (c *compiler) compileParams() families.Space {
	s := c.s
	var space families.Space
	for i, p := range s.Params {
		f := fmt.Sprintf("params[%d]", i)
		if !families.ValidParamName(p.Name) {
			c.fail(f+".name", "", "%q is not an upper-case identifier ([A-Z][A-Z0-9_]*)", p.Name)
			continue
		}
		if p.Name == families.ReservedParamName {
			c.fail(f+".name", "", "%s is reserved: KERNTUNE_%s_USE chooses between the tuned kernel and the baseline", p.Name, strings.ToUpper(s.Name))
			continue
		}
		if !c.claim(f+".name", p.Name) || !c.claimC(f+".name", p.Name) {
			continue
		}
		if len(p.Values) == 0 {
			c.fail(f+".values", "", "%s has no values", p.Name)
			continue
		}
		vs := map[int]bool{}
		for j, v := range p.Values {
			if vs[v] {
				c.fail(fmt.Sprintf("%s.values[%d]", f, j), "", "%s lists %d twice", p.Name, v)
			}
			vs[v] = true
		}
		def := p.Values[0]
		if p.Default != nil {
			def = *p.Default
			if !vs[def] {
				c.fail(f+".default", "", "%d is not among %s's values", def, p.Name)
			}
		}
		c.paramNames = append(c.paramNames, p.Name)
		space.Params = append(space.Params, families.Param{Name: p.Name, Values: slices.Clone(p.Values), Default: def, Doc: p.Doc})
	}
	return space
}

// compileConstraints compiles the constraints over the dims and parameters.
func (c *compiler) compileConstraints() {
	dpEnv := envOf(nil, c.dims, c.paramNames)
	s := c.s
	for i, src := range s.Constraints {
		c.constraints = append(c.constraints, c.compile(fmt.Sprintf("constraints[%d]", i), src, dpEnv, boolKind))
	}
}

// compileLaunch compiles the launch: threads (or MLX's threadgroup), the
// grid, shared memory and the defines.
func (c *compiler) compileLaunch() {
	s := c.s
	pEnv, dpEnv := envOf(nil, c.paramNames), envOf(nil, c.dims, c.paramNames)
	switch {
	case s.Source.MLX != nil:
		c.mlx = &mlxCompiled{}
		c.mlxLaunch(pEnv)
		if n := len(s.Launch.Grid); n < 1 || n > 3 {
			c.fail("launch.grid", "", "has %d expressions; give MLX's grid: threads (not threadgroups) in x (, y, z)", n)
		}
	default:
		if s.Launch.Threads == "" {
			c.fail("launch.threads", "", "required: threads per threadgroup, an expression over the params")
		} else {
			c.threads = c.compile("launch.threads", s.Launch.Threads, pEnv, intKind)
		}
		if len(s.Launch.Threadgroup) > 0 {
			c.fail("launch.threadgroup", "", "only an mlx source takes threadgroup (MLX's launch); give launch.threads")
		}
		if n := len(s.Launch.Grid); n < 1 || n > 2 {
			c.fail("launch.grid", "", "has %d expressions; give threadgroups in x, or in x and y", n)
		}
	}
	for i, src := range s.Launch.Grid {
		c.grid = append(c.grid, c.compile(fmt.Sprintf("launch.grid[%d]", i), src, dpEnv, intKind))
	}
	if s.Launch.SharedBytes != "" {
		c.shared = c.compile("launch.shared_bytes", s.Launch.SharedBytes, pEnv, intKind)
	}
	c.defines = map[string]*program{}
	c.defineNames = sortedKeys(s.Launch.Defines)
	for _, name := range c.defineNames {
		f := "launch.defines." + name
		if !families.ValidParamName(name) {
			c.fail(f, "", "%q is not an upper-case identifier", name)
			continue
		}
		if name == "NTHREADS" {
			c.fail(f, "", "NTHREADS is launch.threads; set that instead")
			continue
		}
		if !c.claimC(f, name) {
			continue
		}
		c.defines[name] = c.compile(f, s.Launch.Defines[name], pEnv, intKind)
	}
}

// compileBuffers checks the buffers and compiles their lengths, shapes
// and typing; it returns the number of outputs and the inputs' names.
func (c *compiler) compileBuffers() (nOut int, inNames []string) {
	s := c.s
	dEnv := envOf(nil, c.dims)
	lastRequired, firstOptional := -1, -1
	for i, b := range s.Buffers {
		f := fmt.Sprintf("buffers[%d]", i)
		c.claimC(f+".name", b.Name)
		if s.Reference != nil && b.IO == "in" {
			// The reference expression names input buffers next to the dims.
			c.claim(f+".name", b.Name)
		}
		switch b.IO {
		case "in":
			inNames = append(inNames, b.Name)
			if b.Optional {
				if firstOptional < 0 {
					firstOptional = i
				}
			} else {
				lastRequired = i
			}
		case "out":
			if nOut == 0 {
				c.outIndex = i
			}
			nOut++
			c.outs = append(c.outs, i)
			if b.Optional {
				c.fail(f+".optional", "", "an output buffer cannot be optional")
			}
		default:
			c.fail(f+".io", "", "%q is neither \"in\" nor \"out\"", b.IO)
		}
		length, lengthField := b.Length, f+".length"
		var shape []*program
		if b.Shape != nil {
			if s.Source.MLX == nil {
				c.fail(f+".shape", "", "only an mlx source uses array shapes (its <name>_shape, <name>_strides and <name>_ndim)")
			}
			shape = []*program{} // not nil: "shape": [] is a 0-d array
			for j, e := range b.Shape {
				shape = append(shape, c.compile(fmt.Sprintf("%s.shape[%d]", f, j), e, dEnv, intKind))
			}
			switch {
			case length == "" && len(b.Shape) == 0:
				length, lengthField = "1", f+".shape"
			case length == "":
				length, lengthField = "("+strings.Join(b.Shape, ") * (")+")", f+".shape"
			}
		}
		c.shapes = append(c.shapes, shape)
		c.bufferTyping(i, b, dEnv)
		if length == "" {
			c.fail(lengthField, "", "required: the number of elements, an expression over the dims")
			c.lengths = append(c.lengths, nil)
			continue
		}
		c.lengths = append(c.lengths, c.compile(lengthField, length, dEnv, intKind))
	}
	switch {
	case s.Source.MLX != nil && nOut == 0:
		c.fail("buffers", "", "has no output buffer; an mlx kernel has one or more (io: \"out\", in the order of source.mlx.output_names)")
	case s.Source.MLX == nil && nOut != 1:
		c.fail("buffers", "", "has %d output buffers; a kernel has exactly one (io: \"out\"; only an mlx source has several)", nOut)
	}
	if firstOptional >= 0 && lastRequired > firstOptional {
		c.fail(fmt.Sprintf("buffers[%d].optional", firstOptional), "", "optional input buffers must come after every required one")
	}
	return nOut, inNames
}

// compileScalars compiles the scalar arguments' values.
func (c *compiler) compileScalars() {
	s := c.s
	sEnv := envOf(map[string]any{"bias": 0, "eps": 0.0}, c.dims)
	if s.Source.MLX != nil && len(s.Scalars) > 0 {
		c.fail("scalars", "", "an mlx kernel takes only its input_names; give scalars as source.mlx.constants (value: a scalar, values: an array)")
	}
	for i, sc := range s.Scalars {
		f := fmt.Sprintf("scalars[%d]", i)
		c.claimC(f+".name", sc.Name)
		switch sc.Type {
		case "int":
			c.scalars = append(c.scalars, c.compile(f+".value", sc.Value, sEnv, intKind))
		case "float":
			c.scalars = append(c.scalars, c.compile(f+".value", sc.Value, sEnv, floatKind))
		default:
			c.fail(f+".type", "", "%q is neither \"int\" nor \"float\"", sc.Type)
			c.scalars = append(c.scalars, nil)
		}
	}
}

// compileClasses compiles the shape classes' conditions and the flop count.
func (c *compiler) compileClasses() {
	s := c.s
	dEnv := envOf(nil, c.dims)
	classNames := map[string]bool{}
	for i, cl := range s.Classes {
		f := fmt.Sprintf("classes[%d]", i)
		if !identRE.MatchString(cl.Name) {
			c.fail(f+".name", "", "%q is not an identifier (it is part of entry keys such as f32/<class>)", cl.Name)
		}
		if classNames[cl.Name] {
			c.fail(f+".name", "", "class %q is listed twice", cl.Name)
		}
		classNames[cl.Name] = true
		if cl.When == "" {
			if i != len(s.Classes)-1 {
				c.fail(f+".when", "", "only the last class may omit when (it takes every shape the others do not)")
			}
			c.classes = append(c.classes, nil)
			continue
		}
		c.classes = append(c.classes, c.compile(f+".when", cl.When, dEnv, boolKind))
	}

	if s.Flops != "" {
		c.flops = c.compile("flops", s.Flops, envOf(map[string]any{"bias": 0}, c.dims), floatKind)
	}
}

// compileCorrectness compiles how outputs are checked: the implemented
// family's reference or the spec's reference expressions, the bias and
// the tolerances.
func (c *compiler) compileCorrectness(out *Compiled, nOut int, inNames []string) {
	s := c.s
	switch {
	case s.Implements != "" && (s.Reference != nil || c.hasOutputRefs()):
		c.fail("reference", "", "a spec that implements %s is checked against its reference; remove one", s.Implements)
	case s.Implements != "" && nOut > 1:
		c.fail("buffers", "", "a spec that implements %s has its one output", s.Implements)
	case s.Implements == "" && s.Reference == nil && !c.hasOutputRefs():
		c.fail("reference", "", "required: a reference expression for output element i (reference.expr, or buffers[].reference on each output), or implements: a built-in family")
	case s.Implements == "" && s.Reference != nil && s.Reference.Python != nil:
		switch {
		case s.Reference.Expr != "":
			c.fail("reference", "", "give reference.expr or reference.python, not both")
		case c.hasOutputRefs():
			c.fail("reference.python", "", "computes every output; remove buffers[].reference")
		default:
			c.compilePython(s.Reference.Python)
		}
	case s.Implements == "":
		env := envOf(map[string]any{"bias": 0, "eps": 0.0}, c.dims, []string{"i"})
		for _, n := range inNames {
			env[n] = []float64{}
		}
		if m := s.Source.MLX; m != nil {
			for _, cn := range m.Constants {
				if _, clash := env[cn.Name]; !clash && !reserved[cn.Name] {
					// A scalar constant is a number in the reference, as
					// the kernel sees it: a value, not a one-element array.
					if cn.Value != "" {
						env[cn.Name] = 0.0
					} else {
						env[cn.Name] = []float64{}
					}
				}
			}
			if m.InitValue != nil {
				env["init_value"] = 0.0
			}
		}
		c.outputReferences(env)
	}
	if s.Bias && (out.Base == nil || !slices.Contains(out.Base.Options, kernels.Bias)) {
		c.fail("bias", "", "only a kernel that implements a family with a bias operand (%s) has one", strings.Join(biasFamilies(), ", "))
	}
	for _, d := range sortedKeys(s.Tolerance) {
		if _, err := kernels.ParseDType(d); err != nil {
			c.fail("tolerance."+d, "", "%v", err)
		} else if t := s.Tolerance[d]; !(t > 0 && t < 1) {
			c.fail("tolerance."+d, "", "%g is not in (0, 1)", t)
		}
	}
}

// compileSource reads the kernel's body or raw sources.
func (c *compiler) compileSource(out *Compiled) {
	s := c.s
	out.Body = &gpu.Body{Family: s.Name, Func: s.Source.Function}
	if out.Body.Func == "" {
		out.Body.Func = "kt_" + s.Name
	} else if !identRE.MatchString(out.Body.Func) {
		c.fail("source.function", "", "%q is not an identifier", out.Body.Func)
	}
	c.source(out)
}

// source reads the body or the raw files.
func (c *compiler) source(out *Compiled) {
	src := c.s.Source
	read := func(field, name string) string {
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(c.dir, name)
		}
		data, err := paramfile.ReadFileLimit(path, paramfile.MaxFileSize)
		var tl *paramfile.TooLargeError
		if errors.As(err, &tl) {
			c.fail(field, "", "%s: %s", path, tl.Reason("a kernel source file"))
			return ""
		}
		if err != nil {
			c.fail(field, "", "%v", err)
			return ""
		}
		return string(data)
	}
	if src.MLX != nil {
		c.mlxSource(out, read)
		return
	}
	raw := map[gpu.API]string{}
	for api, name := range map[gpu.API]string{gpu.CUDA: src.CUDAFile, gpu.Metal: src.MetalFile, gpu.OpenCL: src.OpenCLFile} {
		if name != "" {
			raw[api] = read("source."+string(api)+"_file", name)
		}
	}
	n := 0
	if src.Body != "" {
		n++
		out.Body.Source = string(src.Body)
	}
	if src.BodyFile != "" {
		n++
		out.Body.Source = read("source.body_file", src.BodyFile)
	}
	switch {
	case n == 0 && len(raw) == 0:
		c.fail("source", "", "give body, body_file, raw cuda_file / metal_file / opencl_file, or mlx")
	case n > 1 || n == 1 && len(raw) > 0:
		c.fail("source", "", "give either a body (body or body_file) or raw files, not both")
	case n == 1:
		out.APIs = slices.Clone(gpu.APIs)
	default:
		out.Body.Raw = raw
		for _, api := range gpu.APIs {
			if _, ok := raw[api]; ok {
				out.APIs = append(out.APIs, api)
			}
		}
	}
}

// env returns a fresh environment of dims and params values.
func (c *compiler) env(shape []int, p map[string]int) map[string]any {
	env := make(map[string]any, len(c.dims)+len(c.paramNames)+2)
	for i, d := range c.dims {
		if i < len(shape) {
			env[d] = shape[i]
		}
	}
	for _, n := range c.paramNames {
		env[n] = p[n] // a missing parameter reads 0: Check may see a partial map
	}
	return env
}

// build makes the catalog kernel and the GPU body from the compiled
// expressions: the family's description, the kernel that the tuner verifies
// and times, and the body's signature and launch.
func (c *compiler) build(out *Compiled, space families.Space) {
	out.Kernel = c.kernel(c.family(out.Base, space), out.Base)
	c.body(out.Body)
}

// family describes the spec's family: dims, classes and its GPU space, whose
// Check evaluates the spec's constraints.
func (c *compiler) family(base *kernels.Kernel, space families.Space) *families.Family {
	s := c.s
	fam := &families.Family{Name: s.Name, Doc: s.Doc, Dims: slices.Clone(c.dims), Spaces: map[string]*families.Space{"gpu": &space}}
	if fam.Doc == "" {
		fam.Doc = "user-defined kernel from " + filepath.Base(c.file)
	}
	switch {
	case len(s.Classes) > 0:
		for _, cl := range s.Classes {
			rule := cl.When
			if rule == "" {
				rule = "otherwise"
			}
			fam.Classes = append(fam.Classes, families.Class{Name: cl.Name, Rule: rule})
		}
	case base != nil:
		fam.Classes = slices.Clone(base.Classes)
	default:
		fam.Classes = []families.Class{{Name: "all", Rule: "every shape"}}
	}
	fam.Classify = c.classify(base)
	dimNames := c.dims
	space.Check = func(shape []int, p map[string]int) error {
		env := c.env(shape, p)
		for _, con := range c.constraints {
			if shape == nil && con.uses(dimNames) {
				continue
			}
			ok, err := con.evalBool(env)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("constraint %q is false (%s)", con.src, describeEnv(env))
			}
		}
		return nil
	}
	return fam
}

// kernel is the catalog kernel of family fam: shapes, options, operands,
// outputs, flops and the float64 reference (base's, where the spec
// implements a built-in family).
func (c *compiler) kernel(fam *families.Family, base *kernels.Kernel) *kernels.Kernel {
	s := c.s
	// The spec language names eps for every kernel: rmsnorm's epsilon.
	k := &kernels.Kernel{Family: fam, Implements: s.Implements, Scalars: map[string]float64{"eps": kernels.RMSNormEps}}
	if base != nil {
		k.Fill = base.Fill // its inputs are drawn as the family's are
	}
	if s.Bias {
		k.Options = []string{kernels.Bias}
	}
	if len(s.Tolerance) > 0 {
		k.Tolerances = map[kernels.DType]float64{}
		for d, t := range s.Tolerance {
			k.Tolerances[kernels.DType(d)] = t
		}
	}
	keep := func(cs []kernels.Case) []kernels.Case {
		var out []kernels.Case
		for _, cs := range cs {
			if !cs.Has(kernels.Bias) || s.Bias {
				out = append(out, cs)
			}
		}
		return out
	}
	switch {
	case len(s.Shapes) > 0:
		k.Workload = shapesToCases(s.Shapes)
	case base != nil:
		k.Workload = keep(base.Workload)
	default:
		c.fail("shapes", "", "required: the shapes to tune (no built-in family to take them from)")
	}
	switch {
	case len(s.Odd) > 0:
		k.Odd = shapesToCases(s.Odd)
	case base != nil:
		k.Odd = keep(base.Odd)
	}
	if m := s.Source.MLX; m != nil && m.EnsureRowContiguous != nil && !*m.EnsureRowContiguous {
		// The kernel reads its inputs through their strides: every
		// candidate is verified on views too, on each verification shape.
		k.Options = append(k.Options, stridedOption)
		var views []kernels.Case
		for _, cs := range append(slices.Clone(k.Odd), k.Workload[:min(1, len(k.Workload))]...) {
			views = append(views, kernels.Case{Shape: cs.Shape, Options: append(slices.Clone(cs.Options), stridedOption)})
		}
		k.Odd = append(k.Odd, views...)
	}
	switch {
	case s.MemoryBound != nil:
		k.MemoryBound = *s.MemoryBound
	case base != nil:
		k.MemoryBound = base.MemoryBound
	}
	if c.mlx == nil {
		for i, b := range s.Buffers {
			if b.IO == "in" {
				c.inOps = append(c.inOps, inOp{name: b.Name, buffer: i, cnst: -1, optional: b.Optional})
			}
		}
	}
	k.Inputs = func(cs kernels.Case) []kernels.Operand {
		var ops []kernels.Operand
		for _, in := range c.present(cs) {
			ops = append(ops, c.operand(in, cs))
		}
		return ops
	}
	outputs := func(cs kernels.Case) []kernels.Operand {
		env := c.env(cs.Shape, nil)
		var ops []kernels.Operand
		for _, i := range c.outs {
			n, _ := c.lengths[i].evalInt(env) // checked by Classify
			ops = append(ops, kernels.Operand{Name: s.Buffers[i].Name, Len: n, Elem: c.elems[i]})
		}
		return ops
	}
	k.OutLen = func(shape []int) int {
		n := 0
		for _, op := range outputs(kernels.Case{Shape: shape}) {
			n += op.Len
		}
		return n
	}
	if c.typed() {
		// Else one output of the tuned dtype: the built-in families' verification.
		k.Outputs = outputs
	}
	if m := s.Source.MLX; m != nil {
		k.Init = m.InitValue
	}
	if c.typed() || c.drawsOwn() {
		k.FillCase = c.fill
	}
	switch {
	case c.flops != nil:
		k.Flops = func(cs kernels.Case) float64 {
			env := c.env(cs.Shape, nil)
			env["bias"] = b2i(cs.Has(kernels.Bias))
			f, _ := c.flops.evalFloat(env)
			return f
		}
	case base != nil:
		k.Flops = base.Flops
	default:
		k.Flops = func(kernels.Case) float64 { return 0 }
	}
	if base != nil {
		// The base's output layout too (spec/check.go holds OutLen equal).
		k.Reference, k.OutRow = base.Reference, base.OutRow
		k.SumOfProducts = base.SumOfProducts
		if c.typed() { // the family's reference takes its own operands only
			k.Reference = func(cs kernels.Case, in [][]float32) []float64 {
				return base.Reference(cs, c.baseInputs(cs, in))
			}
		}
	} else {
		k.Reference = c.referenceFunc(k)
		k.ReferenceErr = c.referenceErr
	}
	return k
}

// body completes b: threadgroup memory, launch geometry, arguments, defines
// and scalars, from the spec's expressions (MLX's contract where the source
// is an MLX kernel).
func (c *compiler) body(b *gpu.Body) {
	s := c.s
	b.SharedBytes = func(p map[string]int) int {
		if c.shared == nil {
			return 0
		}
		n, _ := c.shared.evalInt(c.env(nil, p))
		return n
	}
	// Geometry cannot return errors: every expression was evaluated on
	// every verification and workload shape when the spec was loaded, and
	// Classify evaluates the buffer lengths of any other shape.
	b.Geometry = func(shape []int, p map[string]int) gpu.Launch {
		l, _ := c.launch(shape, p)
		return l
	}
	if c.mlx != nil {
		for _, bd := range c.mlx.kernel.Bindings() {
			b.Args = append(b.Args, bd.Arg)
		}
		b.Defines = func(p map[string]int) map[string]int {
			n, _ := c.nthreads(c.env(nil, p))
			return map[string]int{"NTHREADS": n}
		}
		b.Scalars = func(kernels.Case, map[string]float64) []any { return nil }
		b.Consts = func(cs kernels.Case) [][]byte {
			v, _ := c.mlxConsts(cs)
			return v
		}
		return
	}
	for _, buf := range s.Buffers {
		kind := gpu.In
		if buf.IO == "out" {
			kind = gpu.Out
		}
		b.Args = append(b.Args, gpu.Arg{Name: buf.Name, Kind: kind})
	}
	for _, sc := range s.Scalars {
		kind := gpu.Int
		if sc.Type == "float" {
			kind = gpu.Float
		}
		b.Args = append(b.Args, gpu.Arg{Name: sc.Name, Kind: kind})
	}
	b.Defines = func(p map[string]int) map[string]int {
		env := c.env(nil, p)
		d := map[string]int{}
		d["NTHREADS"], _ = c.threads.evalInt(env)
		for _, name := range c.defineNames {
			d[name], _ = c.defines[name].evalInt(env)
		}
		return d
	}
	// Scalars cannot return errors either (see Geometry).
	b.Scalars = func(cs kernels.Case, consts map[string]float64) []any {
		vals, _ := c.scalarValues(cs, float32(consts["eps"]))
		return vals
	}
}

// biasFamilies lists the built-in families with the bias option.
func biasFamilies() []string {
	var names []string
	for _, n := range families.BuiltinNames() {
		if k, err := kernels.Get(n); err == nil && slices.Contains(k.Options, kernels.Bias) {
			names = append(names, n)
		}
	}
	return names
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func shapesToCases(ss [][]int) []kernels.Case {
	cs := make([]kernels.Case, len(ss))
	for i, s := range ss {
		cs[i] = kernels.Case{Shape: slices.Clone(s)}
	}
	return cs
}

// launch evaluates the geometry of one candidate on one shape.
func (c *compiler) launch(shape []int, p map[string]int) (gpu.Launch, error) {
	env := c.env(shape, p)
	if c.mlx != nil {
		return c.mlxLaunchOf(env)
	}
	l := gpu.Launch{Grid: [2]int{1, 1}}
	var err error
	if l.Threads, err = c.threads.evalInt(env); err != nil {
		return gpu.Launch{}, err
	}
	if l.Threads < 1 {
		return gpu.Launch{}, c.threads.errorf("is %d threads with %s; must be at least 1", l.Threads, describeEnv(env))
	}
	for i, g := range c.grid {
		if l.Grid[i], err = g.evalInt(env); err != nil {
			return gpu.Launch{}, err
		}
		if l.Grid[i] < 1 || l.Grid[i] > 1<<31-1 {
			return gpu.Launch{}, g.errorf("is %d threadgroups with %s; must be 1..2^31-1", l.Grid[i], describeEnv(env))
		}
	}
	return l, nil
}

func (c *compiler) scalarValues(cs kernels.Case, eps float32) ([]any, error) {
	env := c.env(cs.Shape, nil)
	env["bias"] = b2i(cs.Has(kernels.Bias))
	env["eps"] = float64(eps)
	vals := make([]any, 0, len(c.scalars))
	for i, p := range c.scalars {
		if c.s.Scalars[i].Type == "float" {
			f, err := p.evalFloat(env)
			if err != nil {
				return nil, err
			}
			vals = append(vals, float32(f))
			continue
		}
		n, err := p.evalInt(env)
		if err != nil {
			return nil, err
		}
		if n < -1<<31 || n > 1<<31-1 {
			return nil, p.errorf("is %d, which does not fit a 32-bit int argument", n)
		}
		vals = append(vals, int32(n))
	}
	return vals, nil
}

// classify validates a shape (the implemented family's rules, the dims,
// the buffer lengths) and returns its class.
func (c *compiler) classify(base *kernels.Kernel) func([]int) (string, error) {
	name := c.s.Name
	return func(shape []int) (string, error) {
		var baseClass string
		if base != nil {
			cl, err := base.Classify(shape)
			if err != nil {
				return "", fmt.Errorf("%s (implements %s): %w", name, base.Name, err)
			}
			baseClass = cl
		}
		if len(shape) != len(c.dims) {
			return "", fmt.Errorf("%s takes a shape of %d dims (%s), got %d", name, len(c.dims), strings.Join(c.dims, "×"), len(shape))
		}
		for i, d := range shape {
			if d < 1 || d > families.MaxDim {
				return "", fmt.Errorf("%s: %s=%d out of range (1..%d)", name, c.dims[i], d, families.MaxDim)
			}
		}
		env := c.env(shape, nil)
		for i, l := range c.lengths {
			n, err := l.evalInt(env)
			if err != nil {
				return "", err
			}
			if n < 1 || n > families.MaxElements {
				return "", fmt.Errorf("%s: buffer %s has %d elements for shape %s (allowed 1..2^40)", name, c.s.Buffers[i].Name, n, families.ShapeString(shape))
			}
		}
		if len(c.s.Classes) == 0 {
			if base != nil {
				return baseClass, nil
			}
			return "all", nil
		}
		for i, w := range c.classes {
			if w == nil {
				return c.s.Classes[i].Name, nil
			}
			ok, err := w.evalBool(env)
			if err != nil {
				return "", err
			}
			if ok {
				return c.s.Classes[i].Name, nil
			}
		}
		return "", fmt.Errorf("%s: shape %s matches no class (%s)", name, families.ShapeString(shape), classRules(c.s.Classes))
	}
}

func classRules(cs []Class) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.Name + ": " + c.When
	}
	return strings.Join(parts, "; ")
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
