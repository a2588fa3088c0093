#!/usr/bin/env bash
# One H100 (or other CUDA GPU) run of the whole tree, for a machine without
# Go: `make gpu-binaries` first, then run this from the repository root.
#  1. the driver smoke tests and a sampled verification of every family
#     (every candidate kind, MMA and TF32 included) through the CUDA backend;
#  2. the default workload tuned per dtype (TUNE_BUDGET each, default 150s),
#     with tune's summary of candidates measured per entry and device-busy %;
#  3. bench against cuBLAS, show and get (use: baseline where cuBLAS wins).
# Logs, the params file and a summary table go to $OUT.
set -uo pipefail
. "$(dirname "$0")/gpu-common.sh"
kt=./bin/kerntune
p=$OUT/hardware_params.json
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ -x bin/cudadrv.test ]; then
  echo "== driver smoke test"
  CUDADRV_REQUIRE_GPU=1 run bin/cudadrv.test -test.run Smoke > "$OUT/smoke.log" 2>&1
  tail -2 "$OUT/smoke.log"
fi
echo "== verify every family, a covering sample (cuda, f32 f16, TF32 allowed)"
run $kt verify --backend cuda --sample "${VERIFY_SAMPLE:-40}" ${ALLOW_TF32:---allow-tf32} > "$OUT/verify.log" 2>&1
tail -15 "$OUT/verify.log"
for dt in f16 f32; do
  echo "== tune the default workload, $dt, ${TUNE_BUDGET:-150s}"
  run $kt tune --backend cuda --dtype $dt --budget "${TUNE_BUDGET:-150s}" --out "$p" -v > "$OUT/tune-$dt.log" 2>&1
  grep -v '^  ' "$OUT/tune-$dt.log" | grep -E 'measured|busy|KEPT|FAILED|wrote' | tail -30
done
echo "== bench against cuBLAS"
for dt in f16 f32; do
  run $kt bench --backend cuda --dtype $dt --params "$p" -q --samples 50 > "$OUT/bench-$dt.txt" 2>&1
  cat "$OUT/bench-$dt.txt"
done
$kt show "$p" | tee "$OUT/show.txt"
$kt get --params "$p" --kernel gemm_av --dtype f16 --shape 512x4864x896 --device-name "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" | tee "$OUT/get.txt"
echo "total $(( $(date +%s) - t0 )) s"
exit $status
