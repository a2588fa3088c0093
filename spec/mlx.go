package spec

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/params/families"
)

// mlxInput says where one of input_names comes from.
type mlxInput struct {
	buffer int // index in Spec.Buffers, or -1
	cnst   int // index in MLXSource.Constants, or -1
}

// mlxCompiled is the compiled mlx part of a spec.
type mlxCompiled struct {
	group  []*program   // launch.threadgroup
	consts [][]*program // per constant: its values (one for a scalar)
	inputs []mlxInput   // per input_names entry
	kernel *gpu.MLX
	// tmpl holds the expression template arguments' programs, by index in
	// kernel.Template.
	tmpl map[int]*program
	// format holds source.mlx.format's integer programs by name.
	format map[string]*program
	// textFields name the fields the source and header come from.
	textFields [2]string
}

// mlxLaunch compiles launch.threadgroup for an mlx source; threads and
// defines belong to the dialect.
func (c *compiler) mlxLaunch(pEnv map[string]any) {
	l := c.s.Launch
	if l.Threads != "" {
		c.fail("launch.threads", l.Threads, "an mlx source gives launch.threadgroup (MLX's threadgroup=(x, y, z)) instead of threads")
	}
	if len(l.Defines) > 0 {
		c.fail("launch.defines", "", "an mlx source takes no #defines; pass compile-time values as source.mlx.template arguments")
	}
	if n := len(l.Threadgroup); n < 1 || n > 3 {
		c.fail("launch.threadgroup", "", "has %d expressions; give MLX's threads per threadgroup in x (, y, z), over the params", n)
	}
	for i, src := range l.Threadgroup {
		c.mlx.group = append(c.mlx.group, c.compile(fmt.Sprintf("launch.threadgroup[%d]", i), src, pEnv, intKind))
	}
}

// nthreads is the number of threads per threadgroup: launch.threads, or
// the product of an mlx source's launch.threadgroup (MLX checks that
// product against the pipeline's limit).
func (c *compiler) nthreads(env map[string]any) (int, error) {
	if c.mlx == nil {
		return c.threads.evalInt(env)
	}
	n := 1
	for _, g := range c.mlx.group {
		v, err := g.evalInt(env)
		if err != nil {
			return 0, err
		}
		if v < 1 || v > 1024 {
			return 0, g.errorf("is %d threads with %s; must be 1..1024", v, describeEnv(env))
		}
		n *= v
	}
	return n, nil
}

// mlxLaunchOf evaluates MLX's launch: grid threads in x, y, z, in
// threadgroups of min(threadgroup, grid) per dimension, as MLX dispatches.
func (c *compiler) mlxLaunchOf(env map[string]any) (gpu.Launch, error) {
	l := gpu.Launch{ThreadGrid: [3]int{1, 1, 1}, Group: [3]int{1, 1, 1}}
	for i, g := range c.grid {
		v, err := g.evalInt(env)
		if err != nil {
			return gpu.Launch{}, err
		}
		if v < 1 || v > 1<<31-1 {
			return gpu.Launch{}, g.errorf("is %d threads with %s; must be 1..2^31-1 (an mlx grid counts threads)", v, describeEnv(env))
		}
		l.ThreadGrid[i] = v
	}
	if _, err := c.nthreads(env); err != nil {
		return gpu.Launch{}, err
	}
	for i, g := range c.mlx.group {
		v, _ := g.evalInt(env) // checked by nthreads
		l.Group[i] = min(v, l.ThreadGrid[i])
	}
	groups := func(i int) int { return (l.ThreadGrid[i] + l.Group[i] - 1) / l.Group[i] }
	l.Grid = [2]int{groups(0), groups(1) * groups(2)}
	l.Threads = l.Group[0] * l.Group[1] * l.Group[2]
	return l, nil
}

