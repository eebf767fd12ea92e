#!/usr/bin/env bash
# The pipeline's benchmark (issue 15) on a GPU machine: the copy ceilings, then the course clock of
# t22, t11, t10, t29, t30 with the pipeline and with --no-pipeline, for tf32x3, qreg and torch (the
# torch peer has no pipeline; it runs unpipelined, and is left out when PyTorch cannot be imported).
#
# Usage, from anywhere, with attnbench installed with the gpu extra (pip install -e '.[gpu,test]'):
#   bash tools/lab/pipeline_bench.sh OUTDIR
# Environment (all optional):
#   CASES=t22,t11,t10,t29,t30  VARIANTS=tf32x3,qreg,torch  REPEATS=3 (runs per path)  REPS=5 (timed passes)
#   REFS=0     skip the float64 references (then outputs are compared between paths, not verified)
#   KEEP_DATA=1  keep the generated inputs under OUTDIR/data (about 2 GB; removed at the end otherwise)
#   THREADS_SWEEP=0  skip the last step, the first case read with 1, 2, 4 and 8 threads (read_threads.md)
# Writes OUTDIR/gpu.txt, ceilings.json, runs.jsonl (one line per run, as it ends), summary.json,
# summary.md (the tables), tables.log (the run table of t22 with and without the pipeline),
# read_threads.md, bench.log.
# About 6 minutes on an H200 host with 16 cores (a minute or two of it the float64 references).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:?usage: bash tools/lab/pipeline_bench.sh OUTDIR}"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
cd "$here/../.."  # the checkout's attnbench, even where it is not installed
export ATTNBENCH_DATA="${ATTNBENCH_DATA:-$out/data}"
export COLUMNS="${COLUMNS:-200}"
cases="${CASES:-t22,t11,t10,t29,t30}"
variants="${VARIANTS:-tf32x3,qreg,torch}"
log="$out/bench.log"
ab() { python3 -m attnbench "$@"; }
say() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$log"; }

cleanup() {
  rm -rf "$out/tmp"
  if [ "${KEEP_DATA:-0}" != 1 ] && [ "$ATTNBENCH_DATA" = "$out/data" ]; then
    rm -f "$out"/data/*.in "$out"/data/*.ref "$out"/data/.*.partial 2>/dev/null
  fi
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT TERM

say "attnbench from $(python3 -c 'import attnbench; print(attnbench.__file__)' 2>&1)"
if ! python3 -c 'import pycuda.driver' 2>>"$log"; then
  say "pycuda cannot be imported: install the gpu extra first (pip install -e '.[gpu,test]')"; exit 3
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total,pcie.link.gen.current,pcie.link.width.current \
  --format=csv > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt" | tee -a "$log"
if [[ ",$variants," == *",torch,"* ]] && ! python3 -c 'import torch; assert torch.cuda.is_available()' 2>>"$log"; then
  say "PyTorch with CUDA is not importable here: leaving the torch peer out"
  variants="$(echo ",$variants," | sed 's/,torch,/,/; s/^,//; s/,$//')"
fi

say "generating ${cases} into $ATTNBENCH_DATA"
if [ "${REFS:-1}" = 0 ]; then gen_args=(--no-reference); else gen_args=(); fi
if ! ab gen ${cases//,/ } ${gen_args[@]+"${gen_args[@]}"} >>"$log" 2>&1; then
  say "attnbench gen failed (see $log)"; exit 2
fi

files=()
for case in ${cases//,/ }; do files+=("$ATTNBENCH_DATA/$case.in"); done
say "copy ceilings"
python3 "$here/copy_ceilings.py" "${files[@]}" > "$out/ceilings.json" 2>>"$log" || say "copy_ceilings.py failed (see $log)"

first_case="${cases%%,*}"
first_variant="${variants%%,*}"
say "the run table of $first_case with $first_variant, with and without the pipeline"
{
  ab run "$first_case" "$out/tables.out" --variant "$first_variant" --reps 5
  ab run "$first_case" "$out/tables.out" --variant "$first_variant" --reps 5 --no-pipeline
} > "$out/tables.log" 2>&1
rm -f "$out/tables.out"
cat "$out/tables.log" >> "$log"

say "runs: $cases x $variants, ${REPEATS:-3} repeats per path"
if [ "${REFS:-1}" = 0 ]; then verify_args=(--no-verify); else verify_args=(); fi
python3 "$here/pipeline_bench.py" "$out" --cases "$cases" --variants "$variants" \
  --repeats "${REPEATS:-3}" --reps "${REPS:-5}" ${verify_args[@]+"${verify_args[@]}"} 2>>"$log" | tee -a "$log"
status=${PIPESTATUS[0]}

if [ "${THREADS_SWEEP:-1}" = 1 ]; then
  say "reading threads on $first_case with $first_variant (ATTNBENCH_READ_THREADS): read busy and wall time"
  echo "| read threads | read s | write s | total (wall) s |" > "$out/read_threads.md"
  echo "| ---: | ---: | ---: | ---: |" >> "$out/read_threads.md"
  for threads in 1 2 4 8; do
    ATTNBENCH_READ_THREADS=$threads ab run "$first_case" "$out/threads.out" --variant "$first_variant" --reps 2 --json \
      2>>"$log" | python3 -c "import json, sys; m = json.load(sys.stdin); c = m['pipeline'] or {}
print(f\"| $threads | {c.get('read_s', 0):.3f} | {c.get('write_s', 0):.3f} | {m['total_s']:.3f} |\")" \
      >> "$out/read_threads.md" 2>>"$log"
  done
  rm -f "$out/threads.out"
  cat "$out/read_threads.md" | tee -a "$log"
fi
say "done (exit $status); summary in $out/summary.md"
exit "$status"
