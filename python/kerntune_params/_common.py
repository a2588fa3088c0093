"""Constants and text helpers shared by the modules (Go-compatible quoting, spaces, JSON paths)."""

from __future__ import annotations

import json
import re
from typing import Any, List

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
    q = json.dumps(s, ensure_ascii=False)
    if any("\ud800" <= c <= "\udfff" for c in q):  # a lone surrogate: U+FFFD, as Go holds it
        q = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in q)
    return q


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




def _go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _go_mod(a: int, b: int) -> int:
    """Go's % (the sign of the dividend)."""
    return a - b * _go_div(a, b)
