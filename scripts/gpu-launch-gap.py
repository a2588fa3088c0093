#!/usr/bin/env python3
"""What an event between every launch adds to a sample (H100: seconds).

kerntune times a candidate as the intervals between events recorded after
each of a run of back-to-back launches (queued behind a spin), so every
sample holds the cost of one event record besides the kernel and the launch.
This times the same PyTorch kernels both ways: an event after every launch
(median interval) and one event pair around 200 launches (mean), and the
bytes of each over the copy bandwidth. Needs PyTorch with CUDA.
    python3 scripts/gpu-launch-gap.py
"""
import torch, statistics
torch.backends.cuda.matmul.allow_tf32 = False
dev = 'cuda'
def spin():
    torch.cuda._sleep(40_000_000)  # keeps the GPU busy while the host queues the launches
def interleaved(f, n=200):
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    spin(); ev[0].record()
    for i in range(n):
        f(); ev[i + 1].record()
    torch.cuda.synchronize()
    ts = sorted(ev[i].elapsed_time(ev[i + 1]) * 1000 for i in range(n))
    return ts[n // 2]
def batched(f, n=200, reps=5):
    out = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        spin(); s.record()
        for _ in range(n):
            f()
        e.record(); torch.cuda.synchronize()
        out.append(s.elapsed_time(e) * 1000 / n)
    return statistics.median(out)
big = torch.empty(1 << 28, dtype=torch.uint8, device=dev); big2 = torch.empty_like(big)
copy_us = batched(lambda: big2.copy_(big), n=50)
bw = 2 * big.numel() / (copy_us * 1e-6) / 1e9
print(f"copy bandwidth (256 MiB copy, batched): {bw:.0f} GB/s")
t = torch.zeros(1, device=dev)
rows = [("tiny kernel (1 element add)", lambda: t.add_(1), 0)]
for dt, shape in [(torch.float16, (4096, 4096)), (torch.float16, (32768, 1024)), (torch.float32, (4096, 4096))]:
    x = torch.randn(*shape, device=dev, dtype=dt); y = torch.empty_like(x)
    nbytes = 2 * x.numel() * x.element_size()
    rows.append((f"softmax {str(dt)[6:]} {shape[0]}x{shape[1]}", (lambda x=x: torch.softmax(x, -1)), nbytes))
print(f"{'kernel':34s} {'floor':>7s} {'interleaved':>11s} {'batched':>8s} {'gap':>6s} {'%floor int.':>11s} {'%floor bat.':>11s}")
for name, f, nb in rows:
    for _ in range(20): f()
    a, b = interleaved(f), batched(f)
    fl = nb / (bw * 1e9) * 1e6
    print(f"{name:34s} {fl:7.2f} {a:11.2f} {b:8.2f} {a-b:6.2f} {100*fl/a if nb else 0:10.1f}% {100*fl/b if nb else 0:10.1f}%")
