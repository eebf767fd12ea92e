"""One wgmma16s pass on a seeded random input, checked against float64 with the margin its accuracy claims
(every element within half the course tolerance), for compute-sanitizer's racecheck and synccheck:

    python3 tests/kernels/wgmma16s_one_pass.py B,N,d[,PARTS[,BLOCKS]] [BUILD]

PARTS forces the key split's count (grid z), BLOCKS the persistent grid's block count (each block then runs
many units through its rings); BUILD is wgmma16s (the default) or one of its builds (wgmma16s:poly50). Exit 0
when right, 1 when wrong.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def one_pass(B: int, N: int, d: int, parts: int = 0, blocks: int = 0, build: str = "wgmma16s") -> bool:
    import numpy as np

    from attnbench.backends.gpu import Gpu
    from attnbench.bench.first_pass import WholeInput
    from attnbench.bench.runner import run_cell
    from attnbench.bench.sampler import TimingPolicy
    from attnbench.bench.verify import COURSE_MARGIN_ATOL, compare_outputs
    from attnbench.cases.reference import reference_output
    from attnbench.cases.testcase import Testcase
    from attnbench.kernels import wgmma16s
    from attnbench.kernels.catalogue import get_variant

    if parts:
        wgmma16s._splits = lambda shape: parts
    if blocks:
        wgmma16s._blocks = lambda shape, sms=132: min(blocks, shape.B * wgmma16s._row_tiles(shape))
    testcase = Testcase(np.random.default_rng(5).uniform(-3.0, 3.0, (B, 3, N, d)).astype(np.float32))
    variant = get_variant(build)
    if variant.name.partition(":")[0] != "wgmma16s":
        raise ValueError(f"{build} is not a build of wgmma16s")
    run = run_cell(variant, WholeInput(testcase, "random"), Gpu(0), TimingPolicy(warmup=0, reps=1, flush_l2=False))
    report = compare_outputs(run.output, reference_output(testcase), atol=COURSE_MARGIN_ATOL)
    print(f"{variant.name} B={B} N={N} d={d} parts={parts or 'host'} blocks={blocks or 'host'}: max error {report.max_abs_error:.2e}, "
          f"{'passed' if report.passed else 'FAILED'}, {report.nan_count} NaN")
    return report.passed


def main() -> int:
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    build = sys.argv[2] if len(sys.argv) == 3 else "wgmma16s"
    try:
        values = [int(v) for v in sys.argv[1].split(",")]
    except ValueError:
        print(f"not B,N,d[,PARTS[,BLOCKS]]: {sys.argv[1]!r}", file=sys.stderr)
        return 2
    if not 3 <= len(values) <= 5:
        print(f"not B,N,d[,PARTS[,BLOCKS]]: {sys.argv[1]!r}", file=sys.stderr)
        return 2
    from attnbench.errors import AttnbenchError

    try:
        return 0 if one_pass(*values, build=build) else 1
    except ValueError as error:
        print(f"wgmma16s_one_pass: {error}", file=sys.stderr)
        return 2
    except AttnbenchError as error:
        print(f"wgmma16s_one_pass: {error}", file=sys.stderr)
        return error.exit_code


if __name__ == "__main__":
    sys.exit(main())
