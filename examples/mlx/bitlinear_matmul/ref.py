"""Float64 reference of mlx-lm's BitNet packed ternary mat-mul.

Byte (r, c) of packed_weights holds the codes of rows r + i * n / 4 (i = 0..3)
in bits 2i..2i+1; weight = code - 1. With invert_weight_scales (the spec's
template), out = (x W^T) / weight_scale.
"""
import numpy as np


def reference(x, packed_weights, weight_scale, n, **kw):
    codes = packed_weights.astype(np.int64)
    planes = [((codes >> (2 * i)) & 3) - 1 for i in range(4)]
    weights = np.concatenate(planes, axis=0).astype(np.float64)  # (n, k)
    assert weights.shape[0] == n
    return (x @ weights.T) / weight_scale.ravel()[0]
