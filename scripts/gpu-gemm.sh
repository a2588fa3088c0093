#!/usr/bin/env bash
# gemm_av on the matrix units of an NVIDIA GPU (H100: about 7 minutes), for
# a machine with no Go: build here first with `make gpu-binaries`
# (CGO_ENABLED=0), then run this there from the repository root. It tunes
# gemm_av shape by shape through `kerntune tune` (f16: 4096³ and
# 512×4864×896 on the fragment body, MMA=1; the skinny shapes of batched
# decoding, 16×4864×896 and 4096×16×896, over the whole space; f32 on the
# SIMT body, MMA=0, at 1024³ and 4096³: no regression), benches each
# winner against cuBLAS in the same dtype with `kerntune bench`, and prints
# a table last: tuned and cuBLAS µs, speed (cuBLAS time / tuned time), the
# winner's KS (sets of SIMD-groups splitting a slice's depth) and the
# target. Logs, params files and traces go under $OUT.
#   scripts/gpu-gemm.sh
# Budgets (seconds, per shape): GEMM_BIG (80, f16 4096³), GEMM_MID (60,
# f16 512×4864×896), GEMM_SKINNY (45, each skinny shape), GEMM_F32 (35,
# each f32 shape); SAMPLES (bench samples, 50).
set -uo pipefail
. "$(dirname "$0")/gpu-common.sh"
kt=./bin/kerntune
samples=${SAMPLES:-50}

# dtype shape budget --where filter (- for none) target
targets=(
  "f16 4096x4096x4096 ${GEMM_BIG:-80} MMA=1 speed>=0.5"
  "f16 512x4864x896 ${GEMM_MID:-60} MMA=1 speed>=0.5"
  "f16 16x4864x896 ${GEMM_SKINNY:-45} - speed>=1"
  "f16 4096x16x896 ${GEMM_SKINNY:-45} - speed>=1"
  "f32 1024x1024x1024 ${GEMM_F32:-35} MMA=0 speed>=0.75"
  "f32 4096x4096x4096 ${GEMM_F32:-35} MMA=0 speed>=0.75"
)

step "device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$OUT/nvidia-smi.txt"

start=$(date +%s)
for t in "${targets[@]}"; do
  read -r dt shape budget where target <<<"$t"
  name="gemm_av-$dt-$shape"
  filter=()
  [ "$where" != - ] && filter=(--where "$where")
  step "tune gemm_av $dt $shape (${budget}s${filter[*]:+, ${filter[*]}})"
  run $kt tune --backend cuda --kernel gemm_av --dtype "$dt" --shape "$shape" "${filter[@]}" \
    --budget "${budget}s" --out "$OUT/hp-$name.json" --trace "$OUT/trace-$name.jsonl" > "$OUT/tune-$name.log" 2>&1
  tail -3 "$OUT/tune-$name.log"
  run $kt bench --backend cuda --kernel gemm_av --dtype "$dt" --shape "$shape" --params "$OUT/hp-$name.json" \
    --samples "$samples" -q --json-out "$OUT/bench-$name.json" > "$OUT/bench-$name.txt" 2>&1
  grep -E "^gemm_av|FAILED" "$OUT/bench-$name.txt"
  echo "elapsed $(( $(date +%s) - start )) s"
done

# bench rows: FAMILY DTYPE SHAPE PARAMS TUNED FILE cublas BASELINE SPEEDUP ...;
# PARAMS is one word (BK=32,BM=128,...).
step "summary (µs; speed = cuBLAS time / tuned time, above 1: faster than cuBLAS)"
for t in "${targets[@]}"; do
  read -r dt shape budget where target <<<"$t"
  f="$OUT/bench-gemm_av-$dt-$shape.txt"
  [ -f "$f" ] || continue
  awk -v target="$target" -v where="$where" '
    $1 == "gemm_av" && $7 == "cublas" {
      speed = $8 / $5; want = substr(target, 8) + 0
      ks = "KS=1"; mma = "MMA=0"
      n = split($4, kv, ",")
      for (i = 1; i <= n; i++) { if (kv[i] ~ /^KS=/) ks = kv[i]; if (kv[i] ~ /^MMA=/) mma = kv[i] }
      printf "%-4s %-18s %-6s %-5s %10.2f %10.2f %6.2f  %s %s\n", $2, $3, where, ks, $5, $8, speed, target, (speed >= want ? "met" : "MISSED")
      printf "     %s\n", $4
    }' "$f"
done | awk 'BEGIN { printf "%-4s %-18s %-6s %-5s %10s %10s %6s  %s\n", "dtype", "shape", "where", "KS", "tuned", "cuBLAS", "speed", "target" } { print }' | tee "$OUT/gemm-table.txt"
echo "the whole run took $(( $(date +%s) - start )) s"
exit $status
