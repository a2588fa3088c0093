#!/usr/bin/env bash
# qgemv: bench of the entries tuned in the first call (the same body, merged), torch int4 beside; lora f16 with --where MMA=1 keeping faster entries.
set -u
O=$OUT
mkdir -p $O/dec $O/lora
. scripts/gpu-common.sh
shapes=(1x896x896x4x64 1x1152x896x4x64 1x896x4864x4x64 1x3584x896x4x64 1x9728x896x4x64 1x4864x896x4x64 1x151936x896x4x64 1x151936x896x8x64 4x151936x896x4x64 4x151936x896x8x64 16x151936x896x4x64 16x151936x896x8x64)
args=(); for s in "${shapes[@]}"; do args+=(--shape "$s"); done
t0=$(date +%s)
for dt in f16 bf16; do
  bin/kerntune bench --backend cuda --dtype $dt --params devq/dec-params.json --kernel qgemv -q --samples 100 "${args[@]}" \
    --json-out $O/dec/bench-qgemv-$dt.json > $O/dec/bench-qgemv-$dt.txt 2>&1 || echo "bench $dt FAILED"
done
python3 scripts/gpu-qgemv-int4.py 1 4 16 > $O/dec/int4.txt 2>&1 || echo "int4 FAILED"
echo "decode $(( $(date +%s) - t0 )) s"
t1=$(date +%s)
OUT=$O/lora KT=bin/kerntune LF16=60 LMMA=40 LPRE=0 LF32=0 bash scripts/gpu-lora.sh > $O/lora/run.log 2>&1
echo "lora rc $? $(( $(date +%s) - t1 )) s"
cd $O
echo "== qgemv"; cat dec/bench-qgemv-f16.txt dec/bench-qgemv-bf16.txt | grep -E "^qgemv|rror" | cut -c1-200
echo "== int4"; cat dec/int4.txt
echo "== lora"; grep -h "^lora \|kept\|replaced" lora/tune-*.log | cut -c1-200; cat lora/lora-table.txt
tar czf all.tgz dec lora && rm -rf dec lora
