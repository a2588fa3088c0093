#!/usr/bin/env bash
# The whole GPU session in one command, for a machine with an NVIDIA GPU and
# no Go: build here first with `make gpu-binaries` (CGO_ENABLED=0), then run
# this there from the repository root. It verifies every candidate of every
# family on odd shapes, tunes the default workload (f16 and f32), benches the
# result against cuBLAS, and writes logs and hardware_params.json under $OUT.
#   scripts/gpu-bench.sh [quick|verify|tune|full]   (verify + tune = full)
set -uo pipefail
mode=${1:-full}
. "$(dirname "$0")/gpu-common.sh"
kt=./bin/kerntune

step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee "$OUT/nvidia-smi.txt"
if [ -x bin/cudadrv.test ]; then
  step "driver bindings smoke test"
  CUDADRV_REQUIRE_GPU=1 run bin/cudadrv.test -test.v -test.run Smoke > "$OUT/smoke.log" 2>&1
  grep -E '^(=== RUN|--- |PASS|FAIL|ok)|TFLOP|GB/s|ticky' "$OUT/smoke.log" | head -40
fi
run $kt devices | tee "$OUT/devices.txt"

if [ "$mode" = quick ]; then
  step "verify a sample of every family"
  run $kt verify --backend cuda --sample 25 --json > "$OUT/verify.json" 2> "$OUT/verify.log"
  cat "$OUT/verify.log"
  step "tune two classes"
  run $kt tune --backend cuda --dtype f16 --kernel gemv_nt --shape 1x896x4864 --budget 30s --out "$OUT/hardware_params.json" 2>&1 | tee "$OUT/tune-quick.log"
  run $kt bench --backend cuda --dtype f16 --kernel gemv_nt --shape 1x896x4864 --params "$OUT/hardware_params.json" -q
  exit $status
fi

if [ "$mode" = full ] || [ "$mode" = verify ]; then
  step "verify every candidate of every family (f32, f16)"
  run $kt verify --backend cuda --json > "$OUT/verify.json" 2> "$OUT/verify.log"
  tail -40 "$OUT/verify.log"
  step "tune and bench one shape"
  run $kt tune --backend cuda --dtype f16 --kernel gemv_nt --shape 1x896x4864 --budget 20s --out "$OUT/quick.json" 2>&1
  run $kt bench --backend cuda --dtype f16 --kernel gemv_nt --params "$OUT/quick.json" -q 2>&1
  [ "$mode" = verify ] && exit $status
fi
for dt in f16 f32; do
  step "tune the default workload, $dt"
  start=$(date +%s)
  run $kt tune --backend cuda --dtype $dt --budget ${TUNE_BUDGET:-120s} --out "$OUT/hardware_params.json" > "$OUT/tune-$dt.log" 2>&1
  echo "tune $dt took $(( $(date +%s) - start )) s"; tail -30 "$OUT/tune-$dt.log"
done
for dt in f16 f32; do
  step "bench $dt against cuBLAS"
  run $kt bench --backend cuda --dtype $dt --params "$OUT/hardware_params.json" -q --samples 100 --json-out "$OUT/bench-$dt.json" > "$OUT/bench-$dt.txt" 2>&1
done
step "summary"
$kt show "$OUT/hardware_params.json" | tee "$OUT/show.txt"
cat "$OUT"/bench-*.txt
exit $status
