#!/usr/bin/env bash
# 1) qgemv f16 TPR=32,RPB=4,RPT=4,VEC=4,UNROLL=1 at 1x4864x896: repeated bench verifications, before and after the merge; 2) gpu-effort.sh.
set -u
O=$OUT
mkdir -p $O/rep $O/eff
. scripts/gpu-common.sh
for b in kt-pre kerntune; do
  pass=0; fail=0
  for i in $(seq 1 12); do
    if KERNTUNE_QGEMV_TPR=32 KERNTUNE_QGEMV_RPB=4 KERNTUNE_QGEMV_RPT=4 KERNTUNE_QGEMV_VEC=4 KERNTUNE_QGEMV_UNROLL=1 \
      timeout 20 bin/$b bench --backend cuda --dtype f16 --kernel qgemv -q --samples 5 --shape 1x4864x896x4x64 --shape 1x9728x896x4x64 > $O/rep/$b-$i.txt 2>&1 \
      && ! grep -q FAILED $O/rep/$b-$i.txt; then pass=$((pass+1)); else fail=$((fail+1)); fi
  done
  echo "repro $b: $pass pass, $fail fail"; grep -h "FAILED" $O/rep/$b-*.txt | cut -c1-220 | head -3
done
timeout 60 bin/kerntune verify --backend cuda --kernel qgemv --dtype f16 --where TPR=32 --where RPB=4 --where RPT=4 --where VEC=4 > $O/rep/verify.txt 2>&1; echo "verify rc $?"; tail -4 $O/rep/verify.txt
t0=$(date +%s)
OUT=$O/eff SAMPLES=20 bash scripts/gpu-effort.sh > $O/eff/run.log 2>&1
echo "effort rc $? $(( $(date +%s) - t0 )) s"
cd $O
sed -n '/== summary/,$p' eff/run.log
tar czf all.tgz rep eff && rm -rf rep eff
