package cuda

import (
	"math"
	"testing"
)

// The matrix-unit peaks follow the whitepapers' rates: an A100 (108 SMs,
// 1.41 GHz) reaches 312 TFLOP/s f16 and 156 tf32, an H100 SXM (132 SMs at
// the 1.83 GHz of NVIDIA's datasheet) 989 and 495; an unknown architecture
// has none.
func TestMMAPeakFacts(t *testing.T) {
	for _, c := range []struct {
		cc        int
		sms       int
		clock     float64
		f16, tf32 float64
		tolerance float64
	}{
		{80, 108, 1.41e9, 312e3, 156e3, 0.01},
		{90, 132, 1.83e9, 989e3, 495e3, 0.01},
		{70, 80, 1.53e9, 125e3, 0, 0.01},
	} {
		f := mmaPeakFacts(c.cc, c.sms, c.clock)
		if math.Abs(f["peak_mma_f16_gflops"]/c.f16-1) > c.tolerance {
			t.Errorf("sm_%d: f16 peak %v GFLOP/s, want about %v", c.cc, f["peak_mma_f16_gflops"], c.f16)
		}
		if got, ok := f["peak_mma_tf32_gflops"]; (c.tf32 == 0) == ok || (ok && math.Abs(got/c.tf32-1) > c.tolerance) {
			t.Errorf("sm_%d: tf32 peak %v (present %v), want about %v", c.cc, got, ok, c.tf32)
		}
	}
	if f := mmaPeakFacts(120, 100, 2e9); f != nil {
		t.Errorf("unknown architecture: %v, want no matrix-unit peak", f)
	}
}
