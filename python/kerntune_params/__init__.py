"""Load kerntune's hardware_params.json from Python.

``kerntune tune`` measures, per device, kernel family, dtype and shape class,
the fastest parameters of a kernel and writes them to hardware_params.json.
This module answers, at run time, the question the Go package
``github.com/kerntune/kerntune/params`` answers for Go programs, with the
same precedence, the same environment variables, the same device matching,
fallback and validation (a conformance suite, params/testdata/conformance,
runs both loaders on the same cases)::

    import kerntune_params as kp

    l = kp.load(device_name="Apple M3 Max")   # $KERNTUNE_PARAMS, else ./hardware_params.json
    for w in l.warnings:
        print("kerntune:", w)                 # e.g. no device of the file matches
    r = l.resolve("gemm_av", "f16", (1024, 1024, 1024))
    if r.use_baseline:
        ...                                   # call the vendor library (r.baseline)
    bm, bn = r["BM"], r["BN"]                 # r.params["BM"].source says where it came from

Per parameter the first of these that sets it wins: the variable
``<PREFIX>_<FAMILY>_<PARAM>`` (``KERNTUNE_GEMM_AV_BM=32``), an alias the
application declares (``alias("MLX_GEMM_TILE_AV", ("BM", "BN"), sep="x")``),
the device's exact-shape entry, its shape-class entry, the same entries of
the fallback devices of the same family, the built-in default. Kernels of
spec files (``kerntune tune --spec k.json``) are loaded with
``load(..., specs=["k.json"])``. The module uses only the standard library
(Python 3.9 or newer).
"""

from __future__ import annotations

import json
import math
import operator
import os
import platform
import re
import stat
import sys
from dataclasses import dataclass, field
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

__all__ = [
    "Alias",
    "DeviceChoice",
    "DeviceID",
    "DefaultsError",
    "EnvError",
    "Family",
    "InvalidShapeError",
    "Loader",
    "NoSpaceError",
    "OptionsError",
    "Param",
    "ParamsError",
    "PathError",
    "Resolved",
    "SpecError",
    "UnknownDTypeError",
    "UnknownFamilyError",
    "Value",
    "alias",
    "builtin_families",
    "cpu_device_key",
    "dtypes",
    "env_var_name",
    "fold_device_name",
    "load",
    "load_spec",
    "loads",
    "local_device",
    "normalize_cpu_model",
    "parse_shape",
    "shape_string",
]

__version__ = "0.1.0"

SCHEMA_VERSION = 1
DEFAULT_FILE_NAME = "hardware_params.json"
DEFAULT_ENV_PREFIX = "KERNTUNE"
MAX_DIM = 2**31 - 1
MAX_ELEMENTS = 1 << 40
# The largest params or spec file read, as Go's params.MaxFileSize: a real
# file is a few kilobytes per device; a larger one is a wrong path or a
# device such as /dev/zero, and reading it whole could exhaust memory.
MAX_FILE_SIZE = 64 << 20
USE_BASELINE = "baseline"
USE_TUNED = "tuned"
RESERVED_PARAM_NAME = "USE"

SOURCE_DEFAULT = "default"
SOURCE_ENV_PREFIX = "env:"
SOURCE_FILE_PREFIX = "file:"
SOURCE_FALLBACK_PREFIX = "fallback:"

MATCHED_KEY = "key"
MATCHED_ONLY = "only device in file"
MATCHED_NAME = "name"
MATCHED_NONE = "none"

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_PARAM_NAME_RE = re.compile(r"[A-Z][A-Z0-9_]*\Z")
_INT_RE = re.compile(r"[+-]?[0-9]+\Z")

# The characters Go's unicode.IsSpace accepts, so that trimming and
# splitting agree with the Go loader.
_GO_SPACE = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_GO_SPACE_STR = "".join(sorted(_GO_SPACE))
_ASCII_SPACE = " \t\n\r\v\f"


def _trim(s: str) -> str:
    """Go's strings.TrimSpace."""
    return s.strip(_GO_SPACE_STR)


def _go_fields(s: str) -> List[str]:
    """Go's strings.Fields."""
    out: List[str] = []
    cur: List[str] = []
    for c in s:
        if c in _GO_SPACE:
            if cur:
                out.append("".join(cur))
                cur = []
        else:
            cur.append(c)
    if cur:
        out.append("".join(cur))
    return out


def _quote(s: str) -> str:
    """A double-quoted string as Go's %q writes the common cases."""
    return json.dumps(s, ensure_ascii=False)


