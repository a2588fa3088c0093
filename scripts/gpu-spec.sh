#!/usr/bin/env bash
# Kernel spec files on an NVIDIA GPU, for a machine with no Go: build here
# first (CGO_ENABLED=0 go build -o bin/kerntune ./cmd/kerntune), then run this
# there from the repository root. For each example spec it runs
# `kerntune check --spec` (every candidate built with NVRTC and verified on
# the spec's verification shapes, f32 and f16) and `kerntune tune --spec`
# (cuda backend, f32), loads one result back with `kerntune get --spec` and
# with an env override, and prints a table. Logs and hardware_params.json go
# under $OUT.
#   scripts/gpu-spec.sh [BUDGET]     (tuning budget per spec, default 60s)
set -uo pipefail
budget=${1:-60s}
. "$(dirname "$0")/gpu-common.sh"
kt=./bin/kerntune
params="$OUT/hardware_params.json"
specs="examples/m1_gemv.json examples/gemm_av.json examples/swiglu.json examples/swiglu_raw.json"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee "$OUT/spec-device.txt"
printf '%-20s %-6s %-34s %s\n' SPEC STEP RESULT LOG > "$OUT/spec-table.txt"
for s in $specs; do
  n=$(basename "$s" .json)
  if $kt check --spec "$s" --backend cuda --sample 1 > "$OUT/check-$n.log" 2>&1; then r=ok; else r="FAILED ($?)"; status=1; fi
  printf '%-20s %-6s %-34s %s\n' "$n" check "$r: $(grep -c ' passed' "$OUT/check-$n.log") dtypes; $(grep -o '[0-9]* passed' "$OUT/check-$n.log" | paste -sd/)" "check-$n.log" >> "$OUT/spec-table.txt"
  if $kt tune --spec "$s" --backend cuda --dtype f32 --budget "$budget" --out "$params" > "$OUT/tune-$n.log" 2>&1; then r=ok; else r="FAILED ($?)"; status=1; fi
  printf '%-20s %-6s %-34s %s\n' "$n" tune "$r: $(grep -c ' µs' "$OUT/tune-$n.log") entries" "tune-$n.log" >> "$OUT/spec-table.txt"
done
# Load results back as an application would: file entry, then env override.
$kt get --spec examples/m1_gemv.json --params "$params" --kernel m1_gemv --shape 1x896x4864 > "$OUT/get-m1_gemv.txt" 2>&1 || status=1
KERNTUNE_M1_GEMV_BN=32 $kt get --spec examples/m1_gemv.json --params "$params" --kernel m1_gemv --shape 1x896x4864 --json > "$OUT/get-m1_gemv-env.json" 2>&1 || status=1
echo; cat "$OUT/spec-table.txt"
echo; for s in $specs; do n=$(basename "$s" .json); echo "== tune $n"; grep -E 'µs|FAILED' "$OUT/tune-$n.log"; done
echo; echo "== get m1_gemv 1x896x4864"; cat "$OUT/get-m1_gemv.txt"; grep -A2 '"BN"' "$OUT/get-m1_gemv-env.json"
exit $status
