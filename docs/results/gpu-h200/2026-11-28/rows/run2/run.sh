#!/usr/bin/env bash
# Row families (softmax, rmsnorm) f16 4096x4096 on a CUDA GPU: tune the
# KEEP=1 VEC=8 candidates exhaustively with each built binary, then bench;
# verify a sample of every candidate; time torch (copy, softmax, rmsnorm).
set -u
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
exec > >(tee "$OUT/run.log") 2>&1
echo "== $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
mkdir -p /tmp/traces
variant() { # tag, then extra tune flags
  v=$1; shift
  log=$OUT/tune-$v.log; hp=$OUT/hp-$v.json
  for k in softmax rmsnorm; do
    echo "== kt$v tune $k $*" | tee -a "$log"
    timeout 90 devr/kt$v tune --backend cuda --dtype f16 --kernel $k --shape 4096x4096 --strategy exhaustive \
      --where KEEP=1 --where VEC=8 "$@" --budget 60s --out "$hp" --trace /tmp/traces/trace-$v.jsonl >> "$log" 2>&1
    echo "rc=$?" | tee -a "$log"; tail -4 "$log"
  done
  for k in softmax rmsnorm; do
    echo "== kt$v bench $k" | tee -a "$log"
    timeout 60 devr/kt$v bench --backend cuda --dtype f16 --kernel $k --shape 4096x4096 --params "$hp" -q 2>&1 | tee -a "$log"
  done
}
variant C
variant D
echo "== ktD verify (f32, f16, bf16), every 16th"
timeout 60 devr/ktD verify --backend cuda --kernel softmax --kernel rmsnorm --dtype f32 --dtype f16 --dtype bf16 --sample 16 > "$OUT/verify.log" 2>&1
echo "rc=$?"; tail -8 "$OUT/verify.log"

tar -czf "$OUT/traces.tar.gz" -C /tmp traces
echo "== torch reference: copy and softmax of 4096x4096 f16, CUDA graph of 40 launches on 4 rotated inputs"
timeout 40 python3 devr/torchref.py
echo "== $(date -u +%FT%TZ) end"
