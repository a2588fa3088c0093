package gpu

import (
	"strings"
	"sync"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/search"
)

// TestEveryFamilyComplete: every family params describes has a catalog
// entry (in kernels or beside its body here), and a body exactly when it
// has a GPU space, so that a family is found by name in every layer. A
// family in its own folder registers both there, when imported: family/all
// checks those.
func TestEveryFamilyComplete(t *testing.T) {
	for name, f := range families.Builtin() {
		if f.Folder != "" {
			continue
		}
		if _, err := kernels.Get(name); err != nil {
			t.Errorf("%s: no catalog entry: %v", name, err)
		}
		_, hasSpace := f.Space("gpu")
		if _, err := Get(name); (err == nil) != hasSpace {
			t.Errorf("%s: GPU space %v, body error %v", name, hasSpace, err)
		}
	}
}

// searchParams is a family space's parameters as the search package takes them.
func searchParams(ps *families.Space) []search.Param {
	var out []search.Param
	for _, p := range ps.Params {
		out = append(out, search.Param{Name: p.Name, Values: p.Values})
	}
	return out
}

// spaceOf enumerates a family's GPU candidates without shape constraints.
func spaceOf(t *testing.T, k *kernels.Kernel) []search.Candidate {
	t.Helper()
	if v, ok := spaces.Load(k.Name); ok {
		return v.([]search.Candidate)
	}
	ps, ok := k.Space("cuda")
	if !ok {
		t.Fatalf("%s has no gpu space", k.Name)
	}
	all := enumerate(ps)
	spaces.Store(k.Name, all)
	return all
}

// enumerate is a family space's candidates under its shape-free constraints.
func enumerate(ps *families.Space) []search.Candidate {
	sp := &search.Space{Params: searchParams(ps)}
	if ps.Check != nil {
		sp.Constraints = append(sp.Constraints, search.Constraint{Name: "family", Check: func(c search.Candidate) error { return ps.Check(nil, c) }})
	}
	return sp.Enumerate()
}

// spaces holds each family's enumerated space (family name →
// []search.Candidate, never modified): a GEMM space is millions of
// combinations that take seconds to walk, and a dozen tests (per dtype)
// want it.
var spaces sync.Map

// Source is Get and SourceFor in one call; a family without a body is an
// error naming it.
func TestSource(t *testing.T) {
	k, err := kernels.Get("softmax")
	if err != nil {
		t.Fatal(err)
	}
	c := spaceOf(t, k)[0]
	body, src, err := Source(k.Name, CUDA, kernels.F32, c)
	want, werr := testutil.Lookup(t, Get, k.Name).SourceFor(CUDA, kernels.F32, c)
	if err != nil || werr != nil || body != testutil.Lookup(t, Get, k.Name) || src != want {
		t.Errorf("Source: %v, %v; want the body and its source, %v", body, err, werr)
	}
	if _, _, err := Source("nope", CUDA, kernels.F32, c); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("Source of an unknown family: %v", err)
	}
}

