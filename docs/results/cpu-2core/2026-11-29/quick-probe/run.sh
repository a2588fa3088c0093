#!/bin/bash
cd /tmp/cpuab
T=/work/main/docs/results/cpu-2core/2026-11-29/hp-effort-thorough.json
for v in new old; do
  echo "== $v load $(cut -d' ' -f1 /proc/loadavg)"
  s=$(date +%s%N)
  KERNTUNE_CACHE_DIR=/tmp/cpuab/c-$v /tmp/kt-$v tune --backend cpu --effort quick --out hp-$v.json > tune-$v.log 2>&1
  echo "$v wall $(( ($(date +%s%N)-s)/1000000 )) ms"; grep -E "device busy|^plan|--extend" tune-$v.log
done
for v in new old; do
  /tmp/kt-new bench --backend cpu --samples 20 -q --params hp-$v.json --against $T > compare-$v.txt 2>&1; echo "$v: $(tail -1 compare-$v.txt)"
done
