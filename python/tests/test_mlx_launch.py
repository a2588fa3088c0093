"""The launch of an mlx spec kernel as the loader builds it per shape:
shape-derived template arguments, constants over the dims,
source.mlx.format, 0-d and small inputs, and resolve from input arrays
(any objects with .shape and .dtype; mlx stood in for by mlx_stub)."""

from __future__ import annotations

import copy
import json
import os
import shutil
import sys
import tempfile
import unittest
from typing import Any, Dict, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(HERE, "..")))
sys.path.insert(0, HERE)
import kerntune_params as kp  # noqa: E402
import mlx_stub  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

# A head-wise kernel as model code writes it: x is rows × dh, g a 0-d gain,
# hw one weight per head (4 heads: fewer than 8 elements), Dh, N and EVEN
# computed from the shape, BLOCK baked into the source as an f-string would.
SPEC: Dict[str, Any] = {
    "name": "headwise",
    "dims": ["rows", "nh", "dh"],
    "dtypes": ["f32", "f16"],
    "source": {"mlx": {
        "name": "headwise",
        "source": [
            "uint i = thread_position_in_grid.x;",
            "if (i < N) {{ out[i] = x[i] * g * hw[(i / Dh) % {HEADS}] * scale * {BLOCK}; }}",
        ],
        "header": "constant int kBlock = {BLOCK}; // {{ braces }}",
        "input_names": ["x", "dims", "g", "hw", "b", "scale"],
        "output_names": ["out", "total"],
        "template": {"T": "dtype", "Dh": "dh", "N": "rows * nh * dh", "EVEN": "dh % 32 == 0", "TG": "param"},
        "format": {"BLOCK": "TG * 2", "HEADS": "nh"},
        "constants": [
            {"name": "dims", "dtype": "uint32", "values": ["rows", "nh * dh"]},
            {"name": "scale", "dtype": "float32", "value": "1 / sqrt(dh)"},
        ],
    }},
    "buffers": [
        {"name": "x", "io": "in", "shape": ["rows", "nh", "dh"]},
        {"name": "g", "io": "in", "shape": [], "dtype": "float32"},
        {"name": "hw", "io": "in", "shape": ["nh"]},
        {"name": "b", "io": "in", "shape": ["nh * dh"]},
        {"name": "out", "io": "out", "shape": ["rows", "nh * dh"], "reference": "x[i]"},
        {"name": "total", "io": "out", "shape": [], "dtype": "float32", "reference": "0.0"},
    ],
    "params": [{"name": "TG", "values": [32, 64, 128], "default": 64}],
    "launch": {"grid": ["rows * nh * dh", "1", "1"], "threadgroup": ["TG", "1", "1"]},
}

PARAMS = {"schema_version": 1, "devices": {"metal:Apple M3 Max:40c": {
    "backend": "metal", "name": "Apple M3 Max", "family": "apple9", "compute_units": 40,
    "kernels": {"headwise": {"f16/all": {"params": {"TG": 128}}}}}}}


class FakeDtype:
    """A dtype that prints as MLX's do."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return "mlx.core." + self.name


class FakeArray:
    """Anything with .shape and .dtype, as resolve(inputs=...) reads it."""

    def __init__(self, shape: Sequence[int], dtype: Any = "float16") -> None:
        self.shape = tuple(shape)
        self.dtype = FakeDtype(dtype) if isinstance(dtype, str) else dtype


def fa(*shape: int, dtype: Any = "float16") -> FakeArray:
    return FakeArray(shape, dtype)


def data(rows: int, nh: int, dh: int, dt: Any = "float16") -> list:
    """headwise's data inputs x, g, hw, b for a shape."""
    return [fa(rows, nh, dh, dtype=dt), fa(dtype="float32"), fa(nh, dtype=dt), fa(nh * dh, dtype=dt)]


class SpecDir(unittest.TestCase):
    """A temp dir to write specs in, and a loader of one."""

    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        mlx_stub.uninstall()
        self.addCleanup(mlx_stub.uninstall)
        if "mlx.core" in sys.modules:  # pragma: no cover - a real mlx
            self.skipTest("a real mlx is imported; these tests stand it in")

    def write(self, spec: Dict[str, Any], name: str = "k.json") -> str:
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(spec, f)
        return path

    def load(self, spec: Optional[Dict[str, Any]] = None, env: Optional[Dict[str, str]] = None) -> kp.Loader:
        return kp.loads(json.dumps(PARAMS), "Apple M3 Max", env=env or {}, specs=[self.write(spec or SPEC)])

    def spec_error(self, spec: Dict[str, Any]) -> str:
        with self.assertRaises(kp.SpecError) as cm:
            kp.load_spec(self.write(spec))
        return str(cm.exception)


