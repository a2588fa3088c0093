// Package kernels is the catalog of kernel families kerntune tunes: their
// shapes and shape classes (from the params package, which applications
// share), default workloads, operand layouts, flop and byte counts for
// rooflines, and float64 reference implementations used to verify every
// candidate.
package kernels

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/kerntune/kerntune/params"
)

// DType is an element type of kernel inputs and outputs.
type DType string

// Supported element types. f16 kernels read and write half precision and accumulate in f32.
const (
	F32 DType = "f32"
	F16 DType = "f16"
)

// DTypes lists the element types kerntune tunes.
var DTypes = []DType{F32, F16}

// ParseDType checks a dtype name.
func ParseDType(s string) (DType, error) {
	for _, d := range DTypes {
		if string(d) == s {
			return d, nil
		}
	}
	return "", fmt.Errorf("unknown dtype %q (allowed: f32, f16)", s)
}

// Size is the number of bytes of one element.
func (d DType) Size() int {
	if d == F16 {
		return 2
	}
	return 4
}

// Tolerance is the largest relative-norm error ‖y−ref‖/‖ref‖ a candidate may have.
func (d DType) Tolerance() float64 {
	if d == F16 {
		return 1e-3
	}
	return 1e-5
}

// Case is one problem of a workload: a shape and, for gemv_nt, whether a bias is added.
type Case struct {
	Shape []int
	Bias  bool
}

// String renders a case like 1x1152x896+bias.
func (c Case) String() string {
	s := params.ShapeString(c.Shape)
	if c.Bias {
		s += "+bias"
	}
	return s
}

// Operand describes one input or output buffer of a family.
type Operand struct {
	Name string
	Len  int
}

