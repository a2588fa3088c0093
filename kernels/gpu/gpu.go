// Package gpu holds the GPU kernel bodies of every family, written once in a
// small dialect, and generates from each body the CUDA C++, Metal Shading
// Language and OpenCL C source of one candidate: the tuning parameters as
// #defines, a per-API prelude, and a signature generated from the body's
// argument list, as MLX's fast.metal_kernel does for a body-only source. MSL
// (generated or raw) opens with #include <metal_stdlib> and using namespace
// metal, before any #define, so that no parameter macro reaches Apple's
// headers.
//
// # The dialect
//
// A body is the statements of a kernel function. It names its arguments as
// declared in Body.Args and may use, besides C:
//
//	T                       the element type of the T buffers (float or half storage)
//	LOAD(p, i)              element i of a T buffer as a float
//	STORE(p, i, v)          store float v into element i of a T buffer
//	LOADV(p, i, dst)        VEC consecutive elements from i (aligned) into float dst[VEC]
//	LID                     the thread's index in its threadgroup (1-D threadgroups)
//	GROUP_X, GROUP_Y        the threadgroup's position in the grid
//	NTHREADS                threads per threadgroup (a compile-time constant)
//	SHARED(type, name, n)   declare threadgroup memory
//	BARRIER()               threadgroup barrier for threadgroup memory
//	SEG_SUM(v, W, scratch)  sum of v over aligned segments of W threads (W a power of
//	SEG_MAX(v, W, scratch)  two ≤ NTHREADS); every thread of the group must call it;
//	                        scratch is a SHARED float array of NTHREADS elements
//	EXP, RSQRT, FMAX, FMA   float math
//	NEG_BIG                 a float below any input (−3e38)
//	UNROLL_LOOP             ask the compiler to unroll the next loop
//
// Every tuning parameter NAME of the candidate is #defined to its value.
package gpu

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kerntune/kerntune/kernels"
)

// API is a GPU programming interface a source is generated for.
type API string

// The APIs kerntune generates kernels for.
const (
	CUDA   API = "cuda"
	Metal  API = "metal"
	OpenCL API = "opencl"
)

// APIs lists every API.
var APIs = []API{CUDA, Metal, OpenCL}

// ArgKind is the kind of a kernel argument.
type ArgKind int

// Argument kinds: T buffers read or written, and scalars.
const (
	In ArgKind = iota
	Out
	Int
	Float
)

// Arg is one kernel argument.
type Arg struct {
	Name string
	Kind ArgKind
}

// Launch is the geometry of one dispatch.
type Launch struct {
	Grid    [2]int // threadgroups in x and y
	Threads int    // threads per threadgroup (x only)
}

// Body is one family's kernel.
type Body struct {
	Family string
	// Func is the generated kernel function's name.
	Func string
	Args []Arg
	// Source is the body in the dialect.
	Source string
	// Defines adds derived constants (e.g. NTHREADS) from the candidate's parameters.
	Defines func(p map[string]int) map[string]int
	// SharedBytes is the threadgroup memory the body declares for a candidate.
	SharedBytes func(p map[string]int) int
	// Geometry computes the launch for a shape.
	Geometry func(shape []int, p map[string]int) Launch
	// Scalars computes the scalar arguments (Int and Float args, in order) for a case.
	Scalars func(c kernels.Case, eps float32) []any
	// Needs lists the optional features a candidate uses (nil: none).
	Needs func(p map[string]int) []Feature
	// Raw holds complete kernel sources written for one API each (a
	// user's .cu or .metal file): they take the parameters as macros and
	// declare their own signature, whose arguments must be Args in order.
	// A body with Raw sources has no dialect Source; an API missing from
	// Raw cannot build it.
	Raw map[API]string
}

// Feature is an optional capability a candidate may need from an API.
type Feature string

// SIMDMatrix is the 8×8 SIMD-group matrix multiply of the MMA dialect
// operations: native in Metal (simdgroup_matrix, Apple7 and later), emulated
// with warp shuffles in CUDA for verification, absent from OpenCL C 1.2.
const SIMDMatrix Feature = "simdgroup_matrix"

// features says which features each API's prelude provides, and whether
// natively (false: emulated, correct but not worth tuning).
var features = map[API]map[Feature]bool{
	CUDA:  {SIMDMatrix: false},
	Metal: {SIMDMatrix: true},
}

