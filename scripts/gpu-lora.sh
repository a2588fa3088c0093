#!/usr/bin/env bash
# lora on an NVIDIA GPU (H100: about 8 minutes), for a machine with no Go:
# build here first with `make gpu-binaries` (CGO_ENABLED=0), then run this
# there from the repository root. It tunes lora (rank 16) in f16 on its
# default workload (seed 000's four Qwen2.5-0.5B projections at m = 1, 4
# and 16, and 512×896×896), then the three other prefill projections one
# by one, and f32 on the default workload; benches the fused kernel
# against cuBLAS's unfused sequence (x·Wᵀ, x·Aᵀ, then s·t·Bᵀ with beta = 1,
# plus a rank-1 GemmEx for a bias) in the same dtype; and prints a table
# last: per shape the bandwidth floor (the bytes of x, W, A, B, bias and y
# at the measured copy bandwidth: bench's % OF FLOOR), the fused kernel's
# time, cuBLAS's, their ratio, where the entry routes (fused, or the
# baseline where the file says use: baseline), and the targets: at the
# decode shapes (m ≤ 16) fused ≤ 0.6 × unfused; at prefill, an entry that
# routes to whichever is faster. Logs and files go under $OUT.
#   scripts/gpu-lora.sh
# Budgets (seconds): LF16 (150) for the f16 default workload, LPRE (75,
# 0: skip) for the three prefill shapes, LF32 (90, 0: skip f32) for f32.
# LMMA (0: skip) is a second f16 tune on the default workload over the
# matrix-unit candidates alone (--where MMA=1), whose entries the file keeps
# where they beat the first tune's.
# KT names another kerntune binary (default ./bin/kerntune). The f16 tune
# leaves its trace (every candidate measured) in $OUT/trace-lora-f16.jsonl.
set -uo pipefail
. "$(dirname "$0")/gpu-common.sh"
kt=${KT:-./bin/kerntune}
params="$OUT/hardware_params.json"
# --shape takes dims only (no bias): the fused-qkv projection runs without its bias here.
prefill=(512x4864x896x16 512x896x4864x16 512x1152x896x16)

step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee "$OUT/nvidia-smi.txt"

start=$(date +%s)
step "tune lora f16 (${LF16:-150}s)"
run $kt tune --backend cuda --dtype f16 --kernel lora --budget "${LF16:-150}s" --out "$params" \
  --trace "$OUT/trace-lora-f16.jsonl" > "$OUT/tune-lora-f16.log" 2>&1
grep -E "^lora |wrote|failed" "$OUT/tune-lora-f16.log" | tail -8
if [ "${LMMA:-0}" != 0 ]; then
  step "tune lora f16 on the matrix units (--where MMA=1, ${LMMA}s)"
  run $kt tune --backend cuda --dtype f16 --kernel lora --budget "${LMMA}s" --where MMA=1 --out "$params" \
    --trace "$OUT/trace-lora-f16-mma.jsonl" > "$OUT/tune-lora-f16-mma.log" 2>&1
  grep -E "^lora |wrote|failed|kept" "$OUT/tune-lora-f16-mma.log" | tail -8
fi
shapes=()
for s in "${prefill[@]}"; do shapes+=(--shape "$s"); done
if [ "${LPRE:-75}" != 0 ]; then
  step "tune lora f16 on the other prefill projections one by one (${LPRE:-75}s)"
  run $kt tune --backend cuda --dtype f16 --kernel lora --budget "${LPRE:-75}s" "${shapes[@]}" --out "$params" > "$OUT/tune-lora-f16-prefill.log" 2>&1
  grep -E "^lora |wrote|failed" "$OUT/tune-lora-f16-prefill.log" | tail -4
fi
dts=(f16)
if [ "${LF32:-90}" != 0 ]; then
  step "tune lora f32 (${LF32:-90}s)"
  run $kt tune --backend cuda --dtype f32 --kernel lora --budget "${LF32:-90}s" --out "$params" > "$OUT/tune-lora-f32.log" 2>&1
  grep -E "^lora |wrote|failed" "$OUT/tune-lora-f32.log" | tail -8
  dts+=(f32)
fi
echo "tuning took $(( $(date +%s) - start )) s"

for dt in "${dts[@]}"; do
  step "bench lora $dt against cuBLAS's unfused $dt sequence"
  run $kt bench --backend cuda --dtype "$dt" --params "$params" --kernel lora -q --samples 100 \
    --json-out "$OUT/bench-lora-$dt.json" > "$OUT/bench-lora-$dt.txt" 2>&1
  cat "$OUT/bench-lora-$dt.txt"
done
if [ "${LPRE:-75}" != 0 ]; then
  step "bench lora f16 on the other prefill projections"
  run $kt bench --backend cuda --dtype f16 --params "$params" --kernel lora -q --samples 100 "${shapes[@]}" \
    --json-out "$OUT/bench-lora-f16-prefill.json" > "$OUT/bench-lora-f16-prefill.txt" 2>&1
  cat "$OUT/bench-lora-f16-prefill.txt"
fi
echo "the whole run took $(( $(date +%s) - start )) s"

# Where each shape's entry routes: `kerntune get` resolves it as an
# application does (use: baseline or the fused kernel).
step "routes"
for f in "$OUT"/bench-lora-*.json; do
  python3 -c '
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    print(r["dtype"], r["shape"])' "$f" 2>/dev/null
done | sort -u | while read -r dt shape; do
  # get takes dims only: a bias does not change which entry a shape resolves to.
  use=$($kt get --backend cuda --params "$params" --kernel lora --dtype "$dt" --shape "${shape%+bias}" --json 2>/dev/null |
    python3 -c 'import json, sys; print("baseline" if json.load(sys.stdin).get("use_baseline") else "fused")' 2>/dev/null)
  echo "$dt $shape ${use:-?}"
done | tee "$OUT/routes.txt"

step "summary (µs): floor = bytes / measured bandwidth, ratio = fused / unfused"
python3 - "$OUT/routes.txt" "$OUT"/bench-lora-*.json <<'PY' | tee "$OUT/lora-table.txt"
import json, sys
routes = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 3:
        routes[(f[0], f[1])] = f[2]
print(f"{'dtype':5} {'shape':22} {'floor':>7} {'fused':>8} {'unfused':>8} {'ratio':>6} {'route':>8}  target")
for path in sys.argv[2:]:
    for r in json.load(open(path))["rows"]:
        if r.get("error"):
            print(f"{r['dtype']:5} {r['shape']:22} FAILED: {r['error']}")
            continue
        fused, base, pct = r["tuned_us"], r.get("baseline_us", 0), r.get("pct_of_floor", 0)
        floor = fused * pct / 100
        ratio = fused / base if base else float("nan")
        m = int(r["shape"].split("x")[0])
        route = routes.get((r["dtype"], r["shape"]), "?")
        if m <= 16:
            target = "met (<= 0.6)" if ratio <= 0.6 else "MISSED (> 0.6)"
        else:
            faster = "fused" if ratio < 1 else "baseline"
            target = f"{faster} faster; routes to {route}" + ("" if route == faster else " (MISMATCH)")
        print(f"{r['dtype']:5} {r['shape']:22} {floor:7.2f} {fused:8.2f} {base:8.2f} {ratio:6.2f} {route:>8}  {target}")
PY
exit $status
