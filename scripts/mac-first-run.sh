#!/usr/bin/env bash
# The first run of kerntune on a Mac: every step whose output a bug report
# about the Metal backend needs, with all logs in one folder (printed at the
# end, and packed into a .tar.gz beside it to attach to the report).
#
#   scripts/mac-first-run.sh [FOLDER]
#
# First, on macOS, the binary is checked: not quarantined by Gatekeeper
# (xattr com.apple.quarantine) and built for this Mac's architecture
# (file); otherwise the script prints the command that fixes it and stops.
#
# Steps (about 10-20 minutes; a failing step is recorded and the next runs):
#   1. the machine: macOS version, chip, GPU, kerntune version
#   2. kerntune devices (text and --json)
#   3. Metal's API validation and shader validation, set to report and go on
#      (MTL_DEBUG_LAYER_ERROR_MODE=nslog, MTL_SHADER_VALIDATION_REPORT_TO_STDERR=1;
#      by default the first error asserts and ends the process):
#      kerntune verify --backend metal --sample N under them, both dtypes
#      (every N-th candidate of every family against the float64
#      reference), then a short tune under them with the candidates in an
#      isolated worker process (--isolate), which runs the timing path
#      (concurrent encoders, barriers, fences, command buffers in flight);
#      the validation messages both logged are counted in the summary.
#      Shader validation instruments every kernel, which can lower a
#      pipeline's maxTotalThreadsPerThreadgroup: candidates refused there for
#      "register pressure" are not counted as failures. Then one plain
#      verify, without any validation layer: that run's failures count.
#   4. a 60 s tune (f16 gemv_nt, one shape from each of two shape classes:
#      1x896x896 in tiny, 1x896x4864 in largeK_smallN) into FOLDER's own
#      hardware_params.json, with a trace
#   5. kerntune bench of the tuned shapes against MPS (MPSMatrixVector-
#      Multiplication), of one GEMM shape with the default parameters
#      against MPSMatrixMultiplication, and of 4-bit qgemv (Qwen2-0.5B's
#      shapes, group size 64); where MLX is installed (python3 -c 'import
#      mlx.core' works), MLX's own mx.quantized_matmul on the same shapes,
#      printed beside kerntune's: as a dependent chain (each call's input is
#      the previous call's output, one mx.eval at the end, so that MLX
#      cannot run them concurrently; kerntune's runs are dependent the same
#      way) and one call per mx.eval, both host-inclusive (wall clock)
#   6. crash reports of kerntune written meanwhile: GOTRACEBACK=crash makes
#      a Go program that dies of a fatal signal abort, so that macOS writes
#      one (by default Go exits with status 2 and macOS writes none)
#
# Settings (environment): KERNTUNE, the binary (default ./kerntune if there,
# else kerntune on PATH); SAMPLE, verify's --sample (default 20); BUDGET,
# the tune budget (default 60s); PYTHON, the Python with MLX (default
# python3).
set -uo pipefail

# A crash leaves every goroutine's stack in the logs and a crash report in
# ~/Library/Logs/DiagnosticReports (step 6).
export GOTRACEBACK=crash

kt=${KERNTUNE:-}
if [ -z "$kt" ]; then
	if [ -x ./kerntune ]; then
		kt=./kerntune
	else
		kt=$(command -v kerntune || true)
	fi
fi
if [ -z "$kt" ] || [ ! -f "$kt" ]; then
	echo "mac-first-run: no kerntune binary: put it at ./kerntune, on PATH, or name it with KERNTUNE=/path/to/kerntune" >&2
	exit 2
fi
if [ ! -x "$kt" ]; then
	echo "mac-first-run: $kt is not executable; fix it with:" >&2
	echo "  chmod +x '$kt'" >&2
	exit 2
fi

# check_binary: on macOS, a binary downloaded through a browser carries
# com.apple.quarantine, and Gatekeeper stops it (or asks, once per binary)
# before it runs; and a binary for the other architecture (amd64 on Apple
# silicon) runs under Rosetta, where Metal is the same but the timings are
# not the native binary's, or not at all. Prints the fix and fails.
check_binary() {
	[ "$(uname -s)" = Darwin ] || return 0
	local ok=0 want desc
	if xattr -p com.apple.quarantine "$kt" >/dev/null 2>&1; then
		echo "mac-first-run: $kt is quarantined by Gatekeeper (xattr com.apple.quarantine); clear it with:" >&2
		echo "  xattr -d com.apple.quarantine '$kt'" >&2
		ok=1
	fi
	want=$(uname -m)
	# A shell itself under Rosetta reports x86_64 on Apple silicon.
	if [ "$(sysctl -n hw.optional.arm64 2>/dev/null)" = 1 ]; then
		want=arm64
	fi
	desc=$(file -b "$kt" 2>/dev/null)
	case $desc in
	*Mach-O*"$want"*) ;;
	*)
		echo "mac-first-run: $kt is not a macOS $want binary (file: ${desc:-unknown}); take kerntune-darwin-$([ "$want" = arm64 ] && echo arm64 || echo amd64) from the release, or build it here with:" >&2
		echo "  CGO_ENABLED=0 go build -o kerntune ./cmd/kerntune" >&2
		ok=1
		;;
	esac
	return "$ok"
}
check_binary || exit 2
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
step() { timed_step text "$@"; }

