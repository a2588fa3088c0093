"""Runs the conformance suite shared with the Go loader
(params/testdata/conformance/*.json, run in Go by params/conformance_test.go):
every case's values, sources, device choice, warnings and errors must be
what the case expects, so the two loaders cannot diverge."""

from __future__ import annotations

import glob
import json
import os
import sys
import tempfile
import unittest
from typing import Any, Dict, List, Optional

# The module of this source tree, not an installed copy.
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
import kerntune_params as kp  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONFORMANCE = os.path.join(ROOT, "params", "testdata", "conformance")
SUITES = sorted(glob.glob(os.path.join(CONFORMANCE, "*.json")))
CASE_KEYS = {"name", "file", "file_text", "file_size", "params_from_env", "options", "specs", "env", "load_error", "device",
             "warnings", "unused_env", "unused_env_why", "queries"}
OPTION_KEYS = {"device", "device_name", "compute_units", "backend", "device_family", "env_prefix", "defaults",
               "aliases", "local", "local_gpu", "required"}
QUERY_KEYS = {"kernel", "dtype", "shape", "params", "class", "device", "backend", "matched", "use_baseline",
              "baseline", "use_source", "error"}


class Conformance(unittest.TestCase):
    def test_suite_size(self) -> None:
        n = 0
        for p in SUITES:
            with open(p, encoding="utf-8") as f:
                n += len(json.load(f)["cases"])
        self.assertGreaterEqual(n, 40, "the conformance suite must hold at least 40 cases")

    def test_cases(self) -> None:
        self.assertTrue(SUITES, f"no conformance files in {CONFORMANCE}")
        for path in SUITES:
            with open(path, encoding="utf-8") as f:
                suite = json.load(f)
            self.assertLessEqual(set(suite), {"doc", "files", "cases"}, path)
            for case in suite["cases"]:
                with self.subTest(suite=os.path.basename(path), case=case["name"]):
                    run_case(self, suite, case)


def run_case(t: unittest.TestCase, suite: Dict[str, Any], c: Dict[str, Any]) -> None:
    t.assertLessEqual(set(c), CASE_KEYS, "unknown fields in the case")
    o = dict(c.get("options") or {})
    t.assertLessEqual(set(o), OPTION_KEYS, "unknown options in the case")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "hardware_params.json")
        f = c.get("file")
        if "file_text" in c:
            with open(path, "wb") as out:
                out.write(c["file_text"].encode("utf-8"))
        elif isinstance(f, str):
            with open(path, "w", encoding="utf-8") as out:
                json.dump(suite["files"][f], out)
        elif f is not None:
            with open(path, "w", encoding="utf-8") as out:
                json.dump(f, out)
        else:
            path = os.path.join(d, "absent.json")
        if c.get("file_size"):
            os.truncate(path, c["file_size"])  # zeros up to the size, without writing them
        env = dict(c.get("env") or {})
        prefix = o.get("env_prefix") or "KERNTUNE"
        load_path: Optional[str] = path
        if c.get("params_from_env"):
            env[prefix + "_PARAMS"] = path
            load_path = None
        aliases = [kp.alias(a["name"], a["params"], a.get("sep", ""), a.get("family")) for a in o.get("aliases") or []]
        local = o.get("local")
        try:
            loader = kp.load(
                load_path,
                o.get("device_name"),
                device=o.get("device"),
                compute_units=o.get("compute_units", 0),
                backend=o.get("backend"),
                device_family=o.get("device_family"),
                env_prefix=o.get("env_prefix") or "KERNTUNE",
                env=env,
                specs=[os.path.join(CONFORMANCE, s) for s in c.get("specs") or []],
                defaults=o.get("defaults"),
                aliases=aliases,
                local=kp.DeviceID(**local) if local else False,  # the machine's own CPU must not affect a case
                local_gpu=kp.DeviceID(**o["local_gpu"]) if o.get("local_gpu") else False,  # nor its GPU
                required=o.get("required", False),
            )
        except kp.ParamsError as e:
            check_error(t, "load", e, c.get("load_error"))
            return
        t.assertIsNone(c.get("load_error"), "loading succeeded; want an error")
        if "device" in c:
            dev = loader.device
            got = {"key": dev.key, "how": dev.how, "matched": dev.matched, "in_file": dev.in_file,
                   "backend": dev.backend, "kind": dev.kind, "family": dev.family, "fallbacks": dev.fallbacks}
            for k, want in c["device"].items():
                t.assertIn(k, got, f"device: unknown field {k!r} in the case")
                t.assertEqual(got[k], py_names(want), f"device.{k}")
        want_w: List[List[str]] = c.get("warnings") or []
        t.assertEqual(len(loader.warnings), len(want_w), f"warnings {loader.warnings!r}")
        for w, subs in zip(loader.warnings, want_w):
            for sub in subs:
                t.assertIn(py_names(sub), w)
                t.assertNotIn("Options.", w, "a Python warning names Go's Options")
        if "unused_env" in c:
            t.assertEqual(loader.unused_env(env), c["unused_env"], "unused env")
        if "unused_env_why" in c:
            got_why = dict(loader.unused_env_vars(env))
            t.assertEqual(sorted(got_why), sorted(c["unused_env_why"]), "variables with a reason")
            for n, subs in c["unused_env_why"].items():
                for sub in subs:
                    t.assertIn(py_names(sub), got_why.get(n, ""), f"unused env {n}")
        for i, q in enumerate(c.get("queries") or []):
            run_query(t, i, loader, q)


