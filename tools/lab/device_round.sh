#!/usr/bin/env bash
# One device call's worth of checks, packed into one archive (the device returns only a few files).
# Usage: bash tools/lab/device_round.sh OUTDIR STEP...   steps: explain, user, against, pipeline, gputests
set -uo pipefail
out=${1:?usage: tools/lab/device_round.sh OUTDIR STEP...}; shift
mkdir -p "$out"
for step in "$@"; do
  case $step in
    explain)  # issue 10: real ncu samples, ceilings, the ladder's counters on t29 and t30
      timeout 330 bash tools/profile_capture.sh "$out/explain" samples ceilings profile > "$out/explain.log" 2>&1 ;;
    user)  # issue 8: user kernels, the judge and faults on the GPU
      timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider -rfEs tests/kernels/test_user_variants.py \
        tests/bench/test_judge.py tests/bench/test_profile.py tests/backends/test_torch_peer.py > "$out/user.log" 2>&1 ;;
    against)  # issue 9: the same compare twice, the second against the first
      mkdir -p "$out/against"
      attnbench compare --variants tf32x3,wgmma3x,fa2simt,gemm,qreg,torch --cases t10,t11,t29,t30 \
        --results-dir "$out/against" --name self > "$out/against.log" 2>&1
      attnbench compare --against "$out/against/self.json" --no-save >> "$out/against.log" 2>&1 ;;
    pipeline)  # issue 15: the course clock with and without the pipeline
      REPEATS=${REPEATS:-2} timeout 380 bash tools/lab/pipeline_bench.sh "$out/pipeline" > "$out/pipeline.log" 2>&1 ;;
    spread)  # issue 13: one compare on one GPU, then over all the host's GPUs
      cases=t10,t11,t12,t13,t14,t15,t16,t17,t18,t19,t20,t21,t22,t23,t24,t25,t26,t27,t28,t29,t30
      variants=tf32x3,wgmma3x,fa2simt,gemm,qreg,torch
      mkdir -p "$out/spread"
      attnbench gen ${cases//,/ } > "$out/spread/gen.log" 2>&1
      /usr/bin/time -f "one GPU %e s" attnbench compare -v $variants -c $cases --timeout 4 \
        --results-dir "$out/spread" --name one_gpu > "$out/spread/one.log" 2>&1
      /usr/bin/time -f "all GPUs %e s" attnbench compare -v $variants -c $cases --timeout 4 --gpus all \
        --results-dir "$out/spread" --name all_gpus > "$out/spread/all.log" 2>&1
      grep -h "GPU.* s$" "$out/spread/one.log" "$out/spread/all.log" ;;
    gputests)
      timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider -rfEs tests > "$out/gputests.log" 2>&1 ;;
  esac
  echo "step $step: exit $?"
done
tar czf "$out.tgz" -C "$out" . && rm -rf "$out"
