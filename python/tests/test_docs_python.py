"""Runs scripts/readme_python.py: every python block of README.md and of the
doc pages that continue it, against a params file without devices (CI runs it
again against the file a CPU tune wrote)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


class DocsPython(unittest.TestCase):
    def test_blocks_run(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "hardware_params.json")
            with open(path, "w", encoding="utf-8") as f:
                f.write('{"schema_version": 1, "devices": {}}')
            env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
            p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "readme_python.py"), path],
                               capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("README.md:", p.stdout)
        self.assertIn("python blocks of README.md", p.stdout)


if __name__ == "__main__":
    unittest.main()