# json_step NAME FILE CMD...: as step, but stdout alone goes to FILE (JSON)
# and stderr to FILE.stderr.
json_step() { timed_step json "$@"; }

# timed_step text|json NAME FILE CMD...: step and json_step.
timed_step() {
	local kind=$1 name=$2 file=$3
	shift 3
	echo
	echo "== $name"
	local start rc
	start=$(date +%s)
	if [ "$kind" = json ]; then
		"$@" >"$dir/$file" 2>"$dir/$file.stderr"
		rc=$?
		cat "$dir/$file.stderr"
	else
		"$@" 2>&1 | tee "$dir/$file"
		rc=${PIPESTATUS[0]}
	fi
	record "$name" "$rc" "$start" "$file" "$@"
}

record() {
	local name=$1 rc=$2 start=$3 log=$4
	shift 4
	printf '%-26s exit %-3s %5ss  %-18s $ %s\n' "$name" "$rc" "$(($(date +%s) - start))" "$log" "$*" >>"$summary"
	[ "$rc" = 0 ] || failed=$((failed + 1))
}

# pressure_refusals LOG: how many candidates verify refused because their
# pipeline allows fewer threads than they need ("… × build: needs N threads
# per threadgroup but its pipeline allows M (register pressure)  (e.g. …)").
pressure_refusals() {
	awk '/ × .*\(register pressure\)/ { n += $1 } END { print n + 0 }' "$1" 2>/dev/null || echo 0
}

# validation_messages LOG: how many lines of LOG are reports of Metal's API
# validation (nslog mode: "-[MTLDebug…]: failed assertion …") or of shader
# validation (stderr: "Invalid device load executing kernel function …",
# "Invalid threadgroup store …").
validation_messages() {
	local n
	n=$(grep -Eci 'failed assertion|MTLDebug|Invalid (device|threadgroup|constant) (load|store)' "$1" 2>/dev/null)
	echo "${n:-0}"
}

