#!/usr/bin/env python3
"""How close one params file's winners are to another's, timed alike.

For `tune --effort`: a quick run's file against a thorough run's, on the
same device. Both files are benched by kerntune (`bench --params`, which
resolves each default-workload entry as an application would and times it)
one after the other, in turn, ROUNDS times each, and each entry's time is
the median over the rounds, so that a change of load between the two
benches weighs on both. An entry whose parameters are the same in both
files is the same kernel: its ratio is 1 by definition.

Usage: effort-compare.py KERNTUNE BACKEND DTYPE QUICK.json REFERENCE.json
Environment: SAMPLES (bench --samples, default 10), ROUNDS (default 2).
Prints one row per entry (quick / reference time) and the count within 10 %.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile


def bench(kt, backend, dtype, params, samples):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([kt, "bench", "--backend", backend, "--dtype", dtype, "--params", params,
                        "--samples", str(samples), "-q", "--json-out", out.name],
                       check=True, stdout=subprocess.DEVNULL)
        with open(out.name) as f:
            rows = json.load(f)["rows"]
    return {(r["kernel"], r["dtype"], r["shape"]): r for r in rows}


def main(argv):
    if len(argv) != 6:
        sys.exit(__doc__)
    kt, backend, dtype, quick, ref = argv[1:]
    samples = int(os.environ.get("SAMPLES", "10"))
    rounds = int(os.environ.get("ROUNDS", "2"))
    times = {quick: {}, ref: {}}
    params = {}
    for _ in range(rounds):
        for path in (quick, ref):
            for key, r in bench(kt, backend, dtype, path, samples).items():
                times[path].setdefault(key, []).append(r["tuned_us"])
                params[(path, key)] = r["params"]
    within = total = 0
    print(f"{'kernel':10} {'dtype':5} {'shape':24} {'quick µs':>11} {'ref µs':>11} {'ratio':>6}")
    for key in sorted(times[ref]):
        if key not in times[quick]:
            print(f"{key[0]:10} {key[1]:5} {key[2]:24} {'-':>11}  missing in {quick}")
            total += 1
            continue
        q, r = statistics.median(times[quick][key]), statistics.median(times[ref][key])
        same = params[(quick, key)] == params[(ref, key)]
        ratio = 1.0 if same else q / r
        total += 1
        within += ratio <= 1.10
        note = " (same parameters)" if same else ""
        print(f"{key[0]:10} {key[1]:5} {key[2]:24} {q:11.2f} {r:11.2f} {ratio:6.2f}{note}")
    print(f"{within} of {total} entries within 10 % of the reference's time")


if __name__ == "__main__":
    main(sys.argv)
