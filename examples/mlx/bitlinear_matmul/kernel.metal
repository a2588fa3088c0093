// y = x W^T * scale for BitNet's ternary weights, unpacked on the fly:
// byte (r, c) of packed_weights holds four 2-bit codes w - 1 in {-1, 0, 1}
// for output rows r, r + N/4, r + N/2, r + 3N/4 (N = out_features). One
// SIMD-group (the 32 threads along x) per (batch row, packed row): each lane
// takes M = 4 consecutive inputs every 32 * 4, and simd_sum joins the four
// partial dot products. in_features must be a multiple of 4.
constexpr int M = 4;
constexpr int BLOCK = 32;

uint tid = thread_position_in_grid.y;
uint in_offset = thread_position_in_grid.x;

uint batch_idx = tid / (out_features / 4);
uint row_idx = tid % (out_features / 4);

float sum[4] = {0.0};

for (uint i = in_offset * M; i < in_features; i += BLOCK * M) {
    float v[M];
    for (int j=0; j<M; j++) {
        v[j] = x[batch_idx * in_features + i + j];
    }

    for (int j=0; j<M; j++) {
        uint8_t w = packed_weights[row_idx * in_features + i + j];
        sum[0] += v[j] * ((w & 3) - 1);
        sum[1] += v[j] * (((w >> 2) & 3) - 1);
        sum[2] += v[j] * (((w >> 4) & 3) - 1);
        sum[3] += v[j] * (((w >> 6) & 3) - 1);
    }
}

for (int j=0; j<4; j++) {
    sum[j] = simd_sum(sum[j]);
}

// Apply weight scaling by diving them or multiplying them
if (in_offset == 0) {
    float scale = invert_weight_scales ? 1 / weight_scale[0] : weight_scale[0];
    for (int i=0; i<4; i++) {
        out[batch_idx * out_features + row_idx + i * (out_features/4)] = static_cast<T>(sum[i] * scale);
    }
}
