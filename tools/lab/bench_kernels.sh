#!/usr/bin/env bash
# On a GPU machine: the fast kernels side by side with PyTorch SDPA float32 (saved as a compare), the
# same compare repeated against itself (the SAME rate of identical code), and the square sweep's noise.
# Usage: bash tools/lab/bench_kernels.sh OUTDIR   (about 6 minutes on an H200)
set -uo pipefail
out=${1:?usage: tools/lab/bench_kernels.sh OUTDIR}
mkdir -p "$out/results" "$out/logs"
date=$(date -u +%F)
gpu=$(python3 -c "import pycuda.autoprimaryctx, pycuda.driver as d; print(d.Context.get_device().name().split()[-1].lower())")
# (8, 4096, 128): the issue's d = 128 case, seeded like the suite (values uniform in [-3, 3)).
python3 -c "
from attnbench.cases.inputs import seeded_testcase
from attnbench.cases.testcase import Shape, write_testcase
write_testcase('$out/d128.in', seeded_testcase(Shape(8, 4096, 128), 20261122))"
attnbench ceilings | tee "$out/logs/ceilings.log"
name="${date}_${gpu}_compare_kernels"
attnbench compare --variants wgmma3x,tf32x3,fa2simt,qreg,gemm,torch --cases "t10,t11,t22,t29,t30,$out/d128.in" \
  --baseline torch --results-dir "$out/results" --name "$name" --plot 2>&1 | tee "$out/logs/compare.log"
attnbench compare --against "$out/results/$name.json" --no-save 2>&1 | tee "$out/logs/against_self.log"
attnbench sweep square --variants gemm --sizes 63-1025 --results-dir "$out/results" \
  --name "${date}_${gpu}_sweep_square_63-1025_gemm" 2>&1 | tee "$out/logs/sweep_square.log"
echo "noise lines in the sweep: $(grep -c 'noise' "$out/logs/sweep_square.log")"
grep -E "SAME on|regression" "$out/logs/against_self.log"
