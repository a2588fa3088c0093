"""Float64 reference of mlx-lm's Mamba-2 SSM decode step.

Returns (out, state_out): with dA = exp(-exp(A_log) * dt) per (batch, head),
state_out = dA * state_in + dt * x (outer) B, out = state_out . C + D * x;
head j reads group j // (h / hb) of B and C.
"""
import numpy as np


def reference(X, A_log, B, C, D, dt, state_in, n, h, d, hb, ds, **kw):
    per_group = h // hb
    x = X[:, 0]                                    # (n, h, d)
    step = dt[:, 0]                                # (n, h)
    d_a = np.exp(-np.exp(A_log)[None, :] * step)   # (n, h)
    heads_group = np.arange(h) // per_group
    b_h = B[:, 0][:, heads_group]                  # (n, h, ds)
    c_h = C[:, 0][:, heads_group]
    state = (d_a[:, :, None, None] * state_in
             + (x * step[:, :, None])[..., None] * b_h[:, :, None, :])
    out = np.einsum("nhds,nhs->nhd", state, c_h) + x * D[None, :, None]
    return out[:, None], state
