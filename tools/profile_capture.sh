#!/usr/bin/env bash
# The GPU half of issue 10, in one go, on a machine with a CUDA GPU, pycuda and Nsight Compute (ncu):
#   samples   small real ncu CSVs (raw and details layouts) of qreg and tf32x3 on t02, for tests/data
#   ceilings  `attnbench ceilings --refresh` (also saved as JSON under results/)
#   profile   float4, coalesced, reglm, bankfree, qreg side by side on t29 and t30 (saved, with raw CSVs)
#   compare   those and tf32x3 on t29, t30 timed with the ceilings known, then `attnbench report` (roofline)
#   tests     the tests of the new modules, gpu-marked ones included, with the real captures copied into tests/data
# Usage: bash tools/profile_capture.sh OUTDIR [samples|ceilings|profile|compare|tests|all]...   (default: all)
# Everything lands under OUTDIR: tests-data/, results/, cache/ (a copy of the ceilings cache), logs/.
# The ceilings cache itself stays in $ATTNBENCH_CACHE (default /tmp/attnbench-cache), so steps split over
# several calls on one warm machine share it; `compare` measures the ceilings first if they are missing.
set -uo pipefail
out="${1:?usage: bash tools/profile_capture.sh OUTDIR [samples|ceilings|profile|compare|tests|all]...}"
shift
steps="${*:-all}"
mkdir -p "$out/tests-data" "$out/results" "$out/logs"
out="$(cd "$out" && pwd)"
export ATTNBENCH_DATA="${ATTNBENCH_DATA:-/tmp/attnbench-data}"
export ATTNBENCH_CACHE="${ATTNBENCH_CACHE:-/tmp/attnbench-cache}"
attnbench() { python3 -m attnbench "$@"; }
want() { [[ " $steps " == *" all "* || " $steps " == *" $1 "* ]]; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv | tee "$out/logs/gpu.txt"
ncu --version 2>&1 | tee "$out/logs/ncu-version.txt"
gpu_slug="$(python3 -c "import pycuda.driver as d; d.init(); print(d.Device(0).name().lower().replace('nvidia','').strip().replace(' ','-'))")"
arch="$(python3 -c "import pycuda.driver as d; d.init(); print('sm_%d%d' % d.Device(0).compute_capability())")"

if want samples; then
  metrics="$(python3 -c "from attnbench.explain.metrics import metric_table, ncu_metric_names; print(','.join(ncu_metric_names(metric_table('$arch'))))")"
  for variant in qreg tf32x3; do
    for page in raw details; do
      ncu --clock-control none --profile-from-start off --csv --page "$page" --print-units base --metrics "$metrics" \
        python3 -m attnbench.explain.profile_target t02 "$variant" \
        > "$out/tests-data/ncu_${page}_${gpu_slug}_${variant}_t02.csv" 2> "$out/logs/sample_${page}_${variant}.err"
      echo "sample $page $variant: exit $? ($(wc -l < "$out/tests-data/ncu_${page}_${gpu_slug}_${variant}_t02.csv") lines)"
    done
  done
fi

if want ceilings; then
  attnbench ceilings --refresh 2>&1 | tee "$out/logs/ceilings.log"
  attnbench ceilings --json > "$out/results/ceilings_${gpu_slug}.json"
fi

if want profile; then
  for case in t29 t30; do
    attnbench profile "$case" -v float4 -v coalesced -v reglm -v bankfree -v qreg --save \
      --results-dir "$out/results" --name "$(date -u +%F)_${gpu_slug}_profile_ladder_${case}" 2>&1 \
      | tee "$out/logs/profile_${case}.log"
    echo "profile $case: exit ${PIPESTATUS[0]}" | tee -a "$out/logs/profile_${case}.log"
  done
fi

if want compare; then
  attnbench ceilings 2>&1 | tail -3
  attnbench gen t29 t30 2>&1 | tail -2
  attnbench compare --variants float4,coalesced,reglm,bankfree,qreg,tf32x3 --cases t29,t30 --baseline float4 \
    --results-dir "$out/results" --name "$(date -u +%F)_${gpu_slug}_compare_ceilings_t29-t30" --plot 2>&1 \
    | tee "$out/logs/compare.log"
  attnbench report "$out/results/$(date -u +%F)_${gpu_slug}_compare_ceilings_t29-t30.json" \
    -o "$out/results/$(date -u +%F)_${gpu_slug}_report_roofline.md" 2>&1 | tee "$out/logs/report.log"
fi

if want tests; then
  cp "$out"/tests-data/ncu_*.csv tests/data/ 2>/dev/null  # so the real-capture parsing test runs here too
  python3 -m pytest -q -p no:cacheprovider -rfs tests/bench/test_profile.py tests/bench/test_ceilings.py tests/kernels/test_info.py \
    tests/output/plots/test_roofline.py 2>&1 | tee "$out/logs/pytest-issue10.log"
fi
mkdir -p "$out/cache" && cp -r "$ATTNBENCH_CACHE"/. "$out/cache/" 2>/dev/null
ls -la "$out"/*
