package spec

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	"github.com/kerntune/kerntune/params/paramfile"
)

// SchemaJSON is the JSON Schema (draft 2020-12) of a spec file.
//
//go:embed schema.json
var SchemaJSON []byte

// Spec is a kernel spec file as written.
type Spec struct {
	Schema string `json:"$schema,omitempty"`
	// Name is the kernel's name: the key in hardware_params.json and the
	// FAMILY of KERNTUNE_<FAMILY>_<PARAM>. A lower-case identifier.
	Name string `json:"name"`
	Doc  string `json:"doc,omitempty"`
	// Implements names a built-in family (gemm_av, gemm_at_b, gemv_nt,
	// softmax, rmsnorm) whose operands, shapes and float64 reference the
	// kernel reuses.
	Implements string `json:"implements,omitempty"`
	// Dims names the shape's dimensions; taken from Implements when omitted.
	Dims []string `json:"dims,omitempty"`
	// DTypes lists the element types the kernel supports (default f32, f16).
	DTypes  []string `json:"dtypes,omitempty"`
	Source  Source   `json:"source"`
	Buffers []Buffer `json:"buffers"`
	Scalars []Scalar `json:"scalars,omitempty"`
	Params  []Param  `json:"params"`
	// Constraints are boolean expressions over the parameters (and dims);
	// a candidate must satisfy all.
	Constraints []string `json:"constraints,omitempty"`
	Launch      Launch   `json:"launch"`
	// Classes are shape classes, tested in order; none: one class "all".
	Classes []Class `json:"classes,omitempty"`
	// Shapes are the shapes tuned by default (one entry per class).
	Shapes [][]int `json:"shapes,omitempty"`
	// Odd are small shapes, multiples of no tile, every candidate is verified on.
	Odd [][]int `json:"odd,omitempty"`
	// Bias: the kernel handles gemv_nt's optional bias (seed manifests' supports.bias).
	Bias        bool       `json:"bias,omitempty"`
	MemoryBound *bool      `json:"memory_bound,omitempty"`
	Flops       string     `json:"flops,omitempty"`
	Reference   *Reference `json:"reference,omitempty"`
	// Tolerance overrides the relative-norm error allowed per dtype.
	Tolerance map[string]float64 `json:"tolerance,omitempty"`
}

// Source is where the kernel's code is: exactly one of Body, BodyFile,
// one or more raw files, or MLX. File names are relative to the spec file.
type Source struct {
	Body       Text   `json:"body,omitempty"`
	BodyFile   string `json:"body_file,omitempty"`
	CUDAFile   string `json:"cuda_file,omitempty"`
	MetalFile  string `json:"metal_file,omitempty"`
	OpenCLFile string `json:"opencl_file,omitempty"`
	// Function is the kernel function's name (default kt_<name>).
	Function string `json:"function,omitempty"`
	// MLX is a kernel written for MLX's mx.fast.metal_kernel, as the
	// application passes it to MLX (Metal only).
	MLX *MLXSource `json:"mlx,omitempty"`
}

// MLXSource is the arguments of an application's mx.fast.metal_kernel
// call: kerntune generates the kernel's signature from them as MLX does
// and launches it with MLX's semantics (launch.grid counts threads).
type MLXSource struct {
	// Name is metal_kernel's name (default: the spec's name).
	Name string `json:"name,omitempty"`
	// Source or SourceFile is the kernel body (metal_kernel's source).
	Source     Text   `json:"source,omitempty"`
	SourceFile string `json:"source_file,omitempty"`
	// Header or HeaderFile is metal_kernel's header (optional).
	Header     Text   `json:"header,omitempty"`
	HeaderFile string `json:"header_file,omitempty"`
	// InputNames are the inputs in order: input buffers and Constants.
	InputNames []string `json:"input_names"`
	// OutputNames are the output buffers (io "out"), in their order.
	OutputNames []string `json:"output_names"`
	// Template binds the template arguments, in the order the application
	// passes them: "dtype" (the tuned element type), "param" (the tunable
	// parameter of that name), an MLX dtype name (a fixed type), an
	// integer or a boolean constant, or any other string: an expression
	// over the dims and the params, evaluated per shape (an int, or a bool
	// when the expression is boolean).
	Template TemplateArgs `json:"template,omitempty"`
	// Format makes the source and header Python format strings: {NAME} is
	// the value of NAME's integer expression over the dims and the params,
	// {{ and }} are braces (the f-string pattern of kernel authors).
	Format map[string]string `json:"format,omitempty"`
	// EnsureRowContiguous is metal_kernel's flag (default true). False:
	// the kernel reads its inputs through their strides, and every
	// candidate is also verified on inputs that are not row-contiguous.
	EnsureRowContiguous *bool `json:"ensure_row_contiguous,omitempty"`
	// AtomicOutputs is metal_kernel's atomic_outputs: outputs are
	// declared device atomic<T>*.
	AtomicOutputs bool `json:"atomic_outputs,omitempty"`
	// InitValue is the kernel call's init_value: every output is filled
	// with it before the kernel runs (absent: outputs are not initialised).
	InitValue *float64 `json:"init_value,omitempty"`
	// MathMode is metal_kernel's compile_options math_mode: "safe"
	// (MLX's default), "relaxed" or "fast".
	MathMode string `json:"math_mode,omitempty"`
	// MetalVersion is the Metal language version to compile with ("3.1",
	// "3.2", "4.0"); empty: Metal's default for the OS, as MLX picks
	// its version by OS.
	MetalVersion string `json:"metal_version,omitempty"`
	// Constants are inputs computed from the shape, such as the
	// mx.array([m, k], dtype=mx.uint32) an application passes as "shape".
	Constants []MLXConstant `json:"constants,omitempty"`
}

