"""Runs spec/testdata/expressions.json, the table of spec-file expressions
the Go spec package (expr-lang) also runs: the Python loader's evaluator
must agree with it."""

from __future__ import annotations

import json
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
from kerntune_params import expressions as kp  # noqa: E402

TABLE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "spec", "testdata", "expressions.json"))


def evaluate(expr: str, kind: str, env: dict) -> object:
    """Compiles and runs expr as the Go spec package's evalInt, evalBool and evalFloat do."""
    e = kp._Expr(expr, list(env))
    v = e.eval(env)
    if kind == "bool":
        if not isinstance(v, bool):
            raise kp._ExprRuntime(f"{v!r} is not a boolean")
        return v
    if isinstance(v, bool):
        raise kp._ExprRuntime(f"{v!r} is not a number")
    if kind == "int" and isinstance(v, float):
        if v != math.trunc(v) or abs(v) >= 2**53:
            raise kp._ExprRuntime(f"{v} is not an integer")
        return int(v)
    return float(v) if kind == "float" else v


class Expressions(unittest.TestCase):
    def test_table(self) -> None:
        with open(TABLE, encoding="utf-8") as f:
            cases = json.load(f)["cases"]
        self.assertGreaterEqual(len(cases), 40)
        for c in cases:
            with self.subTest(expr=c["expr"]):
                err = c.get("error")
                if err == "compile":
                    with self.assertRaises(kp._ExprSyntax):
                        kp._Expr(c["expr"], list(c["env"]))
                elif err == "run":
                    with self.assertRaises(kp._ExprRuntime):
                        evaluate(c["expr"], c["kind"], c["env"])
                else:
                    got = evaluate(c["expr"], c["kind"], c["env"])
                    self.assertEqual(got, c["want"])
                    self.assertEqual(type(got) is bool, type(c["want"]) is bool)


if __name__ == "__main__":
    unittest.main()