def _json_key(k: str) -> str:
    """A string as Go's encoding/json writes it (it escapes <, > and &)."""
    return (
        json.dumps(k, ensure_ascii=False)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _child(path: str, key: str) -> str:
    """Joins a JSON path and a key: .key for identifiers, ["key"] otherwise."""
    if _IDENT_RE.match(key):
        return key if path == "" else path + "." + key
    return path + "[" + _json_key(key) + "]"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# ---------------------------------------------------------------------------
# Errors


class ParamsError(Exception):
    """Every error of this module. kind names the class of error, as the
    conformance suite compares it: path, env, unknown_family, unknown_dtype,
    invalid_shape, no_space, defaults, spec, options, io."""

    kind = "other"


class PathError(ParamsError):
    """A damaged params file: the file ("" for data), the JSON path (e.g.
    devices["cpu:x"].kernels.gemv_nt["f32/tiny"].params.BN) and what is wrong."""

    kind = "path"

    def __init__(self, file: str, path: str, msg: str) -> None:
        self.file, self.path, self.msg = file, path, msg
        src = file or "params data"
        super().__init__(f"{src}: {msg}" if path == "" else f"{src}: {path}: {msg}")


class _TooLarge(Exception):
    """A file over MAX_FILE_SIZE; regular is False for a device or pipe."""

    def __init__(self, regular: bool) -> None:
        super().__init__()
        self.regular = regular

    def message(self, what: str) -> str:
        lead = "larger" if self.regular else "not a regular file, and it yields more"
        return f"{lead} than {MAX_FILE_SIZE >> 20} MiB, the limit of {what}"


def _read_limited(path: str) -> bytes:
    """Reads path when it holds at most MAX_FILE_SIZE bytes (Go's
    params.ReadFileLimit): a larger regular file is refused before it is
    read, and from anything else (a device such as /dev/zero, a pipe) at
    most MAX_FILE_SIZE + 1 bytes are read; both raise _TooLarge."""
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        regular = stat.S_ISREG(st.st_mode)
        if regular and st.st_size > MAX_FILE_SIZE:
            raise _TooLarge(True)
        data = f.read(MAX_FILE_SIZE + 1)
    if len(data) > MAX_FILE_SIZE:
        raise _TooLarge(regular)
    return data


class EnvError(ParamsError):
    """An environment variable whose value cannot be used; vars lists the
    (name, value) pairs involved."""

    kind = "env"

    def __init__(self, vars: Sequence[Tuple[str, str]], msg: str) -> None:
        self.vars = list(vars)
        self.msg = msg
        joined = ", ".join(f"{n}={_quote(v)}" for n, v in self.vars)
        super().__init__(f"params: environment {joined}: {msg}")


class UnknownFamilyError(ParamsError, LookupError):
    kind = "unknown_family"


class UnknownDTypeError(ParamsError, ValueError):
    kind = "unknown_dtype"


class InvalidShapeError(ParamsError, ValueError):
    kind = "invalid_shape"


class NoSpaceError(ParamsError):
    """The family has no parameters for the device's kind of backend."""

    kind = "no_space"


class DefaultsError(ParamsError):
    """The built-in defaults break the family's constraints for a shape."""

    kind = "defaults"


class SpecError(ParamsError):
    """A problem in a kernel spec file: the file, the JSON field and, where
    one is at fault, the expression."""

    kind = "spec"

    def __init__(self, file: str, field: str, expr: str, msg: str) -> None:
        self.file, self.field, self.expr, self.msg = file, field, expr, msg
        s = file
        if field:
            s += ": " + field
        if expr:
            s += " " + _quote(expr)
        super().__init__(s + ": " + msg)


class OptionsError(ParamsError, ValueError):
    """Bad arguments to load or loads."""

    kind = "options"


class _ShapeError(Exception):
    """A shape a family's classify rejects."""


# ---------------------------------------------------------------------------
# Shapes


def shape_string(shape: Sequence[int]) -> str:
    """The dims joined by x, as in entry keys: (1, 896, 4864) -> "1x896x4864"."""
    return "x".join(str(d) for d in shape)


def parse_shape(s: str) -> Tuple[int, ...]:
    """Parses "1x896x4864": plain decimal dims from 1 to 2**31-1 joined by x."""
    if s == "":
        raise InvalidShapeError("empty shape; write the dims joined by x, e.g. 1x896x4864")
    out = []
    for i, p in enumerate(s.split("x")):
        if p == "":
            raise InvalidShapeError(f"shape {_quote(s)}: dim {i + 1} is empty; write the dims joined by x, e.g. 1x896x4864")
        if not all("0" <= c <= "9" for c in p):
            raise InvalidShapeError(f"shape {_quote(s)}: dim {i + 1} ({_quote(p)}) is not a positive decimal integer")
        n = int(p)
        if n > MAX_DIM:
            raise InvalidShapeError(f"shape {_quote(s)}: dim {i + 1} ({p}) exceeds the limit of {MAX_DIM}")
        if n < 1:
            raise InvalidShapeError(f"shape {_quote(s)}: dim {i + 1} is {n}; dims must be at least 1")
        out.append(n)
    return tuple(out)


def _looks_like_shape(s: str) -> bool:
    return any(c.isdigit() for c in s) and all(("0" <= c <= "9") or c == "x" for c in s)


# ---------------------------------------------------------------------------
# Families


@dataclass(frozen=True)
class Param:
    """One tunable parameter: its allowed values and its built-in default."""

    name: str
    values: Tuple[int, ...]
    default: int
    doc: str = ""

    def allowed(self, v: int) -> bool:
        return v in self.values

    def values_string(self) -> str:
        return ", ".join(str(v) for v in self.values)


CheckFunc = Callable[[Optional[Sequence[int]], Mapping[str, int]], Optional[str]]


@dataclass
class Space:
    """The parameters of a family on one kind of backend ("cpu" or "gpu")
    and the check of a combination (None, or the reason it is invalid)."""

    params: List[Param]
    check: Optional[CheckFunc] = None

    def param(self, name: str) -> Optional[Param]:
        for p in self.params:
            if p.name == name:
                return p
        return None

    def has(self, names: Iterable[str]) -> bool:
        return all(self.param(n) is not None for n in names)


@dataclass
class Family:
    """A kernel family: its shape, how shapes map to classes, its spaces."""

    name: str
    doc: str
    dims: List[str]
    classes: List[Tuple[str, str]]
    classify: Callable[[Sequence[int]], str]
    spaces: Dict[str, Space]


def space_kind(backend: str) -> str:
    """The kind of parameter space a backend uses: GPU backends share one."""
    return "gpu" if backend in ("cuda", "metal", "opencl", "gpu") else backend


def dtypes() -> List[str]:
    """The element types the loader accepts."""
    return ["f32", "f16", "bf16"]


def _check_dims(family: str, names: Sequence[str], shape: Sequence[int], operands: Sequence[Tuple[int, int]]) -> None:
    if len(shape) != len(names):
        raise _ShapeError(f"{family} takes a shape of {len(names)} dims ({'×'.join(names)}), got {len(shape)}")
    for i, d in enumerate(shape):
        if d < 1 or d > MAX_DIM:
            raise _ShapeError(f"{family}: {names[i]}={d} out of range (1..{MAX_DIM})")
    for a, b in operands:
        if float(shape[a]) * float(shape[b]) > MAX_ELEMENTS:
            raise _ShapeError(f"{family}: {names[a]}×{names[b]} = {shape[a]}×{shape[b]} elements exceeds the limit of 2^40")


def _gemm_classifier(family: str, out_rows: int, out_cols: int) -> Tuple[Callable[[Sequence[int]], str], List[Tuple[str, str]]]:
    classes = [
        ("small", "m·n·k ≤ 2^21 (e.g. 128³)"),
        ("skinny", "not small, and the output has ≤ 32 rows or ≤ 32 columns"),
        ("medium", "not skinny, m·n·k ≤ 2^28 (e.g. 512³)"),
        ("large", "otherwise (e.g. 1024³, 512×4864×896)"),
    ]

    def classify(shape: Sequence[int]) -> str:
        _check_dims(family, ["m", "n", "k"], shape, [(0, 1), (0, 2), (1, 2)])
        vol = float(shape[0]) * float(shape[1]) * float(shape[2])
        if vol <= 1 << 21:
            return "small"
        if shape[out_rows] <= 32 or shape[out_cols] <= 32:
            return "skinny"
        if vol <= 1 << 28:
            return "medium"
        return "large"

    return classify, classes


def _gemv_classify(shape: Sequence[int]) -> str:
    _check_dims("gemv_nt", ["m", "n", "k"], shape, [(1, 2)])
    if shape[0] != 1:
        raise _ShapeError(f"gemv_nt: m must be 1 (y = x·Wᵀ with x of 1×k), got m={shape[0]}; use gemm_av for m > 1")
    n, k = shape[1], shape[2]
    if n < 2048 and k < 2048:
        return "tiny"
    if n < 2048:
        return "largeK_smallN"
    if n > 4096:
        return "largeN"
    return "mid"


def _row_classifier(family: str) -> Callable[[Sequence[int]], str]:
    def classify(shape: Sequence[int]) -> str:
        _check_dims(family, ["rows", "cols"], shape, [(0, 1)])
        c = shape[1]
        if c <= 256:
            return "short"
        if c <= 2048:
            return "medium"
        if c <= 16384:
            return "long"
        return "xlong"

    return classify


_ROW_CLASSES = [
    ("short", "cols ≤ 256"),
    ("medium", "256 < cols ≤ 2048 (e.g. hidden size 896)"),
    ("long", "2048 < cols ≤ 16384 (e.g. 4096)"),
    ("xlong", "cols > 16384 (e.g. a vocabulary of 151936)"),
]

_THREADS = Param("THREADS", (1, 2, 4, 8, 16, 32, 64), 4, "goroutines sharing the work")


def _go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _go_mod(a: int, b: int) -> int:
    """Go's % (the sign of the dividend)."""
    return a - b * _go_div(a, b)


def _cpu_gemm_space() -> Space:
    def check(_shape: Optional[Sequence[int]], p: Mapping[str, int]) -> Optional[str]:
        mr, nr = p.get("MR", 0), p.get("NR", 0)
        if mr <= 0 or nr <= 0:
            return f"MR={mr} and NR={nr} must be positive"
        if _go_mod(p.get("MC", 0), mr) != 0:
            return f"MC={p.get('MC', 0)} must be a multiple of MR={mr}"
        if _go_mod(p.get("NC", 0), nr) != 0:
            return f"NC={p.get('NC', 0)} must be a multiple of NR={nr}"
        return None

    return Space(
        [
            Param("MC", (16, 32, 64, 128, 256), 64, "rows of A packed per block"),
            Param("NC", (64, 128, 256, 512, 1024, 2048), 256, "columns of the right operand packed per block"),
            Param("KC", (32, 64, 128, 256, 512), 128, "depth of a packed block"),
            Param("MR", (1, 2, 4), 2, "rows of the register micro-tile"),
            Param("NR", (4, 8), 4, "columns of the register micro-tile"),
            _THREADS,
        ],
        check,
    )


def _cpu_row_space() -> Space:
    return Space(
        [
            Param("ROWS", (1, 2, 4, 8, 16, 64), 4, "rows per work chunk"),
            Param("UNROLL", (1, 2, 4, 8), 1, "independent accumulators along a row"),
            _THREADS,
        ]
    )


def _gpu_gemm_space() -> Space:
    # One space for both GEMM bodies, as params/family_gemm.go: MMA=0 the
    # SIMT body, MMA=1 the matrix-unit body (WM×WN SIMD-groups, a ring of
    # STAGES buffers, TF32 on CUDA only).
    def check(_shape: Optional[Sequence[int]], p: Mapping[str, int]) -> Optional[str]:
        mma = p.get("MMA", 0)
        if mma == 0:
            return _check_gemm_simt(p)
        if mma == 1:
            return _check_gemm_mma(p)
        return f"MMA={mma}; must be 0 or 1"

    return Space(
        [
            Param("BM", (16, 32, 48, 64, 128), 16, "output rows per threadgroup tile (48: MMA=1 only)"),
            Param("BN", (16, 32, 48, 64, 128, 256), 16, "output columns per threadgroup tile (48, 256: MMA=1 only)"),
            Param("BK", (8, 16, 24, 32, 64), 16, "depth of a tile staged in threadgroup memory (24, 64: MMA=1 only)"),
            Param("TM", (1, 2, 4, 8), 1, "output rows per thread (MMA=0; 1 with MMA=1)"),
            Param("TN", (1, 2, 4, 8), 1, "output columns per thread (MMA=0; 1 with MMA=1)"),
            Param("PAD", (0, 1, 4), 0, "padding of threadgroup tiles against bank conflicts "
                                       "(MMA=0; 0 with MMA=1, whose tiles are padded by 16 bytes a row)"),
            Param("MMA", (0, 1), 0, "1: matrix units through fragments (Metal simdgroup_matrix 8×8, CUDA mma.sync); 0: SIMT"),
            Param("WM", (1, 2, 4), 1, "SIMD-groups (warps) along the tile's rows (MMA=1; 1 with MMA=0)"),
            Param("WN", (1, 2, 4), 1, "SIMD-groups (warps) along the tile's columns (MMA=1; 1 with MMA=0)"),
            Param("STAGES", (1, 2, 3, 4), 1, "threadgroup buffers of the K loop: 2 overlaps the next tile's loads "
                                             "with this one's math (3, 4: MMA=1 only)"),
            Param("TF32", (0, 1), 0, "1: f32 products on TF32 matrix units (MMA=1, f32, CUDA, allowed by the user "
                                     "only: TF32 rounds inputs to 10-bit mantissas)"),
        ],
        check,
    )


def _non_zero(p: Mapping[str, int], name: str) -> int:
    """A parameter older files and hand-made maps may lack: absent (0) reads 1, its default."""
    v = p.get(name, 0)
    return v if v != 0 else 1


def _check_gemm_simt(p: Mapping[str, int]) -> Optional[str]:
    g = lambda k: p.get(k, 0)  # noqa: E731 - a missing parameter reads 0, as in Go
    if g("TM") <= 0 or g("TN") <= 0:
        return f"TM={g('TM')} and TN={g('TN')} must be positive"
    if g("BM") == 48 or g("BN") == 48 or g("BN") == 256 or g("BK") == 24 or g("BK") == 64:
        return f"MMA=0: BM={g('BM')}, BN={g('BN')}, BK={g('BK')}: 48, BN=256, BK=24 and BK=64 are for MMA=1 only"
    if _go_mod(g("BM"), g("TM")) != 0 or _go_mod(g("BN"), g("TN")) != 0:
        return f"BM={g('BM')} and BN={g('BN')} must be multiples of TM={g('TM')} and TN={g('TN')}"
    t = _go_div(g("BM"), g("TM")) * _go_div(g("BN"), g("TN"))
    if t < 32 or t > 1024:
        return f"(BM/TM)·(BN/TN) = {t} threads; must be 32..1024"
    if _non_zero(p, "WM") * _non_zero(p, "WN") != 1:
        return f"MMA=0: WM={g('WM')}, WN={g('WN')} must be 1 (SIMD-group layouts are for MMA=1)"
    s = _non_zero(p, "STAGES")
    if s > 2:
        return f"MMA=0: STAGES={s}; the SIMT body takes 1 or 2"
    f = s * g("BK") * (g("BM") + g("BN") + 2 * g("PAD"))
    if f > 12288:
        return f"MMA=0: STAGES·BK·(BM+BN+2·PAD) = {f} floats of threadgroup memory; must be at most 12288 (48 KiB)"
    if g("TF32") != 0:
        return f"MMA=0: TF32={g('TF32')} must be 0 (TF32 is a matrix-unit mode)"
    return None


# A SIMD-group's block of an MMA=1 tile, (BM/WM)·(BN/WN) elements, at most
# (params.MMAMaxWarpTile).
_MMA_MAX_WARP_TILE = 64 * 64


def _check_gemm_mma(p: Mapping[str, int]) -> Optional[str]:
    g = lambda k: p.get(k, 0)  # noqa: E731 - a missing parameter reads 0, as in Go
    if g("TM") != 1 or g("TN") != 1 or g("PAD") != 0:
        return f"MMA=1: TM={g('TM')}, TN={g('TN')}, PAD={g('PAD')} must be 1, 1 and 0 (the fragment layout replaces them)"
    wm, wn = g("WM"), g("WN")
    if wm <= 0 or wn <= 0:
        return f"MMA=1: WM={wm} and WN={wn} must be positive"
    if g("BM") < 32 or g("BN") < 32:
        return f"MMA=1: BM={g('BM')} and BN={g('BN')} must be at least 32"
    if _go_mod(g("BM"), 8 * wm) != 0 or _go_mod(g("BN"), 8 * wn) != 0 or _go_mod(g("BK"), 8) != 0:
        return (f"MMA=1: BM={g('BM')}, BN={g('BN')} must be multiples of 8·WM={8 * wm}, 8·WN={8 * wn}"
                f" and BK={g('BK')} of 8")
    t = _go_div(g("BM"), wm) * _go_div(g("BN"), wn)
    if t > _MMA_MAX_WARP_TILE:
        return f"MMA=1: a SIMD-group's block (BM/WM)·(BN/WN) = {t} elements; must be at most {_MMA_MAX_WARP_TILE}"
    if g("STAGES") < 1 or g("STAGES") > 4:
        return f"MMA=1: STAGES={g('STAGES')}; must be 1..4"
    if g("TF32") not in (0, 1):
        return f"TF32={g('TF32')}; must be 0 or 1"
    return None


def _gpu_gemv_space() -> Space:
    def check(shape: Optional[Sequence[int]], p: Mapping[str, int]) -> Optional[str]:
        if p.get("TPR", 0) > p.get("TG", 0):
            return f"TPR={p.get('TPR', 0)} exceeds TG={p.get('TG', 0)}"
        vec = p.get("VEC", 0)
        if shape is not None and len(shape) == 3 and vec > 0 and _go_mod(shape[2], vec) != 0:
            return f"VEC={vec} must divide k={shape[2]} (rows are read with aligned vector loads)"
        return None

    return Space(
        [
            Param("TG", (64, 128, 256, 512), 256, "threads per threadgroup"),
            Param("TPR", (4, 8, 16, 32, 64, 128, 256), 32, "threads per output row (a K-split)"),
            Param("UNROLL", (1, 2, 4, 8), 1, "independent accumulators per thread"),
            Param("VEC", (1, 2, 4, 8), 1, "elements per vector load"),
        ],
        check,
    )


def _gpu_row_space() -> Space:
    def check(shape: Optional[Sequence[int]], p: Mapping[str, int]) -> Optional[str]:
        t = p.get("TPR", 0) * p.get("RPB", 0)
        if t < 32 or t > 1024:
            return f"TPR·RPB = {t} threads; must be 32..1024"
        vec = p.get("VEC", 0)
        if shape is not None and len(shape) == 2 and vec > 0 and _go_mod(shape[1], vec) != 0:
            return f"VEC={vec} must divide cols={shape[1]} (rows are read with aligned vector loads)"
        return None

    return Space(
        [
            Param("TPR", (8, 16, 32, 64, 128, 256, 512, 1024), 256, "threads per row"),
            Param("RPB", (1, 2, 4, 8), 1, "rows per threadgroup"),
            Param("UNROLL", (1, 2, 4, 8), 1, "vector loads in flight per thread"),
            Param("VEC", (1, 2, 4, 8), 1, "elements per vector load and store"),
        ],
        check,
    )


def builtin_families() -> Dict[str, Family]:
    """The built-in families by name (fresh objects on every call)."""
    av, av_classes = _gemm_classifier("gemm_av", 0, 1)
    atb, atb_classes = _gemm_classifier("gemm_at_b", 1, 2)
    fams = [
        Family("gemm_av", "C = A·V; A m×k, V k×n, C m×n, row-major", ["m", "n", "k"], av_classes, av,
               {"cpu": _cpu_gemm_space(), "gpu": _gpu_gemm_space()}),
        Family("gemm_at_b", "Z = Aᵀ·B; A m×n, B m×k, Z n×k, row-major", ["m", "n", "k"], atb_classes, atb,
               {"cpu": _cpu_gemm_space(), "gpu": _gpu_gemm_space()}),
        Family("gemv_nt", "y = x·Wᵀ (+ bias); x 1×k, W n×k row-major, y 1×n (LLM decode)", ["m", "n", "k"],
               [("tiny", "n < 2048 and k < 2048"), ("largeK_smallN", "k ≥ 2048 and n < 2048"),
                ("largeN", "n > 4096"), ("mid", "otherwise (2048 ≤ n ≤ 4096)")],
               _gemv_classify,
               {"gpu": _gpu_gemv_space(), "cpu": Space([
                   Param("BN", (4, 8, 16, 32, 64, 128, 256), 32, "rows of W per work chunk"),
                   Param("ROWS", (1, 2, 4), 1, "rows of W sharing each load of x"),
                   Param("UNROLL", (1, 2, 4, 8), 1, "independent accumulators along k"),
                   _THREADS,
               ])}),
        Family("softmax", "row-wise, numerically stable softmax of rows×cols", ["rows", "cols"], list(_ROW_CLASSES),
               _row_classifier("softmax"), {"cpu": _cpu_row_space(), "gpu": _gpu_row_space()}),
        Family("rmsnorm", "row-wise y = x / sqrt(mean(x²) + eps) · w over rows×cols", ["rows", "cols"], list(_ROW_CLASSES),
               _row_classifier("rmsnorm"), {"cpu": _cpu_row_space(), "gpu": _gpu_row_space()}),
    ]
    return {f.name: f for f in fams}


def env_var_name(prefix: str, family: str, param: str) -> str:
    """<PREFIX>_<FAMILY>_<PARAM>, the family upper-cased with characters other
    than A-Z, 0-9 and _ turned into _: env_var_name("", "gemv_nt", "BN") is
    "KERNTUNE_GEMV_NT_BN"."""
    return (prefix or DEFAULT_ENV_PREFIX) + "_" + _env_family(family) + "_" + param


def _env_family(family: str) -> str:
    # Go upper-cases the UTF-8 bytes' runes and then replaces every byte
    # outside [A-Z0-9_]; a multi-byte rune becomes one _ per byte.
    return "".join(
        c if ("A" <= c <= "Z" or "0" <= c <= "9" or c == "_") else "_" * len(c.encode("utf-8"))
        for c in family.upper()
    )


# ---------------------------------------------------------------------------
# Kernel spec files: the expression language (a subset of expr-lang, which
# the Go spec package uses) and the families they define.

_FUNCS = {
    "cdiv", "idiv", "is_pow2", "exp", "sqrt", "rsqrt", "log", "tanh", "sigmoid",
    "min", "max", "abs", "ceil", "floor", "round", "int", "float",
}
_RESERVED_SPEC_NAMES = {
    "cdiv", "idiv", "is_pow2", "exp", "sqrt", "rsqrt", "log", "tanh", "sigmoid", "bias", "eps", "i",
    "NTHREADS", "min", "max", "abs", "ceil", "floor", "sum", "len",
}
_DIALECT_NAMES = {
    "T", "NTHREADS", "LID", "GROUP_X", "GROUP_Y", "LOAD", "STORE", "LOADV", "STOREV", "SHARED", "BARRIER",
    "SEG_SUM", "SEG_MAX", "EXP", "RSQRT", "FMAX", "FMA", "NEG_BIG", "UNROLL_LOOP",
}
_BINARY = {
    "or": 10, "||": 10, "and": 15, "&&": 15,
    "==": 20, "!=": 20, "<": 20, ">": 20, ">=": 20, "<=": 20,
    "+": 30, "-": 30, "*": 60, "/": 60, "%": 60, "**": 100, "^": 100,
}
_RIGHT_ASSOC = {"**", "^"}
_COMPARISON = {"<", ">", "<=", ">="}
_UNARY = {"not": 50, "!": 50, "-": 90, "+": 90}
_OPERATORS = ("**", "==", "!=", "<=", ">=", "&&", "||", "-", "+", "*", "/", "%", "^", "<", ">", "!", "?", ":", "(", ")", ",")


class _ExprSyntax(Exception):
    pass


class _ExprRuntime(Exception):
    pass


class _Expr:
    """One parsed expression: evaluates with expr-lang's rules (ints stay ints
    under + - * %, / divides as floats, ** is a float power, comparisons
    chain as a < b < c meaning a < b && b < c)."""

    def __init__(self, src: str, names: Sequence[str]) -> None:
        self.src = src
        self.idents: set = set()
        self._names = set(names)
        self._toks = self._tokenize(src)
        self._pos = 0
        self.node = self._expression(0)
        if self._peek() is not None:
            raise _ExprSyntax(f"unexpected token {self._peek()[1]!r}")

    @staticmethod
    def _tokenize(src: str) -> List[Tuple[str, str]]:
        toks: List[Tuple[str, str]] = []
        i, n = 0, len(src)
        while i < n:
            c = src[i]
            if c in " \t\n\r":
                i += 1
            elif c.isdigit() or (c == "." and i + 1 < n and src[i + 1].isdigit()):
                j = _scan_number(src, i)
                toks.append(("num", src[i:j]))
                i = j
            elif c.isalpha() or c == "_":
                j = i
                while j < n and (src[j].isalnum() or src[j] == "_"):
                    j += 1
                toks.append(("id", src[i:j]))
                i = j
            else:
                for op in _OPERATORS:
                    if src.startswith(op, i):
                        toks.append(("op", op))
                        i += len(op)
                        break
                else:
                    raise _ExprSyntax(f"unrecognized character: {c!r} (the Python loader reads arithmetic, comparisons, && || !, ?: and the spec functions)")
        return toks

    def _peek(self) -> Optional[Tuple[str, str]]:
        return self._toks[self._pos] if self._pos < len(self._toks) else None

    def _next(self) -> Tuple[str, str]:
        t = self._peek()
        if t is None:
            raise _ExprSyntax("unexpected end of expression")
        self._pos += 1
        return t

    def _expect(self, op: str) -> None:
        t = self._next()
        if t != ("op", op):
            raise _ExprSyntax(f"expected {op!r}, got {t[1]!r}")

    def _binop(self) -> Optional[str]:
        t = self._peek()
        if t is None:
            return None
        if t[0] == "op" and t[1] in _BINARY:
            return t[1]
        if t[0] == "id" and t[1] in ("and", "or"):
            return t[1]
        return None

    def _expression(self, prec: int) -> Any:
        left = self._primary()
        while True:
            op = self._binop()
            if op is None or _BINARY[op] < prec:
                break
            self._next()
            p = _BINARY[op]
            if op in _COMPARISON:
                node = None
                while True:
                    right = self._expression(p + 1)
                    cmp_ = ("bin", op, left, right)
                    node = cmp_ if node is None else ("bin", "&&", node, cmp_)
                    left = right
                    nxt = self._binop()
                    if nxt not in _COMPARISON:
                        break
                    op = nxt
                    self._next()
                left = node
                continue
            right = self._expression(p if op in _RIGHT_ASSOC else p + 1)
            left = ("bin", op, left, right)
        if prec == 0:
            while self._peek() == ("op", "?"):
                self._next()
                if self._peek() == ("op", ":"):
                    self._next()
                    left = ("cond", left, left, self._expression(0))
                else:
                    a = self._expression(0)
                    self._expect(":")
                    left = ("cond", left, a, self._expression(0))
        return left

    def _primary(self) -> Any:
        t = self._next()
        kind, v = t
        if (kind == "op" and v in ("-", "+", "!")) or (kind == "id" and v == "not"):
            return ("un", v, self._expression(_UNARY[v]))
        if t == ("op", "("):
            e = self._expression(0)
            self._expect(")")
            return e
        if kind == "num":
            s = v.replace("_", "").lower()
            try:
                if s.startswith("0x"):
                    return ("lit", int(s[2:], 16))
                if "." in s or "e" in s:
                    return ("lit", float(s))
                if s.startswith("0b"):
                    return ("lit", int(s[2:], 2))
                if s.startswith("0o"):
                    return ("lit", int(s[2:], 8))
                return ("lit", int(s, 10))
            except ValueError:
                raise _ExprSyntax(f"bad number syntax: {v!r}") from None
        if kind == "id":
            if v in ("true", "false"):
                return ("lit", v == "true")
            if self._peek() == ("op", "("):
                if v not in _FUNCS:
                    raise _ExprSyntax(f"unknown func {v}")
                self._next()
                args = []
                if self._peek() != ("op", ")"):
                    while True:
                        args.append(self._expression(0))
                        if self._peek() == ("op", ","):
                            self._next()
                            continue
                        break
                self._expect(")")
                return ("call", v, args)
            if v not in self._names:
                raise _ExprSyntax(f"unknown name {v} (names in scope: {', '.join(sorted(self._names))})")
            self.idents.add(v)
            return ("var", v)
        raise _ExprSyntax(f"unexpected token {v!r}")

    def eval(self, env: Mapping[str, Any]) -> Any:
        return _eval(self.node, env)


def _scan_number(src: str, i: int) -> int:
    """The end of the number at src[i:], as expr-lang's lexer scans it."""
    n = len(src)

    def run(j: int, chars: str) -> int:
        while j < n and src[j] in chars:
            j += 1
        return j

    digits = "0123456789_"
    if src[i] == "0" and i + 1 < n and src[i + 1] in "xXoObB":
        digits = {"x": "0123456789abcdefABCDEF_", "o": "01234567_", "b": "01_"}[src[i + 1].lower()]
        i += 2
    i = run(i, digits)
    if i < n and src[i] == ".":
        if i + 1 < n and src[i + 1] == ".":
            return i
        i = run(i + 1, digits)
    if i < n and src[i] in "eE":
        i += 1
        if i < n and src[i] in "+-":
            i += 1
        i = run(i, digits)
    if i < n and (src[i].isalnum() or src[i] == "_"):
        raise _ExprSyntax(f"bad number syntax: {src[:i + 1]!r}")
    return i


def _num(v: Any, what: str) -> Union[int, float]:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _ExprRuntime(f"invalid operation: {what} on {type(v).__name__}")
    return v


def _eval(n: Any, env: Mapping[str, Any]) -> Any:
    tag = n[0]
    if tag == "lit":
        return n[1]
    if tag == "var":
        return env.get(n[1], 0)
    if tag == "un":
        v = _eval(n[2], env)
        if n[1] in ("!", "not"):
            if not isinstance(v, bool):
                raise _ExprRuntime(f"invalid operation: {n[1]} on {type(v).__name__}")
            return not v
        v = _num(v, n[1])
        return -v if n[1] == "-" else v
    if tag == "cond":
        c = _eval(n[1], env)
        if not isinstance(c, bool):
            raise _ExprRuntime("non-bool condition")
        return _eval(n[2], env) if c else _eval(n[3], env)
    if tag == "call":
        return _call(n[1], [_eval(a, env) for a in n[2]])
    op = n[1]
    if op in ("&&", "and", "||", "or"):
        a = _eval(n[2], env)
        if not isinstance(a, bool):
            raise _ExprRuntime(f"invalid operation: {op} on {type(a).__name__}")
        if (op in ("&&", "and")) != a:
            return a
        b = _eval(n[3], env)
        if not isinstance(b, bool):
            raise _ExprRuntime(f"invalid operation: {op} on {type(b).__name__}")
        return b
    a, b = _eval(n[2], env), _eval(n[3], env)
    if op == "==":
        return a == b and isinstance(a, bool) == isinstance(b, bool)
    if op == "!=":
        return not (a == b and isinstance(a, bool) == isinstance(b, bool))
    a, b = _num(a, op), _num(b, op)
    if op == "<":
        return a < b
    if op == ">":
        return a > b
    if op == "<=":
        return a <= b
    if op == ">=":
        return a >= b
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        if b == 0:
            return math.nan if a == 0 or isinstance(a, float) and math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1.0, float(b))
        return float(a) / float(b)
    if op == "%":
        if not (isinstance(a, int) and isinstance(b, int)):
            raise _ExprRuntime("invalid operation: % on float")
        if b == 0:
            raise _ExprRuntime("integer divide by zero")
        return _go_mod(a, b)
    if op in ("**", "^"):
        try:
            return math.pow(float(a), float(b))
        except (OverflowError, ValueError):
            return math.nan
    raise _ExprRuntime(f"unknown operator {op}")


