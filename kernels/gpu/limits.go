package gpu

import (
	"fmt"
	"slices"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
)

// Limits are a GPU's limits on candidates, as plain data: a backend fills
// them from its device queries, and the family's body holds each candidate
// to them (Body.Constraints) where the search space is built. Being data,
// they travel once with the device's description to a process that runs
// the backend in a worker, instead of a call for every check.
type Limits struct {
	API        API // the API candidates are generated for
	MaxThreads int // threads per block, work-group or threadgroup
	MaxShared  int // bytes of static shared (local, threadgroup) memory per group
	// MaxSharedDynamic is the shared memory a group may use in all where
	// the launch sizes part of it (CUDA's dynamic shared memory, which a
	// kernel may be allowed past the 48 KiB of static arrays, up to the
	// device's opt-in limit); 0: MaxShared. See Body.DynamicShared.
	MaxSharedDynamic int
	// SIMDWidth is the lanes of the device's SIMD groups (warps); 0 when
	// the device does not report one before a kernel is built (Metal
	// reports it per pipeline, OpenCL 1.2 per kernel).
	SIMDWidth int
	// Features lists the optional features the device runs natively
	// (Metal's simdgroup_matrix from Apple7 on; CUDA's mma.sync and
	// cp.async from sm_80 on, TF32 where also allowed by the user). A
	// feature an API provides natively (see Supported) is usable only where
	// the device lists it.
	Features []Feature
}

// ReductionLanes is the SIMD-group width the CUDA and Metal preludes'
// reductions (SEG_SUM, SEG_MAX) shuffle across; OpenCL C 1.2 reduces in
// local memory and assumes none.
const ReductionLanes = 32

// shufflesLanes says which APIs' preludes reduce with SIMD-group shuffles.
var shufflesLanes = map[API]bool{CUDA: true, Metal: true}

// words are the names an API's programmers know the limits by; the
// constraint names and reasons use them.
type words struct {
	threads, perGroup  string // the name of the thread limit, and the unit of a count
	memory, memoryNoun string // the name of the memory limit, and the noun in a reason
}

var apiWords = map[API]words{
	CUDA:   {"threads", "threads per block", "static shared memory", "shared memory"},
	Metal:  {"threads", "threads per threadgroup", "threadgroup memory", "threadgroup memory"},
	OpenCL: {"work-group size", "work-items per work-group", "local memory", "local memory"},
}

// featureNames name the feature constraint per API: the one for Metal
// speaks of GPU families, since there the device decides.
var featureNames = map[API]string{
	CUDA:   "features CUDA has",
	Metal:  "GPU family features",
	OpenCL: "features OpenCL C 1.2 has",
}

// featureHints say, per API, which devices have a feature, for the reason
// a candidate is refused on one that lacks it.
var featureHints = map[API]map[Feature]string{
	Metal: {SIMDMatrix: "Apple7 or later: M1 on; not Intel Macs' GPUs"},
	CUDA: {
		SIMDMatrix: "mma.sync and ldmatrix: sm_80 or later",
		AsyncCopy:  "cp.async: sm_80 or later",
		TF32:       "sm_80 or later, and allowed by the user (kerntune --allow-tf32): TF32 rounds f32 inputs to 10-bit mantissas",
	},
}

// emulates reports whether api emulates any feature (correct, but never
// worth timing): only then do its constraints include "native features only".
func emulates(api API) bool {
	for _, native := range features[api] {
		if !native {
			return true
		}
	}
	return false
}

// Constraints hold the body's candidates in dt to the device limits l:
// threads per group, shared memory (static, and in all where the launch
// sizes part of it), and the features a candidate needs, named in l.API's
// own words. Where the API emulates a feature, a tune-only constraint
// keeps emulated candidates out of tuning (they are still verified).
func (b *Body) Constraints(l Limits, dt kernels.DType) []search.Constraint {
	w, ok := apiWords[l.API]
	if !ok {
		err := fmt.Errorf("limits of an unknown GPU API %q (known: %v)", l.API, APIs)
		return []search.Constraint{{Name: "a known GPU API", Check: func(search.Candidate) error { return err }}}
	}
	cs := []search.Constraint{
		{Name: fmt.Sprintf("%s ≤ %d", w.threads, l.MaxThreads), Check: func(c search.Candidate) error {
			if n := b.Threads(c); n > l.MaxThreads {
				return fmt.Errorf("%d %s", n, w.perGroup)
			}
			return nil
		}},
		b.sharedConstraint(l, dt, w),
		{Name: featureNames[l.API], Check: func(c search.Candidate) error { return b.fits(l, dt, c) }},
	}
	if emulates(l.API) {
		cs = append(cs, search.Constraint{Name: "native features only", TuneOnly: true, Check: func(c search.Candidate) error {
			if native, err := b.Supported(l.API, c); err == nil && !native {
				return fmt.Errorf("emulated on %s", apiTitle(l.API))
			}
			return nil
		}})
	}
	return cs
}

// sharedConstraint holds a candidate's shared memory on l.API in dt to
// l.MaxShared, where the launch sizes none of it; where it sizes some
// (Body.DynamicShared), the static rest to l.MaxShared and the whole to
// l.MaxSharedDynamic.
func (b *Body) sharedConstraint(l Limits, dt kernels.DType, w words) search.Constraint {
	total := max(l.MaxSharedDynamic, l.MaxShared)
	name := fmt.Sprintf("%s ≤ %d bytes", w.memory, l.MaxShared)
	if total > l.MaxShared && b.DynamicShared != nil {
		name += fmt.Sprintf(", %d in all", total)
	}
	return search.Constraint{Name: name, Check: func(c search.Candidate) error {
		all := b.Shared(l.API, dt, c)
		dyn := b.Dynamic(l.API, dt, c)
		if s := all - dyn; s > l.MaxShared {
			return fmt.Errorf("%d bytes of %s", s, w.memoryNoun)
		}
		if dyn > 0 && all > total {
			return fmt.Errorf("%d bytes of %s in all (%d sized at launch)", all, w.memoryNoun, dyn)
		}
		return nil
	}}
}

// fits checks what a candidate needs against the API and the device: the
// API must provide every feature and be able to build the candidate in dt
// (Buildable), the device must have the features the API provides
// natively, and a body in the dialect needs the SIMD width its prelude's
// reductions assume where the device reports one.
func (b *Body) fits(l Limits, dt kernels.DType, c search.Candidate) error {
	if err := b.Buildable(l.API, dt, c); err != nil {
		return err
	}
	if b.Needs != nil {
		for _, f := range b.Needs(c) {
			if features[l.API][f] && !slices.Contains(l.Features, f) {
				if hint, ok := featureHints[l.API][f]; ok {
					return fmt.Errorf("needs %s (%s)", f, hint)
				}
				return fmt.Errorf("needs %s, which this device lacks", f)
			}
		}
	}
	if b.Source != "" && shufflesLanes[l.API] && l.SIMDWidth != 0 && l.SIMDWidth != ReductionLanes {
		return fmt.Errorf("the device's SIMD groups have %d lanes, but the %s prelude's reductions assume %d", l.SIMDWidth, apiTitle(l.API), ReductionLanes)
	}
	return nil
}

// apiTitle is an API's name as written in prose.
func apiTitle(a API) string {
	switch a {
	case CUDA:
		return "CUDA"
	case OpenCL:
		return "OpenCL"
	case Metal:
		return "Metal"
	}
	return string(a)
}
