"""Per-call time of Loader.resolve: the first resolve of a shape (exact,
uncached) and repeated resolves of a shape already seen (cached). Run:
python3 python/bench_resolve.py"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kerntune_params as kp  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILE = """{"schema_version": 1, "devices": {"metal:Apple M3 Max:40c": {"backend": "metal", "name": "Apple M3 Max",
 "family": "apple9", "compute_units": 40, "kernels": {"gemv_nt": {"f16/largeN": {"params": {"TG": 128, "TPR": 32}}},
 "mlx_qr_col_dot": {"f16/wide": {"params": {"TG": 128, "UNROLL": 4}}}}}}}"""


def per_call(f, n: int) -> float:
    """Best of 5 runs of n calls, in µs per call."""
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            f()
        best = min(best, time.perf_counter() - t)
    return best / n * 1e6


def main() -> None:
    spec = os.path.join(ROOT, "examples", "mlx_qr_col_dot.json")
    for what, kernel, dtype, dims in (("gemv_nt (built-in)", "gemv_nt", "f16", lambda i: (1, 4096 + 8 * i, 4096)),
                                      ("mlx_qr_col_dot (spec, launch)", "mlx_qr_col_dot", "f16", lambda i: (4096, 300 + i))):
        l = kp.loads(FILE, "Apple M3 Max", specs=[spec])
        shapes = [dims(i) for i in range(2000)]
        # First resolves: every call a new shape (no cache hit).
        t = time.perf_counter()
        for s in shapes:
            l.resolve(kernel, dtype, s)
        first = (time.perf_counter() - t) / len(shapes) * 1e6
        s0 = shapes[0]
        again = per_call(lambda: l.resolve(kernel, dtype, s0), 200000)
        print(f"{what:32s} first resolve {first:7.2f} µs/call   repeated {again:6.3f} µs/call")
    print(f"(Python {sys.version.split()[0]}, os.environ: {len(os.environ)} variables)")


if __name__ == "__main__":
    main()
