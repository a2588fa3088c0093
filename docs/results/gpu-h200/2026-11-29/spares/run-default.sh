#!/usr/bin/env bash
# run-default.sh DTYPE: a default run from an empty compile cache, then a
# second on its cache and a copy of its file (gpu-effort.sh's default runs,
# without quick), from the repository root on the GPU machine.
set -u
. scripts/gpu-common.sh
dt=$1
here=docs/results/gpu-h200/2026-11-29
for i in 1 2; do
  [ $i = 2 ] && cp $OUT/hp-$dt-1.json $OUT/hp-$dt-2.json
  t0=$(date +%s)
  KERNTUNE_CACHE_DIR=$OUT/c-$dt bin/kerntune tune --backend cuda --dtype $dt --effort default --out $OUT/hp-$dt-$i.json \
    --trace $OUT/trace-$dt-$i.jsonl > $OUT/tune-$dt-$i.log 2>&1
  echo "$dt run $i: $(( $(date +%s) - t0 )) s; $(grep -o 'device busy [0-9]* % of the run.*' $OUT/tune-$dt-$i.log)"
done
rm -rf $OUT/c-$dt
python3 $here/ahead/entries.py $OUT/trace-$dt-*.jsonl
python3 $here/spares/fewest.py $OUT/hp-$dt-1.json $OUT/hp-$dt-2.json
cd $OUT && tar czf logs${dt#f}.tgz tune-$dt-*.log trace-$dt-*.jsonl && rm -f tune-$dt-*.log trace-$dt-*.jsonl
