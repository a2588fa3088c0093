package gpu

import (
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
)

// check returns the first constraint that rejects c (its name and reason),
// skipping tune-only ones unless tuning.
func check(cs []search.Constraint, c search.Candidate, tuning bool) (string, error) {
	for _, con := range cs {
		if con.TuneOnly && !tuning {
			continue
		}
		if err := con.Check(c); err != nil {
			return con.Name, err
		}
	}
	return "", nil
}

// Each API's limits are named and explained in its own words, and a body
// holds its candidates to them.
func TestLimitsConstraints(t *testing.T) {
	body, err := Get("gemm_av")
	if err != nil {
		t.Fatal(err)
	}
	ok := search.Candidate{"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4, "PAD": 0}            // 256 threads, 8 KB
	many := search.Candidate{"BM": 128, "BN": 128, "BK": 8, "TM": 1, "TN": 8, "PAD": 0}         // 2048 threads
	big := search.Candidate{"BM": 128, "BN": 128, "BK": 32, "TM": 8, "TN": 8, "PAD": 4}         // 34 KB
	mma := search.Candidate{"BM": 32, "BN": 32, "BK": 16, "TM": 1, "TN": 1, "PAD": 0, "MMA": 1} // fragments
	tf32 := search.Candidate{"BM": 32, "BN": 32, "BK": 16, "TM": 1, "TN": 1, "PAD": 0, "MMA": 1, "TF32": 1}
	// f16 tiles of 128×32 and 32×128 in a ring of 3: 56 832 bytes sized at launch on
	// CUDA, and 16 bytes of static scratch.
	ring := search.Candidate{"BM": 128, "BN": 128, "BK": 32, "TM": 1, "TN": 1, "PAD": 0, "MMA": 1, "WM": 2, "WN": 2, "STAGES": 3}
	m3 := Limits{API: Metal, MaxThreads: 1024, MaxShared: 32 << 10, Features: []Feature{SIMDMatrix}}
	intelMac := Limits{API: Metal, MaxThreads: 1024, MaxShared: 32 << 10}
	h100 := Limits{API: CUDA, MaxThreads: 1024, MaxShared: 48 << 10, MaxSharedDynamic: 227 << 10, SIMDWidth: 32, Features: []Feature{SIMDMatrix, AsyncCopy}}
	h100TF32 := h100
	h100TF32.Features = append([]Feature{TF32}, h100.Features...)
	h100Static := h100
	h100Static.MaxSharedDynamic = 0
	noAsync := h100 // a device with matrix units but no asynchronous copies
	noAsync.Features = []Feature{SIMDMatrix}
	t4 := Limits{API: CUDA, MaxThreads: 1024, MaxShared: 48 << 10, MaxSharedDynamic: 64 << 10, SIMDWidth: 32}
	pocl := Limits{API: OpenCL, MaxThreads: 4096, MaxShared: 32 << 10}
	for _, c := range []struct {
		name         string
		l            Limits
		dt           kernels.DType // "": f32
		cand         search.Candidate
		tuning       bool
		wantName     string // "" = accepted
		wantContains string
	}{
		{"cuda fits", h100, "", ok, true, "", ""},
		{"cuda threads", h100, "", many, false, "threads ≤ 1024", "2048 threads per block"},
		{"metal threads", m3, "", many, false, "threads ≤ 1024", "2048 threads per threadgroup"},
		{"opencl threads", Limits{API: OpenCL, MaxThreads: 256, MaxShared: 32 << 10}, "", many, false, "work-group size ≤ 256", "2048 work-items per work-group"},
		{"cuda shared", Limits{API: CUDA, MaxThreads: 1024, MaxShared: 32 << 10}, "", big, false, "static shared memory ≤ 32768 bytes", "bytes of shared memory"},
		{"metal shared", m3, "", big, false, "threadgroup memory ≤ 32768 bytes", "bytes of threadgroup memory"},
		{"opencl shared", pocl, "", big, false, "local memory ≤ 32768 bytes", "bytes of local memory"},
		{"metal M3 runs simdgroup_matrix", m3, "", mma, true, "", ""},
		{"metal Intel Mac lacks it", intelMac, "", mma, false, "GPU family features", "needs simdgroup_matrix (Apple7 or later"},
		{"cuda f16 on mma.sync", h100, kernels.F16, mma, true, "", ""},
		{"cuda before sm_80 lacks it", t4, kernels.F16, mma, false, "features CUDA has", "needs simdgroup_matrix (mma.sync and ldmatrix: sm_80 or later)"},
		{"cuda has no f32 fragments", h100, kernels.F32, mma, false, "features CUDA has", "needs TF32=1"},
		{"cuda TF32 not allowed", h100, kernels.F32, tf32, false, "features CUDA has", "needs tf32 (sm_80 or later, and allowed by the user"},
		{"cuda TF32 allowed", h100TF32, kernels.F32, tf32, true, "", ""},
		{"cuda TF32 in f16", h100TF32, kernels.F16, tf32, false, "features CUDA has", "TF32=1 applies to f32 only"},
		{"cuda ring sized at launch", h100, kernels.F16, ring, true, "", ""},
		{"cuda ring past static memory", h100Static, kernels.F16, ring, false, "static shared memory ≤ 49152 bytes", "56848 bytes of shared memory in all (56832 sized at launch)"},
		{"cuda 4 stages need cp.async", noAsync, kernels.F16, search.Candidate{"BM": 64, "BN": 64, "BK": 16, "TM": 1, "TN": 1, "PAD": 0, "MMA": 1, "STAGES": 4}, false, "features CUDA has", "needs async_copy (cp.async: sm_80 or later)"},
		{"metal has no asynchronous copies", m3, "", search.Candidate{"BM": 64, "BN": 64, "BK": 16, "TM": 1, "TN": 1, "PAD": 0, "MMA": 1, "STAGES": 3}, false, "GPU family features", "needs async_copy, which metal lacks"},
		{"metal has no TF32", m3, "", tf32, false, "GPU family features", "needs tf32, which metal lacks"},
		{"cuda KS splits whole fragments", h100, kernels.F16, search.Candidate{"BM": 64, "BN": 64, "BK": 16, "TM": 1, "TN": 1, "PAD": 0, "MMA": 1, "STAGES": 2, "KS": 2}, false, "features CUDA has", "BK=16 must split into KS=2 parts"},
		{"metal KS splits 8-deep fragments", m3, kernels.F16, search.Candidate{"BM": 32, "BN": 32, "BK": 16, "TM": 1, "TN": 1, "PAD": 0, "MMA": 1, "STAGES": 2, "KS": 2}, true, "", ""},
		// Four partial 64×(64+8) float tiles (73 728 bytes) outgrow the
		// f16 ring they reuse (18 432 bytes).
		{"cuda KS partial tiles sized at launch", h100, kernels.F16, search.Candidate{"BM": 64, "BN": 64, "BK": 64, "TM": 1, "TN": 1, "PAD": 0, "MMA": 1, "WM": 2, "WN": 2, "STAGES": 1, "KS": 4}, true, "", ""},
		{"cuda KS partial tiles past static memory", h100Static, kernels.F16, search.Candidate{"BM": 64, "BN": 64, "BK": 64, "TM": 1, "TN": 1, "PAD": 0, "MMA": 1, "WM": 2, "WN": 2, "STAGES": 1, "KS": 4}, false, "static shared memory ≤ 49152 bytes", "73732 bytes of shared memory in all (73728 sized at launch)"},
		{"metal KS partial tiles past threadgroup memory", m3, kernels.F16, search.Candidate{"BM": 64, "BN": 64, "BK": 64, "TM": 1, "TN": 1, "PAD": 0, "MMA": 1, "WM": 2, "WN": 2, "STAGES": 1, "KS": 4}, false, "threadgroup memory ≤ 32768 bytes", "73732 bytes of threadgroup memory"},
		{"opencl lacks it", pocl, "", mma, false, "features OpenCL C 1.2 has", "needs simdgroup_matrix, which opencl lacks"},
		{"cuda warp of 64", Limits{API: CUDA, MaxThreads: 1024, MaxShared: 48 << 10, SIMDWidth: 64}, "", ok, false, "features CUDA has", "reductions assume 32"},
		{"opencl reduces in local memory", Limits{API: OpenCL, MaxThreads: 1024, MaxShared: 32 << 10, SIMDWidth: 64}, "", ok, false, "", ""},
		{"unknown API", Limits{API: "vulkan", MaxThreads: 1024, MaxShared: 32 << 10}, "", ok, false, "a known GPU API", `unknown GPU API "vulkan"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dt := c.dt
			if dt == "" {
				dt = kernels.F32
			}
			name, err := check(body.Constraints(c.l, dt), c.cand, c.tuning)
			if c.wantName == "" {
				if err != nil {
					t.Errorf("rejected by %q: %v", name, err)
				}
				return
			}
			if name != c.wantName || err == nil || !strings.Contains(err.Error(), c.wantContains) {
				t.Errorf("rejected by %q: %v; want %q saying %q", name, err, c.wantName, c.wantContains)
			}
		})
	}
}

// Only an API that emulates a feature has the tune-only constraint; none
// does since CUDA runs the fragments on mma.sync.
func TestNativeOnlyWhereEmulated(t *testing.T) {
	body, err := Get("softmax")
	if err != nil {
		t.Fatal(err)
	}
	for _, api := range APIs {
		tuneOnly := 0
		for _, con := range body.Constraints(Limits{API: api, MaxThreads: 1024, MaxShared: 1 << 15}, kernels.F32) {
			if con.TuneOnly {
				tuneOnly++
			}
		}
		if want := 0; tuneOnly != want {
			t.Errorf("%s: %d tune-only constraints, want %d", api, tuneOnly, want)
		}
	}
}

// Raw sources make no assumption about the SIMD width.
func TestRawSourceAnyWidth(t *testing.T) {
	raw := &Body{Family: "raw", Func: "k", Raw: map[API]string{CUDA: "..."},
		Defines:     func(map[string]int) map[string]int { return map[string]int{"NTHREADS": 64} },
		SharedBytes: func(map[string]int) int { return 0 },
		Scalars:     func(kernels.Case, map[string]float64) []any { return nil }}
	if name, err := check(raw.Constraints(Limits{API: CUDA, MaxThreads: 1024, MaxShared: 1 << 15, SIMDWidth: 64}, kernels.F32), search.Candidate{}, true); err != nil {
		t.Errorf("raw source rejected by %q: %v", name, err)
	}
}

// f16 matrix-unit tiles are half in threadgroup memory: for every MMA=1
// candidate Metal builds, the f16 tiles' data is half the f32 tiles' (their
// padding stays 16 bytes a row), so more candidates fit an Apple GPU's 32
// KiB. Float tiles for f16, as before, fail it.
func TestMetalHalfTiles(t *testing.T) {
	for _, fam := range []string{"gemm_av", "gemm_at_b"} {
		k, err := kernels.Get(fam)
		if err != nil {
			t.Fatal(err)
		}
		b := bodies[fam]
		fitsBefore, fitsNow, total := 0, 0, 0
		for _, c := range spaceOf(t, k) {
			if c["MMA"] != 1 || b.Buildable(Metal, kernels.F16, c) != nil {
				continue
			}
			total++
			aElems := c["BM"] * c["BK"]
			data := gemmStages(c) * (aElems + c["BK"]*c["BN"])
			f32, f16 := b.Shared(Metal, kernels.F32, c), b.Shared(Metal, kernels.F16, c)
			if ks := gemmKS(c); ks > 1 {
				// KS partial tiles are floats in every dtype and reuse the
				// ring: f16 takes no more than f32, and at least them.
				if red := ks * c["BM"] * (c["BN"] + 8) * 4; f16 > f32 || f16 < red {
					t.Fatalf("%s %v: f16 takes %d bytes of threadgroup memory, f32 %d: want between the partial tiles' %d and f32's", fam, c, f16, f32, red)
				}
			} else if f32-f16 != 2*data {
				t.Fatalf("%s %v: f16 takes %d bytes of threadgroup memory, f32 %d: want 2 bytes less per tile element (%d elements)", fam, c, f16, f32, data)
			}
			// Before half tiles, f16 took what f32 takes.
			if f32 <= appleGPU.MaxShared {
				fitsBefore++
			}
			if f16 <= appleGPU.MaxShared {
				fitsNow++
			}
		}
		if fitsNow <= fitsBefore {
			t.Errorf("%s: %d f16 MMA candidates fit 32 KiB with half tiles, %d with float tiles", fam, fitsNow, fitsBefore)
		}
		t.Logf("%s f16 MMA=1: %d of %d candidates fit 32 KiB of threadgroup memory with half tiles, %d with float tiles", fam, fitsNow, total, fitsBefore)
	}
}
