package spec

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/params"
)

// mlxDTypes maps the MLX dtypes a constant input may have to their Metal
// names (MLX's get_type_string) and sizes.
var mlxDTypes = map[string]struct {
	metal string
	size  int
}{
	"int32":   {"int32_t", 4},
	"uint32":  {"uint32_t", 4},
	"int64":   {"int64_t", 8},
	"uint64":  {"uint64_t", 8},
	"float32": {"float", 4},
}

func mlxDTypeNames() string { return "int32, uint32, int64, uint64, float32" }

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

	switch {
	case m.Source != "" && m.SourceFile != "":
		c.fail("source.mlx", "", "give source or source_file, not both")
	case m.Source != "":
		k.Source = string(m.Source)
	case m.SourceFile != "":
		k.Source = read("source.mlx.source_file", m.SourceFile)
	default:
		c.fail("source.mlx.source_file", "", "required: the kernel body (metal_kernel's source), or source.mlx.source inline")
	}
	switch {
	case m.Header != "" && m.HeaderFile != "":
		c.fail("source.mlx", "", "give header or header_file, not both")
	case m.Header != "":
		k.Header = string(m.Header)
	case m.HeaderFile != "":
		k.Header = read("source.mlx.header_file", m.HeaderFile)
	}

	// Constants.
	names := map[string]string{} // MLX argument names → field
	constIndex := map[string]int{}
	sEnv := envOf(map[string]any{"bias": 0, "eps": 0.0}, c.dims)
	for i, cn := range m.Constants {
		f := fmt.Sprintf("source.mlx.constants[%d]", i)
		if !identRE.MatchString(cn.Name) {
			c.fail(f+".name", "", "%q is not an identifier", cn.Name)
		}
		if _, dup := constIndex[cn.Name]; dup {
			c.fail(f+".name", "", "constant %q is listed twice", cn.Name)
		}
		constIndex[cn.Name] = i
		dt, ok := mlxDTypes[cn.DType]
		if !ok {
			c.fail(f+".dtype", "", "%q is not a dtype a constant input can have (allowed: %s)", cn.DType, mlxDTypeNames())
		}
		kind := intKind
		if dt.metal == "float" {
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
		c.mlx.consts = append(c.mlx.consts, progs)
	}

	// Inputs.
	bufIndex := map[string]int{}
	outName := ""
	for i, b := range s.Buffers {
		if b.IO == "out" {
			outName = b.Name
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
			if bi < lastBuf {
				c.fail(f, "", "input buffer %q comes after %q here but before it in buffers: list the input buffers in the same order in both (kerntune binds the operands in buffers order)", n, s.Buffers[lastBuf].Name)
			}
			lastBuf = bi
		} else if ci, ok := constIndex[n]; ok {
			in.cnst = ci
			cn := m.Constants[ci]
			gi.Type = mlxDTypes[cn.DType].metal
			gi.Scalar = cn.Value != ""
			gi.Small = gi.Scalar || len(cn.Values) < gpu.MLXMinDeviceElements
		} else {
			c.fail(f, "", "%q is neither an input buffer (buffers with io \"in\") nor a constant (source.mlx.constants)", n)
			continue
		}
		c.mlx.inputs = append(c.mlx.inputs, in)
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
	switch {
	case m.OutputNames == nil:
		c.fail("source.mlx.output_names", "", "required: metal_kernel's output_names (one: the output buffer)")
	case len(m.OutputNames) != 1:
		c.fail("source.mlx.output_names", "", "has %d names; kerntune verifies one output, the buffer with io \"out\"", len(m.OutputNames))
	case outName != "" && m.OutputNames[0] != outName:
		c.fail("source.mlx.output_names[0]", "", "%q is not the output buffer %q", m.OutputNames[0], outName)
	default:
		k.Outputs = []string{m.OutputNames[0]}
		names[m.OutputNames[0]] = "source.mlx.output_names[0]"
	}

	// Template arguments.
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
		for _, pr := range append(append(append([]*program{c.shared}, c.grid...), c.mlx.group...), c.constraints...) {
			if pr != nil && pr.idents[p.Name] {
				used = true
			}
		}
		if !used {
			c.fail(fmt.Sprintf("params[%d].name", i), "", "%s is used by no template argument (source.mlx.template), launch or constraint expression: in an mlx kernel a parameter reaches the body only as a template argument", p.Name)
		}
	}

	c.mlx.kernel = k
	out.Body.MLX = k
	out.Body.Func = "custom_kernel_" + k.Name
	out.APIs = []gpu.API{gpu.Metal}
}

