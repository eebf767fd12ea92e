#!/usr/bin/env bash
# The GPU half of the checks, in one go, for a machine with a CUDA GPU and pycuda installed:
# the gpu-marked tests, then the core demonstration runs. Logs go to $OUT (default ./gpu-check).
# Usage: OUT=folder bash tools/lab/gpu_check.sh [extra pytest args]
set -uo pipefail
out="${OUT:-gpu-check}"
mkdir -p "$out"
export ATTNBENCH_DATA="${ATTNBENCH_DATA:-/tmp/attnbench-data}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv | tee "$out/gpu.txt"
python3 -m pytest -m gpu -q -p no:cacheprovider --tb=short -rfs "$@" 2>&1 | tee "$out/pytest-gpu.log"
echo "pytest exit: ${PIPESTATUS[0]}" | tee -a "$out/pytest-gpu.log"
python3 -m attnbench run t29 "$ATTNBENCH_DATA/t29.out" --variant bankfree --check 2>&1 | tee "$out/run-t29-bankfree.log"
