package kernels

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/kerntune/kerntune/internal/bf16"
	"github.com/kerntune/kerntune/internal/half"
	"github.com/kerntune/kerntune/internal/registry"
	"github.com/kerntune/kerntune/params/families"
)

// DType is an element type of kernel inputs and outputs.
type DType string

// Supported element types. f16 and bf16 kernels read and write 16-bit
// values (IEEE half; bfloat16, the upper half of a float32) and accumulate
// in f32.
const (
	F32  DType = "f32"
	F16  DType = "f16"
	BF16 DType = "bf16"
)

// DTypes lists the element types kerntune tunes.
var DTypes = []DType{F32, F16, BF16}

// ParseDType checks a dtype name.
func ParseDType(s string) (DType, error) {
	for _, d := range DTypes {
		if string(d) == s {
			return d, nil
		}
	}
	return "", fmt.Errorf("unknown dtype %q (allowed: f32, f16, bf16)", s)
}

// Half reports whether d is stored in 16 bits (f16 or bf16).
func (d DType) Half() bool { return d == F16 || d == BF16 }

// Size is the number of bytes of one element.
func (d DType) Size() int {
	if d.Half() {
		return 2
	}
	return 4
}

// BF16Tolerance is bf16's relative-norm tolerance. The inputs of a problem
// are already bf16 values and every family accumulates in f32, so the error
// a correct candidate leaves is the final rounding of each output to bf16:
// at most the unit roundoff u = 2⁻⁸ ≈ 3.9e-3 per element (8 significand
// bits), about 0.45u ≈ 1.7e-3 in the norm (measured on the gemv shapes).
// 8e-3 is about 2u, as f16's 1e-3 is about 2u of f16 (2⁻¹¹);
// TestBF16Tolerance shows a realistic reduction inside it and an element
// off, or a bf16 accumulator, outside.
const BF16Tolerance = 8e-3

// Round rounds x to the nearest value of d (ties to even), as a float32.
func (d DType) Round(x float32) float32 {
	switch d {
	case F16:
		return half.Round(x)
	case BF16:
		return bf16.Round(x)
	}
	return x
}

// Tolerance is the largest relative-norm error ‖y−ref‖/‖ref‖ a candidate may have.
func (d DType) Tolerance() float64 {
	switch d {
	case F16:
		return 1e-3
	case BF16:
		return BF16Tolerance
	}
	return 1e-5
}

// Case is one problem of a workload: a shape and the options of its family
// that it turns on (gemv_nt's Bias; Kernel.Options lists a family's).
type Case struct {
	Shape   []int
	Options []string
}

// Has reports whether the case turns on the option name.
func (c Case) Has(name string) bool { return slices.Contains(c.Options, name) }

// String renders a case like 1x1152x896+bias.
func (c Case) String() string {
	s := families.ShapeString(c.Shape)
	for _, o := range c.Options {
		s += "+" + o
	}
	return s
}

// Operand describes one input or output buffer of a family.
type Operand struct {
	Name string
	Len  int
	// Elem is the element type on the device; ElemDType (the built-in
	// families) is the problem's dtype.
	Elem Elem
}

