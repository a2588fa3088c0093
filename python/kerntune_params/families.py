"""Shapes and the built-in kernel families (described in families/*.json, as params/families)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ._common import DEFAULT_ENV_PREFIX, MAX_DIM, MAX_ELEMENTS, _quote
from .errors import InvalidShapeError, _ShapeError
from .expressions import BOOL, _Expr, _ExprRuntime, go_type, go_v

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
    # The kinds of broken kernel the family's tests must catch; empty: every kind.
    mutants: List[str] = field(default_factory=list)


def space_kind(backend: str) -> str:
    """The kind of parameter space of a backend named without a device record that says it.

    An application's backend, or a device of a file written before the record's
    "space" field: the pure-Go cpu backend has the cpu space, every other
    backend runs the generated GPU bodies. The tuner writes each device's own
    kind into its record, so a new backend is in no table here.
    """
    return "cpu" if backend == "cpu" else "gpu"


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


# ---------------------------------------------------------------------------
# The built-in families are data: families/NAME.json (a link to Go's
# params/families), compiled here as params/families/describe.go compiles them, their
# rules and constraints evaluated by the expression language of spec files.

_FAMILIES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "families")
# The families that live each in one folder: family/NAME/NAME.json (a link
# to Go's package family, which params/families reads too).
_FOLDERS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "family")


class _Template:
    """A message with {expression} holes."""

    def __init__(self, src: str, names: Sequence[str]) -> None:
        self.text: List[str] = []
        self.exprs: List[_Expr] = []
        while True:
            i = src.find("{")
            if i < 0:
                self.text.append(src)
                return
            j = src.find("}", i)
            if j < 0:
                raise ValueError(f"{src!r}: {{ without }}")
            self.text.append(src[:i])
            self.exprs.append(_Expr(src[i + 1:j], list(names)))
            src = src[j + 1:]

    def render(self, env: Mapping[str, Any]) -> str:
        out = []
        for t, e in zip(self.text, self.exprs):
            out.append(t)
            try:
                out.append(go_v(e.eval(env)))
            except (_ExprRuntime, ArithmeticError, ValueError):
                out.append("{" + e.src + "}")
        out.append(self.text[-1])
        return "".join(out)


def _bool_expr(src: str, names: Sequence[str]) -> _Expr:
    e = _Expr(src, list(names))
    if e.type not in (BOOL, ""):
        raise ValueError(f"{src!r} is {e.type}, not a boolean")
    return e


def _eval_bool(e: _Expr, env: Mapping[str, Any]) -> bool:
    v = e.eval(env)
    if not isinstance(v, bool):
        raise _ExprRuntime(f"is {go_v(v)} ({go_type(v)}), not a boolean")
    return v


class _Rule:
    """A shape rule or a constraint: where when holds, require must, else error.
    A shape rule with dim and values requires the dim to be one of them."""

    def __init__(self, d: Mapping[str, Any], dims: Sequence[str], names: Sequence[str]) -> None:
        self.dim = dims.index(d["dim"]) if "dim" in d else -1
        self.values: Tuple[int, ...] = tuple(d.get("values", ()))
        self.when = _bool_expr(d["when"], names) if d.get("when") else None
        self.require = _bool_expr(d["require"], names) if self.dim < 0 else None
        self.msg = _Template(d["error"], names) if self.dim < 0 else None

    def uses(self, names: Iterable[str]) -> bool:
        ids = set(self.require.idents if self.require else ()) | set(self.when.idents if self.when else ())
        return any(n in ids for n in names)

    def check(self, env: Mapping[str, Any]) -> Optional[str]:
        assert self.require is not None and self.msg is not None
        try:
            if self.when is not None and not _eval_bool(self.when, env):
                return None
            if _eval_bool(self.require, env):
                return None
        except _ExprRuntime as e:
            return f"{self.require.src}: {e}"
        return self.msg.render(env)


class _Described:
    """A compiled family description: family() builds fresh objects from it."""

    def __init__(self, d: Mapping[str, Any]) -> None:
        self.d = d
        dims = list(d["dims"])
        self.dims = dims
        self.operands = [(dims.index(a), dims.index(b)) for a, b in d.get("operands", [])]
        self.shape = [_Rule(r, dims, dims) for r in d.get("shape", [])]
        self.classes = [(c["name"], c["rule"], _bool_expr(c["when"], dims) if c.get("when") else None) for c in d["classes"]]
        self.variants = [dims.index(v) for v in d.get("class_variants", [])]
        self.suffix = _Template(d["class_suffix"], d["class_variants"]) if d.get("class_suffix") else None
        self.spaces = {}
        for kind, s in d["spaces"].items():
            names = [p["name"] for p in s["params"]]
            self.spaces[kind] = [_Rule(r, dims, names + dims) for r in s.get("constraints", [])]

    def _dim_values(self, i: int) -> Tuple[int, ...]:
        for r in self.shape:
            if r.dim == i:
                return r.values
        return ()

    def classify(self, shape: Sequence[int]) -> str:
        name = self.d["name"]
        _check_dims(name, self.dims, shape, self.operands)
        env = dict(zip(self.dims, shape))
        for r in self.shape:
            if r.dim >= 0:
                if shape[r.dim] not in r.values:
                    raise _ShapeError(f"{name}: {self.dims[r.dim]}={shape[r.dim]} is not supported "
                                      f"(allowed: {', '.join(str(v) for v in r.values)})")
                continue
            msg = r.check(env)
            if msg is not None:
                raise _ShapeError(msg)
        suffix = self.suffix.render(env) if self.suffix else ""
        for cname, _rule, when in self.classes:
            if when is None or _eval_bool(when, env):
                return cname + suffix
        raise AssertionError("the last class has no when")

    def _checker(self, params: Sequence[Param], rules: Sequence[_Rule]) -> CheckFunc:
        dims = self.dims

        def check(shape: Optional[Sequence[int]], p: Mapping[str, int]) -> Optional[str]:
            env: Dict[str, Any] = {q.name: p.get(q.name, 0) for q in params}  # a missing parameter reads 0, as in Go
            has_shape = shape is not None and len(shape) == len(dims)
            if has_shape:
                env.update(zip(dims, shape))  # type: ignore[arg-type]
            for r in rules:
                if not has_shape and r.uses(dims):
                    continue
                msg = r.check(env)
                if msg is not None:
                    return msg
            return None

        return check

    def family(self) -> "Family":
        d = self.d
        combos: List[List[int]] = [[]]
        for i in self.variants:
            combos = [c + [v] for c in combos for v in self._dim_values(i)]
        classes = []
        for combo in combos:
            env = {self.dims[i]: v for i, v in zip(self.variants, combo)}
            words = ", ".join(f"{self.dims[i]}={v}" for i, v in zip(self.variants, combo))
            suffix = self.suffix.render(env) if self.suffix else ""
            for cname, rule, _when in self.classes:
                classes.append((cname + suffix, f"{words}, {rule}" if words else rule))
        spaces = {}
        for kind, s in d["spaces"].items():
            params = [Param(p["name"], tuple(p["values"]), p["default"], p.get("doc", "")) for p in s["params"]]
            rules = self.spaces[kind]
            spaces[kind] = Space(params, self._checker(params, rules) if rules else None)
        return Family(d["name"], d.get("doc", ""), list(self.dims), classes, self.classify, spaces,
                      mutants=list(d.get("mutants", [])))


def parse_family(text: str) -> "Family":
    """The family a description (the format of families/*.json) describes."""
    return _Described(json.loads(text)).family()


def _load_described() -> List[_Described]:
    paths = [os.path.join(_FAMILIES_DIR, n) for n in sorted(os.listdir(_FAMILIES_DIR)) if n.endswith(".json")]
    if os.path.isdir(_FOLDERS_DIR):
        for d in sorted(os.listdir(_FOLDERS_DIR)):
            p = os.path.join(_FOLDERS_DIR, d, d + ".json")
            if os.path.isfile(p):
                paths.append(p)
    out = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            out.append(_Described(json.load(f)))
    return out


_DESCRIBED: Optional[List[_Described]] = None


def builtin_families() -> Dict[str, Family]:
    """The built-in families by name (fresh objects on every call)."""
    global _DESCRIBED
    if _DESCRIBED is None:
        _DESCRIBED = _load_described()
    return {f.name: f for f in (d.family() for d in _DESCRIBED)}


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


