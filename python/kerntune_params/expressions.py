"""The expression language of spec files: a subset of expr-lang evaluated as the Go spec package does."""

from __future__ import annotations

import math
from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

from ._common import _is_int
from .families import _go_div, _go_mod

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