// Every candidate of every family generates CUDA, MSL and OpenCL source from
// the same body text, with every parameter defined and the signature complete.
func TestEveryCandidateGeneratesFromOneBody(t *testing.T) {
	t.Parallel() // the package's long tests share the machine's cores (make test's time)
	total, unsupported, refused := 0, 0, 0
	for _, k := range kernels.All() {
		b := testutil.Lookup(t, Get, k.Name)
		cands := spaceOf(t, k)
		if len(cands) == 0 {
			t.Fatalf("%s: empty GPU space", k.Name)
		}
		for _, c := range cands {
			for _, dt := range kernels.DTypes {
				for _, api := range APIs {
					src, err := b.SourceFor(api, dt, c)
					if _, serr := b.Supported(api, c); serr != nil {
						// An API without a feature the candidate needs must refuse it, by name.
						if err == nil || !strings.Contains(err.Error(), serr.Error()) {
							t.Fatalf("%s %s %s: unsupported candidate generated (err %v)", k.Name, api, c.Key(), err)
						}
						unsupported++
						continue
					}
					if berr := b.Buildable(api, dt, c); berr != nil {
						// The API's fragment rules for this dtype: refused, by reason.
						if err == nil || !strings.Contains(err.Error(), berr.Error()) {
							t.Fatalf("%s %s %s %s: a candidate the API cannot build generated (err %v)", k.Name, api, dt, c.Key(), err)
						}
						refused++
						continue
					}
					if err != nil {
						t.Fatalf("%s %s %s %s: %v", k.Name, api, dt, c.Key(), err)
					}
					if !strings.Contains(src, b.Source) {
						t.Fatalf("%s %s: generated source does not contain the body verbatim", k.Name, api)
					}
					for name, v := range c {
						if !strings.Contains(src, "#define "+name+" ") {
							t.Fatalf("%s %s: parameter %s=%d not defined", k.Name, api, name, v)
						}
					}
					for _, a := range b.Args {
						if !strings.Contains(src, " "+a.Name) {
							t.Fatalf("%s %s: argument %s missing from the signature", k.Name, api, a.Name)
						}
					}
					total++
				}
			}
			if n := b.Threads(c); n < 32 || n > 1024 {
				t.Errorf("%s %s: %d threads", k.Name, c.Key(), n)
			}
			// A body that declares threadgroup memory reports it, so that
			// the device's limit is checked; an elementwise body may need
			// none. Static CUDA arrays fit the 48 KiB limit; the MMA body's
			// tiles are dynamic there (bounded by the device's opt-in limit,
			// Limits.MaxSharedDynamic) and static elsewhere (the Metal
			// device bounds them by 32 KiB).
			declares := strings.Contains(b.Source, "SHARED(")
			if sh := b.SharedBytes(c); sh < 0 || sh == 0 && declares {
				t.Errorf("%s %s: %d bytes of threadgroup memory", k.Name, c.Key(), sh)
			}
			for _, dt := range kernels.DTypes {
				if b.Buildable(CUDA, dt, c) != nil {
					continue
				}
				if st := b.Shared(CUDA, dt, c) - b.Dynamic(CUDA, dt, c); st < 0 || st > 48*1024 || st == 0 && declares {
					t.Errorf("%s %s %s: %d bytes of static shared memory on CUDA", k.Name, dt, c.Key(), st)
				}
			}
		}
	}
	if unsupported == 0 {
		t.Error("no candidate needed a feature some API lacks: the MMA variant is missing from the space")
	}
	if refused == 0 {
		t.Error("no candidate broke an API's fragment rules: the fragment shapes are not checked")
	}
	t.Logf("%d sources generated, %d refused for a missing feature, %d for an API's fragment rules", total, unsupported, refused)
}

