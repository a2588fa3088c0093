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