// Kernel is one family in the catalog.
type Kernel struct {
	*families.Family
	// Workload is the default set of cases tuned by `kerntune tune`; every class has at least one.
	Workload []Case
	// Odd are small shapes not multiple of any tile, used to verify candidates' edge handling.
	Odd []Case
	// KeyedClasses says that the class names end in "_<key>" for dims that
	// are part of every entry's key but not of the class rule (qgemv's
	// bits and group size: "largeN_q4g64"); the default workload covers
	// the classes of some keys only.
	KeyedClasses bool
	// MemoryBound families stream their inputs, so timing rotates input copies past the cache.
	MemoryBound bool
	// Example families (family/twice) show how a family is added: listed,
	// verified and tuned when named (--kernel), left out of the default
	// workload.
	Example bool
	// SumOfProducts families compute each output as a sum of products of
	// one element of each float input (gemv, gemm, qgemv, lora). Rounding
	// then errs relative to the sum of the products' magnitudes, not to
	// the sum: on a small output whose sums cancel, verification measures
	// the error against the reference on the inputs' absolute values
	// (Problem.VerifyFor).
	SumOfProducts bool
	// Inputs lists the input operands of a case in argument order.
	Inputs func(c Case) []Operand
	// OutLen is the number of output elements (of every output together).
	OutLen func(shape []int) int
	// Outputs lists the outputs of a kernel with several, or with outputs
	// of their own element types, in argument order; nil is one output of
	// OutLen elements in the problem's dtype. Outputs are one after
	// another in the output the reference computes and a backend returns.
	Outputs func(c Case) []Operand
	// Init is the value every output holds before a run (MLX's
	// init_value); nil poisons them with NaN instead.
	Init *float64
	// OutRow is the number of elements of one output row (the output is
	// OutLen/OutRow rows stored one after another), for verifying large
	// outputs on a sample of rows (RowSample); nil verifies every output
	// in full.
	OutRow func(shape []int) int
	// Reference computes the output in float64 from the inputs.
	Reference func(c Case, in [][]float32) []float64
	// ReferenceErr, when set, replaces Reference for a problem: a
	// reference that can fail (a user's Python function) and that sees
	// the problem's dtype. Its error fails every verification of the
	// problem, naming what went wrong instead of a non-finite element.
	ReferenceErr func(dt DType, c Case, in [][]float32) ([]float64, error)
	// Flops counts floating-point operations of one run.
	Flops func(c Case) float64
	// Implements names the built-in family whose operands, shapes and
	// reference a user-defined kernel reuses; the spec package gives it
	// that family's Fill too ("" for the built-in families themselves and
	// for kernels with their own reference).
	Implements string
	// Tolerances overrides DType.Tolerance per dtype (user-defined kernels).
	Tolerances map[DType]float64
	// BaselineTolerances loosens the tolerance of the vendor baseline per
	// dtype where it computes from rounded operands of its own (qgemv's
	// baseline multiplies weights dequantised into the activation dtype);
	// the tuned candidates keep Tolerance.
	BaselineTolerances map[DType]float64
	// Options names the optional parts a case may turn on (gemv_nt: Bias,
	// an added operand); NewProblem refuses a case with any other.
	Options []string
	// Scalars are constants of the family's problems that its kernels take
	// as arguments, by name (rmsnorm: "eps"); nil for none.
	Scalars map[string]float64
	// Fill draws the values of one input operand of a new problem; nil
	// draws them uniform in [-1, 1).
	Fill func(op Operand, buf []float32, rng *rand.Rand)
	// FillCase, when set, is Fill for operands whose values depend on
	// the case (a spec's constants, strided layouts); it replaces Fill.
	FillCase func(c Case, op Operand, buf []float32, rng *rand.Rand)
}

// TunedClasses are the classes the default workload must reach: every
// class, or with KeyedClasses those of the keys the workload tunes.
func (k *Kernel) TunedClasses() []string {
	key := func(cl string) string { return cl[strings.LastIndex(cl, "_")+1:] }
	keys := map[string]bool{}
	for _, c := range k.Workload {
		if cl, err := k.Classify(c.Shape); err == nil {
			keys[key(cl)] = true
		}
	}
	var out []string
	for _, cl := range k.Classes {
		if !k.KeyedClasses || keys[key(cl.Name)] {
			out = append(out, cl.Name)
		}
	}
	return out
}

// Base is the family whose conventions the kernel follows: Implements when
// set, else its own name.
func (k *Kernel) Base() string {
	if k.Implements != "" {
		return k.Implements
	}
	return k.Name
}

// Tolerance is the largest relative-norm error a candidate of k may have in dt.
func (k *Kernel) Tolerance(dt DType) float64 {
	if t, ok := k.Tolerances[dt]; ok {
		return t
	}
	return dt.Tolerance()
}

// TF32Tolerance is the relative-norm error allowed to an f32 candidate that
// multiplies on TF32 matrix units (parameter TF32=1). TF32 keeps 10 of
// f32's 23 mantissa bits: rounding both inputs to nearest costs each
// product a relative error of at most 2·2⁻¹¹ ≈ 9.8e-4, and about 4e-4 in
// the norm for independent uniform inputs (measured norms are near 3e-4);
// accumulation stays f32. 1e-3 sits above that and 100 times below the
// error of a misplaced fragment element (order 1e-1).
const TF32Tolerance = 1e-3

// ToleranceFor is the tolerance of one candidate: Tolerance, except that a
// candidate with TF32=1 in f32 gets TF32Tolerance (when that is looser),
// and a baseline (p nil) gets BaselineTolerances where set.
func (k *Kernel) ToleranceFor(dt DType, p map[string]int) float64 {
	tol := k.Tolerance(dt)
	if bt, ok := k.BaselineTolerances[dt]; ok && p == nil {
		tol = max(tol, bt)
	}
	if dt == F32 && p["TF32"] == 1 {
		tol = max(tol, TF32Tolerance)
	}
	return tol
}

