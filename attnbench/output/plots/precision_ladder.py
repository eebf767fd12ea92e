"""The precision ladder, drawn: each variant's worst error over the tolerance against its speed
(`attnbench.analysis.precision`), the course rule as a line at 1.0, the Pareto front marked (its table is `result_tables.precision_table`).

The plot reads left to right as the ladder climbs: TFLOP/s on a log x axis, the worst error over the tolerance
on a log y axis, so a variant that passes sits under the red line and a faster one further right. A variant
whose every checked cell was WRONG has no speed (a wrong output is not timed): it is drawn at its error in a
strip of its own at the left, marked "no speed", rather than at a speed it never showed.
"""

from __future__ import annotations

from pathlib import Path

from attnbench.analysis.precision import PrecisionPoint, pareto_front, precision_points, spans_precisions
from attnbench.output.plots.figures import pyplot, save_figure
from attnbench.results.resultset import ResultSet

# Shares below this are drawn at it: a log axis has no zero, and an error of a few 1e-9 against 5e-3
# (float32 on small cases) says no more than "far under the rule".
SHARE_FLOOR = 1e-5


def has_precision_ladder(result: ResultSet) -> bool:
    """Whether the result holds variants of two arithmetics or more with an error share to draw (an absolute
    check's worst error): the same rule as its table's."""
    return spans_precisions(precision_points(result))


def _label(point: PrecisionPoint) -> str:
    label = f"{point.variant} ({point.arithmetic})" if point.arithmetic else point.variant
    if point.worst_share == float("inf"):
        label += ", NaN or Inf (drawn at 1000)"
    if point.wrong and point.tflops is not None:
        label += f", WRONG on {point.wrong} of {point.checked}: speed of the {point.timed} timed"
    return label


def _drawn_share(point: PrecisionPoint) -> float:
    """Where the point's error is drawn: a NaN or Inf output (an infinite error) far above the rule."""
    return max(SHARE_FLOOR, point.worst_share) if point.worst_share != float("inf") else 1e3


def _style(point: PrecisionPoint) -> dict:
    if point.passes:
        return {"marker": "o", "color": "tab:blue"}
    return {"marker": "X", "color": "tab:red"}


def error_vs_speed(result: ResultSet, path: Path) -> Path:
    """The plot, written as a PNG to `path`."""
    plt = pyplot()
    points = precision_points(result)
    timed = [p for p in points if p.tflops is not None]
    untimed = [p for p in points if p.tflops is None]
    if untimed:
        fig, (strip, ax) = plt.subplots(1, 2, sharey=True, figsize=(12, 7),
                                        gridspec_kw={"width_ratios": [1.3, 7], "wspace": 0.04})
    else:
        fig, ax = plt.subplots(figsize=(11, 7))
        strip = None
    atol = max((p.atol for p in points), default=0.0)
    for a in [ax] + ([strip] if strip is not None else []):
        a.axhline(1.0, color="tab:red", linewidth=1.5)
        a.axhline(0.5, color="tab:red", linewidth=1, linestyle=":")
        a.set_yscale("log")
        a.grid(True, which="both", alpha=0.25)
    ax.text(0.995, 1.0, f"the course rule: every element within {atol:g} ", transform=ax.get_yaxis_transform(),
            ha="right", va="bottom", fontsize=8, color="tab:red")
    ax.text(0.995, 0.5, "half of it: the margin a course-accuracy variant keeps ", transform=ax.get_yaxis_transform(),
            ha="right", va="top", fontsize=7, color="tab:red")
    for p in timed:
        ax.scatter([p.tflops], [_drawn_share(p)], s=60, zorder=3, **_style(p))
        ax.annotate(_label(p), (p.tflops, _drawn_share(p)), textcoords="offset points", xytext=(6, 4), fontsize=7)
    front = pareto_front(points)
    if front:
        ax.plot([p.tflops for p in front], [_drawn_share(p) for p in front], color="black", linewidth=1,
                linestyle="--", zorder=2, label="Pareto front: no variant both faster and more accurate")
        ax.scatter([p.tflops for p in front], [_drawn_share(p) for p in front], s=180, facecolors="none",
                   edgecolors="black", zorder=4)
    if timed:
        from matplotlib.ticker import FuncFormatter

        ax.set_xscale("log")
        rates = [p.tflops for p in timed]
        ax.set_xlim(min(rates) / 1.6, max(rates) * 2.5)  # room for the labels on the right
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        # minor ticks named at 2, 3 and 5 times a power of ten only: the others crowd the axis
        ax.xaxis.set_minor_formatter(FuncFormatter(
            lambda value, _: f"{value:g}" if f"{value:.0e}"[0] in "235" else ""))
    else:
        ax.set_xticks([])
        ax.text(0.5, 0.5, "no variant was timed on any case", transform=ax.transAxes, ha="center", color="dimgray")
    ax.set_xlabel("TFLOP/s (4·B·N²·d / kernel time; geometric mean over each variant's timed cases)")
    if strip is not None:
        for i, p in enumerate(untimed):
            strip.scatter([i], [_drawn_share(p)], s=60, zorder=3, **_style(p))
            name = p.variant + (" (NaN or Inf)" if p.worst_share == float("inf") else "")
            strip.annotate(name, (i, _drawn_share(p)), textcoords="offset points", xytext=(4, 4), fontsize=7,
                           rotation=30)
        strip.set_xlim(-0.6, len(untimed) - 0.4 + 0.6)
        strip.set_xticks([])
        strip.set_xlabel("no speed:\nWRONG on every case\n(a wrong output\nis not timed)", fontsize=8)
        strip.set_ylabel("worst element error / tolerance (log)")
    else:
        ax.set_ylabel("worst element error / tolerance (log)")
    shares = [_drawn_share(p) for p in points]
    ax.set_ylim(min([*shares, 0.5]) / 3, max([*shares, 1.0]) * 3)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker="o", color="tab:blue", linestyle="", label="passes on every case"),
               Line2D([], [], marker="X", color="tab:red", linestyle="", label="WRONG on some case (worst error shown)")]
    if front:
        handles.append(Line2D([], [], color="black", linestyle="--", marker="o", markerfacecolor="none",
                              label="Pareto front: no other variant both faster and more accurate"))
    # below the axes: inside, it would cover a point or its label wherever the ladder puts them
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=3, fontsize=8, frameon=False)
    gpu = (result.metadata.get("gpu") or {}).get("name", "CPU")
    fig.suptitle(f"The precision ladder: worst error against speed, one point per variant — {gpu}")
    save_figure(fig, path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path

