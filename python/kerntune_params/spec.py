"""Kernel spec files: validated as the Go spec package validates them
(spec/spec.go, spec/compile.go, spec/mlx.go), read as families, and for an
mlx source the launch an application passes to MLX."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ._common import MAX_DIM, MAX_ELEMENTS, RESERVED_PARAM_NAME, _IDENT_RE, _PARAM_NAME_RE, _quote
from .errors import SpecError, _ShapeError, _TooLarge, _read_limited
from .expressions import _DIALECT_NAMES, _RESERVED_SPEC_NAMES, BOOL, FLOAT, INT, KIND_BOOL, KIND_FLOAT, KIND_INT, Program, compile_expr, describe_env
from .families import Family, Param, Space, builtin_families, dtypes, shape_string
from .specschema import decode_spec

# How an input's random values may be drawn (buffers[i].dist; spec/dist.go).
_DISTS = ("uniform", "normal", "int", "sorted", "positive")

# The MLX dtypes a buffer may have, and the tuned element types' MLX names.
MLX_DTYPES = ("float32", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
              "uint64", "bool")
TUNED_MLX_DTYPE = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}
CONSTANT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float16",
                   "bfloat16")
MATH_MODES = ("safe", "relaxed", "fast")
METAL_VERSIONS = ("3.0", "3.1", "3.2", "4.0")
_NAME_RE = re.compile(r"[a-z][a-z0-9_]*\Z")
_MAX_INT32 = (1 << 31) - 1
_BUFFER_DTYPES_TEXT = ("allowed: \"dtype\" (the tuned element type), " + ", ".join(MLX_DTYPES))


@dataclass
class MLXKernel:
    """What a spec's mlx source says about the kernel, as an application
    passes it to mx.fast.metal_kernel."""

    name: str
    input_names: List[str]
    output_names: List[str]
    source: str
    header: str
    ensure_row_contiguous: bool
    atomic_outputs: bool
    math_mode: str
    metal_version: str
    # (name, kind, value): kind "dtype", "param", "mlx_dtype" (value: its
    # name), "int" or "bool" (value: the constant), "int_expr" or
    # "bool_expr" (value: the Program evaluated per shape).
    template: List[Tuple[str, str, Any]] = field(default_factory=list)
    output_dtypes: List[str] = field(default_factory=list)  # "dtype" or an MLX dtype name
    init_value: Optional[float] = None
    constants: List["MLXConstant"] = field(default_factory=list)
    # Per input_names entry: ("buffer", index in buffers) or ("constant",
    # index in constants).
    inputs: List[Tuple[str, int]] = field(default_factory=list)
    # source.mlx.format in the spec's order; when given (not None), source
    # and header are format strings, parsed into source_parts and header_parts.
    format: Optional[List[Tuple[str, Program]]] = None
    source_parts: List[Tuple[str, str]] = field(default_factory=list)
    header_parts: List[Tuple[str, str]] = field(default_factory=list)
    # The kernels mx.fast.metal_kernel built, by their arguments (see
    # Resolved.mlx_kernel): one per distinct formatted source.
    kernels: Dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class MLXConstant:
    """A constant input of an mlx kernel: its dtype and the expressions of
    its elements over the dims and params; scalar: given as value (a 0-d
    array) rather than values (a 1-d array)."""

    name: str
    dtype: str
    scalar: bool
    values: List[Program]


@dataclass
class InputBuffer:
    """An input buffer as the application passes it: its shape entries
    (None: the spec gives only a length, a flat array), length and dtype
    ("dtype" or an MLX dtype name)."""

    name: str
    shape: Optional[List[Program]]
    length: Program
    dtype: str


@dataclass
class SpecKernel:
    """The compiled parts of a spec the loader evaluates at resolve time."""

    file: str
    dims: List[str]
    params: List[str]
    grid: List[Program]
    threadgroup: List[Program]
    output_shapes: List[List[Program]]
    mlx: Optional[MLXKernel]
    in_buffers: Dict[str, InputBuffer] = field(default_factory=dict)

    def env(self, shape: Sequence[int], p: Mapping[str, int]) -> Dict[str, Any]:
        env: Dict[str, Any] = {}
        for i, d in enumerate(self.dims):
            if i < len(shape):
                env[d] = shape[i]
        for n in self.params:
            env[n] = p.get(n, 0)
        return env


def _fail(path: str, fld: str, msg: str, expr: str = "") -> SpecError:
    return SpecError(path, fld, expr, msg)


def _read_text(path: str, fld: str, name: str) -> str:
    p = name if os.path.isabs(name) else os.path.join(os.path.dirname(path), name)
    try:
        return _read_limited(p).decode("utf-8", "replace")
    except _TooLarge as e:
        raise _fail(path, fld, f"{p}: {e.message('a kernel source file')}") from None
    except OSError as e:
        raise _fail(path, fld, f"open {p}: {e.strerror or e}") from e


def _template_arg(path: str, name: str, v: Any, env: Mapping[str, Any]) -> Tuple[str, Any]:
    """One template binding's kind and value (Go's templateArg): a string
    other than "dtype", "param" and an MLX dtype is an expression over the
    dims and params (env), an integer or a boolean by its type."""
    allowed = (f"allowed: \"dtype\" (the tuned element type), \"param\" (the tunable parameter {name}), an MLX dtype "
               f"({', '.join(MLX_DTYPES)}), an integer constant, true or false, or an expression over the dims and "
               f"params ({', '.join(env) or 'none'})")
    fld = "source.mlx.template." + name
    if isinstance(v, bool):
        return "bool", v
    if isinstance(v, str) and type(v) is not str:  # a JSON number (specschema keeps its text)
        text = str(v)
        if any(c in text for c in ".eE") or not (0 <= int(text) <= _MAX_INT32):
            raise _fail(path, fld, f"{text} is not a non-negative 32-bit integer (MLX names the function after its template values; {allowed})")
        return "int", int(text)
    if isinstance(v, str):
        if v in ("dtype", "param"):
            return v, None
        if v in MLX_DTYPES:
            return "mlx_dtype", v
        if _IDENT_RE.match(v.strip()) and v.strip() not in env:
            # A lone unknown name is more likely a misspelt kind than an expression.
            raise _fail(path, fld, f"{_quote(v)} is not a template kind nor a dim or parameter ({allowed})")
        p = compile_expr(path, fld, v, env, KIND_INT)
        if p.type == BOOL:
            return "bool_expr", p
        if p.type in (INT, ""):
            return "int_expr", p
        hint = "; \"/\" divides as floats: use idiv(a, b) or cdiv(a, b)" if p.type == FLOAT else ""
        raise p.error(f"is a {p.type} expression; a template argument is an integer or a boolean "
                      f"(MLX's int or bool template values{hint})")
    import json as _json
    raise _fail(path, fld, f"{_json.dumps(_plain(v), separators=(',', ':'))} is not a template kind ({allowed})")


def _parse_format(path: str, fld: str, text: str, keys: Sequence[str]) -> List[Tuple[str, str]]:
    """Splits a format string into (literal, placeholder name) parts, the
    name "" after the last literal: {NAME} for a key of source.mlx.format,
    {{ and }} for braces, as Python's str.format reads plain names. Any
    other use of a brace is an error naming the field and the placeholder."""
    parts: List[Tuple[str, str]] = []
    lit: List[str] = []
    i, n = 0, len(text)

    def where(at: int) -> str:
        line = text.count("\n", 0, at) + 1
        return f"line {line}"

    while i < n:
        c = text[i]
        if c == "}":
            if text.startswith("}}", i):
                lit.append("}")
                i += 2
                continue
            raise _fail(path, fld, f"a single }} at {where(i)}: with source.mlx.format the source and header are format "
                        "strings; write }} for a literal brace")
        if c != "{":
            j = n
            for b in ("{", "}"):
                k = text.find(b, i)
                if 0 <= k < j:
                    j = k
            lit.append(text[i:j])
            i = j
            continue
        if text.startswith("{{", i):
            lit.append("{")
            i += 2
            continue
        end = i + 1
        while end < n and text[end] not in "{}":
            end += 1
        if end >= n or text[end] == "{":
            shown = text[i:min(end, i + 40)].split("\n", 1)[0]
            raise _fail(path, fld, f"{shown!r} at {where(i)} opens a placeholder that never closes: with "
                        "source.mlx.format the source and header are format strings; write {{ and }} for literal braces")
        key = text[i + 1:end]
        if key not in keys:
            first = key.split("\n", 1)[0]
            shown = "{" + (key if first == key and len(key) <= 40 else first[:37] + "...") + "}"
            known = ", ".join(keys)
            raise _fail(path, fld, f"placeholder {shown} at {where(i)} is not a key of source.mlx.format ({known}): a "
                        "placeholder is {NAME} of a format key; write {{ and }} for literal braces")
        parts.append(("".join(lit), key))
        lit = []
        i = end + 1
    parts.append(("".join(lit), ""))
    return parts


def fill_format(parts: Sequence[Tuple[str, str]], values: Mapping[str, int]) -> str:
    """A parsed format string with its placeholders replaced by values."""
    out: List[str] = []
    for lit, key in parts:
        out.append(lit)
        if key:
            out.append(str(values[key]))
    return "".join(out)


def _plain(v: Any) -> Any:
    if isinstance(v, list):
        if type(v) is not list:  # an object's pairs
            return {k: _plain(x) for k, x in v}
        return [_plain(x) for x in v]
    if isinstance(v, str) and type(v) is not str:
        t = str(v)
        return float(t) if any(c in t for c in ".eE") else int(t)
    return v


def load_spec(path: str) -> Family:
    """Reads and checks a spec file (the Go spec package's schema,
    spec/schema.json) and returns the kernel it defines as a Family. Fields,
    their types, names, parameters, expressions, buffers and an mlx source
    are checked as Go checks them; a spec kernel with an mlx source also
    computes its launch (Family.launch). Reference expressions are checked
    for presence only (their language, with closures, is Go's). Errors are
    SpecErrors naming the file, the field and the expression."""
    path = os.fspath(path)
    try:
        raw = _read_limited(path)
    except _TooLarge as e:
        raise SpecError(path, "", "", e.message("a spec file")) from None
    except OSError as e:
        raise SpecError(path, "", "", f"spec: {e}") from e
    s = decode_spec(raw, path)
    return _compile(s, path)


def _compile(s: Dict[str, Any], path: str) -> Family:  # noqa: C901 - one pass, as Go's compile
    def fail(fld: str, msg: str, expr: str = "") -> SpecError:
        return SpecError(path, fld, expr, msg)

    builtin = builtin_families()
    name = s.get("name", "")
    if not _NAME_RE.match(name):
        raise fail("name", f"{_quote(name)} is not a lower-case identifier ([a-z][a-z0-9_]*); it names the kernel in hardware_params.json and KERNTUNE_<NAME>_<PARAM>")
    if name in builtin:
        raise fail("name", f"{_quote(name)} is a built-in family; choose another name (implements: {_quote(name)} reuses its reference)")
    implements = s.get("implements", "")
    base: Optional[Family] = None
    if implements:
        if implements not in builtin:
            raise fail("implements", f"{_quote(implements)} is not a built-in family (allowed: {', '.join(sorted(builtin))})")
        base = builtin[implements]
    dims: List[str] = list(s.get("dims") or [])
    if base is not None:
        if dims and dims != base.dims:
            raise fail("dims", f"{implements} takes dims {', '.join(base.dims)}, not {', '.join(dims)}")
        dims = list(base.dims)
    elif not dims:
        raise fail("dims", "required: the names of the shape's dimensions (or implements: a built-in family)")
    seen: Dict[str, str] = {}

    def claim(fld: str, n: str) -> None:
        if not _IDENT_RE.match(n):
            raise fail(fld, f"{_quote(n)} is not an identifier")
        if n in _RESERVED_SPEC_NAMES:
            raise fail(fld, f"{_quote(n)} is a reserved name in expressions")
        if n in seen:
            raise fail(fld, f"{_quote(n)} is already used by {seen[n]}")
        seen[n] = fld

    c_names: Dict[str, str] = {}

    def claim_c(fld: str, n: str) -> None:
        if not _IDENT_RE.match(n):
            raise fail(fld, f"{_quote(n)} is not an identifier")
        if n in _DIALECT_NAMES or n.startswith("KT_") or n.startswith("kt_"):
            raise fail(fld, f"{_quote(n)} is a name the kernel dialect defines (reserved: T, NTHREADS, LID, LOAD, ... and the KT_ prefix)")
        if n in c_names:
            raise fail(fld, f"{_quote(n)} is already used by {c_names[n]} (parameters, defines, buffers and scalars share the kernel's namespace)")
        c_names[n] = fld

    for i, d in enumerate(dims):
        claim(f"dims[{i}]", d)
    for i, d in enumerate(s.get("dtypes") or ["f32", "f16"]):
        if d not in dtypes():
            raise fail(f"dtypes[{i}]", f"unknown dtype {_quote(d)} (allowed: {', '.join(dtypes())})")

    params: List[Param] = []
    for i, p in enumerate(s.get("params") or []):
        f = f"params[{i}]"
        pn = p.get("name", "")
        if not _PARAM_NAME_RE.match(pn):
            raise fail(f + ".name", f"{_quote(pn)} is not an upper-case identifier ([A-Z][A-Z0-9_]*)")
        if pn == RESERVED_PARAM_NAME:
            raise fail(f + ".name", f"{pn} is reserved: KERNTUNE_{name.upper()}_USE chooses between the tuned kernel and the baseline")
        claim(f + ".name", pn)
        claim_c(f + ".name", pn)
        vals = p.get("values") or []
        if not vals:
            raise fail(f + ".values", f"{pn} has no values")
        for j, v in enumerate(vals):
            if v in vals[:j]:
                raise fail(f"{f}.values[{j}]", f"{pn} lists {v} twice")
        default = p.get("default", vals[0])
        if default not in vals:
            raise fail(f + ".default", f"{default} is not among {pn}'s values")
        params.append(Param(pn, tuple(vals), default, p.get("doc", "")))
    pnames = [p.name for p in params]
    p_env = {n: 0 for n in pnames}
    d_env = {n: 0 for n in dims}
    dp_env = dict(d_env, **p_env)

    def comp(fld: str, src: Any, env: Mapping[str, Any], kind: str) -> Program:
        return compile_expr(path, fld, src, env, kind)

    constraints = [comp(f"constraints[{i}]", c, dp_env, KIND_BOOL) for i, c in enumerate(s.get("constraints") or [])]

    src = s.get("source") or {}
    mlx = src.get("mlx")
    launch = s.get("launch") or {}
    grid: List[Program] = []
    group: List[Program] = []
    if mlx is not None:
        if launch.get("threads"):
            raise fail("launch.threads", "an mlx source gives launch.threadgroup (MLX's threadgroup=(x, y, z)) instead of threads", launch["threads"])
        if launch.get("defines"):
            raise fail("launch.defines", "an mlx source takes no #defines; pass compile-time values as source.mlx.template arguments")
        tg = launch.get("threadgroup") or []
        if not 1 <= len(tg) <= 3:
            raise fail("launch.threadgroup", f"has {len(tg)} expressions; give MLX's threads per threadgroup in x (, y, z), over the params")
        group = [comp(f"launch.threadgroup[{i}]", e, p_env, KIND_INT) for i, e in enumerate(tg)]
        if not 1 <= len(launch.get("grid") or []) <= 3:
            raise fail("launch.grid", f"has {len(launch.get('grid') or [])} expressions; give MLX's grid: threads (not threadgroups) in x (, y, z)")
    else:
        if not launch.get("threads"):
            raise fail("launch.threads", "required: threads per threadgroup, an expression over the params")
        comp("launch.threads", launch["threads"], p_env, KIND_INT)
        if launch.get("threadgroup"):
            raise fail("launch.threadgroup", "only an mlx source takes threadgroup (MLX's launch); give launch.threads")
        if not 1 <= len(launch.get("grid") or []) <= 2:
            raise fail("launch.grid", f"has {len(launch.get('grid') or [])} expressions; give threadgroups in x, or in x and y")
    grid = [comp(f"launch.grid[{i}]", e, dp_env, KIND_INT) for i, e in enumerate(launch.get("grid") or [])]
    if launch.get("shared_bytes"):
        comp("launch.shared_bytes", launch["shared_bytes"], p_env, KIND_INT)
    for dn in sorted(launch.get("defines") or {}, key=lambda k: k.encode("utf-8")):
        f = "launch.defines." + dn
        if not _PARAM_NAME_RE.match(dn):
            raise fail(f, f"{_quote(dn)} is not an upper-case identifier")
        if dn == "NTHREADS":
            raise fail(f, "NTHREADS is launch.threads; set that instead")
        claim_c(f, dn)
        comp(f, launch["defines"][dn], p_env, KIND_INT)

    # Buffers.
    buffers = s.get("buffers") or []
    reference = s.get("reference")
    lengths: List[Tuple[str, Program]] = []
    out_shapes: List[List[Program]] = []
    out_buffers: List[Tuple[int, Dict[str, Any]]] = []
    in_names: List[str] = []
    in_buffers: Dict[str, InputBuffer] = {}
    last_required, first_optional = -1, -1
    for i, b in enumerate(buffers):
        f = f"buffers[{i}]"
        bn = b.get("name", "")
        claim_c(f + ".name", bn)
        io = b.get("io", "")
        if reference is not None and io == "in":
            claim(f + ".name", bn)
        if io == "in":
            in_names.append(bn)
            if b.get("optional"):
                first_optional = i if first_optional < 0 else first_optional
            else:
                last_required = i
        elif io == "out":
            out_buffers.append((i, b))
            if b.get("optional"):
                raise fail(f + ".optional", "an output buffer cannot be optional")
        else:
            raise fail(f + ".io", f"{_quote(io)} is neither \"in\" nor \"out\"")
        for key in ("dtype", "reference", "range", "dist"):
            if key in b and mlx is None:
                raise fail(f"{f}.{key}", f"only an mlx source gives buffers a {key} (the other sources take the tuned dtype)")
        if "dtype" in b and b["dtype"] != "dtype" and b["dtype"] not in MLX_DTYPES:
            raise fail(f + ".dtype", f"{_quote(b['dtype'])} is not a dtype ({_BUFFER_DTYPES_TEXT})")
        if "reference" in b and io != "out":
            raise fail(f + ".reference", "only an output buffer has a reference (its element i in float64)")
        if "dist" in b:
            if b["dist"] not in _DISTS:
                raise fail(f + ".dist", f"{_quote(b['dist'])} is not a distribution (allowed: {', '.join(_DISTS)})")
            if io != "in":
                raise fail(f + ".dist", "only an input buffer has a distribution of random values")
        if "range" in b:
            if io != "in":
                raise fail(f + ".range", "only an input buffer has a range (how its random values are drawn)")
            rg = b["range"]
            if len(rg) != 2:
                raise fail(f + ".range", f"has {len(rg)} expressions; give [lo, hi], two expressions over the dims")
            for j, e in enumerate(rg):
                comp(f"{f}.range[{j}]", e, d_env, KIND_FLOAT)
        length, lfield = b.get("length", ""), f + ".length"
        shape: Optional[List[Program]] = None
        if b.get("shape") is not None:
            if mlx is None:
                raise fail(f + ".shape", "only an mlx source uses array shapes (its <name>_shape, <name>_strides and <name>_ndim)")
            shape = [comp(f"{f}.shape[{j}]", e, d_env, KIND_INT) for j, e in enumerate(b["shape"])]
            if not length:
                # "shape": [] is a 0-d array: one element.
                length = "(" + ") * (".join(b["shape"]) + ")" if b["shape"] else "1"
                lfield = f + ".shape"
        if not length:
            raise fail(lfield, "required: the number of elements, an expression over the dims")
        lp = comp(lfield, length, d_env, KIND_INT)
        lengths.append((bn, lp))
        if io == "out":
            out_shapes.append(shape if shape is not None else [lp])
        else:
            in_buffers[bn] = InputBuffer(bn, shape, lp, b.get("dtype", "dtype"))
    if mlx is None and len(out_buffers) != 1:
        raise fail("buffers", f"has {len(out_buffers)} output buffers; a kernel has exactly one (io: \"out\")")
    if mlx is not None and not out_buffers:
        raise fail("buffers", "has no output buffer; an mlx kernel has one or more (io: \"out\")")
    if first_optional >= 0 and last_required > first_optional:
        raise fail(f"buffers[{first_optional}].optional", "optional input buffers must come after every required one")
    if mlx is not None and s.get("scalars"):
        raise fail("scalars", "an mlx kernel takes only its input_names; give scalars as source.mlx.constants (value: a scalar, values: an array)")
    s_env: Dict[str, Any] = dict(d_env, bias=0, eps=0.0)
    for i, sc in enumerate(s.get("scalars") or []):
        f = f"scalars[{i}]"
        claim_c(f + ".name", sc.get("name", ""))
        t = sc.get("type", "")
        if t not in ("int", "float"):
            raise fail(f + ".type", f"{_quote(t)} is neither \"int\" nor \"float\"")
        comp(f + ".value", sc.get("value", ""), s_env, KIND_INT if t == "int" else KIND_FLOAT)

    # Classes.
    classes: List[Tuple[str, Optional[Program]]] = []
    cls_list = s.get("classes") or []
    for i, c in enumerate(cls_list):
        f = f"classes[{i}]"
        cn = c.get("name", "")
        if not _IDENT_RE.match(cn):
            raise fail(f + ".name", f"{_quote(cn)} is not an identifier (it is part of entry keys such as f32/<class>)")
        if any(cn == x for x, _ in classes):
            raise fail(f + ".name", f"class {_quote(cn)} is listed twice")
        when = c.get("when", "")
        if when == "":
            if i != len(cls_list) - 1:
                raise fail(f + ".when", "only the last class may omit when (it takes every shape the others do not)")
            classes.append((cn, None))
        else:
            classes.append((cn, comp(f + ".when", when, d_env, KIND_BOOL)))
    if s.get("flops"):
        comp("flops", s["flops"], dict(d_env, bias=0), KIND_FLOAT)

    # Correctness: one reference per output.
    out_refs = [b for _, b in out_buffers if "reference" in b]
    if implements and reference is not None:
        raise fail("reference", f"a spec that implements {implements} is checked against its reference; remove one")
    if implements and out_refs:
        raise fail(f"buffers[{out_buffers[0][0]}].reference", f"a spec that implements {implements} is checked against its reference; remove one")
    if implements and len(out_buffers) > 1:
        raise fail("implements", f"a spec that implements {implements} has one output buffer, not {len(out_buffers)}")
    py_ref = reference is not None and reference.get("python") is not None
    if not implements and py_ref:
        # The Python function computes every output; the loader checks its
        # form only (kerntune runs it when it verifies).
        if reference.get("expr"):
            raise fail("reference", "give reference.expr or reference.python, not both")
        if out_refs:
            raise fail("reference.python", "computes every output; remove buffers[].reference")
        if not reference["python"].get("file"):
            raise fail("reference.python.file", "required: the Python file (relative to the spec) that defines the reference function")
    elif not implements:
        if len(out_buffers) > 1:
            if reference is not None:
                raise fail("reference", "a spec with several outputs gives a reference on each output buffer instead")
            for i, b in out_buffers:
                if "reference" not in b:
                    raise fail(f"buffers[{i}].reference", "required: with several outputs, each output buffer gives its reference (element i in float64)")
        elif reference is not None and out_refs:
            raise fail("reference", "give the output's reference either here or on the output buffer, not both")
        elif reference is None and not out_refs:
            raise fail("reference", "required: a reference expression for output element i, or implements: a built-in family")
        for i, b in out_buffers:
            if "reference" in b and not str(b["reference"]).strip():
                raise fail(f"buffers[{i}].reference", "empty expression")
        if reference is not None and not str(reference.get("expr", "")).strip():
            raise fail("reference.expr", "empty expression")
    if s.get("bias") and (base is None or base.name != "gemv_nt"):
        raise fail("bias", "only a kernel that implements a family with a bias operand (gemv_nt) has one")
    for d in sorted(s.get("tolerance") or {}, key=lambda k: k.encode("utf-8")):
        t = s["tolerance"][d]
        if d not in dtypes():
            raise fail("tolerance." + d, f"unknown dtype {_quote(d)} (allowed: {', '.join(dtypes())})")
        if t is not None and not 0 < t < 1:
            raise fail("tolerance." + d, f"{t:g} is not in (0, 1)")

    kernel: Optional[MLXKernel] = None
    if mlx is not None:
        kernel = _mlx_source(path, s, mlx, params, pnames, constraints, grid, group, out_buffers, d_env, s_env)
    else:
        _plain_source(path, src)

    # The family.
    def env_of(shape: Optional[Sequence[int]], p: Optional[Mapping[str, int]]) -> Dict[str, Any]:
        env: Dict[str, Any] = {}
        for i, d in enumerate(dims):
            if shape is not None and i < len(shape):
                env[d] = shape[i]
        for n in pnames:
            env[n] = (p or {}).get(n, 0)
        return env

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
        try:
            for bn, e in lengths:
                n = e.eval_int(env)
                if n < 1 or n > MAX_ELEMENTS:
                    raise _ShapeError(f"{name}: buffer {bn} has {n} elements for shape {shape_string(shape)} (allowed 1..2^40)")
            if not classes:
                return base_class if base is not None else "all"
            for cn, w in classes:
                if w is None or w.eval_bool(env):
                    return cn
        except SpecError as e:
            raise _ShapeError(str(e)) from None
        rules = "; ".join(f"{cn}: {w.src if w else ''}" for cn, w in classes)
        raise _ShapeError(f"{name}: shape {shape_string(shape)} matches no class ({rules})")

    def check(shape: Optional[Sequence[int]], p: Mapping[str, int]) -> Optional[str]:
        env = env_of(shape, p)
        for con in constraints:
            if shape is None and con.idents & set(dims):
                continue
            try:
                ok = con.eval_bool(env)
            except SpecError as e:
                return str(e)
            if not ok:
                return f"constraint {_quote(con.src)} is false ({describe_env(env)})"
        return None

    if classes:
        fam_classes = [(cn, w.src if w else "otherwise") for cn, w in classes]
    elif base is not None:
        fam_classes = list(base.classes)
    else:
        fam_classes = [("all", "every shape")]
    doc = s.get("doc") or "user-defined kernel from " + os.path.basename(path)
    fam = Family(name, str(doc), list(dims), fam_classes, classify, {"gpu": Space(params, check)})
    if kernel is not None:
        fam.spec = SpecKernel(path, list(dims), pnames, grid, group, out_shapes, kernel, in_buffers)
    return fam


def _plain_source(path: str, src: Mapping[str, Any]) -> None:
    n = int(bool(src.get("body"))) + int(bool(src.get("body_file")))
    raw = [k for k in ("cuda_file", "metal_file", "opencl_file") if src.get(k)]
    fn = src.get("function", "")
    if fn and not _IDENT_RE.match(fn):
        raise _fail(path, "source.function", f"{_quote(fn)} is not an identifier")
    for k in raw:
        _read_text(path, "source." + k, src[k])
    if src.get("body_file"):
        _read_text(path, "source.body_file", src["body_file"])
    if n == 0 and not raw:
        raise _fail(path, "source", "give body, body_file, raw cuda_file / metal_file / opencl_file, or mlx")
    if n > 1 or (n == 1 and raw):
        raise _fail(path, "source", "give either a body (body or body_file) or raw files, not both")


def _mlx_source(path: str, s: Mapping[str, Any], m: Mapping[str, Any], params: List[Param], pnames: List[str],
                constraints: List[Program], grid: List[Program], group: List[Program],
                out_buffers: List[Tuple[int, Dict[str, Any]]], d_env: Mapping[str, Any],
                s_env: Mapping[str, Any]) -> MLXKernel:
    def fail(fld: str, msg: str) -> SpecError:
        return SpecError(path, fld, "", msg)

    src = s.get("source") or {}
    if any(src.get(k) for k in ("body", "body_file", "cuda_file", "metal_file", "opencl_file")):
        raise fail("source", "give either mlx or a body / raw files, not both")
    if src.get("function"):
        raise fail("source.function", "an mlx kernel's function is named by MLX (custom_kernel_<source.mlx.name>...); set source.mlx.name instead")
    if s.get("bias"):
        raise fail("bias", "an mlx kernel has no optional inputs (MLX passes every input_names entry)")
    kname = m.get("name") or s.get("name", "")
    if m.get("name") and not _IDENT_RE.match(m["name"]):
        raise fail("source.mlx.name", f"{_quote(m['name'])} is not an identifier (MLX names the function custom_kernel_<name>...)")
    if m.get("source") and m.get("source_file"):
        raise fail("source.mlx", "give source or source_file, not both")
    if m.get("source"):
        body = m["source"]
    elif m.get("source_file"):
        body = _read_text(path, "source.mlx.source_file", m["source_file"])
    else:
        raise fail("source.mlx.source_file", "required: the kernel body (metal_kernel's source), or source.mlx.source inline")
    if m.get("header") and m.get("header_file"):
        raise fail("source.mlx", "give header or header_file, not both")
    header = m.get("header") or ""
    if m.get("header_file"):
        header = _read_text(path, "source.mlx.header_file", m["header_file"])
    mm = m.get("math_mode", "safe")
    if mm not in MATH_MODES:
        raise fail("source.mlx.math_mode", f"{_quote(mm)} is not a math mode (allowed: {', '.join(MATH_MODES)})")
    mv = m.get("metal_version", "")  # "": Metal's default for the OS, as MLX picks by OS
    if mv != "" and mv not in METAL_VERSIONS:
        raise fail("source.mlx.metal_version", f"{_quote(mv)} is not a Metal language version (allowed: {', '.join(METAL_VERSIONS)})")

    names: Dict[str, str] = {}
    const_index: Dict[str, int] = {}
    constants: List[MLXConstant] = []
    p_env = {n: 0 for n in pnames}
    dp_env = dict(d_env, **p_env)
    c_env = dict(s_env, **p_env)  # constants: the dims, bias and eps (a param is refused below, by name)
    used = set()
    for i, cn in enumerate(m.get("constants") or []):
        f = f"source.mlx.constants[{i}]"
        n = cn.get("name", "")
        if not _IDENT_RE.match(n):
            raise fail(f + ".name", f"{_quote(n)} is not an identifier")
        if n in const_index:
            raise fail(f + ".name", f"constant {_quote(n)} is listed twice")
        const_index[n] = i
        dt = cn.get("dtype", "")
        if dt not in CONSTANT_DTYPES:
            raise fail(f + ".dtype", f"{_quote(dt)} is not a dtype a constant input can have (allowed: {', '.join(CONSTANT_DTYPES)})")
        kind = KIND_FLOAT if dt.startswith(("float", "bfloat")) else KIND_INT
        if cn.get("value") and cn.get("values"):
            raise fail(f, "give value (a scalar) or values (an array), not both")
        if cn.get("value"):
            progs = [compile_expr(path, f + ".value", cn["value"], c_env, kind)]
        elif cn.get("values"):
            progs = [compile_expr(path, f"{f}.values[{j}]", v, c_env, kind) for j, v in enumerate(cn["values"])]
        else:
            raise fail(f + ".values", "required: the array's elements (expressions over the dims), or value for a scalar")
        for pr in progs:
            if pr.idents & set(pnames):
                raise pr.error("uses a tunable parameter (" + ", ".join(pnames) + "): a constant is an input made once per shape "
                               "for every candidate, so its values are expressions over the dims, bias and eps; pass a parameter "
                               "as a template argument (source.mlx.template) or a format value (source.mlx.format)")
        constants.append(MLXConstant(n, dt, bool(cn.get("value")), progs))
    buffers = s.get("buffers") or []
    buf_index: Dict[str, int] = {}
    for i, b in enumerate(buffers):
        if b.get("io") != "in":
            continue
        buf_index[b.get("name", "")] = i
        if b.get("name", "") in const_index:
            raise fail(f"buffers[{i}].name", f"{_quote(b.get('name', ''))} is also a constant in source.mlx.constants")
        if b.get("optional"):
            raise fail(f"buffers[{i}].optional", "an mlx kernel has no optional inputs")
    if m.get("input_names") is None:
        raise fail("source.mlx.input_names", "required: metal_kernel's input_names, in order (input buffers and source.mlx.constants)")
    last_buf = -1
    inputs: List[Tuple[str, int]] = []
    for i, n in enumerate(m["input_names"]):
        f = f"source.mlx.input_names[{i}]"
        if n in names:
            raise fail(f, f"{_quote(n)} is already {names[n]}")
        names[n] = f
        inputs.append(("buffer", buf_index[n]) if n in buf_index else ("constant", const_index.get(n, -1)))
        if n in buf_index:
            bi = buf_index[n]
            if bi < last_buf:
                raise fail(f, f"input buffer {_quote(n)} comes after {_quote(buffers[last_buf].get('name', ''))} here but before it in buffers: list the input buffers in the same order in both (kerntune binds the operands in buffers order)")
            last_buf = bi
        elif n not in const_index:
            raise fail(f, f"{_quote(n)} is neither an input buffer (buffers with io \"in\") nor a constant (source.mlx.constants)")
    listed = set(m["input_names"])
    for i, b in enumerate(buffers):
        if b.get("io") == "in" and b.get("name", "") not in listed:
            raise fail(f"buffers[{i}].name", f"input buffer {_quote(b.get('name', ''))} is not in source.mlx.input_names, so MLX would not pass it")
    for i, cn in enumerate(m.get("constants") or []):
        if cn.get("name", "") not in listed:
            raise fail(f"source.mlx.constants[{i}].name", f"constant {_quote(cn.get('name', ''))} is not in source.mlx.input_names, so MLX would not pass it")
    outs = m.get("output_names")
    if outs is None:
        raise fail("source.mlx.output_names", "required: metal_kernel's output_names (the output buffers, in order)")
    want = [b.get("name", "") for _, b in out_buffers]
    if outs != want:
        raise fail("source.mlx.output_names", f"is {', '.join(outs) or 'empty'}; it must name the output buffers (io \"out\") in their order: {', '.join(want)}")
    for i, n in enumerate(outs):
        names.setdefault(n, f"source.mlx.output_names[{i}]")

    template: List[Tuple[str, str, Any]] = []
    is_param = {p.name: i for i, p in enumerate(params)}
    seen_t: Dict[str, bool] = {}
    for tname, v in m.get("template") or []:
        f = "source.mlx.template." + tname
        if not _IDENT_RE.match(tname):
            raise fail(f, f"{_quote(tname)} is not an identifier")
        if tname in seen_t:
            raise fail(f, f"{tname} is listed twice")
        seen_t[tname] = True
        if tname in names:
            raise fail(f, f"{tname} is also {names[tname]}")
        kind, val = _template_arg(path, tname, v, dp_env)
        if isinstance(val, Program):
            used |= val.idents
        if kind == "param":
            if tname not in is_param:
                raise fail(f, f"\"param\" binds the tunable parameter {tname}, which params does not list (params: {', '.join(pnames)})")
            pi = is_param[tname]
            for j, pv in enumerate(params[pi].values):
                if pv < 0:
                    raise fail(f"params[{pi}].values[{j}]", f"{pv} is negative; MLX names the function after its template values, and a minus sign is not allowed in a name")
        template.append((tname, kind, val))
    fmt, source_parts, header_parts = _mlx_format(path, m, body, header, dp_env)
    for _, pr in fmt or []:
        used |= pr.idents
    for pr in [*grid, *group, *constraints]:
        used |= pr.idents
    if (s.get("launch") or {}).get("shared_bytes"):
        used |= compile_expr(path, "launch.shared_bytes", s["launch"]["shared_bytes"], {n: 0 for n in pnames}, KIND_INT).idents
    for i, p in enumerate(params):
        if p.name not in seen_t and p.name not in used:
            raise fail(f"params[{i}].name", f"{p.name} is used by no template argument (source.mlx.template), launch or constraint expression: in an mlx kernel a parameter reaches the body only as a template argument")
    return MLXKernel(
        name=kname, input_names=list(m["input_names"]), output_names=list(outs), source=body, header=header,
        ensure_row_contiguous=m.get("ensure_row_contiguous", True), atomic_outputs=m.get("atomic_outputs", False),
        math_mode=mm, metal_version=mv, template=template,
        output_dtypes=[b.get("dtype", "dtype") for _, b in out_buffers], init_value=m.get("init_value"),
        constants=constants, inputs=inputs, format=fmt, source_parts=source_parts, header_parts=header_parts,
    )


def _mlx_format(path: str, m: Mapping[str, Any], body: str, header: str,
                env: Mapping[str, Any]) -> Tuple[Optional[List[Tuple[str, Program]]], List[Tuple[str, str]], List[Tuple[str, str]]]:
    """source.mlx.format compiled (integer expressions over the dims and
    params), and the source and header parsed as format strings when it is
    given (the f-string pattern: {NAME} filled per shape)."""
    f = m.get("format")
    if f is None:
        return None, [], []
    fmt: List[Tuple[str, Program]] = []  # empty: format strings without placeholders, as str.format() reads them
    for key, src in f.items():
        fld = "source.mlx.format." + key
        if not _IDENT_RE.match(key):
            raise _fail(path, fld, f"{_quote(key)} is not an identifier (a placeholder is {{NAME}})")
        pr = compile_expr(path, fld, src, env, KIND_INT)
        if pr.type not in (INT, ""):
            hint = " (\"/\" divides as floats: use idiv(a, b) or cdiv(a, b))" if pr.type == FLOAT else ""
            raise pr.error(f"is a {pr.type} expression; a format value is an integer{hint}")
        fmt.append((key, pr))
    keys = [k for k, _ in fmt]
    src_field = "source.mlx.source" if m.get("source") else "source.mlx.source_file"
    hdr_field = "source.mlx.header" if m.get("header") else "source.mlx.header_file"
    return fmt, _parse_format(path, src_field, body, keys), _parse_format(path, hdr_field, header, keys)