# failed_candidates LOG: verify's total of failed candidates ("verified N
# candidates on DEVICE: P passed, F failed").
failed_candidates() {
	awk '/^verified .* passed, .* failed$/ { n = $(NF - 1) } END { print n + 0 }' "$1" 2>/dev/null || echo 0
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
# Metal's validation layers, set to report every error and go on (their
# default error mode asserts: the first error would end the process and
# hide the rest).
validation=(MTL_DEBUG_LAYER=1 MTL_DEBUG_LAYER_ERROR_MODE=nslog
	MTL_SHADER_VALIDATION=1 MTL_SHADER_VALIDATION_REPORT_TO_STDERR=1)
step "verify (validation on)" verify-sample.log \
	env "${validation[@]}" "$kt" verify --backend metal --sample "$sample"
# Shader validation can lower maxTotalThreadsPerThreadgroup, and verify
# then refuses candidates for "register pressure" that run without it:
# those refusals are not the candidates' failures.
pressure=$(pressure_refusals "$dir/verify-sample.log")
if [ "$pressure" -gt 0 ]; then
	total=$(failed_candidates "$dir/verify-sample.log")
	echo "(verify with shader validation: $pressure register-pressure refusals not counted, of $total failures)" >>"$summary"
	if [ "$total" -gt 0 ] && [ "$total" -le "$pressure" ]; then
		failed=$((failed - 1)) # the step failed for those refusals alone
	fi
fi
# The timing path under validation: a short tune whose candidates run in a
# worker process (--isolate), so that a kernel the layers stop costs one
# candidate, not the step. Its file is thrown away.
step "tune (validation on, isolated)" tune-validation.log \
	env "${validation[@]}" "$kt" tune --backend metal --isolate --dtype f16 --kernel gemv_nt \
	--shape 1x896x896 --budget 20s --out "$dir/validation-params.json"
messages=0
for log in verify-sample.log tune-validation.log; do
	messages=$((messages + $(validation_messages "$dir/$log")))
done
echo "(Metal validation messages in verify-sample.log and tune-validation.log: $messages)" >>"$summary"
[ "$messages" = 0 ] || failed=$((failed + 1))
# One plain verify, without any validation layer: these are the
# candidates' own results, register-pressure refusals included.
step "verify (shader validation off)" verify-sample-plain.log \
	"$kt" verify --backend metal --sample "$sample"
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

# 4-bit qgemv on Qwen2-0.5B's decode shapes (1×N×K: x 1×896, W N×896),
# group size 64: kerntune's kernel, then MLX's own where it is installed.
qshapes=(1x896x896 1x4864x896 1x9728x896 1x151936x896)
qargs=()
for s in "${qshapes[@]}"; do qargs+=(--shape "${s}x4x64"); done
step "bench qgemv (4-bit)" bench-qgemv.txt \
	"$kt" bench --backend metal --dtype f16 --kernel qgemv "${qargs[@]}" \
	--params "$params" --json-out "$dir/bench-qgemv.json"

# mlx_python prints the Python that has MLX, or nothing. On a Mac without
# the Command Line Tools, /usr/bin/python3 is a stub that asks to install
# them: it is not run there.
mlx_python() {
	local py=${PYTHON:-python3}
	command -v "$py" >/dev/null 2>&1 || return 0
	if [ "$(command -v "$py")" = /usr/bin/python3 ] && ! xcode-select -p >/dev/null 2>&1; then
		return 0
	fi
	"$py" -c 'import mlx.core' >/dev/null 2>&1 && echo "$py"
	return 0
}

# mlx_qgemv PYTHON BENCH_JSON SHAPE...: times mx.quantized_matmul (4 bits,
# group size 64, transpose=True: W is N×K) on x 1×K f16 for each M×N×K
# shape, warmed up, the median of many mx.eval, and prints it beside
# kerntune's time from bench's JSON. Two figures, both host-inclusive (the
# wall clock around mx.eval: encoding, commit and the wait for the GPU):
# a dependent chain of 32 calls, each call's input the previous call's
# output (its first K elements; N ≥ K for these shapes), built before the
# clock starts and evaluated by one mx.eval, per call: MLX encodes it as
# kerntune times its runs (one concurrent encoder, a barrier between
# dependent dispatches), and cannot run the calls concurrently, as it would
# independent ones; and one call per mx.eval (what a decode step that
# synchronises after the op pays). kerntune's is GPU time alone.
mlx_qgemv() {
	local py=$1 bench=$2
	shift 2
	"$py" - "$bench" "$@" <<'PY'
import json, statistics, sys, time

import mlx.core as mx

bench, shapes = sys.argv[1], sys.argv[2:]
bits, group, chain, warm, reps = 4, 64, 32, 10, 30
kt = {}
try:
    with open(bench) as f:
        for r in json.load(f).get("rows", []):
            kt[r["shape"]] = r.get("tuned_us")
except (OSError, ValueError) as e:
    print(f"(no kerntune times: {e})")
print(f"MLX {mx.__version__}, mx.quantized_matmul bits={bits} group_size={group} transpose=True, f16; "
      f"median of {reps} mx.eval after {warm} warm-up evals")
print("KERNTUNE: recorded GPU time a run. MLX: host-inclusive (wall clock around mx.eval), "
      f"per call in a dependent chain of {chain} (one mx.eval), and for one call per mx.eval")
col_chain = f"MLX µs/call chain{chain}"
print(f"{'SHAPE':<22} {'KERNTUNE µs':>12} {col_chain:>20} {'MLX µs/eval':>12}")
for s in shapes:
    m, n, k = (int(v) for v in s.split("x"))
    key = f"{s}x{bits}x{group}"
    ours = kt.get(key)
    ours = f"{ours:.2f}" if isinstance(ours, (int, float)) else "-"
    if n < k:
        print(f"{key:<22} {ours:>12} {'- (N < K)':>20} {'-':>12}")
        continue
    x = mx.random.normal((m, k)).astype(mx.float16)
    w = mx.random.normal((n, k)).astype(mx.float16)
    wq, scales, biases = mx.quantize(w, group_size=group, bits=bits)
    mx.eval(x, wq, scales, biases)

    def calls(length):
        y = x
        for _ in range(length):
            # The input is the previous output: MLX must barrier between the
            # calls. Where N > K its first K elements, a view of a one-row
            # array.
            y = mx.quantized_matmul(y if n == k else y[:, :k], wq, scales, biases,
                                    transpose=True, group_size=group, bits=bits)
        return y

    def timed(length):
        ts = []
        for i in range(warm + reps):
            y = calls(length)  # the graph, built before the clock starts
            t0 = time.perf_counter()
            mx.eval(y)
            if i >= warm:
                ts.append((time.perf_counter() - t0) / length)
        return statistics.median(ts) * 1e6

    chained, one = timed(chain), timed(1)
    print(f"{key:<22} {ours:>12} {chained:>20.2f} {one:>12.2f}")
PY
}

py=$(mlx_python)
if [ -n "$py" ]; then
	step "MLX qgemv (4-bit)" mlx-qgemv.txt mlx_qgemv "$py" "$dir/bench-qgemv.json" "${qshapes[@]}"
else
	echo "(no MLX: python3 -c 'import mlx.core' fails; MLX's quantized_matmul not timed)" >>"$summary"
fi

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
