#!/usr/bin/env bash
# The GPU checks of the newer features in one run (build first with
# `make gpu-binaries && scripts/gpu-fault.sh build`): spec files checked and
# tuned, crash isolation with injected faults, and a sampled verification of
# every family through the shared compile pool. Logs under $OUT.
set -uo pipefail
. "$(dirname "$0")/gpu-common.sh"
echo "== verify a sample of every family (cuda)"
start=$(date +%s)
./bin/kerntune verify --backend cuda --sample 20 > "$OUT/verify-sample.json" 2> "$OUT/verify-sample.log" --json || status=1
tail -12 "$OUT/verify-sample.log"; echo "($(( $(date +%s) - start )) s)"
echo; echo "== spec files"
start=$(date +%s)
scripts/gpu-spec.sh "${SPEC_BUDGET:-15s}" > "$OUT/spec.log" 2>&1 || status=1
tail -40 "$OUT/spec.log"; echo "($(( $(date +%s) - start )) s)"
echo; echo "== crash isolation"
start=$(date +%s)
scripts/gpu-fault.sh > "$OUT/fault-run.log" 2>&1 || status=1
sed -n '/== checks/,$p' "$OUT/fault-run.log"; echo "($(( $(date +%s) - start )) s)"
exit $status
