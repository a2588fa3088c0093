#!/usr/bin/env python3
"""What an application that replays a captured decode step sees (H200).

Times PyTorch's f16 kernels on the shapes kerntune's bench reports, two
ways: one event pair around each launch (as timing tools often do), and
one replay of a CUDA graph of 40 launches divided by 40, the way serving
stacks run a decode step. Inputs rotate over copies whose total exceeds
twice the last-level cache, as kerntune's timing does, so weights stream
from memory. The matrix-vector products are cuBLAS's (torch.nn.functional.
linear at one row), the same library kerntune's baseline calls; compare
them with bench's BASELINE column. Needs PyTorch with CUDA.
    python3 scripts/gpu-graph-peers.py
"""
import statistics

import torch
import torch.nn.functional as F

dev = "cuda"
L2 = torch.cuda.get_device_properties(0).L2_cache_size


def copies_for(nbytes):
    return int(min(64, max(1, (2 * L2 + nbytes - 1) // nbytes)))


def per_launch_events(fs, n=200):
    ts = []
    for i in range(n):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fs[i % len(fs)]()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) * 1000)
    return statistics.median(ts[20:])


from gpu_graph import graph_replay


rows = []
for n, k in [(896, 896), (1152, 896), (896, 4864), (3584, 896), (9728, 896), (4864, 896), (151936, 896)]:
    w0 = torch.randn(n, k, device=dev, dtype=torch.float16)
    c = copies_for(w0.numel() * 2)
    ws = [w0] + [torch.randn_like(w0) for _ in range(c - 1)]
    xs = [torch.randn(1, k, device=dev, dtype=torch.float16) for _ in range(c)]
    fs = [lambda w=w, x=x: F.linear(x, w) for w, x in zip(ws, xs)]
    rows.append((f"gemv_nt f16 1x{n}x{k} (cuBLAS)", fs, c))
for name, fn in [("softmax", lambda x: torch.softmax(x, -1)),
                 ("rmsnorm", lambda x: F.rms_norm(x, (x.shape[-1],), eps=1e-6))]:
    x0 = torch.randn(4096, 4096, device=dev, dtype=torch.float16)
    c = copies_for(x0.numel() * 2)
    xs = [x0] + [torch.randn_like(x0) for _ in range(c - 1)]
    rows.append((f"{name} f16 4096x4096 (torch)", [lambda x=x: fn(x) for x in xs], c))
print(f"{'kernel':36s} {'copies':>6s} {'events µs':>10s} {'graph µs':>9s}")
for name, fs, c in rows:
    for f in fs * 3:
        f()
    torch.cuda.synchronize()
    print(f"{name:36s} {c:6d} {per_launch_events(fs):10.2f} {graph_replay(fs):9.2f}")
