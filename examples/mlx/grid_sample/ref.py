"""Float64 reference of the documented bilinear grid sample (forward).

kerntune calls reference(**kw) with each input by name as a float64 array
of its buffer's shape, the dims by name and dtype. Out-of-image corners
count as zero, as in the kernel's bounds test.
"""
import numpy as np


def _corners(x, grid):
    """Each corner's (batch, row, column) indices, weight and in-image mask."""
    bsz, h, w, _ = x.shape
    ix = ((grid[..., 0] + 1) * w - 1) / 2
    iy = ((grid[..., 1] + 1) * h - 1) / 2
    x0 = np.floor(ix).astype(np.int64)
    y0 = np.floor(iy).astype(np.int64)
    bidx = np.arange(bsz)[:, None, None] * np.ones_like(x0)
    out = []
    for dy in (0, 1):
        for dx in (0, 1):
            xi, yi = x0 + dx, y0 + dy
            # Bilinear weight: the opposite corner's distances.
            wgt = (1 - np.abs(ix - xi)) * (1 - np.abs(iy - yi))
            inside = (xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1)
            out.append((bidx, np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1), wgt, inside))
    return ix, iy, out


def reference(x, grid, **kw):
    _, _, corners = _corners(x, grid)
    out = np.zeros(grid.shape[:3] + (x.shape[3],))
    for bidx, yi, xi, wgt, inside in corners:
        out += (wgt * inside)[..., None] * x[bidx, yi, xi, :]
    return out
