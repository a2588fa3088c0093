# Sourced by the scripts/gpu-*.sh scripts: $OUT (default ./gpu-out) made
# and exported, the CUDA libraries on LD_LIBRARY_PATH (the usual toolkit
# prefixes), `step TITLE...`, which heads a step's output, and `run CMD...`,
# which runs a step and, when it fails, says so and sets status=1 so that
# the script can go on and exit 1 at the end.
OUT=${OUT:-$PWD/gpu-out}
export OUT
mkdir -p "$OUT"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
status=0
run() { "$@" || { echo "FAILED ($?): $*"; status=1; }; }
step() { echo; echo "== $*"; }
