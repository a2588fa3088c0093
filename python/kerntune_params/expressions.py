"""The expression language of spec files: a subset of expr-lang evaluated as the Go spec package does."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

from ._common import _go_div, _go_mod, _is_int, _quote
from .errors import SpecError

_FUNCS = {
    "cdiv", "idiv", "is_pow2", "exp", "sqrt", "rsqrt", "log", "tanh", "sigmoid",
    "min", "max", "abs", "ceil", "floor", "round", "int", "float", "len", "sum",
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh",
    "exp2", "log2", "log10", "pow",
}
# Names a let binding cannot take.
_KEYWORDS = {"let", "true", "false", "and", "or", "not", "reduce"}
# The names a reduce body reads its element, index and accumulator by.
_POINTERS = {"#", "#index", "#acc"}
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
    "==": 20, "!=": 20, "<": 20, ">": 20, ">=": 20, "<=": 20, "..": 25,
    "+": 30, "-": 30, "*": 60, "/": 60, "%": 60, "**": 100, "^": 100,
}
_RIGHT_ASSOC = {"**", "^"}
_COMPARISON = {"<", ">", "<=", ">="}
_UNARY = {"not": 50, "!": 50, "-": 90, "+": 90}
_OPERATORS = ("..", "**", "==", "!=", "<=", ">=", "&&", "||", "-", "+", "*", "/", "%", "^", "<", ">", "!", "?", ":", "(", ")", ",", "[", "]", "=", ";")


class _ExprSyntax(Exception):
    pass


class _ExprRuntime(Exception):
    pass


class _Expr:
    """One parsed expression: evaluates with expr-lang's rules (ints stay ints
    under + - * %, / divides as floats, ** is a float power, comparisons
    chain as a < b < c meaning a < b && b < c)."""

    def __init__(self, src: str, names: Union[Sequence[str], Mapping[str, str]]) -> None:
        self.src = src
        self.idents: set = set()
        self._types: Mapping[str, str] = names if isinstance(names, Mapping) else {n: INT for n in names}
        self._names = set(self._types)
        self._toks = self._tokenize(src)
        self._pos = 0
        self._bodies = 0  # reduce bodies open: where #, #index and #acc mean something
        self._lets: List[str] = []  # let names in scope, innermost last
        self.node = self._expression(0)
        if self._peek() is not None:
            raise _ExprSyntax(f"unexpected token {self._peek()[1]!r}")
        self.type = _check(self.node, self._types)

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
            elif c.isalpha() or c == "_" or c == "#":
                j = i + 1
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
            raise _ExprSyntax("unexpected token EOF")
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

    def _is_let(self) -> bool:
        """A let binding starts here: let and a name (a variable may still be called let where no name follows)."""
        p = self._pos
        return p + 1 < len(self._toks) and self._toks[p] == ("id", "let") and self._toks[p + 1][0] == "id"

    def _let(self) -> Any:
        """let name = value; body"""
        self._next()
        name = self._next()[1]
        if name in _POINTERS or name.startswith("#"):
            raise _ExprSyntax(f"cannot redeclare {name} (a reduce body's)")
        if name in _KEYWORDS or name in _FUNCS:
            raise _ExprSyntax(f"cannot redeclare builtin {name}")
        if name in self._lets:
            raise _ExprSyntax(f"cannot redeclare variable {name} (a let name in scope is not shadowed)")
        if name in self._names:
            raise _ExprSyntax(f"cannot redeclare {name} (a variable of the expression)")
        self._expect("=")
        val = self._expression(0)
        self._expect(";")
        self._lets.append(name)
        body = self._expression(0)
        self._lets.pop()
        return ("let", name, val, body)

    def _expression(self, prec: int) -> Any:
        if prec == 0 and self._is_let():
            return self._let()
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
        """An operand and the indexes that follow it."""
        n = self._operand()
        while self._peek() == ("op", "["):
            self._next()
            n = ("idx", n, self._expression(0))
            self._expect("]")
        return n

    def _reduce(self) -> Any:
        """The arguments of reduce(x, body[, init]); the body reads the pointers."""
        self._next()
        x = self._expression(0)
        self._expect(",")
        self._bodies += 1
        body = self._expression(0)
        self._bodies -= 1
        init = None
        if self._peek() == ("op", ","):
            self._next()
            init = self._expression(0)
        self._expect(")")
        return ("reduce", x, body, init)

    def _operand(self) -> Any:
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
                    n = int(s[2:], 16)
                elif "." in s or "e" in s:
                    return ("lit", float(s))
                elif s.startswith("0b"):
                    n = int(s[2:], 2)
                elif s.startswith("0o"):
                    n = int(s[2:], 8)
                else:
                    n = int(s, 10)
            except (ValueError, OverflowError):
                raise _ExprSyntax(f"bad number syntax: {v!r}") from None
            if n >= 1 << 63:
                raise _ExprSyntax(f"invalid integer literal: strconv.ParseInt: parsing {_quote(v)}: value out of range")
            return ("lit", n)
        if kind == "id":
            if v in ("true", "false"):
                return ("lit", v == "true")
            if v in _POINTERS:
                if not self._bodies:
                    raise _ExprSyntax(f"{v} outside a reduce body")
                return ("ptr", v)
            if v == "reduce" and self._peek() == ("op", "("):
                return self._reduce()
            if self._peek() == ("op", "("):
                if v not in _FUNCS:
                    raise _ExprSyntax(f"unknown name {v}")
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
            if v in self._lets:
                return ("var", v)
            if v not in self._names:
                raise _ExprSyntax(f"unknown name {v}")
            self.idents.add(v)
            return ("var", v)
        raise _ExprSyntax(f"unexpected token {v!r}")

    def eval(self, env: Mapping[str, Any]) -> Any:
        return _eval(self.node, env, None)



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



# Static types, as expr-lang's checker names them; "" is unknown (checked
# when the expression runs).
INT, FLOAT, BOOL, ARRAY, RANGE = "int", "float64", "bool", "[]float64", "[]int"
_NUMERIC = (INT, FLOAT, "")

# Functions the spec package adds: name → (argument types accepted, result).
_USER_FUNCS = {
    "cdiv": ((INT, INT), INT), "idiv": ((INT, INT), INT), "is_pow2": ((INT,), BOOL),
    "exp": ((FLOAT,), FLOAT), "sqrt": ((FLOAT,), FLOAT), "rsqrt": ((FLOAT,), FLOAT), "log": ((FLOAT,), FLOAT),
    "tanh": ((FLOAT,), FLOAT), "sigmoid": ((FLOAT,), FLOAT),
    **{f: ((FLOAT,), FLOAT) for f in ("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "exp2", "log2", "log10")},
    "atan2": ((FLOAT, FLOAT), FLOAT), "pow": ((FLOAT, FLOAT), FLOAT),
}


def _type_of_value(v: Any) -> str:
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, int):
        return INT
    if isinstance(v, float):
        return FLOAT
    if isinstance(v, range):
        return RANGE
    if isinstance(v, (list, tuple)):
        return ARRAY
    return ""


def _elem_type(t: str) -> str:
    return FLOAT if t == ARRAY else INT if t == RANGE else ""


def _or(t: str) -> str:
    return t or "interface {}"


def _mismatch(op: str, a: str, b: str) -> _ExprSyntax:
    return _ExprSyntax(f"invalid operation: {op} (mismatched types {a or 'interface {}'} and {b or 'interface {}'})")


def _check(n: Any, types: Mapping[str, str]) -> str:
    """The static type of node n, raising _ExprSyntax with expr-lang's
    message where its checker rejects the expression."""
    tag = n[0]
    if tag == "lit":
        return _type_of_value(n[1])
    if tag == "var":
        return types.get(n[1], INT)
    if tag == "ptr":
        return types[n[1]]
    if tag == "let":
        return _check(n[3], {**types, n[1]: _check(n[2], types)})
    if tag == "idx":
        a, i = _check(n[1], types), _check(n[2], types)
        if a not in (ARRAY, RANGE, ""):
            raise _ExprSyntax(f"invalid operation: cannot index {a}")
        if i not in (INT, ""):
            raise _ExprSyntax(f"invalid operation: cannot use {i} as index to {_or(a)}")
        return _elem_type(a)
    if tag == "reduce":
        return _check_reduce(n, types)
    if tag == "un":
        t = _check(n[2], types)
        if n[1] in ("!", "not"):
            if t not in (BOOL, ""):
                raise _ExprSyntax(f"invalid operation: {n[1]} (mismatched type {t})")
            return BOOL
        if t not in _NUMERIC:
            raise _ExprSyntax(f"invalid operation: {n[1]} (mismatched type {t})")
        return t
    if tag == "cond":
        c = _check(n[1], types)
        if c not in (BOOL, ""):
            raise _ExprSyntax(f"non-bool expression (type {c}) used as condition")
        a, b = _check(n[2], types), _check(n[3], types)
        return a if a == b else ""
    if tag == "call":
        return _check_call(n[1], [_check(a, types) for a in n[2]])
    op, a, b = n[1], _check(n[2], types), _check(n[3], types)
    if op == "..":
        if a not in (INT, "") or b not in (INT, ""):
            raise _mismatch(op, a, b)
        return RANGE
    if op in ("&&", "and", "||", "or"):
        if a not in (BOOL, "") or b not in (BOOL, ""):
            raise _mismatch(op, a, b)
        return BOOL
    if op in ("==", "!="):
        if (a != b and a and b and not (a in _NUMERIC and b in _NUMERIC)) or a in (ARRAY, RANGE) or b in (ARRAY, RANGE):
            raise _mismatch(op, a, b)
        return BOOL
    if a not in _NUMERIC or b not in _NUMERIC:
        raise _mismatch(op, a, b)
    if op in _COMPARISON:
        return BOOL
    if op in ("/", "**", "^"):
        return FLOAT
    if op == "%":
        if FLOAT in (a, b):
            raise _mismatch(op, a, b)
        return INT
    if a == INT and b == INT:
        return INT
    return FLOAT if a and b else ""


def _check_reduce(n: Any, types: Mapping[str, str]) -> str:
    """reduce(x, body[, init]): # is an element of x, #index an int, #acc
    init's type (x's element's without init) where the body keeps it, else
    unknown."""
    x = _check(n[1], types)
    if x not in (ARRAY, RANGE, ""):
        raise _ExprSyntax(f"invalid argument for reduce (type {x})")
    acc = _elem_type(x) if n[3] is None else _check(n[3], types)
    inner = dict(types)
    inner.update({"#": _elem_type(x), "#index": INT, "#acc": acc})
    body = _check(n[2], inner)
    if body == acc:
        return body
    inner["#acc"] = ""
    _check(n[2], inner)
    return ""


def _check_call(name: str, args: List[str]) -> str:
    sig = _USER_FUNCS.get(name)
    if sig is not None:
        want, result = sig
        if len(args) < len(want):
            raise _ExprSyntax(f"not enough arguments to call {name}")
        if len(args) > len(want):
            raise _ExprSyntax(f"too many arguments to call {name}")
        for a, w in zip(args, want):
            ok = a == "" or a == w or (w == FLOAT and a == INT)
            if not ok:
                raise _ExprSyntax(f"cannot use {a} as argument (type int) to call {name}")
        return result
    if name in ("min", "max"):
        for a in args:
            if a not in _NUMERIC:
                raise _ExprSyntax(f"invalid argument for {name} (type {a})")
        if args and all(a == INT for a in args):
            return INT
        if args and all(a == FLOAT for a in args):
            return FLOAT
        return ""
    if len(args) != 1:
        raise _ExprSyntax(f"{'not enough' if len(args) < 1 else 'too many'} arguments to call {name}")
    if name in ("len", "sum"):
        if args[0] not in (ARRAY, RANGE, ""):
            raise _ExprSyntax(f"invalid argument for {name} (type {args[0]})")
        return INT if name == "len" else _elem_type(args[0])
    if args[0] not in _NUMERIC:
        raise _ExprSyntax(f"invalid argument for {name} (type {args[0]})")
    if name == "abs":
        return args[0]
    if name == "int":
        return INT
    return FLOAT


def _wrap(v: int) -> int:
    """Go's int arithmetic: two's complement, 64 bits."""
    if -(1 << 63) <= v < (1 << 63):
        return v
    return ((v + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)


def _num(v: Any, what: str) -> Union[int, float]:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _ExprRuntime(f"invalid operation: {what} (mismatched type {go_type(v)})")
    return v


def go_type(v: Any) -> str:
    """A value's type as Go's %T writes it."""
    return _type_of_value(v) or type(v).__name__


def _array(v: Any, what: str) -> Union[list, tuple, range]:
    if isinstance(v, (list, tuple, range)):
        return v
    raise _ExprRuntime(f"invalid operation: {what} of {go_type(v)}")


def _element(arr: Any, i: int) -> Any:
    """Element i of an array: a buffer's elements are floats, a range's ints."""
    return arr[i] if isinstance(arr, range) else float(arr[i])


def _int_range(a: Any, b: Any) -> range:
    """a..b: the ints from a to b, none where b < a."""
    if not (_is_int(a) and _is_int(b)):
        raise _ExprRuntime(f"invalid operation: .. (mismatched types {go_type(a)} and {go_type(b)})")
    return range(a, max(a, b + 1))


def _eval_reduce(n: Any, env: Mapping[str, Any], outer: Any) -> Any:
    x = n[1]
    if x[0] == "bin" and x[1] == "..":
        coll: Any = _int_range(_eval(x[2], env, outer), _eval(x[3], env, outer))
    else:
        coll = _array(_eval(x, env, outer), "reduce")
    start = 0
    if n[3] is not None:
        acc = _eval(n[3], env, outer)
    else:
        if not len(coll):
            raise _ExprRuntime("reduce of an empty array with no initial value")
        acc, start = _element(coll, 0), 1
    lets = outer[3] if outer is not None else None  # the body sees the let names around reduce
    for i in range(start, len(coll)):
        acc = _eval(n[2], env, (_element(coll, i), i, acc, lets))
    return acc


def _eval(n: Any, env: Mapping[str, Any], frame: Any = None) -> Any:
    """The value of node n; frame is the innermost reduce body's (element,
    index, accumulator) and the let bindings in scope, (name, value, outer)."""
    tag = n[0]
    if tag == "lit":
        return n[1]
    if tag == "var":
        b = frame[3] if frame is not None else None
        while b is not None:
            if b[0] == n[1]:
                return b[1]
            b = b[2]
        return env.get(n[1], 0)
    if tag == "let":
        v = _eval(n[2], env, frame)
        f = frame if frame is not None else (None, 0, None, None)
        return _eval(n[3], env, (f[0], f[1], f[2], (n[1], v, f[3])))
    if tag == "ptr":
        return frame[{"#": 0, "#index": 1, "#acc": 2}[n[1]]]
    if tag == "idx":
        a, iv = _eval(n[1], env, frame), _eval(n[2], env, frame)
        arr = _array(a, "index")
        if not _is_int(iv):
            raise _ExprRuntime(f"invalid operation: cannot use {go_type(iv)} as index to {go_type(a)}")
        i = iv + len(arr) if iv < 0 else iv
        if not 0 <= i < len(arr):
            raise _ExprRuntime(f"index out of range: {iv} (array length is {len(arr)})")
        return _element(arr, i)
    if tag == "reduce":
        return _eval_reduce(n, env, frame)
    if tag == "un":
        v = _eval(n[2], env, frame)
        if n[1] in ("!", "not"):
            if not isinstance(v, bool):
                raise _ExprRuntime(f"invalid operation: {n[1]} (mismatched type {go_type(v)})")
            return not v
        v = _num(v, n[1])
        if n[1] == "+":
            return v
        return _wrap(-v) if isinstance(v, int) else -v
    if tag == "cond":
        c = _eval(n[1], env, frame)
        if not isinstance(c, bool):
            raise _ExprRuntime(f"non-bool expression (type {go_type(c)}) used as condition")
        return _eval(n[2], env, frame) if c else _eval(n[3], env, frame)
    if tag == "call":
        return _call(n[1], [_eval(a, env, frame) for a in n[2]])
    op = n[1]
    if op in ("&&", "and", "||", "or"):
        a = _eval(n[2], env, frame)
        if not isinstance(a, bool):
            raise _ExprRuntime(f"invalid operation: {op} (mismatched type {go_type(a)})")
        if (op in ("&&", "and")) != a:
            return a
        b = _eval(n[3], env, frame)
        if not isinstance(b, bool):
            raise _ExprRuntime(f"invalid operation: {op} (mismatched type {go_type(b)})")
        return b
    a, b = _eval(n[2], env, frame), _eval(n[3], env, frame)
    if isinstance(a, (list, tuple, range)) or isinstance(b, (list, tuple, range)):
        # Arrays take part in no operator: they are indexed, reduced or measured.
        raise _ExprRuntime(f"invalid operation: {op} (mismatched types {go_type(a)} and {go_type(b)})")
    if op == "..":
        r = _int_range(a, b)
        if len(r) > 1 << 26:
            raise _ExprRuntime(f"range {a}..{b} has more than {1 << 26} elements")
        return r
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
    if op in ("+", "-", "*"):
        r = a + b if op == "+" else a - b if op == "-" else a * b
        if isinstance(r, int):
            return _wrap(r)
        return r
    if op == "/":
        if b == 0:
            if a == 0 or (isinstance(a, float) and math.isnan(a)):
                return math.nan
            return math.copysign(math.inf, a) * math.copysign(1.0, float(b))
        return float(a) / float(b)
    if op == "%":
        if not (isinstance(a, int) and isinstance(b, int)):
            raise _ExprRuntime("invalid operation: % (mismatched types float64 and int)")
        if b == 0:
            raise _ExprRuntime("runtime error: integer divide by zero")
        return _wrap(_go_mod(a, b))
    if op in ("**", "^"):
        return _go_pow(float(a), float(b))
    raise _ExprRuntime(f"unknown operator {op}")


def _odd_int(y: float) -> bool:
    return math.isfinite(y) and y == math.floor(y) and abs(y) < 1 << 53 and int(y) % 2 == 1


def _go_pow(x: float, y: float) -> float:
    """Go's math.Pow: C's pow, with ±Inf for a zero base and a negative
    exponent or on overflow, and NaN for a negative base and a non-integer
    exponent, where Python's raises."""
    try:
        return math.pow(x, y)
    except OverflowError:
        return -math.inf if x < 0 and _odd_int(y) else math.inf
    except ValueError:
        if x == 0:
            return math.copysign(math.inf, x) if _odd_int(y) else math.inf
        return math.nan