// templateArg reads one template binding: "dtype", "param", an integer
// (not negative: it becomes part of the function's name) or a boolean.
func templateArg(t TemplateArg) (gpu.MLXTemplateArg, string) {
	a := gpu.MLXTemplateArg{Name: t.Name}
	allowed := fmt.Sprintf("allowed: \"dtype\" (the tuned element type), \"param\" (the tunable parameter %s), an integer constant, true or false", t.Name)
	var str string
	if json.Unmarshal(t.Value, &str) == nil {
		switch str {
		case "dtype":
			a.Kind = gpu.TemplateDType
		case "param":
			a.Kind = gpu.TemplateParam
		default:
			return a, fmt.Sprintf("%q is not a template kind (%s)", str, allowed)
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
// 1..2^31-1 (MLX's shapes are int32), a shape's product is the buffer's
// length, and a data buffer has at least 8 elements (MLX would pass a
// smaller one in the constant address space, another signature).
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
		if n < gpu.MLXMinDeviceElements {
			return fmt.Errorf("%s: input %s has %d elements for shape %s; MLX passes an input of fewer than %d in the constant address space, which changes the generated signature, so an mlx spec's inputs need at least %d",
				c.s.Name, b.Name, n, params.ShapeString(shape), gpu.MLXMinDeviceElements, gpu.MLXMinDeviceElements)
		}
		dims, err := c.mlxShape(in, env)
		if err != nil {
			return err
		}
		prod := 1
		for _, d := range dims {
			if d < 1 || d > 1<<31-1 {
				return fmt.Errorf("%s: input %s has shape %v for shape %s; each dim must be 1..2^31-1", c.s.Name, b.Name, dims, params.ShapeString(shape))
			}
			prod *= d
		}
		if prod != n {
			return fmt.Errorf("%s: input %s has shape %v (%d elements) but length %d for shape %s", c.s.Name, b.Name, dims, prod, n, params.ShapeString(shape))
		}
	}
	return nil
}

// mlxConsts computes the Bytes arguments of a case in binding order:
// constants in their dtype, shapes as int32, strides (row-major, in
// elements) as int64, ndim as int32; little-endian, as Apple GPUs are.
func (c *compiler) mlxConsts(cs kernels.Case) ([][]byte, error) {
	env := c.env(cs.Shape, nil)
	env["bias"] = b2i(cs.Has(kernels.Bias))
	env["eps"] = float64(float32(kernels.RMSNormEps))
	var out [][]byte
	for _, bd := range c.mlx.kernel.Bindings() {
		if bd.Kind != gpu.Bytes {
			continue
		}
		in := c.mlx.inputs[bd.Input]
		var b []byte
		switch bd.Part {
		case gpu.PartValue:
			cn := c.s.Source.MLX.Constants[in.cnst]
			for _, p := range c.mlx.consts[in.cnst] {
				v, err := constBytes(p, env, cn.DType)
				if err != nil {
					return nil, err
				}
				b = append(b, v...)
			}
		case gpu.PartShape, gpu.PartStrides, gpu.PartNDim:
			dims, err := c.mlxShape(in, env)
			if err != nil {
				return nil, err
			}
			switch bd.Part {
			case gpu.PartShape:
				for _, d := range dims {
					b = binary.LittleEndian.AppendUint32(b, uint32(int32(d)))
				}
			case gpu.PartStrides:
				st := make([]int64, len(dims))
				acc := int64(1)
				for i := len(dims) - 1; i >= 0; i-- {
					st[i] = acc
					acc *= int64(dims[i])
				}
				for _, v := range st {
					b = binary.LittleEndian.AppendUint64(b, uint64(v))
				}
			default:
				b = binary.LittleEndian.AppendUint32(b, uint32(len(dims)))
			}
		}
		out = append(out, b)
	}
	return out, nil
}

// constBytes evaluates one element of a constant input in its dtype.
func constBytes(p *program, env map[string]any, dtype string) ([]byte, error) {
	if dtype == "float32" {
		f, err := p.evalFloat(env)
		if err != nil {
			return nil, err
		}
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxFloat32 {
			return nil, p.errorf("is %g, not a finite float32, with %s", f, describeEnv(env))
		}
		return binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(f))), nil
	}
	n, err := p.evalInt(env)
	if err != nil {
		return nil, err
	}
	lo, hi := int64(math.MinInt32), int64(math.MaxInt32)
	switch dtype {
	case "uint32":
		lo, hi = 0, math.MaxUint32
	case "int64":
		lo, hi = math.MinInt64, math.MaxInt64
	case "uint64":
		lo, hi = 0, math.MaxInt64
	}
	if int64(n) < lo || int64(n) > hi {
		return nil, p.errorf("is %d, which does not fit %s, with %s", n, dtype, describeEnv(env))
	}
	if mlxDTypes[dtype].size == 8 {
		return binary.LittleEndian.AppendUint64(nil, uint64(n)), nil
	}
	return binary.LittleEndian.AppendUint32(nil, uint32(n)), nil
}
