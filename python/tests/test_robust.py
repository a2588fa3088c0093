"""Unusual but legal inputs: any value for any argument of load, loads and
resolve, deep nesting, escapes, huge numbers. Only ParamsErrors may come
out, with messages that can be printed."""

from __future__ import annotations

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
import kerntune_params as kp  # noqa: E402

ODD = [None, 5, -1, 2**70, 1.5, float("nan"), True, "", "x", "\ud800", b"x", [], [1], {}, {"a": 1}, (1,), object(),
       kp.alias("A", ["BN"])]
FILE = '{"schema_version": 1, "devices": {"cpu:x:2": {"backend": "cpu", "name": "x", "family": "amd64", "kernels": {}}}}'


def only_params_errors(t: unittest.TestCase, f, *a, **kw) -> None:
    try:
        f(*a, **kw)
    except kp.ParamsError as e:
        str(e).encode("utf-8")  # printable
    except Exception as e:  # noqa: BLE001 - what the test looks for
        t.fail(f"{f.__name__}({a!r}, {kw!r}) raised {type(e).__name__}: {e!r}")


class AnyArgument(unittest.TestCase):
    def test_load_arguments(self) -> None:
        for name in ("device", "device_name", "compute_units", "backend", "device_family", "env_prefix", "env",
                     "specs", "defaults", "aliases", "local"):
            for v in ODD:
                with self.subTest(arg=name, value=v):
                    only_params_errors(self, kp.loads, FILE, **{name: v})
        for v in ODD:
            with self.subTest(path=v):
                only_params_errors(self, kp.load, v, env={})
                only_params_errors(self, kp.loads, v)

    def test_resolve_arguments(self) -> None:
        l = kp.loads(FILE, env={})
        for i in range(3):
            for v in ODD + [(0,), (1, 2**31), "1x2x", "softmax"]:
                args = ["softmax", "f32", (2, 8)]
                args[i] = v
                with self.subTest(arg=i, value=v):
                    only_params_errors(self, l.resolve, *args)
                    only_params_errors(self, l.resolve, *args)  # through the cache too

    def test_cache_keeps_exact_errors(self) -> None:
        l = kp.loads(FILE, env={})
        l.resolve("softmax", "f32", (1, 8))
        for shape in ((True, 8), (1.0, 8)):
            with self.assertRaises(kp.InvalidShapeError):
                l.resolve("softmax", "f32", shape)
        env = {}
        l = kp.loads(FILE, env=env, device="cpu:x:2")
        self.assertEqual(l.resolve("softmax", "f32", (1, 8))["ROWS"], 4)
        env["KERNTUNE_SOFTMAX_ROWS"] = "16"
        self.assertEqual(l.resolve("softmax", "f32", (1, 8))["ROWS"], 16)  # a changed variable is seen

    def test_io_error_keeps_its_cause(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            try:
                kp.load(d, env={})  # a directory
            except kp.ParamsError as e:
                self.assertEqual(e.kind, "io")
                self.assertIsInstance(e.__cause__, OSError)
            else:
                self.fail("loading a directory succeeded")
        with self.assertRaises(kp.SpecError) as c:
            kp.loads(FILE, specs=[os.path.join(d, "absent.json")])
        self.assertIsInstance(c.exception.__cause__, OSError)


if __name__ == "__main__":
    unittest.main()