def _call(name: str, args: List[Any]) -> Any:
    def ints(n: int) -> List[int]:
        if len(args) != n or not all(_is_int(a) for a in args):
            raise _ExprRuntime(f"{name} takes {n} integer argument(s)")
        return args

    def one_num() -> Union[int, float]:
        if len(args) != 1:
            raise _ExprRuntime(f"{name} takes 1 argument")
        return _num(args[0], name)

    if name in ("cdiv", "idiv"):
        a, b = ints(2)
        if b == 0:
            raise _ExprRuntime(f"{name}({a}, 0): division by zero")
        return _go_div(a + b - 1, b) if name == "cdiv" else _go_div(a, b)
    if name == "is_pow2":
        (v,) = ints(1)
        return v > 0 and v & (v - 1) == 0
    if name in ("min", "max"):
        if not args:
            raise _ExprRuntime(f"{name} needs arguments")
        best = _num(args[0], name)
        for a in args[1:]:
            a = _num(a, name)
            if (a < best) if name == "min" else (a > best):
                best = a
        return best
    if name == "abs":
        return abs(one_num())
    if name in ("ceil", "floor", "round"):
        x = float(one_num())
        if name == "ceil":
            return float(math.ceil(x)) if math.isfinite(x) else x
        if name == "floor":
            return float(math.floor(x)) if math.isfinite(x) else x
        return float(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1) if math.isfinite(x) else x
    if name == "int":
        x = one_num()
        return int(x) if math.isfinite(x) else 0
    if name == "float":
        return float(one_num())
    x = float(one_num())
    try:
        if name == "exp":
            return math.exp(x)
        if name == "sqrt":
            return math.sqrt(x) if x >= 0 else math.nan
        if name == "rsqrt":
            return 1 / math.sqrt(x) if x > 0 else (math.inf if x == 0 else math.nan)
        if name == "log":
            return math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan)
        if name == "tanh":
            return math.tanh(x)
        if name == "sigmoid":
            return 1 / (1 + math.exp(-x))
    except OverflowError:
        return math.inf if name != "sigmoid" else 0.0
    raise _ExprRuntime(f"unknown func {name}")


