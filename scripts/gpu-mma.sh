#!/usr/bin/env bash
# Verifies the GEMM MMA (simdgroup_matrix) variant through its CUDA
# emulation on an NVIDIA GPU: every MMA=1 candidate of both GEMM families and
# both dtypes, on the odd shapes. Build first with `make gpu-binaries`.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
./bin/kerntune verify --backend cuda --kernel gemm_av --kernel gemm_at_b --where MMA=1 --json > "$OUT/verify-mma.json" 2> "$OUT/verify-mma.log"
rc=$?
cat "$OUT/verify-mma.log"
exit $rc