// mlxSource checks source.mlx against the buffers and params and builds
// the gpu.MLX that generates the kernel's source.
func (c *compiler) mlxSource(out *Compiled, read func(field, name string) string) {
	s := c.s
	m := s.Source.MLX
	src := s.Source
	if src.Body != "" || src.BodyFile != "" || src.CUDAFile != "" || src.MetalFile != "" || src.OpenCLFile != "" {
		c.fail("source", "", "give either mlx or a body / raw files, not both")
	}
	if src.Function != "" {
		c.fail("source.function", "", "an mlx kernel's function is named by MLX (custom_kernel_<source.mlx.name>...); set source.mlx.name instead")
	}
	if s.Bias {
		c.fail("bias", "", "an mlx kernel has no optional inputs (MLX passes every input_names entry)")
	}
	k := &gpu.MLX{Name: m.Name}
	if k.Name == "" {
		k.Name = s.Name
	} else if !identRE.MatchString(k.Name) {
		c.fail("source.mlx.name", "", "%q is not an identifier (MLX names the function custom_kernel_<name>...)", k.Name)
	}

	c.mlxTexts(k, read)
	c.mlx.textFields = [2]string{"source.mlx.source", "source.mlx.header"}
	if m.SourceFile != "" {
		c.mlx.textFields[0] = "source.mlx.source_file"
	}
	if m.HeaderFile != "" {
		c.mlx.textFields[1] = "source.mlx.header_file"
	}
	names := map[string]string{} // MLX argument names → field
	constIndex := c.mlxConstants()
	c.mlxInputs(k, constIndex, names)
	c.mlxOutputs(k, names)
	c.mlxOptions(out, k)
	c.mlxFormat(k)
	c.mlxTemplate(k, names)
	c.mlxShaped(k)

	if o := k.ClosesEarly(); o != "" {
		c.fail("source.mlx.output_names", "", "MLX would close the kernel's argument list after output %s: it compares the buffer index with the number of inputs and outputs, and the <name>_shape/_strides/_ndim arguments the body uses push the index past it, so the later outputs land in the body and MLX cannot compile the kernel (use a Metal attribute such as thread_position_in_grid, which MLX lists after the outputs, or fewer shape arguments)", o)
	}
	c.mlx.kernel = k
	out.Body.MLX = k
	out.Body.Func = "custom_kernel_" + k.Name
	out.APIs = []gpu.API{gpu.Metal}
}

// mlxTexts reads the kernel's source and header, inline or from files.
func (c *compiler) mlxTexts(k *gpu.MLX, read func(field, name string) string) {
	m := c.s.Source.MLX
	var given bool
	if k.Source, given = c.mlxText("source", m.Source, m.SourceFile, read); !given {
		c.fail("source.mlx.source_file", "", "required: the kernel body (metal_kernel's source), or source.mlx.source inline")
	}
	k.Header, _ = c.mlxText("header", m.Header, m.HeaderFile, read)
}

// mlxText is source.mlx's field what, given inline or in the file
// what_file; given is false when neither is set. Both set is an error.
func (c *compiler) mlxText(what string, inline Text, file string, read func(field, name string) string) (text string, given bool) {
	switch {
	case inline != "" && file != "":
		c.fail("source.mlx", "", "give %s or %s_file, not both", what, what)
		return "", true
	case inline != "":
		return string(inline), true
	case file != "":
		return read("source.mlx."+what+"_file", file), true
	}
	return "", false
}