def _describe_env(env: Mapping[str, Any]) -> str:
    parts = [f"{k}={env[k]}" for k in sorted(env) if _is_int(env[k])]
    return ", ".join(parts) if parts else "no variables"


def load_spec(path: str) -> Family:
    """Reads the parameters, shape and classes of the kernel a spec file
    defines (the Go spec package's schema, spec/schema.json) as a Family.
    Only what a loader needs is read: name, implements, dims, params,
    constraints, classes and buffers (whose lengths bound valid shapes);
    source and launch are the tuner's business and are not checked here.
    Errors are SpecErrors naming the file, the field and the expression."""
    try:
        raw = _read_limited(path)
    except _TooLarge as e:
        raise SpecError(path, "", "", e.message("a spec file")) from None
    except OSError as e:
        raise SpecError(path, "", "", f"spec: {e}") from None
    try:
        s = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise SpecError(path, "", "", f"invalid JSON: {e}") from None
    if not isinstance(s, dict):
        raise SpecError(path, "", "", "invalid JSON: a spec is a JSON object")

    def fail(fld: str, msg: str, expr: str = "") -> SpecError:
        return SpecError(path, fld, expr, msg)

    def typed(key: str, typ: Any, what: str) -> Any:
        v = s.get(key)
        if v is not None and not isinstance(v, typ):
            raise fail(key, f"must be {what}")
        return v

    builtin = builtin_families()
    name = typed("name", str, "a string") or ""
    if not re.match(r"[a-z][a-z0-9_]*\Z", name):
        raise fail("name", f"{_quote(name)} is not a lower-case identifier ([a-z][a-z0-9_]*); it names the kernel in hardware_params.json and KERNTUNE_<NAME>_<PARAM>")
    if name in builtin:
        raise fail("name", f"{_quote(name)} is a built-in family; choose another name (implements: {_quote(name)} reuses its reference)")
    implements = typed("implements", str, "a string") or ""
    base: Optional[Family] = None
    if implements:
        if implements not in builtin:
            raise fail("implements", f"{_quote(implements)} is not a built-in family (allowed: {', '.join(sorted(builtin))})")
        base = builtin[implements]
    dims = typed("dims", list, "an array of names") or []
    if base is not None:
        if dims and list(dims) != base.dims:
            raise fail("dims", f"{implements} takes dims {', '.join(base.dims)}, not {', '.join(map(str, dims))}")
        dims = list(base.dims)
    elif not dims:
        raise fail("dims", "required: the names of the shape's dimensions (or implements: a built-in family)")
    seen: Dict[str, str] = {}

    def claim(fld: str, n: Any) -> None:
        if not isinstance(n, str) or not _IDENT_RE.match(n):
            raise fail(fld, f"{_quote(str(n))} is not an identifier")
        if n in _RESERVED_SPEC_NAMES:
            raise fail(fld, f"{_quote(n)} is a reserved name in expressions")
        if n in seen:
            raise fail(fld, f"{_quote(n)} is already used by {seen[n]}")
        seen[n] = fld

    for i, d in enumerate(dims):
        claim(f"dims[{i}]", d)
    params: List[Param] = []
    for i, p in enumerate(typed("params", list, "an array") or []):
        f = f"params[{i}]"
        if not isinstance(p, dict):
            raise fail(f, "must be an object")
        pn = p.get("name")
        if not isinstance(pn, str) or not _PARAM_NAME_RE.match(pn):
            raise fail(f + ".name", f"{_quote(str(pn))} is not an upper-case identifier ([A-Z][A-Z0-9_]*)")
        if pn == RESERVED_PARAM_NAME:
            raise fail(f + ".name", f"{pn} is reserved: KERNTUNE_{name.upper()}_USE chooses between the tuned kernel and the baseline")
        if pn in _DIALECT_NAMES or pn.startswith("KT_"):
            raise fail(f + ".name", f"{_quote(pn)} is a name the kernel dialect defines (reserved: T, NTHREADS, LID, LOAD, ... and the KT_ prefix)")
        claim(f + ".name", pn)
        vals = p.get("values")
        if not isinstance(vals, list) or not vals:
            raise fail(f + ".values", f"{pn} has no values")
        for j, v in enumerate(vals):
            if not _is_int(v):
                raise fail(f"{f}.values[{j}]", "must be an integer")
            if v in vals[:j]:
                raise fail(f"{f}.values[{j}]", f"{pn} lists {v} twice")
        default = p.get("default")
        if default is None:
            default = vals[0]
        if not _is_int(default) or default not in vals:
            raise fail(f + ".default", f"{default} is not among {pn}'s values")
        params.append(Param(pn, tuple(vals), default, str(p.get("doc", ""))))
    pnames = [p.name for p in params]

    def compile_(fld: str, src: Any, names: Sequence[str]) -> _Expr:
        if not isinstance(src, str) or src.strip() == "":
            raise fail(fld, "empty expression", src if isinstance(src, str) else "")
        try:
            return _Expr(src, names)
        except _ExprSyntax as e:
            raise fail(fld, str(e), src) from None

    constraints = [compile_(f"constraints[{i}]", c, dims + pnames) for i, c in enumerate(typed("constraints", list, "an array") or [])]
    lengths: List[Tuple[str, _Expr]] = []
    for i, b in enumerate(typed("buffers", list, "an array") or []):
        if not isinstance(b, dict):
            raise fail(f"buffers[{i}]", "must be an object")
        length, field = b.get("length"), f"buffers[{i}].length"
        if not length and isinstance(b.get("shape"), list) and b["shape"]:
            # An mlx buffer's length is the product of its shape, as in Go.
            length, field = "(" + ") * (".join(str(d) for d in b["shape"]) + ")", f"buffers[{i}].shape"
        lengths.append((str(b.get("name", "")), compile_(field, length, dims)))
    classes: List[Tuple[str, Optional[_Expr]]] = []
    cls_list = typed("classes", list, "an array") or []
    for i, c in enumerate(cls_list):
        f = f"classes[{i}]"
        cn = c.get("name") if isinstance(c, dict) else None
        if not isinstance(cn, str) or not _IDENT_RE.match(cn):
            raise fail(f + ".name", f"{_quote(str(cn))} is not an identifier (it is part of entry keys such as f32/<class>)")
        if any(cn == x for x, _ in classes):
            raise fail(f + ".name", f"class {_quote(cn)} is listed twice")
        when = c.get("when", "")
        if when == "":
            if i != len(cls_list) - 1:
                raise fail(f + ".when", "only the last class may omit when (it takes every shape the others do not)")
            classes.append((cn, None))
        else:
            classes.append((cn, compile_(f + ".when", when, dims)))

    def env_of(shape: Optional[Sequence[int]], p: Optional[Mapping[str, int]]) -> Dict[str, Any]:
        env: Dict[str, Any] = {}
        for i, d in enumerate(dims):
            if shape is not None and i < len(shape):
                env[d] = shape[i]
        for n in pnames:
            env[n] = (p or {}).get(n, 0)
        return env

    def run(fld: str, e: _Expr, env: Mapping[str, Any]) -> Any:
        try:
            return e.eval(env)
        except _ExprRuntime as x:
            raise _ShapeError(str(SpecError(path, fld, e.src, f"{x} (with {_describe_env(env)})"))) from None

    def classify(shape: Sequence[int]) -> str:
        base_class = ""
        if base is not None:
            try:
                base_class = base.classify(shape)
            except _ShapeError as e:
                raise _ShapeError(f"{name} (implements {base.name}): {e}") from None
        if len(shape) != len(dims):
            raise _ShapeError(f"{name} takes a shape of {len(dims)} dims ({'×'.join(dims)}), got {len(shape)}")
        for i, d in enumerate(shape):
            if d < 1 or d > MAX_DIM:
                raise _ShapeError(f"{name}: {dims[i]}={d} out of range (1..{MAX_DIM})")
        env = env_of(shape, None)
        for i, (bn, e) in enumerate(lengths):
            n = _as_int(path, f"buffers[{i}].length", e, run(f"buffers[{i}].length", e, env), env)
            if n < 1 or n > MAX_ELEMENTS:
                raise _ShapeError(f"{name}: buffer {bn} has {n} elements for shape {shape_string(shape)} (allowed 1..2^40)")
        if not classes:
            return base_class if base is not None else "all"
        for i, (cn, w) in enumerate(classes):
            if w is None:
                return cn
            ok = run(f"classes[{i}].when", w, env)
            if not isinstance(ok, bool):
                raise _ShapeError(str(SpecError(path, f"classes[{i}].when", w.src, f"is {ok}, not a boolean")))
            if ok:
                return cn
        rules = "; ".join(f"{cn}: {w.src if w else ''}" for cn, w in classes)
        raise _ShapeError(f"{name}: shape {shape_string(shape)} matches no class ({rules})")

    def check(shape: Optional[Sequence[int]], p: Mapping[str, int]) -> Optional[str]:
        env = env_of(shape, p)
        for i, con in enumerate(constraints):
            if shape is None and con.idents & set(dims):
                continue
            try:
                ok = con.eval(env)
            except _ExprRuntime as x:
                return str(SpecError(path, f"constraints[{i}]", con.src, f"{x} (with {_describe_env(env)})"))
            if not isinstance(ok, bool):
                return str(SpecError(path, f"constraints[{i}]", con.src, f"is {ok}, not a boolean"))
            if not ok:
                return f"constraint {_quote(con.src)} is false ({_describe_env(env)})"
        return None

    if classes:
        fam_classes = [(cn, w.src if w else "otherwise") for cn, w in classes]
    elif base is not None:
        fam_classes = list(base.classes)
    else:
        fam_classes = [("all", "every shape")]
    doc = s.get("doc") or "user-defined kernel from " + os.path.basename(path)
    return Family(name, str(doc), list(dims), fam_classes, classify, {"gpu": Space(params, check)})