def mutate(path: Sequence[Any], value: Any) -> Dict[str, Any]:
    """SPEC with the field at path set to value (None: removed)."""
    s = copy.deepcopy(SPEC)
    d: Any = s
    for k in path[:-1]:
        d = d[k]
    if value is None:
        del d[path[-1]]
    else:
        d[path[-1]] = value
    return s


MLX = ("source", "mlx")


class TemplateValues(SpecDir):
    def test_per_shape(self) -> None:
        l = self.load()
        cases = [
            # shape (rows, nh, dh), dtype, Dh, N, EVEN, TG
            ((2, 4, 64), "f16", 64, 512, True, 128),
            ((3, 2, 48), "f16", 48, 288, False, 128),
            ((3, 2, 48), "f32", 48, 288, False, 64),  # no entry for f32: the default
        ]
        for shape, dt, dh, n, even, tg in cases:
            with self.subTest(shape=shape, dtype=dt):
                r = l.resolve("headwise", dt, shape)
                t = dict(r.launch.template)
                self.assertEqual(list(t), ["T", "Dh", "N", "EVEN", "TG"])
                self.assertEqual(t["T"], {"f16": "float16", "f32": "float32"}[dt])
                self.assertEqual((t["Dh"], t["N"], t["EVEN"], t["TG"]), (dh, n, even, tg))
                self.assertIs(type(t["Dh"]), int)
                self.assertIs(type(t["EVEN"]), bool)
                self.assertEqual(r.launch.grid, (n, 1, 1))
                self.assertEqual(r.launch.output_shapes, [(shape[0], shape[1] * shape[2]), ()])

    def test_out_of_range_per_shape(self) -> None:
        cases = [
            ("dh - 50", (1, 1, 48), "is -2 with"),
            ("rows * 1073741824", (2, 1, 8), "is 2147483648 with"),
        ]
        for expr, shape, want in cases:
            with self.subTest(expr=expr):
                l = self.load(mutate(MLX + ("template", "Dh"), expr))
                with self.assertRaises(kp.SpecError) as cm:
                    l.resolve("headwise", "f16", shape)
                msg = str(cm.exception)
                self.assertIn(f'source.mlx.template.Dh "{expr}": {want}', msg)
                self.assertIn("non-negative 32-bit integer", msg)
        # In range for another shape.
        l = self.load(mutate(MLX + ("template", "Dh"), "dh - 50"))
        self.assertEqual(dict(l.resolve("headwise", "f16", (1, 1, 64)).launch.template)["Dh"], 14)

    def test_spec_errors(self) -> None:
        cases = [
            ("dh / 2", 'source.mlx.template.Dh "dh / 2": is a float64 expression'),
            ("dtyp", 'source.mlx.template.Dh: "dtyp" is not a template kind'),
            ("dh * q", 'source.mlx.template.Dh "dh * q": unknown name q (names in scope: TG, dh, nh, rows)'),
            ("dh *", 'source.mlx.template.Dh "dh *": unexpected token EOF'),
            ("float64", 'source.mlx.template.Dh: "float64" is not a template kind'),
        ]
        for expr, want in cases:
            with self.subTest(expr=expr):
                self.assertIn(want, self.spec_error(mutate(MLX + ("template", "Dh"), expr)))

    def test_param_reached_through_an_expression(self) -> None:
        # TG reaches the body only through the format and a constant: it is used.
        s = mutate(MLX + ("template", "TG"), None)
        s["launch"]["threadgroup"] = ["64", "1", "1"]
        kp.load_spec(self.write(s))
        s["source"]["mlx"]["format"]["BLOCK"] = "2"
        s["source"]["mlx"]["constants"][1]["value"] = "1.0"
        self.assertIn("TG is used by no template argument", self.spec_error(s))
        s["source"]["mlx"]["template"]["TW"] = "TG * 4"
        kp.load_spec(self.write(s))


