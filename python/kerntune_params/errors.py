"""The errors of the loader: every one is a ParamsError with a kind, as the conformance suite compares it."""

from __future__ import annotations

import os
import stat
from typing import Sequence, Tuple

from ._common import MAX_FILE_SIZE, _quote

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


class InputsError(InvalidShapeError):
    """Input arrays that do not match a spec kernel's buffers (their
    number, shapes or dtype), or a dim they do not give."""


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


