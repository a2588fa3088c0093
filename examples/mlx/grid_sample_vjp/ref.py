"""Float64 reference of the documented bilinear grid sample VJP.

Returns (x_grad, grid_grad): the gradients of sum(cotangent * out) with
respect to x and grid, where out is the bilinear sample (zero outside the
image). The documented kernel scales the grid gradient by W / 2 and H / 2
computed in integers (`T gix_mult = W / 2;` with int W), so this reference
uses w // 2 and h // 2: what the kernel computes, exact for even sizes.
"""
import numpy as np


def reference(x, grid, cotangent, **kw):
    bsz, h, w, c = x.shape
    ix = ((grid[..., 0] + 1) * w - 1) / 2
    iy = ((grid[..., 1] + 1) * h - 1) / 2
    x0 = np.floor(ix).astype(np.int64)
    y0 = np.floor(iy).astype(np.int64)
    bidx = np.arange(bsz)[:, None, None] * np.ones_like(x0)
    x_grad = np.zeros_like(x)
    d_ix = np.zeros(ix.shape)
    d_iy = np.zeros(iy.shape)
    for dy in (0, 1):
        for dx in (0, 1):
            xi, yi = x0 + dx, y0 + dy
            # Weight (1 - |ix - xi|)(1 - |iy - yi|); its slopes in ix and iy.
            wx, wy = 1 - np.abs(ix - xi), 1 - np.abs(iy - yi)
            sx = np.where(dx == 1, 1.0, -1.0)
            sy = np.where(dy == 1, 1.0, -1.0)
            inside = (xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1)
            yc, xc = np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)
            contrib = (wx * wy * inside)[..., None] * cotangent
            np.add.at(x_grad, (bidx, yc, xc), contrib)
            dot = np.sum(x[bidx, yc, xc, :] * cotangent, axis=-1) * inside
            d_ix += sx * wy * dot
            d_iy += sy * wx * dot
    grid_grad = np.stack([d_ix * (w // 2), d_iy * (h // 2)], axis=-1)
    return x_grad, grid_grad
