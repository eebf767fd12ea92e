"""wgmma3x with its key split forced to each count, on suite cases: time, accuracy and the count the host
picks (`_wgmma3x_splits`), to hold that choice to measurements.

    python3 tools/lab/key_split_sweep.py OUTDIR t05 t06 t07 t08 t09 t10 20x2048x64 [--splits 1,2,3,4]
    python3 tools/lab/key_split_sweep.py --summary OUTDIR/key_split_sweep.json
    python3 tools/lab/key_split_sweep.py --one-pass B,N,d,PARTS[,BLOCKS]    (for compute-sanitizer: exit 1 if wrong)

Needs a Hopper GPU and the suite's cases generated (`attnbench gen t05-t10`); a case written BxNxd is
made in memory from the suite generator's values (seed 0), so any shape can be swept. Each (case, count) is run
by the runner as any variant is (first pass checked against float64 and gated, then sampled with the
L2 flushed); rows are written to OUTDIR/key_split_sweep.json with the run's metadata, and the table to
OUTDIR/key_split_sweep.md. The summary says, for each case, the fastest count and the pick's loss
against it; it exits 1 when a pick is more than 3% slower than the fastest count.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from attnbench import strict_json  # noqa: E402

LOSS_ALLOWED = 0.03


def summary(rows: list[dict]) -> tuple[list[str], bool]:
    """Markdown lines: per case, each count's median, the pick and its loss against the fastest count."""
    counts = sorted({r["splits"] for r in rows})
    lines = ["| case | B, N, d | " + " | ".join(f"{k} part{'s' if k > 1 else ''}, ms" for k in counts)
             + " | picked | fastest | pick's loss |",
             "| --- | ---: | " + " | ".join("---:" for _ in counts) + " | ---: | ---: | ---: |"]
    ok = True
    for case in dict.fromkeys(r["case"] for r in rows):
        mine = {r["splits"]: r for r in rows if r["case"] == case and r["median_ms"] is not None}
        if not mine:
            lines.append(f"| {case} | - | " + " | ".join("-" for _ in counts) + " | - | - | not measured |")
            ok = False
            continue
        fastest = min(mine, key=lambda k: mine[k]["median_ms"])
        picked = next(r["picked"] for r in rows if r["case"] == case)
        loss = mine[picked]["median_ms"] / mine[fastest]["median_ms"] - 1 if picked in mine else float("nan")
        ok = ok and loss <= LOSS_ALLOWED  # False for a pick that was not measured (nan)
        cells = " | ".join(f"{mine[k]['median_ms']:.4f}" if k in mine else "-" for k in counts)
        lines.append(f"| {case} | {next(iter(mine.values()))['shape']} | {cells} | {picked} | {fastest} | {loss:+.1%} |")
    worst = max(r["rel_l2"] for r in rows)
    lines += ["", f"- every run verified against float64: {'yes' if all(r['passed'] for r in rows) else 'NO'}; "
                  f"largest relL2 {worst:.2e}"]
    return lines, ok and all(r["passed"] for r in rows)


def measure(cases: list[str], counts: list[int]) -> tuple[list[dict], dict]:
    from attnbench.backends.gpu import Gpu
    from attnbench.bench.first_pass import WholeInput
    from attnbench.bench.runner import run_cell
    from attnbench.bench.sampler import TimingPolicy
    from attnbench.bench.verify import compare_outputs
    from attnbench.cases.inputs import seeded_testcase
    from attnbench.cases.reference import reference_output
    from attnbench.cases.suite import get_case, input_path
    from attnbench.cases.testcase import Shape, read_testcase
    from attnbench.kernels import wgmma3x
    from attnbench.kernels.catalogue import get_variant
    from attnbench.results.metadata import collect

    def load(case: str):
        if re.fullmatch(r"\d+x\d+x\d+", case):
            return seeded_testcase(Shape.parse(case), 0)
        return read_testcase(input_path(get_case(case)))

    gpu = Gpu(0)
    chooser = wgmma3x._wgmma3x_splits
    variant = get_variant("wgmma3x")
    rows = []
    try:
        for case in cases:
            testcase = load(case)
            reference = reference_output(testcase)
            picked = chooser(testcase.shape)
            for count in counts:
                wgmma3x._wgmma3x_splits = lambda shape, count=count: count  # the grid's z, read at launch
                run = run_cell(variant, WholeInput(testcase, case), gpu, TimingPolicy(),
                                  lambda out: compare_outputs(out, reference), gate=True)
                report = compare_outputs(run.output, reference)
                rows.append({"case": case, "shape": f"{testcase.shape.B}, {testcase.shape.N}, {testcase.shape.d}",
                             "splits": count, "picked": picked, "passed": bool(report.passed and run.measurement),
                             "median_ms": run.measurement.kernel.median if run.measurement else None,
                             "rel_l2": report.rel_l2_error})
                print(f"{case} {count} parts: {rows[-1]['median_ms']} ms, relL2 {report.rel_l2_error:.2e}", flush=True)
    finally:
        wgmma3x._wgmma3x_splits = chooser
    return rows, collect(gpu, command="tools/lab/key_split_sweep.py " + " ".join(sys.argv[1:]))


