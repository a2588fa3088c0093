"""Checks each example's NumPy reference (ref.py) against a second,
independent implementation written here as plain loops that follow the
kernel thread by thread, on small random inputs drawn as the spec draws
them. A reference that disagrees with its loop version is wrong for the
kernel. Run: python3 examples/mlx/check_refs.py (needs numpy).
"""
import importlib.util
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name):
    spec = importlib.util.spec_from_file_location(name + "_ref", os.path.join(HERE, name, "ref.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.reference


def floor_i(v):
    return int(math.floor(v))


# --- grid sample (forward): one output element at a time ---------------------
def grid_sample_loops(x, grid):
    bsz, h, w, c = x.shape
    _, gh, gw, _ = grid.shape
    out = np.zeros((bsz, gh, gw, c))
    for b in range(bsz):
        for i in range(gh):
            for j in range(gw):
                ix = ((grid[b, i, j, 0] + 1) * w - 1) / 2
                iy = ((grid[b, i, j, 1] + 1) * h - 1) / 2
                x0, y0 = floor_i(ix), floor_i(iy)
                for ch in range(c):
                    acc = 0.0
                    for yy, xx, wgt in ((y0, x0, (x0 + 1 - ix) * (y0 + 1 - iy)),
                                        (y0, x0 + 1, (ix - x0) * (y0 + 1 - iy)),
                                        (y0 + 1, x0, (x0 + 1 - ix) * (iy - y0)),
                                        (y0 + 1, x0 + 1, (ix - x0) * (iy - y0))):
                        if 0 <= yy < h and 0 <= xx < w:
                            acc += wgt * x[b, yy, xx, ch]
                    out[b, i, j, ch] = acc
    return out


# --- grid sample VJP: the kernel's per-thread arithmetic ----------------------
def grid_sample_vjp_loops(x, grid, cot):
    bsz, h, w, c = x.shape
    _, gh, gw, _ = grid.shape
    x_grad = np.zeros_like(x)
    grid_grad = np.zeros_like(grid)
    for b in range(bsz):
        for i in range(gh):
            for j in range(gw):
                ix = ((grid[b, i, j, 0] + 1) * w - 1) / 2
                iy = ((grid[b, i, j, 1] + 1) * h - 1) / 2
                ix_nw, iy_nw = floor_i(ix), floor_i(iy)
                ix_ne, iy_ne = ix_nw + 1, iy_nw
                ix_sw, iy_sw = ix_nw, iy_nw + 1
                ix_se, iy_se = ix_nw + 1, iy_nw + 1
                nw = (ix_se - ix) * (iy_se - iy)
                ne = (ix - ix_sw) * (iy_sw - iy)
                sw = (ix_ne - ix) * (iy - iy_ne)
                se = (ix - ix_nw) * (iy - iy_nw)
                gix = giy = 0.0

                def inside(yy, xx):
                    return 0 <= yy <= h - 1 and 0 <= xx <= w - 1

                for ch in range(c):
                    ct = cot[b, i, j, ch]
                    if inside(iy_nw, ix_nw):
                        x_grad[b, iy_nw, ix_nw, ch] += nw * ct
                        v = x[b, iy_nw, ix_nw, ch]
                        gix -= v * (iy_se - iy) * ct
                        giy -= v * (ix_se - ix) * ct
                    if inside(iy_ne, ix_ne):
                        x_grad[b, iy_ne, ix_ne, ch] += ne * ct
                        v = x[b, iy_ne, ix_ne, ch]
                        gix += v * (iy_sw - iy) * ct
                        giy -= v * (ix - ix_sw) * ct
                    if inside(iy_sw, ix_sw):
                        x_grad[b, iy_sw, ix_sw, ch] += sw * ct
                        v = x[b, iy_sw, ix_sw, ch]
                        gix -= v * (iy - iy_ne) * ct
                        giy += v * (ix_ne - ix) * ct
                    if inside(iy_se, ix_se):
                        x_grad[b, iy_se, ix_se, ch] += se * ct
                        v = x[b, iy_se, ix_se, ch]
                        gix += v * (iy - iy_nw) * ct
                        giy += v * (ix - ix_nw) * ct
                grid_grad[b, i, j, 0] += gix * (w // 2)
                grid_grad[b, i, j, 1] += giy * (h // 2)
    return x_grad, grid_grad


# --- SSM step: one (n, head, channel) row at a time ---------------------------
def ssm_loops(X, A_log, B, C, D, dt, state_in, n, h, d, hb, ds):
    per_group = h // hb
    out = np.zeros((n, 1, h, d))
    state_out = np.zeros_like(state_in)
    for bb in range(n):
        for hh in range(h):
            g = hh // per_group
            step = dt[bb, 0, hh]
            d_a = math.exp(-math.exp(A_log[hh]) * step)
            for dd in range(d):
                xv = X[bb, 0, hh, dd]
                acc = 0.0
                for s in range(ds):
                    st = d_a * state_in[bb, hh, dd, s] + xv * step * B[bb, 0, g, s]
                    state_out[bb, hh, dd, s] = st
                    acc += st * C[bb, 0, g, s]
                out[bb, 0, hh, dd] = acc + xv * D[hh]
    return out, state_out


# --- gated delta: one (batch, value head, value channel) row at a time -------
def gated_delta_loops(q, k, v, g, beta, state_in, b, t, hk, hv, dk, dv):
    y = np.zeros((b, t, hv, dv))
    state_out = np.zeros_like(state_in)
    for bb in range(b):
        for vh in range(hv):
            kh = vh // (hv // hk)
            for c in range(dv):
                row = [state_in[bb, vh, c, i] for i in range(dk)]
                for s in range(t):
                    row = [r * g[bb, s, vh] for r in row]
                    kv_mem = sum(row[i] * k[bb, s, kh, i] for i in range(dk))
                    delta = (v[bb, s, vh, c] - kv_mem) * beta[bb, s, vh]
                    row = [row[i] + k[bb, s, kh, i] * delta for i in range(dk)]
                    y[bb, s, vh, c] = sum(row[i] * q[bb, s, kh, i] for i in range(dk))
                state_out[bb, vh, c, :] = row
    return y, state_out


# --- bitlinear: one output element at a time ----------------------------------
def bitlinear_loops(x, packed, scale, m, k, n):
    out = np.zeros((m, n))
    quarter = n // 4
    for r in range(m):
        for o in range(n):
            prow, plane = o % quarter, o // quarter
            acc = 0.0
            for c in range(k):
                code = (int(packed[prow, c]) >> (2 * plane)) & 3
                acc += x[r, c] * (code - 1)
            out[r, o] = acc / scale[0]
    return out


# --- gathered-expert mat-vec: one output element at a time -------------------
def moe_loops(x, weight, idx, tok, s, e, o, k):
    out = np.zeros((tok * s, o))
    for r in range(tok * s):
        ex = int(idx[r])
        for j in range(o):
            out[r, j] = sum(weight[ex, j, c] * x[r // s, c] for c in range(k))
    return out


# --- MRoPE: one kernel thread (slot) at a time --------------------------------
def mrope_loops(x, pos_ids, inv_freq, selector, b, nh, ln, dim, rd):
    half = rd // 2
    slots = half + dim - rd
    out = np.full(x.shape, np.nan)
    for elem in range(b * nh * ln * slots):
        slot, tmp = elem % slots, elem // slots
        t, tmp = tmp % ln, tmp // ln
        h, bb = tmp % nh, tmp // nh
        if slot >= half:
            d = rd + slot - half
            out[bb, h, t, d] = x[bb, h, t, d]
            continue
        pos = np.float32(pos_ids[int(selector[slot]), bb, t])
        angle = float(pos * np.float32(inv_freq[slot]))
        c, s_ = math.cos(angle), math.sin(angle)
        xv, xp = x[bb, h, t, slot], x[bb, h, t, slot + half]
        out[bb, h, t, slot] = xv * c - xp * s_
        out[bb, h, t, slot + half] = xp * c + xv * s_
    return out


def uni(rng, shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape)


def cases(rng):
    """(name, reference kwargs, expected outputs) for each example and shape."""
    for dims in ([1, 3, 5, 3, 2, 3], [2, 4, 3, 7, 3, 2], [1, 2, 2, 1, 5, 1]):
        b, h, w, c, gh, gw = dims
        x = uni(rng, (b, h, w, c))
        grid = uni(rng, (b, gh, gw, 2), -0.5, 0.5)
        kw = dict(x=x, grid=grid, b=b, h=h, w=w, c=c, gh=gh, gw=gw, dtype="f32")
        yield "grid_sample", kw, (grid_sample_loops(x, grid),)
        # The forward's loop version also on grids reaching outside the image.
        grid = uni(rng, (b, gh, gw, 2), -1.0, 1.0)
        kw = dict(kw, grid=grid)
        yield "grid_sample", kw, (grid_sample_loops(x, grid),)
    for dims in ([1, 3, 5, 3, 2, 3], [2, 4, 3, 37, 3, 2], [1, 1, 2, 1, 5, 1], [1, 5, 5, 2, 4, 4]):
        b, h, w, c, gh, gw = dims
        x = uni(rng, (b, h, w, c))
        grid = uni(rng, (b, gh, gw, 2))
        cot = uni(rng, (b, gh, gw, c))
        kw = dict(x=x, grid=grid, cotangent=cot, b=b, h=h, w=w, c=c, gh=gh, gw=gw, dtype="f32")
        yield "grid_sample_vjp", kw, grid_sample_vjp_loops(x, grid, cot)
    for dims in ([1, 3, 5, 1, 32], [2, 4, 7, 2, 64], [3, 1, 9, 1, 32], [1, 4, 3, 4, 32]):
        n, h, d, hb, ds = dims
        arrs = dict(X=uni(rng, (n, 1, h, d)), A_log=uni(rng, (h,), -1, 1.5),
                    B=uni(rng, (n, 1, hb, ds)), C=uni(rng, (n, 1, hb, ds)), D=uni(rng, (h,)),
                    dt=uni(rng, (n, 1, h), 0.001, 1), state_in=uni(rng, (n, h, d, ds)))
        kw = dict(arrs, n=n, h=h, d=d, hb=hb, ds=ds, dtype="f32")
        yield "ssm_step", kw, ssm_loops(**arrs, n=n, h=h, d=d, hb=hb, ds=ds)
    for dims in ([1, 3, 1, 2, 32, 5], [2, 2, 2, 4, 64, 9], [1, 1, 1, 1, 32, 1]):
        b, t, hk, hv, dk, dv = dims
        r = 1 / math.sqrt(dk)
        arrs = dict(q=uni(rng, (b, t, hk, dk), -r, r), k=uni(rng, (b, t, hk, dk), -r, r),
                    v=uni(rng, (b, t, hv, dv)), g=uni(rng, (b, t, hv), 0.5, 1),
                    beta=uni(rng, (b, t, hv), 0, 1), state_in=uni(rng, (b, hv, dv, dk)))
        kw = dict(arrs, T=np.float64(t), b=b, t=t, hk=hk, hv=hv, dk=dk, dv=dv, dtype="f32")
        yield "gated_delta_step", kw, gated_delta_loops(**arrs, b=b, t=t, hk=hk, hv=hv, dk=dk, dv=dv)
    for dims in ([3, 36, 20], [1, 4, 4], [2, 132, 12]):
        m, k, n = dims
        x = uni(rng, (m, k))
        packed = rng.integers(0, 256, size=(n // 4, k)).astype(np.float64)
        scale = uni(rng, (1,), 0.5, 2)
        kw = dict(x=x, packed_weights=packed, weight_scale=scale, m=m, k=k, n=n, dtype="f32")
        yield "bitlinear_matmul", kw, (bitlinear_loops(x, packed, scale, m, k, n),)
    for dims in ([3, 2, 5, 12, 36], [1, 3, 4, 16, 200], [2, 1, 3, 4, 5]):
        tok, s, e, o, k = dims
        x = uni(rng, (tok, k))
        weight = uni(rng, (e, o, k))
        idx = rng.integers(0, e, size=(tok * s,)).astype(np.float64)
        kw = dict(x=x, weight=weight, expert_indices=idx, tok=tok, s=s, e=e, o=o, k=k, dtype="f32")
        yield "moe_gather_gemv", kw, (moe_loops(x, weight, idx, tok, s, e, o, k),)
    for dims in ([1, 3, 5, 10, 6], [2, 1, 3, 8, 8], [1, 2, 1, 6, 2]):
        b, nh, ln, dim, rd = dims
        x = uni(rng, (b, nh, ln, dim))
        pos_ids = rng.integers(0, 4096, size=(3, b, ln)).astype(np.float64)
        inv_freq = uni(rng, (rd // 2,), 0.0001, 1)
        selector = rng.integers(0, 3, size=(rd // 2,)).astype(np.float64)
        kw = dict(x=x, position_ids=pos_ids, inv_freq=inv_freq, position_selector=selector,
                  b=b, nh=nh, seq=ln, dim=dim, rd=rd, dtype="f32")
        yield "mrope", kw, (mrope_loops(x, pos_ids, inv_freq, selector, b, nh, ln, dim, rd),)


def as_tuple(res):
    if isinstance(res, (tuple, list)):
        return tuple(res)
    return (res,)


def main():
    rng = np.random.default_rng(40)
    refs = {}
    failed = 0
    count = 0
    for name, kw, want in cases(rng):
        if name not in refs:
            refs[name] = load(name)
        got = as_tuple(refs[name](**kw))
        count += 1
        if len(got) != len(want):
            print(f"FAIL {name}: {len(got)} outputs, want {len(want)}")
            failed += 1
            continue
        for i, (g, w) in enumerate(zip(got, want)):
            g = np.asarray(g, dtype=np.float64)
            if g.size != w.size or not np.allclose(g.ravel(), w.ravel(), rtol=1e-10, atol=1e-12):
                err = np.max(np.abs(g.ravel() - w.ravel())) if g.size == w.size else "size"
                print(f"FAIL {name} output {i}: max abs diff {err}")
                failed += 1
    # Teeth: the exact derivative (W / 2 in floats) differs from what the
    # documented VJP computes (int W / 2) on an odd width, and the check sees it.
    x = uni(rng, (1, 3, 5, 2))
    grid = uni(rng, (1, 2, 2, 2))
    cot = uni(rng, (1, 2, 2, 2))
    _, gg = refs["grid_sample_vjp"](x=x, grid=grid, cotangent=cot, dtype="f32")
    _, exact = grid_sample_vjp_loops(x, grid, cot)
    exact[..., 0] *= (5 / 2) / (5 // 2)
    exact[..., 1] *= (3 / 2) / (3 // 2)
    if np.allclose(gg, exact, rtol=1e-10, atol=1e-12):
        print("FAIL grid_sample_vjp: the float W / 2 variant is not told apart")
        failed += 1
    print(f"{count} cases, {failed} failures")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
