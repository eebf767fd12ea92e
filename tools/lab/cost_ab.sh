#!/usr/bin/env bash
# What the checks cost: the same compare over t10-t30 by two trees on one GPU, inputs generated once.
# Usage: bash tools/lab/cost_ab.sh OLDTREE OUTDIR STEP...   steps: gen, warm, oldwarm, new (this tree), old (OLDTREE:
# a folder holding an older attnbench/, cuda/ and testcases/). Each compare's log ends with its wall time. `warm`
# and `oldwarm` are one short compare each (one sample a cell) that pays the kernels' compiles (each tree's own:
# the include path is part of the compile cache's key) before either tree is timed. The compares run in examples/report_kernel, so that its `flash` (a user kernel) is one of the variants.
set -uo pipefail
old=${1:?usage: tools/lab/cost_ab.sh OLDTREE OUTDIR STEP...}; out=${2:?}; shift 2
mkdir -p "$out"; out=$(cd "$out" && pwd)
cases=t10,t11,t12,t13,t14,t15,t16,t17,t18,t19,t20,t21,t22,t23,t24,t25,t26,t27,t28,t29,t30
variants=${VARIANTS:-wgmma3x,tf32x3,fa2simt,gemmtc,gemmwg3x,gemm,qreg,bankfree,flash,torch}  # VARIANTS= to choose
compare() {  # label, tree, extra options
  local start end label=$1 tree=$2
  shift 2
  start=$(date +%s.%N)
  local save=(--no-save)
  [ -n "${SAVE:-}" ] && save=(--results-dir "$out" --name "$label")  # SAVE=1: each compare's results saved in OUTDIR
  (cd examples/report_kernel && PYTHONPATH="$tree${PYTHONPATH:+:$PYTHONPATH}" python3 -m attnbench compare \
    -v "$variants" -c "$cases" "${save[@]}" "$@") > "$out/$label.log" 2>&1
  local rc=$?
  end=$(date +%s.%N)
  echo "$label rc $rc wall $(python3 -c "print(round($end - $start))") s" | tee -a "$out/$label.log"
}
for step in "$@"; do
  case $step in
    gen) /usr/bin/time -f "gen %e s" python3 -m attnbench gen ${cases//,/ } > "$out/gen.log" 2>&1; tail -1 "$out/gen.log" ;;
    warm) compare warm "$PWD" --reps 1 --warmup 0 ;;
    oldwarm) compare oldwarm "$(cd "$old" && pwd)" --reps 1 --warmup 0 ;;
    new) compare new "$PWD" ;;
    old) compare old "$(cd "$old" && pwd)" ;;
  esac
done
