#!/usr/bin/env bash
# softmax and rmsnorm f16 4096x4096 through a default tune (no --where), then bench.
set -uo pipefail
. scripts/gpu-common.sh
kt=./bin/kerntune
for k in softmax rmsnorm; do
  step "tune $k"
  $kt tune --backend cuda --dtype f16 --kernel $k --shape 4096x4096 --budget 60s --out "$OUT/hp-$k.json" > "$OUT/tune-$k.log" 2>&1 || echo "FAILED tune $k"
  tail -3 "$OUT/tune-$k.log" | cut -c1-300
  $kt bench --backend cuda --dtype f16 --kernel $k --shape 4096x4096 --params "$OUT/hp-$k.json" > "$OUT/bench-$k.txt" 2>&1 || echo "FAILED bench $k"
done
step summary
$kt devices --json | python3 -c 'import json,sys; d=[x for x in json.load(sys.stdin)["devices"] if x.get("available") and x["backend"]=="cuda"][0]; print("copy bandwidth GB/s", d["facts"].get("bandwidth_gbps"))'
cat "$OUT"/bench-*.txt