// Bytes counts the bytes one run must move at least: every input read once, the output written once.
func (k *Kernel) Bytes(c Case, dt DType) float64 {
	n := 0
	for _, op := range append(k.Inputs(c), k.OutOperands(c)...) {
		n += op.Len * op.Elem.In(dt).Size()
	}
	return float64(n)
}

// HostBytes estimates the host memory a problem of case c holds at
// least: its inputs as float32, twice (the tuner draws them, a worker
// process holds them again), and each output element as float32, its
// float64 reference and the float32 copy read back to verify it.
func (k *Kernel) HostBytes(c Case) float64 {
	var in, out float64
	for _, op := range k.Inputs(c) {
		in += float64(op.Len)
	}
	for _, op := range k.OutOperands(c) {
		out += float64(op.Len)
	}
	return 2*4*in + (4+8+4)*out
}

// OutOperands are the outputs of a case: Outputs, or one of OutLen
// elements of the problem's dtype.
func (k *Kernel) OutOperands(c Case) []Operand {
	if k.Outputs != nil {
		return k.Outputs(c)
	}
	return []Operand{{Name: "out", Len: k.OutLen(c.Shape)}}
}

// Verifiable reports whether one of k's odd shapes at least accepts
// candidate p under the space's constraints (ps.Check, which may be nil):
// the verification of a candidate runs on those it accepts, and refuses
// one that none accepts as unverified.
func (k *Kernel) Verifiable(ps *families.Space, p map[string]int) bool {
	return ps == nil || ps.Check == nil || slices.ContainsFunc(k.Odd, func(c Case) bool { return ps.Check(c.Shape, p) == nil })
}

// ClassOf returns the class of a shape, validating it.
func (k *Kernel) ClassOf(shape []int) (string, error) { return k.Classify(shape) }

// catalog holds the built-in families, each added by builtin from the
// init of its own file (gemm.go, gemv.go, softmax.go, rmsnorm.go).
var catalog = NewTable[*Kernel]("kernel")

func builtin(k *Kernel) { catalog.Add(k.Name, k) }

// AddBuiltin adds the catalog entry of a built-in family (one described in
// params/families) from the init of a file in another layer: a family may
// keep its entry beside its GPU body (kernels/gpu/NAME.go) or, running on
// the CPU only, beside its CPU kernel, instead of in a file here. A family
// that is not built in, or added twice, panics as Table.Add does.
func AddBuiltin(k *Kernel) {
	if k == nil || k.Family == nil {
		panic("kernels.AddBuiltin: kernel without a family")
	}
	builtin(k)
}

// BuiltinFamily is the params package's description of the built-in family
// name, for a catalog entry added with AddBuiltin; it panics for a name
// that is not built in.
func BuiltinFamily(name string) *families.Family { return family(name) }

// family is the params package's description of a built-in family: params
// lists the built-in families, and each has its file here too.
func family(name string) *families.Family {
	f, ok := families.Builtin()[name]
	if !ok {
		panic("kernels: " + name + " is not a family of families.Builtin")
	}
	return f
}

// registered holds user-defined kernels (kernel spec files), added at run
// time by Register so that backends find them by name like built-in ones.
var registered registry.Map[*Kernel]

// Register adds a user-defined kernel to the catalog. Its name must not be
// a built-in family's; registering the same name again replaces it.
func Register(k *Kernel) error {
	if k == nil || k.Family == nil || k.Name == "" {
		return fmt.Errorf("kernels.Register: kernel without a family name")
	}
	_, builtin := catalog.Get(k.Name)
	return registered.Add(k.Name, builtin, k)
}

func lookup(name string) (*Kernel, bool) {
	if k, ok := catalog.Get(name); ok {
		return k, true
	}
	return registered.Get(name)
}

// Get returns the kernel family called name: built in or registered.
func Get(name string) (*Kernel, error) {
	k, ok := lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown kernel %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return k, nil
}

// Names lists the families, built in and registered, in a stable order.
func Names() []string {
	names := append(catalog.Families(), registered.Names()...)
	sort.Strings(names)
	return names
}

// Defaults returns the families of the default workload: All but the
// examples.
func Defaults() []*Kernel {
	var ks []*Kernel
	for _, k := range All() {
		if !k.Example {
			ks = append(ks, k)
		}
	}
	return ks
}

// All returns every family, built in and registered, sorted by name.
func All() []*Kernel {
	var ks []*Kernel
	for _, n := range Names() {
		k, _ := lookup(n)
		ks = append(ks, k)
	}
	return ks
}

func shapes(ss ...[]int) []Case {
	cs := make([]Case, len(ss))
	for i, s := range ss {
		cs[i] = Case{Shape: s}
	}
	return cs
}
