#!/usr/bin/env bash
# f32: a default run from an empty compile cache, then a second on its cache
# and a copy of its file (as gpu-effort.sh's default runs).
set -u
. scripts/gpu-common.sh
here=docs/results/gpu-h200/2026-11-29
for i in 1 2; do
  [ $i = 2 ] && cp $OUT/hp-f32-1.json $OUT/hp-f32-2.json
  t0=$(date +%s)
  KERNTUNE_CACHE_DIR=$OUT/c32 bin/kerntune tune --backend cuda --dtype f32 --effort default --out $OUT/hp-f32-$i.json \
    --trace $OUT/trace-f32-$i.jsonl > $OUT/tune-f32-$i.log 2>&1
  echo "f32 run $i: $(( $(date +%s) - t0 )) s; $(grep -o 'device busy [0-9]* % of the run.*' $OUT/tune-f32-$i.log)"
done
rm -rf $OUT/c32
python3 $here/ahead/entries.py $OUT/trace-f32-*.jsonl
python3 $here/spares/fewest.py $OUT/hp-f32-1.json $OUT/hp-f32-2.json
cd $OUT && tar czf logs32.tgz tune-f32-*.log trace-f32-*.jsonl && rm -f tune-f32-*.log trace-f32-*.jsonl
