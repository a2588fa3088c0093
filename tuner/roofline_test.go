package tuner

import (
	"math"
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

// peaksBackend is the fake backend with a device's peaks as facts.
type peaksBackend struct {
	*fakeBackend
	backend string
	facts   map[string]float64
}

func (b peaksBackend) Info() device.DeviceInfo {
	info := b.fakeBackend.Info()
	info.Backend, info.Facts = b.backend, b.facts
	return info
}

// A compute-bound candidate's floor is the peak of the units it runs on:
// the matrix units' for MMA=1 (TF32's for f32 with TF32=1, f16's for
// bf16), the SIMT
// peak otherwise; Metal's simdgroup_matrix runs on the SIMT lanes; with no
// matrix-unit peak known an MMA=1 candidate gets no compute floor.
func TestRooflineUsesTheCandidatesUnits(t *testing.T) {
	k, err := kernels.Get("gemm_av")
	if err != nil {
		t.Fatal(err)
	}
	cuda := map[string]float64{"peak_gflops": 60e3, "peak_mma_f16_gflops": 990e3, "peak_mma_tf32_gflops": 495e3, "bandwidth_gbps": 3000}
	for _, c := range []struct {
		name    string
		backend string
		facts   map[string]float64
		dt      kernels.DType
		cand    search.Candidate
		peak    float64 // GFLOP/s the floor should use; 0: no floor
	}{
		{"cuda f16 MMA=1", "cuda", cuda, kernels.F16, search.Candidate{"MMA": 1}, 990e3},
		{"cuda bf16 MMA=1 (the f16 rate)", "cuda", cuda, kernels.BF16, search.Candidate{"MMA": 1}, 990e3},
		{"cuda f32 TF32", "cuda", cuda, kernels.F32, search.Candidate{"MMA": 1, "TF32": 1}, 495e3},
		{"cuda SIMT", "cuda", cuda, kernels.F16, search.Candidate{"MMA": 0}, 60e3},
		{"metal MMA=1", "metal", map[string]float64{"peak_gflops": 14e3}, kernels.F16, search.Candidate{"MMA": 1}, 14e3},
		{"cuda, unknown units", "cuda", map[string]float64{"peak_gflops": 60e3}, kernels.F16, search.Candidate{"MMA": 1}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			tu := New(peaksBackend{&fakeBackend{}, c.backend, c.facts}, Config{})
			cs := kernels.Case{Shape: []int{1024, 1024, 1024}}
			m := &live{t: tu, task: Task{Kernel: k, DType: c.dt, Cases: []kernels.Case{cs}},
				problems: []*loaded{{p: &kernels.Problem{Kernel: k, DType: c.dt, Case: cs}}}}
			median := 0.004 // seconds
			rs := m.roofline(c.cand, median)
			want := 0.0
			if c.peak > 0 {
				want = 100 * rs.Flops / (c.peak * 1e9) / median
			}
			if rs.BoundByData || math.Abs(rs.PctOfFloor-want) > 0.001 {
				t.Errorf("%% of floor %v, want %.3f (peak %v GFLOP/s)", rs.PctOfFloor, want, c.peak)
			}
		})
	}
}
