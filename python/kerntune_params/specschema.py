"""Decoding a spec file's JSON as Go's encoding/json decodes it into
spec.Spec with DisallowUnknownFields: the same fields (matched as Go
matches them, exactly or else case-insensitively), the same type errors
with the same messages, null leaving a field unset."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple, Union

from .errors import SpecError

# A field's type: "string", "int", "bool", "float64", "text" (a string or
# an array of strings), "template" (an object whose order is kept),
# ("list", T), ("map", T), or a struct name in _STRUCTS.
Type = Union[str, Tuple[str, Any]]

_STRUCTS: Dict[str, Dict[str, Type]] = {
    "Spec": {
        "$schema": "string", "name": "string", "doc": "string", "implements": "string", "dims": ("list", "string"),
        "dtypes": ("list", "string"), "source": "Source", "buffers": ("list", "Buffer"), "scalars": ("list", "Scalar"),
        "params": ("list", "Param"), "constraints": ("list", "string"), "launch": "Launch", "classes": ("list", "Class"),
        "shapes": ("list", ("list", "int")), "odd": ("list", ("list", "int")), "bias": "bool", "memory_bound": "bool",
        "flops": "string", "reference": "Reference", "tolerance": ("map", "float64"),
    },
    "Source": {
        "body": "text", "body_file": "string", "cuda_file": "string", "metal_file": "string",
        "opencl_file": "string", "function": "string", "mlx": "MLXSource",
    },
    "MLXSource": {
        "name": "string", "source": "text", "source_file": "string", "header": "text", "header_file": "string",
        "input_names": ("list", "string"), "output_names": ("list", "string"), "template": "template",
        "ensure_row_contiguous": "bool", "constants": ("list", "MLXConstant"), "init_value": "float64",
        "atomic_outputs": "bool", "math_mode": "string", "metal_version": "string", "format": ("map", "string"),
    },
    "MLXConstant": {"name": "string", "dtype": "string", "values": ("list", "string"), "value": "string"},
    "Buffer": {
        "name": "string", "io": "string", "length": "string", "shape": ("list", "string"), "optional": "bool",
        "dtype": "string", "reference": "string", "range": ("list", "string"), "dist": "string",
    },
    "Scalar": {"name": "string", "type": "string", "value": "string"},
    "Param": {"name": "string", "values": ("list", "int"), "default": "int", "doc": "string"},
    "Launch": {
        "threads": "string", "grid": ("list", "string"), "threadgroup": ("list", "string"),
        "shared_bytes": "string", "defines": ("map", "string"),
    },
    "Class": {"name": "string", "when": "string"},
    "Reference": {"expr": "string", "python": "PythonRef"},
    "PythonRef": {"file": "string", "function": "string"},
}

_INT64 = (-(1 << 63), (1 << 63) - 1)
_TEMPLATE_ERROR = ("source.mlx.template must be an object of template argument names to \"dtype\", \"param\", "
                   "an MLX dtype, an integer, a boolean or an expression over the dims and params")


class _Num(str):
    """A JSON number, kept as its text."""


class _Obj(list):
    """A JSON object as its (key, value) pairs, in order, duplicates kept."""


def go_type_name(t: Type) -> str:
    """The Go type a field decodes into, as UnmarshalTypeError names it."""
    if isinstance(t, tuple):
        inner = go_type_name(t[1])
        return "[]" + inner if t[0] == "list" else "map[string]" + inner
    if t == "text":
        return "spec.Text"
    if t == "template":
        return "spec.TemplateArgs"
    if t in _STRUCTS:
        return "spec." + t
    return t


def _must_be(t: Type, value: str) -> str:
    """What a field of type t takes, as Go's spec.mustBe says it."""
    if t == "int":
        if value.startswith("number"):
            return "does not fit: it must be an integer of at most 64 bits"
        return "cannot be an integer"
    if t == "float64":
        return "cannot be a number"
    if t == "string":
        return "cannot be a string"
    if t == "bool":
        return "cannot be true or false"
    if isinstance(t, tuple):
        return "cannot be an array" if t[0] == "list" else "cannot be an object"
    if t in _STRUCTS:
        return "cannot be an object"
    return "cannot be a " + go_type_name(t)


def _json_kind(v: Any) -> str:
    if v is True or v is False:
        return "bool"
    if isinstance(v, _Num):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, _Obj):
        return "object"
    return "array"