// mlxConstants compiles the constant inputs' values and returns their
// indexes by name.
func (c *compiler) mlxConstants() map[string]int {
	m := c.s.Source.MLX
	constIndex := map[string]int{}
	// The params are in scope only to say why they cannot be used.
	sEnv := envOf(map[string]any{"bias": 0, "eps": 0.0}, c.dims, c.paramNames)
	for i, cn := range m.Constants {
		f := fmt.Sprintf("source.mlx.constants[%d]", i)
		if !identRE.MatchString(cn.Name) {
			c.fail(f+".name", "", "%q is not an identifier", cn.Name)
		}
		if _, dup := constIndex[cn.Name]; dup {
			c.fail(f+".name", "", "constant %q is listed twice", cn.Name)
		}
		constIndex[cn.Name] = i
		e, err := kernels.ParseElem(cn.DType)
		if err != nil || e == kernels.ElemBool {
			c.fail(f+".dtype", "", "%q is not a dtype a constant input can have (allowed: %s but bool)", cn.DType, elemNames())
		}
		kind := intKind
		if e.IsFloat() {
			kind = floatKind
		}
		var progs []*program
		switch {
		case cn.Value != "" && len(cn.Values) > 0:
			c.fail(f, "", "give value (a scalar) or values (an array), not both")
		case cn.Value != "":
			progs = append(progs, c.compile(f+".value", cn.Value, sEnv, kind))
		case len(cn.Values) > 0:
			for j, v := range cn.Values {
				progs = append(progs, c.compile(fmt.Sprintf("%s.values[%d]", f, j), v, sEnv, kind))
			}
		default:
			c.fail(f+".values", "", "required: the array's elements (expressions over the dims), or value for a scalar")
		}
		for _, p := range progs {
			if p != nil && p.uses(c.paramNames) {
				c.errs = append(c.errs, p.errorf("uses a tunable parameter (%s): a constant is an input made once per shape for every candidate, so its values are expressions over the dims, bias and eps; pass a parameter as a template argument (source.mlx.template) or a format value (source.mlx.format)", strings.Join(c.paramNames, ", ")))
				break
			}
		}
		c.mlx.consts = append(c.mlx.consts, progs)
	}
	return constIndex
}

// mlxInputs checks input_names against the input buffers and the
// constants, in MLX's order, and records the inputs; names gets each
// argument name's field.
func (c *compiler) mlxInputs(k *gpu.MLX, constIndex map[string]int, names map[string]string) {
	s, m := c.s, c.s.Source.MLX
	bufIndex := map[string]int{}
	for i, b := range s.Buffers {
		if b.IO == "out" {
			continue
		}
		bufIndex[b.Name] = i
		if _, clash := constIndex[b.Name]; clash {
			c.fail(fmt.Sprintf("buffers[%d].name", i), "", "%q is also a constant in source.mlx.constants", b.Name)
		}
		if b.Optional {
			c.fail(fmt.Sprintf("buffers[%d].optional", i), "", "an mlx kernel has no optional inputs")
		}
	}
	if m.InputNames == nil {
		c.fail("source.mlx.input_names", "", "required: metal_kernel's input_names, in order (input buffers and source.mlx.constants)")
	}
	lastBuf := -1
	listed := map[string]bool{}
	for i, n := range m.InputNames {
		f := fmt.Sprintf("source.mlx.input_names[%d]", i)
		if prev, dup := names[n]; dup {
			c.fail(f, "", "%q is already %s", n, prev)
			continue
		}
		names[n] = f
		listed[n] = true
		in := mlxInput{buffer: -1, cnst: -1}
		gi := gpu.MLXInput{Name: n}
		if bi, ok := bufIndex[n]; ok {
			in.buffer = bi
			if e := c.elems[bi]; e != kernels.ElemDType {
				gi.Type = e.MetalName()
			}
			if sh := c.shapes[bi]; sh != nil && len(sh) == 0 {
				gi.Scalar = true // "shape": []: MLX passes a 0-d array by reference
			}
			if bi < lastBuf {
				c.fail(f, "", "input buffer %q comes after %q here but before it in buffers: list the input buffers in the same order in both (kerntune binds the operands in buffers order)", n, s.Buffers[lastBuf].Name)
			}
			lastBuf = bi
		} else if ci, ok := constIndex[n]; ok {
			in.cnst = ci
			cn := m.Constants[ci]
			if e, err := kernels.ParseElem(cn.DType); err == nil {
				gi.Type = e.MetalName()
			}
			gi.Scalar = cn.Value != ""
			gi.Small = gi.Scalar || len(cn.Values) < gpu.MLXMinDeviceElements
		} else {
			c.fail(f, "", "%q is neither an input buffer (buffers with io \"in\") nor a constant (source.mlx.constants)", n)
			continue
		}
		c.mlx.inputs = append(c.mlx.inputs, in)
		c.inOps = append(c.inOps, inOp{name: n, buffer: in.buffer, cnst: in.cnst})
		k.Inputs = append(k.Inputs, gi)
	}
	for i, b := range s.Buffers {
		if b.IO == "in" && !listed[b.Name] {
			c.fail(fmt.Sprintf("buffers[%d].name", i), "", "input buffer %q is not in source.mlx.input_names, so MLX would not pass it", b.Name)
		}
	}
	for i, cn := range m.Constants {
		if !listed[cn.Name] {
			c.fail(fmt.Sprintf("source.mlx.constants[%d].name", i), "", "constant %q is not in source.mlx.input_names, so MLX would not pass it", cn.Name)
		}
	}
}

