#!/usr/bin/env bash
# From the repository root on the GPU machine, with bin/kerntune built at the
# commit under test: gpu-effort.sh (f16), then the per-family split of its
# traces (entries.py). The f32 row: one default run from an empty cache.
set -u
SAMPLES=20 bash scripts/gpu-effort.sh > $OUT/run.log 2>&1
python3 docs/results/gpu-h200/2026-11-29/ahead/entries.py $OUT/trace-*.jsonl.gz | tee $OUT/summ.txt
sed -n '/summary/,$p' $OUT/run.log
KERNTUNE_CACHE_DIR=$OUT/c32 bin/kerntune tune --backend cuda --dtype f32 --effort default --out $OUT/hp-f32.json \
  --trace $OUT/trace-f32.jsonl > $OUT/tune-f32.log 2>&1
python3 docs/results/gpu-h200/2026-11-29/ahead/entries.py $OUT/trace-f32.jsonl