// MLXConstant is an input whose values come from the shape.
type MLXConstant struct {
	Name string `json:"name"`
	// DType is the array's MLX dtype: any but bool.
	DType string `json:"dtype"`
	// Values are the elements of a 1-d array, expressions over the dims,
	// bias and eps; Value instead makes a scalar (a 0-d array, or a
	// Python number passed as an input).
	Values []string `json:"values,omitempty"`
	Value  string   `json:"value,omitempty"`
}

// TemplateArg is one template argument: its name and its binding as
// written in JSON (checked when the spec is compiled).
type TemplateArg struct {
	Name  string
	Value json.RawMessage
}

// TemplateArgs is a JSON object whose key order is kept: MLX declares the
// template parameters in that order.
type TemplateArgs []TemplateArg

// UnmarshalJSON reads an object, keeping its keys in order.
func (t *TemplateArgs) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("source.mlx.template must be an object of template argument names to \"dtype\", \"param\", an integer or a boolean")
	}
	var out TemplateArgs
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		out = append(out, TemplateArg{Name: name, Value: v})
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	*t = out
	return nil
}

// MarshalJSON writes the object in order.
func (t TemplateArgs) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, a := range t {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(a.Name)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(a.Value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Text is a string written in JSON as a string or an array of lines.
type Text string

// UnmarshalJSON accepts a string or an array of strings (joined by newlines).
func (t *Text) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*t = Text(s)
		return nil
	}
	var lines []string
	if err := json.Unmarshal(b, &lines); err != nil {
		return errors.New("must be a string or an array of strings")
	}
	*t = Text(strings.Join(lines, "\n"))
	return nil
}

// Buffer is one array argument.
type Buffer struct {
	Name string `json:"name"`
	// IO is "in" or "out"; a kernel has exactly one output buffer.
	IO string `json:"io"`
	// Length is an expression over the dims: the number of elements
	// (the product of Shape when omitted).
	Length string `json:"length,omitempty"`
	// Shape is the array's dims as an MLX application passes it,
	// expressions over the dims (mlx source only; default [length]): what
	// <name>_shape, <name>_strides and <name>_ndim hold. An empty list
	// ("shape": []) is a 0-d array: one element, which MLX passes as a
	// scalar by reference.
	Shape []string `json:"shape,omitempty"`
	// Optional input buffers are present only for cases with a bias.
	Optional bool `json:"optional,omitempty"`
	// DType is the buffer's element type by MLX's name (float32, int32,
	// uint32, bool, ...), or "dtype" (default): the tuned element type.
	// mlx source only.
	DType string `json:"dtype,omitempty"`
	// Reference is output element i of this output in float64 (an output
	// of a spec with several; the expression language of reference.expr).
	Reference string `json:"reference,omitempty"`
	// Range is how an input's random values are drawn: [lo, hi],
	// expressions over the dims; integers in [lo, hi], floats in [lo, hi).
	// Default: the whole integer type, bool 0/1, floats [-1, 1).
	Range []string `json:"range,omitempty"`
	// Dist is how an input's values are drawn (see dists): "uniform"
	// (default), "normal" (range [mean, std]), "int" (integers in
	// [lo, hi], valid indices), "sorted" (uniform, ascending along the last
	// dim of the shape) or "positive" (uniform in [lo, hi), lo > 0).
	Dist string `json:"dist,omitempty"`
}

// Scalar is one scalar argument, passed after the buffers.
type Scalar struct {
	Name string `json:"name"`
	Type string `json:"type"` // int or float
	// Value is an expression over the dims, bias (0 or 1) and eps.
	Value string `json:"value"`
}

// Param is one tunable parameter, #defined in the source.
type Param struct {
	Name    string `json:"name"`
	Values  []int  `json:"values"`
	Default *int   `json:"default,omitempty"`
	Doc     string `json:"doc,omitempty"`
}

