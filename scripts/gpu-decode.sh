#!/usr/bin/env bash
# qgemv (4-bit, group 64) on an NVIDIA GPU against PyTorch's int4 kernel, in
# one run on one machine (H200: about 4 minutes). Build here first
# (CGO_ENABLED=0 go build -o DIR/kerntune ./cmd/kerntune), then run this
# there from the repository root:
#   scripts/gpu-decode.sh DIR/kerntune
# It tunes qgemv's default workload (the seven Qwen2.5 decode shapes) in
# f16 and bf16, then 1x151936x896 and the three shapes where the class
# entries trail torch's int4 kernel one by one (exact-shape entries), benches the entries against
# cuBLAS on the dequantised weights, times torch's _weight_int4pack_mm
# (bf16; scripts/gpu-qgemv-int4.py) and prints a table last: the bandwidth
# floor, the tuned time, its % of the floor (bench's % OF FLOOR: the
# weights, scales and biases at the measured copy bandwidth), torch int4's
# time and the tuned time over it. Logs and files go under $OUT.
# Budgets: Q (30s) a dtype for the workload, QS (50s) for the four shapes.
set -uo pipefail
. "$(dirname "$0")/gpu-common.sh"
kt=${1:-./bin/kerntune}
params="$OUT/hardware_params.json"
big=1x151936x896x4x64

step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee "$OUT/nvidia-smi.txt"
start=$(date +%s)
for dt in f16 bf16; do
  step "tune qgemv $dt (${Q:-30s}, then ${QS:-50s} on four shapes)"
  run "$kt" tune --backend cuda --dtype "$dt" --kernel qgemv --budget "${Q:-30s}" --out "$params" > "$OUT/tune-qgemv-$dt.log" 2>&1
  run "$kt" tune --backend cuda --dtype "$dt" --kernel qgemv --budget "${QS:-50s}" --shape "$big" \
    --shape 1x896x4864x4x64 --shape 1x3584x896x4x64 --shape 1x4864x896x4x64 --out "$params" > "$OUT/tune-qgemv-$dt-big.log" 2>&1
  grep -E "^qgemv |wrote|failed" "$OUT/tune-qgemv-$dt.log" "$OUT/tune-qgemv-$dt-big.log" | tail -8
done
for dt in f16 bf16; do
  step "bench qgemv $dt"
  run "$kt" bench --backend cuda --dtype "$dt" --params "$params" --kernel qgemv -q --samples 100 \
    --json-out "$OUT/bench-qgemv-$dt.json" > "$OUT/bench-qgemv-$dt.txt" 2>&1
  cat "$OUT/bench-qgemv-$dt.txt"
done
step "torch int4 (tinygemm, bf16, CUDA graph)"
run python3 "$(dirname "$0")/gpu-qgemv-int4.py" > "$OUT/int4.txt" 2>&1
cat "$OUT/int4.txt"
echo "the run took $(( $(date +%s) - start )) s"

# bench rows: FAMILY DTYPE SHAPE PARAMS TUNED FILE cublas BASELINE SPEEDUP
# PCT %; the floor is TUNED × PCT / 100.
step "summary (µs)"
awk '
  FNR == NR { if ($1 == "int4") t[$3] = $4; next }
  $1 == "qgemv" && $7 == "cublas" {
    s = $3; sub(/x4x64.*/, "", s)
    pct = $10 + 0
    i = (s in t) ? t[s] : 0
    printf "%-5s %-22s %7.2f %8.2f %7.1f%% %8.2f %8.2f %6s\n", $2, $3, $5 * pct / 100, $5, pct, $8, i, (i > 0 ? sprintf("%.2f", $5 / i) : "-")
  }
  BEGIN { printf "%-5s %-22s %7s %8s %8s %8s %8s %6s\n", "dtype", "shape", "floor", "tuned", "floor%", "cuBLAS", "int4", "/int4" }
' "$OUT/int4.txt" "$OUT/bench-qgemv-f16.txt" "$OUT/bench-qgemv-bf16.txt" | tee "$OUT/decode-table.txt"
exit $status
