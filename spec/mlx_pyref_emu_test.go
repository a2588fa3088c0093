package spec

import (
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/kernels"
)

// An mlx example whose reference is a NumPy function (a recurrence) and
// whose inputs are drawn normal and positive is verified by the CPU MSL
// emulation against that reference; a body with the recurrence's order of
// operations changed fails.
func TestMLXPythonReferenceOnCPU(t *testing.T) {
	t.Parallel()
	cc := mslcheck.Require(t)
	requireNumpy(t)
	type m = map[string]int
	cases := []emuCase{
		{example: "mlx_ema_scan.json", cand: m{"TG": 32}, shape: []int{9, 37}},
		{example: "mlx_ema_scan.json", cand: m{"TG": 64}, shape: []int{70, 5}, dt: kernels.F16},
		{example: "mlx_ema_scan.json", cand: m{"TG": 64}, shape: []int{70, 5}, dt: kernels.BF16},
		{example: "mlx_ema_scan.json", cand: m{"TG": 32}, shape: []int{9, 37}, edit: func(s string) string {
			return strings.Replace(s, "h = a * h + float(alpha) * float(x[r * n + j]);", "h = a * (h + float(alpha) * float(x[r * n + j]));", 1)
		}},
	}
	runEmuCases(t, cc, cases)
}