def run_query(t: unittest.TestCase, i: int, loader: kp.Loader, q: Dict[str, Any]) -> None:
    t.assertLessEqual(set(q), QUERY_KEYS, "unknown fields in the query")
    try:
        r = loader.resolve(q["kernel"], q["dtype"], q["shape"])
    except kp.ParamsError as e:
        want = q.get("error")
        if want and want.get("vars"):
            t.assertIsInstance(e, kp.EnvError)
            t.assertEqual([n for n, _ in e.vars], want["vars"], f"query {i}: error variables")
        check_error(t, f"query {i}", e, want)
        return
    t.assertIsNone(q.get("error"), f"query {i}: resolved {r}; want an error")
    if "params" in q:
        got = {k: [v.value, v.source] for k, v in r.params.items()}
        t.assertEqual(got, q["params"], f"query {i}: params")
    for k, got_v in (("class", r.shape_class), ("device", r.device), ("backend", r.backend), ("matched", r.matched),
                     ("use_baseline", r.use_baseline), ("baseline", r.baseline), ("use_source", r.use_source)):
        if k in q:
            t.assertEqual(got_v, q[k], f"query {i}: {k}")


# Go's messages name its Options fields; Python's name its own arguments.
GO_OPTIONS = [("Options.DeviceName", "device_name="), ("Options.Device", "device="),
              ("Options.ComputeUnits", "compute_units="), ("Options.Backend", "backend="),
              ("Options.LocalGPU", "local_gpu=")]


def py_names(s: Any) -> Any:
    """s with Go's option names replaced by the Python arguments they stand for."""
    if not isinstance(s, str):
        return s
    for go, py in GO_OPTIONS:
        s = s.replace(go, py)
    return s


def check_error(t: unittest.TestCase, stage: str, e: kp.ParamsError, want: Optional[Dict[str, Any]]) -> None:
    if want is None:
        t.fail(f"{stage}: unexpected {e.kind} error: {e}")
        return
    t.assertEqual(e.kind, want["kind"], f"{stage}: error kind of {e}")
    if "path" in want:
        t.assertIsInstance(e, kp.PathError)
        t.assertEqual(getattr(e, "path", None), want["path"], f"{stage}: JSON path of {e}")
    for sub in want.get("contains") or []:
        t.assertIn(py_names(sub), str(e), f"{stage}")
    t.assertNotIn("Options.", str(e), f"{stage}: a Python error names Go's Options")


if __name__ == "__main__":
    unittest.main()
