// y = dequant(W) x, MLX's affine 4-bit layout: row r of W is k/8 uint32
// words, value j of a word in bits 4j..4j+3; group g of 64 values has
// scale s and bias b, w = s * q + b. TPR threads share a row, each taking
// every TPR-th word; ROWS rows per threadgroup; partial sums meet in
// threadgroup memory.
uint tid = thread_position_in_threadgroup.x;
uint lane = tid % TPR;
uint row = threadgroup_position_in_grid.x * ROWS + tid / TPR;
uint n = dims[0];
uint k = dims[1];
threadgroup float part[TPR * ROWS];
float acc = 0.0f;
if (row < n) {
  uint words = k / 8;
  uint groups = k / GROUP_SIZE;
  for (uint wd = lane; wd < words; wd += TPR) {
    uint32_t q = w[row * words + wd];
    uint g = (wd * 8) / GROUP_SIZE;
    float s = float(scales[row * groups + g]);
    float b = float(biases[row * groups + g]);
    for (uint j = 0; j < 8; ++j) {
      float xv = float(x[wd * 8 + j]);
      acc = fma(xv, fma(s, float((q >> (4 * j)) & 0xfu), b), acc);
    }
  }
}
part[tid] = acc;
threadgroup_barrier(mem_flags::mem_threadgroup);
if (lane == 0 && row < n) {
  float sum = 0.0f;
  for (uint i = 0; i < TPR; ++i) {
    sum += part[tid + i];
  }
  y[row] = static_cast<T>(sum);
}
