#!/usr/bin/env bash
# qgemv variants at 1x151936x896 (4- and 8-bit, g64, f16): the base (v0), the
# centred f16 pairs for 8-bit with per-step sums (v1), and v1 with two sets of
# registers in turn (v2); each at fixed params (env) and after a short exact tune.
set -uo pipefail
D=devqgemv
. $D/gpu-common.sh
big=1x151936x896
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee "$OUT/nvidia-smi.txt"
t0=$(date +%s)
for v in v0 v1 v2; do
  step "fixed params $v"
  KERNTUNE_QGEMV_TPR=4 KERNTUNE_QGEMV_RPB=32 KERNTUNE_QGEMV_RPT=2 KERNTUNE_QGEMV_VEC=4 KERNTUNE_QGEMV_UNROLL=2 \
    run timeout 60 $D/kt-$v bench --backend cuda --dtype f16 --params $D/old-params.json --kernel qgemv -q --samples 30 \
    --shape ${big}x4x64 --shape ${big}x8x64 > "$OUT/fixed-$v.txt" 2>&1
  grep -E "^qgemv|rror|FAIL" "$OUT/fixed-$v.txt"
  echo "t=$(( $(date +%s) - t0 ))"
done
for v in v1 v2; do
  step "tune $v"
  run timeout 70 $D/kt-$v tune --backend cuda --dtype f16 --kernel qgemv --budget 20s --shape ${big}x4x64 --shape ${big}x8x64 \
    --out "$OUT/p-$v.json" > "$OUT/tune-$v.log" 2>&1
  tail -4 "$OUT/tune-$v.log"
  run timeout 60 $D/kt-$v bench --backend cuda --dtype f16 --params "$OUT/p-$v.json" --kernel qgemv -q --samples 30 \
    --shape ${big}x4x64 --shape ${big}x8x64 > "$OUT/bench-$v.txt" 2>&1
  grep -E "^qgemv|rror|FAIL" "$OUT/bench-$v.txt"
  echo "t=$(( $(date +%s) - t0 ))"
done
step "summary"
for f in "$OUT"/fixed-*.txt "$OUT"/bench-*.txt; do
  awk -v f="$(basename "$f" .txt)" '$1 == "qgemv" { print f, $3, $4, $5, $10 "%" }' "$f"
done
exit $status
