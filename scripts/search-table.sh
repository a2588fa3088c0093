#!/usr/bin/env bash
# Regenerates the strategy table of docs/results/search-strategies.md: every strategy against
# every Kernel Tuner cache of the shared test data, 20 seeded runs per
# strategy and budget, then the racing strategies again with a fixed number
# of samples. Usage: scripts/search-table.sh [CACHE_DIR]  (default: the
# directory named by KTDEV_KT_CACHES, else ../shared/testdata/kerneltuner)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-${KTDEV_KT_CACHES:-../shared/testdata/kerneltuner}}
caches=$(ls "$dir"/*.json.gz | paste -sd, -)
[ -n "$caches" ] || { echo "no *.json.gz caches in $dir" >&2; exit 2; }
go build -o bin/kerntune ./cmd/kerntune
common=(--cache "$caches" --budget-evals 25,100,400,1600 --runs 20 --seed 1 --markdown)
./bin/kerntune replay "${common[@]}" --strategy random,halving,racing,anneal,ils,model,bo
./bin/kerntune replay "${common[@]}" --strategy racing,ils,bo --no-race | tail -n +3
