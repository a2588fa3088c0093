"""CUDA-graph timing shared by the PyTorch peer scripts (scripts/gpu-*.py).

graph_replay times calls as kerntune records a kernel (docs/design/
measurement.md): one replay of a CUDA graph of per launches, divided by per,
the median over reps replays, in µs; fs are zero-argument callables (one per
input copy, rotated), run warm times each on a side stream before the
capture.
"""
import statistics

import torch


def graph_replay(fs, per=40, reps=20, warm=1):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for f in fs * warm:
            f()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(per):
            fs[i % len(fs)]()
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1000 / per)
    return statistics.median(ts)
