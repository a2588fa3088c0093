#!/usr/bin/env python3
"""The entries of params files that measured fewest candidates: per file,
each entry's candidates measured (and its valid space), fewest first."""
import json, sys

def entries(node, path=""):
    if isinstance(node, dict):
        if "candidates" in node and isinstance(node["candidates"], dict) and "measured" in node["candidates"]:
            yield path, node["candidates"]
        for k, v in node.items():
            yield from entries(v, path + "/" + k)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from entries(v, path)

for p in sys.argv[1:]:
    with open(p) as f:
        rows = sorted(entries(json.load(f)), key=lambda r: r[1]["measured"])
    print(p, "entries", len(rows), "under 60 (and not their whole space):",
          sum(1 for _, c in rows if c["measured"] < 60 and c["measured"] < c.get("valid", 0)))
    for path, c in rows[:6]:
        print("  %4d of %5d  %s" % (c["measured"], c.get("valid", 0), path))
