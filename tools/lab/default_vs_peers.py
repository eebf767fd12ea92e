"""The default variant against the peers, from a saved compare that holds the default's candidates.

    python3 tools/lab/default_vs_peers.py RESULTS.json [--peers torch,triton] [--capability 9.0] > OUT.md

For each case: which built-in `attnbench run` picks by default on a GPU of that compute capability
(kernels.catalogue.default_variant), its median, its speedup over each peer, and whether it is the
fastest of the built-in variants the compare timed on that case (the pick's loss where it is not). Then
the geometric mean and the minimum of each speedup. Exit 1 when the compare lacks the pick on a case.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from attnbench.analysis.verdict import geometric_mean  # noqa: E402
from attnbench.api import load_results  # noqa: E402
from attnbench.kernels.catalogue import REGISTRY, default_variant  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("results")
    parser.add_argument("--peers", default="torch,triton")
    parser.add_argument("--capability", default="9.0")
    args = parser.parse_args()
    capability = tuple(int(x) for x in args.capability.split("."))
    saved = load_results(args.results)
    peers = [p for p in args.peers.split(",") if p]
    medians: dict[tuple[str, str], float] = {}
    for cell in saved.cells:
        if cell.measurement is not None and cell.ok:
            medians[(cell.variant, cell.case)] = cell.measurement.kernel.median
    builtins = [v for v in saved.variant_names if v in REGISTRY and REGISTRY[v].kind.compiled]
    lines = [f"# The default variant against {', '.join(peers)}", "",
             f"From `{Path(args.results).name}` ({saved.metadata.get('gpu', {}).get('name', 'GPU')}); the default is "
             f"what `attnbench run` picks on compute capability {args.capability} (`kernels/catalogue.py`).", "",
             "| case | B, N, d | default | median ms | " + " | ".join(f"x {p}" for p in peers)
             + " | fastest timed built-in | default's loss |",
             "| --- | ---: | --- | ---: | " + " | ".join("---:" for _ in peers) + " | --- | ---: |"]
    speedups: dict[str, list[float]] = {p: [] for p in peers}
    missing = []
    for info in saved.cases:
        case, shape = info.label, info.shape
        pick = default_variant(shape, gpu_usable=True, compute_capability=capability).name
        mine = medians.get((pick, case))
        if mine is None:
            missing.append(f"{pick} on {case}")
            continue
        cells = []
        for peer in peers:
            theirs = medians.get((peer, case))
            if theirs is None:
                cells.append("-")
                continue
            speedups[peer].append(theirs / mine)
            cells.append(f"{theirs / mine:.2f}")
        timed = {v: medians[(v, case)] for v in builtins if (v, case) in medians}
        fastest = min(timed, key=timed.get)
        loss = f"{100 * (mine / timed[fastest] - 1):.1f}%" if fastest != pick else "-"
        lines.append(f"| {case} | {shape.B}, {shape.N}, {shape.d} | {pick} | {mine:.4g} | " + " | ".join(cells)
                     + f" | {fastest} | {loss} |")
    lines.append("")
    for peer, values in speedups.items():
        if values:
            lines.append(f"- over {peer}: geometric mean {geometric_mean(values):.2f}x, minimum {min(values):.2f}x, "
                         f"{sum(v < 2 for v in values)} of {len(values)} cases under 2x")
    if missing:
        lines.append(f"- not in the compare: {', '.join(missing)}")
    print("\n".join(lines))
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
