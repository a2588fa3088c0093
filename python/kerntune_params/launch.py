"""The launch of a spec kernel with an mlx source: what an application
passes to the kernel mx.fast.metal_kernel returns, computed from the spec
for a shape, a dtype and the resolved parameters."""

from __future__ import annotations

import hashlib
import math
import operator
import struct
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ._common import _quote
from .errors import InputsError, UnknownDTypeError
from .families import dtypes
from .spec import _MAX_INT32, TUNED_MLX_DTYPE, MLXConstant, MLXKernel, SpecKernel, fill_format

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
    besides inputs: template (name, value) pairs in the spec's order (every
    one evaluated for the shape), grid and threadgroup 3-tuples, per output
    its shape and dtype, init_value; the spec's constant inputs built for
    the shape (constants: (position in input_names, value)), and the
    arguments of mx.fast.metal_kernel with the source and header filled in
    (kernel_args). Dtypes and constants are MLX dtypes and arrays when mlx
    is importable, else names and Python numbers or lists."""

    template: List[Tuple[str, Any]]
    grid: Tuple[int, int, int]
    threadgroup: Tuple[int, int, int]
    output_shapes: List[Tuple[int, ...]]
    output_dtypes: List[Any]
    init_value: Optional[float]
    input_names: Tuple[str, ...] = ()
    constants: Tuple[Tuple[int, Any], ...] = ()
    kernel_args: Mapping[str, Any] = field(default_factory=dict)
    _kernels: Optional[Dict[Any, Any]] = field(default=None, repr=False, compare=False)

    def inputs(self, given: Union[Sequence[Any], Mapping[str, Any]]) -> List[Any]:
        """The kernel's inputs in input_names order from given: every
        input_names entry, or the data inputs only (the constants are
        inserted at their places), or a mapping by input name (constants
        may be left out)."""
        names = self.input_names
        if given.__class__ is list or given.__class__ is tuple:
            if len(given) == len(names) or not names:
                return list(given)
        elif isinstance(given, Mapping):
            const = {names[i]: v for i, v in self.constants}
            unknown = [k for k in given if k not in names]
            if unknown:
                raise InputsError(f"params: {', '.join(map(str, unknown))} {'is' if len(unknown) == 1 else 'are'} not "
                                  f"among the kernel's input_names ({', '.join(names)})")
            missing = [n for n in names if n not in given and n not in const]
            if missing:
                raise InputsError(f"params: no array for input {', '.join(missing)} (input_names: {', '.join(names)})")
            return [given[n] if n in given else const[n] for n in names]
        elif isinstance(given, (str, bytes)):
            raise InputsError(f"params: inputs is a {type(given).__name__}; give the input arrays in input_names order")
        out = list(given)
        if not names or len(out) == len(names):
            return out
        if len(out) == len(names) - len(self.constants):
            for i, v in self.constants:  # in increasing position
                out.insert(i, v)
            return out
        data = [n for j, n in enumerate(names) if j not in {i for i, _ in self.constants}]
        raise InputsError(f"params: {len(out)} inputs given; the kernel takes {len(names)} ({', '.join(names)}), "
                          f"or the {len(data)} data inputs ({', '.join(data)}) with the spec's constants inserted")

    def kwargs(self, inputs: Union[Sequence[Any], Mapping[str, Any]]) -> Dict[str, Any]:
        """The keyword arguments of the kernel call: kernel(**launch.kwargs([a, b])),
        with inputs as Launch.inputs takes them."""
        return {
            "inputs": self.inputs(inputs),
            "template": list(self.template),
            "grid": self.grid,
            "threadgroup": self.threadgroup,
            "output_shapes": list(self.output_shapes),
            "output_dtypes": list(self.output_dtypes),
            "init_value": self.init_value,
        }

    def kernel(self) -> Any:
        """mx.fast.metal_kernel(**kernel_args), built once per distinct
        arguments and kept (MLX compiles it at its first call)."""
        mx = mlx_core()
        if mx is None:
            raise ImportError("kerntune_params: mlx.core is not importable; build the kernel with "
                              "mx.fast.metal_kernel(**r.mlx_kernel_args()) where mlx is")
        fn = mx.fast.metal_kernel
        a = self.kernel_args
        key = (fn, a.get("name"), a.get("source"), a.get("header"), tuple(a.get("input_names", ())),
               tuple(a.get("output_names", ())), a.get("ensure_row_contiguous"), a.get("atomic_outputs"),
               tuple(sorted((a.get("compile_options") or {}).items())))
        cache = self._kernels if self._kernels is not None else {}
        k = cache.get(key)
        if k is None:
            k = fn(**a)
            cache[key] = k
        return k


def kernel_args(m: MLXKernel, source: str, header: str, name: str) -> Dict[str, Any]:
    """The arguments of mx.fast.metal_kernel for an mlx kernel with the
    given source and header."""
    args: Dict[str, Any] = {
        "name": name, "input_names": list(m.input_names), "output_names": list(m.output_names),
        "source": source, "header": header, "ensure_row_contiguous": m.ensure_row_contiguous,
        "atomic_outputs": m.atomic_outputs,
    }
    if m.math_mode != "safe":
        args["compile_options"] = {"math_mode": m.math_mode}
    return args


# What a constant's element may be, by dtype.
_INT_RANGE = {f"{u}int{b}": ((0, (1 << b) - 1) if u else (-(1 << (b - 1)), (1 << (b - 1)) - 1))
              for u in ("", "u") for b in (8, 16, 32, 64)}
_FLOAT_MAX = {"float32": 3.4028234663852886e38, "float16": 65504.0, "bfloat16": 3.3895313892515355e38}
# kernels.RMSNormEps as float32, as Go's constants see eps.
_EPS = struct.unpack("<f", struct.pack("<f", 1e-6))[0]


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
        elif kind == "int_expr":
            v = val.eval_int(env)
            if not 0 <= v <= _MAX_INT32:
                raise val.error(f"is {v} with {_describe(env)}; a template value must be a non-negative 32-bit integer "
                                "(MLX names the function after its template values)")
            template.append((name, v))
        elif kind == "bool_expr":
            template.append((name, val.eval_bool(env)))
        else:
            template.append((name, val))
    shapes = [tuple(pr.eval_int(env) for pr in progs) for progs in k.output_shapes]
    out_dtypes = [mlx_dtype(tuned if d == "dtype" else d) for d in m.output_dtypes]
    constants = tuple((i, _constant(m.constants[ci], env)) for i, (what, ci) in enumerate(m.inputs) if what == "constant")
    source, header, name = m.source, m.header, m.name
    if m.format is not None:
        values = {key: pr.eval_int(env) for key, pr in m.format}
        source, header = fill_format(m.source_parts, values), fill_format(m.header_parts, values)
    if m.format:
        # MLX before 0.32.1 keeps one library per kernel name, so kernels of
        # one name and different sources could run each other's code in an
        # eval: each filled source gets its own name.
        digest = hashlib.sha1((source + "\0" + header).encode("utf-8"), usedforsecurity=False).hexdigest()[:10]
        name = f"{m.name}_{digest}"
    return Launch(template, grid, group, shapes, out_dtypes, m.init_value, tuple(m.input_names), constants,
                  kernel_args(m, source, header, name), m.kernels)


def _constant(c: MLXConstant, env: Mapping[str, Any]) -> Any:
    """A constant input for a shape: an mx.array of its dtype (0-d for a
    value, 1-d for values) when mlx is importable, else a Python number or
    list. Elements are checked to fit the dtype."""
    cenv = dict(env, bias=0, eps=_EPS)
    is_float = c.dtype.startswith(("float", "bfloat"))
    vals: List[Union[int, float]] = []
    for pr in c.values:
        if is_float:
            f = pr.eval_float(cenv)
            if not math.isfinite(f) or abs(f) > _FLOAT_MAX[c.dtype]:
                raise pr.error(f"is {f:g}, not a finite {c.dtype}, with {_describe(cenv)}")
            vals.append(f)
        else:
            n = pr.eval_int(cenv)
            lo, hi = _INT_RANGE[c.dtype]
            if not lo <= n <= hi:
                raise pr.error(f"is {n}, which does not fit {c.dtype}, with {_describe(cenv)}")
            vals.append(n)
    data: Any = vals[0] if c.scalar else vals
    mx = mlx_core()
    if mx is None:
        return data
    return mx.array(data, dtype=mlx_dtype(c.dtype))


def bind_inputs(k: SpecKernel, family: str, inputs: Union[Sequence[Any], Mapping[str, Any]],
                given_dims: Optional[Mapping[str, int]] = None) -> Tuple[Optional[str], Tuple[int, ...]]:
    """The shape (the dims in the spec's order) and the tuned dtype ("f32",
    "f16", "bf16"; None when no input has the tuned dtype) that input
    arrays give: a buffer's shape entry that is a bare dim name binds that
    dim (from a buffer with a length only, its number of elements); the
    other entries, and repeated dims, are checked against the bound dims.
    inputs: the data inputs in input_names order, every input_names entry,
    or a mapping by name; any objects with .shape and .dtype. given_dims
    binds dims the inputs do not give (one only an output's shape names)."""
    m = k.mlx
    assert m is not None
    names = m.input_names
    data = [(j, n) for j, n in enumerate(names) if m.inputs[j][0] == "buffer"]
    data_names = [n for _, n in data]
    arrays: Dict[str, Any] = {}
    if isinstance(inputs, Mapping):
        unknown = [str(x) for x in inputs if x not in names]
        if unknown:
            raise InputsError(f"params: {family}: {', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not among "
                              f"its input_names ({', '.join(names)})")
        missing = [n for n in data_names if n not in inputs]
        if missing:
            raise InputsError(f"params: {family}: no array for input {', '.join(missing)}")
        arrays = {n: inputs[n] for n in data_names}
    else:
        if isinstance(inputs, (str, bytes)):
            raise InputsError(f"params: {family}: inputs is a {type(inputs).__name__}; give the input arrays")
        given = list(inputs)
        if len(given) == len(names):
            arrays = {n: given[j] for j, n in data}
        elif len(given) == len(data):
            arrays = dict(zip(data_names, given))
        else:
            raise InputsError(f"params: {family}: {len(given)} inputs given; give the {len(data)} data inputs "
                              f"({', '.join(data_names)}) or all {len(names)} input_names ({', '.join(names)})")
    bound: Dict[str, Tuple[int, str]] = {}  # dim → (value, where it was read)
    for d, v in (given_dims or {}).items():
        if d not in k.dims:
            raise InputsError(f"params: {family}: dims names {d!r}, not a dim of {family} ({', '.join(k.dims)})")
        if isinstance(v, bool):
            raise InputsError(f"params: {family}: dims[{d!r}] is {v!r}, not an integer")
        try:
            bound[d] = (operator.index(v), f"dims[{d!r}]")
        except TypeError:
            raise InputsError(f"params: {family}: dims[{d!r}] is {v!r}, not an integer") from None
    entries: List[Tuple[str, str, Any, int]] = []  # (input, where, program, the array's value)
    for n in data_names:
        a = arrays[n]
        try:
            sh = tuple(operator.index(d) for d in a.shape)
        except (AttributeError, TypeError):
            raise InputsError(f"params: {family}: input {n} ({type(a).__name__}) has no shape of integers; give "
                              "arrays with .shape and .dtype (mx.array)") from None
        buf = k.in_buffers[n]
        if buf.shape is not None:
            if len(sh) != len(buf.shape):
                spec_shape = "[" + ", ".join(pr.src for pr in buf.shape) + "]"
                raise InputsError(f"params: {family}: input {n} has shape {_shape_text(sh)} ({len(sh)} dims); the spec "
                                  f"gives it {len(buf.shape)}: {spec_shape}")
            mine = [(n, f"{n}.shape[{i}]", pr, sh[i]) for i, pr in enumerate(buf.shape)]
        else:
            size = 1
            for d in sh:
                size *= d
            mine = [(n, f"{n}.size", buf.length, size)]
        for _, where, pr, v in mine:
            d = pr.src.strip()
            if d in k.dims:
                if d in bound and bound[d][0] != v:
                    raise InputsError(f"params: {family}: input {n}: {where} is {v}, but dim {d} is {bound[d][0]} "
                                      f"from {bound[d][1]}")
                bound.setdefault(d, (v, where))
        entries.extend(mine)
    missing = [d for d in k.dims if d not in bound]
    if missing:
        raise InputsError(f"params: {family}: dim {', '.join(missing)} is not a whole shape entry of any input, so the "
                          f"inputs do not give it; pass dims={{{', '.join(repr(d) + ': ...' for d in missing)}}}, or "
                          f"call resolve({family!r}, dtype, shape)")
    env: Dict[str, Any] = {d: bound[d][0] for d in k.dims}
    for n, where, pr, v in entries:
        if pr.src.strip() in k.dims:
            continue
        want = pr.eval_int(env)
        if want != v:
            raise InputsError(f"params: {family}: input {n}: {where} is {v}, but the spec gives {pr.src} = {want} "
                              f"with {_describe(env)}")
    found: Optional[str] = None
    for n in data_names:
        if k.in_buffers[n].dtype == "dtype":
            found = _array_dtype(family, n, getattr(arrays[n], "dtype", None))
            break
    return found, tuple(env[d] for d in k.dims)


def _shape_text(sh: Sequence[int]) -> str:
    return "(" + ", ".join(map(str, sh)) + ("," if len(sh) == 1 else "") + ")"


# MLX's (and NumPy's) names of the tuned dtypes.
_ARRAY_DTYPES = {v: k for k, v in TUNED_MLX_DTYPE.items()}


def _array_dtype(family: str, name: str, dt: Any) -> str:
    """The tuned dtype an input array has: str(x.dtype) as MLX prints it
    (mlx.core.float16), or a bare name (float16)."""
    try:
        s = str(dt)
    except Exception:
        s = repr(type(dt))
    bare = s[len("mlx.core."):] if s.startswith("mlx.core.") else s
    got = _ARRAY_DTYPES.get(bare)
    if got is None:
        raise UnknownDTypeError(f"params: {family}: input {name} has dtype {s}; the spec gives it the tuned dtype, one of "
                                f"{', '.join('mlx.core.' + v for v in TUNED_MLX_DTYPE.values())} (or pass dtype=)")
    return got


def _describe(env: Mapping[str, Any]) -> str:
    from .expressions import describe_env

    return describe_env(env)
