package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/spec"
)

// kerntune check generates every candidate of an mlx spec and
// syntax-checks it; the backends that cannot run MLX kernels reject them
// naming the spec and the backend.
func TestCheckSpecMLX(t *testing.T) {
	t.Parallel()
	_, clangErr := gpu.FindClang()
	if clangErr != nil && os.Getenv("KTDEV_REQUIRE_CLANG") != "" {
		t.Fatalf("%v but KTDEV_REQUIRE_CLANG is set", clangErr)
	}
	qr, gemm := "../../examples/mlx_qr_col_dot.json", "../../examples/mlx_gemm_av.json"
	syntax := []string{"MSL syntax and address-space checks: 8 Metal sources passed", "MSL syntax and address-space checks: 54 Metal sources passed"}
	noCheck := []string{}
	if clangErr != nil {
		// Without clang check refuses to go on (TestCheckWithoutMSLCompiler) unless told to.
		syntax, noCheck = []string{"MSL check: skipped (--no-msl-check)"}, []string{"--no-msl-check"}
	}
	// A body that MLX's generated signature does not fit: it names an
	// input the kernel does not have.
	dir := t.TempDir()
	body := testutil.ReadFile(t, "../../examples/mlx_qr_col_dot.body.metal")
	for _, f := range []string{"mlx.header.metal", "mlx_qr_col_dot.json"} {
		testutil.WriteFile(t, dir, f, string(testutil.ReadFile(t, filepath.Join("../../examples", f))))
	}
	testutil.WriteFile(t, dir, "mlx_qr_col_dot.body.metal", strings.Replace(string(body), "float(v[i])", "float(w[i])", 1))
	broken := filepath.Join(dir, "mlx_qr_col_dot.json")

	tests := []cliCase{
		{append([]string{"check", "--spec", qr, "--spec", gemm, "--backend", "none"}, noCheck...), 0,
			append([]string{"kernel mlx_qr_col_dot", "APIs metal", "sources generated: 8 distinct (24 candidates × 2 dtypes × 1 API on 8 shapes)", "sources generated: 54 distinct"}, syntax...)},
		{[]string{"check", "--spec", qr, "--backend", "cuda"}, 2, []string{"--backend cuda", qr, "kernel mlx_qr_col_dot has an mlx source", "metal backend only, not cuda"}},
		{[]string{"check", "--spec", qr, "--backend", "opencl"}, 2, []string{qr, "metal backend only, not opencl"}},
		{[]string{"tune", "--spec", qr, "--backend", "cpu", "--out", filepath.Join(t.TempDir(), "p.json")}, 2, []string{"--spec", qr, "metal backend only, not cpu"}},
		{[]string{"tune", "--spec", gemm, "--backend", "cuda", "--out", filepath.Join(t.TempDir(), "p.json")}, 2, []string{gemm, "metal backend only, not cuda"}},
		{[]string{"tune", "--spec", qr, "--backend", "opencl", "--out", filepath.Join(t.TempDir(), "p.json")}, 2, []string{qr, "metal backend only, not opencl"}},
	}
	if clangErr == nil {
		tests = append(tests, cliCase{[]string{"check", "--spec", broken, "--backend", "none"}, 2, []string{broken, filepath.Join(dir, "mlx_qr_col_dot.body.metal") + ":21 (source.mlx.source_file line 21): error: use of undeclared identifier 'w'", "float(w[i])"}})
	}
	for _, tt := range tests {
		wantExit(t, tt.args, tt.code, tt.want...)
	}
}

// With --backend auto and no GPU, check says which backend would run each
// spec: opencl only for specs with OpenCL sources, never for an mlx
// kernel, which runs on metal alone.
func TestNoGPUNote(t *testing.T) {
	qr := testutil.Lookup(t, spec.Load, "../../examples/mlx_qr_col_dot.json")
	swiglu := testutil.Lookup(t, spec.Load, "../../examples/swiglu.json")
	tests := []struct {
		cs       []*spec.Compiled
		want     []string
		wantNone []string
	}{
		{[]*spec.Compiled{qr}, []string{"mlx kernel", "metal backend only"}, []string{"opencl"}},
		{[]*spec.Compiled{swiglu}, []string{"--backend opencl runs them"}, []string{"mlx", "metal"}},
		{[]*spec.Compiled{swiglu, qr}, []string{"--backend opencl runs swiglu where", "the mlx kernel mlx_qr_col_dot runs on the metal backend only"}, []string{"opencl runs them", "opencl runs mlx"}},
	}
	for _, tt := range tests {
		got := noGPUNote(tt.cs)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q lacks %q", got, w)
			}
		}
		for _, w := range tt.wantNone {
			if strings.Contains(got, w) {
				t.Errorf("%q has %q", got, w)
			}
		}
	}
}
