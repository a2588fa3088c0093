#!/usr/bin/env bash
# qgemv: h2/qgemvb (bin/kt-qgemvb) vs main (bin/kerntune) at one fixed candidate, then the branch tuned and benched with torch int4; lora MMA=1 on main.
set -u
O=$OUT
mkdir -p $O/dec $O/lora
t0=$(date +%s)
OUT=$O/dec Q=20s QS=45s QB=30s BIG_SHAPES="1x151936x896x4x64 1x151936x896x8x64" \
  bash devq/gpu-decode.sh bin/kt-qgemvb bin/kerntune > $O/dec/run.log 2>&1
echo "decode rc $? $(( $(date +%s) - t0 )) s"
t1=$(date +%s)
OUT=$O/lora KT=bin/kerntune LF16=60 LMMA=40 LPRE=0 LF32=0 bash scripts/gpu-lora.sh > $O/lora/run.log 2>&1
echo "lora rc $? $(( $(date +%s) - t1 )) s"
cd $O
echo "== fixed"; grep -h "^qgemv" dec/fixed-*.txt
echo "== decode"; cat dec/decode-table.txt
echo "== int4"; cat dec/int4.txt | tail -8
echo "== lora"; cat lora/lora-table.txt
tar czf all.tgz dec lora && rm -rf dec lora