class Constants(SpecDir):
    def test_built_and_inserted_without_mlx(self) -> None:
        l = self.load()
        r = l.resolve("headwise", "f16", (2, 4, 64))
        self.assertEqual(r.launch.constants, ((1, [2, 256]), (5, 1 / 8)))
        x, g, hw, b = data(2, 4, 64)
        built = [x, [2, 256], g, hw, b, 0.125]
        cases = [
            ([x, g, hw, b], built),
            ((x, "D", g, hw, b, "S"), [x, "D", g, hw, b, "S"]),  # every input: as given
            ({"x": x, "g": g, "hw": hw, "b": b}, built),
            ({"b": b, "hw": hw, "g": g, "x": x, "dims": "D"}, [x, "D", g, hw, b, 0.125]),
        ]
        for given, want in cases:
            with self.subTest(given=type(given).__name__, n=len(given)):
                self.assertEqual(r.mlx_kwargs(given)["inputs"], want)
        # The constants follow the shape.
        r = kp.loads(json.dumps(PARAMS), "Apple M3 Max", env={"KERNTUNE_HEADWISE_TG": "32"},
                     specs=[os.path.join(self.dir, "k.json")]).resolve("headwise", "f16", (3, 2, 16))
        got = r.mlx_kwargs(data(3, 2, 16))["inputs"]
        self.assertEqual((got[1], got[5]), ([3, 32], 0.25))

    def test_built_as_mlx_arrays(self) -> None:
        mx = mlx_stub.install()
        r = self.load().resolve("headwise", mx.float16, (2, 4, 64))
        x, g = mx.array(shape=(2, 4, 64), dtype=mx.float16), mx.array(1.0)
        hw, b = mx.array(shape=(4,), dtype=mx.float16), mx.array(shape=(256,), dtype=mx.float16)
        kw = r.mlx_kwargs([x, g, hw, b])
        dims, scale = kw["inputs"][1], kw["inputs"][5]
        self.assertEqual((dims.dtype, dims.shape, dims.data), (mx.uint32, (2,), [2, 256]))
        self.assertEqual((scale.dtype, scale.shape, scale.data), (mx.float32, (), 0.125))  # 0-d: a scalar by reference
        self.assertEqual(kw["template"][0], ("T", mx.float16))
        # MLX's own signature check accepts the call.
        kernel = r.mlx_kernel()
        out, total = kernel(**kw)
        self.assertEqual((out.shape, total.shape), ((2, 256), ()))
        self.assertEqual(len(mlx_stub.CALLS[-1]["inputs"]), 6)
        # resolve reads MLX arrays.
        r2 = self.load().resolve("headwise", inputs=[x, g, hw, b])
        self.assertEqual((r2.dtype, r2.shape), ("f16", (2, 4, 64)))

    def test_a_parameter_is_refused(self) -> None:
        # A constant is an input made once per shape for every candidate,
        # as the Go side refuses it too.
        s = json.loads(json.dumps(SPEC))
        s["source"]["mlx"]["constants"][1]["value"] = "1 / sqrt(dh) * TG"
        path = os.path.join(self.dir, "p.json")
        with open(path, "w") as f:
            json.dump(s, f)
        with self.assertRaises(kp.SpecError) as cm:
            kp.load_spec(path)
        self.assertIn("uses a tunable parameter (TG): a constant is an input made once per shape", str(cm.exception))

    def test_values_checked(self) -> None:
        cases = [
            (0, "dtype", "uint8", "values", ["rows * 300"], (1, 1, 8), "is 300, which does not fit uint8"),
            (0, "dtype", "int8", "values", ["0 - rows * 200"], (1, 1, 8), "is -200, which does not fit int8"),
            (1, "dtype", "float16", "value", "dh * 10000.0", (1, 1, 8), "is 80000, not a finite float16"),
        ]
        for ci, _, dt, key, val, shape, want in cases:
            with self.subTest(want=want):
                s = copy.deepcopy(SPEC)
                c = s["source"]["mlx"]["constants"][ci]
                c.pop("value", None)
                c.pop("values", None)
                c["dtype"], c[key] = dt, val
                with self.assertRaises(kp.SpecError) as cm:
                    self.load(s).resolve("headwise", "f16", shape)
                self.assertIn(want, str(cm.exception))
                self.assertIn(f"source.mlx.constants[{ci}].", str(cm.exception))

    def test_wrong_number_of_inputs(self) -> None:
        r = self.load().resolve("headwise", "f16", (2, 4, 64))
        cases = [
            ([1, 2], "2 inputs given; the kernel takes 6 (x, dims, g, hw, b, scale), or the 4 data inputs (x, g, hw, b)"),
            ([1, 2, 3, 4, 5], "5 inputs given"),
            ({"x": 1, "g": 2, "hw": 3}, "no array for input b"),
            ({"x": 1, "g": 2, "hw": 3, "b": 4, "y": 5}, "y is not among the kernel's input_names"),
            ("xghb", "inputs is a str"),
        ]
        for given, want in cases:
            with self.subTest(given=given):
                with self.assertRaises(kp.InputsError) as cm:
                    r.mlx_kwargs(given)
                self.assertIn(want, str(cm.exception))
                self.assertTrue(str(cm.exception).startswith("params: headwise: "))

    def test_all_inputs_as_before(self) -> None:
        # A spec without constants, every input given: the list as it was.
        path = os.path.join(HERE, "specs", "rms_norm_inv.json")
        l = kp.loads(json.dumps(PARAMS), "Apple M3 Max", env={}, specs=[path])
        r = l.resolve("rms_norm_inv", "f16", (4, 64))
        x, w = fa(4, 64), fa(64)
        kw = r.mlx_kwargs((x, w))
        self.assertEqual(kw["inputs"], [x, w])
        self.assertEqual(sorted(kw), ["grid", "init_value", "inputs", "output_dtypes", "output_shapes", "template",
                                      "threadgroup"])
        self.assertEqual(r.mlx_source(), l.metal_kernel_args("rms_norm_inv")["source"])
        self.assertEqual(r.mlx_kernel_args(), l.metal_kernel_args("rms_norm_inv"))

    def test_example_with_a_constant(self) -> None:
        # examples/mlx_qr_col_dot.json: input_names Q, v and the constant shape (m, k).
        l = kp.loads(json.dumps(PARAMS), "Apple M3 Max", env={}, specs=[os.path.join(ROOT, "examples", "mlx_qr_col_dot.json")])
        q, v = fa(33, 7, dtype="float32"), fa(33, dtype="float32")
        r = l.resolve("mlx_qr_col_dot", inputs=[q, v])
        self.assertEqual((r.dtype, r.shape), ("f32", (33, 7)))
        self.assertEqual(r.mlx_kwargs([q, v])["inputs"], [q, v, [33, 7]])
        self.assertIs(r, l.resolve("mlx_qr_col_dot", "f32", (33, 7)))


