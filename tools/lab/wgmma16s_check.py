"""wgmma16s against float64 and beside wgmma3x, on seeded uniform inputs in [-3, 3) made in memory:

    python3 tools/wgmma16s_check.py acc     # max error and relL2 on odd and course-like shapes, and on the
                                            # large-score kinds of tests/large_scores.py (scaled to V's range)
    python3 tools/wgmma16s_check.py time    # kernel time of wgmma3x, wgmma16s and wgmma16s with Q in shared
                                            # memory (WGMMA16S_QREG=0) on the long course shapes

Needs a Hopper GPU. Each timed cell is the runner's: one checked-for-NaN pass, 3 warm-up passes, 15 samples
with the L2 flushed before each, the median kept (no adaptive sampling, no float64 check of the timed
cells: `attnbench compare` does both). Exit 1 when an element is beyond half the course tolerance.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

ACC_SHAPES = [(3, 1, 32), (2, 17, 64), (3, 100, 128), (2, 1000, 128), (5, 100, 32), (3, 1000, 64), (2, 33, 64),
              (64, 128, 32), (16, 256, 64), (2, 2048, 32), (1, 4096, 64), (3, 1536, 64), (300, 256, 64), (10, 2048, 64),
              (2, 65, 128), (40, 700, 32), (1, 16384, 64), (2000, 128, 32)]
LARGE_SCORE_SHAPES = [(2, 100, 32), (2, 256, 64), (1, 1000, 128)]
TIME_SHAPES = [(10, 2048, 64), (500, 2048, 64), (2, 32768, 64), (4, 32768, 32), (8, 4096, 128), (20, 2048, 32),
               (160, 128, 64), (13600, 128, 32)]


def main() -> int:
    if len(sys.argv) != 2 or sys.argv[1] not in ("acc", "time"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    import numpy as np

    from attnbench.backends.gpu import Gpu
    from attnbench.bench.first_pass import WholeInput
    from attnbench.bench.runner import run_cell
    from attnbench.bench.sampler import TimingPolicy
    from attnbench.bench.verify import COURSE_MARGIN_ATOL, compare_outputs
    from attnbench.cases.reference import reference_output
    from attnbench.cases.testcase import Testcase
    from attnbench.errors import AttnbenchError
    from attnbench.kernels.catalogue import get_variant
    from tests.large_scores import check_large_scores, large_score_testcase

    rng = np.random.default_rng(42)
    try:
        gpu = Gpu(0)
    except AttnbenchError as error:
        print(f"wgmma16s_check: {error}", file=sys.stderr)
        return error.exit_code
    variant = get_variant("wgmma16s")

    def testcase(B: int, N: int, d: int) -> Testcase:
        return Testcase(rng.uniform(-3, 3, size=(B, 3, N, d)).astype(np.float32))

    if sys.argv[1] == "acc":
        one = TimingPolicy(warmup=0, reps=1, flush_l2=False)
        right = True
        for shape in ACC_SHAPES:
            tc = testcase(*shape)
            report = compare_outputs(run_cell(variant, WholeInput(tc, "random"), gpu, one).output, reference_output(tc))
            ok = report.max_abs_error <= COURSE_MARGIN_ATOL and report.nan_count == 0
            right &= ok
            print(f"{shape}: max {report.max_abs_error:.3e} relL2 {report.rel_l2_error:.3e} NaN {report.nan_count} "
                  f"{'ok' if ok else 'FAIL'}", flush=True)
        for kind in ("q30", "zero_q", "v1000"):
            for shape in LARGE_SCORE_SHAPES:
                tc = large_score_testcase(kind, *shape, rng)
                report, problems = check_large_scores(kind, tc, run_cell(variant, WholeInput(tc, kind), gpu, one).output,
                                                      variant.accuracy)
                right &= not problems
                scale = float(np.abs(tc.v).max()) / 3
                print(f"{kind} {shape}: max / (max|V| / 3) {report.max_abs_error / scale:.3e} relL2 "
                      f"{report.rel_l2_error:.3e} {'; '.join(problems) or 'ok'}", flush=True)
        return 0 if right else 1

    timed = TimingPolicy(warmup=3, reps=15, flush_l2=True)
    q_in_smem = replace(
        variant, defines=lambda s: {"HEAD_DIM": s.d, "WGMMA16S_QREG": 0},
        launches=(variant.launches[0],
                  replace(variant.launches[1], smem=lambda s: variant.launches[1].smem(s) + 2 * 64 * 2 * s.d * 2)))
    for shape in TIME_SHAPES:
        tc = testcase(*shape)
        B, N, d = shape
        for label, v in (("wgmma3x", get_variant("wgmma3x")), ("wgmma16s", variant), ("wgmma16s Q in smem", q_in_smem)):
            ms = run_cell(v, WholeInput(tc, "random"), gpu, timed).measurement.kernel.median
            print(f"{label} {shape}: {ms:.4f} ms {4 * B * N * N * d / ms / 1e9:.1f} TFLOP/s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
