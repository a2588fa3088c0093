package params

import (
	"fmt"
	"math"
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

// SpaceKind maps a backend name to the kind of parameter space it uses:
// the GPU backends share kernel bodies and so share parameters.
func SpaceKind(backend string) string {
	switch backend {
	case "cuda", "metal", "opencl", "gpu":
		return "gpu"
	}
	return backend
}

// Space returns the family's space for a backend (cpu, cuda, metal, ...).
func (f *Family) Space(backend string) (*Space, bool) {
	s, ok := f.Spaces[SpaceKind(backend)]
	return s, ok
}

// Family names of the built-in families; they are keys in the file and in env variables.
const (
	GemmAV  = "gemm_av"
	GemmAtB = "gemm_at_b"
	GemvNT  = "gemv_nt"
	Softmax = "softmax"
	RMSNorm = "rmsnorm"
)

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

// gemm classes: by volume, with skinny shapes (few rows or columns of output) apart.
func gemmClassifier(family string, outRows, outCols int) (func([]int) (string, error), []Class) {
	classes := []Class{
		{"small", "m·n·k ≤ 2^21 (e.g. 128³)"},
		{"skinny", "not small, and the output has ≤ 32 rows or ≤ 32 columns"},
		{"medium", "not skinny, m·n·k ≤ 2^28 (e.g. 512³)"},
		{"large", "otherwise (e.g. 1024³, 512×4864×896)"},
	}
	names := []string{"m", "n", "k"}
	ops := [][2]int{{0, 1}, {0, 2}, {1, 2}}
	return func(shape []int) (string, error) {
		if err := checkDims(family, names, shape, ops); err != nil {
			return "", err
		}
		vol := float64(shape[0]) * float64(shape[1]) * float64(shape[2])
		switch {
		case vol <= 1<<21:
			return "small", nil
		case shape[outRows] <= 32 || shape[outCols] <= 32:
			return "skinny", nil
		case vol <= 1<<28:
			return "medium", nil
		}
		return "large", nil
	}, classes
}

func gemvClassify(shape []int) (string, error) {
	if err := checkDims(GemvNT, []string{"m", "n", "k"}, shape, [][2]int{{1, 2}}); err != nil {
		return "", err
	}
	if shape[0] != 1 {
		return "", fmt.Errorf("gemv_nt: m must be 1 (y = x·Wᵀ with x of 1×k), got m=%d; use gemm_av for m > 1", shape[0])
	}
	n, k := shape[1], shape[2]
	switch {
	case n < 2048 && k < 2048:
		return "tiny", nil
	case n < 2048:
		return "largeK_smallN", nil
	case n > 4096:
		return "largeN", nil
	}
	return "mid", nil
}

func rowClassifier(family string) func([]int) (string, error) {
	return func(shape []int) (string, error) {
		if err := checkDims(family, []string{"rows", "cols"}, shape, [][2]int{{0, 1}}); err != nil {
			return "", err
		}
		switch c := shape[1]; {
		case c <= 256:
			return "short", nil
		case c <= 2048:
			return "medium", nil
		case c <= 16384:
			return "long", nil
		}
		return "xlong", nil
	}
}

var rowClasses = []Class{
	{"short", "cols ≤ 256"},
	{"medium", "256 < cols ≤ 2048 (e.g. hidden size 896)"},
	{"long", "2048 < cols ≤ 16384 (e.g. 4096)"},
	{"xlong", "cols > 16384 (e.g. a vocabulary of 151936)"},
}

var threadsParam = Param{Name: "THREADS", Values: []int{1, 2, 4, 8, 16, 32, 64}, Default: 4,
	Doc: "goroutines sharing the work"}

func cpuGemmSpace() *Space {
	return &Space{
		Params: []Param{
			{Name: "MC", Values: []int{16, 32, 64, 128, 256}, Default: 64, Doc: "rows of A packed per block"},
			{Name: "NC", Values: []int{64, 128, 256, 512, 1024, 2048}, Default: 256, Doc: "columns of the right operand packed per block"},
			{Name: "KC", Values: []int{32, 64, 128, 256, 512}, Default: 128, Doc: "depth of a packed block"},
			{Name: "MR", Values: []int{1, 2, 4}, Default: 2, Doc: "rows of the register micro-tile"},
			{Name: "NR", Values: []int{4, 8}, Default: 4, Doc: "columns of the register micro-tile"},
			threadsParam,
		},
		Check: func(_ []int, p map[string]int) error {
			// Guard the divisors: Check may see a partial or hand-made map.
			if p["MR"] <= 0 || p["NR"] <= 0 {
				return fmt.Errorf("MR=%d and NR=%d must be positive", p["MR"], p["NR"])
			}
			if p["MC"]%p["MR"] != 0 {
				return fmt.Errorf("MC=%d must be a multiple of MR=%d", p["MC"], p["MR"])
			}
			if p["NC"]%p["NR"] != 0 {
				return fmt.Errorf("NC=%d must be a multiple of NR=%d", p["NC"], p["NR"])
			}
			return nil
		},
	}
}

func cpuRowSpace() *Space {
	return &Space{Params: []Param{
		{Name: "ROWS", Values: []int{1, 2, 4, 8, 16, 64}, Default: 4, Doc: "rows per work chunk"},
		{Name: "UNROLL", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "independent accumulators along a row"},
		threadsParam,
	}}
}

// GPU spaces are shared by every GPU backend (CUDA, Metal, OpenCL): one
// kernel body per family is compiled for each, with these as #defines.

func gpuGemmSpace() *Space {
	return &Space{
		Params: []Param{
			{Name: "BM", Values: []int{16, 32, 64, 128}, Default: 16, Doc: "output rows per threadgroup tile"},
			{Name: "BN", Values: []int{16, 32, 64, 128}, Default: 16, Doc: "output columns per threadgroup tile"},
			{Name: "BK", Values: []int{8, 16, 32}, Default: 16, Doc: "depth of a tile staged in threadgroup memory"},
			{Name: "TM", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "output rows per thread"},
			{Name: "TN", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "output columns per thread"},
			{Name: "PAD", Values: []int{0, 1, 4}, Default: 0, Doc: "padding of threadgroup tiles against bank conflicts"},
			{Name: "MMA", Values: []int{0, 1}, Default: 0, Doc: "1: SIMD-group 8×8 matrix multiply (Metal simdgroup_matrix); TM×TN are then 8×8 fragments per SIMD-group of 32 threads"},
		},
		Check: func(_ []int, p map[string]int) error {
			if p["TM"] <= 0 || p["TN"] <= 0 {
				return fmt.Errorf("TM=%d and TN=%d must be positive", p["TM"], p["TN"])
			}
			if p["MMA"] == 1 {
				fm, fn := 8*p["TM"], 8*p["TN"]
				if p["BM"]%fm != 0 || p["BN"]%fn != 0 || p["BK"]%8 != 0 {
					return fmt.Errorf("MMA=1: BM=%d, BN=%d must be multiples of 8·TM=%d, 8·TN=%d and BK=%d of 8", p["BM"], p["BN"], fm, fn, p["BK"])
				}
				if t := 32 * (p["BM"] / fm) * (p["BN"] / fn); t > 1024 {
					return fmt.Errorf("MMA=1: 32·(BM/8TM)·(BN/8TN) = %d threads; must be at most 1024", t)
				}
				return nil
			}
			if p["MMA"] != 0 {
				return fmt.Errorf("MMA=%d; must be 0 or 1", p["MMA"])
			}
			if p["BM"]%p["TM"] != 0 || p["BN"]%p["TN"] != 0 {
				return fmt.Errorf("BM=%d and BN=%d must be multiples of TM=%d and TN=%d", p["BM"], p["BN"], p["TM"], p["TN"])
			}
			if t := (p["BM"] / p["TM"]) * (p["BN"] / p["TN"]); t < 32 || t > 1024 {
				return fmt.Errorf("(BM/TM)·(BN/TN) = %d threads; must be 32..1024", t)
			}
			return nil
		},
	}
}

func gpuGemvSpace() *Space {
	return &Space{
		Params: []Param{
			{Name: "TG", Values: []int{64, 128, 256, 512}, Default: 256, Doc: "threads per threadgroup"},
			{Name: "TPR", Values: []int{4, 8, 16, 32, 64, 128, 256}, Default: 32, Doc: "threads per output row (a K-split)"},
			{Name: "UNROLL", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "independent accumulators per thread"},
			{Name: "VEC", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "elements per vector load"},
		},
		Check: func(shape []int, p map[string]int) error {
			if p["TPR"] > p["TG"] {
				return fmt.Errorf("TPR=%d exceeds TG=%d", p["TPR"], p["TG"])
			}
			if shape != nil && len(shape) == 3 && p["VEC"] > 0 && shape[2]%p["VEC"] != 0 {
				return fmt.Errorf("VEC=%d must divide k=%d (rows are read with aligned vector loads)", p["VEC"], shape[2])
			}
			return nil
		},
	}
}

func gpuRowSpace() *Space {
	return &Space{
		Params: []Param{
			{Name: "TPR", Values: []int{8, 16, 32, 64, 128, 256, 512, 1024}, Default: 256, Doc: "threads per row"},
			{Name: "RPB", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "rows per threadgroup"},
			{Name: "UNROLL", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "vector loads in flight per thread"},
			{Name: "VEC", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "elements per vector load and store"},
		},
		Check: func(shape []int, p map[string]int) error {
			if t := p["TPR"] * p["RPB"]; t < 32 || t > 1024 {
				return fmt.Errorf("TPR·RPB = %d threads; must be 32..1024", t)
			}
			if len(shape) == 2 && p["VEC"] > 0 && shape[1]%p["VEC"] != 0 {
				return fmt.Errorf("VEC=%d must divide cols=%d (rows are read with aligned vector loads)", p["VEC"], shape[1])
			}
			return nil
		},
	}
}

// Builtin returns the built-in families by name. Each call returns fresh
// values, so a caller may change them without affecting others.
func Builtin() map[string]*Family {
	avClassify, avClasses := gemmClassifier(GemmAV, 0, 1)    // C is m×n
	atbClassify, atbClasses := gemmClassifier(GemmAtB, 1, 2) // Z is n×k
	fams := []*Family{
		{
			Name: GemmAV, Doc: "C = A·V; A m×k, V k×n, C m×n, row-major",
			Dims: []string{"m", "n", "k"}, Classes: avClasses, Classify: avClassify,
			Spaces: map[string]*Space{"cpu": cpuGemmSpace(), "gpu": gpuGemmSpace()},
		},
		{
			Name: GemmAtB, Doc: "Z = Aᵀ·B; A m×n, B m×k, Z n×k, row-major",
			Dims: []string{"m", "n", "k"}, Classes: atbClasses, Classify: atbClassify,
			Spaces: map[string]*Space{"cpu": cpuGemmSpace(), "gpu": gpuGemmSpace()},
		},
		{
			Name: GemvNT, Doc: "y = x·Wᵀ (+ bias); x 1×k, W n×k row-major, y 1×n (LLM decode)",
			Dims: []string{"m", "n", "k"},
			Classes: []Class{
				{"tiny", "n < 2048 and k < 2048"},
				{"largeK_smallN", "k ≥ 2048 and n < 2048"},
				{"largeN", "n > 4096"},
				{"mid", "otherwise (2048 ≤ n ≤ 4096)"},
			},
			Classify: gemvClassify,
			Spaces: map[string]*Space{"gpu": gpuGemvSpace(), "cpu": {Params: []Param{
				{Name: "BN", Values: []int{4, 8, 16, 32, 64, 128, 256}, Default: 32, Doc: "rows of W per work chunk"},
				{Name: "ROWS", Values: []int{1, 2, 4}, Default: 1, Doc: "rows of W sharing each load of x"},
				{Name: "UNROLL", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "independent accumulators along k"},
				threadsParam,
			}}},
		},
		{
			Name: Softmax, Doc: "row-wise, numerically stable softmax of rows×cols",
			Dims: []string{"rows", "cols"}, Classes: rowClasses, Classify: rowClassifier(Softmax),
			Spaces: map[string]*Space{"cpu": cpuRowSpace(), "gpu": gpuRowSpace()},
		},
		{
			Name: RMSNorm, Doc: "row-wise y = x / sqrt(mean(x²) + eps) · w over rows×cols",
			Dims: []string{"rows", "cols"}, Classes: rowClasses, Classify: rowClassifier(RMSNorm),
			Spaces: map[string]*Space{"cpu": cpuRowSpace(), "gpu": gpuRowSpace()},
		},
	}
	m := make(map[string]*Family, len(fams))
	for _, f := range fams {
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
