#!/usr/bin/env bash
# device busy, 90-s default-effort runs: before the qgemv merge, after it, and after it again on its own file and cache.
set -u
O=$OUT
. scripts/gpu-common.sh
t() { # NAME BIN OUTFILE CACHE
  local s=$(date +%s)
  KERNTUNE_CACHE_DIR=$O/c-$4 $2 tune --backend cuda --dtype f16 --budget 90s --out $O/hp-$3.json --trace $O/trace-$1.jsonl > $O/tune-$1.log 2>&1
  echo "$1 rc $? wall $(( $(date +%s) - s )) s: $(grep -E 'device busy .* of the run' $O/tune-$1.log)"
  grep -E '^plan:' $O/tune-$1.log
}
t pre bin/kt-pre pre pre
t new bin/kerntune new new
t new2 bin/kerntune new new
rm -rf $O/c-*; cd $O && gzip -f trace-*.jsonl && tar czf all.tgz *.log *.json trace-* && rm -f *.log *.json trace-*
