#!/usr/bin/env bash
# From the repository root on the GPU machine, bin/kerntune built at 309a58f:
# qgemv's decode workload tuned and benched beside PyTorch's int4 kernel
# (default budgets), the table printed last.
set -u
bash scripts/gpu-decode.sh bin/kerntune > $OUT/decode.log 2>&1
echo "decode rc $?"
tail -40 $OUT/decode.log