// mlxOutputs checks output_names against the output buffers.
func (c *compiler) mlxOutputs(k *gpu.MLX, names map[string]string) {
	s, m := c.s, c.s.Source.MLX
	var outNames []string
	for _, b := range s.Buffers {
		if b.IO == "out" {
			outNames = append(outNames, b.Name)
		}
	}
	switch {
	case m.OutputNames == nil:
		c.fail("source.mlx.output_names", "", "required: metal_kernel's output_names (the buffers with io \"out\", in order)")
	case !slices.Equal(m.OutputNames, outNames):
		c.fail("source.mlx.output_names", "", "is %q, but the output buffers (io \"out\") are %q: list the same names in the same order", m.OutputNames, outNames)
	default:
		for j, n := range m.OutputNames {
			f := fmt.Sprintf("source.mlx.output_names[%d]", j)
			if prev, dup := names[n]; dup {
				c.fail(f, "", "%q is already %s", n, prev)
			}
			names[n] = f
			o := gpu.MLXOutput{Name: n}
			if e := c.elems[c.outs[j]]; e != kernels.ElemDType {
				o.Type = e.MetalName()
			}
			k.Outputs = append(k.Outputs, o)
		}
	}
}

// mlxOptions reads the atomic outputs, init_value and the compile
// options (math mode, Metal version).
func (c *compiler) mlxOptions(out *Compiled, k *gpu.MLX) {
	m := c.s.Source.MLX
	k.Atomic = m.AtomicOutputs
	if m.InitValue != nil && (math.IsNaN(*m.InitValue) || math.IsInf(*m.InitValue, 0)) {
		c.fail("source.mlx.init_value", "", "must be a finite number")
	}
	switch m.MathMode {
	case "", "safe", "relaxed", "fast":
		out.Body.Compile.MathMode = m.MathMode
		if m.MathMode == "" {
			out.Body.Compile.MathMode = "safe" // MLX's default
		}
	default:
		c.fail("source.mlx.math_mode", "", "%q is not a math mode (allowed: safe, relaxed, fast; MLX's compile_options={\"math_mode\": ...})", m.MathMode)
	}
	switch m.MetalVersion {
	case "", "3.0", "3.1", "3.2", "4.0":
		out.Body.Compile.LanguageVersion = m.MetalVersion
		c.mlxCheckVersion()
	default:
		c.fail("source.mlx.metal_version", "", "%q is not a Metal language version (allowed: 3.0, 3.1, 3.2, 4.0)", m.MetalVersion)
	}
}

