package cuda

// Dense matrix-unit (tensor core) throughput per SM per clock, in flops
// (a fused multiply-add counts 2), by compute capability: the rates
// NVIDIA's architecture whitepapers give for dense operands with f32
// accumulation, at the boost clock (cudaDevAttrClockRate):
//
//	sm_70  Volta V100 whitepaper: 8 tensor cores × 64 FMA    →  1024 f16
//	sm_75  Turing whitepaper: 8 tensor cores × 64 FMA        →  1024 f16
//	sm_80  A100 whitepaper: 4 tensor cores × 256 FMA         →  2048 f16, 1024 tf32
//	sm_86  GA102 whitepaper (f16 accumulation, the upper rate) 1024 f16,  512 tf32
//	sm_89  Ada whitepaper (f16 accumulation, the upper rate)   1024 f16,  512 tf32
//	sm_90  H100 whitepaper: 4 tensor cores × 512 FMA         →  4096 f16, 2048 tf32
//
// e.g. H100 SXM: 132 SMs × 1.98 GHz × 4096 = 1070 TFLOP/s f16, above the
// datasheet's 989 at its lower boost clock: a floor must not be beaten.
// Architectures not listed get no matrix-unit peak, so their MMA=1
// candidates get no compute floor rather than one from the wrong units.
var mmaFlopsPerSMClock = map[int]struct{ f16, tf32 float64 }{
	70: {1024, 0}, 72: {1024, 0}, 75: {1024, 0},
	80: {2048, 1024}, 86: {1024, 512}, 87: {1024, 512}, 89: {1024, 512},
	90: {4096, 2048},
}

// mmaPeakFacts are the device's matrix-unit peaks as facts
// (peak_mma_f16_gflops, peak_mma_tf32_gflops), none where unknown.
func mmaPeakFacts(cc, sms int, clockHz float64) map[string]float64 {
	r, ok := mmaFlopsPerSMClock[cc]
	if !ok || sms <= 0 || clockHz <= 0 {
		return nil
	}
	f := map[string]float64{"peak_mma_f16_gflops": roundG(float64(sms) * r.f16 * clockHz / 1e9)}
	if r.tf32 > 0 {
		f["peak_mma_tf32_gflops"] = roundG(float64(sms) * r.tf32 * clockHz / 1e9)
	}
	return f
}

func roundG(x float64) float64 { return float64(int64(x + 0.5)) }
