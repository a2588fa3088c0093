#!/usr/bin/env python3
"""Runs every ```python block of README.md and of the doc pages that
continue it (DOCS below) against a params file.

usage: scripts/readme_python.py PARAMS_FILE ["FAMILY DTYPE SHAPE"]

The blocks run from the repository root with KERNTUNE_PARAMS=PARAMS_FILE
and the loader of python/ on the path. MLX exists only on a Mac, so
mlx.core is a stand-in that records each metal_kernel call: a block that
defines project(Q, v) is then called with a 300x70 matrix, and the launch
it asks of MLX (template arguments, grid, threadgroup) is checked against
what the loader resolved. Exits non-zero, naming the file and line of the
block, when a block fails. With FAMILY DTYPE SHAPE (an entry the file holds for this
machine's CPU), the loader must also resolve every value of it from the
file.
"""
import os
import re
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The pages whose python blocks run, README.md first.
DOCS = ["README.md", "docs/guide/mlx.md", "docs/reference/loaders.md"]


class FakeArray:
    def __init__(self, shape, dtype="float32"):
        self.shape = tuple(shape)
        self.dtype = dtype


def fake_mlx():
    calls = []
    core = types.ModuleType("mlx.core")
    core.float32, core.float16, core.uint32 = "float32", "float16", "uint32"
    core.array = lambda data, dtype=None: FakeArray((len(data),), dtype)

    class Kernel:
        def __init__(self, **kw):
            for k in ("name", "input_names", "output_names", "source"):
                if k not in kw:
                    raise TypeError("metal_kernel needs %s" % k)
            self.kw = kw

        def __call__(self, **kw):
            calls.append(kw)
            return [FakeArray(s, d) for s, d in zip(kw["output_shapes"], kw["output_dtypes"])]

    core.metal = types.SimpleNamespace(device_info=lambda: {"device_name": "Apple M3 Max", "architecture": "applegpu_g15s"})
    core.fast = types.SimpleNamespace(metal_kernel=lambda **kw: Kernel(**kw))
    mlx = types.ModuleType("mlx")
    mlx.core = core
    sys.modules["mlx"], sys.modules["mlx.core"] = mlx, core
    return calls


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    expect = sys.argv[2] if len(sys.argv) == 3 else ""
    os.environ["KERNTUNE_PARAMS"] = os.path.abspath(sys.argv[1])
    os.chdir(ROOT)
    sys.path.insert(0, os.path.join(ROOT, "python"))
    calls = fake_mlx()
    blocks = []
    for doc in DOCS:
        text = open(doc, encoding="utf-8").read()
        found = [(doc, text.count("\n", 0, m.start()) + 2, m.group(1))
                 for m in re.finditer(r"^[ \t]*```python\n(.*?)^[ \t]*```", text, re.S | re.M)]
        if not found:
            sys.exit("%s: no python blocks" % doc)
        blocks += found
    for doc, line, code in blocks:
        indent = min(len(l) - len(l.lstrip()) for l in code.splitlines() if l.strip())
        code = "\n".join(l[indent:] for l in code.splitlines())
        ns = {"__name__": "readme"}
        where = "%s:%d" % (doc, line)
        try:
            exec(compile(code, where, "exec"), ns)
            if "project" in ns:
                c = ns["project"](FakeArray((300, 70)), FakeArray((300,)))
                call = calls[-1]
                r = ns["params"].resolve("mlx_qr_col_dot", "f32", (300, 70))
                tg = r["TG"]
                want = [("T", "float32"), ("UNROLL", r["UNROLL"])]
                if call["template"] != want or call["threadgroup"] != (tg, 1, 1) or call["grid"][0] % tg or call["grid"][0] < 70 or c.shape != (70,):
                    raise AssertionError("MLX launch %r does not follow the resolved %r" % (call, r))
        except Exception as e:  # any failure of the block
            sys.exit("%s: the python block failed: %s: %s" % (where, type(e).__name__, e))
        print("%s: python block ran" % where)
    if expect:
        # The file itself resolves on this machine: the local CPU's entry.
        import kerntune_params as kp
        family, dtype, shape = expect.split()
        r = kp.load().resolve(family, dtype, shape)
        srcs = {n: v.source for n, v in r.params.items()}
        if not srcs or not all(s.startswith("file:") for s in srcs.values()):
            sys.exit("%s %s %s resolved %r from %s, want every value from the file" % (family, dtype, shape, srcs, sys.argv[1]))
        print("%s %s %s from the file: %s (matched: %s)" % (family, dtype, shape, r.params_string() if hasattr(r, "params_string") else srcs, r.matched))
    print("%d python blocks of %s ran against %s" % (len(blocks), ", ".join(DOCS), sys.argv[1]))


if __name__ == "__main__":
    main()