class _Decoder:
    def __init__(self, file: str) -> None:
        self.file = file
        self.err: Optional[SpecError] = None  # the first saved error, as Go's decoder keeps it

    def save(self, msg: str) -> None:
        if self.err is None:
            self.err = SpecError(self.file, "", "", msg)

    def type_error(self, v: Any, t: Type, path: str, value: str = "") -> None:
        self.save(f"field {path}: a JSON {value or _json_kind(v)} {_must_be(t, value)}")

    def value(self, v: Any, t: Type, path: str) -> Any:
        if v is None:
            if t == "template":
                raise SpecError(self.file, "", "", _TEMPLATE_ERROR)
            return None
        if t == "text":
            if isinstance(v, str) and not isinstance(v, _Num):
                return str(v)
            if isinstance(v, list) and not isinstance(v, _Obj) and all(
                    isinstance(x, str) and not isinstance(x, _Num) for x in v):
                return "\n".join(str(x) for x in v)
            raise SpecError(self.file, "", "", "must be a string or an array of strings")
        if t == "template":
            if not isinstance(v, _Obj):
                raise SpecError(self.file, "", "", _TEMPLATE_ERROR)
            return [(k, x) for k, x in v]  # values are checked when the spec is compiled
        if t == "string":
            if isinstance(v, str) and not isinstance(v, _Num):
                return str(v)
            self.type_error(v, t, path)
            return None
        if t == "bool":
            if v is True or v is False:
                return v
            self.type_error(v, t, path)
            return None
        if t in ("int", "float64"):
            if not isinstance(v, _Num):
                self.type_error(v, t, path)
                return None
            if t == "int":
                if any(c in v for c in ".eE") or not (_INT64[0] <= int(v) <= _INT64[1]):
                    self.type_error(v, t, path, "number " + str(v))
                    return None
                return int(v)
            try:
                f = float(v)
            except (ValueError, OverflowError):
                f = float("inf")
            if f in (float("inf"), float("-inf")):
                self.type_error(v, t, path, "number " + str(v))
                return None
            return f
        if isinstance(t, tuple):
            if t[0] == "list":
                if not isinstance(v, list) or isinstance(v, _Obj):
                    self.type_error(v, t, path)
                    return None
                return [self.value(x, t[1], path) for x in v]
            if not isinstance(v, _Obj):
                self.type_error(v, t, path)
                return None
            out: Dict[str, Any] = {}
            for k, x in v:
                out[k] = self.value(x, t[1], path + "." + k if path else k)
            return out
        return self.struct(v, t, path)

    def struct(self, v: Any, name: str, path: str) -> Optional[Dict[str, Any]]:
        if not isinstance(v, _Obj):
            self.type_error(v, name, path)
            return None
        fields = _STRUCTS[name]
        folded = {k.lower(): k for k in fields}
        out: Dict[str, Any] = {}
        for k, x in v:
            f = k if k in fields else folded.get(k.lower())
            if f is None:
                msg = f"invalid JSON: unknown field {json.dumps(k, ensure_ascii=False)}"
                if path == "" and k in ("schema_version", "devices"):
                    msg += (" (this looks like a params file, hardware_params.json; a spec describes one kernel: "
                            "docs/reference/specs.md)")
                self.save(msg)
                continue
            val = self.value(x, fields[f], f if path == "" else path + "." + f)
            if x is not None:
                out[f] = val
        return out


def _pairs(p: List[Tuple[str, Any]]) -> _Obj:
    return _Obj(p)


def _reject_constant(s: str) -> Any:
    raise ValueError(f"invalid character {s[0]!r} looking for beginning of value")


def decode_spec(data: bytes, file: str) -> Dict[str, Any]:
    """The fields of a spec file as Go's spec.Decode reads them; errors are
    SpecErrors with Go's messages."""
    text = data.decode("utf-8", "replace")
    try:
        root = json.JSONDecoder(object_pairs_hook=_pairs, parse_float=_Num, parse_int=_Num,
                                parse_constant=_reject_constant).raw_decode(text.lstrip(" \t\r\n"))
    except RecursionError:
        raise SpecError(file, "", "", "invalid JSON: exceeded max depth") from None
    except ValueError as e:
        raise SpecError(file, "", "", f"invalid JSON: {e}") from None
    v, end = root
    rest = text.lstrip(" \t\r\n")[end:]
    d = _Decoder(file)
    try:
        out = d.struct(v, "Spec", "")
    except RecursionError:
        raise SpecError(file, "", "", "invalid JSON: exceeded max depth") from None
    if d.err is not None:
        raise d.err
    if rest.strip(" \t\r\n"):
        raise SpecError(file, "", "", "trailing data after the JSON object")
    return out or {}
