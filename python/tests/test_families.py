"""Runs params/testdata/conformance/families/families.json, which the Go
params package runs too (TestFamilyConformance): the built-in families,
read from their descriptions (families/*.json), must classify every shape
and accept or reject every parameter combination with Go's class or message."""

from __future__ import annotations

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
import kerntune_params as kp  # noqa: E402
from kerntune_params.errors import _ShapeError  # noqa: E402
from kerntune_params.families import parse_family  # noqa: E402

CASES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "params", "testdata", "conformance",
                                     "families", "families.json"))


class FamilyConformance(unittest.TestCase):
    def test_cases(self) -> None:
        with open(CASES, encoding="utf-8") as f:
            suite = json.load(f)
        self.assertGreaterEqual(len(suite["classify"]), 100)
        self.assertGreaterEqual(len(suite["check"]), 100)
        fams = kp.builtin_families()
        for c in suite["classify"]:
            with self.subTest(family=c["family"], shape=c["shape"]):
                try:
                    got, msg = fams[c["family"]].classify(c["shape"]), ""
                except _ShapeError as e:
                    got, msg = "", str(e)
                self.assertEqual((got, msg), (c.get("class", ""), c.get("error", "")))
        for c in suite["check"]:
            with self.subTest(family=c["family"], space=c["space"], shape=c["shape"], params=c["params"]):
                msg = fams[c["family"]].spaces[c["space"]].check(c["shape"], c["params"])
                self.assertEqual(msg or "valid", c["error"])


class ParseFamily(unittest.TestCase):
    def test_new_family_from_data(self) -> None:
        f = parse_family(json.dumps({
            "name": "scale", "doc": "y = a·x", "dims": ["n"],
            "classes": [{"name": "small", "rule": "n ≤ 4096", "when": "n <= 4096"}, {"name": "large", "rule": "otherwise"}],
            "spaces": {"cpu": {"params": [{"name": "THREADS", "values": [1, 2], "default": 1, "doc": "goroutines"}],
                               "constraints": [{"require": "THREADS <= n", "error": "THREADS={THREADS} exceeds n={n}"}]}},
        }))
        self.assertEqual(f.classify([100]), "small")
        self.assertEqual(f.classify([5000]), "large")
        self.assertEqual(f.spaces["cpu"].check([1], {"THREADS": 2}), "THREADS=2 exceeds n=1")
        self.assertIsNone(f.spaces["cpu"].check(None, {"THREADS": 2}))


if __name__ == "__main__":
    unittest.main()
