package gpu

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kerntune/kerntune/internal/cover"
	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
)

// mslSources generates the MSL of every candidate of every family that
// Metal can build, f32, f16 and bf16: all but the CUDA-only ones (TF32=1,
// STAGES > 2 with MMA=1). Unless full, only a covering sample of each
// family and dtype, plus its default: every pair of values of two
// parameters that a Metal candidate takes (MMA=1 with every tile size,
// every BK with every STAGES...). It returns the sources and what they are
// for the summary lines.
func mslSources(t *testing.T, full bool) ([]mslcheck.Source, string) {
	t.Helper()
	if v, ok := mslMemo.Load(full); ok {
		m := v.(mslSet)
		return m.srcs, m.what
	}
	srcs, what := mslGenerate(t, full)
	mslMemo.Store(full, mslSet{srcs, what})
	return srcs, what
}

// mslMemo holds mslSources' result by full (never modified): the syntax,
// bfloat and include checks share one generation.
var mslMemo sync.Map

type mslSet struct {
	srcs []mslcheck.Source
	what string
}

func mslGenerate(t *testing.T, full bool) ([]mslcheck.Source, string) {
	t.Helper()
	var srcs []mslcheck.Source
	buildable := 0
	for _, k := range kernels.All() {
		b := testutil.Lookup(t, Get, k.Name)
		ps, _ := k.Space("metal")
		params := searchParams(ps)
		for _, dt := range kernels.DTypes {
			var cands []search.Candidate
			for _, c := range spaceOf(t, k) {
				if b.Buildable(Metal, dt, c) == nil {
					cands = append(cands, c)
				}
			}
			buildable += len(cands)
			if !full {
				cov := cover.Sample(params, cands, 1, cover.Pairs)
				if m := cover.Missing(params, cands, cov.Sample, cover.Pairs); len(m) > 0 {
					t.Fatalf("%s %s: the covering sample misses %s", k.Name, dt, strings.Join(m, " "))
				}
				cands = cov.Sample
				if def := search.Candidate(ps.Defaults()); b.Buildable(Metal, dt, def) == nil && !slices.ContainsFunc(cands, func(c search.Candidate) bool { return c.Key() == def.Key() }) {
					cands = append(cands, def)
				}
			}
			for _, c := range cands {
				s, err := b.SourceFor(Metal, dt, c)
				if err != nil {
					t.Fatal(err)
				}
				srcs = append(srcs, mslcheck.Source{Name: fmt.Sprintf("%s %s %s", k.Name, dt, c.Key()), Func: b.Func, Text: s})
			}
		}
	}
	if full {
		return srcs, fmt.Sprintf("every Metal candidate (%d, the full sweep, make test-full)", buildable)
	}
	return srcs, fmt.Sprintf("a covering sample of the %d Metal candidates (every pair of parameter values per family and dtype, and the defaults; %s=1 checks all)", buildable, cover.FullEnv)
}

// Every generated MSL source opens with #include <metal_stdlib> and using
// namespace metal, before any parameter #define: a macro named like a
// template parameter of Apple's headers (N, Rows, T...) would rewrite them.
// It scans every candidate, not a sample: generating and scanning all of
// them takes about a second; it is clang that needs the sample.
func TestMSLIncludeBeforeDefines(t *testing.T) {
	srcs, _ := mslSources(t, true)
	for _, s := range srcs {
		if err := mslcheck.IncludeFirst(s.Text); err != nil {
			t.Fatalf("%s: %v\n%s", s.Name, err, s.Text[:min(len(s.Text), 400)])
		}
	}
	t.Logf("%d MSL sources open with the include", len(srcs))
}

