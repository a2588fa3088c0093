#!/usr/bin/env python3
"""Where the second default run waited for builds: its trace records split
into candidates the first run had built (so in the compile cache) and fresh
ones, per family, with the wait for their build (compile_s)."""
import collections, gzip, json, sys

def records(path):
    with gzip.open(path, "rt") as f:
        return [r for r in map(json.loads, f) if r.get("kind") != "entry"]

def cand(r):
    return r["kernel"], r["dtype"], tuple(sorted(r["params"].items()))

first = {cand(r) for r in records(sys.argv[1] if len(sys.argv) > 1 else "trace-default-1.jsonl.gz")}
per = collections.defaultdict(lambda: [0, 0.0, 0, 0, 0.0, 0])
for r in records(sys.argv[2] if len(sys.argv) > 2 else "trace-default-2.jsonl.gz"):
    w, p = r.get("compile_s", 0), per[r["kernel"]]
    i = 3 if cand(r) in first else 0
    p[i] += 1
    p[i + 1] += w
    p[i + 2] += w > 0.1
print("family      fresh: n   wait  >0.1s | built in run 1: n   wait  >0.1s")
for k, p in sorted(per.items()) + [("total", [sum(p[i] for p in per.values()) for i in range(6)])]:
    print("%-10s %10d %6.2f %6d | %17d %6.2f %6d" % (k, *p))
