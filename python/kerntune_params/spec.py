"""Kernel spec files: validated as the Go spec package does, read as families."""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ._common import MAX_DIM, MAX_ELEMENTS, RESERVED_PARAM_NAME, _IDENT_RE, _PARAM_NAME_RE, _is_int, _quote
from .errors import SpecError, _ShapeError, _TooLarge, _read_limited
from .expressions import _DIALECT_NAMES, _Expr, _ExprRuntime, _ExprSyntax, _RESERVED_SPEC_NAMES, _describe_env
from .families import Family, Param, Space, builtin_families, shape_string

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


