// C = A V with A m x k, V k x n, C m x n (row-major); shape holds [m, n, k].
// A threadgroup of BN x BM threads computes a BM x BN tile of C, one element
// per thread, staging BK-deep slices of A and V in threadgroup memory. No
// thread returns early: every thread takes part in the loads and barriers.
threadgroup float As[BM][BK];
threadgroup float Vs[BK][BN];
const uint m = shape[0];
const uint n = shape[1];
const uint k = shape[2];
const uint tx = thread_position_in_threadgroup.x;
const uint ty = thread_position_in_threadgroup.y;
const uint row0 = threadgroup_position_in_grid.y * BM;
const uint col0 = threadgroup_position_in_grid.x * BN;
const uint lid = ty * BN + tx;
float acc = 0.0f;
for (uint k0 = 0; k0 < k; k0 += BK) {
  for (uint e = lid; e < BM * BK; e += BM * BN) {
    const uint r = e / BK, c = e % BK;
    As[r][c] = (row0 + r < m && k0 + c < k) ? float(A[(row0 + r) * k + k0 + c]) : 0.0f;
  }
  for (uint e = lid; e < BK * BN; e += BM * BN) {
    const uint r = e / BN, c = e % BN;
    Vs[r][c] = (k0 + r < k && col0 + c < n) ? float(V[(k0 + r) * n + col0 + c]) : 0.0f;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint p = 0; p < BK; ++p) {
    acc = fma(As[ty][p], Vs[p][tx], acc);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (row0 + ty < m && col0 + tx < n) {
  C[(row0 + ty) * n + col0 + tx] = T(acc);
}
