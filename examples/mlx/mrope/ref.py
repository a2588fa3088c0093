"""Float64 reference of mlx-vlm's MRoPE apply (half-split pairs, 3-D ids).

Pair (d, d + rd/2) of each head vector rotates by angle = pos * inv_freq[d],
pos = position_ids[position_selector[d], batch, t]; dims from rd on are
copied. The kernel forms the angle in float32 (pos up to thousands, so
its rounding is far above float32's epsilon in the result); the reference
does the same and evaluates cos and sin in float64.
"""
import numpy as np


def reference(x, position_ids, inv_freq, position_selector, rd, **kw):
    half = rd // 2
    axes = position_selector.astype(np.int64)                       # (half,)
    pos = position_ids[axes].transpose(1, 2, 0)                     # (b, len, half)
    angle = (pos.astype(np.float32) * inv_freq.astype(np.float32)).astype(np.float64)
    c = np.cos(angle)[:, None]                                      # (b, 1, len, half)
    s = np.sin(angle)[:, None]
    out = x.copy()
    lo, hi = x[..., :half], x[..., half:rd]
    out[..., :half] = lo * c - hi * s
    out[..., half:rd] = hi * c + lo * s
    return out
