#!/bin/bash
cd /tmp/cpuab
T=/work/main/docs/results/cpu-2core/2026-11-29/hp-effort-thorough.json
echo "== soft load $(cut -d' ' -f1 /proc/loadavg)"
s=$(date +%s%N)
KERNTUNE_CACHE_DIR=/tmp/cpuab/c-soft /tmp/kt-soft tune --backend cpu --effort quick --out hp-soft.json > tune-soft.log 2>&1
echo "soft wall $(( ($(date +%s%N)-s)/1000000 )) ms"; grep -E "device busy|^plan|--extend" tune-soft.log
/tmp/kt-soft bench --backend cpu --samples 20 -q --params hp-soft.json --against $T > compare-soft.txt 2>&1; echo "soft: $(tail -1 compare-soft.txt)"
