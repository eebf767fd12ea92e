"""A/B of one built-in variant: this tree's build against an older revision's, in one process on one GPU.

    git archive REV attnbench cuda | tar -x -C OLDTREE
    python3 tools/lab/kernel_ab.py OLDTREE OUTDIR --variant wgmma3x --shapes 500x2048x64,10x2048x64 [--rounds 2]
        [--extra NAME=FILE ...]

The older revision's host module of the variant (OLDTREE/attnbench/kernels/<module>.py, found by the
variant's name) is loaded beside this tree's package, so the old build keeps its own launches,
workspaces and defines; its kernel file comes from OLDTREE/cuda. Each --extra build is this tree's variant
built from another kernel file (a candidate with the same kernels and arguments). Each shape gets fresh random inputs in
the course's range and one float64 reference (the GPU's where there is one); each round runs the builds in turn (old then new, then the
other way round), each through the runner as any variant is run: the first pass checked against float64
and gated, samples with the L2 flushed, each on a fresh input and checked. Rounds and builds share the GPU's state, so
compare builds within this run, not across runs. Writes OUTDIR/kernel_ab.json (every round) and
OUTDIR/kernel_ab.md (the faster round of each build). Exit 1 if any build was wrong on any shape, 3 without
a usable GPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from attnbench import strict_json  # noqa: E402
from attnbench.cases.testcase import Shape, Testcase  # noqa: E402
from attnbench.errors import AttnbenchError  # noqa: E402
from attnbench.kernels.variant import Variant  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def old_variant(old_tree: Path, name: str) -> Variant:
    """The variant `name` as OLDTREE's host code declares it, built from OLDTREE's kernel file."""
    for path in sorted((old_tree / "attnbench" / "kernels").glob("*.py")):
        if f'name="{name}"' not in path.read_text():  # the module that declares it, not one that imports it
            continue
        spec = importlib.util.spec_from_file_location(f"attnbench.kernels._ab_old_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for value in vars(module).values():
            if isinstance(value, Variant) and value.name == name and value.source is not None:
                return dataclasses.replace(value, name=f"{name}@old", source_path=old_tree / "cuda" / value.source)
    raise SystemExit(f"kernel_ab: {old_tree} declares no built-in variant named {name!r}")


def parse_shape(text: str) -> Shape:
    try:
        return Shape.parse(text)
    except ValueError as exc:
        raise SystemExit(f"kernel_ab: {exc}") from None


def run_once(variant: Variant, testcase: Testcase, reference: np.ndarray, gpu, policy) -> dict:
    from attnbench.bench.first_pass import WholeInput
    from attnbench.bench.runner import run_cell
    from attnbench.bench.verify import compare_outputs

    try:
        run = run_cell(variant, WholeInput(testcase, "random"), gpu, policy, lambda out: compare_outputs(out, reference), gate=True)
    except AttnbenchError as exc:  # a build that fails to compile or faults: recorded, and the run stops
        return {"passed": False, "rel_l2": float("nan"), "max_abs_error": float("nan"), "median_ms": None,
                "noise": None, "timed_check": None, "error": str(exc)}
    report = run.check
    row = {"passed": bool(report.passed), "rel_l2": report.rel_l2_error, "max_abs_error": report.max_abs_error,
           "median_ms": None, "noise": None, "timed_check": None}
    if run.measurement is not None:
        noise = run.measurement.kernel.noise
        row.update(median_ms=run.measurement.kernel.median, noise=noise if math.isfinite(noise) else None,
                   timed_check=run.measurement.timed_check.describe() if run.measurement.timed_check else None)
    return row


def table(rows: list[dict], builds: list[str]) -> list[str]:
    lines = ["| case (B, N, d) | " + " | ".join(f"{b} ms (vs old)" for b in builds) + " | "
             + " | ".join(f"{b} TFLOP/s" for b in builds) + " | " + " | ".join(f"{b} relL2" for b in builds) + " |",
             "| --- | " + " | ".join("---:" for _ in range(3 * len(builds))) + " |"]
    for shape in dict.fromkeys(r["shape"] for r in rows):
        best = {}
        for b in builds:
            mine = [r for r in rows if r["shape"] == shape and r["build"] == b and r["median_ms"] is not None]
            best[b] = min(mine, key=lambda r: r["median_ms"]) if mine else None
        base = best[builds[0]]["median_ms"] if best[builds[0]] else None
        flops = 4 * shape[0] * shape[1] ** 2 * shape[2]
        ms = [(f"{best[b]['median_ms']:.4f}" + (f" ({best[b]['median_ms'] / base - 1:+.1%})" if base else "")) if best[b]
              else "WRONG" for b in builds]
        tf = [f"{flops / best[b]['median_ms'] / 1e9:.1f}" if best[b] else "-" for b in builds]
        err = [f"{min(r['rel_l2'] for r in rows if r['shape'] == shape and r['build'] == b):.2e}" for b in builds]
        lines.append(f"| {shape} | " + " | ".join(ms + tf + err) + " |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old_tree", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--variant", required=True)
    parser.add_argument("--shapes", required=True, help="comma-separated BxNxd")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--extra", action="append", default=[], metavar="NAME=FILE",
                        help="one more build: this tree's host facts with the kernel file FILE")
    args = parser.parse_args()
    shapes = [parse_shape(s) for s in args.shapes.split(",")]
    from attnbench.kernels.catalogue import get_variant

    builds = {"old": old_variant(args.old_tree, args.variant), "new": get_variant(args.variant)}
    for extra in args.extra:
        label, _, path = extra.partition("=")
        if not label or not Path(path).is_file():
            raise SystemExit(f"kernel_ab: --extra {extra!r} is not NAME=FILE with an existing FILE")
        builds[label] = dataclasses.replace(builds["new"], name=f"{args.variant}@{label}", source_path=Path(path).resolve())
    from attnbench.backends.gpu import Gpu, gpu_probe

    reason = gpu_probe()
    if reason is not None:
        print(f"kernel_ab: no usable GPU: {reason}", file=sys.stderr)
        return 3
    from attnbench.bench.sampler import TimingPolicy
    from attnbench.cases.gpu_reference import float64_reference  # t29's on the CPU would take 26 s

    policy = TimingPolicy(timeout_s=3.0)
    gpu, rng, rows = Gpu(0), np.random.default_rng(args.seed), []
    try:
        for shape in shapes:
            testcase = Testcase(rng.uniform(-3.0, 3.0, size=(shape.B, 3, shape.N, shape.d)).astype(np.float32))
            reference = float64_reference(testcase)
            for round_ in range(args.rounds):
                order = list(builds) if round_ % 2 == 0 else list(reversed(builds))
                for build in order:
                    row = run_once(builds[build], testcase, reference, gpu, policy)
                    rows.append({"shape": (shape.B, shape.N, shape.d), "build": build, "round": round_, **row})
                    if "error" in row:
                        print(f"{build} on {shape}: {row['error']}", file=sys.stderr)
                        raise SystemExit(1)  # the context may be lost: no later run would mean anything
                    ms = f"{row['median_ms']:.4f} ms" if row["median_ms"] is not None else "no time"
                    print(f"{build} on {shape}: {ms}, relL2 {row['rel_l2']:.2e}, "
                          f"{'PASS' if row['passed'] else 'WRONG'}", flush=True)
    finally:
        gpu.close()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "attnbench", "cuda"], cwd=ROOT, capture_output=True).returncode
    if commit and dirty:  # the new build is the working tree, not HEAD's
        commit += " with uncommitted changes to attnbench/ or cuda/"
    args.out_dir.mkdir(parents=True, exist_ok=True)
    meta = {"variant": args.variant, "gpu": gpu.name, "date": datetime.date.today().isoformat(), "commit": commit or None,
            "old_tree": str(args.old_tree)}
    (args.out_dir / "kernel_ab.json").write_text(strict_json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [f"# {args.variant}: A/B on {gpu.name} ({meta['date']}, tree {commit or 'unknown'})", "",
             "Faster of the rounds per build; every pass checked against float64.", "", *table(rows, list(builds))]
    (args.out_dir / "kernel_ab.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if all(r["passed"] and r["median_ms"] is not None for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
