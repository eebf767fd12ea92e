#!/usr/bin/env bash
# On a host with several GPUs: the same compare on one GPU and with --gpus all, each timed whole, after
# the inputs are generated and the kernels compiled once.
# Usage: bash tools/spread_bench.sh OUTDIR [CASES]   (about 4 minutes on two H200s with t10-t30)
set -uo pipefail
out=${1:?usage: tools/spread_bench.sh OUTDIR [CASES]}
cases=${2:-t10,t11,t12,t13,t14,t15,t16,t17,t18,t19,t20,t21,t22,t23,t24,t25,t26,t27,t28,t29,t30}
variants=tf32x3,wgmma3x,fa2simt,gemm,qreg,torch
mkdir -p "$out"
gpus=$(python3 -c "import pycuda.driver as d; d.init(); print(d.Device.count(), d.Device(0).name().split()[-1].lower())")
name="$(date -u +%F)_$(echo "$gpus" | awk '{print $2 "x" $1}')_spread"
# four generators at once: each keeps to its share of the host's threads
for s in 0 1 2 3; do
  list=$(echo "${cases//,/ }" | tr ' ' '\n' | awk -v s=$s 'NR % 4 == s' | tr '\n' ' ')
  bash -c "for c in $list; do attnbench gen \$c; done" > "$out/gen_$s.log" 2>&1 &
done
wait
for d in 32 64; do  # compile every kernel once, so neither run pays for it
  attnbench sweep N -v $variants --values 128,2048 --batch 2 --head-dim $d --no-save > "$out/warm_$d.log" 2>&1
done
for where in one_gpu all_gpus; do
  extra=(); [ $where = all_gpus ] && extra=(--gpus all)
  start=$(date +%s.%N)
  attnbench compare -v $variants -c "$cases" --timeout 3 --results-dir "$out" \
    --name "${name}_$where" "${extra[@]}" > "$out/${name}_$where.log" 2> "$out/${name}_$where.stderr.log"
  echo "$where: exit $?, $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$out/${name}_times.log"
done
