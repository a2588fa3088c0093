"""Runs the expression tables the Go spec package (params.Expr) also runs:
spec/testdata/expressions.json (values) and
params/testdata/conformance/expressions/expressions.json (values, integer
and float results, the messages of compile and run-time errors)."""

from __future__ import annotations

import json
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
from kerntune_params import expressions as kp  # noqa: E402

CONFORMANCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "params", "testdata", "conformance",
                                           "expressions", "expressions.json"))
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


def _same(got: object, want: object) -> bool:
    if isinstance(want, str):  # NaN, Infinity, -Infinity
        return isinstance(got, float) and repr(got) == repr(float(want.lower().replace("infinity", "inf")))
    if isinstance(want, float):
        return isinstance(got, float) and got == want and math.copysign(1, got) == math.copysign(1, want)
    return type(got) is type(want) and got == want


class Conformance(unittest.TestCase):
    def test_cases(self) -> None:
        with open(CONFORMANCE, encoding="utf-8") as f:
            suite = json.load(f)
        self.assertLessEqual(set(suite), {"doc", "cases"})
        self.assertGreaterEqual(len(suite["cases"]), 40)
        for c in suite["cases"]:
            with self.subTest(case=c["name"]):
                self.assertLessEqual(set(c), {"name", "expr", "kind", "env", "want", "error"})
                env = c.get("env") or {}
                stage = "compile"
                try:
                    p = kp.compile_expr("expressions.json", "expr", c["expr"], env, c["kind"])
                    stage = "run"
                    got = p.eval(env)
                except kp.SpecError as e:
                    want = c.get("error")
                    self.assertIsNotNone(want, f"{c['expr']!r}: {stage} error {e}")
                    self.assertEqual(stage, want["stage"], str(e))
                    for sub in want["contains"]:
                        self.assertIn(sub, str(e))
                    continue
                self.assertNotIn("error", c, f"{c['expr']!r} = {got!r}; want an error")
                self.assertTrue(_same(got, c["want"]), f"{c['expr']!r} = {got!r}, want {c['want']!r}")


if __name__ == "__main__":
    unittest.main()
