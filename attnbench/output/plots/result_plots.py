"""Plots as PNG files (matplotlib, the optional `plot` extra, imported inside each function).

- throughput against size per variant on log axes, for sweeps (as report 002 drew its Gflop/s);
- the ladder: each step's time relative to the first step, per input, beside report 004's claims;
- each variant's TFLOP/s against the device's measured ceilings;
- the precision ladder: worst error over the tolerance against speed (`precision_ladder`).
"""

from __future__ import annotations

import math
from pathlib import Path

from attnbench.analysis.ladder import LadderStep, has_ladder, ladder_steps, load_claims
from attnbench.analysis.view import MatrixView
from attnbench.cases.sweeps import sweep_axis as sweep_axis_named
from attnbench.output.plots.figures import plots_available, pyplot, save_figure  # noqa: F401  (report and tests reach them here)
from attnbench.output.plots.precision_ladder import error_vs_speed, has_precision_ladder
from attnbench.output.plots.roofline import roofs
from attnbench.results.resultset import ResultKind, ResultSet


def sweep_axis(result: ResultSet) -> str:
    """Which size a sweep varies: 'n' (square), 'N' or 'd'."""
    try:
        return sweep_axis_named(str(result.settings.sweep)).plot_label
    except ValueError:  # not a sweep's settings: its sizes are read as N
        return "N"


def throughput_vs_size(result: ResultSet, path: Path) -> Path:
    """TFLOP/s against the swept size, one line per variant, log-log."""
    plt = pyplot()
    axis = sweep_axis(result)
    fig, ax = plt.subplots(figsize=(10, 6))
    for variant in result.variant_names:
        points = []
        for label in result.case_labels:
            cell, case = result.cell(variant, label), result.case(label)
            if cell is None or not cell.ok or case is None or cell.measurement is None:
                continue
            size = case.shape.d if axis == "d" else case.shape.N
            points.append((size, cell.measurement.tflops))
        if points:
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3, linewidth=1, label=variant)
    ax.set_xscale("log")
    ax.set_yscale("log")
    what = {"n": "n (Q, K, V all n x n)", "N": "sequence length N", "d": "head dimension d"}[axis]
    ax.set_xlabel(what)
    ax.set_ylabel("TFLOP/s (4·B·N²·d / kernel time)")
    gpu = (result.metadata.get("gpu") or {}).get("name", "CPU")
    ax.set_title(f"Throughput against size — {gpu}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


def ladder_bars(steps_by_case: dict[str, list[LadderStep]], path: Path, gpu: str) -> Path:
    """Per input, each step's time relative to the first timed step, with report 004's claims beside."""
    plt = pyplot()
    claims = load_claims()
    cases = list(steps_by_case)
    columns = min(3, len(cases))
    rows = math.ceil(len(cases) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(6 * columns, 4.2 * rows), squeeze=False)
    for ax, case in zip(axes.flat, cases):
        steps = [s for s in steps_by_case[case] if s.kernel_ms is not None]
        # Both series are relative to one step: the first with a claim, so that they share a reference.
        anchor = next((s for s in steps if s.claimed_s is not None), steps[0])
        x = range(len(steps))
        ours = [s.kernel_ms / anchor.kernel_ms for s in steps]  # type: ignore[operator]
        ax.bar([i - 0.2 for i in x], ours, width=0.4, color="tab:blue")
        if anchor.claimed_s is not None:
            claimed = [s.claimed_s / anchor.claimed_s if s.claimed_s is not None else 0.0 for s in steps]
            ax.bar([i + 0.2 for i in x], claimed, width=0.4, color="tab:orange")
        for i, s in enumerate(steps):
            if s.vs_previous is not None:
                ax.annotate(f"{s.vs_previous.speedup:.2g}x", (i - 0.2, ours[i]), ha="center", va="bottom", fontsize=7)
        ax.set_yscale("log")
        ax.set_xticks(list(x))
        ax.set_xticklabels([s.variant for s in steps], rotation=45, ha="right")
        ax.set_title(f"{case}: time relative to {anchor.variant}")
        ax.grid(True, axis="y", which="both", alpha=0.3)
    for ax in list(axes.flat)[len(cases):]:
        ax.axis("off")
    from matplotlib.patches import Patch

    handles = [Patch(color="tab:blue", label=f"measured kernel time ({gpu})"),
               Patch(color="tab:orange", label=f"report 004 computing time ({claims.device})")]
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=9)
    fig.suptitle("The optimisation ladder: time relative to one step, the first with a report 004 claim "
                 "(log scale; labels: measured speedup over the step before)")
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


def device_ceilings(result: ResultSet) -> list[tuple[str, float]]:
    """The ceilings of the result's GPU, each named with its value, in TFLOP/s: the roofline's roofs (its
    measured ceilings per compute unit, else its datasheet peaks, else its FP32 peak from the clocks)."""
    return [(roof.label, roof.tflops) for roof in roofs(result)]


def ceilings_chart(result: ResultSet, path: Path) -> Path:
    """Each variant's geometric-mean and best TFLOP/s against the device's ceilings (log scale)."""
    plt = pyplot()
    view = MatrixView(result)
    names, geo, best = [], [], []
    for variant in result.variant_names:
        rates = [c.measurement.tflops for c in result.cells if c.variant == variant and c.ok and c.measurement]
        if rates:
            names.append(variant)
            geo.append(view.geomean_tflops(variant))
            best.append(max(rates))
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(names) + 2.5))
    y = list(range(len(names)))
    ax.barh(y, geo, label="geometric mean over the inputs")
    ax.scatter(best, y, color="black", marker="|", s=200, label="best input", zorder=3)
    ceilings = device_ceilings(result)
    for label, tflops in ceilings:
        ax.axvline(tflops, linestyle="--", linewidth=1, color="gray")
        ax.text(tflops, 0.99, f" {label} ", transform=ax.get_xaxis_transform(), rotation=90,
                ha="right", va="top", fontsize=7, color="dimgray")
    low = min([*geo, *best]) / 2
    high = max([*best, *(t for _, t in ceilings)]) * 1.5
    ax.set_xlim(low, high)
    ax.set_yticks(y)
    ax.set_yticklabels(names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("TFLOP/s (4·B·N²·d / kernel time)")
    gpu = (result.metadata.get("gpu") or {}).get("name", "CPU")
    ax.set_title(f"Variants against the ceilings — {gpu}")
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


# the tails plots_for adds to a saved run's stem: a run saved with --plot takes a stem none of them names
PLOT_SUFFIXES = ("_throughput.png", "_ceilings.png", "_roofline.png", "_ladder.png", "_precision.png")


def plots_for(result: ResultSet, folder: Path, stem: str) -> list[Path]:
    """Every plot that fits a result set, written as stem_<plot>.png in `folder` (each tail in PLOT_SUFFIXES)."""
    written = []
    if result.kind is ResultKind.SWEEP:
        written.append(throughput_vs_size(result, folder / f"{stem}_throughput.png"))
    if any(c.ok for c in result.cells):
        written.append(ceilings_chart(result, folder / f"{stem}_ceilings.png"))
        from attnbench.output.plots.roofline import roofline_plot

        written.append(roofline_plot([result], folder / f"{stem}_roofline.png"))
    if has_ladder(result):
        gpu = (result.metadata.get("gpu") or {}).get("name", "CPU")
        written.append(ladder_bars(ladder_steps(result), folder / f"{stem}_ladder.png", gpu))
    if has_precision_ladder(result):
        written.append(error_vs_speed(result, folder / f"{stem}_precision.png"))
    return written