def _as_int(path: str, fld: str, e: _Expr, v: Any, env: Mapping[str, Any]) -> int:
    if _is_int(v):
        return v
    if isinstance(v, float) and v == math.trunc(v) and abs(v) < 2**53:
        return int(v)
    raise _ShapeError(str(SpecError(path, fld, e.src, f"is {v}, not an integer, with {_describe_env(env)}")))


# ---------------------------------------------------------------------------
# Devices


@dataclass(frozen=True)
class DeviceID:
    """A device as the params file records it: its key and fields."""

    key: str = ""
    backend: str = ""
    name: str = ""
    family: str = ""
    compute_units: int = 0


def cpu_device_key(model: str, cores: int) -> str:
    """A CPU's key in the params file: cpu:<model>:<cores>."""
    return f"cpu:{model}:{cores}"


def normalize_cpu_model(s: str) -> str:
    """Runs of white space become one space, "/" becomes "-", double quotes
    are dropped: the model name kerntune's CPU backend records."""
    return " ".join(_go_fields(s.replace("/", "-").replace('"', "")))


def fold_device_name(s: str) -> str:
    """The form in which device names are compared: ASCII letters lower-cased,
    runs of ASCII white space made one space and trimmed, "/" read as "-",
    double quotes dropped. Names match when their folded forms are equal and
    not empty."""
    s = s.replace("/", "-").replace('"', "")
    words = [w for w in re.split("[" + re.escape(_ASCII_SPACE) + "]+", s) if w]
    return " ".join(words).translate(_ASCII_LOWER)


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _goarch() -> str:
    m = platform.machine().lower()
    return {
        "x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i386": "386", "i686": "386",
        "x86": "386", "armv6l": "arm", "armv7l": "arm", "arm": "arm", "ppc64le": "ppc64le", "ppc64": "ppc64",
        "s390x": "s390x", "riscv64": "riscv64", "loongarch64": "loong64", "mips64": "mips64",
    }.get(m, m)


