package metal

import (
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/mslcheck"
)

// The helper kernels (empty, copy, FMA loop) pass the same clang checks
// against the MSL stand-in headers as every generated candidate
// (kernels/gpu/msl_test.go): syntax, and address spaces. Skipped without
// clang unless KTDEV_REQUIRE_CLANG is set, as there.
func TestHelperMSLSyntax(t *testing.T) {
	chk, err := mslcheck.New(mslcheck.Require(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := mslcheck.IncludeFirst(helperSource); err != nil {
		t.Error(err)
	}
	for _, mode := range mslcheck.Modes {
		if err := chk.CheckText(mode, "helper MSL", helperSource); err != nil {
			t.Fatal(err)
		}
		// The check has teeth: a CUDA-only intrinsic is rejected.
		if err := chk.CheckText(mode, "broken helper MSL", strings.Replace(helperSource, "fma(a,", "__fmaf_rn(a,", 1)); err == nil {
			t.Fatalf("%s check: broken helper MSL passed", mode)
		}
	}
	for _, fn := range []string{"kt_empty", "kt_copy", "kt_burn"} {
		if !strings.Contains(helperSource, "kernel void "+fn+"(") {
			t.Errorf("helper kernel %s missing", fn)
		}
	}
}
