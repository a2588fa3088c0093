#!/usr/bin/env bash
# Crash isolation on a real NVIDIA GPU. A build with the ktfault tag makes
# two chosen candidates fault on the device: one stores to an illegal
# address (CUDA_ERROR_ILLEGAL_ADDRESS, which corrupts the CUDA context for
# good), one never finishes. The tuning run must record them as crashed and
# timeout and finish with every other candidate measured.
#   scripts/gpu-fault.sh build   on a machine with Go: builds bin/kerntune-fault
#   scripts/gpu-fault.sh         on the GPU machine (builds first if Go is there);
#                                log and params file under $OUT (default ./gpu-out)
# CRASH and HANG override the candidate keys (valid softmax candidates on any
# CUDA GPU by default).
set -uo pipefail
bin=./bin/kerntune-fault
if [ "${1:-run}" = build ] || { [ ! -x "$bin" ] && command -v go >/dev/null 2>&1; }; then
  CGO_ENABLED=0 go build -tags ktfault -o "$bin" ./cmd/kerntune || exit 1
  [ "${1:-run}" = build ] && { echo "built $bin"; exit 0; }
fi
[ -x "$bin" ] || { echo "no $bin: run 'scripts/gpu-fault.sh build' where Go is installed"; exit 1; }
. "$(dirname "$0")/gpu-common.sh"
CRASH=${CRASH:-RPB=2,TPR=32,UNROLL=2,VEC=1}
HANG=${HANG:-RPB=4,TPR=16,UNROLL=1,VEC=4}
export KTDEV_FAULT="crash:$CRASH;hang:$HANG"
out="$OUT/fault_params.json"
rm -f "$out" "$out.journal"
echo "== faults: $KTDEV_FAULT"
"$bin" tune --backend cuda --kernel softmax --shape 64x1000 --strategy exhaustive \
  --budget 5m --candidate-timeout 20s -v --out "$out" 2>&1 | tee "$OUT/fault.log"
status=${PIPESTATUS[0]}
echo
echo "== checks"
fail=0
check() { if grep -q -- "$2" "$OUT/fault.log"; then echo "ok: $1"; else echo "MISSING: $1 ($2)"; fail=1; fi; }
check "the faulting candidate is recorded as crashed" "$CRASH crashed"
check "the crash reason names the illegal address" "ILLEGAL_ADDRESS"
check "the hanging candidate is recorded as timeout" "$HANG timeout"
check "the entry was written" "f32/64x1000 .*failed\]"
[ "$status" = 0 ] && echo "ok: tune exited 0" || { echo "tune exited $status"; fail=1; }
grep -E "^softmax|worker:" "$OUT/fault.log"
exit $fail
