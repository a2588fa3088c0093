#!/usr/bin/env bash
# One side of an A/B of qgemv bodies on an NVIDIA GPU (H100: about 3
# minutes): every valid candidate of the f16 space measured on the three
# shapes with targets (`tune --strategy exhaustive`), then `bench` of the
# winners. Build each body's binary here (CGO_ENABLED=0), send both, and run
# them one after the other on the same machine: lent machines differ by up
# to 8 % at 151936 rows, so only a same-machine pair decides.
#   scripts/gpu-qgemv-ab.sh bin/kerntune-a a; scripts/gpu-qgemv-ab.sh bin/kerntune-b b
# B: the tune budget (270s).
set -uo pipefail
. "$(dirname "$0")/gpu-common.sh"
kt=$1; tag=$2; p="$OUT/p-$tag.json"
s=$(date +%s)
run $kt tune --backend cuda --dtype f16 --kernel qgemv --strategy exhaustive --budget ${B:-270s} \
  --shape 1x151936x896x4x64 --shape 1x9728x896x4x64 --shape 1x4864x896x4x64 --out "$p" > "$OUT/tune-$tag.log" 2>&1
grep -E "^qgemv |wrote|failed|measured" "$OUT/tune-$tag.log" | tail -6
echo "tune $tag took $(( $(date +%s) - s )) s"
run $kt bench --backend cuda --dtype f16 --params "$p" --kernel qgemv -q --samples 100 \
  --shape 1x151936x896x4x64 --shape 1x9728x896x4x64 --shape 1x4864x896x4x64 > "$OUT/bench-$tag.txt" 2>&1
cat "$OUT/bench-$tag.txt"
python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
print("gap", [v["facts"]["launch_overhead_us"] for v in d["devices"].values()])' "$p"
exit $status
