package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/internal/testutil"
)

// verify --spec --emulate runs an mlx spec's candidates on the CPU: a
// correct example passes (exit 0), a copy whose body writes through a
// wrong index fails (exit 1) naming the failing candidate and shape, and
// wrong flags are usage errors (exit 2) before anything is compiled.
func TestVerifyEmulate(t *testing.T) {
	t.Parallel()
	const exp = "../../examples/mlx_exp1d.json"
	// The flag errors come first and need no clang.
	usage := []cliCase{
		{[]string{"verify", "--spec", exp}, 2, []string{"--spec", "add --emulate"}},
		{[]string{"verify", "--emulate"}, 2, []string{"--emulate", "--spec FILE"}},
		{[]string{"verify", "--spec", exp, "--emulate", "--backend", "cpu"}, 2, []string{"--backend: not with --emulate"}},
		{[]string{"verify", "--spec", exp, "--emulate", "--candidates", "0"}, 2, []string{`--candidates "0"`, "or all"}},
		{[]string{"verify", "--spec", exp, "--emulate", "--dtype", "bf16"}, 2, []string{"--dtype bf16", "supports f32, f16"}},
		{[]string{"verify", "--spec", exp, "--emulate", "--where", "BN=8"}, 2, []string{"--where BN=8", "mlx_exp1d has no parameter BN (it has TG)"}},
		{[]string{"verify", "--spec", "../../examples/gemm_av.json", "--emulate"}, 2, []string{"mlx kernels (source.mlx"}},
		{[]string{"verify", "--backend", "cpu", "--kernel", "softmax", "--candidates", "3"}, 2, []string{"--candidates: only with --spec FILE --emulate"}},
	}
	for _, tt := range usage {
		wantExit(t, tt.args, tt.code, tt.want...)
	}
	mslcheck.Require(t)

	dir := t.TempDir()
	src := string(testutil.ReadFile(t, exp))
	bad := strings.Replace(src, "out[tid] = exp(a[tid]);", "out[tid] = exp(a[tid ^ 1]);", 1)
	if bad == src {
		t.Fatal("the edit changed nothing")
	}
	testutil.WriteFile(t, dir, "mlx_exp1d.json", bad)
	broken := filepath.Join(dir, "mlx_exp1d.json")
	tests := []cliCase{
		{[]string{"verify", "--spec", exp, "--emulate", "--candidates", "2"}, 0,
			[]string{"kernel mlx_exp1d emulated on the CPU", "f32    2 of 5 valid  2       2       0", "f16    2 of 5 valid", "emulated 4 candidates: 4 passed, 0 failed"}},
		{[]string{"verify", "--spec", broken, "--emulate", "--dtype", "f32", "--where", "TG=64", "--seed", "3"}, 1,
			[]string{"f32    1 of 1 valid  2       0       1", "FAIL f32 TG=64 on 1000: output out", "FAIL f32 TG=64 on 8:", "1 of 1 candidate failed the emulated verification"}},
		// check runs the same after its static checks.
		{[]string{"check", "--spec", exp, "--emulate", "--backend", "none", "--dtype", "f16"}, 0,
			[]string{"MSL syntax", "kernel mlx_exp1d emulated on the CPU", "f16    5 of 5 valid  2       5       0"}},
		{[]string{"check", "--spec", broken, "--emulate", "--backend", "none", "--dtype", "f32"}, 1,
			[]string{"FAIL f32 TG=", "check: 5 candidates failed the emulated verification"}},
	}
	for _, tt := range tests {
		wantExit(t, tt.args, tt.code, tt.want...)
	}
}

// Without clang, verify --emulate is a usage error (exit 2) saying how to
// get one, not a pass.
func TestVerifyEmulateWithoutClang(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("KERNTUNE_CLANG", "")
	if _, err := os.Stat("../../examples/mlx_exp1d.json"); err != nil {
		t.Fatal(err)
	}
	wantExit(t, []string{"verify", "--spec", "../../examples/mlx_exp1d.json", "--emulate"}, 2, "KERNTUNE_CLANG", "apt-get install clang-14")
}
