#!/usr/bin/env bash
# gemv_nt f16 on an NVIDIA GPU (H200: about 2 minutes), for a machine with
# no Go: build here first with `make gpu-binaries` (CGO_ENABLED=0), then run
# this there from the repository root. It tunes gemv_nt f16 on the two
# small-n decode shapes with a target (1×9728×896 and 1×4864×896, one
# exact-shape entry each, 16-byte loads), then the default workload, benches
# both against cuBLAS, verifies a sample of candidates in every dtype on
# the device, and prints a table last: the bandwidth floor (bench's
# % OF FLOOR), the launch gap of an empty kernel, the tuned time, cuBLAS's,
# and the target, ≥ 80 % of the floor. Logs and files go under $OUT.
#   scripts/gpu-gemv.sh
# KT names the kerntune binary (./bin/kerntune); KT_BASE, when set, names a
# second one (e.g. built from an earlier commit) whose exact-shape tune and
# bench run in the same session, for a comparison on the same device state.
# Budgets (seconds): GSHAPE (40) for the two shapes, GWORK (30) for the
# default workload, GBASE (20) for KT_BASE's two shapes; GSTRATEGY (bo) is
# the search of the two shapes (exhaustive: every VEC=8 candidate, about
# 10 s a shape on an H200).
set -uo pipefail
. "$(dirname "$0")/gpu-common.sh"
kt=${KT:-./bin/kerntune}
shapes=(--shape 1x9728x896 --shape 1x4864x896)

step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee "$OUT/nvidia-smi.txt"
start=$(date +%s)

# Exact-shape entries, which the loader prefers to the class entry; VEC=8
# (16-byte loads) is where every earlier f16 winner of these shapes was.
tune_shapes() { # binary, budget, params file, log name
  step "tune gemv_nt f16 on the two shapes with $1 (${2}s, VEC=8, ${GSTRATEGY:-bo})"
  run "$1" tune --backend cuda --dtype f16 --kernel gemv_nt "${shapes[@]}" --where VEC=8 --strategy "${GSTRATEGY:-bo}" \
    --budget "${2}s" --out "$3" --trace "$OUT/$4.trace.jsonl" > "$OUT/$4.log" 2>&1
  grep -E "^gemv_nt |re-timed|wrote|failed|device busy" "$OUT/$4.log" | tail -6
  step "bench the two shapes with $1"
  run "$1" bench --backend cuda --dtype f16 --kernel gemv_nt "${shapes[@]}" --params "$3" -q --samples 100 \
    > "$OUT/bench-$4.txt" 2>&1
  cat "$OUT/bench-$4.txt"
}

tune_shapes "$kt" "${GSHAPE:-40}" "$OUT/hardware_params.json" shapes

step "tune gemv_nt f16, the default workload (${GWORK:-30}s)"
run $kt tune --backend cuda --dtype f16 --kernel gemv_nt --budget "${GWORK:-30}s" \
  --out "$OUT/hardware_params.json" > "$OUT/tune-workload.log" 2>&1
grep -E "^gemv_nt |wrote|failed|device busy" "$OUT/tune-workload.log" | tail -8
step "bench gemv_nt f16, the default workload (the exact-shape entries for the two shapes)"
run $kt bench --backend cuda --dtype f16 --kernel gemv_nt --params "$OUT/hardware_params.json" -q --samples 100 \
  --json-out "$OUT/bench-workload.json" > "$OUT/bench-workload.txt" 2>&1
cat "$OUT/bench-workload.txt"

step "verify a sample of gemv_nt candidates on the device (every 64th, f32, f16, bf16)"
run $kt verify --backend cuda --kernel gemv_nt --dtype f32 --dtype f16 --dtype bf16 --sample 64 > "$OUT/verify.log" 2>&1
tail -4 "$OUT/verify.log"

if [ -n "${KT_BASE:-}" ]; then
  tune_shapes "$KT_BASE" "${GBASE:-20}" "$OUT/base.json" base
fi
echo "the whole run took $(( $(date +%s) - start )) s"

# The launch overhead and gap the tuner measured when the backend opened
# (an empty kernel timed per launch, and within back-to-back launches).
facts=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
f = next(v["facts"] for v in d["devices"].values() if v.get("backend") == "cuda")
print(f.get("launch_overhead_us", "-"), f.get("launch_gap_us", "-"), f.get("bandwidth_gbps", "-"))' "$OUT/hardware_params.json")
echo "launch_overhead_us launch_gap_us bandwidth: $facts"

# bench rows: FAMILY DTYPE SHAPE PARAMS TUNED FILE cublas BASELINE SPEEDUP
# PCT %; the floor is TUNED × PCT / 100.
step "summary (µs)"
summary() { # label, bench file
  awk -v who="$1" '
    $1 == "gemv_nt" && $7 == "cublas" && ($3 == "1x9728x896" || $3 == "1x4864x896") {
      pct = $10 + 0; floor = $5 * pct / 100
      printf "%-6s %-12s %-34s %7.2f %7.2f %7.2f %6.0f%%  %s\n", who, $3, $4, floor, $5, $8, pct, (pct >= 80) ? "met" : sprintf("MISSED (80 %% = %.2f)", floor / 0.8)
    }' "$2"
}
{
  printf "%-6s %-12s %-34s %7s %7s %7s %7s  %s\n" binary shape params floor tuned cuBLAS floor% "target >= 80 %"
  summary new "$OUT/bench-workload.txt"
  [ -n "${KT_BASE:-}" ] && summary base "$OUT/bench-base.txt"
} | tee "$OUT/gemv-table.txt"
exit $status
