"""Float64 reference of mlx-vlm's gathered-expert mat-vec.

out[t * s + j] = weight[expert_indices[t * s + j]] @ x[t]: each token's row
of x is shared by its s selected experts (BROADCAST_EXPERTS).
"""
import numpy as np


def reference(x, weight, expert_indices, s, **kw):
    experts = expert_indices.astype(np.int64)        # (tok * s,)
    rows = np.repeat(x, s, axis=0)                   # (tok * s, k)
    return np.einsum("rok,rk->ro", weight[experts], rows)
