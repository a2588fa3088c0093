#!/usr/bin/env python3
"""Per family, summed over a trace's entry lines: wall, device busy, idle,
the wait for builds (compile_s), the compile pool's time (build_s), and
the candidates measured ahead of their turn (ahead, ahead_asked) and the
spares among them (spared; traces before spares have none)."""
import collections, gzip, json, sys

for path in sys.argv[1:]:
    op = gzip.open if path.endswith(".gz") else open
    fam = collections.defaultdict(collections.Counter)
    n = collections.Counter()
    with op(path, "rt") as f:
        for line in f:
            r = json.loads(line)
            if r.get("kind") != "entry":
                n[r["kernel"]] += 1
                continue
            t, c = r["time"], fam[r["kernel"]]
            for k in ("wall_s", "device_s", "idle_s", "compile_s", "verify_s", "setup_s"):
                c[k] += t.get(k, 0)
            c["build_s"] += r.get("build_s", 0)
            c["ahead"] += r.get("ahead", 0)
            c["asked"] += r.get("ahead_asked", 0)
            c["spared"] += r.get("spared", 0)
            c["entries"] += 1
    print(path)
    print("  %-10s %7s %6s %6s %7s %7s %7s %6s %6s %6s %6s" % ("family", "entries", "wall", "busy%", "idle", "wait", "pool", "meas", "ahead", "asked", "spared"))
    tot = collections.Counter()
    for k in sorted(fam):
        c = fam[k]
        tot.update(c)
        tot["m"] += n[k]
        print("  %-10s %7d %6.1f %6.0f %7.1f %7.1f %7.1f %6d %6d %6d %6d" % (k, c["entries"], c["wall_s"], 100 * c["device_s"] / max(c["wall_s"], 1e-9),
              c["idle_s"], c["compile_s"], c["build_s"], n[k], c["ahead"], c["asked"], c["spared"]))
    c = tot
    print("  %-10s %7d %6.1f %6.0f %7.1f %7.1f %7.1f %6d %6d %6d %6d" % ("total", c["entries"], c["wall_s"], 100 * c["device_s"] / max(c["wall_s"], 1e-9),
          c["idle_s"], c["compile_s"], c["build_s"], c["m"], c["ahead"], c["asked"], c["spared"]))
