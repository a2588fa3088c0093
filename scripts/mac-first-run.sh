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
#   0. before anything: the binary is not quarantined (a download from a
#      browser is, and macOS then refuses to run it) and is built for this
#      Mac's architecture (arm64 on Apple silicon, not x86_64 under
#      Rosetta); each check prints the command that fixes it
#   3. kerntune verify --backend metal --sample N with Metal's API validation
#      and shader validation on (MTL_DEBUG_LAYER=1 MTL_SHADER_VALIDATION=1),
#      validation errors logged, not asserted (MTL_DEBUG_LAYER_ERROR_MODE=nslog,
#      MTL_SHADER_VALIDATION_REPORT_TO_STDERR=1: by default the first one
#      aborts the process), both dtypes: every N-th candidate of every family
#      against the float64 reference, in its own process; then one plain
#      verify (no validation), as applications run; between them a short
#      tune under the same layers with the candidates in an isolated worker
#      (--isolate), which runs the timing path (concurrent encoders,
#      barriers, fences, command buffers in flight); the validation
#      messages both logged are counted in the summary
#      Shader validation instruments every kernel, which can lower a
#      pipeline's maxTotalThreadsPerThreadgroup: candidates refused there for
#      "register pressure" are not counted as failures; verify runs again
#      with shader validation off (API validation on), and that run counts.
#   4. a 60 s tune (f16 gemv_nt, one shape from each of two shape classes:
#      1x896x896 in tiny, 1x896x4864 in largeK_smallN) into FOLDER's own
#      hardware_params.json, with a trace
#   5. kerntune bench of the tuned shapes against MPS (MPSMatrixVector-
#      Multiplication), of one GEMM shape with the default parameters
#      against MPSMatrixMultiplication, and of 4-bit qgemv (Qwen2-0.5B's
#      shapes, group size 64); where MLX is installed (python3 -c 'import
#      mlx.core' works), MLX's own mx.quantized_matmul on the same shapes,
#      printed beside kerntune's: per op in a dependent chain (each call's
#      input is the previous call's output, evaluated once, so MLX cannot run
#      them side by side), and per mx.eval of one op, host included
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
if [ -z "$kt" ] || [ ! -x "$kt" ]; then
	echo "mac-first-run: no kerntune binary: put it at ./kerntune, on PATH, or name it with KERNTUNE=/path/to/kerntune" >&2
	exit 2
fi
# A binary downloaded with a browser carries the quarantine attribute, and
# macOS refuses to run it ("cannot be opened"); an x86_64 build runs under
# Rosetta, where timings are not the native ones. Both are fixed before
# anything runs.
if xattr -p com.apple.quarantine "$kt" >/dev/null 2>&1; then
	echo "mac-first-run: $kt is quarantined (downloaded from a browser): run  xattr -d com.apple.quarantine $kt  and start again" >&2
	exit 2
fi
# The architectures of a Mach-O binary (lipo, or file without the Command
# Line Tools); a wrapper script or another format is not checked.
host_arch=$(uname -m)
bin_arch=$(lipo -archs "$kt" 2>/dev/null)
if [ -z "$bin_arch" ] && file -b "$kt" 2>/dev/null | grep -q Mach-O; then
	bin_arch=$(file -b "$kt")
fi
if [ -n "$bin_arch" ] && [[ $bin_arch != *"$host_arch"* ]]; then
	echo "mac-first-run: $kt is built for $bin_arch, this Mac is $host_arch: use the darwin-$host_arch build (make release, or the kerntune-darwin-$host_arch download)" >&2
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

