"""Runs the MLX application of python/README.md exactly as written, with
mlx stood in for by tests/mlx_stub.py (MLX's real call signatures, checked
types): the loader alone must give the kernel's arguments and the launch."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(HERE, "..")))
sys.path.insert(0, HERE)
import kerntune_params as kp  # noqa: E402
import mlx_stub  # noqa: E402

README = os.path.join(HERE, "..", "README.md")

PARAMS = """{"schema_version": 1, "devices": {"metal:Apple M3 Max:40c": {"backend": "metal", "name": "Apple M3 Max",
 "family": "apple9", "compute_units": 40, "kernels": {"rms_norm_inv": {"f16/all": {"params": {"TPR": 256}}}}}}}"""


def readme_app() -> str:
    with open(README, encoding="utf-8") as f:
        text = f.read()
    part = text.split("## With MLX", 1)[1]
    m = re.search(r"```python\n(.*?)```", part, re.S)
    assert m is not None, "no python block under ## With MLX"
    return m.group(1)


class ReadmeApp(unittest.TestCase):
    def setUp(self) -> None:
        self.mx = mlx_stub.install()
        self.addCleanup(mlx_stub.uninstall)
        mlx_stub.CALLS.clear()
        mlx_stub.KERNELS.clear()
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        shutil.copy(os.path.join(HERE, "specs", "rms_norm_inv.json"), self.dir)
        with open(os.path.join(self.dir, "hardware_params.json"), "w", encoding="utf-8") as f:
            f.write(PARAMS)
        cwd = os.getcwd()
        os.chdir(self.dir)
        self.addCleanup(os.chdir, cwd)

    def run_app(self) -> dict:
        code = readme_app()
        self.assertLessEqual(len([ln for ln in code.splitlines() if ln.strip()]), 10, "the README's app has more than ten lines")
        ns: dict = {"__name__": "readme_app"}
        exec(compile(code, "python/README.md", "exec"), ns)  # noqa: S102 - the README's own code
        return ns

    def test_app(self) -> None:
        ns = self.run_app()
        mx = self.mx
        self.assertEqual(mlx_stub.KERNELS, [dict(name="rms_norm_inv", input_names=["x", "w"], output_names=["y", "inv"],
                                                 ensure_row_contiguous=True, atomic_outputs=False)])
        self.assertEqual(len(mlx_stub.CALLS), 1)
        call = mlx_stub.CALLS[0]
        self.assertEqual(call["template"], [("T", mx.float16), ("AccT", mx.float32), ("TPR", 256), ("HAS_W", True)])
        self.assertEqual(call["grid"], (256, 32, 1))
        self.assertEqual(call["threadgroup"], (256, 1, 1))
        self.assertEqual(call["output_shapes"], [(32, 4096), (32,)])
        self.assertEqual(call["output_dtypes"], [mx.float16, mx.float32])
        self.assertEqual(call["init_value"], 0.0)
        self.assertEqual(ns["r"].params["TPR"].source, "file:metal:Apple M3 Max:40c/rms_norm_inv/f16/all")
        self.assertEqual((ns["y"].shape, ns["inv"].shape), ((32, 4096), (32,)))

    def test_deprecated_device_info(self) -> None:
        # Older MLX: only mx.metal.device_info().
        del self.mx.device_info
        self.run_app()
        self.assertEqual(len(mlx_stub.CALLS), 1)

    def test_dtypes(self) -> None:
        l = kp.load(specs=["rms_norm_inv.json"], device_name="Apple M3 Max")
        for d, name in ((self.mx.float16, "f16"), (self.mx.float32, "f32"), ("f16", "f16")):
            self.assertEqual(l.resolve("rms_norm_inv", d, (4, 64)).dtype, name)
        for bad in (self.mx.int32, None, 5, "float16", object(), [1]):
            with self.assertRaises(kp.UnknownDTypeError):
                l.resolve("rms_norm_inv", bad, (4, 64))
        r = l.resolve("rms_norm_inv", self.mx.float32, (4, 64))
        self.assertIs(l.resolve("rms_norm_inv", self.mx.float32, (4, 64)), r)  # the cache
        self.assertEqual(r.launch.output_dtypes, [self.mx.float32, self.mx.float32])

    def test_without_mlx(self) -> None:
        mlx_stub.uninstall()
        l = kp.load(specs=["rms_norm_inv.json"], device_name="Apple M3 Max")
        r = l.resolve("rms_norm_inv", "f16", (4, 64))
        if "mlx.core" not in sys.modules:  # no real mlx either: names
            self.assertEqual(r.launch.template[:2], [("T", "float16"), ("AccT", "float32")])
        with self.assertRaises(kp.UnknownFamilyError):
            l.resolve("softmax", "f32", (4, 64)).mlx_kwargs([])


if __name__ == "__main__":
    unittest.main()
