// One decode step of a Mamba-2 selective state space: for every
// (batch, head) n = thread_position_in_grid.z and head channel d_idx, the
// state row state[n, d_idx, :] (Ds values) decays by dA = exp(A * dt) and
// takes dt * x * B; the output is C . state + D * x. The 32 lanes of a
// SIMD-group (threadgroup x) each own Ds / 32 state entries and meet in
// simd_sum. Heads share B and C by groups of G = H / groups.
auto n = thread_position_in_grid.z;
auto h_idx = n % H;
auto g_idx = n / G;
constexpr int n_per_t = Ds / 32;

auto x = X + n * Dh;
out += n * Dh;
auto i_state = state_in + n * Dh * Ds;
auto o_state = state_out + n * Dh * Ds;

// C and B have shape [batch, group, state_dim]
// C and B need to be offset by group size
auto C_ = C + g_idx * Ds;
auto B_ = B + g_idx * Ds;

auto ds_idx = thread_position_in_threadgroup.x;
auto d_idx = thread_position_in_grid.y;

auto dt_ = static_cast<float>(dt[n]);
auto A = -fast::exp(static_cast<float>(A_log[h_idx]));
auto dA = fast::exp(A * dt_);

float acc = 0.0;
auto x_ = static_cast<float>(x[d_idx]);

for (int i = 0; i < n_per_t; ++i) {
    auto s_idx = n_per_t * ds_idx + i;
    auto idx = d_idx * Ds + s_idx;
    auto dB_by_x = x_ * dt_ * static_cast<float>(B_[s_idx]);
    auto state = dA * i_state[idx] + dB_by_x;
    o_state[idx] = static_cast<U>(state);
    acc += state * C_[s_idx];
}
acc = simd_sum(acc);
if (thread_index_in_simdgroup == 0) {
    out[d_idx] = static_cast<T>(acc + x_ * D[h_idx]);
}