# validation_messages LOG: how many lines of LOG are reports of Metal's API
# or shader validation (nslog mode writes them to stderr and goes on).
validation_messages() {
	local n
	n=$(grep -Eci 'failed assertion|MTLDebug|Invalid (device|threadgroup|constant) (load|store)' "$1" 2>/dev/null)
	echo "${n:-0}"
}
# pressure_refusals LOG: how many candidates verify refused because their
# pipeline allows fewer threads than they need ("… × build: needs N threads
# per threadgroup but its pipeline allows M (register pressure)  (e.g. …)").
pressure_refusals() {
	awk '/ × .*\(register pressure\)/ { n += $1 } END { print n + 0 }' "$1" 2>/dev/null || echo 0
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
# Validation errors are logged (nslog mode, shader errors on stderr), not
# asserted: by default the first one aborts the process and hides the rest.
validation=(MTL_DEBUG_LAYER=1 MTL_DEBUG_LAYER_ERROR_MODE=nslog MTL_SHADER_VALIDATION=1 MTL_SHADER_VALIDATION_REPORT_TO_STDERR=1)
step "verify (validation on)" verify-sample.log \
	env "${validation[@]}" "$kt" verify --backend metal --sample "$sample"
# Shader validation can lower maxTotalThreadsPerThreadgroup, and verify
# then refuses candidates for "register pressure" that run without it:
# those refusals are not the candidates' failures. Verify again with shader
# validation off; that run's register-pressure refusals are real.
pressure=$(pressure_refusals "$dir/verify-sample.log")
if [ "$pressure" -gt 0 ]; then
	total=$(failed_candidates "$dir/verify-sample.log")
	echo "(verify with shader validation: $pressure register-pressure refusals not counted, of $total failures)" >>"$summary"
	if [ "$total" -gt 0 ] && [ "$total" -le "$pressure" ]; then
		failed=$((failed - 1)) # the step failed for those refusals alone
	fi
	step "verify (shader validation off)" verify-sample-noshadervalidation.log \
		env MTL_DEBUG_LAYER=1 MTL_DEBUG_LAYER_ERROR_MODE=nslog "$kt" verify --backend metal --sample "$sample"
fi
# The timing path under validation (concurrent encoders, barriers, fences,
# command buffers in flight): a short tune whose candidates run in a worker
# process (--isolate), so that a kernel the layers stop costs one candidate,
# not the step. Its file is thrown away.
step "tune (validation on, isolated)" tune-validation.log \
	env "${validation[@]}" "$kt" tune --backend metal --isolate --dtype f16 --kernel gemv_nt \
	--shape 1x896x896 --budget 20s --out "$dir/validation-params.json"
messages=0
for log in verify-sample.log tune-validation.log; do
	messages=$((messages + $(validation_messages "$dir/$log")))
done
echo "(Metal validation messages in verify-sample.log and tune-validation.log: $messages)" >>"$summary"
[ "$messages" = 0 ] || failed=$((failed + 1))
step "verify (plain)" verify-plain.log "$kt" verify --backend metal --sample "$sample"
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
# shape, warmed up, median of many runs, two ways: per op in a dependent
# chain of 32 (each call's x is the previous call's output, cut to K, all
# evaluated by one mx.eval, so MLX cannot run them side by side: the
# nearest to kerntune's GPU time per dispatch, with one slice op a call
# and the host's share spread over 32), and one op per mx.eval (what a
# decode step pays, launch and synchronisation included: host-inclusive).
# Prints them beside kerntune's time from bench's JSON.
mlx_qgemv() {
	local py=$1 bench=$2
	shift 2
	"$py" - "$bench" "$@" <<'PY'
import json, statistics, sys, time

import mlx.core as mx

bench, shapes = sys.argv[1], sys.argv[2:]
bits, group, chain, warm, reps = 4, 64, 32, 20, 50
kt = {}
try:
    with open(bench) as f:
        for r in json.load(f).get("rows", []):
            kt[r["shape"]] = r.get("tuned_us")
except (OSError, ValueError) as e:
    print(f"(no kerntune times: {e})")
print(f"MLX {mx.__version__}, mx.quantized_matmul bits={bits} group_size={group} transpose=True, f16; "
      f"median of {reps} runs after {warm} warm-up runs")
per_op = f"MLX µs/op (chain of {chain})"
print(f"{'SHAPE':<22} {'KERNTUNE µs':>12} {per_op:>24} {'MLX µs/eval, host-inclusive':>28}")
for s in shapes:
    m, n, k = (int(v) for v in s.split("x"))
    x = mx.random.normal((m, k)).astype(mx.float16)
    w = mx.random.normal((n, k)).astype(mx.float16)
    wq, scales, biases = mx.quantize(w, group_size=group, bits=bits)
    mx.eval(x, wq, scales, biases)

    def op(v):
        return mx.quantized_matmul(v, wq, scales, biases, transpose=True, group_size=group, bits=bits)

    def next_x(y):
        # The next call's input is this call's output, cut (or padded) to K.
        return y[:, :k] if n >= k else mx.pad(y, [(0, 0), (0, k - n)])

    def timed(ops, dependent):
        ts = []
        for i in range(warm + reps):
            t0 = time.perf_counter()
            if dependent:
                v = x
                for _ in range(ops):
                    v = next_x(op(v))
                mx.eval(v)
            else:
                mx.eval(op(x))
            if i >= warm:
                ts.append((time.perf_counter() - t0) / ops)
        return statistics.median(ts) * 1e6

    chained, one = timed(chain, True), timed(1, False)
    key = f"{s}x{bits}x{group}"
    ours = kt.get(key)
    ours = f"{ours:.2f}" if isinstance(ours, (int, float)) else "-"
    print(f"{key:<22} {ours:>12} {chained:>24.2f} {one:>28.2f}")
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
