package metal

// helperSource: an empty kernel (dispatch overhead), a float4 copy
// (bandwidth, warmup) and an FMA loop (arithmetic rate, warmup).
const helperSource = `#include <metal_stdlib>
using namespace metal;
kernel void kt_empty(uint tid [[thread_position_in_grid]]) {}
kernel void kt_copy(device const float4* src [[buffer(0)]], device float4* dst [[buffer(1)]],
                    constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i < n) dst[i] = src[i];
}
kernel void kt_burn(device float* dst [[buffer(0)]], constant uint& iters [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) {
  float a = (float)(i & 255u) * 0.001f, b = a + 0.5f, c = a + 0.25f, d = a + 0.125f;
  for (uint k = 0; k < iters; ++k) {
    a = fma(a, 0.9999f, 0.0001f); b = fma(b, 0.9999f, 0.0001f);
    c = fma(c, 0.9999f, 0.0001f); d = fma(d, 0.9999f, 0.0001f);
  }
  dst[i] = a + b + c + d;
}
`

// Helper geometry.
const (
	warmBytes   = 16 << 20  // each of the two warmup buffers
	bwBytes     = 256 << 20 // each of the two bandwidth buffers: far past any SLC
	burnGroups  = 4096
	burnThreads = 256
	burnIters   = 1024
	burnFlops   = burnGroups * burnThreads * burnIters * 8 // 4 FMAs per iteration
)
