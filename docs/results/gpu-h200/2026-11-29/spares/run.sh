#!/usr/bin/env bash
set -u
here=docs/results/gpu-h200/2026-11-29
SAMPLES=20 bash scripts/gpu-effort.sh > $OUT/run.log 2>&1
python3 $here/ahead/entries.py $OUT/trace-*.jsonl.gz > $OUT/summ.txt
python3 $here/spares/fewest.py $OUT/hp-default-1.json $OUT/hp-default-2.json $OUT/hp-quick.json > $OUT/fewest.txt
grep -h "measured\b.*candidates\|^  time:" $OUT/tune-default-2.log | head -0
cd $OUT && tar czf logs.tgz tune-*.log trace-*.jsonl.gz && rm -f tune-*.log trace-*.jsonl.gz && cd - >/dev/null
cat $OUT/summ.txt $OUT/fewest.txt
sed -n '/summary/,$p' $OUT/run.log