class Format(SpecDir):
    def test_filled_per_shape_and_params(self) -> None:
        l = self.load()
        cases = [((2, 4, 64), "f16", 256, 4), ((2, 2, 8), "f32", 128, 2)]
        for shape, dt, block, heads in cases:
            with self.subTest(shape=shape):
                r = l.resolve("headwise", dt, shape)
                self.assertEqual(r.mlx_source(), "uint i = thread_position_in_grid.x;\n"
                                 f"if (i < N) {{ out[i] = x[i] * g * hw[(i / Dh) % {heads}] * scale * {block}; }}")
                self.assertEqual(r.mlx_header(), f"constant int kBlock = {block}; // {{ braces }}")
                # Exactly Python's str.format for plain names.
                raw = "\n".join(SPEC["source"]["mlx"]["source"])
                self.assertEqual(r.mlx_source(), raw.format(BLOCK=block, HEADS=heads))
                a = r.mlx_kernel_args()
                self.assertEqual((a["source"], a["header"]), (r.mlx_source(), r.mlx_header()))
                self.assertRegex(a["name"], r"^headwise_[0-9a-f]{10}$")
        names = {l.resolve("headwise", dt, shape).mlx_kernel_args()["name"] for shape, dt, _, _ in cases}
        self.assertEqual(len(names), 2)  # one MLX library per filled source
        with self.assertRaises(kp.OptionsError) as cm:
            l.metal_kernel_args("headwise")
        self.assertIn("r.mlx_kernel()", str(cm.exception))

    def test_without_format_braces_are_text(self) -> None:
        s = mutate(MLX + ("format",), None)
        s["launch"]["threadgroup"] = ["TG", "1", "1"]
        r = self.load(s).resolve("headwise", "f16", (2, 4, 64))
        self.assertIn("{{ out[i]", r.mlx_source())
        self.assertEqual(r.mlx_kernel_args()["name"], "headwise")

    def test_empty_format(self) -> None:
        # No placeholders: still format strings ({{ is a brace), one source.
        s = mutate(MLX + ("format",), {})
        s["source"]["mlx"]["source"] = "if (i < N) {{ out[i] = x[i]; }}"
        s["source"]["mlx"]["header"] = ""
        s["source"]["mlx"]["template"]["TW"] = "TG * 4"  # TG's use, once the format is gone
        l = self.load(s)
        r = l.resolve("headwise", "f16", (2, 4, 64))
        self.assertEqual(r.mlx_source(), "if (i < N) { out[i] = x[i]; }")
        self.assertEqual(r.mlx_kernel_args(), l.metal_kernel_args("headwise"))
        self.assertEqual(r.mlx_kernel_args()["name"], "headwise")

    def test_kernel_built_once_per_source(self) -> None:
        mlx_stub.install()
        mlx_stub.KERNELS.clear()
        l = self.load()
        k1 = l.resolve("headwise", "f16", (2, 4, 64)).mlx_kernel()
        self.assertIs(l.resolve("headwise", "f16", (3, 4, 64)).mlx_kernel(), k1)  # same BLOCK and HEADS
        k2 = l.resolve("headwise", "f16", (3, 2, 64)).mlx_kernel()
        self.assertIsNot(k2, k1)
        self.assertEqual(len(mlx_stub.KERNELS), 2)
        self.assertIn("% 2] * scale * 256;", k2.spec["source"])
        self.assertNotEqual(k1.spec["name"], k2.spec["name"])

    def test_mlx_kernel_needs_mlx(self) -> None:
        r = self.load().resolve("headwise", "f16", (2, 4, 64))
        with self.assertRaises(ImportError):
            r.mlx_kernel()

    def test_errors(self) -> None:
        src = ("source", "mlx", "source")
        cases = [
            (src, "out[i] = {BLOK};", 'source.mlx.source: placeholder {BLOK} at line 1 is not a key of source.mlx.format (BLOCK, HEADS)'),
            (src, ["a;", "if (x) { b; }"], "source.mlx.source: placeholder { b; } at line 2 is not a key"),
            (src, ["if (x) {", "  b;", "}"], "source.mlx.source: placeholder {...} at line 1 is not a key"),
            (src, "x = {BLOCK:d};", "placeholder {BLOCK:d} at line 1"),
            (src, "x = {};", "placeholder {} at line 1"),
            (src, "x = {0};", "placeholder {0} at line 1"),
            (src, "x = 1; }", "source.mlx.source: a single } at line 1"),
            (src, "x = {BLOCK", "source.mlx.source: '{BLOCK' at line 1 opens a placeholder that never closes"),
            (src, "x = {BLOCK {{", "opens a placeholder that never closes"),
            (("source", "mlx", "header"), "int b = {N};", "source.mlx.header: placeholder {N} at line 1"),
            (("source", "mlx", "format", "HEADS"), "nh / 2", 'source.mlx.format.HEADS "nh / 2": is a float64 expression'),
            (("source", "mlx", "format", "HEADS"), "nh > 2", 'source.mlx.format.HEADS "nh > 2": is a bool expression'),
            (("source", "mlx", "format", "HEADS"), "heads", "unknown name heads (names in scope: TG, dh, nh, rows)"),
            (("source", "mlx", "format"), {}, "placeholder {HEADS} at line 2 is not a key of source.mlx.format ()"),
            (("source", "mlx", "format"), {"1X": "2"}, 'source.mlx.format.1X: "1X" is not an identifier'),
        ]
        for path, val, want in cases:
            with self.subTest(val=val):
                self.assertIn(want, self.spec_error(mutate(path, val)))

    def test_source_file_named(self) -> None:
        with open(os.path.join(self.dir, "body.metal"), "w", encoding="utf-8") as f:
            f.write("// ok {BLOCK}\nout[0] = {HEAD};\n")
        s = mutate(MLX + ("source",), None)
        s["source"]["mlx"]["source_file"] = "body.metal"
        self.assertIn("k.json: source.mlx.source_file: placeholder {HEAD} at line 2", self.spec_error(s))