def _go_math(name: str, x: float) -> float:
    """The one-argument float functions as Go's math package gives them: NaN
    outside the domain, ±Inf at a pole or on overflow (Python raises)."""
    f = {
        "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos,
        "atan": math.atan, "sinh": math.sinh, "cosh": math.cosh, "asinh": math.asinh,
        "acosh": math.acosh, "atanh": math.atanh,
    }.get(name)
    try:
        if f is not None:
            return f(x)
        if name == "exp2":
            return _go_pow(2.0, x)
        if name in ("log2", "log10"):
            if math.isnan(x) or x < 0:
                return math.nan
            if x == 0:
                return -math.inf
            if math.isinf(x):
                return x
            # Go's Log2: exact for a power of two, else log(frac)/ln2 + exp.
            frac, exp = math.frexp(x)
            # The constants are Go's exact 1/Ln2 and Ln2/Ln10, rounded once.
            l2 = float(exp - 1) if frac == 0.5 else math.log(frac) * 1.4426950408889634074 + float(exp)
            return l2 if name == "log2" else l2 * 0.30102999566398119521
    except OverflowError:
        return math.copysign(math.inf, x) if name == "sinh" else math.inf
    except ValueError:
        if name == "atanh" and abs(x) == 1:
            return math.copysign(math.inf, x)
        return math.nan
    raise _ExprRuntime(f"unknown func {name}")


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
        if name == "cdiv":
            return _wrap(_go_div(_wrap(_wrap(a + b) - 1), b))
        return _wrap(_go_div(a, b))
    if name in ("len", "sum"):
        if len(args) != 1:
            raise _ExprRuntime(f"{name} takes 1 argument")
        arr = _array(args[0], name)
        if name == "len":
            return len(arr)
        total: Union[int, float] = 0.0 if isinstance(arr, (list, tuple)) else 0
        for i in range(len(arr)):
            x = _num(_element(arr, i), "sum")
            total = _wrap(total + x) if _is_int(total) and _is_int(x) else float(total) + float(x)
        return total
    if name == "is_pow2":
        (v,) = ints(1)
        return v > 0 and v & (v - 1) == 0
    if name in ("min", "max"):
        if not args:
            raise _ExprRuntime(f"not enough arguments to call {name}")
        best = _num(args[0], name)
        for a in args[1:]:
            a = _num(a, name)
            if (a < best) if name == "min" else (a > best):
                best = a
        return best
    if name == "abs":
        v = one_num()
        return _wrap(abs(v)) if isinstance(v, int) else abs(v)
    if name in ("ceil", "floor", "round"):
        x = float(one_num())
        if not math.isfinite(x):
            return x
        if name == "ceil":
            return float(math.ceil(x))
        if name == "floor":
            return float(math.floor(x))
        return math.copysign(float(math.floor(abs(x) + 0.5)), x)
    if name == "int":
        x = one_num()
        return _wrap(int(x)) if math.isfinite(x) else 0
    if name == "float":
        return float(one_num())
    if name in ("atan2", "pow"):
        if len(args) != 2:
            raise _ExprRuntime(f"{name} takes 2 arguments")
        a, b = float(_num(args[0], name)), float(_num(args[1], name))
        return _go_pow(a, b) if name == "pow" else math.atan2(a, b)
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
        if name in _FUNCS:
            return _go_math(name, x)
    except OverflowError:
        return math.inf if name != "sigmoid" else 0.0
    raise _ExprRuntime(f"unknown func {name}")


