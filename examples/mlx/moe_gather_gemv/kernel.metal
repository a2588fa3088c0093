// Mixture-of-experts mat-vec with gathered weights: output row `row` (one
// per token and selected expert) is W[expert_indices[row]] x, W of shape
// (experts, O, K). One SIMD-group (the 32 threads along x) computes TM = 4
// outputs, each lane taking TN = 4 consecutive inputs every 128; the lanes
// meet through simd_shuffle_down. With BROADCAST_EXPERTS the S experts of a
// token share its input row (row / S).
uint lane = thread_position_in_grid.x;
uint out_block = thread_position_in_grid.y;
uint row = thread_position_in_grid.z;

constexpr int TM = 4;
constexpr int TN = 4;
constexpr int SN = 32;
constexpr int blockN = SN * TN;

if (row >= R) {
    return;
}

int out_row = int(out_block * TM);
if (out_row >= O) {
    return;
}

uint input_row = BROADCAST_EXPERTS ? row / S : row;
uint expert = expert_indices[row];
const device T* in_vec = x + input_row * K;
const device T* mat = weight + expert * O * K + out_row * K;

float result[TM] = {0.0f, 0.0f, 0.0f, 0.0f};
int col = int(lane * TN);
int n_iter = K / blockN;
int leftover = K - blockN * n_iter;

for (int iter = 0; iter < n_iter; ++iter) {
    float v[TN];
    for (int tn = 0; tn < TN; ++tn) {
        v[tn] = static_cast<float>(in_vec[col + tn]);
    }

    for (int tm = 0; tm < TM; ++tm) {
        for (int tn = 0; tn < TN; ++tn) {
            result[tm] +=
                static_cast<float>(mat[tm * K + col + tn]) * v[tn];
        }
    }

    col += blockN;
}

if (leftover > 0) {
    float v[TN];
    for (int tn = 0; tn < TN; ++tn) {
        v[tn] =
            (col + tn < K) ? static_cast<float>(in_vec[col + tn]) : 0.0f;
    }

    for (int tm = 0; tm < TM; ++tm) {
        for (int tn = 0; tn < TN; ++tn) {
            T m =
                (col + tn < K) ? mat[tm * K + col + tn] : T(0);
            result[tm] += static_cast<float>(m) * v[tn];
        }
    }
}

for (int tm = 0; tm < TM; ++tm) {
    for (ushort sn = (SN / 2); sn >= 1; sn >>= 1) {
        result[tm] += simd_shuffle_down(result[tm], sn);
    }
}

if (lane == 0) {
    for (int tm = 0; tm < TM; ++tm) {
        out[row * O + out_row + tm] = static_cast<T>(result[tm]);
    }
}