def _cpu_model_raw() -> str:
    try:
        with open("/proc/cpuinfo", "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                k, sep, v = line.rstrip("\n").partition(":")
                if sep and _trim(k) in ("model name", "Model", "Hardware") and _trim(v):
                    return _trim(v)
        return _goarch()
    except OSError:
        pass
    if sys.platform == "darwin":
        try:
            import ctypes
            import ctypes.util

            libc = ctypes.CDLL(ctypes.util.find_library("c"))
            size = ctypes.c_size_t(0)
            name = b"machdep.cpu.brand_string"
            if libc.sysctlbyname(name, None, ctypes.byref(size), None, 0) == 0 and size.value > 0:
                buf = ctypes.create_string_buffer(size.value)
                if libc.sysctlbyname(name, buf, ctypes.byref(size), None, 0) == 0 and buf.value:
                    return buf.value.decode("utf-8", "replace")
        except (OSError, AttributeError):
            pass
    return _goarch()


def _num_cpu() -> int:
    if hasattr(os, "sched_getaffinity"):
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except OSError:
            pass
    return os.cpu_count() or 1


def local_device() -> DeviceID:
    """This machine's CPU exactly as kerntune's CPU backend records it (and
    Go's params.LocalDevice describes it): the model from /proc/cpuinfo
    ("model name", "Model" or "Hardware") or sysctl machdep.cpu.brand_string,
    the CPUs this process may run on, GOARCH as the family."""
    model = normalize_cpu_model(_cpu_model_raw())
    cores = _num_cpu()
    return DeviceID(cpu_device_key(model, cores), "cpu", model, _goarch(), cores)


@dataclass
class DeviceChoice:
    """Which device the loader resolves for, and why (as Go's DeviceChoice)."""

    key: str = ""
    how: str = ""
    matched: str = ""
    in_file: bool = False
    backend: str = ""
    kind: str = ""
    family: str = ""
    fallbacks: List[str] = field(default_factory=list)


def _match_name(devices: Mapping[str, Any], name: str, cu: int, backend: str) -> Tuple[str, str]:
    want = fold_device_name(name)
    if want == "":
        return "", ""
    cands = []
    for k, d in devices.items():
        if fold_device_name(d.name) != want or (backend and d.backend != backend):
            continue
        if cu <= 0:
            dist = 0
        elif d.compute_units <= 0:
            dist = 1 << 40
        else:
            dist = abs(d.compute_units - cu)
        cands.append((dist, k.encode("utf-8"), k, d.compute_units))
    if not cands:
        return "", ""
    cands.sort()
    _, _, key, has = cands[0]
    if (cu > 0 and has == cu) or (cu <= 0 and len(cands) == 1):
        return key, MATCHED_NAME
    if cu > 0 and has <= 0:
        return key, f"{MATCHED_NAME}, compute units not recorded (wanted {cu})"
    if cu > 0:
        return key, f"{MATCHED_NAME}, nearest compute units ({has} for {cu})"
    return key, f"{MATCHED_NAME}, first of {len(cands)} by key (no compute units given)"


# ---------------------------------------------------------------------------
# The file


# The fields of an entry's "time" (where its tuning time went), in the order
# the Go loader checks them (params.TuneTime).
_TIME_FIELDS = ("wall_s", "setup_s", "compile_s", "verify_s", "measure_s", "search_s", "journal_s",
                "other_s", "device_s", "idle_s", "busy_pct")


class _JsonFloat(float):
    """A JSON number written with a fraction or exponent; keeps its text."""

    text = ""

    def __new__(cls, s: str) -> "_JsonFloat":
        v = float.__new__(cls, s)
        v.text = s
        return v


def _reject_constant(s: str) -> Any:
    raise ValueError(f"invalid character {s[0]!r} looking for beginning of value")


@dataclass
class _Entry:
    params: Dict[str, int]
    use: str
    baseline: str


@dataclass
class _Device:
    backend: str
    name: str
    family: str
    compute_units: int
    kernels: Dict[str, Dict[str, _Entry]]


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


class _Walker:
    """Converts decoded JSON into devices, raising PathError at the first
    problem, in the order the Go loader checks (so both name the same path)."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, path: str, msg: str) -> PathError:
        return PathError(self.file, path, msg)

    def obj(self, path: str, v: Any) -> Dict[str, Any]:
        if not isinstance(v, dict):
            raise self.fail(path, f"must be an object, got {_type_name(v)}")
        return v

    def str_(self, path: str, v: Any) -> str:
        if not isinstance(v, str):
            raise self.fail(path, f"must be a string, got {_type_name(v)}")
        return v

    def num(self, path: str, v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.fail(path, f"must be a number, got {_type_name(v)}")
        x = float(v)
        if math.isinf(x) or math.isnan(x):
            raise self.fail(path, f"must be a finite number, got {v.text if isinstance(v, _JsonFloat) else v}")
        return x

    def integer(self, path: str, v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.fail(path, f"must be an integer, got {_type_name(v)}")
        if isinstance(v, _JsonFloat) or not (_INT32_MIN <= v <= _INT32_MAX):
            text = v.text if isinstance(v, _JsonFloat) else str(v)
            raise self.fail(path, f"must be an integer between {_INT32_MIN} and {_INT32_MAX}, got {text}")
        return int(v)

    def file1(self, root: Any) -> Dict[str, _Device]:
        m = self.obj("", root)
        if "schema_version" not in m:
            raise self.fail("schema_version", f"missing (this reader understands schema_version {SCHEMA_VERSION})")
        sv = self.integer("schema_version", m["schema_version"])
        if sv != SCHEMA_VERSION:
            raise self.fail("schema_version", f"is {sv}; this reader understands only {SCHEMA_VERSION}")
        if "generator" in m:
            self.str_("generator", m["generator"])
        if "devices" not in m:
            raise self.fail("devices", "missing")
        dm = self.obj("devices", m["devices"])
        out: Dict[str, _Device] = {}
        for key in sorted(dm):
            p = _child("devices", key)
            if key == "":
                raise self.fail(p, "device key must not be empty")
            out[key] = self.device(p, dm[key])
        return out

    def device(self, path: str, v: Any) -> _Device:
        m = self.obj(path, v)
        for req in ("backend", "name", "family", "kernels"):
            if req not in m:
                raise self.fail(_child(path, req), "missing")
        d = _Device(
            self.str_(_child(path, "backend"), m["backend"]),
            self.str_(_child(path, "name"), m["name"]),
            self.str_(_child(path, "family"), m["family"]),
            0,
            {},
        )
        if "compute_units" in m:
            d.compute_units = self.integer(_child(path, "compute_units"), m["compute_units"])
        if "tuned_at" in m:
            self.str_(_child(path, "tuned_at"), m["tuned_at"])
        if "facts" in m:
            fp = _child(path, "facts")
            fm = self.obj(fp, m["facts"])
            for k in sorted(fm):
                x = fm[k]
                if isinstance(x, (int, float)) and not isinstance(x, bool):
                    self.num(_child(fp, k), x)
        kp = _child(path, "kernels")
        km = self.obj(kp, m["kernels"])
        for fam in sorted(km):
            fp = _child(kp, fam)
            em = self.obj(fp, km[fam])
            entries: Dict[str, _Entry] = {}
            for ek in sorted(em):
                ep = _child(fp, ek)
                i = ek.find("/")
                if i <= 0 or i == len(ek) - 1:
                    raise self.fail(ep, "entry key must be <dtype>/<class> or <dtype>/<shape>")
                entries[ek] = self.entry(ep, em[ek])
            d.kernels[fam] = entries
        return d

    def param_map(self, path: str, v: Any) -> Dict[str, int]:
        m = self.obj(path, v)
        out = {}
        for k in sorted(m):
            p = _child(path, k)
            if not _PARAM_NAME_RE.match(k):
                raise self.fail(p, "parameter name must be an upper-case identifier like BN or TG")
            out[k] = self.integer(p, m[k])
        return out

    def entry(self, path: str, v: Any) -> _Entry:
        m = self.obj(path, v)
        if "params" not in m:
            raise self.fail(_child(path, "params"), "missing")
        e = _Entry(self.param_map(_child(path, "params"), m["params"]), "", "")
        for k in ("median_us", "iqr_us", "min_us"):
            if k in m:
                self.num(_child(path, k), m[k])
        if "samples" in m:
            self.integer(_child(path, "samples"), m["samples"])
        if "strategy" in m:
            self.str_(_child(path, "strategy"), m["strategy"])
        if "evaluations" in m:
            self.integer(_child(path, "evaluations"), m["evaluations"])
        if "stopped" in m:
            self.str_(_child(path, "stopped"), m["stopped"])
        if "use" in m:
            up = _child(path, "use")
            e.use = self.str_(up, m["use"])
            if e.use not in (USE_BASELINE, USE_TUNED):
                raise self.fail(up, f"is {_quote(e.use)}; must be {_quote(USE_BASELINE)} or {_quote(USE_TUNED)}")
        if "fast_math" in m and not isinstance(m["fast_math"], bool):
            raise self.fail(_child(path, "fast_math"), f"must be a boolean, got {_type_name(m['fast_math'])}")
        if "no_harm" in m:
            self.str_(_child(path, "no_harm"), m["no_harm"])
        if m.get("drift") is not None:
            dp = _child(path, "drift")
            dm = self.obj(dp, m["drift"])
            for k in ("checks", "events", "remeasured", "settled"):
                if k in dm:
                    self.integer(_child(dp, k), dm[k])
            for k in ("max_pct", "waited_s"):
                if k in dm:
                    self.num(_child(dp, k), dm[k])
        if m.get("time") is not None:
            tp = _child(path, "time")
            tm = self.obj(tp, m["time"])
            for k in _TIME_FIELDS:
                if k not in tm:
                    continue
                fp = _child(tp, k)
                x = self.num(fp, tm[k])
                text = tm[k].text if isinstance(tm[k], _JsonFloat) else str(tm[k])
                if x < 0:
                    raise self.fail(fp, f"must not be negative, got {text}")
                if k == "busy_pct" and x > 100:
                    raise self.fail(fp, f"must be at most 100, got {text}")
        if "shape_median_us" in m:
            sp = _child(path, "shape_median_us")
            arr = m["shape_median_us"]
            if not isinstance(arr, list):
                raise self.fail(sp, f"must be an array of numbers, got {_type_name(arr)}")
            for i, x in enumerate(arr):
                self.num(f"{sp}[{i}]", x)
        if m.get("roofline") is not None:
            rp = _child(path, "roofline")
            rm = self.obj(rp, m["roofline"])
            for k in ("flops", "bytes", "gflops", "gbps", "pct_of_floor"):
                if k in rm:
                    self.num(_child(rp, k), rm[k])
            if "memory_bound" in rm and not isinstance(rm["memory_bound"], bool):
                raise self.fail(_child(rp, "memory_bound"), f"must be a boolean, got {_type_name(rm['memory_bound'])}")
        if m.get("default") is not None:
            dp = _child(path, "default")
            dm = self.obj(dp, m["default"])
            if "params" in dm:
                self.param_map(_child(dp, "params"), dm["params"])
            if "median_us" in dm:
                self.num(_child(dp, "median_us"), dm["median_us"])
        if m.get("baseline") is not None:
            bp = _child(path, "baseline")
            bm = self.obj(bp, m["baseline"])
            if "name" in bm:
                e.baseline = self.str_(_child(bp, "name"), bm["name"])
            if "median_us" in bm:
                self.num(_child(bp, "median_us"), bm["median_us"])
        if "shapes" in m:
            sp = _child(path, "shapes")
            arr = m["shapes"]
            if not isinstance(arr, list):
                raise self.fail(sp, f"must be an array of shapes, got {_type_name(arr)}")
            for i, s in enumerate(arr):
                ip = f"{sp}[{i}]"
                if not isinstance(s, list):
                    raise self.fail(ip, f"must be an array of integers, got {_type_name(s)}")
                for j, d in enumerate(s):
                    self.integer(f"{ip}[{j}]", d)
        if "candidates" in m:
            cp = _child(path, "candidates")
            cm = self.obj(cp, m["candidates"])
            for k in ("valid", "measured", "failed"):
                if k in cm:
                    self.integer(_child(cp, k), cm[k])
        return e


def _parse(data: Union[bytes, str], file: str) -> Dict[str, _Device]:
    if isinstance(data, bytes):
        # Go's decoder reads invalid UTF-8 as U+FFFD; so does this.
        text = data.decode("utf-8", "replace")
    else:
        text = data
    try:
        root = json.loads(text, parse_float=_JsonFloat, parse_constant=_reject_constant)
    except ValueError as e:
        raise PathError(file, "", f"not valid JSON: {e}") from None
    return _Walker(file).file1(root)


# ---------------------------------------------------------------------------
# Resolving


class Value(NamedTuple):
    """A resolved parameter value and where it came from: "default",
    "env:<VARIABLE>", "file:<device>/<family>/<entry key>" or
    "fallback:<device>/<family>/<entry key>"."""

    value: int
    source: str


@dataclass
class Resolved:
    """The parameters of one kernel launch (Go's params.Resolved).

    ``r["BM"]`` is a value, ``r.params["BM"].source`` its source; ``matched``
    says how the device was found; ``use_baseline`` says to call the
    baseline (``baseline`` names it) instead of the tuned kernel, from
    ``use_source`` ($<PREFIX>_<FAMILY>_USE, else the first matching entry's
    "use", else "default")."""

    device: str
    backend: str
    kernel: str
    dtype: str
    shape: Tuple[int, ...]
    shape_class: str
    params: Dict[str, Value]
    names: List[str]
    matched: str
    use_baseline: bool = False
    baseline: str = ""
    use_source: str = SOURCE_DEFAULT

    def __getitem__(self, name: str) -> int:
        return self.params[name].value

    def get(self, name: str, default: int = 0) -> int:
        v = self.params.get(name)
        return default if v is None else v.value

    def ints(self) -> Dict[str, int]:
        """The values as a plain dict, in the space's order."""
        return {n: self.params[n].value for n in self.names}


@dataclass(frozen=True)
class Alias:
    """A variable that sets several parameters, values joined by sep (see alias)."""

    name: str
    params: Tuple[str, ...]
    sep: str = "x"
    family: str = ""


def alias(name: str, params: Sequence[str], sep: str = "x", family: Optional[str] = None) -> Alias:
    """Declares a composite override: ``alias("MLX_GEMM_TILE_AV", ("BM", "BN"),
    sep="x", family="gemm_av")`` makes ``MLX_GEMM_TILE_AV=32x8`` set BM=32
    and BN=8 (source "env:MLX_GEMM_TILE_AV"). Without family it applies to
    every family whose parameters include all of params. A parameter's own
    variable (KERNTUNE_GEMM_AV_BM) beats an alias, an earlier alias a later
    one, and an alias beats the file. Pass aliases to load(aliases=[...])."""
    return Alias(name, tuple(params), sep, family or "")


@dataclass
class _ParamState:
    param: Param
    env: str
    default: int


@dataclass
class _AliasState:
    alias: Alias
    params: Optional[List[Param]]


@dataclass
class _FamState:
    fam: Family
    kind: str
    space: Optional[Space]
    params: List[_ParamState]
    names: List[str]
    use_env: str
    aliases: List[_AliasState]


@dataclass
class _EntryState:
    params: Dict[str, int]
    source: str
    use: str
    baseline: str


def _valid_dtype(s: str) -> bool:
    return s in ("f32", "f16", "bf16")


class Loader:
    """Resolves kernel parameters from one params file, the environment and
    the built-in defaults. Make one with load or loads; it does not change
    afterwards, and resolve reads the environment at every call."""

    path: str
    file_found: bool
    env_prefix: str
    device: DeviceChoice
    warnings: List[str]
    families: List[str]

    def __init__(
        self,
        devices: Optional[Dict[str, _Device]],
        name: str,
        *,
        device: Optional[str],
        device_name: Optional[str],
        compute_units: int,
        backend: Optional[str],
        device_family: Optional[str],
        env_prefix: str,
        env: Optional[Mapping[str, str]],
        specs: Sequence[str],
        defaults: Optional[Mapping[str, Mapping[str, int]]],
        aliases: Sequence[Alias],
        local: Union[None, bool, DeviceID, Mapping[str, Any]],
    ) -> None:
        self.path = name
        self.file_found = devices is not None
        self.env_prefix = env_prefix
        self._env = env
        self.warnings = []
        self._known_env: Dict[str, str] = {}
        # Variables known but not read for this device, and why; a family's
        # part of its variable names → the family.
        self._unread: Dict[str, str] = {}
        self._env_fams: Dict[str, str] = {}
        fams = builtin_families()
        for sp in specs:
            fam = load_spec(os.fspath(sp))
            fams[fam.name] = fam
        self._claim_env(env_prefix + "_PARAMS", "the loader's PARAMS")
        self._claim_env(env_prefix + "_DEVICE", "the loader's DEVICE")
        self._claim_env(env_prefix + "_DEVICE_NAME", "the loader's DEVICE_NAME")
        # load reads <PREFIX>_PARAMS only when the caller names no file.
        self._unread[env_prefix + "_PARAMS"] = "not read: the caller named the params file"
        if device:
            self._unread[env_prefix + "_DEVICE"] = "not read: Options.Device names the device"
        by_env: Dict[str, str] = {}
        for key in sorted(fams):
            e = _env_family(key)
            if e in by_env:
                raise OptionsError(f"params: families {by_env[e]} and {key} share the variable names {env_prefix}_{e}_*")
            by_env[e] = key
            self._env_fams[e] = key
            self._claim_env(env_var_name(env_prefix, key, RESERVED_PARAM_NAME), key + "'s choice of the baseline")
            for kind in sorted(fams[key].spaces):
                for p in fams[key].spaces[kind].params:
                    self._claim_env(env_var_name(env_prefix, key, p.name), f"{key} parameter {p.name}")
        self._known_env[env_prefix + "_METAL_MPS"] = "the kerntune tool's MPS setting"
        self.families = sorted(fams)
        defaults = defaults or {}
        self._validate_defaults(fams, defaults)
        self._validate_aliases(fams, aliases)
        if devices is not None:
            self._validate_file(devices, name, fams)
        self.device = self._choose_device(devices, name, device, device_name, compute_units, backend, device_family, local)
        self._chain: List[Dict[str, Dict[str, _EntryState]]] = []
        if devices is not None:
            if self.device.in_file:
                self._chain.append(self._dev_state(devices, self.device.key, SOURCE_FILE_PREFIX))
            for k in self.device.fallbacks:
                self._chain.append(self._dev_state(devices, k, SOURCE_FALLBACK_PREFIX))
        self._fams: Dict[str, _FamState] = {}
        for key, fam in fams.items():
            sp = fam.spaces.get(self.device.kind)
            fs = _FamState(fam, self.device.kind, sp, [], [], env_var_name(env_prefix, key, RESERVED_PARAM_NAME), [])
            if sp is not None:
                over = defaults.get(key, {})
                for p in sp.params:
                    fs.params.append(_ParamState(p, env_var_name(env_prefix, key, p.name), over.get(p.name, p.default)))
                    fs.names.append(p.name)
                for a in aliases:
                    if a.family != key and (a.family != "" or not sp.has(a.params)):
                        continue
                    fs.aliases.append(_AliasState(a, [sp.param(n) for n in a.params] if sp.has(a.params) else None))  # type: ignore[misc]
            self._fams[key] = fs
            self._note_unread(key, fam, fs)

    def _note_unread(self, key: str, fam: Family, fs: "_FamState") -> None:
        # As the Go loader's noteUnread: the variables of a family that
        # resolve never reads for this device, and why.
        d = self.device
        dev = f"{d.key}, backend {d.backend}" if d.key else f"backend {d.backend}"
        if fs.space is None:
            why = f"{key} has no parameters for {fs.kind} backends (the device: {dev})"
            self._unread[env_var_name(self.env_prefix, key, RESERVED_PARAM_NAME)] = why
            for kind in sorted(fam.spaces):
                for p in fam.spaces[kind].params:
                    self._unread[env_var_name(self.env_prefix, key, p.name)] = why
            return
        for kind in sorted(fam.spaces):
            for p in fam.spaces[kind].params:
                if fs.space.param(p.name) is not None:
                    continue
                self._unread.setdefault(
                    env_var_name(self.env_prefix, key, p.name),
                    f"{key} {p.name} is a parameter of {kind} backends, not of {fs.kind} ones (the device: {dev}; "
                    f"its {key} parameters: {', '.join(fs.names)})",
                )

    # -- environment

    def _lookup(self, name: str) -> Optional[str]:
        env = os.environ if self._env is None else self._env
        return env.get(name)

    def _claim_env(self, name: str, what: str) -> None:
        prev = self._known_env.get(name)
        if prev is not None and prev != what:
            raise OptionsError(f"params: variable {name} would be both {prev} and {what}")
        self._known_env[name] = what

    def unused_env(self, environ: Optional[Mapping[str, str]] = None) -> List[str]:
        """The variables of environ (default os.environ) with the loader's
        prefix that have no effect, sorted: those it never reads (a typo
        such as KERNTUNE_GEMV_NT_XX) and those it does not read for this
        device (a parameter of another backend's space, such as
        KERNTUNE_GEMV_NT_TG on a CPU device; every variable of a family
        without a space for the device's backend; <PREFIX>_PARAMS when the
        caller named the file; <PREFIX>_DEVICE when device is given)."""
        return [n for n, _ in self.unused_env_vars(environ)]

    def unused_env_vars(self, environ: Optional[Mapping[str, str]] = None) -> List[Tuple[str, str]]:
        """unused_env with the reason for each variable: (name, why) pairs,
        sorted by name (Go's Loader.UnusedEnvVars)."""
        env = os.environ if environ is None else environ
        p = self.env_prefix + "_"
        out = []
        for n in sorted(env, key=lambda k: k.encode("utf-8")):
            if not n.startswith(p):
                continue
            if n in self._unread:
                out.append((n, self._unread[n]))
            elif n not in self._known_env:
                out.append((n, self._unknown_var_why(n)))
        return out

    def _unknown_var_why(self, name: str) -> str:
        rest = name[len(self.env_prefix) + 1:]
        fam = ""
        for e, key in self._env_fams.items():
            if rest.startswith(e + "_") and len(e) > len(_env_family(fam)):
                fam = key
        if fam == "":
            prefix = self.env_prefix
            return (f"not a variable the loader reads: {name} names no kernel family (known: {', '.join(self.families)}) "
                    f"and no setting ({prefix}_PARAMS, {prefix}_DEVICE, {prefix}_DEVICE_NAME)")
        fs = self._fams.get(fam)
        param = rest[len(_env_family(fam)) + 1:]
        if fs is None or fs.space is None:
            return f"not a variable the loader reads: {fam} has no parameter {param}"
        return f"not a variable the loader reads: {fam} has no parameter {param} (on {fs.kind} backends it has {', '.join(fs.names)})"

    # -- validation

    @staticmethod
    def _validate_defaults(fams: Mapping[str, Family], defaults: Mapping[str, Mapping[str, int]]) -> None:
        for key in sorted(defaults):
            fam = fams.get(key)
            if fam is None:
                raise OptionsError(f"params: defaults: unknown kernel family {_quote(key)}")
            for name in sorted(defaults[key]):
                v = defaults[key][name]
                found = False
                for kind in sorted(fam.spaces):
                    p = fam.spaces[kind].param(name)
                    if p is None:
                        continue
                    found = True
                    if not _is_int(v) or not p.allowed(v):
                        raise OptionsError(f"params: defaults[{_quote(key)}][{_quote(name)}] = {v} is not allowed on {kind} backends (allowed: {p.values_string()})")
                if not found:
                    raise OptionsError(f"params: defaults[{_quote(key)}]: family {key} has no parameter {name}")

    def _validate_aliases(self, fams: Mapping[str, Family], aliases: Sequence[Alias]) -> None:
        for i, a in enumerate(aliases):
            if not isinstance(a, Alias):
                raise OptionsError(f"params: aliases[{i}] is not an Alias (make it with kerntune_params.alias)")

            def fail(msg: str) -> OptionsError:
                return OptionsError(f"params: aliases[{i}] ({a.name}): {msg}")

            if not _IDENT_RE.match(a.name):
                raise fail(f"the name {_quote(a.name)} is not a variable name ([A-Za-z_][A-Za-z0-9_]*)")
            if a.sep == "" or any(c in a.sep for c in "0123456789+-"):
                raise fail(f"the separator {_quote(a.sep)} must be non-empty and hold no digit or sign, e.g. \"x\"")
            if not a.params:
                raise fail("names no parameters")
            for j, p in enumerate(a.params):
                if not _PARAM_NAME_RE.match(p):
                    raise fail(f"parameter name {_quote(p)} is not an upper-case identifier")
                if p in a.params[:j]:
                    raise fail(f"names parameter {p} twice")
            if a.family:
                fam = fams.get(a.family)
                if fam is None:
                    raise fail(f"unknown kernel family {_quote(a.family)}")
                if not any(s.has(a.params) for s in fam.spaces.values()):
                    raise fail(f"{a.family} has no parameter space with all of {', '.join(a.params)}")
                what = f"alias of {a.family} {', '.join(a.params)}"
            else:
                if not any(s.has(a.params) for f in fams.values() for s in f.spaces.values()):
                    raise fail(f"no family has a parameter space with all of {', '.join(a.params)}")
                what = f"alias of {', '.join(a.params)}"
            self._claim_env(a.name, what)

    def _validate_file(self, devices: Dict[str, _Device], name: str, fams: Mapping[str, Family]) -> None:
        def fail(path: str, msg: str) -> PathError:
            return PathError(name, path, msg)

        label = name or "params data"
        for dk in sorted(devices):
            dev = devices[dk]
            kind = space_kind(dev.backend)
            for fk in sorted(dev.kernels):
                fam = fams.get(fk)
                if fam is None or kind not in fam.spaces:
                    continue
                space = fam.spaces[kind]
                fp = _child(_child(_child("devices", dk), "kernels"), fk)
                for ek in sorted(dev.kernels[fk]):
                    e = dev.kernels[fk][ek]
                    ep = _child(fp, ek)
                    dtype, _, suffix = ek.partition("/")
                    shape: Optional[Tuple[int, ...]] = None
                    if _looks_like_shape(suffix):
                        try:
                            s = parse_shape(suffix)
                            fam.classify(s)
                        except (InvalidShapeError, _ShapeError) as x:
                            raise fail(ep, f"bad exact-shape entry key: {x}") from None
                        if shape_string(s) != suffix:
                            raise fail(ep, f"exact-shape entry key is not canonical; write {dtype}/{shape_string(s)}")
                        shape = s
                    elif fam.classes and suffix not in [c for c, _ in fam.classes]:
                        self.warnings.append(f"{label}: {ep}: {fk} has no shape class {_quote(suffix)}; entry ignored")
                    if not _valid_dtype(dtype):
                        self.warnings.append(f"{label}: {ep}: unknown dtype {_quote(dtype)} (known: {', '.join(dtypes())}); entry ignored")
                    pp = _child(ep, "params")
                    for pn in sorted(e.params):
                        p = space.param(pn)
                        if p is None:
                            raise fail(_child(pp, pn), f"{fk} has no parameter {pn} on {kind} backends (it has {', '.join(x.name for x in space.params)})")
                        if not p.allowed(e.params[pn]):
                            raise fail(_child(pp, pn), f"{e.params[pn]} is not an allowed value of {fk} {pn} on {kind} backends (allowed: {p.values_string()})")
                    if space.check is not None and len(e.params) == len(space.params):
                        msg = _check(space, shape, e.params)
                        if msg is not None:
                            raise fail(pp, f"breaks the constraints of {fk}: {msg}")

    # -- the device

    def _choose_device(
        self,
        devices: Optional[Dict[str, _Device]],
        name: str,
        opt_device: Optional[str],
        opt_name: Optional[str],
        cu: int,
        opt_backend: Optional[str],
        opt_family: Optional[str],
        opt_local: Union[None, bool, DeviceID, Mapping[str, Any]],
    ) -> DeviceChoice:
        d = DeviceChoice()
        prefix = self.env_prefix
        if not _is_int(cu) or cu < 0:
            raise OptionsError(f"params: compute_units is {cu}; it must be 0 (unknown) or positive")
        o_backend = opt_backend or ""
        key, key_how = opt_device or "", "Options.Device"
        if key == "":
            x = self._lookup(prefix + "_DEVICE")
            if x is not None:
                key, key_how = _trim(x), SOURCE_ENV_PREFIX + prefix + "_DEVICE"
        dev_name, name_how = _trim(opt_name or ""), "Options.DeviceName"
        x = self._lookup(prefix + "_DEVICE_NAME")
        if x is not None and _trim(x) != "":
            dev_name, name_how = _trim(x), SOURCE_ENV_PREFIX + prefix + "_DEVICE_NAME"
        backend, family = o_backend, opt_family or ""
        local = DeviceID()
        use_local = False
        if key == "" and dev_name == "" and devices is not None and len(devices) > 0:
            if opt_local is None or opt_local is True:
                local = local_device()
            elif isinstance(opt_local, DeviceID):
                local = opt_local
            elif isinstance(opt_local, Mapping):
                local = DeviceID(**dict(opt_local))
            use_local = local.backend != "" and (o_backend == "" or o_backend == local.backend)

        found, not_only = "", ""
        only = next(iter(devices)) if devices is not None and len(devices) == 1 else ""
        if devices is None:
            pass
        elif key != "" and key in devices:
            found, d.how, d.matched = key, key_how, MATCHED_KEY
        elif dev_name != "":
            k, m = _match_name(devices, dev_name, cu, o_backend)
            if k:
                found, d.how, d.matched = k, name_how, m
        elif key != "":
            pass
        elif only:
            # The only device is another machine's when its backend or model is
            # not this one's: then it is no match, only a possible fallback.
            same, not_only = _only_device_fits(devices[only], only, o_backend, local, use_local)
            if not_only == "":
                found = only
                d.how = d.matched = MATCHED_ONLY
                if not same:
                    self.warnings.append(
                        f"the only device in {name or 'params data'}, {_describe_device(only, devices[only])}, is not the local device "
                        f"{_describe_local(local)} but has its backend and model; its entries apply (set {prefix}_DEVICE={only} to choose it by key)"
                    )
        elif use_local and local.key != "" and local.key in devices and devices[local.key].backend == local.backend:
            found, d.how, d.matched = local.key, "local device", MATCHED_KEY
        elif use_local:
            k, m = _match_name(devices, local.name, local.compute_units, local.backend)
            if k:
                found, d.how, d.matched = k, "local device", m

        dev = devices[found] if found and devices is not None else None
        if dev is not None:
            d.key, d.in_file = found, True
            d.backend, d.family = dev.backend, dev.family
            if o_backend and space_kind(o_backend) != space_kind(dev.backend):
                raise OptionsError(f"params: Options.Backend is {_quote(o_backend)} but device {_quote(d.key)} in {name or 'params data'} has backend {_quote(dev.backend)}")
        else:
            if use_local:
                backend = backend or local.backend
                family = family or local.family
            d.backend, d.family = backend, family
            if key:
                d.key, d.how = key, key_how
        d.fallbacks = _siblings(devices, d.key, d.family, d.backend)
        if d.backend == "":
            d.backend = "cpu"
            if d.fallbacks and devices is not None:
                d.backend = devices[d.fallbacks[0]].backend
                d.fallbacks = _siblings(devices, d.key, d.family, d.backend)
        d.kind = space_kind(d.backend)
        if dev is not None:
            return d
        d.matched = "family " + d.family if d.fallbacks else MATCHED_NONE
        if not devices:
            return d
        label = name or "params data"
        then = "built-in defaults apply"
        if d.fallbacks:
            then = f"using fallback devices {', '.join(d.fallbacks)} (family {d.family})"
        holds = "its devices: " + "; ".join(_describe_device(k, devices[k]) for k in _sorted_keys(devices))
        asked = []
        if key:
            asked.append(f"key {_quote(key)} ({key_how})")
        if dev_name:
            n = f"name {_quote(dev_name)} ({name_how})"
            if o_backend:
                n += " on backend " + o_backend
            asked.append(n)
        if not_only:
            self.warnings.append(
                f"the only device in {label}, {_describe_device(only, devices[only])}, {not_only}; {then} (set {prefix}_DEVICE or "
                f"{prefix}_DEVICE_NAME, or Options.Device or Options.DeviceName, to use it)"
            )
        elif key and not dev_name:
            self.warnings.append(f"device {_quote(key)} ({key_how}) is not in {label}; {then}; {holds}")
        elif asked:
            self.warnings.append(f"no device in {label} matches {' or '.join(asked)}; {then}; {holds}")
        else:
            why = f", and none is the local device (key {_quote(local.key)}, name {_quote(local.name)})" if use_local else ""
            self.warnings.append(
                f"{label} holds {len(devices)} devices and none was chosen{why} (set {prefix}_DEVICE or {prefix}_DEVICE_NAME, "
                f"or Options.Device or Options.DeviceName); {then}; {holds}"
            )
        return d

    @staticmethod
    def _dev_state(devices: Dict[str, _Device], key: str, prefix: str) -> Dict[str, Dict[str, _EntryState]]:
        return {
            fam: {ek: _EntryState(e.params, f"{prefix}{key}/{fam}/{ek}", e.use, e.baseline) for ek, e in entries.items()}
            for fam, entries in devices[key].kernels.items()
        }

    # -- resolving

    def resolve(self, family: str, dtype: str, shape: Union[Sequence[int], str]) -> Resolved:
        """The parameters to launch family with, for dtype and shape (a
        sequence of ints, or dims joined by x), each with its source."""
        fs = self._fams.get(family)
        if fs is None:
            raise UnknownFamilyError(f"params: unknown kernel family {_quote(family)} (known: {', '.join(self.families)})")
        if not _valid_dtype(dtype):
            raise UnknownDTypeError(f"params: unknown dtype {_quote(dtype)} (known: {', '.join(dtypes())})")
        if isinstance(shape, str):
            try:
                shp = parse_shape(shape)
            except InvalidShapeError as e:
                raise InvalidShapeError(f"params: invalid shape: {e}") from None
        else:
            # Integers of other types (numpy's, say) are accepted through __index__; bools are not.
            try:
                if any(isinstance(d, bool) for d in shape):
                    raise TypeError
                shp = tuple(operator.index(d) for d in shape)
            except TypeError:
                raise InvalidShapeError(f"params: invalid shape: {list(shape)!r} is not a sequence of integers") from None
        try:
            cls = fs.fam.classify(shp)
        except _ShapeError as e:
            raise InvalidShapeError(f"params: invalid shape: {e}") from None
        if fs.space is None:
            raise NoSpaceError(
                f"params: no parameters for this backend: {family} has no parameters for {fs.kind} backends "
                f"(device {_quote(self.device.key)}, backend {_quote(self.device.backend)})"
            )
        exact, clskey = f"{dtype}/{shape_string(shp)}", f"{dtype}/{cls}"
        layers: List[_EntryState] = []
        for dev in self._chain:
            em = dev.get(family)
            if em is None:
                continue
            if exact in em:
                layers.append(em[exact])
            if clskey in em:
                layers.append(em[clskey])
        r = Resolved(self.device.key, self.device.backend, family, dtype, shp, cls, {}, list(fs.names), self.device.matched)

        env_vars: List[Tuple[str, str]] = []
        alias_vars: List[Tuple[str, str]] = []
        aliased: Dict[str, Value] = {}
        for st in fs.aliases:
            raw = self._lookup(st.alias.name)
            if raw is None or _trim(raw) == "":
                continue
            vals = self._parse_alias(st, family, fs.kind, raw)
            alias_vars.append((st.alias.name, raw))
            for n, v in zip(st.alias.params, vals):
                if n not in aliased:
                    aliased[n] = Value(v, SOURCE_ENV_PREFIX + st.alias.name)
        for ps in fs.params:
            raw = self._lookup(ps.env)
            if raw is not None and _trim(raw) != "":
                v = self._parse_env(ps, family, fs.kind, raw)
                r.params[ps.param.name] = Value(v, SOURCE_ENV_PREFIX + ps.env)
                env_vars.append((ps.env, raw))
            elif ps.param.name in aliased:
                r.params[ps.param.name] = aliased[ps.param.name]
            else:
                r.params[ps.param.name] = _from_layers(ps, layers)
        for n, raw in alias_vars:
            if any(v.source == SOURCE_ENV_PREFIX + n for v in r.params.values()):
                env_vars.append((n, raw))
        if layers:
            r.use_baseline, r.baseline, r.use_source = layers[0].use == USE_BASELINE, layers[0].baseline, layers[0].source
        raw = self._lookup(fs.use_env)
        if raw is not None and _trim(raw) != "":
            v = _trim(raw)
            if v not in (USE_BASELINE, USE_TUNED):
                raise EnvError(
                    [(fs.use_env, raw)],
                    f"not an allowed value; {fs.use_env} chooses between the tuned {family} kernel and the baseline; allowed: {USE_BASELINE}, {USE_TUNED}",
                )
            r.use_baseline = v == USE_BASELINE
            r.use_source = SOURCE_ENV_PREFIX + fs.use_env
        if fs.space.check is None:
            return r
        err = _check(fs.space, shp, r.ints())
        if err is not None:
            err = self._degrade(r, fs, shp, layers, err)
        if err is None:
            return r
        if env_vars:
            raise EnvError(
                env_vars,
                f"breaks the constraints of {family} for shape {shape_string(shp)} (class {cls}), even with the defaults for the other parameters: {err}",
            )
        raise DefaultsError(f"params: the built-in defaults break the family's constraints: {family} for shape {shape_string(shp)}: {err}")

    @staticmethod
    def _parse_env(ps: _ParamState, family: str, kind: str, raw: str) -> int:
        s = _trim(raw)
        p = ps.param
        if not _INT_RE.match(s):
            raise EnvError([(ps.env, raw)], f"not a base-10 integer; {family} {p.name} on {kind} backends allows {p.values_string()}")
        v = int(s)
        if v < _INT32_MIN or v > _INT32_MAX or not p.allowed(v):
            raise EnvError([(ps.env, raw)], f"not an allowed value of {family} {p.name} on {kind} backends; allowed: {p.values_string()}")
        return v

    @staticmethod
    def _parse_alias(st: _AliasState, family: str, kind: str, raw: str) -> List[int]:
        a = st.alias

        def fail(msg: str) -> EnvError:
            return EnvError([(a.name, raw)], msg)

        if st.params is None:
            raise fail(f"sets {', '.join(a.params)}, which {family} does not have on {kind} backends")
        parts = _trim(raw).split(a.sep)
        if len(parts) != len(st.params):
            ex = a.sep.join(str(p.default) for p in st.params)
            raise fail(f"not {len(st.params)} values joined by {_quote(a.sep)}: write {a.sep.join(a.params)}, e.g. {ex}")
        vals = []
        for part, p in zip(parts, st.params):
            s = _trim(part)
            if not _INT_RE.match(s):
                raise fail(f"{p.name} ({_quote(part)}) is not a base-10 integer; {family} {p.name} on {kind} backends allows {p.values_string()}")
            v = int(s)
            if v < _INT32_MIN or v > _INT32_MAX or not p.allowed(v):
                raise fail(f"{p.name}={s} is not an allowed value of {family} {p.name} on {kind} backends; allowed: {p.values_string()}")
            vals.append(v)
        return vals

    @staticmethod
    def _degrade(r: Resolved, fs: _FamState, shape: Sequence[int], layers: List[_EntryState], err: str) -> Optional[str]:
        # As the Go loader: the subsets of the first 8 matching entries, those
        # keeping higher entries first, down to the defaults alone; the
        # variables' values stay.
        n = min(len(layers), 8)
        assert fs.space is not None
        for mask in range((1 << n) - 2, -1, -1):
            sub = [layers[i] for i in range(n) if mask & (1 << (n - 1 - i))]
            for ps in fs.params:
                if not r.params[ps.param.name].source.startswith(SOURCE_ENV_PREFIX):
                    r.params[ps.param.name] = _from_layers(ps, sub)
            e = _check(fs.space, shape, r.ints())
            if e is None:
                return None
            err = e
        return err


def _check(space: Space, shape: Optional[Sequence[int]], p: Mapping[str, int]) -> Optional[str]:
    if space.check is None:
        return None
    try:
        return space.check(shape, p)
    except Exception as e:  # a family's check must not crash the loader (Go recovers panics)
        return f"Check panicked: {e}"


def _from_layers(ps: _ParamState, layers: Sequence[_EntryState]) -> Value:
    for e in layers:
        if ps.param.name in e.params:
            return Value(e.params[ps.param.name], e.source)
    return Value(ps.default, SOURCE_DEFAULT)


def _sorted_keys(m: Mapping[str, Any]) -> List[str]:
    # Go sorts strings by their UTF-8 bytes.
    return sorted(m, key=lambda k: k.encode("utf-8"))


def _describe_device(k: str, d: _Device) -> str:
    return f"{k} (backend {d.backend}, name {_quote(d.name)}, compute units {d.compute_units}, family {d.family})"


def _describe_local(d: DeviceID) -> str:
    return f"{d.key} (backend {d.backend}, name {_quote(d.name)}, compute units {d.compute_units}, family {d.family})"


def _only_device_fits(dev: _Device, k: str, backend: str, local: DeviceID, use_local: bool) -> Tuple[bool, str]:
    # As the Go loader's onlyDeviceFits: (whether it is the local device
    # itself or nothing is known to compare it with, why it may not stand
    # for the device the loader runs for; "" when it may).
    if backend and dev.backend != backend:
        return False, f"is of backend {dev.backend}, not {backend} (Options.Backend)"
    if not use_local:
        return True, ""
    if dev.backend != local.backend:
        return False, f"is not the local device {_describe_local(local)}: another backend"
    if local.key and k == local.key:
        return True, ""
    name = fold_device_name(local.name)
    if name == "" or fold_device_name(dev.name) != name or (dev.family and local.family and dev.family != local.family):
        return False, f"is not the local device {_describe_local(local)}: another model"
    return False, ""


def _siblings(devices: Optional[Mapping[str, _Device]], self_key: str, family: str, backend: str) -> List[str]:
    if devices is None or family == "":
        return []
    same, other = [], []
    for k in _sorted_keys(devices):
        dv = devices[k]
        if k == self_key or dv.family != family:
            continue
        if backend and space_kind(dv.backend) != space_kind(backend):
            continue
        (same if dv.backend == backend else other).append(k)
    return same + other


# ---------------------------------------------------------------------------
# Entry points


def _options(kw: Dict[str, Any]) -> Dict[str, Any]:
    prefix = kw.get("env_prefix") or DEFAULT_ENV_PREFIX
    if not _IDENT_RE.match(prefix):
        raise OptionsError(f"params: env_prefix {_quote(prefix)} is not an identifier")
    kw["env_prefix"] = prefix
    return kw


def load(
    path: Optional[Union[str, "os.PathLike[str]"]] = None,
    device_name: Optional[str] = None,
    *,
    device: Optional[str] = None,
    compute_units: int = 0,
    backend: Optional[str] = None,
    device_family: Optional[str] = None,
    env_prefix: str = DEFAULT_ENV_PREFIX,
    env: Optional[Mapping[str, str]] = None,
    specs: Sequence[Union[str, "os.PathLike[str]"]] = (),
    defaults: Optional[Mapping[str, Mapping[str, int]]] = None,
    aliases: Sequence[Alias] = (),
    local: Union[None, bool, DeviceID, Mapping[str, Any]] = None,
) -> Loader:
    """Opens the params file: path, else $<PREFIX>_PARAMS, else
    ./hardware_params.json (Go's params.Open). A missing file is no error:
    defaults and variables apply (a warning when the file was named). A
    damaged file raises PathError naming the file and the JSON path.

    The device whose entries apply is the key device (else $<PREFIX>_DEVICE)
    if the file holds it; else the device named device_name (else
    $<PREFIX>_DEVICE_NAME replaces it), as the system reports it ("Apple M3
    Max" from mx.metal.device_info()["device_name"], "NVIDIA H100 80GB
    HBM3"), of backend when given, the nearest compute_units among several;
    else the file's only device, unless it is another machine's (of another
    backend than backend or the local device's, or another model than the
    local device's: then it is only a fallback, with a warning); else, when
    nothing names a device, the local
    device (local: None for this CPU, a DeviceID or dict, False for none);
    else the fallback devices of device_family. The loader's ``device`` and
    ``warnings`` say what happened. env is the environment (default
    os.environ, read at every resolve); specs are kernel spec files whose
    kernels resolve like built-in families; defaults replaces built-in
    defaults per family and parameter; aliases are composite variables."""
    o = _options(dict(device=device, device_name=device_name, compute_units=compute_units, backend=backend,
                      device_family=device_family, env_prefix=env_prefix, env=env, specs=specs, defaults=defaults,
                      aliases=aliases, local=local))
    e = os.environ if env is None else env
    explicit = path is not None and os.fspath(path) != ""
    p = os.fspath(path) if explicit else ""
    if not explicit:
        v = e.get(o["env_prefix"] + "_PARAMS")
        if v:
            p, explicit = v, True
        else:
            p = DEFAULT_FILE_NAME
    named = path is not None and os.fspath(path) != ""
    try:
        data = _read_limited(p)
    except _TooLarge as x:
        raise PathError(p, "", x.message("a params file")) from None
    except FileNotFoundError:
        l = Loader(None, p, **o)
        if explicit:
            l.warnings.insert(0, f"params file {p} does not exist; built-in defaults apply")
    except OSError as x:
        err = ParamsError(f"params: {x}")
        err.kind = "io"
        raise err from None
    else:
        l = Loader(_parse(data, p), p, **o)
    if not named:
        l._unread.pop(o["env_prefix"] + "_PARAMS", None)  # it was read, set or not
    return l


def loads(data: Union[bytes, str], device_name: Optional[str] = None, **kw: Any) -> Loader:
    """Loads params file contents (Go's params.LoadBytes); errors name
    "params data" instead of a file. Takes load's keyword arguments."""
    o = _options(dict(kw, device_name=device_name))
    for k, dflt in (("device", None), ("compute_units", 0), ("backend", None), ("device_family", None), ("env", None),
                    ("specs", ()), ("defaults", None), ("aliases", ()), ("local", None)):
        o.setdefault(k, dflt)
    return Loader(_parse(data, ""), "", **o)
