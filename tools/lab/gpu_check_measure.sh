#!/usr/bin/env bash
# GPU acceptance checks of the measurement layer (compare, --against, sweep square, report).
#
# Usage, from the project root, on a machine with a GPU, pycuda and (for the peer) PyTorch:
#   bash tools/lab/gpu_check_measure.sh STAGE [OUTDIR]
# STAGE:
#   pair    compare >= 5 variants + torch over t10,t11,t22,t29,t30 (saved), repeat it with --against
#           (expect SAME on >= 90% of cells, exit 0), then a deliberately slowed variant --against the
#           saved run (expect SLOWER and a non-zero exit)
#   ladder  compare report 004's ladder (kernels .. qreg) + torch over the same cases, for the ladder view
#   sweep   sweep square over all 102 sizes with one any-d variant (must finish within 10 minutes)
#   report  attnbench report over every attnbench-results/gpu-check/*.json, with plots
# OUTDIR (default build/gpu-check) receives logs/, results/ (copies) and the report with its plots.
# Results are saved under attnbench-results/gpu-check/ in the tree; copy OUTDIR/results/* back there between
# stages run on fresh machines, so that `report` sees all of them.
set -uo pipefail
export COLUMNS="${COLUMNS:-200}"  # wide tables in the logs

stage="${1:?usage: bash tools/lab/gpu_check_measure.sh pair|ladder|sweep|report [OUTDIR]}"
out="${2:-build/gpu-check}"
results="${RESULTS:-attnbench-results/gpu-check}"  # where the saved runs go (and are read by report)
cases="t10,t11,t22,t29,t30"
mkdir -p "$out/logs" "$out/results" "$results"
log="$out/logs/$stage.log"
ab() { python3 -m attnbench "$@"; }

# Variants from a preference list that are registered and accept every shape named.
pick() {
  python3 - "$@" <<'PY'
import sys
from attnbench.cases.suite import SUITE
from attnbench.cases.testcase import Shape
from attnbench.kernels.catalogue import REGISTRY
wanted, cases, count = sys.argv[1].split(","), sys.argv[2].split(","), int(sys.argv[3])
shapes = [SUITE[c].shape if c in SUITE else Shape(*map(int, c.split("x"))) for c in cases]
found = [n for n in wanted if n in REGISTRY and all(REGISTRY[n].refusal(s) is None for s in shapes)]
print(",".join(found[:count]))
PY
}

torch_ok() { python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; }

keep() { cp -f "$results"/"$1".* "$out/results/" 2>/dev/null || true; }

{
  echo "== stage $stage, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv 2>/dev/null
  case "$stage" in
  pair)
    start=$SECONDS
    ab gen ${cases//,/ } || exit 1
    echo "== inputs and references ready after $((SECONDS - start)) s"
    variants=$(pick splitq,float4,coalesced,bankfree,qreg,tf32x3,reglm,restructure,gemm,tiled,fused,kernels,naive "$cases" 6)
    torch_ok && variants="$variants,torch"
    echo "== variants: $variants"
    rm -f "$results"/pair.* "$results"/pair_again.*
    ab compare --variants "$variants" --cases "$cases" --timeout 4 --results-dir "$results" --name pair
    echo "== compare exit status $? after $((SECONDS - start)) s"
    keep pair
    ab compare --against "$results/pair.json" --timeout 4 --results-dir "$results" --name pair_again
    echo "== repeat --against exit status $? (want 0, SAME on >= 90% of cells) after $((SECONDS - start)) s"
    keep pair_again
    slow=$(pick qreg,bankfree,splitq,float4,tf32x3,online "$cases" 1)
    echo "== slowed variant: $slow (every pass launches its kernels twice)"
    python3 - "$results/pair.json" "$slow" <<'PY'
import dataclasses, sys
from attnbench.kernels import catalogue as variants
from attnbench.cli import main
saved, name = sys.argv[1], sys.argv[2]
original = variants.REGISTRY[name]
# Deliberately slowed: the same launches twice per pass, so the output is unchanged and the time doubles.
variants.REGISTRY[name] = dataclasses.replace(original, launches=original.launches * 2)
main(["compare", "--variants", name, "--cases", "t10,t29", "--against", saved, "--fail-slower", "5%",
      "--timeout", "4", "--no-save"])
PY
    echo "== slowed --against exit status $? (want non-zero, SLOWER) after $((SECONDS - start)) s"
    ;;
  ladder)
    start=$SECONDS
    ab gen ${cases//,/ } || exit 1
    variants=$(pick kernels,fused,maxsmem,splitq,float4,restructure,coalesced,reglm,bankfree,qreg "$cases" 99)
    torch_ok && variants="$variants,torch"
    echo "== variants: $variants"
    rm -f "$results"/ladder.*
    ab compare --variants "$variants" --cases "$cases" --baseline "${variants%%,*}" --timeout 3 \
      --results-dir "$results" --name ladder
    echo "== ladder compare exit status $? after $((SECONDS - start)) s"
    keep ladder
    ;;
  sweep)
    variant=$(pick gemm,tiled,online,naive 1x8193x8193,1x63x63 1)
    echo "== sweep square with $variant"
    rm -f "$results"/sweep_square.*
    start=$SECONDS
    timeout 590 python3 -m attnbench sweep square --variants "$variant" --results-dir "$results" --name sweep_square
    echo "== sweep exit status $? after $((SECONDS - start)) s (want < 600 s for all 102 sizes)"
    keep sweep_square
    ;;
  report)
    ab report "$results"/*.json -o "$out/report.md"
    echo "== report exit status $?"
    ;;
  *)
    echo "unknown stage $stage"; exit 2 ;;
  esac
} 2>&1 | tee "$log"
