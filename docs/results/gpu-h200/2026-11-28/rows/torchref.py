# Per-launch time of a copy and of torch.softmax of 4096x4096 f16 in a CUDA
# graph of 40 launches on 4 rotated inputs (as kerntune times), and the share
# of the copy-bandwidth floor (bytes / 4190.9 GB/s unless given).
import sys, torch
bw = float(sys.argv[1]) if len(sys.argv) > 1 else 4190.9e9
xs = [torch.randn(4096, 4096, device="cuda", dtype=torch.float16) for _ in range(4)]
y = torch.empty_like(xs[0])
floor = 2 * xs[0].numel() * 2 / bw
def timed(name, fn):
    for i in range(3): fn(xs[i % 4])
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(40): fn(xs[i % 4])
    g.replay(); torch.cuda.synchronize()
    ts = []
    for _ in range(30):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) * 1e3 / 40)
    ts.sort(); med = ts[len(ts) // 2]
    print(f"{name:10s} {med:7.2f} µs/launch  {100 * floor * 1e6 / med:5.1f} % of floor ({floor * 1e6:.2f} µs)")
timed("copy", lambda x: y.copy_(x))
w = torch.randn(4096, device="cuda", dtype=torch.float16)
timed("softmax", lambda x: torch.softmax(x, dim=-1))
timed("rmsnorm", lambda x: torch.nn.functional.rms_norm(x, (4096,), w, 1e-6))
