#!/usr/bin/env bash
# f16: a default run from an empty compile cache, then a second on its cache
# and a copy of its file (gpu-effort.sh's default runs, without quick).
set -u
. scripts/gpu-common.sh
here=docs/results/gpu-h200/2026-11-29
for i in 1 2; do
  [ $i = 2 ] && cp $OUT/hp-f16-1.json $OUT/hp-f16-2.json
  t0=$(date +%s)
  KERNTUNE_CACHE_DIR=$OUT/c16 bin/kerntune tune --backend cuda --dtype f16 --effort default --out $OUT/hp-f16-$i.json \
    --trace $OUT/trace-f16-$i.jsonl > $OUT/tune-f16-$i.log 2>&1
  echo "f16 run $i: $(( $(date +%s) - t0 )) s; $(grep -o 'device busy [0-9]* % of the run.*' $OUT/tune-f16-$i.log)"
done
rm -rf $OUT/c16
python3 $here/ahead/entries.py $OUT/trace-f16-*.jsonl
python3 $here/spares/fewest.py $OUT/hp-f16-1.json $OUT/hp-f16-2.json
cd $OUT && tar czf logs16.tgz tune-f16-*.log trace-f16-*.jsonl && rm -f tune-f16-*.log trace-f16-*.jsonl