// Launch is the dispatch geometry: expressions over the dims and params.
type Launch struct {
	// Threads per threadgroup (1-D), over the params only; NTHREADS in the source.
	Threads string `json:"threads,omitempty"`
	// Grid is the number of threadgroups in x (and y); for an mlx source,
	// MLX's grid: threads (not threadgroups) in x, y, z (dispatchThreads).
	Grid []string `json:"grid"`
	// Threadgroup is MLX's threadgroup (mlx source only, instead of
	// Threads): threads per threadgroup in x, y, z, over the params.
	Threadgroup []string `json:"threadgroup,omitempty"`
	// SharedBytes is the threadgroup memory the kernel declares, over the params.
	SharedBytes string `json:"shared_bytes,omitempty"`
	// Defines are more #defines derived from the params.
	Defines map[string]string `json:"defines,omitempty"`
}

// Class is a named shape class.
type Class struct {
	Name string `json:"name"`
	// When is a boolean expression over the dims; empty matches every shape.
	When string `json:"when,omitempty"`
}

// Reference defines the float64 reference of a kernel with no built-in family.
type Reference struct {
	// Expr computes output element i from the dims, the input buffers (as
	// float64 arrays named like the buffers), bias and eps.
	Expr string `json:"expr,omitempty"`
	// Python, instead of Expr, computes every output by a NumPy function
	// in a file next to the spec: loops, recurrences and any math.
	Python *PythonRef `json:"python,omitempty"`
}

// Error is a problem in a spec file: the file, the JSON field and, where
// one is at fault, the expression.
type Error struct {
	File  string
	Field string
	Expr  string
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	if e.Expr != "" {
		fmt.Fprintf(&b, " %q", e.Expr)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

var (
	nameRE  = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Load reads and compiles a spec file.
func Load(path string) (*Compiled, error) {
	data, err := paramfile.ReadFileLimit(path, paramfile.MaxFileSize)
	var tl *paramfile.TooLargeError
	if errors.As(err, &tl) {
		return nil, &Error{File: path, Msg: tl.Reason("a spec file")}
	}
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	return Parse(data, path)
}

// Parse compiles spec data; file names the spec in errors and is the base
// of relative source file names.
func Parse(data []byte, file string) (*Compiled, error) {
	s, err := Decode(data, file)
	if err != nil {
		return nil, err
	}
	cp, err := compile(s, file, filepath.Dir(file))
	if err != nil {
		return nil, err
	}
	cp.data = data
	return cp, nil
}

// Decode reads spec data without compiling it: one JSON object of the
// spec's fields and no others. It tells a spec from other files (a
// command replaces only a spec with one).
func Decode(data []byte, file string) (*Spec, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		msg := jsonMsg(data, err)
		if strings.Contains(err.Error(), `unknown field "schema_version"`) || strings.Contains(err.Error(), `unknown field "devices"`) {
			msg += " (this looks like a params file, hardware_params.json; a spec describes one kernel: docs/reference/specs.md)"
		}
		return nil, &Error{File: file, Msg: msg}
	}
	if dec.More() {
		return nil, &Error{File: file, Msg: "trailing data after the JSON object"}
	}
	return &s, nil
}

// jsonMsg turns a decoding error of data into a message naming the
// line and column and, for a value of the wrong type, the field and what
// it must be.
func jsonMsg(data []byte, err error) string {
	var (
		te *json.UnmarshalTypeError
		se *json.SyntaxError
	)
	switch {
	case errors.As(err, &te):
		return fmt.Sprintf("%s: field %s: a JSON %s %s", lineCol(data, te.Offset), te.Field, te.Value, mustBe(te))
	case errors.As(err, &se):
		return fmt.Sprintf("%s: invalid JSON: %s", lineCol(data, se.Offset), se.Error())
	}
	return "invalid JSON: " + strings.TrimPrefix(err.Error(), "json: ")
}

// mustBe says what a field of te's type takes.
func mustBe(te *json.UnmarshalTypeError) string {
	switch te.Type.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if strings.HasPrefix(te.Value, "number") {
			return fmt.Sprintf("does not fit: it must be an integer of at most %d bits", te.Type.Bits())
		}
		return "cannot be an integer"
	case reflect.Float32, reflect.Float64:
		return "cannot be a number"
	case reflect.String:
		return "cannot be a string"
	case reflect.Bool:
		return "cannot be true or false"
	case reflect.Slice, reflect.Array:
		return "cannot be an array"
	case reflect.Struct, reflect.Map:
		return "cannot be an object"
	}
	return "cannot be a " + te.Type.String()
}

// lineCol is "line L, column C" of byte offset off of data (the offset
// json reports is just past the offending token).
func lineCol(data []byte, off int64) string {
	off = max(0, min(off, int64(len(data))))
	before := data[:off]
	line := 1 + bytes.Count(before, []byte("\n"))
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	return fmt.Sprintf("line %d, column %d", line, max(col, 1))
}