// mlxTemplate checks the template arguments, and that every parameter
// reaches the body through one or a launch or constraint expression.
func (c *compiler) mlxTemplate(k *gpu.MLX, names map[string]string) {
	s, m := c.s, c.s.Source.MLX
	isParam := map[string]int{}
	for i, p := range s.Params {
		isParam[p.Name] = i
	}
	seenT := map[string]bool{}
	for _, t := range m.Template {
		f := "source.mlx.template." + t.Name
		if !identRE.MatchString(t.Name) {
			c.fail(f, "", "%q is not an identifier", t.Name)
			continue
		}
		if seenT[t.Name] {
			c.fail(f, "", "%s is listed twice", t.Name)
			continue
		}
		seenT[t.Name] = true
		if prev, clash := names[t.Name]; clash {
			c.fail(f, "", "%s is also %s", t.Name, prev)
		}
		arg, msg := templateArg(t)
		if msg != "" {
			c.fail(f, "", "%s", msg)
			continue
		}
		if e := strings.TrimSpace(arg.Expr); arg.Kind == gpu.TemplateIntExpr && identRE.MatchString(e) && !slices.Contains(c.dims, e) && !slices.Contains(c.paramNames, e) {
			// A lone unknown name is more likely a misspelt kind than an
			// expression (the Python loader says the same).
			c.fail(f, "", "%q is not a template kind nor a dim or parameter (allowed: \"dtype\" (the tuned element type), \"param\" (the tunable parameter %s), a dtype (%s), an integer constant, true or false, or an expression over the dims and params (%s))",
				e, t.Name, elemNames(), strings.Join(append(slices.Clone(c.dims), c.paramNames...), ", "))
			continue
		}
		if arg.Kind == gpu.TemplateIntExpr {
			p, err := compileExpr(c.file, f, arg.Expr, envOf(nil, c.dims, c.paramNames), intKind)
			if err != nil {
				var e *Error
				if errors.As(err, &e) {
					e.Msg = fmt.Sprintf("%q is neither a template kind (\"dtype\", \"param\", a dtype: %s) nor an expression over the dims and params: %s", arg.Expr, elemNames(), e.Msg)
				}
				c.errs = append(c.errs, err)
				continue
			}
			if p.expr.Type() == "bool" {
				arg.Kind = gpu.TemplateBoolExpr
			}
			if c.mlx.tmpl == nil {
				c.mlx.tmpl = map[int]*program{}
			}
			c.mlx.tmpl[len(k.Template)] = p
		}
		if arg.Kind == gpu.TemplateParam {
			pi, ok := isParam[t.Name]
			if !ok {
				c.fail(f, "", "\"param\" binds the tunable parameter %s, which params does not list (params: %s)", t.Name, strings.Join(c.paramNames, ", "))
				continue
			}
			for j, v := range s.Params[pi].Values {
				if v < 0 {
					c.fail(fmt.Sprintf("params[%d].values[%d]", pi, j), "", "%d is negative; MLX names the function after its template values, and a minus sign is not allowed in a name", v)
				}
			}
		}
		k.Template = append(k.Template, arg)
	}
	// A parameter reaches an MLX body only as a template argument; one
	// that nothing uses would be tuned for nothing.
	for i, p := range s.Params {
		if seenT[p.Name] {
			continue
		}
		used := false
		progs := append(append(append([]*program{c.shared}, c.grid...), c.mlx.group...), c.constraints...)
		for _, pr := range c.mlx.tmpl {
			progs = append(progs, pr)
		}
		for _, pr := range c.mlx.format {
			progs = append(progs, pr)
		}
		for _, pr := range progs {
			if pr != nil && pr.uses([]string{p.Name}) {
				used = true
			}
		}
		if !used {
			c.fail(fmt.Sprintf("params[%d].name", i), "", "%s is used by no template argument (source.mlx.template), format value (source.mlx.format), launch or constraint expression: in an mlx kernel a parameter reaches the body only through these", p.Name)
		}
	}
}

