#!/usr/bin/env bash
# Timing as applications launch kernels (H200 or another CUDA GPU), for a
# machine without Go: build bin/kerntune and bin/cuda.test with
#   make gpu-binaries && CGO_ENABLED=0 go test -c -o bin/cuda.test ./tuner/cuda
# then run this from the repository root. Logs and a summary go to $OUT:
#  1. the device facts (launch_overhead_us: an event per launch;
#     launch_gap_us: within a group of back-to-back launches);
#  2. recorded times against CUDA graph replays of the same kernels
#     (tuner/cuda TestRecordedTimeMatchesGraphReplay);
#  3. bench of the decode and row families with the H200 params file;
#  4. PyTorch's kernels timed with events per launch and in a graph.
set -uo pipefail
. "$(dirname "$0")/gpu-common.sh"
kt=./bin/kerntune
p=${PARAMS:-docs/results/gpu-h200/hardware_params.json}
step device
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
run $kt devices --json > "$OUT/devices.json" 2>&1
grep -E '"(launch_overhead_us|launch_gap_us|host_launch_us|bandwidth_gbps)"' "$OUT/devices.json"
step recorded time vs graph replay
CUDADRV_REQUIRE_GPU=1 run bin/cuda.test -test.run 'TestRecordedTimeMatchesGraphReplay|TestOutputSampleOnGPU' -test.v > "$OUT/graph.log" 2>&1
grep -E 'recorded|---|FAIL|ok' "$OUT/graph.log"
for dt in f16 bf16; do
  step "bench $dt"
  run $kt bench --backend cuda --dtype $dt --params "$p" --kernel gemv_nt --kernel qgemv --kernel lora --kernel softmax --kernel rmsnorm -q --samples 50 > "$OUT/bench-$dt.txt" 2>&1
  cat "$OUT/bench-$dt.txt"
done
step "PyTorch: events per launch and graph replay"
run python3 scripts/gpu-graph-peers.py > "$OUT/peers.txt" 2>&1
cat "$OUT/peers.txt"
exit $status
