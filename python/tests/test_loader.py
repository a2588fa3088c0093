"""The Python loader's own API: what the conformance suite does not reach
(the entry points' file lookup, the local device, the result's helpers)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
import kerntune_params as kp  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

FILE = {
    "schema_version": 1,
    "devices": {
        "metal:Apple M3 Max:40c": {
            "backend": "metal", "name": "Apple M3 Max", "family": "apple9", "compute_units": 40,
            "kernels": {"gemm_av": {"f16/large": {"params": {"BM": 64, "BN": 32, "TM": 4, "TN": 2},
                                                  "baseline": {"name": "MPS", "median_us": 400.0}, "use": "baseline"}}},
        },
        "cpu:A:2": {"backend": "cpu", "name": "A", "family": "amd64", "compute_units": 2,
                    "kernels": {"softmax": {"f32/short": {"params": {"ROWS": 16}}}}},
    },
}


class EntryPoints(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.path = os.path.join(self.dir.name, "hp.json")
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump(FILE, f)

    def test_mlx_use(self) -> None:
        # What an MLX application does: name the GPU as device_info() reports it.
        l = kp.load(self.path, "Apple M3 Max", env={})
        self.assertEqual(l.warnings, [])
        self.assertEqual((l.device.key, l.device.matched), ("metal:Apple M3 Max:40c", "name"))
        r = l.resolve("gemm_av", "f16", (1024, 1024, 1024))
        self.assertTrue(r.use_baseline)
        self.assertEqual(r.baseline, "MPS")
        self.assertEqual((r["BM"], r["BN"], r.get("BK"), r.get("NOPE", -1)), (64, 32, 16, -1))
        self.assertEqual(list(r.ints()), ["BM", "BN", "BK", "TM", "TN", "PAD", "MMA", "WM", "WN", "STAGES", "TF32", "KS"])
        self.assertEqual(r.params["TM"], kp.Value(4, "file:metal:Apple M3 Max:40c/gemm_av/f16/large"))
        # A shape may be written as on the command line.
        self.assertEqual(l.resolve("gemm_av", "f16", "1024x1024x1024").ints(), r.ints())

    def test_alias_for_mlx_template(self) -> None:
        tile = kp.alias("MLX_GEMM_TILE_AV", ("BM", "BN"), sep="x", family="gemm_av")
        l = kp.load(self.path, "Apple M3 Max", env={"MLX_GEMM_TILE_AV": "32x8"}, aliases=[tile])
        with self.assertRaises(kp.EnvError):  # BN=8 is not an allowed value of gemm_av BN
            l.resolve("gemm_av", "f16", (1024, 1024, 1024))
        l = kp.load(self.path, "Apple M3 Max", env={"MLX_GEMM_TILE_AV": "32x16"}, aliases=[tile])
        r = l.resolve("gemm_av", "f16", (1024, 1024, 1024))
        self.assertEqual((r["BM"], r["BN"], r.params["BM"].source), (32, 16, "env:MLX_GEMM_TILE_AV"))
        self.assertEqual(l.unused_env({"MLX_GEMM_TILE_AV": "1", "KERNTUNE_GEMM_AV_USE": "tuned", "KERNTUNE_OOPS": "1"}), ["KERNTUNE_OOPS"])

    def test_file_lookup(self) -> None:
        # $KERNTUNE_PARAMS names the file; an empty value does not.
        l = kp.load(env={"KERNTUNE_PARAMS": self.path, "KERNTUNE_DEVICE": "cpu:A:2"})
        self.assertTrue(l.file_found)
        self.assertEqual(l.path, self.path)
        self.assertEqual(l.resolve("softmax", "f32", [8, 64])["ROWS"], 16)
        cwd = os.getcwd()
        os.chdir(self.dir.name)
        try:
            l = kp.load(env={"KERNTUNE_PARAMS": ""})
            self.assertEqual((l.path, l.file_found, l.warnings), ("hardware_params.json", False, []))
            os.rename(self.path, "hardware_params.json")
            l = kp.load(device="cpu:A:2", env={})
            self.assertTrue(l.file_found)
            self.assertEqual(l.resolve("softmax", "f32", [8, 64]).params["ROWS"].source, "file:cpu:A:2/softmax/f32/short")
        finally:
            os.chdir(cwd)

    def test_loads(self) -> None:
        text = json.dumps(FILE)
        for data in (text, text.encode("utf-8")):
            l = kp.loads(data, device="cpu:A:2", env={})
            self.assertEqual(l.path, "")
            self.assertEqual(l.resolve("softmax", "f32", [1, 8])["ROWS"], 16)
        with self.assertRaises(kp.PathError) as cm:
            kp.loads(text.replace('"ROWS": 16', '"ROWS": 3'), env={})
        self.assertEqual(cm.exception.path, 'devices["cpu:A:2"].kernels.softmax["f32/short"].params.ROWS')
        self.assertTrue(str(cm.exception).startswith("params data: "))

    def test_errors_are_catchable_by_kind(self) -> None:
        l = kp.loads(json.dumps(FILE), device="cpu:A:2", env={})
        with self.assertRaises(ValueError):
            l.resolve("softmax", "f32", [0, 8])
        with self.assertRaises(LookupError):
            l.resolve("nope", "f32", [1, 8])
        with self.assertRaises(kp.InvalidShapeError):
            l.resolve("softmax", "f32", [1, True])
        with self.assertRaises(kp.OptionsError):
            kp.loads(json.dumps(FILE), env_prefix="1X")
        with self.assertRaises(kp.OptionsError):
            kp.loads(json.dumps(FILE), aliases=["MLX_X"])  # type: ignore[list-item]

    def test_spec_errors_name_the_file(self) -> None:
        bad = os.path.join(self.dir.name, "k.json")
        with open(bad, "w", encoding="utf-8") as f:
            f.write("{")
        with self.assertRaises(kp.SpecError) as cm:
            kp.loads(json.dumps(FILE), env={}, specs=[bad])
        self.assertIn(bad, str(cm.exception))
        with self.assertRaises(kp.SpecError):
            kp.loads(json.dumps(FILE), env={}, specs=[os.path.join(self.dir.name, "missing.json")])

    @unittest.skipUnless(os.path.exists("/dev/zero"), "no /dev/zero here")
    def test_a_device_is_read_up_to_the_limit(self) -> None:
        # /dev/zero never ends: reading stops after MAX_FILE_SIZE + 1 bytes, as in Go.
        with self.assertRaises(kp.PathError) as cm:
            kp.load("/dev/zero", env={}, local=False)
        self.assertEqual(str(cm.exception),
                         "/dev/zero: not a regular file, and it yields more than 64 MiB, the limit of a params file")
        with self.assertRaises(kp.SpecError) as sm:
            kp.load_spec("/dev/zero")
        self.assertIn("the limit of a spec file", str(sm.exception))


class LocalDevice(unittest.TestCase):
    def test_as_the_cpu_backend_records_it(self) -> None:
        d = kp.local_device()
        self.assertEqual(d.backend, "cpu")
        self.assertEqual(d.key, f"cpu:{d.name}:{d.compute_units}")
        self.assertEqual(d.name, kp.normalize_cpu_model(d.name))
        self.assertGreaterEqual(d.compute_units, 1)
        if hasattr(os, "sched_getaffinity"):
            self.assertEqual(d.compute_units, len(os.sched_getaffinity(0)))
        try:
            with open("/proc/cpuinfo", encoding="utf-8") as f:
                models = [line.split(":", 1)[1].strip() for line in f if line.split(":", 1)[0].strip() == "model name"]
        except OSError:
            models = []
        if models and models[0]:
            self.assertEqual(d.name, kp.normalize_cpu_model(models[0]))

    def test_found_without_options(self) -> None:
        # A file the CPU backend wrote on this machine, merged with others,
        # needs no options: the local device is found by key.
        d = kp.local_device()
        f = json.loads(json.dumps(FILE))
        f["devices"][d.key] = {"backend": "cpu", "name": d.name, "family": d.family, "compute_units": d.compute_units,
                               "kernels": {"softmax": {"f32/short": {"params": {"ROWS": 64}}}}}
        l = kp.loads(json.dumps(f), env={})
        self.assertEqual((l.device.key, l.device.how, l.device.matched, l.warnings), (d.key, "local device", "key", []))
        self.assertEqual(l.resolve("softmax", "f32", [8, 8])["ROWS"], 64)

    def test_normalisation(self) -> None:
        self.assertEqual(kp.normalize_cpu_model('  AMD "EPYC"  7B13 / x '), "AMD EPYC 7B13 - x")
        self.assertEqual(kp.fold_device_name(" NVIDIA\tH100  80GB HBM3 "), "nvidia h100 80gb hbm3")
        self.assertEqual(kp.fold_device_name("Ä"), "Ä")


class Examples(unittest.TestCase):
    def test_example_specs_load(self) -> None:
        # Every spec in examples/ (not the variants manifest), as Go's tests load them.
        names = []
        for name in sorted(os.listdir(os.path.join(ROOT, "examples"))):
            if name.endswith(".json"):
                with open(os.path.join(ROOT, "examples", name), encoding="utf-8") as f:
                    if "source" in json.load(f):
                        names.append(name)
        self.assertGreaterEqual(len(names), 14)
        for name in names:
            with self.subTest(spec=name):
                fam = kp.load_spec(os.path.join(ROOT, "examples", name))
                self.assertEqual(fam.spaces.keys(), {"gpu"})
                self.assertTrue(fam.spaces["gpu"].params)


if __name__ == "__main__":
    unittest.main()


class Variants(unittest.TestCase):
    """A name several entries share with different compute units."""

    FILE = json.dumps({"schema_version": 1, "devices": {
        f"metal:Apple M3 Max:{n}c": {"backend": "metal", "name": "Apple M3 Max", "family": "apple9", "compute_units": n,
                                     "kernels": {}} for n in (40, 30)}})

    def test_unknown_core_count_warns(self) -> None:
        l = kp.loads(self.FILE, "Apple M3 Max", env={}, local=False, local_gpu=False)
        self.assertEqual(l.device.key, "metal:Apple M3 Max:30c")
        self.assertEqual(len(l.warnings), 1)
        for sub in ("several entries", "metal:Apple M3 Max:30c (30", "metal:Apple M3 Max:40c (40",
                    "chose metal:Apple M3 Max:30c"):
            self.assertIn(sub, l.warnings[0])

    def test_core_count_given(self) -> None:
        for opts in ({"compute_units": 40}, {"local_gpu": kp.DeviceID("", "metal", "Apple M3 Max", "", 40)}):
            l = kp.loads(self.FILE, "Apple M3 Max", env={}, **opts)
            self.assertEqual((l.device.key, l.device.matched, l.warnings), ("metal:Apple M3 Max:40c", "name", []))

    def test_iokit_never_crashes(self) -> None:
        from kerntune_params import iokit

        n = iokit.gpu_core_count()
        self.assertIsInstance(n, int)
        if sys.platform != "darwin":
            self.assertEqual(n, 0)
