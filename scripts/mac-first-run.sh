#!/usr/bin/env bash
# The first run of kerntune on a Mac: every step whose output a bug report
# about the Metal backend needs, with all logs in one folder (printed at the
# end, and packed into a .tar.gz beside it to attach to the report).
#
#   scripts/mac-first-run.sh [FOLDER]
#
# Steps (about 10-20 minutes; a failing step is recorded and the next runs):
#   1. the machine: macOS version, chip, GPU, kerntune version
#   2. kerntune devices (text and --json)
#   3. kerntune verify --backend metal --sample N with Metal's API validation
#      and shader validation on (MTL_DEBUG_LAYER=1 MTL_SHADER_VALIDATION=1),
#      both dtypes: every N-th candidate of every family against the float64
#      reference
#   4. a 60 s tune (f16 gemv_nt, one shape from each of two shape classes:
#      1x896x896 in tiny, 1x896x4864 in largeK_smallN) into FOLDER's own
#      hardware_params.json, with a trace
#   5. kerntune bench of the tuned shapes against MPS (MPSMatrixVector-
#      Multiplication), and of one GEMM shape with the default parameters
#      against MPSMatrixMultiplication
#   6. crash reports of kerntune written meanwhile
#
# Settings (environment): KERNTUNE, the binary (default ./kerntune if there,
# else kerntune on PATH); SAMPLE, verify's --sample (default 20); BUDGET,
# the tune budget (default 60s).
set -uo pipefail

kt=${KERNTUNE:-}
if [ -z "$kt" ]; then
	if [ -x ./kerntune ]; then
		kt=./kerntune
	else
		kt=$(command -v kerntune || true)
	fi
fi
if [ -z "$kt" ] || [ ! -x "$kt" ]; then
	echo "mac-first-run: no kerntune binary: put it at ./kerntune, on PATH, or name it with KERNTUNE=/path/to/kerntune" >&2
	exit 2
fi
sample=${SAMPLE:-20}
budget=${BUDGET:-60s}
case $sample in
'' | *[!0-9]* | 0)
	echo "mac-first-run: SAMPLE=$sample: want a positive integer" >&2
	exit 2
	;;
esac

dir=${1:-kerntune-first-run-$(date +%Y%m%d-%H%M%S)}
if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
	echo "mac-first-run: $dir exists and is not empty: name a new folder" >&2
	exit 2
fi
mkdir -p "$dir" || exit 2
dir=$(cd "$dir" && pwd)
params="$dir/hardware_params.json"
summary="$dir/summary.txt"
marker="$dir/.started"
: >"$marker"
failed=0

# step NAME LOG CMD...: runs CMD, its output shown and kept in LOG, and
# records the command, its exit status and its time in the summary.
step() {
	local name=$1 log=$2
	shift 2
	echo
	echo "== $name"
	local start rc
	start=$(date +%s)
	"$@" 2>&1 | tee "$dir/$log"
	rc=${PIPESTATUS[0]}
	record "$name" "$rc" "$start" "$log" "$@"
}

# json_step NAME FILE CMD...: as step, but stdout alone goes to FILE (JSON)
# and stderr to FILE.stderr.
json_step() {
	local name=$1 file=$2
	shift 2
	echo
	echo "== $name"
	local start rc
	start=$(date +%s)
	"$@" >"$dir/$file" 2>"$dir/$file.stderr"
	rc=$?
	cat "$dir/$file.stderr"
	record "$name" "$rc" "$start" "$file" "$@"
}

record() {
	local name=$1 rc=$2 start=$3 log=$4
	shift 4
	printf '%-26s exit %-3s %5ss  %-18s $ %s\n' "$name" "$rc" "$(($(date +%s) - start))" "$log" "$*" >>"$summary"
	[ "$rc" = 0 ] || failed=$((failed + 1))
}

{
	echo "kerntune first run on a Mac, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "binary: $kt"
	echo
} >"$summary"

# machine_info prints what identifies the Mac; a missing tool is skipped.
machine_info() {
	sw_vers 2>/dev/null
	uname -a
	for k in hw.model machdep.cpu.brand_string hw.memsize; do
		echo "$k: $(sysctl -n "$k" 2>/dev/null)"
	done
	pmset -g batt 2>/dev/null | head -2
	system_profiler SPDisplaysDataType 2>/dev/null
	return 0
}

step "machine" machine.txt machine_info
json_step "version" version.json "$kt" version --json
step "devices" devices.txt "$kt" devices
json_step "devices --json" devices.json "$kt" devices --json
step "verify (validation on)" verify-sample.log \
	env MTL_DEBUG_LAYER=1 MTL_SHADER_VALIDATION=1 "$kt" verify --backend metal --sample "$sample"
step "tune ($budget)" tune.log \
	"$kt" tune --backend metal --dtype f16 --kernel gemv_nt --shape 1x896x896 --shape 1x896x4864 \
	--budget "$budget" --out "$params" --trace "$dir/tune.trace.jsonl"
step "show" show.txt "$kt" show "$params"
if [ ! -f "$params" ]; then
	# Nothing was tuned: bench the built-in defaults against MPS, from an
	# empty params file (never a hardware_params.json lying around).
	echo '{"schema_version": 1, "devices": {}}' >"$params"
	echo "(no tuned entries: bench uses the built-in defaults)" >>"$summary"
fi
step "bench gemv_nt vs MPS" bench-gemv.txt \
	"$kt" bench --backend metal --dtype f16 --kernel gemv_nt --shape 1x896x896 --shape 1x896x4864 \
	--params "$params" --json-out "$dir/bench-gemv.json"
step "bench gemm_av vs MPS" bench-gemm.txt \
	"$kt" bench --backend metal --dtype f16 --kernel gemm_av --shape 512x4864x896 \
	--params "$params" --json-out "$dir/bench-gemm.json"

# Crash reports macOS wrote for kerntune during the run.
reports=0
for d in "$HOME/Library/Logs/DiagnosticReports" /Library/Logs/DiagnosticReports; do
	[ -d "$d" ] || continue
	for f in "$d"/kerntune*; do
		if [ -f "$f" ] && [ "$f" -nt "$marker" ]; then
			mkdir -p "$dir/crash-reports"
			cp "$f" "$dir/crash-reports/" && reports=$((reports + 1))
		fi
	done
done
rm -f "$marker"
{
	echo
	echo "crash reports copied: $reports"
	echo "failed steps: $failed"
} >>"$summary"

tarball="$dir.tar.gz"
tar -czf "$tarball" -C "$(dirname "$dir")" "$(basename "$dir")" 2>/dev/null || tarball=""
echo
cat "$summary"
echo
echo "All logs are in $dir"
if [ -n "$tarball" ]; then
	echo "Attach $tarball to the bug report (it holds that folder)."
fi
[ "$failed" = 0 ]
