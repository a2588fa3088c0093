package spec

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/mslcheck"
)

// publicMLXExamples are the kernels from public MLX code under examples/mlx.
func publicMLXExamples(t *testing.T) []string {
	t.Helper()
	specs, err := filepath.Glob(examplePath(filepath.Join("mlx", "*", "spec.json")))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) < 5 {
		t.Fatalf("found %d examples under examples/mlx, want at least 5", len(specs))
	}
	return specs
}

// emuCandidates is how many candidates per dtype the emulation runs of
// each example: two in make test, a covering sample with KTDEV_FULL
// (make test-full).
func emuCandidates() int {
	if os.Getenv("KTDEV_FULL") != "" {
		return 0
	}
	return 2
}

// Every kernel from public MLX code passes the clang check of all its
// sources and is verified by the emulation against its reference, as a
// user runs kerntune check and kerntune verify --spec X --emulate.
func TestMLXExamplesFromPublicCode(t *testing.T) {
	t.Parallel()
	cc := mslcheck.Require(t)
	requireNumpy(t) // the examples' references are NumPy functions
	for _, path := range publicMLXExamples(t) {
		name := filepath.Base(filepath.Dir(path))
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := c.StaticCheck(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if sc.MSL == nil || sc.MSL.Passed == 0 {
				t.Fatalf("no Metal source was checked: %+v", sc.MSL)
			}
			rep, err := c.Emulate(context.Background(), EmulateOptions{Clang: cc, Candidates: emuCandidates(), Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			runs := 0
			for _, d := range rep.DTypes {
				runs += d.Passed + d.Failed
			}
			if rep.Failed() > 0 || runs == 0 {
				for _, f := range rep.Failures() {
					t.Errorf("%s %s on %s: %s", f.DType, f.Candidate.Key(), f.Shape, f.Error)
				}
				t.Fatalf("%d runs, %d failed", runs, rep.Failed())
			}
			t.Logf("%d Metal sources checked, %d emulated runs passed", sc.MSL.Passed, runs)
		})
	}
}

// A mutated example fails the emulated verification: a gather through the
// wrong index (the token's row instead of its expert) and a tiled GEMM
// that reads its threadgroup tile before every thread wrote it.
func TestEmulationCatchesMutatedExamples(t *testing.T) {
	t.Parallel()
	cc := mslcheck.Require(t)
	requireNumpy(t)
	for _, tt := range []struct {
		name, spec, from, to string
	}{
		{"wrong index", filepath.Join("mlx", "moe_gather_gemv", "spec.json"),
			"uint expert = expert_indices[row];", "uint expert = expert_indices[0];"},
		{"missing barrier", "mlx_gemm_av.json",
			"  threadgroup_barrier(mem_flags::mem_threadgroup);\n  for (uint p = 0; p < BK; ++p) {", "  for (uint p = 0; p < BK; ++p) {"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := loadExample(t, tt.spec)
			m := *c.Body.MLX
			m.Source = strings.Replace(m.Source, tt.from, tt.to, 1)
			if m.Source == c.Body.MLX.Source {
				t.Fatal("the mutation changed nothing")
			}
			body := *c.Body
			body.MLX = &m
			mutated := *c
			mutated.Body = &body
			rep, err := mutated.Emulate(context.Background(), EmulateOptions{Clang: cc, Candidates: 2, Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Failed() == 0 {
				t.Fatalf("the mutated kernel passed verification: %+v", rep.DTypes)
			}
			t.Logf("mutated: %s", rep.Failures()[0].Error)
		})
	}
}
