package metal

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The helper kernels (empty, copy, FMA loop) pass the same clang syntax
// check against the MSL shim header as every generated candidate
// (kernels/gpu/msl_test.go). Skipped without clang unless
// KTDEV_REQUIRE_CLANG is set, as there.
func TestHelperMSLSyntax(t *testing.T) {
	cc := ""
	for _, name := range []string{os.Getenv("KERNTUNE_CLANG"), "clang-14", "clang"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			cc = p
			break
		}
	}
	if cc == "" {
		if os.Getenv("KTDEV_REQUIRE_CLANG") != "" {
			t.Fatal("clang not found but KTDEV_REQUIRE_CLANG is set")
		}
		t.Skip("clang not found; the MSL syntax check needs clang")
	}
	shim, err := filepath.Abs(filepath.Join("..", "..", "kernels", "gpu", "testdata", "mslshim"))
	if err != nil {
		t.Fatal(err)
	}
	check := func(src string) ([]byte, error) {
		path := filepath.Join(t.TempDir(), "helpers.metal")
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return exec.Command(cc, "--target=aarch64-linux-gnu", "-x", "c++", "-std=c++17", "-fsyntax-only",
			"-Wno-unknown-attributes", "-I", shim, path).CombinedOutput()
	}
	if out, err := check(helperSource); err != nil {
		t.Fatalf("helper MSL: %v\n%s", err, out)
	}
	for _, fn := range []string{"kt_empty", "kt_copy", "kt_burn"} {
		if !strings.Contains(helperSource, "kernel void "+fn+"(") {
			t.Errorf("helper kernel %s missing", fn)
		}
	}
	// The check has teeth: a CUDA-only intrinsic is rejected.
	if out, err := check(strings.Replace(helperSource, "fma(a,", "__fmaf_rn(a,", 1)); err == nil {
		t.Fatalf("broken helper MSL passed the syntax check:\n%s", out)
	}
}