// templateArg reads one template binding: "dtype", "param", a dtype, an
// integer (not negative: it becomes part of the function's name), a
// boolean, or any other string: an expression (TemplateIntExpr until
// mlxTemplate compiles it).
func templateArg(t TemplateArg) (gpu.MLXTemplateArg, string) {
	a := gpu.MLXTemplateArg{Name: t.Name}
	allowed := fmt.Sprintf("allowed: \"dtype\" (the tuned element type), \"param\" (the tunable parameter %s), a dtype (%s), an integer constant, true or false, or an expression over the dims and params", t.Name, elemNames())
	var str string
	if json.Unmarshal(t.Value, &str) == nil {
		switch str {
		case "dtype":
			a.Kind = gpu.TemplateDType
		case "param":
			a.Kind = gpu.TemplateParam
		default:
			e, err := kernels.ParseElem(str)
			if err != nil {
				// An expression over the dims and params, compiled by
				// mlxTemplate; its type makes it an int or a bool.
				a.Kind, a.Expr = gpu.TemplateIntExpr, str
				return a, ""
			}
			a.Kind, a.Type = gpu.TemplateType, e.MetalName()
		}
		return a, ""
	}
	var b bool
	if json.Unmarshal(t.Value, &b) == nil {
		a.Kind, a.Value = gpu.TemplateBool, b2i(b)
		return a, ""
	}
	var n json.Number
	if json.Unmarshal(t.Value, &n) == nil {
		v, err := n.Int64()
		if err != nil || v < 0 || v > math.MaxInt32 {
			return a, fmt.Sprintf("%s is not a non-negative 32-bit integer (MLX names the function after its template values; %s)", n, allowed)
		}
		a.Kind, a.Value = gpu.TemplateInt, int(v)
		return a, ""
	}
	return a, fmt.Sprintf("%s is not a template kind (%s)", strings.TrimSpace(string(t.Value)), allowed)
}

// mlxFormat compiles source.mlx.format and checks the placeholders of the
// source and header against it.
func (c *compiler) mlxFormat(k *gpu.MLX) {
	m := c.s.Source.MLX
	if m.Format == nil {
		return
	}
	k.Format = true
	c.mlx.format = map[string]*program{}
	env := envOf(nil, c.dims, c.paramNames)
	for _, name := range sortedKeys(m.Format) {
		f := "source.mlx.format." + name
		if !identRE.MatchString(name) {
			c.fail(f, "", "%q is not an identifier (a placeholder {%s} is a plain name)", name, name)
			continue
		}
		c.mlx.format[name] = c.compile(f, m.Format[name], env, intKind)
	}
	for i, text := range []string{k.Source, k.Header} {
		if _, err := pyFormat(text, func(name string) (string, bool) { _, ok := m.Format[name]; return "0", ok }); err != nil {
			c.fail(c.mlx.textFields[i], "", "%v (source.mlx.format makes it a Python format string: {NAME} for a name source.mlx.format gives (%s), {{ and }} for braces)", err, strings.Join(sortedKeys(m.Format), ", "))
		}
	}
}

// pyFormat is Python's str.format for plain names: {NAME} is value(NAME),
// {{ and }} are braces; an unknown name, any other replacement field and
// a single brace are errors naming the placeholder.
func pyFormat(text string, value func(name string) (string, bool)) (string, error) {
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		ch := text[i]
		switch {
		case ch == '{' && i+1 < len(text) && text[i+1] == '{', ch == '}' && i+1 < len(text) && text[i+1] == '}':
			b.WriteByte(ch)
			i++
		case ch == '}':
			return "", fmt.Errorf("single '}' at byte %d is not a placeholder (write }} for a brace)", i)
		case ch == '{':
			end := strings.IndexAny(text[i+1:], "{}")
			if end < 0 || text[i+1+end] != '}' {
				return "", fmt.Errorf("'{' at byte %d opens no placeholder {NAME} (write {{ for a brace)", i)
			}
			name := text[i+1 : i+1+end]
			if !identRE.MatchString(name) {
				return "", fmt.Errorf("placeholder {%s} is not a plain name (only {NAME} is filled; write {{ and }} for braces)", name)
			}
			v, ok := value(name)
			if !ok {
				return "", fmt.Errorf("placeholder {%s} names no source.mlx.format entry", name)
			}
			b.WriteString(v)
			i += end + 1
		default:
			b.WriteByte(ch)
		}
	}
	return b.String(), nil
}

