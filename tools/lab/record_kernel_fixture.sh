#!/usr/bin/env bash
# Record the kernel-records fixture on a GPU: the course example (examples/course_program/hw4.cu) run once on t01
# with the collector (cuda/kernel_records.cpp, built by attnbench at first use) loaded through CUDA's injection, as
# attnbench's recording run loads it, without the sandbox. The file it writes replaces the hand-made fixture of
# tests/results/test_kernel_time.py (FIXTURE there names the file; an H200's was recorded on 2026-11-28).
# Usage: bash tools/lab/record_kernel_fixture.sh [case, default t01]   (from the repository's root)
set -euo pipefail
case_name="${1:-t01}"
export ATTNBENCH_DATA="${ATTNBENCH_DATA:-/tmp/attnbench-data}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
arch="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)"
gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{print tolower($NF)}')"
nvcc -O3 "-arch=sm_${arch}" -o "$work/hw4" examples/course_program/hw4.cu
python3 -m attnbench gen "$case_name" >/dev/null
input="$(python3 -c "from attnbench.cases import suite; print(suite.input_path(suite.SUITE['$case_name']))")"
library="$(python3 -c "from attnbench.backends.kernel_records import collector_library; print(collector_library())")"
fixture="tests/data/kernel_records_${gpu}_course_${case_name}.txt"
CUDA_INJECTION64_PATH="$library" ATTNBENCH_KERNEL_RECORDS="$PWD/$fixture" "$work/hw4" "$input" "$work/out.bin"
python3 -m attnbench verify "$work/out.bin" "$case_name"
python3 - "$fixture" <<'PY'
import sys
from attnbench.results.kernel_time import parse_records
time = parse_records(open(sys.argv[1]).read())
print(f"{sys.argv[1]}: {time.launches} launches, busy {1e3 * time.busy_s:.4f} ms, sum {1e3 * time.total_s:.4f} ms, "
      f"kernels {[k.name for k in time.kernels]}")
PY
