"""Float64 reference of mlx-lm's gated delta rule over T steps.

Returns (y, state_out). Per step t, for each value head (key head
hv // (Hv / Hk)): S = g S; S += (beta (v - S k)) (outer) k; y = S q,
with S of shape (dv, dk). T arrives as a 0-d input; the dim t is the same.
"""
import numpy as np


def reference(q, k, v, g, beta, state_in, t, hk, hv, **kw):
    rep = hv // hk
    qh = np.repeat(q, rep, axis=2)   # (b, t, hv, dk)
    kh = np.repeat(k, rep, axis=2)
    state = state_in.copy()          # (b, hv, dv, dk)
    y = np.zeros(v.shape)
    for step in range(t):
        state = state * g[:, step][..., None, None]
        kv_mem = np.einsum("bhvk,bhk->bhv", state, kh[:, step])
        delta = (v[:, step] - kv_mem) * beta[:, step][..., None]
        state = state + delta[..., None] * kh[:, step][:, :, None, :]
        y[:, step] = np.einsum("bhvk,bhk->bhv", state, qh[:, step])
    return y, state
