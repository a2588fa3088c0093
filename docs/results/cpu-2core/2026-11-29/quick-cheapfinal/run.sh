#!/bin/bash
# Three --effort quick runs on the 2-core CPU, each from an empty file, then
# bench --against the thorough file (timed in the same rounds).
cd /tmp/q4
T=/work/main/docs/results/cpu-2core/2026-11-29/hp-effort-thorough.json
for i in 1 2 3; do
  echo "== run $i load $(cut -d' ' -f1 /proc/loadavg)"
  rm -f hp-$i.json*
  s=$(date +%s%N)
  /tmp/q4/kt tune --backend cpu --effort quick --out hp-$i.json > tune-$i.log 2>&1
  echo "run $i wall $(( ($(date +%s%N)-s)/1000000 )) ms"; grep -E "of the run|^plan|--extend" tune-$i.log
  /tmp/q4/kt bench --backend cpu --samples 20 -q --params hp-$i.json --against $T > compare-$i.txt 2>&1; echo "run $i: $(tail -1 compare-$i.txt)"
done
