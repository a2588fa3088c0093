"""The Python loader takes the spec fields of references and input draws
as the Go spec package does: buffers[i].dist and reference.python (the
loader checks their form; kerntune runs the reference when it verifies)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
import kerntune_params as kp  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class References(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        with open(os.path.join(ROOT, "examples", "mlx_exp1d.json"), encoding="utf-8") as f:
            self.spec = json.load(f)
        self.ins = [i for i, b in enumerate(self.spec["buffers"]) if b["io"] == "in"]

    def load(self, spec: dict) -> kp.Family:
        path = os.path.join(self.dir.name, "k.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(spec, f)
        return kp.load_spec(path)

    def test_accepted(self) -> None:
        for dist in ("uniform", "normal", "int", "sorted", "positive"):
            s = json.loads(json.dumps(self.spec))
            s["buffers"][self.ins[0]]["dist"] = dist
            s["reference"] = {"python": {"file": "exp_ref.py", "function": "reference"}}
            self.assertEqual(self.load(s).name, self.spec["name"], dist)

    def test_errors(self) -> None:
        i = self.ins[0]
        cases = [
            (lambda s: s["buffers"][i].update(dist="gauss"), [f"buffers[{i}].dist", "\"gauss\" is not a distribution", "uniform, normal, int, sorted, positive"]),
            (lambda s: s.update(reference={"python": {"file": "r.py"}, "expr": "0"}), ["reference.expr or reference.python, not both"]),
            (lambda s: s.update(reference={"python": {"function": "f"}}), ["reference.python.file", "required"]),
            (lambda s: s.update(reference={"python": {"file": "r.py", "fn": "f"}}), ["unknown field \"fn\""]),
        ]
        for edit, want in cases:
            s = json.loads(json.dumps(self.spec))
            edit(s)
            with self.assertRaises(kp.SpecError) as cm:
                self.load(s)
            for w in want:
                self.assertIn(w, str(cm.exception))


if __name__ == "__main__":
    unittest.main()
