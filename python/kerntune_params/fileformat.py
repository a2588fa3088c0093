"""Parsing hardware_params.json into devices and entries."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Tuple, Union

from ._common import SCHEMA_VERSION, USE_BASELINE, USE_TUNED, _INT32_MAX, _INT32_MIN, _PARAM_NAME_RE, _child, _quote
from .errors import PathError

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


# Go's limit on times (params.MaxMicros).
MAX_MICROS = 1e12
# Fewer digits than CPython's int() accepts in a string (4300 by default).
_MAX_INT_DIGITS = 4000


def _json_int(s: str) -> Any:
    """An integer of the JSON text; one too long for int() is kept as its
    text with the float value it rounds to (infinite), as Go's reader sees
    it, so that only the field holding it is refused."""
    if len(s) <= _MAX_INT_DIGITS:
        return int(s)
    return _JsonFloat(s)


def _reject_constant(s: str) -> Any:
    raise ValueError(f"invalid character {s[0]!r} looking for beginning of value")


@dataclass
class _Entry:
    params: Dict[str, int]
    use: str
    baseline: str
    shapes: List[List[int]] = field(default_factory=list)
    shape_use: List[str] = field(default_factory=list)


@dataclass
class _Device:
    backend: str
    name: str
    family: str
    compute_units: int
    kernels: Dict[str, Dict[str, _Entry]]
    # The kind of parameter space of its entries; "" in files written before the field.
    space: str = ""


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


_FILE_FIELDS = frozenset(("schema_version", "generator", "devices"))
_DEVICE_FIELDS = frozenset(("backend", "space", "name", "family", "compute_units", "tuned_at", "facts", "kernels"))
_ENTRY_FIELDS = frozenset(("params", "shape_use", "median_us", "iqr_us", "min_us", "samples", "shape_median_us", "default", "baseline",
                           "shapes", "candidates", "strategy", "roofline", "evaluations", "stopped", "use", "fast_math",
                           "math_mode", "drift", "no_harm", "time"))
MATH_MODES = ("safe", "relaxed", "fast")


class Unknown:
    """Fields and parameters this loader does not know (a newer kerntune's):
    one note per name and kind of object, at its first JSON path in sorted
    key order, counting the other objects that have it (Go's unknownNotes)."""

    def __init__(self) -> None:
        self.notes: List[List[Any]] = []  # [path, what, kind, more, param]
        self._index: Dict[str, List[Any]] = {}

    def add(self, ident: str, path: str, what: str, kind: str, param: bool) -> None:
        n = self._index.get(ident)
        if n is not None:
            n[3] += 1
            return
        n = [path, what, kind, 0, param]
        self._index[ident] = n
        self.notes.append(n)

    def warnings(self, file: str) -> List[str]:
        out = []
        for path, what, kind, more, param in self.notes:
            msg = f"{what}; ignored, the entry's other parameters apply" if param else f"{what} is unknown to this loader and ignored"
            msg = f"{file or 'params data'}: {path}: {msg} (a newer kerntune may have written it)"
            if more == 1:
                msg += f"; 1 more {kind} has it"
            elif more > 1:
                msg += f"; {more} more {dict(entry='entries', device='devices').get(kind, kind)} have it"
            out.append(msg)
        return out


class _Walker:
    """Converts decoded JSON into devices, raising PathError at the first
    problem, in the order the Go loader checks (so both name the same path),
    and noting the fields it does not know."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.unknown = Unknown()

    def note_unknown(self, path: str, m: Dict[str, Any], known: Any, kind: str) -> None:
        for k in sorted(m, key=lambda x: x.encode("utf-8", "surrogatepass")):
            if k not in known:
                self.unknown.add(kind + "\x00" + k, _child(path, k), f"field {_quote(k)}", kind, False)

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
        try:
            x = float(v)
        except OverflowError:  # an integer of hundreds of digits
            x = math.inf
        if math.isinf(x) or math.isnan(x):
            raise self.fail(path, f"must be a finite number, got {v.text if isinstance(v, _JsonFloat) else v}")
        return x

    def micros(self, path: str, v: Any, zero: bool = False) -> float:
        """A time in microseconds, as Go's walker.micros: finite, at most
        MAX_MICROS, positive (or, with zero, not negative: a spread)."""
        x = self.num(path, v)
        text = v.text if isinstance(v, _JsonFloat) else str(v)
        if zero and (x < 0 or x > MAX_MICROS):
            raise self.fail(path, f"must be a number of microseconds from 0 to 1e12, got {text}")
        if not zero and (x <= 0 or x > MAX_MICROS):
            raise self.fail(path, f"must be a positive number of microseconds up to 1e12, got {text}")
        return x

    def spread(self, path: str, v: Any) -> float:
        return self.micros(path, v, True)

    def integer(self, path: str, v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.fail(path, f"must be an integer, got {_type_name(v)}")
        if isinstance(v, _JsonFloat) or not (_INT32_MIN <= v <= _INT32_MAX):
            text = v.text if isinstance(v, _JsonFloat) else str(v)
            raise self.fail(path, f"must be an integer between {_INT32_MIN} and {_INT32_MAX}, got {text}")
        return int(v)

    def boolean(self, path: str, v: Any) -> bool:
        if not isinstance(v, bool):
            raise self.fail(path, f"must be a boolean, got {_type_name(v)}")
        return v

    def array(self, path: str, v: Any, what: str) -> List[Any]:
        """Checks a JSON array; what names its elements in the message."""
        if not isinstance(v, list):
            raise self.fail(path, f"must be an array of {what}, got {_type_name(v)}")
        return v

    def optionals(self, path: str, m: Dict[str, Any], *fields: Tuple[str, Callable[[str, Any], Any]]) -> Dict[str, Any]:
        """Reads the fields (key, reader) that m holds, in the order given, so
        that the first error reported does not depend on m's order; returns
        what they read."""
        return {k: read(_child(path, k), m[k]) for k, read in fields if k in m}

    def keyed(self, path: str, m: Dict[str, Any], valid: Callable[[str], bool], msg: str,
              read: Callable[[str, Any], Any]) -> Dict[str, Any]:
        """Reads every field of m with read, in key order; a key that valid
        rejects fails with msg."""
        out = {}
        for k in sorted(m):
            p = _child(path, k)
            if not valid(k):
                raise self.fail(p, msg)
            out[k] = read(p, m[k])
        return out

    def file1(self, root: Any) -> Dict[str, _Device]:
        m = self.obj("", root)
        self.note_unknown("", m, _FILE_FIELDS, "")
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
        return self.keyed("devices", dm, lambda key: key != "", "device key must not be empty", self.device)

    def device(self, path: str, v: Any) -> _Device:
        m = self.obj(path, v)
        self.note_unknown(path, m, _DEVICE_FIELDS, "device")
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
        got = self.optionals(path, m, ("compute_units", self.integer), ("tuned_at", self.str_), ("space", self.str_))
        d.compute_units = got.get("compute_units", 0)
        d.space = got.get("space", "")
        if d.space not in ("", "cpu", "gpu"):
            raise self.fail(_child(path, "space"), f"must be cpu or gpu, got {json.dumps(d.space)}")
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
            d.kernels[fam] = self.keyed(fp, em, lambda ek: 0 < ek.find("/") < len(ek) - 1,
                                        "entry key must be <dtype>/<class> or <dtype>/<shape>", self.entry)
        return d

    def param_map(self, path: str, v: Any) -> Dict[str, int]:
        m = self.obj(path, v)
        return self.keyed(path, m, lambda k: bool(_PARAM_NAME_RE.match(k)),
                          "parameter name must be an upper-case identifier like BN or TG", self.integer)

    def entry(self, path: str, v: Any) -> _Entry:
        m = self.obj(path, v)
        self.note_unknown(path, m, _ENTRY_FIELDS, "entry")
        if "params" not in m:
            raise self.fail(_child(path, "params"), "missing")
        e = _Entry(self.param_map(_child(path, "params"), m["params"]), "", "")
        self.optionals(path, m, ("median_us", self.micros), ("iqr_us", self.spread), ("min_us", self.micros),
                       ("samples", self.integer), ("strategy", self.str_), ("evaluations", self.integer),
                       ("stopped", self.str_))
        if "use" in m:
            up = _child(path, "use")
            e.use = self.str_(up, m["use"])
            if e.use not in (USE_BASELINE, USE_TUNED):
                raise self.fail(up, f"is {_quote(e.use)}; must be {_quote(USE_BASELINE)} or {_quote(USE_TUNED)}")
        self.optionals(path, m, ("fast_math", self.boolean))
        if "math_mode" in m:
            mp = _child(path, "math_mode")
            mode = self.str_(mp, m["math_mode"])
            if mode not in MATH_MODES:
                raise self.fail(mp, f"is {_quote(mode)}; must be one of {', '.join(MATH_MODES)}")
        self.optionals(path, m, ("no_harm", self.str_))
        if m.get("drift") is not None:
            dp = _child(path, "drift")
            dm = self.obj(dp, m["drift"])
            self.optionals(dp, dm, ("checks", self.integer), ("events", self.integer), ("remeasured", self.integer),
                           ("settled", self.integer), ("max_pct", self.num), ("waited_s", self.num))
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
            self.optionals(tp, tm, ("cache_hits", self.integer), ("compiled", self.integer))
            for k in ("cache_hits", "compiled"):
                if k in tm and tm[k] < 0:
                    raise self.fail(_child(tp, k), f"must not be negative, got {tm[k]}")
        if "shape_median_us" in m:
            sp = _child(path, "shape_median_us")
            for i, x in enumerate(self.array(sp, m["shape_median_us"], "numbers")):
                self.micros(f"{sp}[{i}]", x)
        if m.get("roofline") is not None:
            rp = _child(path, "roofline")
            rm = self.obj(rp, m["roofline"])
            self.optionals(rp, rm, *((k, self.num) for k in ("flops", "bytes", "gflops", "gbps", "pct_of_floor")),
                           ("memory_bound", self.boolean))
        if m.get("default") is not None:
            dp = _child(path, "default")
            dm = self.obj(dp, m["default"])
            if "params" in dm:
                self.param_map(_child(dp, "params"), dm["params"])
            self.optionals(dp, dm, ("median_us", self.micros))
        if m.get("baseline") is not None:
            bp = _child(path, "baseline")
            bm = self.obj(bp, m["baseline"])
            e.baseline = self.optionals(bp, bm, ("name", self.str_)).get("name", e.baseline)
            self.optionals(bp, bm, ("median_us", self.micros))
            if "shape_median_us" in bm:
                sp = _child(bp, "shape_median_us")
                for i, x in enumerate(self.array(sp, bm["shape_median_us"], "numbers")):
                    self.micros(f"{sp}[{i}]", x)
        if "shapes" in m:
            sp = _child(path, "shapes")
            for i, s in enumerate(self.array(sp, m["shapes"], "shapes")):
                ip = f"{sp}[{i}]"
                e.shapes.append([self.integer(f"{ip}[{j}]", d) for j, d in enumerate(self.array(ip, s, "integers"))])
        if "shape_use" in m:
            up = _child(path, "shape_use")
            for i, x in enumerate(self.array(up, m["shape_use"], "strings")):
                u = self.str_(f"{up}[{i}]", x)
                if u not in (USE_BASELINE, USE_TUNED):
                    raise self.fail(f"{up}[{i}]", f"is {_quote(u)}; must be {_quote(USE_BASELINE)} or {_quote(USE_TUNED)}")
                e.shape_use.append(u)
            if len(e.shape_use) != len(e.shapes):
                raise self.fail(up, f'has {len(e.shape_use)} values; must have one per shape of "shapes" ({len(e.shapes)})')
        if "candidates" in m:
            cp = _child(path, "candidates")
            cm = self.obj(cp, m["candidates"])
            self.optionals(cp, cm, ("valid", self.integer), ("measured", self.integer), ("failed", self.integer))
        return e


def _parse(data: Union[bytes, str], file: str) -> Dict[str, _Device]:
    """The devices of params data (see parse_noting)."""
    return parse_noting(data, file)[0]


def parse_noting(data: Union[bytes, str], file: str) -> Tuple[Dict[str, _Device], Unknown]:
    """The devices of params data and the unknown fields it holds."""
    if isinstance(data, bytes):
        # Go's decoder reads invalid UTF-8 as U+FFFD; so does this.
        text = data.decode("utf-8", "replace")
    else:
        text = data
    if not isinstance(text, str):
        raise PathError(file, "", f"not valid JSON: params data must be bytes or str, not {type(text).__name__}")
    if not text.strip(" \t\r\n"):
        raise PathError(file, "", "not valid JSON: the file is empty (a params file is a JSON object: "
                        "{\"schema_version\": 1, \"devices\": {...}}; kerntune tune writes one)")
    if _depth(text) > MAX_DEPTH:
        raise PathError(file, "", "not valid JSON: invalid character '[' exceeded max depth")
    try:
        root = loads_deep(text, parse_float=_JsonFloat, parse_int=_json_int, parse_constant=_reject_constant)
    except RecursionError:
        raise PathError(file, "", "not valid JSON: exceeded max depth") from None
    except ValueError as e:
        raise PathError(file, "", f"not valid JSON: {e}") from None
    if "\\u" in text or "\\U" in text:
        root = _replace_surrogates(root)
    w = _Walker(file)
    return w.file1(root), w.unknown


# Go's decoder refuses JSON nested deeper than this.
MAX_DEPTH = 10000


def _depth(text: str) -> int:
    """The deepest nesting of arrays and objects in text (strings skipped)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return 0
    depth = best = 0
    in_str = esc = False
    for c in text:
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "[{":
            depth += 1
            if depth > best:
                best = depth
        elif c in "]}":
            depth -= 1
    return best


def loads_deep(text: str, **kw: Any) -> Any:
    """json.loads with room for Go's nesting limit (the C scanner recurses)."""
    need = MAX_DEPTH + 200
    old = sys.getrecursionlimit()
    if text.count("[") + text.count("{") < old - 100:
        return json.loads(text, **kw)
    sys.setrecursionlimit(max(old, need))
    try:
        return json.loads(text, **kw)
    finally:
        sys.setrecursionlimit(old)


def _fix(s: str) -> str:
    # A lone surrogate (from a \\ud800 escape) reads as U+FFFD, as in Go.
    if any("\ud800" <= c <= "\udfff" for c in s):
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in s)
    return s


def _replace_surrogates(root: Any) -> Any:
    """root with lone surrogates in its strings and keys replaced, without recursion."""
    if isinstance(root, str):
        return _fix(root)
    stack = [root]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            items = list(v.items())
            v.clear()
            for k, x in items:
                x = _fix(x) if isinstance(x, str) and not isinstance(x, _JsonFloat) else x
                v[_fix(k)] = x
                if isinstance(x, (dict, list)):
                    stack.append(x)
        elif isinstance(v, list):
            for i, x in enumerate(v):
                if isinstance(x, str):
                    v[i] = _fix(x)
                elif isinstance(x, (dict, list)):
                    stack.append(x)
    return root


