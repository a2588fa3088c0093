#!/usr/bin/env bash
# The cuBLAS baselines that make device buffers per loaded problem before
# any run (qgemv's dequantised weights, lora's x·Aᵀ and ones for a bias),
# on an NVIDIA GPU (H100: about 3 minutes): bench runs each with the
# default parameters on the family's default workload (lora's includes
# bias cases) in f32, f16 and bf16, verifying the baseline's output
# before timing it and freeing its buffers when it closes. Build here
# first with `make gpu-binaries` (CGO_ENABLED=0), then run this there from
# the repository root; logs go under $OUT, a table last (one row per
# family and dtype: the bench rows' count and those with a cuBLAS time).
#   scripts/gpu-baselines.sh
set -uo pipefail
. "$(dirname "$0")/gpu-common.sh"
kt=./bin/kerntune
none="$OUT/no-params.json" # absent: the default parameters
rm -f "$none"
rows=()
for k in qgemv lora; do
  for dt in f32 f16 bf16; do
    log="$OUT/bench-$k-$dt.txt"
    echo "== bench $k $dt against cuBLAS"
    run $kt bench --backend cuda --kernel "$k" --dtype "$dt" --params "$none" --samples 20 -q > "$log" 2>&1
    grep -E "^$k |rror|FAIL" "$log" | head -20
    n=$(grep -c "^$k " "$log")
    c=$(grep -E "^$k " "$log" | grep -c "cublas")
    rows+=("$(printf '%-6s %-5s %5s %7s' "$k" "$dt" "$n" "$c")")
  done
done
echo
echo "family dtype  rows  cublas"
printf '%s\n' "${rows[@]}"
exit $status