class SmallInputs(SpecDir):
    def test_zero_d_and_four_elements(self) -> None:
        # 4 heads: hw has 4 elements; g is 0-d: no minimum size.
        l = self.load()
        r = l.resolve("headwise", "f16", (1, 4, 1))
        self.assertEqual(r.launch.output_shapes, [(1, 4), ()])
        self.assertIs(l.resolve("headwise", inputs=data(1, 4, 1)), r)
        x, g, hw, b = data(1, 4, 1)
        with self.assertRaises(kp.InputsError) as cm:
            l.resolve("headwise", inputs=[x, fa(1, dtype="float32"), hw, b])
        self.assertIn("input g has shape (1,) (1 dims); the spec gives it 0: []", str(cm.exception))

    def test_one_element_length(self) -> None:
        # A buffer with a length only: the array's number of elements.
        s = copy.deepcopy(SPEC)
        s["buffers"][1] = {"name": "g", "io": "in", "length": "nh", "dtype": "float32"}
        l = self.load(s)
        x, _, hw, b = data(1, 1, 8)
        r = l.resolve("headwise", inputs=[x, fa(1, 1, dtype="float32"), hw, b])
        self.assertEqual(r.shape, (1, 1, 8))
        with self.assertRaises(kp.InputsError) as cm:
            l.resolve("headwise", inputs=[x, fa(2, dtype="float32"), hw, b])
        self.assertIn("input g: g.size is 2, but dim nh is 1 from x.shape[1]", str(cm.exception))


