"""Runs a spec's reference.python function for kerntune.

Usage: python3 pyref_driver.py DIR. DIR/manifest.json names the file, the
function, the inputs (raw little-endian float64 files with their shapes),
the constants, the dims and the dtype; the outputs are written as
DIR/out_<j>.bin (float64, flattened) and their count to DIR/result.json.
Exit status 2: a problem with what the function returned (message on
stderr); 3: the function or its file raised (traceback on stderr); 4:
numpy cannot be imported.
"""

import importlib.util
import json
import os
import sys
import traceback

try:
    import numpy as np
except ImportError as e:  # the Go side turns this into install advice
    sys.stderr.write("numpy: %s\n" % e)
    sys.exit(4)


def fail(code, msg):
    sys.stderr.write(msg.rstrip() + "\n")
    sys.exit(code)


def user_traceback(e):
    """The traceback of e without this driver's own frame."""
    tb = e.__traceback__.tb_next if e.__traceback__ is not None else None
    return "".join(traceback.format_exception(type(e), e, tb))


def main(d):
    with open(os.path.join(d, "manifest.json")) as f:
        m = json.load(f)
    kw = {}
    for inp in m["inputs"]:
        if inp.get("path") is None:
            kw[inp["name"]] = None  # an absent optional input
            continue
        a = np.fromfile(os.path.join(d, inp["path"]), dtype="<f8")
        if inp.get("scalar"):
            kw[inp["name"]] = np.float64(a[0])
        else:
            kw[inp["name"]] = a.reshape(inp["shape"])
    for name, v in m["dims"].items():
        kw[name] = int(v)
    kw["dtype"] = m["dtype"]
    sys.path.insert(0, os.path.dirname(m["file"]))  # helpers next to the reference
    try:
        spec = importlib.util.spec_from_file_location("kerntune_reference", m["file"])
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    except Exception as e:
        fail(3, user_traceback(e))
    fn = getattr(mod, m["function"], None)
    if fn is None or not callable(fn):
        names = sorted(n for n in dir(mod) if not n.startswith("_") and callable(getattr(mod, n)))
        fail(2, "has no function %r (functions there: %s)" % (m["function"], ", ".join(names) or "none"))
    try:
        res = fn(**kw)
    except Exception as e:
        fail(3, user_traceback(e))
    names = m["outputs"]
    if isinstance(res, dict):
        missing = [n for n in names if n not in res]
        extra = [k for k in res if k not in names]
        if missing or extra:
            fail(2, "returned a dict with keys %s; want the output names %s" % (sorted(map(str, res)), names))
        res = [res[n] for n in names]
    elif isinstance(res, (tuple, list)):
        res = list(res)
    else:
        res = [res]
    for j, r in enumerate(res):
        try:
            a = np.asarray(r, dtype=np.float64).ravel()
        except (TypeError, ValueError) as e:
            fail(2, "output %d is not an array of numbers (%s: %s)" % (j, type(r).__name__, e))
        a.astype("<f8").tofile(os.path.join(d, "out_%d.bin" % j))
    with open(os.path.join(d, "result.json"), "w") as f:
        json.dump({"count": len(res)}, f)


if __name__ == "__main__":
    main(sys.argv[1])
