// SwiGLU as a raw Metal source: kerntune puts #include <metal_stdlib> and
// using namespace metal; first, then #defines the parameters (TG, EPT),
// NTHREADS and KT_F16, then this text (whose own include is then a no-op).
// Buffers, then scalars, in order.
#include <metal_stdlib>
using namespace metal;
#if KT_F16
typedef half elem;
#else
typedef float elem;
#endif

[[max_total_threads_per_threadgroup(NTHREADS)]] kernel void kt_swiglu_raw(
    device const elem* gate [[buffer(0)]], device const elem* up [[buffer(1)]], device elem* y [[buffer(2)]],
    constant int& rows [[buffer(3)]], constant int& cols [[buffer(4)]],
    uint3 tid [[thread_position_in_threadgroup]], uint3 gid [[threadgroup_position_in_grid]]) {
  const int total = rows * cols;
  const int base = int(gid.x) * (NTHREADS * EPT);
  for (int e = 0; e < EPT; ++e) {
    const int i = base + e * NTHREADS + int(tid.x);
    if (i < total) {
      const float g = float(gate[i]);
      y[i] = elem(g / (1.0f + exp(-g)) * float(up[i]));
    }
  }
}
