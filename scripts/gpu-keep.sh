#!/usr/bin/env bash
# The last mile on a CUDA GPU (no Go there: `make gpu-binaries` first):
# an HGEMM entry where cuBLAS wins records use: baseline; re-running tune
# with a 1 ns budget, a short trial, SIGINT or SIGTERM never lowers it; and
# the exit codes (2, 130, 143). Logs and the params file go to $OUT.
set -u
. "$(dirname "$0")/gpu-common.sh"
kt=./bin/kerntune
p=$OUT/keep.json
common=(tune --backend cuda --kernel gemm_av --dtype f16 --shape 1024x1024x1024 --out "$p")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== 0: tune HGEMM 512x4864x896, 30s"
$kt tune --backend cuda --kernel gemm_av --dtype f16 --shape 512x4864x896 --out "$p" --budget 30s > "$OUT/t0.log" 2>&1; echo "rc=$?"; tail -3 "$OUT/t0.log"
echo "== 1: tune HGEMM 1024^3, 45s"
$kt "${common[@]}" --budget 45s --json > "$OUT/t1.json" 2> "$OUT/t1.log"; echo "rc=$?"; tail -4 "$OUT/t1.log"
$kt show "$p"; cp "$p" "$OUT/p1.json"
echo "== 2: 1ns"
$kt "${common[@]}" --budget 1ns > "$OUT/t2.log" 2>&1; echo "rc=$?"; tail -2 "$OUT/t2.log"
cmp "$p" "$OUT/p1.json" && echo "file unchanged"
echo "== 3: short trial 30s,3e"
$kt "${common[@]}" --budget 30s,3e --json > "$OUT/t3.json" 2> "$OUT/t3.log"; echo "rc=$?"; tail -3 "$OUT/t3.log"
echo "== 4: SIGINT after 20 s of a 60 s run"
$kt "${common[@]}" --budget 60s --json > "$OUT/t4.json" 2> "$OUT/t4.log" & pid=$!
sleep 20; kill -INT $pid; wait $pid; echo "rc=$?"; tail -4 "$OUT/t4.log"
echo "== 5: SIGTERM after 15 s (resume)"
$kt "${common[@]}" --budget 60s --resume > "$OUT/t5.log" 2>&1 & pid=$!
sleep 15; kill -TERM $pid; wait $pid; echo "rc=$?"; tail -3 "$OUT/t5.log"
rm -f "$p.journal"
$kt show "$p" | tee "$OUT/show.txt"