// Kernel is one family in the catalog.
type Kernel struct {
	*params.Family
	// Workload is the default set of cases tuned by `kerntune tune`; every class has at least one.
	Workload []Case
	// Odd are small shapes not multiple of any tile, used to verify candidates' edge handling.
	Odd []Case
	// MemoryBound families stream their inputs, so timing rotates input copies past the cache.
	MemoryBound bool
	// Inputs lists the input operands of a case in argument order.
	Inputs func(c Case) []Operand
	// OutLen is the number of output elements.
	OutLen func(shape []int) int
	// Reference computes the output in float64 from the inputs.
	Reference func(c Case, in [][]float32) []float64
	// Flops counts floating-point operations of one run.
	Flops func(c Case) float64
	// Implements names the built-in family whose operands, input
	// distribution and reference a user-defined kernel reuses ("" for the
	// built-in families themselves and for kernels with their own reference).
	Implements string
	// Tolerances overrides DType.Tolerance per dtype (user-defined kernels).
	Tolerances map[DType]float64
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
// candidate with TF32=1 in f32 gets TF32Tolerance (when that is looser).
func (k *Kernel) ToleranceFor(dt DType, p map[string]int) float64 {
	tol := k.Tolerance(dt)
	if dt == F32 && p["TF32"] == 1 {
		tol = max(tol, TF32Tolerance)
	}
	return tol
}

// Bytes counts the bytes one run must move at least: every input read once, the output written once.
func (k *Kernel) Bytes(c Case, dt DType) float64 {
	n := k.OutLen(c.Shape)
	for _, op := range k.Inputs(c) {
		n += op.Len
	}
	return float64(n) * float64(dt.Size())
}

// ClassOf returns the class of a shape, validating it.
func (k *Kernel) ClassOf(shape []int) (string, error) { return k.Classify(shape) }

// RMSNormEps is the epsilon of rmsnorm problems.
const RMSNormEps = 1e-6

var catalog = build()

// registered holds user-defined kernels (kernel spec files), added at run
// time by Register so that backends find them by name like built-in ones.
var (
	registeredMu sync.RWMutex
	registered   = map[string]*Kernel{}
)

// Register adds a user-defined kernel to the catalog. Its name must not be
// a built-in family's; registering the same name again replaces it.
func Register(k *Kernel) error {
	if k == nil || k.Family == nil || k.Name == "" {
		return fmt.Errorf("kernels.Register: kernel without a family name")
	}
	if _, ok := catalog[k.Name]; ok {
		return fmt.Errorf("kernel name %q is a built-in family; choose another name", k.Name)
	}
	registeredMu.Lock()
	defer registeredMu.Unlock()
	registered[k.Name] = k
	return nil
}

func lookup(name string) (*Kernel, bool) {
	if k, ok := catalog[name]; ok {
		return k, true
	}
	registeredMu.RLock()
	defer registeredMu.RUnlock()
	k, ok := registered[name]
	return k, ok
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
	names := make([]string, 0, len(catalog))
	for n := range catalog {
		names = append(names, n)
	}
	registeredMu.RLock()
	for n := range registered {
		names = append(names, n)
	}
	registeredMu.RUnlock()
	sort.Strings(names)
	return names
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

func build() map[string]*Kernel {
	fams := params.Builtin()
	m := map[string]*Kernel{}
	gemmFlops := func(c Case) float64 { return 2 * float64(c.Shape[0]) * float64(c.Shape[1]) * float64(c.Shape[2]) }
	m[params.GemmAV] = &Kernel{
		Family: fams[params.GemmAV],
		Workload: shapes(
			[]int{64, 64, 64}, []int{96, 128, 160}, // small
			[]int{16, 4864, 896},                       // skinny: a short prefill
			[]int{256, 256, 256}, []int{512, 512, 512}, // medium
			[]int{512, 4864, 896}, // large: a prefill projection (512 tokens)
		),
		Odd: shapes([]int{37, 53, 29}, []int{1, 19, 300}, []int{130, 7, 65}),
		Inputs: func(c Case) []Operand {
			m, n, k := c.Shape[0], c.Shape[1], c.Shape[2]
			return []Operand{{"A", m * k}, {"V", k * n}}
		},
		OutLen:    func(s []int) int { return s[0] * s[1] },
		Reference: refGemmAV,
		Flops:     gemmFlops,
	}
	m[params.GemmAtB] = &Kernel{
		Family: fams[params.GemmAtB],
		Workload: shapes(
			[]int{64, 64, 64},                          // small
			[]int{4096, 16, 896},                       // skinny: a LoRA-style gradient
			[]int{256, 256, 256}, []int{512, 512, 512}, // medium
			[]int{1024, 1024, 1024}, // large
		),
		Odd: shapes([]int{37, 53, 29}, []int{300, 1, 19}, []int{7, 130, 65}),
		Inputs: func(c Case) []Operand {
			m, n, k := c.Shape[0], c.Shape[1], c.Shape[2]
			return []Operand{{"A", m * n}, {"B", m * k}}
		},
		OutLen:    func(s []int) int { return s[1] * s[2] },
		Reference: refGemmAtB,
		Flops:     gemmFlops,
	}
	m[params.GemvNT] = &Kernel{
		Family: fams[params.GemvNT],
		// The Qwen2.5-0.5B decode projections, plus one shape for the mid class.
		Workload: []Case{
			{Shape: []int{1, 896, 896}}, {Shape: []int{1, 1152, 896}, Bias: true}, // tiny: q/o and fused qkv
			{Shape: []int{1, 896, 4864}},                                                               // largeK_smallN: down projection
			{Shape: []int{1, 3584, 896}},                                                               // mid
			{Shape: []int{1, 9728, 896}}, {Shape: []int{1, 4864, 896}}, {Shape: []int{1, 151936, 896}}, // largeN: gate/up, lm head
		},
		// 1×131×264: an odd number of rows with k a multiple of 8, for vector loads.
		Odd:         []Case{{Shape: []int{1, 37, 29}}, {Shape: []int{1, 131, 257}, Bias: true}, {Shape: []int{1, 1, 1}}, {Shape: []int{1, 131, 264}, Bias: true}},
		MemoryBound: true,
		Inputs: func(c Case) []Operand {
			n, k := c.Shape[1], c.Shape[2]
			ops := []Operand{{"x", k}, {"W", n * k}}
			if c.Bias {
				ops = append(ops, Operand{"bias", n})
			}
			return ops
		},
		OutLen:    func(s []int) int { return s[1] },
		Reference: refGemvNT,
		Flops:     func(c Case) float64 { return 2 * float64(c.Shape[1]) * float64(c.Shape[2]) },
	}
	rowWorkload := shapes(
		[]int{4096, 128},                    // short: attention over a short context
		[]int{32768, 1024}, []int{512, 896}, // medium
		[]int{4096, 4096}, // long
		[]int{16, 151936}, // xlong: vocabulary
	)
	// 3×904: rows of a multiple of 8 that no thread count divides, for vector loads.
	rowOdd := shapes([]int{3, 37}, []int{5, 300}, []int{2, 2049}, []int{1, 1}, []int{3, 904})
	m[params.Softmax] = &Kernel{
		Family: fams[params.Softmax], Workload: rowWorkload, Odd: rowOdd, MemoryBound: true,
		Inputs:    func(c Case) []Operand { return []Operand{{"x", c.Shape[0] * c.Shape[1]}} },
		OutLen:    func(s []int) int { return s[0] * s[1] },
		Reference: refSoftmax,
		Flops:     func(c Case) float64 { return 4 * float64(c.Shape[0]) * float64(c.Shape[1]) },
	}
	m[params.RMSNorm] = &Kernel{
		Family: fams[params.RMSNorm], Workload: rowWorkload, Odd: rowOdd, MemoryBound: true,
		Inputs: func(c Case) []Operand {
			return []Operand{{"x", c.Shape[0] * c.Shape[1]}, {"w", c.Shape[1]}}
		},
		OutLen:    func(s []int) int { return s[0] * s[1] },
		Reference: refRMSNorm,
		Flops:     func(c Case) float64 { return 4 * float64(c.Shape[0]) * float64(c.Shape[1]) },
	}
	return m
}