// mlxShaped makes the kernel follow the shape (gpu.MLX.ForShape) where
// its source depends on it: template expressions, format placeholders,
// and data inputs whose lengths follow the dims (an input of fewer than
// 8 elements is passed in the constant address space, MLX's rule).
// Inputs of a fixed length get their address space here.
func (c *compiler) mlxShaped(k *gpu.MLX) {
	if len(c.errs) > 0 {
		return
	}
	shaped := k.NeedsShape()
	for i, in := range c.mlx.inputs {
		if in.buffer < 0 || k.Inputs[i].Scalar {
			continue
		}
		l := c.lengths[in.buffer]
		if l == nil {
			continue
		}
		if l.uses(c.dims) {
			shaped = true
			continue
		}
		if n, err := l.evalInt(map[string]any{}); err == nil {
			k.Inputs[i].Small = n < gpu.MLXMinDeviceElements
		}
	}
	if shaped {
		k.ForShape = c.mlxForShape
	}
}

// mlxForShape is the kernel MLX generates for a shape and candidate.
func (c *compiler) mlxForShape(k *gpu.MLX, shape []int, p map[string]int) (*gpu.MLX, error) {
	env := c.env(shape, p)
	m := *k
	m.ForShape = nil
	m.Template = slices.Clone(k.Template)
	m.Inputs = slices.Clone(k.Inputs)
	for i, t := range m.Template {
		pr := c.mlx.tmpl[i]
		switch t.Kind {
		case gpu.TemplateBoolExpr:
			v, err := pr.evalBool(env)
			if err != nil {
				return nil, err
			}
			m.Template[i].Kind, m.Template[i].Value = gpu.TemplateBool, b2i(v)
		case gpu.TemplateIntExpr:
			v, err := pr.evalInt(env)
			if err != nil {
				return nil, err
			}
			if v < 0 || v > math.MaxInt32 {
				return nil, pr.errorf("is %d for shape %s (with %s); a template value must be a non-negative 32-bit integer (MLX names the function after it)", v, families.ShapeString(shape), describeEnv(env))
			}
			m.Template[i].Kind, m.Template[i].Value = gpu.TemplateInt, v
		}
	}
	for i, in := range c.mlx.inputs {
		if in.buffer < 0 || m.Inputs[i].Scalar || !c.lengths[in.buffer].uses(c.dims) {
			continue
		}
		n, err := c.lengths[in.buffer].evalInt(env)
		if err != nil {
			return nil, err
		}
		m.Inputs[i].Small = n < gpu.MLXMinDeviceElements
	}
	if k.Format {
		vals := map[string]string{}
		for name, pr := range c.mlx.format {
			v, err := pr.evalInt(env)
			if err != nil {
				return nil, err
			}
			vals[name] = strconv.Itoa(v)
		}
		value := func(name string) (string, bool) { v, ok := vals[name]; return v, ok }
		var err error
		if m.Source, err = pyFormat(k.Source, value); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", c.file, c.mlx.textFields[0], err)
		}
		if m.Header, err = pyFormat(k.Header, value); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", c.file, c.mlx.textFields[1], err)
		}
	}
	return &m, nil
}

// mlxShape is the shape of an array input as the application passes it:
// a buffer's shape (default [length]) or a constant's [len(values)].
func (c *compiler) mlxShape(in mlxInput, env map[string]any) ([]int, error) {
	if in.cnst >= 0 {
		return []int{len(c.mlx.consts[in.cnst])}, nil
	}
	if sh := c.shapes[in.buffer]; sh != nil {
		dims := make([]int, len(sh))
		for i, p := range sh {
			v, err := p.evalInt(env)
			if err != nil {
				return nil, err
			}
			dims[i] = v
		}
		return dims, nil
	}
	n, err := c.lengths[in.buffer].evalInt(env)
	return []int{n}, err
}

