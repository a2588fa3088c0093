#!/usr/bin/env python3
"""What a kernel of gemv_nt's bytes can take when timed as kerntune times it (H200).

For each small-n decode shape, the f16 weights' bytes B = 2·n·k, timed as
one replay of a CUDA graph of 40 launches divided by 40 on inputs that
rotate over copies whose total exceeds twice the last-level cache (as
kerntune's CUDA timing does), with PyTorch:

  empty     a one-element add: what a launch costs in the graph with no bytes
  copy      a device copy of B/2 bytes (B bytes of DRAM traffic, read + write)
  sum       torch.sum of the weights in f32 (reads B bytes, as the gemv does)
  cuBLAS    torch.nn.functional.linear at one row (bench's baseline)

and B over the copy bandwidth (bench's floor). copy and sum bound what a
stand-alone kernel streaming B bytes gets from this timing; empty + floor is
the time of a kernel that streamed at the copy bandwidth from its first
cycle. Needs PyTorch with CUDA.
    python3 scripts/gpu-gemv-ceiling.py
"""

import torch
import torch.nn.functional as F

dev = "cuda"
L2 = torch.cuda.get_device_properties(0).L2_cache_size


def copies_for(nbytes):
    return int(min(64, max(1, (2 * L2 + nbytes - 1) // nbytes)))


from gpu_graph import graph_replay as _graph_replay


def graph_replay(fs, per=40, reps=30):
    return _graph_replay(fs, per, reps, warm=2)


def batched_copy_bw():
    big = torch.empty(1 << 28, dtype=torch.uint8, device=dev)
    big2 = torch.empty_like(big)
    for _ in range(3):
        big2.copy_(big)
    torch.cuda.synchronize()
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(20):
        big2.copy_(big)
    b.record()
    b.synchronize()
    return 2 * big.numel() * 20 / (a.elapsed_time(b) * 1e-3) / 1e9


bw = batched_copy_bw()
print(f"copy bandwidth (256 MiB copies, back to back): {bw:.0f} GB/s")
one = torch.zeros(1, device=dev)
empty = graph_replay([lambda: one.add_(1)])
print(f"{'shape':12s} {'copies':>6s} {'floor':>6s} {'empty':>6s} {'e+floor':>7s} {'copy':>6s} {'sum':>6s} {'cuBLAS':>6s}  (µs)")
for n, k in [(9728, 896), (4864, 896)]:
    nbytes = 2 * n * k
    c = copies_for(nbytes)
    ws = [torch.randn(n, k, device=dev, dtype=torch.float16) for _ in range(c)]
    xs = [torch.randn(1, k, device=dev, dtype=torch.float16) for _ in range(c)]
    halves = [w.view(-1)[: n * k // 2] for w in ws]
    outs = [torch.empty_like(h) for h in halves]
    copy = graph_replay([lambda h=h, o=o: o.copy_(h) for h, o in zip(halves, outs)])
    total = graph_replay([lambda w=w: torch.sum(w, dtype=torch.float32) for w in ws])
    blas = graph_replay([lambda w=w, x=x: F.linear(x, w) for w, x in zip(ws, xs)])
    floor = nbytes / (bw * 1e3)
    print(f"1x{n}x{k:<5d} {c:6d} {floor:6.2f} {empty:6.2f} {empty + floor:7.2f} {copy:6.2f} {total:6.2f} {blas:6.2f}")
