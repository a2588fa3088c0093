#!/usr/bin/env bash
# tune --effort on a CUDA GPU (H200), for a machine without Go: build
# bin/kerntune with `make gpu-binaries`, then run this from the repository
# root. The default workload in f16: --effort quick from an empty file and
# an empty compile cache, then --effort default into another file (the
# compile cache now warm). Logs and files go to $OUT; each run's wall time,
# summary and plan lines are printed.
set -uo pipefail
. "$(dirname "$0")/gpu-common.sh"
kt=./bin/kerntune
export KERNTUNE_CACHE_DIR=$OUT/kernel-cache
for effort in ${EFFORTS:-quick default}; do
  step "tune --effort $effort, f16"
  t0=$(date +%s)
  run $kt tune --backend cuda --dtype f16 --effort $effort --out "$OUT/hp-$effort.json" --trace "$OUT/trace-$effort.jsonl" > "$OUT/tune-$effort.log" 2>&1
  echo "wall $(( $(date +%s) - t0 )) s"
  grep -E '^device|plan:|of the run|--extend|wrote|FAILED|too small' "$OUT/tune-$effort.log" | cut -c1-300
done
rm -rf "$KERNTUNE_CACHE_DIR"
exit $status