// mlxCheckShape checks the array inputs of one shape: each shape dim is
// 1..2^31-1 (MLX's shapes are int32) and a shape's product is the
// buffer's length. Any size is allowed: an input of fewer than 8 elements
// only changes the generated signature (mlxForShape).
func (c *compiler) mlxCheckShape(shape []int) error {
	env := c.env(shape, nil)
	for _, in := range c.mlx.inputs {
		if in.buffer < 0 {
			continue
		}
		b := c.s.Buffers[in.buffer]
		n, err := c.lengths[in.buffer].evalInt(env)
		if err != nil {
			return err
		}
		dims, err := c.mlxShape(in, env)
		if err != nil {
			return err
		}
		prod := 1
		for _, d := range dims {
			if d < 1 || d > 1<<31-1 {
				return fmt.Errorf("%s: input %s has shape %v for shape %s; each dim must be 1..2^31-1", c.s.Name, b.Name, dims, families.ShapeString(shape))
			}
			prod *= d
		}
		if prod != n {
			return fmt.Errorf("%s: input %s has shape %v (%d elements) but length %d for shape %s", c.s.Name, b.Name, dims, prod, n, families.ShapeString(shape))
		}
	}
	return nil
}

// mlxConsts computes the Bytes arguments of a case in binding order:
// shapes as int32, strides (in elements: row-major, or the view of a
// strided case) as int64, ndim as int32; little-endian, as Apple GPUs are.
// Constants are inputs (buffers), as MLX binds every array.
func (c *compiler) mlxConsts(cs kernels.Case) ([][]byte, error) {
	var out [][]byte
	for _, bd := range c.mlx.kernel.Bindings() {
		if bd.Kind != gpu.Bytes {
			continue
		}
		in := c.mlx.inputs[bd.Input]
		l, err := c.layoutOf(inOp{name: bd.Name, buffer: in.buffer, cnst: in.cnst}, cs)
		if err != nil {
			return nil, err
		}
		var b []byte
		switch bd.Part {
		case gpu.PartShape:
			for _, d := range l.dims {
				b = binary.LittleEndian.AppendUint32(b, uint32(int32(d)))
			}
		case gpu.PartStrides:
			for _, v := range l.strides {
				b = binary.LittleEndian.AppendUint64(b, uint64(v))
			}
		default:
			b = binary.LittleEndian.AppendUint32(b, uint32(len(l.dims)))
		}
		out = append(out, b)
	}
	return out, nil
}

// constValues computes constant ci of a case: its elements in their dtype
// (kernels.Elem containers), each checked to fit it.
func (c *compiler) constValues(ci int, cs kernels.Case) ([]float32, error) {
	env := c.env(cs.Shape, nil)
	env["bias"] = b2i(cs.Has(kernels.Bias))
	env["eps"] = float64(float32(kernels.RMSNormEps))
	cn := c.s.Source.MLX.Constants[ci]
	e, err := kernels.ParseElem(cn.DType)
	if err != nil {
		return nil, err
	}
	var out []float32
	for _, p := range c.mlx.consts[ci] {
		if e.IsFloat() {
			f, err := p.evalFloat(env)
			if err != nil {
				return nil, err
			}
			if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxFloat32 {
				return nil, p.errorf("is %g, not a finite %s, with %s", f, e, describeEnv(env))
			}
			out = append(out, e.Round(float32(f)))
			continue
		}
		n, err := p.evalInt(env)
		if err != nil {
			return nil, err
		}
		if lo, hi := e.IntRange(); int64(n) < lo || int64(n) > hi {
			what := string(e)
			if e.Size() == 8 {
				what += " (kerntune holds 64-bit constants within 32 bits)"
			}
			return nil, p.errorf("is %d, which does not fit %s, with %s", n, what, describeEnv(env))
		}
		out = append(out, kernels.Int(int64(n)))
	}
	return out, nil
}
