"""Float64 reference of mlx_ema_scan.json: the recurrence as its author
would write it in NumPy, one step along the rows' last dim at a time."""

import numpy as np


def reference(x, decay, alpha, **kw):
    """h[r] = decay[r] * h[r] + alpha * x[r, j] for j = 0..n-1, from h = 0:
    every state (y) and the last one (h_last)."""
    h = np.zeros(x.shape[0])
    y = np.empty_like(x)
    for j in range(x.shape[1]):
        h = decay * h + alpha * x[:, j]
        y[:, j] = h
    return {"y": y, "h_last": h}