class ResolveFromArrays(SpecDir):
    def test_dims_and_dtype(self) -> None:
        l = self.load()
        x, g, hw, b = data(3, 2, 48)
        cases = [
            (data(2, 4, 64), None, ("f16", (2, 4, 64))),
            (data(3, 2, 48, "float32"), None, ("f32", (3, 2, 48))),
            (data(3, 2, 48, "bfloat16"), None, ("bf16", (3, 2, 48))),
            # Every input_names entry, constants included: their places are skipped.
            ([x, None, g, hw, b, None], None, ("f16", (3, 2, 48))),
            ({"hw": hw, "b": b, "x": x, "g": g}, None, ("f16", (3, 2, 48))),
            # A dtype given wins over the arrays'.
            (data(3, 2, 48, "bfloat16"), "f16", ("f16", (3, 2, 48))),
            # MLX's Dtype objects, as mx.float16 prints.
            (data(1, 2, 4, mlx_stub.DTYPES["float16"]), None, ("f16", (1, 2, 4))),
        ]
        for inputs, dtype, (dt, shape) in cases:
            with self.subTest(inputs=inputs, dtype=dtype):
                r = l.resolve("headwise", dtype, inputs=inputs)
                self.assertEqual((r.dtype, r.shape), (dt, shape))
                self.assertIs(r, l.resolve("headwise", dt, shape))  # the same cached resolve
        r = l.resolve("headwise", inputs=data(2, 4, 64))
        self.assertEqual(r["TG"], 128)
        # The same arrays again: the same resolve, and the environment still counts.
        x = data(2, 4, 64)
        self.assertIs(l.resolve("headwise", inputs=x), l.resolve("headwise", inputs=x))
        env: Dict[str, str] = {}
        le = kp.loads(json.dumps(PARAMS), "Apple M3 Max", env=env, specs=[os.path.join(self.dir, "k.json")])
        self.assertEqual(le.resolve("headwise", inputs=x)["TG"], 128)
        env["KERNTUNE_HEADWISE_TG"] = "32"
        self.assertEqual(le.resolve("headwise", inputs=x)["TG"], 32)
        x[2] = fa(5)
        with self.assertRaises(kp.InputsError):
            le.resolve("headwise", inputs=x)
        self.assertEqual(r.params["TG"].source, "file:metal:Apple M3 Max:40c/headwise/f16/all")
        self.assertEqual(dict(r.launch.template)["N"], 512)

    def test_errors(self) -> None:
        l = self.load()
        x, g, hw, b = data(2, 4, 64)
        cases = [
            ([x, g, fa(5), b], kp.InputsError, "input hw: hw.shape[0] is 5, but dim nh is 4 from x.shape[1]"),
            ([x, g, hw, fa(255)], kp.InputsError,
             "input b: b.shape[0] is 255, but the spec gives nh * dh = 256 with dh=64, nh=4, rows=2"),
            ([fa(2, 256), g, hw, b], kp.InputsError,
             "input x has shape (2, 256) (2 dims); the spec gives it 3: [rows, nh, dh]"),
            ([x, g, hw], kp.InputsError, "3 inputs given; give the 4 data inputs (x, g, hw, b) or all 6"),
            ([fa(2, 4, 64, dtype="int32"), g, hw, b], kp.UnknownDTypeError,
             "input x has dtype mlx.core.int32; the spec gives it the tuned dtype"),
            ([object(), g, hw, b], kp.InputsError, "input x (object) has no shape of integers"),
            ([fa(2, 4, 64.0), g, hw, b], kp.InputsError, "input x (FakeArray) has no shape of integers"),
            ({"x": x, "g": g, "hw": hw, "w": b}, kp.InputsError, "w is not among its input_names"),
            ({"x": x, "g": g, "hw": hw}, kp.InputsError, "no array for input b"),
            ([fa(0, 4, 64), g, hw, b], kp.InvalidShapeError, "rows=0 out of range"),
        ]
        for inputs, err, want in cases:
            with self.subTest(want=want):
                with self.assertRaises(err) as cm:
                    l.resolve("headwise", inputs=inputs)
                self.assertIn(want, str(cm.exception))
                self.assertIn("headwise", str(cm.exception))

    def test_dims_not_in_inputs(self) -> None:
        # examples/mlx_scatter_add.json: bins is only an output's shape; inputs
        # have fixed dtypes, so the tuned dtype is given.
        l = kp.loads(json.dumps(PARAMS), "Apple M3 Max", env={}, specs=[os.path.join(ROOT, "examples", "mlx_scatter_add.json")])
        idx, vals = fa(1000, dtype="int32"), fa(1000, dtype="float32")
        with self.assertRaises(kp.InputsError) as cm:
            l.resolve("mlx_scatter_add", "f32", inputs=[idx, vals])
        self.assertIn("dim bins is not a whole shape entry of any input", str(cm.exception))
        self.assertIn("dims={'bins': ...}", str(cm.exception))
        r = l.resolve("mlx_scatter_add", "f32", inputs=[idx, vals], dims={"bins": 64})
        self.assertEqual(r.shape, (1000, 64))
        self.assertEqual(r.mlx_kwargs([idx, vals])["inputs"][2], [1000, 64])
        for _ in range(2):  # the second time from the cache of bindings
            with self.assertRaises(kp.UnknownDTypeError) as cm2:
                l.resolve("mlx_scatter_add", inputs=[idx, vals], dims={"bins": 64})
            self.assertIn("no input buffer has the tuned dtype", str(cm2.exception))
        self.assertEqual(l.resolve("mlx_scatter_add", "f16", inputs=[idx, vals], dims={"bins": 64}).dtype, "f16")
        self.assertEqual(l.resolve("mlx_scatter_add", "f32", inputs=[idx, vals], dims={"bins": 32}).shape, (1000, 32))
        cases = [
            ({"n": 999, "bins": 64}, "input idx: idx.shape[0] is 1000, but dim n is 999 from dims['n']"),
            ({"bin": 64}, "dims names 'bin', not a dim of mlx_scatter_add (n, bins)"),
            ({"bins": "64"}, "dims['bins'] is '64', not an integer"),
            ({"bins": True}, "dims['bins'] is True, not an integer"),
        ]
        for dims, want in cases:
            with self.subTest(dims=dims):
                with self.assertRaises(kp.InputsError) as cm3:
                    l.resolve("mlx_scatter_add", "f32", inputs=[idx, vals], dims=dims)
                self.assertIn(want, str(cm3.exception))

    def test_arguments(self) -> None:
        l = self.load()
        x = data(2, 4, 64)
        for call, err in ((lambda: l.resolve("headwise", "f16", (2, 4, 64), inputs=x), kp.OptionsError),
                          (lambda: l.resolve("headwise", "f16", dims={"nh": 4}), kp.OptionsError),
                          (lambda: l.resolve("headwise", inputs=x, dims=[("nh", 4)]), kp.OptionsError),
                          (lambda: l.resolve("softmax", inputs=x), kp.UnknownFamilyError),
                          (lambda: l.resolve("nope", inputs=x), kp.UnknownFamilyError)):
            with self.assertRaises(err):
                call()
        # The positional form is as it was.
        self.assertEqual(l.resolve("headwise", "f16", "2x4x64").shape, (2, 4, 64))


if __name__ == "__main__":
    unittest.main()
