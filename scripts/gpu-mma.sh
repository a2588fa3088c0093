#!/usr/bin/env bash
# The GEMM session on an NVIDIA GPU without Go: build first with
# `make gpu-binaries` (CGO_ENABLED=0), then run this from the repository
# root. Logs, params files, traces and profiles go under $OUT.
#   scripts/gpu-mma.sh verify    every MMA=1 candidate of gemm_av and gemm_at_b:
#                                f16, and f32 on TF32 (--allow-tf32); SIMT every SAMPLE-th
#   scripts/gpu-mma.sh bench     tune the target shapes, then time each winner
#                                against cuBLAS in the same run (the table at the end)
#   scripts/gpu-mma.sh profile   Nsight Compute on the tuned kernels of the targets
#   scripts/gpu-mma.sh all       verify, bench, profile
#   scripts/gpu-mma.sh xcheck    without the binary: the generated sources
#                                (bin/gemm-src, written by make gpu-binaries)
#                                through CuPy/NVRTC, every MMA candidate verified,
#                                the targets timed against cuBLAS (torch) with
#                                CUDA graphs (scripts/gemm_xcheck.py)
# Environment: TUNE_BUDGET (per shape, default 40s), SIMT_SAMPLE (default 10),
# SAMPLES (bench samples, default 100), VERIFY_SAMPLE (MMA, default 1: all),
# ONLY (a regular expression: bench only the targets whose line matches),
# PROFILE (the targets to profile, default "f16-4096x4096x4096 f32-4096x4096x4096").
set -uo pipefail
mode=${1:-all}
. "$(dirname "$0")/gpu-common.sh"
kt=./bin/kerntune
budget=${TUNE_BUDGET:-40s}
samples=${SAMPLES:-100}

# The targets: family dtype shape --where filters [backend flags].
targets=(
  "gemm_av f16 4096x4096x4096 MMA=1"
  "gemm_av f16 512x4864x896 MMA=1"
  "gemm_av f32 1024x1024x1024 MMA=0"
  "gemm_av f32 4096x4096x4096 MMA=0"
  "gemm_av f32 4096x4096x4096 TF32=1 --allow-tf32"
)
tag() { echo "$1-$2-$3" | tr -d ' '; }

verify() {
  step "verify every MMA=1 candidate (f16; f32 on TF32)"
  run $kt verify --backend cuda --kernel gemm_av --kernel gemm_at_b --where MMA=1 --allow-tf32 \
    --sample "${VERIFY_SAMPLE:-1}" --json > "$OUT/verify-mma.json" 2> "$OUT/verify-mma.log"
  tail -12 "$OUT/verify-mma.log"
  step "verify every ${SIMT_SAMPLE:-10}th SIMT candidate"
  run $kt verify --backend cuda --kernel gemm_av --kernel gemm_at_b --where MMA=0 --sample "${SIMT_SAMPLE:-10}" \
    --json > "$OUT/verify-simt.json" 2> "$OUT/verify-simt.log"
  tail -6 "$OUT/verify-simt.log"
}

bench() {
  for t in "${targets[@]}"; do
    [[ -n "${ONLY:-}" && ! "$t" =~ ${ONLY} ]] && continue
    read -r fam dt shape where flags <<<"$t"
    name=$(tag "$fam" "$dt" "$shape")
    [ "$where" = TF32=1 ] && name="$name-tf32"
    step "tune $fam $dt $shape (--where $where ${flags:-}) for $budget"
    run $kt tune --backend cuda --kernel "$fam" --dtype "$dt" --shape "$shape" --where "$where" ${flags:-} \
      --budget "$budget" --out "$OUT/hp-$name.json" --trace "$OUT/trace-$name.jsonl" > "$OUT/tune-$name.log" 2>&1
    tail -4 "$OUT/tune-$name.log"
    run $kt bench --backend cuda --kernel "$fam" --dtype "$dt" --shape "$shape" ${flags:-} --params "$OUT/hp-$name.json" \
      --samples "$samples" -q --json-out "$OUT/bench-$name.json" > "$OUT/bench-$name.txt" 2>&1
    cat "$OUT/bench-$name.txt"
  done
  step "summary: speed relative to cuBLAS (cuBLAS time / tuned time; above 1: faster than cuBLAS)"
  for t in "${targets[@]}"; do
    read -r fam dt shape where flags <<<"$t"
    name=$(tag "$fam" "$dt" "$shape")
    [ "$where" = TF32=1 ] && name="$name-tf32"
    [ -f "$OUT/bench-$name.txt" ] || continue
    grep -h "^$fam" "$OUT/bench-$name.txt" | awk -v w="$where" '{printf "%-9s %-4s %-16s %-6s tuned %10s us  %s  speedup(base/tuned) %s\n", $1, $2, $3, w, $5, $7" "$8, $9}'
  done | tee "$OUT/summary.txt"
}

profile() {
  if ! command -v ncu >/dev/null; then
    for d in /usr/local/cuda/bin /opt/nvidia/nsight-compute/*; do [ -x "$d/ncu" ] && PATH="$d:$PATH"; done
  fi
  command -v ncu >/dev/null || { echo "ncu not found"; return; }
  for p in ${PROFILE:-f16-4096x4096x4096 f32-4096x4096x4096}; do
    fam=gemm_av dt=${p%%-*} shape=${p#*-}
    name=$(tag "$fam" "$dt" "$shape")
    [ -f "$OUT/hp-$name.json" ] || continue
    step "ncu $name"
    run ncu --kernel-name "regex:kt_gemm" --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
      --section Occupancy --section LaunchStats --section WarpStateStats --section InstructionStats \
      $kt bench --backend cuda --kernel "$fam" --dtype "$dt" --shape "$shape" --params "$OUT/hp-$name.json" --samples 3 -q \
      > "$OUT/ncu-$name.txt" 2>&1
    grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Executed Ipc|Shared Memory Configuration|Dynamic Shared|Block Size|Grid Size|Waves Per SM|Stall|L1/TEX Hit|L2 Hit|DRAM Throughput" "$OUT/ncu-$name.txt" | head -40
  done
}

step "device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$OUT/nvidia-smi.txt"
case "$mode" in
  verify) verify ;;
  bench) bench ;;
  profile) profile ;;
  all) verify; bench; profile ;;
  xcheck)
    run python3 scripts/gemm_xcheck.py bin/gemm-src all 2>&1 | tee "$OUT/xcheck.log"
    python3 scripts/gemm_xcheck.py bin/gemm-src ncucmds "$OUT" | bash ;;
  *) echo "unknown mode $mode (verify, bench, profile, all, xcheck)"; exit 2 ;;
esac
exit $status
