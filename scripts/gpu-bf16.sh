#!/usr/bin/env bash
# bf16 on an NVIDIA GPU (H100: about 7 minutes), for a machine with no Go:
# build here first with `make gpu-binaries` (CGO_ENABLED=0), then run this
# there from the repository root. It tunes gemv_nt in bf16 on the seven
# Qwen2.5 decode shapes and gemm_av in bf16 (its default workload), tunes
# the same in f16 for comparison, benches both dtypes against cuBLAS
# (GemmEx in CUDA_R_16BF and CUDA_R_16F, f32 compute), and writes logs,
# hardware_params.json and bench-*.{txt,json} under $OUT, with a short
# table last: tuned time and cuBLAS time per shape, bf16 beside f16.
#   scripts/gpu-bf16.sh
# Budgets (seconds): GEMV_BF16 (120), GEMM_BF16 (75), GEMV_F16 (45), GEMM_F16 (75).
set -uo pipefail
. "$(dirname "$0")/gpu-common.sh"
kt=./bin/kerntune
params="$OUT/hardware_params.json"
# The decode step of seed 000's Qwen2.5 shapes (1×1152×896 carries a bias
# in the default workload; --shape times it without).
shapes=(1x896x896 1x1152x896 1x896x4864 1x4864x896 1x3584x896 1x9728x896 1x151936x896)
shape_args=()
for s in "${shapes[@]}"; do shape_args+=(--shape "$s"); done

step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee "$OUT/nvidia-smi.txt"
run $kt devices | tee "$OUT/devices.txt"

start=$(date +%s)
tune() { # DTYPE KERNEL BUDGET [ARGS...]
  local dt=$1 k=$2 budget=$3
  shift 3
  step "tune $k $dt (${budget}s)"
  run $kt tune --backend cuda --dtype "$dt" --kernel "$k" "$@" --budget "${budget}s" --out "$params" > "$OUT/tune-$k-$dt.log" 2>&1
  grep -E "^$k " "$OUT/tune-$k-$dt.log" | tail -12
}
tune bf16 gemv_nt "${GEMV_BF16:-120}" "${shape_args[@]}"
tune bf16 gemm_av "${GEMM_BF16:-75}"
tune f16 gemv_nt "${GEMV_F16:-45}" "${shape_args[@]}"
tune f16 gemm_av "${GEMM_F16:-75}"
echo "tuning took $(( $(date +%s) - start )) s"

for dt in bf16 f16; do
  step "bench gemv_nt and gemm_av $dt against cuBLAS $dt"
  run $kt bench --backend cuda --dtype $dt --params "$params" --kernel gemv_nt "${shape_args[@]}" -q --samples 100 \
    --json-out "$OUT/bench-gemv-$dt.json" > "$OUT/bench-gemv-$dt.txt" 2>&1
  run $kt bench --backend cuda --dtype $dt --params "$params" --kernel gemm_av -q --samples 50 \
    --json-out "$OUT/bench-gemm-$dt.json" > "$OUT/bench-gemm-$dt.txt" 2>&1
  cat "$OUT/bench-gemv-$dt.txt" "$OUT/bench-gemm-$dt.txt"
done
echo "the whole run took $(( $(date +%s) - start )) s"

# The table: bench's rows are FAMILY DTYPE SHAPE PARAMS TUNED FILE BASELINE
# SPEEDUP ..., BASELINE in two fields ("cublas 6.82"); tuned/cuBLAS is the ratio the issue asks about (gemv bf16 at
# most 1; gemm bf16 at most gemm f16's).
step "summary (µs; ratio = tuned / cuBLAS)"
awk '
  $1 == "gemv_nt" || $1 == "gemm_av" {
    key = $1 " " $3
    if (!(key in seen)) { seen[key] = 1; order[n++] = key }
    tuned[key, $2] = $5; blas[key, $2] = $8
  }
  function ratio(t, b) { return (t + 0 > 0 && b + 0 > 0) ? sprintf("%.2f", t / b) : "-" }
  END {
    printf "%-8s %-14s %10s %10s %6s   %10s %10s %6s\n", "family", "shape", "bf16", "cuBLAS", "ratio", "f16", "cuBLAS", "ratio"
    for (i = 0; i < n; i++) {
      k = order[i]; split(k, f, " ")
      printf "%-8s %-14s %10s %10s %6s   %10s %10s %6s\n", f[1], f[2], tuned[k, "bf16"], blas[k, "bf16"], ratio(tuned[k, "bf16"], blas[k, "bf16"]),
        tuned[k, "f16"], blas[k, "f16"], ratio(tuned[k, "f16"], blas[k, "f16"])
    }
  }' "$OUT"/bench-gemv-bf16.txt "$OUT"/bench-gemm-bf16.txt "$OUT"/bench-gemv-f16.txt "$OUT"/bench-gemm-f16.txt | tee "$OUT/bf16-table.txt"
exit $status
