#!/usr/bin/env python3
"""PyTorch's int4 mat-vec on the Qwen2.5 decode shapes, as qgemv is timed.

torch.ops.aten._weight_int4pack_mm (the tinygemm kernel that gpt-fast and
torchao use for int4 decode; bf16 activations, group 64, like qgemv's
default workload) on the seven shapes of qgemv's workload: one replay of a
CUDA graph of 40 launches divided by 40, inputs rotating over copies whose
total exceeds twice the last-level cache, as kerntune's CUDA timing does.
Each M given (rows of x, 1 to 16; default 1) times the seven shapes at
m = 1 and the 151936×896 one (the vocabulary projection) at m > 1, or all
seven with --all. Prints one line a shape: `int4 bf16 MxNxK µs`. Needs
PyTorch with CUDA.
    python3 scripts/gpu-qgemv-int4.py [--all] [M ...]
"""

import sys

import torch

from gpu_graph import graph_replay

dev = "cuda"
L2 = torch.cuda.get_device_properties(0).L2_cache_size
GROUP = 64


def pack(n, k):
    """Random 4-bit weights packed for tinygemm (the uint8 form of PyTorch
    2.5 on, the int32 form before), with the largest inner_k_tiles k admits."""
    q = torch.randint(0, 16, (n, k), dtype=torch.int32, device=dev)
    err = None
    for tiles in (8, 4, 2):
        for arg in ((q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8), q):
            try:
                return torch.ops.aten._convert_weight_to_int4pack(arg, tiles)
            except RuntimeError as e:
                err = e
    raise err


SHAPES = [(896, 896), (1152, 896), (896, 4864), (3584, 896), (9728, 896), (4864, 896), (151936, 896)]


def main(argv):
    every = "--all" in argv
    ms = []
    for a in argv:
        if a == "--all":
            continue
        if not a.isdigit() or not 1 <= int(a) <= 16:
            sys.exit(f"gpu-qgemv-int4.py: M={a!r}: rows of x must be an integer from 1 to 16")
        ms.append(int(a))
    for m in ms or [1]:
        for n, k in SHAPES if m == 1 or every else SHAPES[-1:]:
            time_shape(m, n, k)


def time_shape(m, n, k):
    # the weights, their scales and zeros (bf16 pairs), x and y (bf16)
    nbytes = n * k // 2 + n * (k // GROUP) * 4 + 2 * m * (k + n)
    c = int(min(64, max(1, (2 * L2 + nbytes - 1) // nbytes)))
    fs = []
    for _ in range(c):
        w = pack(n, k)
        sz = (torch.rand(k // GROUP, n, 2, device=dev, dtype=torch.bfloat16) * 0.1).contiguous()
        x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        fs.append(lambda x=x, w=w, sz=sz: torch.ops.aten._weight_int4pack_mm(x, w, GROUP, sz))
    for f in fs * 3:
        f()
    torch.cuda.synchronize()
    print(f"int4 bf16 {m}x{n}x{k} {graph_replay(fs):.2f}", flush=True)


main(sys.argv[1:])
