package cuda

import (
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/cudadrv"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

// The CUDA device's limits on GEMM candidates, without a GPU: fragment
// shapes per dtype, TF32 only when allowed, mma.sync only from sm_80, and
// dynamic shared memory up to the opt-in limit.
func TestGemmConstraints(t *testing.T) {
	h100 := cudadrv.DeviceProps{Major: 9, Minor: 0, MaxThreadsPerBlock: 1024, WarpSize: 32, MaxSharedPerBlock: 48 << 10, MaxSharedPerBlockOptin: 232448}
	t4 := h100
	t4.Major, t4.Minor, t4.MaxSharedPerBlockOptin = 7, 5, 64<<10
	k, err := kernels.Get("gemm_av")
	if err != nil {
		t.Fatal(err)
	}
	mma := func(bm, bn, bk, wm, wn, stages, tf32 int) search.Candidate {
		return search.Candidate{"BM": bm, "BN": bn, "BK": bk, "TM": 1, "TN": 1, "PAD": 0, "MMA": 1, "WM": wm, "WN": wn, "STAGES": stages, "TF32": tf32}
	}
	tests := []struct {
		name  string
		props cudadrv.DeviceProps
		allow bool
		dt    kernels.DType
		c     search.Candidate
		want  string
	}{
		{"f16 128×128×32, 3 stages (57 KiB dynamic)", h100, false, kernels.F16, mma(128, 128, 32, 2, 2, 3, 0), ""},
		{"f16 needs BK a multiple of 16", h100, false, kernels.F16, mma(64, 64, 24, 2, 2, 2, 0), "fragments are 16×16×16"},
		{"f16 needs 16-row warp blocks", h100, false, kernels.F16, mma(48, 64, 32, 2, 2, 2, 0), "fragments are 16×16×16"},
		{"f16 with TF32", h100, true, kernels.F16, mma(64, 64, 32, 2, 2, 2, 1), "TF32=1 applies to f32 only"},
		{"f32 without TF32", h100, true, kernels.F32, mma(64, 64, 32, 2, 2, 2, 0), "needs TF32=1"},
		{"f32 TF32 allowed", h100, true, kernels.F32, mma(64, 64, 24, 2, 2, 2, 1), ""},
		{"f32 TF32 not allowed", h100, false, kernels.F32, mma(64, 64, 24, 2, 2, 2, 1), "--allow-tf32"},
		{"past the opt-in limit", h100, true, kernels.F32, mma(128, 256, 64, 2, 4, 4, 1), "bytes of shared memory"},
		{"no mma.sync before sm_80", t4, false, kernels.F16, mma(64, 64, 32, 2, 2, 2, 0), "sm_80"},
		{"SIMT double-buffered", h100, false, kernels.F32, search.Candidate{"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8, "PAD": 4, "MMA": 0, "WM": 1, "WN": 1, "STAGES": 2, "TF32": 0}, ""},
	}
	for _, tt := range tests {
		l := device.Limits{GPU: deviceLimits(tt.props, Options{AllowTF32: tt.allow})}
		var got error
		for _, con := range l.Constraints(k, tt.dt) {
			if err := con.Check(tt.c); err != nil {
				got = err
				break
			}
		}
		switch {
		case tt.want == "" && got != nil:
			t.Errorf("%s: rejected: %v", tt.name, got)
		case tt.want != "" && (got == nil || !strings.Contains(got.Error(), tt.want)):
			t.Errorf("%s: got %v, want an error containing %q", tt.name, got, tt.want)
		}
	}
}
