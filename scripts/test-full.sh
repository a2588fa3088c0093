#!/usr/bin/env bash
# make test-full: the whole sweeps that make test samples, and how long they
# took. Every Metal candidate through both clang checks (kernels/gpu), a
# sample of every pair of Metal parameter values run by the MSL emulation
# (kernels/gpu, about 2 minutes on 2 cores), then
# every OpenCL candidate built and verified on the OpenCL device (PoCL's CPU
# device off a GPU machine), one process per core: PoCL compiles one kernel
# at a time per process.
#
#   GO             the go command (default go)
#   OPENCL_PART    I/N: verify only the I-th of every N OpenCL candidates of
#                  each family and dtype (default: all); CI takes a part
#   OPENCL_PROCS   processes for the OpenCL sweep (default: the cores)
#
# KTDEV_REQUIRE_CLANG, KTDEV_REQUIRE_OPENCL and KTDEV_SUMMARY work as in
# make test. Exits 1 when any check failed.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
procs=${OPENCL_PROCS:-$(nproc)}
part=${OPENCL_PART:-0/1}
if ! [[ $part =~ ^([0-9]+)/([1-9][0-9]*)$ ]] || [ "${BASH_REMATCH[1]}" -ge "${BASH_REMATCH[2]}" ]; then
  echo "OPENCL_PART=$part: want I/N with 0 <= I < N, e.g. 1/4" >&2
  exit 2
fi
pi=${BASH_REMATCH[1]} pn=${BASH_REMATCH[2]}
if ! [[ $procs =~ ^[1-9][0-9]*$ ]]; then
  echo "OPENCL_PROCS=$procs: want a positive integer" >&2
  exit 2
fi
export KTDEV_FULL=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
rc=0

echo "== every Metal candidate through the MSL syntax and address-space checks"
t0=$(date +%s)
"$GO" test -count=1 -timeout 60m -v -run '^TestMSLSyntax$' ./kernels/gpu >"$tmp/msl.log" 2>&1 || rc=1
grep -v '^=== ' "$tmp/msl.log"
echo "MSL sweep: $(($(date +%s) - t0)) s"

echo "== MSL emulation: a sample of every pair of parameter values computed on the CPU"
t0=$(date +%s)
"$GO" test -count=1 -timeout 60m -v -run '^TestMSLEmulation$' ./kernels/gpu >"$tmp/mslemu.log" 2>&1 || rc=1
grep -v '^=== ' "$tmp/mslemu.log"
echo "MSL emulation sweep: $(($(date +%s) - t0)) s"

echo "== the MLX spec examples: a covering sample of each emulated (verify --emulate)"
t0=$(date +%s)
"$GO" test -count=1 -timeout 60m -v -run '^(TestMLXExamplesFromPublicCode|TestEmulateExamplesFull)$' ./spec >"$tmp/mlxemu.log" 2>&1 || rc=1
grep -v '^=== ' "$tmp/mlxemu.log"
echo "MLX examples sweep: $(($(date +%s) - t0)) s"

what="every OpenCL candidate"
[ "$pn" -gt 1 ] && what="OpenCL candidates, part $pi/$pn"
echo "== $what, verified on the OpenCL device in $procs processes"
t0=$(date +%s)
if "$GO" test -c -o "$tmp/opencl.test" ./tuner/opencl; then
  # Process j takes the candidates whose index i has i mod (pn·procs) =
  # pi + pn·j: together, those with i mod pn = pi. PoCL's kernel cache
  # would keep every compiled candidate on disk (gigabytes); it is off.
  pids=()
  for ((j = 0; j < procs; j++)); do
    (cd tuner/opencl && KTDEV_SHARD=$((pi + pn * j))/$((pn * procs)) POCL_KERNEL_CACHE=0 \
      "$tmp/opencl.test" -test.count=1 -test.timeout 180m -test.v -test.run '^TestVerifyEveryFamily$' >"$tmp/opencl.$j.log" 2>&1) &
    pids+=($!)
  done
  for ((j = 0; j < procs; j++)); do
    wait "${pids[$j]}" || rc=1
    echo "-- process $((j + 1)) of $procs"
    grep -v -e '^=== ' -e 'no valid candidate on' "$tmp/opencl.$j.log"
  done
else
  rc=1
fi
echo "OpenCL sweep: $(($(date +%s) - t0)) s"

el=$(($(date +%s) - start))
status=passed
[ "$rc" -ne 0 ] && status=FAILED
echo "make test-full: $status in $((el / 60)) min $((el % 60)) s"
exit "$rc"
