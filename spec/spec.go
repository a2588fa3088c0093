// Package spec reads kernel spec files: JSON documents (schema in
// schema.json) with which users bring their own GPU kernels to kerntune. A
// spec gives the kernel's source (a body in the kernels/gpu dialect, or raw
// .cu/.metal/.cl files taking the parameters as macros), its buffers and
// scalar arguments, the tunable parameters and their values, constraints and
// launch geometry as expressions over the shape and the parameters
// (github.com/expr-lang/expr), the shapes or shape classes to tune, and how
// to check results: the float64 reference of a built-in family it
// implements, or a reference expression per output element.
//
// A parsed spec becomes a *kernels.Kernel and a *gpu.Body; Register adds
// both to their registries, so that the tuner and every GPU backend find the
// kernel by name exactly like a built-in family, and the results land in
// hardware_params.json under the spec's name.
package spec

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
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

// Source is where the kernel's code is: exactly one of Body, BodyFile, or
// one or more raw files. File names are relative to the spec file.
type Source struct {
	Body       Text   `json:"body,omitempty"`
	BodyFile   string `json:"body_file,omitempty"`
	CUDAFile   string `json:"cuda_file,omitempty"`
	MetalFile  string `json:"metal_file,omitempty"`
	OpenCLFile string `json:"opencl_file,omitempty"`
	// Function is the kernel function's name (default kt_<name>).
	Function string `json:"function,omitempty"`
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
	// Length is an expression over the dims: the number of elements.
	Length string `json:"length"`
	// Optional input buffers are present only for cases with a bias.
	Optional bool `json:"optional,omitempty"`
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
	Threads string `json:"threads"`
	// Grid is the number of threadgroups in x (and y).
	Grid []string `json:"grid"`
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
	Expr string `json:"expr"`
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
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	return Parse(data, path)
}

// Parse compiles spec data; file names the spec in errors and is the base
// of relative source file names.
func Parse(data []byte, file string) (*Compiled, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return nil, &Error{File: file, Msg: jsonMsg(err)}
	}
	if dec.More() {
		return nil, &Error{File: file, Msg: "trailing data after the JSON object"}
	}
	return compile(&s, file, filepath.Dir(file))
}

// jsonMsg turns a decoding error into a message naming the field.
func jsonMsg(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %s: a JSON %s cannot be a %s", te.Field, te.Value, te.Type)
	}
	return "invalid JSON: " + strings.TrimPrefix(err.Error(), "json: ")
}
