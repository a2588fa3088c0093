#!/usr/bin/env bash
# make check: every tracked shell script parses (bash -n), and none that runs
# under both errexit and pipefail ends a pipeline in `grep -q` or `head`
# without `|| true`: those exit at the first match or line, the writer then
# dies of SIGPIPE (exit 141), and pipefail makes that the pipeline's status
# (.ci/run once failed so after 85 minutes, on `kerntune show | grep -q`).
# Read the whole input instead: `grep PATTERN >/dev/null`, `sed -n 1,Np`.
set -euo pipefail
cd "$(dirname "$0")/.."
rc=0
for f in $(git ls-files '*.sh') .ci/run; do
  if ! bash -n "$f"; then
    rc=1
    continue
  fi
  grep -Eq '^\s*set\s+-[a-z]*e[a-z]*o\s+pipefail' "$f" || continue
  while IFS= read -r hit; do
    echo "$f:$hit: a pipeline into grep -q or head under errexit and pipefail (SIGPIPE, exit 141): read the whole input" >&2
    rc=1
  done < <(grep -nE '\|\s*(grep\s+(-[a-zA-Z]*q[a-zA-Z]*|--quiet)|head)(\s|$)' "$f" | grep -v '|| true' | cut -d: -f1)
done
exit "$rc"
