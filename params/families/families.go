package families

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
)

// Family describes a kernel family as the file and the loader see it: the
// shape it takes, how shapes map to classes, and, per kind of backend, the
// tunable parameters with their allowed values and default.
type Family struct {
	Name string
	Doc  string
	// Dims names the shape's dimensions in order, e.g. m,n,k or rows,cols.
	Dims []string
	// Classes documents the shape classes in the order Classify tests them.
	Classes []Class
	// Classify validates a shape and returns its class.
	Classify func(shape []int) (string, error)
	// Spaces maps a backend kind ("cpu", "gpu"; see SpaceKind) to its parameters.
	Spaces map[string]*Space
	// Mutants are the kinds of broken kernel the family's tests must
	// catch (see kernels' mutation test); empty means every kind.
	Mutants []string
	// Folder is the folder that holds the whole family (family/NAME: its
	// description, reference, GPU body, CPU kernel and mutant, registered
	// when kerntune imports family/all); "" for a family whose parts live
	// in the layers' packages.
	Folder string
}

// Class is a named shape class and the rule that selects it.
type Class struct {
	Name string
	Rule string
}

// Space is the set of tunable parameters of a family on one kind of backend.
type Space struct {
	Params []Param
	// Check reports a parameter combination that is invalid for a shape
	// (shape may be nil: check only what holds for every shape). Limits of a
	// particular device (threads, memory) are the tuner's business.
	Check func(shape []int, p map[string]int) error
}

// Param is one tunable parameter: its allowed values and its built-in default.
type Param struct {
	Name    string
	Values  []int
	Default int
	Doc     string
}

// Allowed reports whether v is one of p's values.
func (p Param) Allowed(v int) bool {
	for _, x := range p.Values {
		if x == v {
			return true
		}
	}
	return false
}

// ValuesString lists the allowed values for error messages, e.g. "4, 8, 16".
func (p Param) ValuesString() string {
	parts := make([]string, len(p.Values))
	for i, v := range p.Values {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ", ")
}

// Param returns the parameter called name.
func (s *Space) Param(name string) (Param, bool) {
	for _, p := range s.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// Defaults returns the built-in default of every parameter.
func (s *Space) Defaults() map[string]int {
	m := make(map[string]int, len(s.Params))
	for _, p := range s.Params {
		m[p.Name] = p.Default
	}
	return m
}

// The kinds of parameter space: the GPU backends share kernel bodies and
// so share parameters.
const (
	SpaceCPU = "cpu"
	SpaceGPU = "gpu"
)

// SpaceKind is the kind of parameter space of a backend named without a
// device record that says it (an application's Options.Backend, a file
// written before the record's space field): the pure-Go cpu backend has
// the cpu space and every other backend runs the generated GPU bodies.
// Backends declare their own kind when they register, and the tuner writes
// it into each device record, so a new backend is in no table here.
func SpaceKind(backend string) string {
	if backend == SpaceCPU {
		return SpaceCPU
	}
	return SpaceGPU
}

// Space returns the family's space for a backend (cpu, cuda, metal, ...).
func (f *Family) Space(backend string) (*Space, bool) {
	s, ok := f.Spaces[SpaceKind(backend)]
	return s, ok
}

// Limits on shapes: dimensions fit in 32 bits, matrices in 2^40 elements.
const (
	MaxDim      = math.MaxInt32
	MaxElements = 1 << 40
)

// checkDims validates the number and range of dims and the element count of each operand.
func checkDims(family string, names []string, shape []int, operands [][2]int) error {
	if len(shape) != len(names) {
		return fmt.Errorf("%s takes a shape of %d dims (%s), got %d", family, len(names), strings.Join(names, "×"), len(shape))
	}
	for i, d := range shape {
		if d < 1 || d > MaxDim {
			return fmt.Errorf("%s: %s=%d out of range (1..%d)", family, names[i], d, MaxDim)
		}
	}
	for _, op := range operands {
		if float64(shape[op[0]])*float64(shape[op[1]]) > MaxElements {
			return fmt.Errorf("%s: %s×%s = %d×%d elements exceeds the limit of 2^40", family, names[op[0]], names[op[1]], shape[op[0]], shape[op[1]])
		}
	}
	return nil
}

// Names of the built-in families: keys in the file and in env variables.
const (
	GemmAV  = "gemm_av"
	GemmAtB = "gemm_at_b"
	GemvNT  = "gemv_nt"
	// QGemv is the quantized matrix-vector family: y = x·dequant(W)ᵀ (+
	// bias) with W in MLX's affine layout (mx.quantize): each row of W
	// (n×k) holds k values of bits bits packed into uint32 words from the
	// lowest bits up, and every group_size consecutive values of a row share
	// a scale s and a bias β in the activation dtype, w = s·q + β.
	QGemv = "qgemv"
	// Lora is a layer with a LoRA adapter: y = x·Wᵀ + s·((x·Aᵀ)·Bᵀ) (+
	// bias), x m×k, W n×k, A r×k, B n×r; the rank r is part of every
	// entry's key, s a constant of the family's problems.
	Lora    = "lora"
	Softmax = "softmax"
	RMSNorm = "rmsnorm"
)

// QGemvBits are the widths of a quantized value qgemv takes (those that
// fill a uint32 word exactly), and QGemvGroups MLX's affine group sizes:
// the values its description allows for the dims bits and group_size.
var (
	QGemvBits   = builtinDimValues(QGemv, "bits")
	QGemvGroups = builtinDimValues(QGemv, "group_size")
)

// MMAMaxWarpTile bounds a SIMD-group's block of a gemm tile with MMA=1,
// (BM/WM)·(BN/WN) elements: 128 f32 accumulators per thread, past which
// they spill. The gemm descriptions state it in their constraints.
const MMAMaxWarpTile = 64 * 64

func builtinDimValues(family, dim string) []int {
	for _, d := range builtinDescs {
		if d.desc.Name == family {
			if i := slices.Index(d.desc.Dims, dim); i >= 0 {
				return slices.Clone(d.dimValues(i))
			}
		}
	}
	return nil
}

// Builtin returns the built-in families by name, built from their
// descriptions (params/families/NAME.json, family/NAME/NAME.json). Each call returns fresh values, so a
// caller may change them without affecting others.
func Builtin() map[string]*Family {
	m := make(map[string]*Family, len(builtinDescs))
	for _, d := range builtinDescs {
		f := d.family()
		m[f.Name] = f
	}
	return m
}

// BuiltinNames lists the built-in family names in a stable order.
func BuiltinNames() []string {
	names := sortedKeys(Builtin())
	sort.Strings(names)
	return names
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
