#!/usr/bin/env bash
# tune --effort and device busy on a CUDA GPU (H200), for a machine without
# Go: build bin/kerntune with `make gpu-binaries`, then run this from the
# repository root (about 8 minutes). The default workload in $DTYPE (f16):
#   1. --effort quick from an empty compile cache (a first run);
#   2. --effort default from another empty cache, then again with the
#      cache and a copy of the file it left (the device busy targets: first
#      and second run);
#   3. bench --against: the quick file's winners against the second
#      default run's, timed in the same rounds on this GPU.
# Logs, traces and files go to $OUT; a table of wall time, device busy and
# candidates per entry, and the comparison, are printed last.
set -uo pipefail
. "$(dirname "$0")/gpu-common.sh"
kt=${KT:-./bin/kerntune}
dt=${DTYPE:-f16}
rows=()
tune() { # NAME CACHE ARGS...
  local name=$1 cache=$2 t0 wall
  shift 2
  step "tune $name, $dt"
  t0=$(date +%s%N)
  KERNTUNE_CACHE_DIR=$cache run "$kt" tune --backend cuda --dtype "$dt" --out "$OUT/hp-$name.json" \
    --trace "$OUT/trace-$name.jsonl" "$@" > "$OUT/tune-$name.log" 2>&1
  wall=$(( ($(date +%s%N) - t0) / 100000000 ))
  grep -E '^device|plan:|of the run|--extend|wrote|FAILED|too small' "$OUT/tune-$name.log" | cut -c1-300
  rows+=("$(printf '%-10s wall %4d.%d s; %s; %s' "$name" $((wall / 10)) $((wall % 10)) "$(grep -o 'device busy [0-9]* % of the run; candidates measured per entry: min [0-9]*, median [0-9]*, max [0-9]*' "$OUT/tune-$name.log")" \
    "$(grep -o 'waited for builds [0-9.]*s, the compile pool busy [0-9.]*s' "$OUT/tune-$name.log")")")
}
rm -rf "$OUT/cache-quick" "$OUT/cache-default"
tune quick "$OUT/cache-quick" --effort quick
tune default-1 "$OUT/cache-default" --effort default
# A second run extends the first's file, as a user's second run does: it
# plans from the file's records instead of timing each default.
cp "$OUT/hp-default-1.json" "$OUT/hp-default-2.json"
tune default-2 "$OUT/cache-default" --effort default
step "quick's winners against the second default run's (bench --against)"
KERNTUNE_CACHE_DIR=$OUT/cache-default run "$kt" bench --backend cuda --dtype "$dt" --samples "${SAMPLES:-40}" -q \
  --params "$OUT/hp-quick.json" --against "$OUT/hp-default-2.json" | sed -n '/^against /,$p' | tee "$OUT/compare.txt"
rm -rf "$OUT/cache-quick" "$OUT/cache-default"
gzip -f "$OUT"/trace-*.jsonl
step "summary"
printf '%s\n' "${rows[@]}"
tail -1 "$OUT/compare.txt"
exit $status
