#!/usr/bin/env bash
# How busy tune keeps a CUDA GPU (H200), for a machine without Go: build
# bin/kerntune with `make gpu-binaries`, then run this from the repository
# root. The default workload at the default effort, per dtype of $DTYPES
# (default f16), twice: first from an empty compile cache, then with the
# cache the first run left. Logs, traces and files go to $OUT; a table of
# wall time, device busy and candidates per entry is printed last.
set -uo pipefail
. "$(dirname "$0")/gpu-common.sh"
kt=./bin/kerntune
export KERNTUNE_CACHE_DIR=$OUT/kernel-cache
rm -rf "$KERNTUNE_CACHE_DIR"
rows=()
for dt in ${DTYPES:-f16}; do
  for pass in 1 2; do
    step "tune --effort default, $dt, pass $pass"
    t0=$(date +%s)
    run $kt tune --backend cuda --dtype "$dt" --out "$OUT/hp-$dt-$pass.json" --trace "$OUT/trace-$dt-$pass.jsonl" > "$OUT/tune-$dt-$pass.log" 2>&1
    wall=$(( $(date +%s) - t0 ))
    grep -E '^device|plan:|of the run|--extend|wrote|FAILED' "$OUT/tune-$dt-$pass.log" | cut -c1-300
    rows+=("$dt pass $pass: wall ${wall} s; $(grep -o 'device busy [0-9]* % of the run; candidates measured per entry: min [0-9]*, median [0-9]*' "$OUT/tune-$dt-$pass.log")")
  done
done
rm -rf "$KERNTUNE_CACHE_DIR"
step "summary"
printf '%s\n' "${rows[@]}"
exit $status
