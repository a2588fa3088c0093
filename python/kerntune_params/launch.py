"""The launch of a spec kernel with an mlx source: what an application
passes to the kernel mx.fast.metal_kernel returns, computed from the spec
for a shape, a dtype and the resolved parameters."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ._common import _quote
from .errors import UnknownDTypeError
from .families import dtypes
from .spec import TUNED_MLX_DTYPE, SpecKernel

# str() of MLX's dtypes → the loader's dtype names.
_MX_DTYPE_NAMES = {"mlx.core." + v: k for k, v in TUNED_MLX_DTYPE.items()}

_mx_module: Any = None
_mx_tried = False


def mlx_core() -> Any:
    """mlx.core when it is importable (imported at most once), else None."""
    global _mx_module, _mx_tried
    m = sys.modules.get("mlx.core")
    if m is not None:
        return m
    if not _mx_tried:
        _mx_tried = True
        try:
            import mlx.core as mx  # type: ignore[import-not-found]

            _mx_module = mx
        except Exception:  # mlx absent or broken: dtypes stay names
            _mx_module = None
    return _mx_module


def dtype_name(dtype: Any) -> str:
    """The loader's name of a dtype argument: "f32", "f16", "bf16", or an
    MLX dtype (mx.float32, mx.float16, mx.bfloat16), recognised by its
    str() without importing mlx. Anything else is an UnknownDTypeError."""
    if type(dtype) is str:
        if dtype in ("f32", "f16", "bf16"):
            return dtype
    else:
        try:
            s = str(dtype)
        except Exception:
            s = ""
        n = _MX_DTYPE_NAMES.get(s)
        if n is not None:
            return n
    try:
        shown = _quote(dtype) if isinstance(dtype, str) else repr(dtype)
    except Exception:
        shown = f"<{type(dtype).__name__}>"
    raise UnknownDTypeError(
        f"params: unknown dtype {shown} (known: {', '.join(dtypes())}) (MLX: mx.float32, mx.float16, mx.bfloat16)")


def mlx_dtype(name: str) -> Any:
    """An MLX dtype name as mx.<name> when mlx is importable, else the name."""
    mx = mlx_core()
    if mx is None:
        return name
    return getattr(mx, "bool_" if name == "bool" else name, name)


@dataclass(frozen=True)
class Launch:
    """The arguments of a call of the kernel mx.fast.metal_kernel returns,
    besides inputs: template (name, value) pairs in the spec's order, grid
    and threadgroup 3-tuples, per output its shape and dtype, init_value.
    Dtypes are MLX dtypes when mlx is importable, else their names."""

    template: List[Tuple[str, Any]]
    grid: Tuple[int, int, int]
    threadgroup: Tuple[int, int, int]
    output_shapes: List[Tuple[int, ...]]
    output_dtypes: List[Any]
    init_value: Optional[float]

    def kwargs(self, inputs: Sequence[Any]) -> Dict[str, Any]:
        """The keyword arguments of the kernel call: kernel(**launch.kwargs([a, b]))."""
        return {
            "inputs": list(inputs),
            "template": list(self.template),
            "grid": self.grid,
            "threadgroup": self.threadgroup,
            "output_shapes": list(self.output_shapes),
            "output_dtypes": list(self.output_dtypes),
            "init_value": self.init_value,
        }


def compute_launch(k: SpecKernel, shape: Sequence[int], dtype: str, p: Mapping[str, int]) -> Launch:
    """Evaluates a spec kernel's launch for a shape, a dtype and parameter
    values, with the evaluator's rules (errors are SpecErrors)."""
    env = k.env(shape, p)
    m = k.mlx
    assert m is not None
    tuned = TUNED_MLX_DTYPE.get(dtype, "float32")

    def dims(progs: List[Any], what: str, hi: int) -> Tuple[int, int, int]:
        out = [1, 1, 1]
        for i, pr in enumerate(progs):
            v = pr.eval_int(env)
            if v < 1 or v > hi:
                raise pr.error(f"is {v} with {_describe(env)}; {what} must be 1..{hi}")
            out[i] = v
        return out[0], out[1], out[2]

    grid = dims(k.grid, "an mlx grid (threads) dim", (1 << 31) - 1)
    group = dims(k.threadgroup, "a threadgroup dim", 1024)
    if group[0] * group[1] * group[2] > 1024:
        raise k.threadgroup[0].error(f"threadgroup {group} has {group[0] * group[1] * group[2]} threads; at most 1024")
    template: List[Tuple[str, Any]] = []
    for name, kind, val in m.template:
        if kind == "dtype":
            template.append((name, mlx_dtype(tuned)))
        elif kind == "param":
            template.append((name, int(p.get(name, 0))))
        elif kind == "mlx_dtype":
            template.append((name, mlx_dtype(val)))
        else:
            template.append((name, val))
    shapes = [tuple(pr.eval_int(env) for pr in progs) for progs in k.output_shapes]
    out_dtypes = [mlx_dtype(tuned if d == "dtype" else d) for d in m.output_dtypes]
    return Launch(template, grid, group, shapes, out_dtypes, m.init_value)


def _describe(env: Mapping[str, Any]) -> str:
    from .expressions import describe_env

    return describe_env(env)