func TestGeometryCoversOutput(t *testing.T) {
	tests := []struct {
		family string
		shape  []int
		p      map[string]int
		want   Launch
	}{
		{"gemm_av", []int{37, 53, 29}, map[string]int{"BM": 16, "BN": 32, "TM": 1, "TN": 2}, Launch{Grid: [2]int{2, 3}, Threads: 256}},
		{"gemm_at_b", []int{29, 37, 53}, map[string]int{"BM": 16, "BN": 32, "TM": 1, "TN": 2}, Launch{Grid: [2]int{2, 3}, Threads: 256}},
		// MMA: one SIMD-group of 32 threads per WM×WN block.
		{"gemm_av", []int{37, 53, 29}, map[string]int{"BM": 32, "BN": 64, "WM": 1, "WN": 4, "MMA": 1}, Launch{Grid: [2]int{1, 2}, Threads: 128}},
		// KS sets of WM×WN SIMD-groups share a tile: the same grid, KS times the threads.
		{"gemm_av", []int{37, 53, 29}, map[string]int{"BM": 32, "BN": 64, "WM": 1, "WN": 4, "MMA": 1, "KS": 2}, Launch{Grid: [2]int{1, 2}, Threads: 256}},
		{"gemm_at_b", []int{29, 37, 53}, map[string]int{"BM": 32, "BN": 32, "WM": 1, "WN": 1, "MMA": 1, "KS": 4}, Launch{Grid: [2]int{2, 2}, Threads: 128}},
		{"gemv_nt", []int{1, 1000, 64}, map[string]int{"TG": 256, "TPR": 32}, Launch{Grid: [2]int{125, 1}, Threads: 256}},
		{"softmax", []int{5, 300}, map[string]int{"TPR": 64, "RPB": 2}, Launch{Grid: [2]int{3, 1}, Threads: 128}},
		// lora: (TG/TPR/KS)·CPS rows of W a threadgroup; KS chunks of k share its segments.
		{"lora", []int{4, 1000, 64, 16}, map[string]int{"TG": 256, "TPR": 16, "CPS": 2, "KS": 4, "BM": 4}, Launch{Grid: [2]int{125, 1}, Threads: 256}},
		// An entry without KS: one chunk, 16 rows of W.
		{"lora", []int{5, 1000, 64, 16}, map[string]int{"TG": 128, "TPR": 32, "CPS": 4, "BM": 4}, Launch{Grid: [2]int{63, 2}, Threads: 128}},
		// MMA: 16 rows a group, (256/32/2)·1 = 4 groups less A's ⌈r/16⌉.
		{"lora", []int{16, 1000, 64, 16}, map[string]int{"TG": 256, "TPR": 32, "CPS": 1, "KS": 2, "BM": 16, "MMA": 1}, Launch{Grid: [2]int{21, 1}, Threads: 256}},
		{"lora", []int{16, 1000, 64, 40}, map[string]int{"TG": 256, "TPR": 32, "CPS": 1, "KS": 2, "BM": 16, "MMA": 1}, Launch{Grid: [2]int{63, 1}, Threads: 256}},
	}
	for _, tt := range tests {
		b, _ := Get(tt.family)
		if got := b.Geometry(tt.shape, tt.p); got != tt.want {
			t.Errorf("%s %v: %+v, want %+v", tt.family, tt.shape, got, tt.want)
		}
	}
	b, _ := Get("gemm_at_b")
	if got := b.Scalars(kernels.Case{Shape: []int{29, 37, 53}}, nil); got[0] != int32(37) || got[1] != int32(53) || got[2] != int32(29) {
		t.Errorf("gemm_at_b scalars %v: want M=n, N=k, K=m", got)
	}
}

// Every candidate of every family's GPU and CPU space is accepted by one
// of the family's odd shapes at least: verify (and make test-full) checks
// candidates on those alone, and refuses a candidate none of them accepts
// as unverified (3×8 was added for KEEP=1 rows whose TPR·VEC·UNROLL holds
// fewer than the 56 columns of the smallest other odd row).
func TestEveryCandidateHasAVerificationShape(t *testing.T) {
	for _, k := range kernels.All() {
		for _, kind := range []string{"gpu", "cpu"} {
			ps, ok := k.Spaces[kind]
			if !ok || ps.Check == nil {
				continue
			}
			var cands []search.Candidate
			if kind == "gpu" {
				cands = spaceOf(t, k) // enumerated once for every test
			} else {
				cands = enumerate(ps)
			}
			missed := 0
			for _, c := range cands {
				if !k.Verifiable(ps, c) {
					if missed < 3 {
						t.Errorf("%s %s: no odd shape accepts %s", k.Name, kind, c.Key())
					}
					missed++
				}
			}
			if missed > 0 {
				t.Errorf("%s %s: %d of %d candidates accepted by no odd shape", k.Name, kind, missed, len(cands))
			}
		}
	}
}