def go_float(x: float, threshold: int) -> str:
    """A float as Go's strconv 'g' format with the shortest digits writes
    it: an exponent (two digits at least) when it is below -4 or at least
    threshold (6 for %g, 21 for %v)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    sign, digits, exponent = Decimal(repr(x)).normalize().as_tuple()
    ds = "".join(map(str, digits))
    nd = len(ds)
    dp = exponent + nd  # type: ignore[operator]
    e = dp - 1
    neg = "-" if sign else ""
    if e < -4 or e >= threshold:
        mant = ds[0] + ("." + ds[1:] if nd > 1 else "")
        return f"{neg}{mant}e{'-' if e < 0 else '+'}{abs(e):02d}"
    if dp <= 0:
        return neg + "0." + "0" * (-dp) + ds
    if dp >= nd:
        return neg + ds + "0" * (dp - nd)
    return neg + ds[:dp] + "." + ds[dp:]


def go_v(v: Any) -> str:
    """A value as Go's %v writes it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return go_float(v, 21)
    return str(v)


def describe_env(env: Mapping[str, Any]) -> str:
    """The integer variables of an environment, e.g. "n=896, BN=64" (sorted by name)."""
    parts = [f"{k}={env[k]}" for k in sorted(env, key=lambda k: k.encode("utf-8", "surrogatepass")) if _is_int(env[k])]
    return ", ".join(parts) if parts else "no variables"