// TestMSLSyntax checks generated MSL candidates of every family and dtype
// with clang against the stand-in headers, in both modes: syntax (C++) and
// address spaces (C++ for OpenCL, device/threadgroup/constant/thread as
// __global/__local/__constant/__private), 400 candidates per clang run: a
// covering sample (mslSources), or with KTDEV_FULL every Metal candidate
// (about 10 minutes on 2 cores).
func TestMSLSyntax(t *testing.T) {
	// Metal 3.0 (macOS 13): no __HAVE_BFLOAT__, so bf16 takes its ushort
	// branch, and that branch must not name bfloat, which 3.0 lacks.
	chk, err := mslcheck.NewVersion(mslcheck.Require(t), t.TempDir(), "3.0")
	if err != nil {
		t.Fatal(err)
	}
	srcs, what := mslSources(t, cover.Full())
	lines := map[mslcheck.Mode]string{
		mslcheck.Syntax:        "MSL syntax check: %d candidates checked, %s, every family, f32, f16 and bf16 (ushort storage), MMA=0 and 1; %d clang runs, %s",
		mslcheck.AddressSpaces: "MSL address-space check: %d candidates checked as C++ for OpenCL, %s, every family, f32, f16 and bf16 (ushort storage), MMA=0 and 1; %d clang runs, %s",
	}
	chk.CheckModes(t, srcs, 400, func(mode mslcheck.Mode, runs int, took time.Duration) string {
		return fmt.Sprintf(lines[mode], len(srcs), what, runs, took)
	})
}

// bf16 sources take MSL's bfloat where the compiler defines __HAVE_BFLOAT__
// (Metal 3.1) and ushort storage otherwise: TestMSLSyntax checks the
// second (at Metal 3.0); this checks the first, the
// bf16 sources of the sample with the macro defined, against the stand-in
// bfloat of the headers.
func TestMSLBFloat(t *testing.T) {
	chk, err := mslcheck.New(mslcheck.Require(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	all, _ := mslSources(t, false)
	const open = "using namespace metal;\n"
	var srcs []mslcheck.Source
	for _, s := range all {
		if !strings.Contains(s.Name, " bf16 ") {
			continue
		}
		if !strings.Contains(s.Text, "#if defined(__HAVE_BFLOAT__)\ntypedef bfloat T;") {
			t.Fatalf("%s: no bfloat branch", s.Name)
		}
		s.Text = strings.Replace(s.Text, open, open+"#define __HAVE_BFLOAT__ 1\n", 1)
		srcs = append(srcs, s)
	}
	if len(srcs) == 0 {
		t.Fatal("no bf16 sources")
	}
	for _, mode := range mslcheck.Modes {
		if _, err := chk.CheckAll(mode, srcs, 400); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d bf16 MSL candidates checked with bfloat (__HAVE_BFLOAT__), both modes", len(srcs))
}

// The checks have teeth on real bodies: a CUDA-only intrinsic fails both;
// threadgroup memory passed to LOADV, which reads device memory, passes the
// syntax check and fails the address-space check.
func TestMSLChecksRejectBrokenBodies(t *testing.T) {
	chk, err := mslcheck.New(mslcheck.Require(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	broken := func(family, old, new string) string {
		t.Helper()
		b := *bodies[family]
		if !strings.Contains(b.Source, old) {
			t.Fatalf("%s body has no %q", family, old)
		}
		b.Source = strings.Replace(b.Source, old, new, 1)
		k, _ := kernels.Get(family)
		ps, _ := k.Space("metal")
		src, err := b.SourceFor(Metal, kernels.F32, ps.Defaults())
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	cuda := broken("softmax", "EXP(", "__expf(")
	for _, mode := range mslcheck.Modes {
		if err := chk.CheckText(mode, "softmax with __expf", cuda); err == nil || !strings.Contains(err.Error(), "__expf") {
			t.Errorf("%s check: broken MSL passed: %v", mode, err)
		}
	}
	tg := broken("gemv_nt", "LOADV(x, c, xv[u])", "LOADV(red, c, xv[u])")
	if err := chk.CheckText(mslcheck.Syntax, "gemv_nt LOADV(red)", tg); err != nil {
		t.Errorf("syntax check: f32 threadgroup float where device float is read should pass it (it erases address spaces): %v", err)
	}
	if err := chk.CheckText(mslcheck.AddressSpaces, "gemv_nt LOADV(red)", tg); err == nil || !strings.Contains(err.Error(), "__local float") {
		t.Errorf("address-space check: threadgroup memory passed to kt_loadv(device const T*) passed: %v", err)
	}
}
