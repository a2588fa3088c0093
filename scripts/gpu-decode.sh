#!/usr/bin/env bash
# qgemv (4-bit and 8-bit, group 64) on an NVIDIA GPU against PyTorch's int4
# kernel, in one run on one machine (H200: about 6 minutes at the default
# budgets). Build here first (CGO_ENABLED=0 go build -o DIR/kerntune
# ./cmd/kerntune), then run this there from the repository root:
#   scripts/gpu-decode.sh DIR/kerntune [DIR/kerntune-base]
# It tunes qgemv's default workload (the seven Qwen2.5 decode shapes, 4-bit)
# in f16 and bf16, then exact-shape entries for 1x151936x896 at 4 and 8 bits
# and the three 4-bit shapes where class entries trailed torch's int4 kernel
# (BIG_SHAPES overrides that list), and the batched shapes Mx151936x896 at 4
# and 8 bits for each M of BATCH (default "4 16": rows of x, sequences
# decoded together; empty for none), benches the entries on the workload,
# the 8-bit shape and the batched ones against cuBLAS on the dequantised
# weights, times torch's _weight_int4pack_mm at m = 1 and each M (bf16;
# scripts/gpu-qgemv-int4.py) and prints a table
# last: the bandwidth floor, the tuned time, its % of the floor (bench's %
# OF FLOOR: the weights, scales and biases at the measured copy bandwidth),
# torch int4's time and the tuned time over it (4-bit rows). With a second
# binary (another build to compare with), both first time the 151936-row
# shapes in f16 at one fixed candidate (FIXED, as KERNTUNE_QGEMV_* variables).
# Logs and files go under $OUT.
# Budgets: Q (30s) a dtype for the workload, QS (50s) for the exact shapes,
# QB (50s) for the batched shapes.
set -uo pipefail
. "$(dirname "$0")/gpu-common.sh"
kt=${1:-./bin/kerntune}
base=${2:-}
params="$OUT/hardware_params.json"
big4=1x151936x896x4x64
big8=1x151936x896x8x64
read -r -a bigs <<< "${BIG_SHAPES:-$big4 $big8 1x896x4864x4x64 1x3584x896x4x64 1x4864x896x4x64}"
read -r -a ms <<< "${BATCH-4 16}"
batched=()
for m in "${ms[@]}"; do batched+=("${m}x151936x896x4x64" "${m}x151936x896x8x64"); done
# --shape takes dims only (no bias): the fused-qkv projection runs without its bias here.
workload=(1x896x896x4x64 1x1152x896x4x64 1x896x4864x4x64 1x3584x896x4x64 1x9728x896x4x64 1x4864x896x4x64 "$big4" "$big8" "${batched[@]}")
shapeargs() { for s in "$@"; do printf -- '--shape\n%s\n' "$s"; done; }
mapfile -t bigargs < <(shapeargs "${bigs[@]}")
mapfile -t batchargs < <(shapeargs "${batched[@]}")
mapfile -t benchargs < <(shapeargs "${workload[@]}")

step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee "$OUT/nvidia-smi.txt"
start=$(date +%s)
if [ -n "$base" ]; then
  read -r -a fixed <<< "${FIXED:-TPR=4 RPB=32 RPT=2 VEC=4 UNROLL=2}"
  envs=()
  for p in "${fixed[@]}"; do envs+=("KERNTUNE_QGEMV_$p"); done
  for b in "$base" "$kt"; do
    step "fixed candidate ${fixed[*]}: $b"
    env "${envs[@]}" "$b" bench --backend cuda --dtype f16 --kernel qgemv -q --samples 50 \
      --shape "$big4" --shape "$big8" > "$OUT/fixed-$(basename "$b").txt" 2>&1 || echo "FAILED: $b bench"
    grep -E "^qgemv|rror" "$OUT/fixed-$(basename "$b").txt"
  done
fi
for dt in f16 bf16; do
  step "tune qgemv $dt (${Q:-30s}, then ${QS:-50s} on ${#bigs[@]} shapes)"
  run "$kt" tune --backend cuda --dtype "$dt" --kernel qgemv --budget "${Q:-30s}" --out "$params" > "$OUT/tune-qgemv-$dt.log" 2>&1
  run "$kt" tune --backend cuda --dtype "$dt" --kernel qgemv --budget "${QS:-50s}" "${bigargs[@]}" \
    --out "$params" > "$OUT/tune-qgemv-$dt-big.log" 2>&1
  if [ ${#batched[@]} -gt 0 ]; then
    step "tune qgemv $dt, batched (${QB:-50s} on ${#batched[@]} shapes)"
    run "$kt" tune --backend cuda --dtype "$dt" --kernel qgemv --budget "${QB:-50s}" "${batchargs[@]}" \
      --out "$params" > "$OUT/tune-qgemv-$dt-batched.log" 2>&1
  fi
  grep -E "^qgemv |wrote|failed" "$OUT"/tune-qgemv-"$dt"*.log | tail -14
done
for dt in f16 bf16; do
  step "bench qgemv $dt"
  run "$kt" bench --backend cuda --dtype "$dt" --params "$params" --kernel qgemv -q --samples 100 "${benchargs[@]}" \
    --json-out "$OUT/bench-qgemv-$dt.json" > "$OUT/bench-qgemv-$dt.txt" 2>&1
  cat "$OUT/bench-qgemv-$dt.txt"
done
step "torch int4 (tinygemm, bf16, CUDA graph)"
run python3 "$(dirname "$0")/gpu-qgemv-int4.py" 1 "${ms[@]}" > "$OUT/int4.txt" 2>&1
cat "$OUT/int4.txt"
echo "the run took $(( $(date +%s) - start )) s"

# bench rows: FAMILY DTYPE SHAPE PARAMS TUNED FILE cublas BASELINE SPEEDUP
# PCT %; the floor is TUNED × PCT / 100 (the weights, scales and biases, x
# and y: at m = 4 and 16 the target is 75 %). torch's kernel is 4-bit only.
step "summary (µs)"
awk '
  FNR == NR { if ($1 == "int4") t[$3] = $4; next }
  $1 == "qgemv" && $7 == "cublas" {
    s = $3; sub(/x4x64.*/, "", s)
    pct = $10 + 0
    i = ($3 ~ /x4x64/ && s in t) ? t[s] : 0
    printf "%-5s %-22s %7.2f %8.2f %7.1f%% %8.2f %8.2f %6s\n", $2, $3, $5 * pct / 100, $5, pct, $8, i, (i > 0 ? sprintf("%.2f", $5 / i) : "-")
  }
  BEGIN { printf "%-5s %-22s %7s %8s %8s %8s %8s %6s\n", "dtype", "shape", "floor", "tuned", "floor%", "cuBLAS", "int4", "/int4" }
' "$OUT/int4.txt" "$OUT/bench-qgemv-f16.txt" "$OUT/bench-qgemv-bf16.txt" | tee "$OUT/decode-table.txt"
exit $status
