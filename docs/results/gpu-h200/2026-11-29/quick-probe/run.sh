#!/usr/bin/env bash
# --effort quick with the probe's sample at its cost: a first run, its winners against the default run's (runD), then a second run on its own file.
set -u
O=$OUT
. scripts/gpu-common.sh
q() { # NAME
  local s=$(date +%s%N)
  KERNTUNE_CACHE_DIR=$O/cq bin/kerntune tune --backend cuda --dtype f16 --effort quick --out $O/hp-quick.json --trace $O/trace-$1.jsonl > $O/tune-$1.log 2>&1
  echo "$1 rc $? wall $(( ($(date +%s%N) - s) / 1000000 )) ms: $(grep -E 'device busy .* of the run' $O/tune-$1.log)"
  grep -E '^plan:|^--extend' $O/tune-$1.log
}
q quick-1
cp $O/hp-quick.json $O/hp-quick-1.json
KERNTUNE_CACHE_DIR=$O/cq bin/kerntune bench --backend cuda --dtype f16 --samples 20 -q --params $O/hp-quick-1.json --against devq/ref-default.json > $O/compare.txt 2>&1
tail -1 $O/compare.txt
q quick-2
rm -rf $O/cq; cd $O && gzip -f trace-*.jsonl && tar czf all.tgz *.log *.json *.txt trace-* && rm -f *.log *.json trace-* compare.txt
