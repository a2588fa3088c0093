"""A stand-in for mlx (mlx.core, mlx.core.fast, mlx.core.metal) that
enforces the real signatures of mx.fast.metal_kernel and of the kernel it
returns (ml-explore/mlx python/src/fast.cpp), checking argument types as
nanobind would, and records every call. install() puts it in sys.modules."""

from __future__ import annotations

import sys
import types
from typing import Any, Dict, List, Optional, Sequence

CALLS: List[Dict[str, Any]] = []
KERNELS: List[Dict[str, Any]] = []


class Dtype:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return "mlx.core." + self.name

    __str__ = __repr__

    def __hash__(self) -> int:
        return hash(("Dtype", self.name))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Dtype) and other.name == self.name


DTYPES = {n: Dtype(n) for n in ("float32", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                "uint32", "uint64", "bool")}


class array:  # noqa: N801 - MLX's name
    def __init__(self, data: Any = None, dtype: Optional[Dtype] = None, shape: Sequence[int] = ()) -> None:
        if dtype is not None and not isinstance(dtype, Dtype):
            raise TypeError(f"array(): dtype must be an mlx.core.Dtype, got {type(dtype).__name__}")
        self.dtype = dtype or DTYPES["float32"]
        self.shape = tuple(shape) if shape else ((len(data),) if isinstance(data, list) else ())
        self.data = data

    def astype(self, dtype: Dtype) -> "array":
        if not isinstance(dtype, Dtype):
            raise TypeError("astype(): incompatible function arguments")
        return array(dtype=dtype, shape=self.shape)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _fail(what: str) -> None:
    raise TypeError(f"__call__(): incompatible function arguments: {what}")


def metal_kernel(name: str, input_names: Sequence[str], output_names: Sequence[str], source: str, header: str = "",
                 ensure_row_contiguous: bool = True, atomic_outputs: bool = False,
                 compile_options: Optional[Dict[str, str]] = None) -> Any:
    for arg, v in (("name", name), ("source", source), ("header", header)):
        if not isinstance(v, str):
            raise TypeError(f"metal_kernel(): {arg} must be a str")
    for arg, v in (("input_names", input_names), ("output_names", output_names)):
        if isinstance(v, str) or not all(isinstance(x, str) for x in v):
            raise TypeError(f"metal_kernel(): {arg} must be a list of str")
    for arg, v in (("ensure_row_contiguous", ensure_row_contiguous), ("atomic_outputs", atomic_outputs)):
        if not isinstance(v, bool):
            raise TypeError(f"metal_kernel(): {arg} must be a bool")
    if compile_options is not None:
        if not isinstance(compile_options, dict) or set(compile_options) - {"math_mode"}:
            raise ValueError("[metal_kernel] Unknown compile option")
        if compile_options.get("math_mode", "safe") not in ("safe", "relaxed", "fast"):
            raise ValueError("[metal_kernel] Expected math_mode to be 'safe', 'relaxed', or 'fast'.")
    KERNELS.append(dict(name=name, input_names=list(input_names), output_names=list(output_names),
                        ensure_row_contiguous=ensure_row_contiguous, atomic_outputs=atomic_outputs))

    def kernel(*, inputs: Sequence[Any], output_shapes: Sequence[Sequence[int]], output_dtypes: Sequence[Dtype],
               grid: Any, threadgroup: Any, template: Optional[Sequence[Any]] = None,
               init_value: Optional[float] = None, verbose: bool = False, stream: Any = None) -> List[array]:
        if len(inputs) != len(input_names) or not all(isinstance(x, (array, int, float)) for x in inputs):
            _fail("inputs")
        for arg, g in (("grid", grid), ("threadgroup", threadgroup)):
            if not isinstance(g, tuple) or len(g) != 3 or not all(_is_int(x) for x in g):
                _fail(f"{arg} must be a tuple of 3 ints, got {g!r}")
        if len(output_shapes) != len(output_names) or not all(
                not isinstance(s, str) and all(_is_int(d) for d in s) for s in output_shapes):
            _fail(f"output_shapes must be one sequence of ints per output, got {output_shapes!r}")
        if len(output_dtypes) != len(output_names) or not all(isinstance(d, Dtype) for d in output_dtypes):
            _fail(f"output_dtypes must be one mlx.core.Dtype per output, got {output_dtypes!r}")
        for t in template or []:
            if not (isinstance(t, tuple) and len(t) == 2 and isinstance(t[0], str)
                    and isinstance(t[1], (bool, int, Dtype))):
                raise ValueError("[metal_kernel] Invalid template argument. Must be `mlx.core.Dtype`, `int` or `bool`.")
        if init_value is not None and (isinstance(init_value, bool) or not isinstance(init_value, (int, float))):
            _fail("init_value must be a float or None")
        CALLS.append(dict(kernel=name, inputs=list(inputs), grid=grid, threadgroup=threadgroup, template=list(template or []),
                          output_shapes=[tuple(s) for s in output_shapes], output_dtypes=list(output_dtypes),
                          init_value=init_value))
        return [array(dtype=d, shape=s) for s, d in zip(output_shapes, output_dtypes)]

    kernel.spec = dict(name=name, source=source, header=header)  # type: ignore[attr-defined]
    return kernel


def install() -> types.ModuleType:
    """Installs the stub as mlx and mlx.core; returns mlx.core."""
    mlx = types.ModuleType("mlx")
    core = types.ModuleType("mlx.core")
    fast = types.ModuleType("mlx.core.fast")
    metal = types.ModuleType("mlx.core.metal")
    rnd = types.ModuleType("mlx.core.random")
    for n, d in DTYPES.items():
        setattr(core, n if n != "bool" else "bool_", d)
    core.Dtype = Dtype
    core.array = array
    fast.metal_kernel = metal_kernel
    info = {"device_name": "Apple M3 Max", "architecture": "applegpu_g15s", "memory_size": 1 << 36}
    core.device_info = lambda: dict(info)
    metal.device_info = lambda: dict(info)
    rnd.normal = lambda shape=(), dtype=DTYPES["float32"], **kw: array(dtype=dtype, shape=shape)
    core.fast, core.metal, core.random = fast, metal, rnd
    mlx.core = core
    sys.modules.update({"mlx": mlx, "mlx.core": core, "mlx.core.fast": fast, "mlx.core.metal": metal,
                        "mlx.core.random": rnd})
    return core


def uninstall() -> None:
    for n in ("mlx", "mlx.core", "mlx.core.fast", "mlx.core.metal", "mlx.core.random"):
        sys.modules.pop(n, None)