def one_pass(B: int, N: int, d: int, parts: int, blocks: int = 0) -> bool:
    """One wgmma3x pass in `parts` key parts on a seeded random input, checked against float64; with
    `blocks`, the persistent grid's block count forced too (each block then runs many units, and the
    pre-pass kernel splits only the items of those blocks' first two rounds)."""
    import numpy as np

    from attnbench.backends.gpu import Gpu
    from attnbench.bench.first_pass import WholeInput
    from attnbench.bench.runner import run_cell
    from attnbench.bench.sampler import TimingPolicy
    from attnbench.bench.verify import compare_outputs
    from attnbench.cases.reference import reference_output
    from attnbench.cases.testcase import Testcase
    from attnbench.kernels import wgmma3x
    from attnbench.kernels.catalogue import get_variant

    wgmma3x._wgmma3x_splits = lambda shape: parts
    if blocks:
        wgmma3x._wgmma3x_blocks = lambda shape, sms=132: min(blocks, wgmma3x._wgmma3x_units(shape))
    testcase = Testcase(np.random.default_rng(5).standard_normal((B, 3, N, d)).astype(np.float32))
    run = run_cell(get_variant("wgmma3x"), WholeInput(testcase, "random"), Gpu(0), TimingPolicy(warmup=0, reps=1, flush_l2=False))
    report = compare_outputs(run.output, reference_output(testcase))
    print(f"B={B} N={N} d={d} in {parts} parts{f' on {blocks} blocks' if blocks else ''}: relL2 {report.rel_l2_error:.2e}, "
          f"{'passed' if report.passed else 'FAILED'}, {report.nan_count} NaN")
    return report.passed and report.rel_l2_error <= 1e-5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path, nargs="?")
    parser.add_argument("cases", nargs="*")
    parser.add_argument("--splits", default="1,2,3,4")
    parser.add_argument("--summary", type=Path, help="print the table of a saved sweep")
    parser.add_argument("--one-pass", help="B,N,d,PARTS[,BLOCKS]: one checked pass, nothing saved")
    args = parser.parse_args()
    if args.one_pass is not None:
        return 0 if one_pass(*(int(v) for v in args.one_pass.split(","))) else 1
    if args.summary is not None:
        rows = json.loads(args.summary.read_text())["rows"]
    else:
        if args.outdir is None or not args.cases:
            parser.error("give OUTDIR and the cases, or --summary FILE")
        rows, metadata = measure(args.cases, [int(k) for k in args.splits.split(",")])
        args.outdir.mkdir(parents=True, exist_ok=True)
        (args.outdir / "key_split_sweep.json").write_text(strict_json.dumps({"metadata": metadata, "rows": rows}))
    lines, ok = summary(rows)
    if args.summary is None:
        gpu = (metadata.get("gpu") or {}).get("name", "unknown GPU")
        head = [f"# wgmma3x's key split, forced to each count ({gpu}, {metadata['date']})", "",
                "From `key_split_sweep.json`, made by `tools/lab/key_split_sweep.py`. Medians of the runner's samples "
                "(L2 flushed); each run's first pass checked against float64.", ""]
        (args.outdir / "key_split_sweep.md").write_text("\n".join(head + lines) + "\n")
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    from attnbench.errors import AttnbenchError

    try:
        sys.exit(main())
    except AttnbenchError as exc:  # no GPU, no pycuda, a case not generated: one sentence, its exit code
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
