#!/usr/bin/env bash
# Where the tuning time goes on a CUDA GPU, before and after batching and
# sampled verification (docs/design/tuning-time.md): the default workload tuned
# with the default budget (`kerntune tune --backend cuda`, f32, 3m) by
#   before  bin/kerntune-before, a build of the tree before the change
#           (skipped when absent; it records no time split);
#   seq     this tree, one candidate at a time, whole outputs compared
#           (--batch 1 --verify-full);
#   after   this tree as it is (batches of 8 compiled ahead, large outputs
#           checked for finiteness in full and compared on sampled rows);
#   after16 the same with --dtype f16.
# Build here first with `make gpu-binaries` (and, for "before", build that
# tree's cmd/kerntune to bin/kerntune-before), then run from the repository
# root: scripts/gpu-throughput.sh [MODE...]  (default: after after16).
# Each mode writes $OUT/MODE.json; logs go into $OUT/logs.tar.gz and a table
# per entry (candidates measured, device busy, % of the bandwidth floor)
# into $OUT/throughput.md. BACKEND (cuda) and BUDGET (tune's default) may be
# set to try the script elsewhere.
set -uo pipefail
. "$(dirname "$0")/gpu-common.sh"
mkdir -p "$OUT/logs"
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(after after16)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/logs/nvidia-smi.txt"
for m in "${modes[@]}"; do
  kt=./bin/kerntune
  args=()
  case $m in
    before) kt=./bin/kerntune-before ;;
    seq) args=(--batch 1 --verify-full) ;;
    after) ;;
    after16) args=(--dtype f16) ;;
    *) echo "unknown mode $m (before, seq, after, after16)"; exit 2 ;;
  esac
  if [ ! -x "$kt" ]; then
    echo "== $m: $kt is missing, skipped"
    continue
  fi
  [ -n "${BUDGET:-}" ] && args+=(--budget "$BUDGET")
  echo "== $m: tune --backend ${BACKEND:-cuda} ${args[*]:-} (default workload)"
  start=$(date +%s.%N)
  "$kt" tune --backend "${BACKEND:-cuda}" "${args[@]}" --out "$OUT/$m.json" -v > "$OUT/logs/$m.log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  echo "$m exit $rc, $(python3 -c "print(round($end-$start,1))") s" | tee -a "$OUT/logs/runs.txt"
  [ $rc -eq 0 ] || status=1
  grep -E 'of the run|FAILED|error' "$OUT/logs/$m.log" | tail -5
done
tar -C "$OUT" -czf "$OUT/logs.tar.gz" logs
python3 - "$OUT" "${modes[@]}" <<'EOF' | tee "$OUT/throughput.md"
import json, os, re, sys
out, modes = sys.argv[1], sys.argv[2:]
rows, runs = {}, {}
for m in modes:
    p = os.path.join(out, m + ".json")
    if not os.path.exists(p):
        continue
    log = open(os.path.join(out, "logs", m + ".log"), errors="replace").read()
    g = re.search(r"device busy (\d+) % of the run", log)
    runs[m] = g.group(1) + " %" if g else "-"
    for dev in json.load(open(p))["devices"].values():
        for fam, es in dev["kernels"].items():
            for key, e in es.items():
                cls = key.split("/", 1)[1]
                t = e.get("time") or {}
                r = e.get("roofline") or {}
                cell = "%d/%d" % (e["candidates"]["measured"], e["candidates"]["valid"])
                if t:
                    cell += ", %.0f %%" % t["busy_pct"]
                if r.get("pct_of_floor"):
                    cell += ", floor %.0f %%" % r["pct_of_floor"]
                rows.setdefault((fam, cls), {})[m] = cell
print("measured/valid, device busy, % of the bandwidth floor, per entry")
print()
print("| entry | " + " | ".join(modes) + " |")
print("| --- | " + " | ".join("---" for _ in modes) + " |")
for (fam, cls) in sorted(rows):
    print("| %s %s | " % (fam, cls) + " | ".join(rows[(fam, cls)].get(m, "-") for m in modes) + " |")
print("| **device busy, whole run** | " + " | ".join(runs.get(m, "-") for m in modes) + " |")
EOF
exit $status