// Supported reports whether api can run candidate p: nil, or an error
// naming the missing feature. native is false when the API only emulates a
// feature the candidate needs.
func (b *Body) Supported(api API, p map[string]int) (native bool, err error) {
	native = true
	if b.Needs == nil {
		return true, nil
	}
	for _, f := range b.Needs(p) {
		nat, ok := features[api][f]
		if !ok {
			return false, fmt.Errorf("needs %s, which %s lacks", f, api)
		}
		native = native && nat
	}
	return native, nil
}

// Threads is the threadgroup size of a candidate.
func (b *Body) Threads(p map[string]int) int { return b.Defines(p)["NTHREADS"] }

// Source generates the complete source of one candidate for an API and dtype.
func (b *Body) SourceFor(api API, dt kernels.DType, p map[string]int) (string, error) {
	if _, err := b.Supported(api, p); err != nil {
		return "", fmt.Errorf("%s candidate %v: %w", b.Family, p, err)
	}
	defs := map[string]int{}
	for k, v := range p {
		defs[k] = v
	}
	for k, v := range b.Defines(p) {
		defs[k] = v
	}
	if _, ok := defs["VEC"]; !ok {
		defs["VEC"] = 1
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "// kerntune %s kernel %s (%s, %s)\n", api, b.Func, b.Family, dt)
	if api == Metal {
		// Apple's headers first: a parameter macro (N, BM, VEC...) defined
		// before them would rewrite their templates and names.
		sb.WriteString(metalInclude)
	}
	names := make([]string, 0, len(defs))
	for k := range defs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&sb, "#define %s %d\n", k, defs[k])
	}
	if b.Raw != nil {
		raw, ok := b.Raw[api]
		if !ok {
			return "", fmt.Errorf("kernel %s has raw sources for %s only; the %s backend cannot build it", b.Family, rawAPIs(b.Raw), api)
		}
		// The raw source chooses its own types; KT_F16 tells it the dtype.
		f16 := 0
		if dt == kernels.F16 {
			f16 = 1
		}
		fmt.Fprintf(&sb, "#define KT_F16 %d\n", f16)
		sb.WriteString(raw)
		sb.WriteString("\n")
		return sb.String(), nil
	}
	pre, err := prelude(api, dt, defs["VEC"])
	if err != nil {
		return "", err
	}
	sb.WriteString(pre)
	sb.WriteString(b.signature(api))
	sb.WriteString(" {\n")
	sb.WriteString(b.Source)
	sb.WriteString("\n}\n")
	return sb.String(), nil
}

func (b *Body) signature(api API) string {
	var args []string
	buf := 0
	for _, a := range b.Args {
		switch api {
		case CUDA:
			switch a.Kind {
			case In:
				args = append(args, "const T* __restrict__ "+a.Name)
			case Out:
				args = append(args, "T* __restrict__ "+a.Name)
			case Int:
				args = append(args, "const int "+a.Name)
			case Float:
				args = append(args, "const float "+a.Name)
			}
		case Metal:
			switch a.Kind {
			case In:
				args = append(args, fmt.Sprintf("device const T* %s [[buffer(%d)]]", a.Name, buf))
			case Out:
				args = append(args, fmt.Sprintf("device T* %s [[buffer(%d)]]", a.Name, buf))
			case Int:
				args = append(args, fmt.Sprintf("constant int& %s [[buffer(%d)]]", a.Name, buf))
			case Float:
				args = append(args, fmt.Sprintf("constant float& %s [[buffer(%d)]]", a.Name, buf))
			}
			buf++
		case OpenCL:
			switch a.Kind {
			case In:
				args = append(args, "__global const T* restrict "+a.Name)
			case Out:
				args = append(args, "__global T* restrict "+a.Name)
			case Int:
				args = append(args, "const int "+a.Name)
			case Float:
				args = append(args, "const float "+a.Name)
			}
		}
	}
	switch api {
	case CUDA:
		return fmt.Sprintf("extern \"C\" __global__ void __launch_bounds__(NTHREADS) %s(%s)", b.Func, strings.Join(args, ", "))
	case Metal:
		args = append(args, "uint3 kt_tid [[thread_position_in_threadgroup]]", "uint3 kt_gid [[threadgroup_position_in_grid]]")
		return fmt.Sprintf("[[max_total_threads_per_threadgroup(NTHREADS)]] kernel void %s(%s)", b.Func, strings.Join(args, ", "))
	}
	return fmt.Sprintf("__kernel __attribute__((reqd_work_group_size(NTHREADS, 1, 1))) void %s(%s)", b.Func, strings.Join(args, ", "))
}

func rawAPIs(raw map[API]string) string {
	var names []string
	for _, a := range APIs {
		if _, ok := raw[a]; ok {
			names = append(names, string(a))
		}
	}
	return strings.Join(names, ", ")
}