_describe_env = describe_env

KIND_INT, KIND_BOOL, KIND_FLOAT = "int", "bool", "float"


class Program:
    """One compiled spec expression (Go's spec.program): where it comes
    from, its kind and its parse; errors are SpecErrors with Go's messages."""

    __slots__ = ("file", "field", "src", "kind", "expr", "type", "idents")

    def __init__(self, file: str, field: str, src: str, kind: str, expr: "_Expr") -> None:
        self.file, self.field, self.src, self.kind, self.expr = file, field, src, kind, expr
        self.type = expr.type
        self.idents = expr.idents

    def error(self, msg: str) -> SpecError:
        return SpecError(self.file, self.field, self.src, msg)

    def run(self, env: Mapping[str, Any]) -> Any:
        try:
            return _eval(self.expr.node, env)
        except _ExprRuntime as e:
            raise self.error(f"{e} (with {describe_env(env)})") from None
        except (OverflowError, ValueError, TypeError, ZeroDivisionError, RecursionError) as e:
            raise self.error(f"runtime error: {e} (with {describe_env(env)})") from None

    def eval_int(self, env: Mapping[str, Any]) -> int:
        v = self.run(env)
        if _is_int(v):
            return v
        if isinstance(v, float):
            if math.isfinite(v) and v == math.trunc(v) and abs(v) < 2**53:
                return int(v)
            raise self.error(f"is {go_float(v, 6)}, not an integer, with {describe_env(env)} "
                             "(\"/\" divides as floats: use idiv(a, b) or cdiv(a, b))")
        raise self.error(f"is {go_v(v)} ({go_type(v)}), not an integer")

    def eval_bool(self, env: Mapping[str, Any]) -> bool:
        v = self.run(env)
        if isinstance(v, bool):
            return v
        if self.type == "":
            raise self.error(f"invalid operation: bool({go_type(v)}) (with {describe_env(env)})")
        raise self.error(f"is {go_v(v)} ({go_type(v)}), not a boolean")

    def eval_float(self, env: Mapping[str, Any]) -> float:
        v = self.run(env)
        if isinstance(v, bool):
            if self.type == "":
                raise self.error(f"invalid operation: float64({go_type(v)}) (with {describe_env(env)})")
            raise self.error(f"is {go_v(v)} ({go_type(v)}), not a number")
        if isinstance(v, (int, float)):
            return float(v)
        raise self.error(f"is {go_v(v)} ({go_type(v)}), not a number")

    def eval(self, env: Mapping[str, Any]) -> Any:
        """The value by the program's kind."""
        if self.kind == KIND_BOOL:
            return self.eval_bool(env)
        if self.kind == KIND_FLOAT:
            return self.eval_float(env)
        return self.eval_int(env)


def compile_expr(file: str, field: str, src: Any, env: Mapping[str, Any], kind: str) -> Program:
    """Compiles src against env (names → example values, which give their
    types) as Go's compileExpr: errors name the file, the field and the
    expression, and list the names in scope."""
    if not isinstance(src, str) or src.strip() == "":
        raise SpecError(file, field, src if isinstance(src, str) else "", "empty expression")
    types = {k: _type_of_value(v) for k, v in env.items()}
    scope = ", ".join(sorted(env, key=lambda k: k.encode("utf-8", "surrogatepass")))
    try:
        e = _Expr(src, types)
        if kind == KIND_BOOL and e.type not in (BOOL, ""):
            raise _ExprSyntax(f"expected bool, but got {e.type}")
        if kind == KIND_FLOAT and e.type not in (INT, FLOAT, ""):
            raise _ExprSyntax(f"expected float64, but got {e.type}")
    except _ExprSyntax as x:
        raise SpecError(file, field, src, f"{x} (names in scope: {scope})") from None
    except RecursionError:
        raise SpecError(file, field, src, f"expression nested too deeply (names in scope: {scope})") from None
    return Program(file, field, src, kind, e)

