#!/usr/bin/env bash
# qgemv on an NVIDIA GPU (H100: about 9 minutes), for a machine with no Go:
# build here first with `make gpu-binaries` (CGO_ENABLED=0), then run this
# there from the repository root. It tunes qgemv (4-bit, group 64: the
# default workload, seed 000's seven Qwen2.5 decode shapes) in f16 and
# bf16, benches it against cuBLAS's gemv on the dequantised weights in the
# same dtype, and prints a table last: the bandwidth floor of the packed
# weights, scales and biases (bench's % OF FLOOR), the launch gap of an
# empty kernel, the tuned time, cuBLAS's time, and the two targets:
# ≥ 80 % of the floor at 1×151936×896, ≤ 1.25 × (floor + gap) at
# 1×9728×896 and 1×4864×896. Logs and files go under $OUT.
#   scripts/gpu-qgemv.sh
# Budgets (seconds): QF16 (150), QBF16 (90) for the default workload, QSHAPE
# (90) for the three target shapes, each dtype.
set -uo pipefail
. "$(dirname "$0")/gpu-common.sh"
kt=./bin/kerntune
params="$OUT/hardware_params.json"

step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee "$OUT/nvidia-smi.txt"

start=$(date +%s)
for dt in f16 bf16; do
  budget=${QF16:-150}
  [ "$dt" = bf16 ] && budget=${QBF16:-90}
  step "tune qgemv $dt (${budget}s)"
  run $kt tune --backend cuda --dtype "$dt" --kernel qgemv --budget "${budget}s" --out "$params" > "$OUT/tune-qgemv-$dt.log" 2>&1
  grep -E "^qgemv |wrote|failed" "$OUT/tune-qgemv-$dt.log" | tail -8
  # The three shapes with targets share the class largeN, whose entry keeps
  # parameters no slower than the default on any of them (the no-harm
  # rule); each gets its own exact-shape entry, which the loader prefers.
  step "tune qgemv $dt on the target shapes one by one (${QSHAPE:-90}s)"
  run $kt tune --backend cuda --dtype "$dt" --kernel qgemv --budget "${QSHAPE:-90}s" \
    --shape 1x151936x896x4x64 --shape 1x9728x896x4x64 --shape 1x4864x896x4x64 \
    --out "$params" > "$OUT/tune-qgemv-$dt-shapes.log" 2>&1
  grep -E "^qgemv |wrote|failed" "$OUT/tune-qgemv-$dt-shapes.log" | tail -4
done
echo "tuning took $(( $(date +%s) - start )) s"

for dt in f16 bf16; do
  step "bench qgemv $dt against cuBLAS $dt gemv on the dequantised weights"
  run $kt bench --backend cuda --dtype $dt --params "$params" --kernel qgemv -q --samples 100 \
    --json-out "$OUT/bench-qgemv-$dt.json" > "$OUT/bench-qgemv-$dt.txt" 2>&1
  cat "$OUT/bench-qgemv-$dt.txt"
done
echo "the whole run took $(( $(date +%s) - start )) s"

# The launch gap the tuner measured when the backend opened (an empty
# kernel between back-to-back launches), as the file records it.
gap=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(next(v["facts"]["launch_overhead_us"] for v in d["devices"].values() if v.get("backend") == "cuda"))' "$params")
echo "launch gap (launch_overhead_us): $gap µs"

# bench rows: FAMILY DTYPE SHAPE PARAMS TUNED FILE cublas BASELINE SPEEDUP
# PCT %; the floor is TUNED × PCT / 100.
step "summary (µs)"
awk -v gap="$gap" '
  $1 == "qgemv" && $7 == "cublas" {
    pct = $10 + 0; floor = $5 * pct / 100
    target = "-"
    if ($3 ~ /^1x151936x896/) target = (pct >= 80) ? "met (>= 80 % of floor)" : "MISSED (< 80 % of floor)"
    if ($3 ~ /^1x(9728|4864)x896x/) target = ($5 <= 1.25 * (floor + gap)) ? sprintf("met (<= %.2f)", 1.25 * (floor + gap)) : sprintf("MISSED (> %.2f)", 1.25 * (floor + gap))
    printf "%-5s %-24s %8.2f %6.2f %8.2f %8.2f %6.1f%%  %s\n", $2, $3, floor, gap, $5, $8, pct, target
  }
  BEGIN { printf "%-5s %-24s %8s %6s %8s %8s %7s  %s\n", "dtype", "shape", "floor", "gap", "tuned", "cuBLAS", "floor%", "target" }
' "$OUT"/bench-qgemv-f16.txt "$OUT"/bench-qgemv-bf16.txt | tee "$OUT/qgemv-table.txt"
exit $status
