"""Shapes and the built-in kernel families (params/family_*.go)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ._common import DEFAULT_ENV_PREFIX, MAX_DIM, MAX_ELEMENTS, _quote
from .errors import InvalidShapeError, _ShapeError

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
    # A spec kernel's compiled launch (spec.SpecKernel) when its source is mlx.
    spec: Any = None


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


# qgemv (params/family_qgemv.go): gemv_nt's classes per bits and group size
# of MLX's affine quantization; bits and group_size are dims, never tuned.
_QGEMV_BITS = (2, 4, 8)
_QGEMV_GROUPS = (32, 64, 128)
_QGEMV_DIMS = ["m", "n", "k", "bits", "group_size"]
_GEMV_CLASSES = [
    ("tiny", "n < 2048 and k < 2048"),
    ("largeK_smallN", "k ≥ 2048 and n < 2048"),
    ("largeN", "n > 4096"),
    ("mid", "otherwise (2048 ≤ n ≤ 4096)"),
]


def _qgemv_class(c: str, bits: int, group: int) -> str:
    """The class name of gemv class c at bits and group size: "largeN_q4g64"."""
    return f"{c}_q{bits}g{group}"


def _qgemv_classes() -> List[Tuple[str, str]]:
    return [(_qgemv_class(c, b, g), f"bits={b}, group_size={g}, {rule}")
            for b in _QGEMV_BITS for g in _QGEMV_GROUPS for c, rule in _GEMV_CLASSES]


def _qgemv_classify(shape: Sequence[int]) -> str:
    _check_dims("qgemv", _QGEMV_DIMS, shape, [(1, 2)])
    if shape[0] != 1:
        raise _ShapeError(f"qgemv: m must be 1 (y = x·dequant(W)ᵀ with x of 1×k), got m={shape[0]}")
    n, k, bits, g = shape[1], shape[2], shape[3], shape[4]
    if bits not in _QGEMV_BITS:
        raise _ShapeError(f"qgemv: bits={bits} is not supported (allowed: 2, 4, 8)")
    if g not in _QGEMV_GROUPS:
        raise _ShapeError(f"qgemv: group_size={g} is not supported (allowed: 32, 64, 128)")
    if k % g != 0:
        raise _ShapeError(f"qgemv: k={k} must be a multiple of group_size={g}")
    return _qgemv_class(_gemv_classify([1, n, k]), bits, g)


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


def _gpu_qgemv_space() -> Space:
    def check(shape: Optional[Sequence[int]], p: Mapping[str, int]) -> Optional[str]:
        t = p.get("TPR", 0) * p.get("RPB", 0)
        if t > 1024 or t < 32:
            return f"TPR×RPB={t} threads per threadgroup must be in 32..1024"
        # A load of VEC words stays within one group (one scale and bias).
        if shape is not None and len(shape) == 5 and shape[3] > 0:
            words = shape[4] * shape[3] // 32
            if p.get("VEC", 0) > words:
                return (f"VEC={p.get('VEC', 0)} words exceed the {words} words of a group "
                        f"(bits={shape[3]}, group_size={shape[4]})")
        return None

    return Space(
        [
            Param("TPR", (2, 4, 8, 16, 32, 64, 128), 16,
                  "threads per output row: the K-split across threads (above 32: across SIMD-groups)"),
            Param("RPB", (1, 2, 4, 8, 16, 32), 4, "row segments per threadgroup"),
            Param("RPT", (1, 2, 4, 8), 1, "rows per segment, sharing each load of x"),
            Param("VEC", (1, 2, 4), 2, "packed uint32 words per load"),
            Param("UNROLL", (1, 2, 4), 1, "independent loads in flight per thread"),
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
               list(_GEMV_CLASSES), _gemv_classify,
               {"gpu": _gpu_gemv_space(), "cpu": Space([
                   Param("BN", (4, 8, 16, 32, 64, 128, 256), 32, "rows of W per work chunk"),
                   Param("ROWS", (1, 2, 4), 1, "rows of W sharing each load of x"),
                   Param("UNROLL", (1, 2, 4, 8), 1, "independent accumulators along k"),
                   _THREADS,
               ])}),
        Family("qgemv", "y = x·dequant(W)ᵀ (+ bias); x 1×k, W n×k in MLX's affine layout (bits-bit values packed "
                        "into uint32 along k, a scale and a bias per group_size values), y 1×n (quantized LLM decode)",
               list(_QGEMV_DIMS), _qgemv_classes(), _qgemv_classify,
               {"gpu": _gpu_qgemv_space(), "cpu": Space([
                   Param("BN", (4, 8, 16, 32, 64, 128, 256), 32, "rows of W per work chunk"),
                   Param("ROWS", (1, 2, 4), 1, "rows of W sharing each load of x"),
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
        c if ("A" <= c <= "Z" or "0" <= c <= "9" or c == "_") else "_" * len(c.encode("utf-8", "surrogatepass"))
        for c in family.upper()
    )


