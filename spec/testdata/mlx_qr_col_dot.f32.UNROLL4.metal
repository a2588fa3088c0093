#include <metal_stdlib>
using namespace metal;
template <typename T, int UNROLL>
[[kernel]] void custom_kernel_qr_col_dot__float_4_float_float_uint32_tc_float(
  const device float* Q [[buffer(0)]],
  const device float* v [[buffer(1)]],
  const constant uint32_t* shape [[buffer(2)]],
  device float* out [[buffer(3)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
// c = Q^T v: grid thread j dots column j of Q (m x k, row-major) with v
// (m elements); shape holds [m, k]. UNROLL independent partial sums keep
// several loads in flight per thread.
uint j = thread_position_in_grid.x;
uint m = shape[0];
uint k = shape[1];
if (j >= k) {
  return;
}
float acc[UNROLL];
for (int u = 0; u < UNROLL; ++u) {
  acc[u] = 0.0f;
}
uint i = 0;
for (; i + UNROLL <= m; i += UNROLL) {
  for (int u = 0; u < UNROLL; ++u) {
    acc[u] = fma(float(Q[(i + u) * k + j]), float(v[i + u]), acc[u]);
  }
}
for (; i < m; ++i) {
  acc[0] = fma(float(Q[i * k + j]), float(v[i]), acc[0]);
}
float s = 0.0f;
for (int u = 0; u < UNROLL; ++u) {
  s += acc[u];
}
out[j] = T(s);

}

template [[host_name("custom_kernel_qr_col_dot__float_4_float_float_uint32_tc_float")]] [[kernel]] decltype(custom_kernel_qr_col_dot__float_4_float_float_uint32_tc_float<float, 4>) custom_kernel_qr_col_dot__float_4_float_float_uint32_tc_float<float, 4>;
