"""The roofline plot: TFLOP/s against arithmetic intensity, the GPU's measured ceilings as roofs.

Arithmetic intensity is 4*B*N^2*d FLOPs over the minimal bytes (Q, K, V read and O written once,
float32: 16*B*N*d), which is N/4 FLOP per byte whatever B and d. Each roof is min(compute ceiling,
intensity x DRAM bandwidth) for one unit a variant can run on (FP32 FFMA, TF32 mma.sync, 3xTF32 at a
third of it). The ceilings come from the result's metadata (saved when `attnbench ceilings` had
measured that GPU and driver), else the newest cached for that GPU, else the datasheet's peaks of the
same units from the GPU's facts in the metadata (the FP32 peak alone for results saved before those
facts were), labelled.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnbench.results.ceilings import CeilingSet, minimal_bytes, newest_for_name
from attnbench.results.compute_units import COMPUTE_UNITS
from attnbench.results.datasheet import DeviceFacts, dram_bandwidth, unit_peak
from attnbench.results.resultset import ResultSet


def intensity(B: int, N: int, d: int) -> float:
    """FLOPs per minimal DRAM byte of one attention pass."""
    return 4 * B * N * N * d / minimal_bytes(B, N, d)


@dataclass(frozen=True)
class Roof:
    label: str
    tflops: float  # the flat part
    bandwidth_gbs: float | None  # the sloped part; None when no bandwidth was measured
    measured: bool


def ceilings_of(result: ResultSet) -> CeilingSet | None:
    """The ceilings saved with the result, or the newest cached for its GPU (any driver)."""
    saved = result.metadata.get("ceilings")
    if saved:
        try:
            return CeilingSet.from_dict(saved)
        except (ValueError, KeyError, TypeError):
            pass
    return newest_for_name((result.metadata.get("gpu") or {}).get("name"))


def facts_of(gpu: dict[str, Any]) -> DeviceFacts | None:
    """The datasheet facts of a result's GPU metadata; None when it lacks them (saved before they were)."""
    try:
        capability = tuple(int(part) for part in str(gpu["compute_capability"]).split("."))
        return DeviceFacts(str(gpu["name"]), capability, int(gpu["sm_count"]),  # type: ignore[arg-type]
                           round(float(gpu["sm_clock_mhz"]) * 1e3), int(gpu["l2_bytes"]),
                           round(float(gpu["memory_clock_mhz"]) * 1e3), int(gpu["memory_bus_bits"]))
    except (KeyError, TypeError, ValueError):
        return None


def datasheet_roofs(facts: DeviceFacts) -> list[Roof]:
    """The datasheet's peak of each unit the variants run on, with the datasheet's DRAM bandwidth."""
    bandwidth = dram_bandwidth(facts)
    gbs = bandwidth / 1e9 if bandwidth else None
    peaks = (unit_peak(name, facts) for name, unit in COMPUTE_UNITS.items() if unit.roof)
    named = dict(peak for peak in peaks if peak is not None)  # 3xTF32's peak is one, on mma.sync or wgmma
    return [Roof(f"{name}: {value / 1e12:.0f} TFLOP/s (datasheet)", value / 1e12, gbs, False)
            for name, value in named.items()]


def roofs(result: ResultSet) -> list[Roof]:
    """The roofs to draw for a result's GPU."""
    found = ceilings_of(result)
    if found is None:
        gpu = result.metadata.get("gpu") or {}
        facts = facts_of(gpu)
        if facts is not None:
            return datasheet_roofs(facts)
        peak = gpu.get("fp32_peak_tflops")
        return [Roof("FP32 peak from the clocks (datasheet; run `attnbench ceilings`)", float(peak), None, False)] if peak else []
    dram = found.get("dram_copy")
    bandwidth = dram.value if dram else None
    out = []
    for unit in (unit for unit in COMPUTE_UNITS.values() if unit.roof):
        ceiling = found.get(unit.ceiling_key)
        if ceiling is not None and ceiling.value > 0:
            value = unit.share_of(ceiling.value)
            out.append(Roof(f"{unit.ceiling_label}: {value:.0f} TFLOP/s", value, bandwidth, True))
    wgmma = found.get("tf32_wgmma")  # Hopper's faster tensor path, 1x
    if wgmma is not None and wgmma.value > 0:
        out.append(Roof(f"TF32 wgmma: {wgmma.value:.0f} TFLOP/s", wgmma.value, bandwidth, True))
    return out


def points(results: list[ResultSet]) -> list[tuple[str, str, float, float]]:
    """(variant, case, intensity, TFLOP/s) for every timed cell."""
    out = []
    for result in results:
        for cell in result.cells:
            if cell.ok and cell.measurement is not None:
                s = cell.measurement.shape
                out.append((cell.variant, cell.case, intensity(s.B, s.N, s.d), cell.measurement.tflops))
    return out


def roofline_plot(results: list[ResultSet], path: Path) -> Path:
    """Write the roofline of the results (all from one GPU: the first result's ceilings are drawn)."""
    from attnbench.output.plots.figures import pyplot, save_figure

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(10, 6.5))
    found = points(results)
    xs = [p[2] for p in found] or [1.0]
    low, high = min(xs) / 4, max(xs) * 4
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles = ["-", "--", ":", "-."]
    result_roofs = roofs(results[0]) if results else []
    import numpy as np

    knees = [r.tflops * 1e3 / r.bandwidth_gbs for r in result_roofs if r.bandwidth_gbs]
    low = min([low, *(k / 8 for k in knees)])  # show where each roof bends
    grid = np.geomspace(low, high, 200)
    for i, roof in enumerate(result_roofs):
        ys = np.full_like(grid, roof.tflops) if roof.bandwidth_gbs is None else np.minimum(
            roof.tflops, grid * roof.bandwidth_gbs / 1e3)
        ax.plot(grid, ys, color="black", linestyle=styles[i % len(styles)], linewidth=1.2, label=roof.label)
    if result_roofs and result_roofs[0].bandwidth_gbs:
        x = grid[0] * 1.5
        ax.text(x, x * result_roofs[0].bandwidth_gbs / 1e3 * 1.4, f"DRAM {result_roofs[0].bandwidth_gbs:,.0f} GB/s (copy)",
                fontsize=8, color="dimgray")
    variants = list(dict.fromkeys(p[0] for p in found))
    markers = "osD^v<>pPX*h"
    for i, variant in enumerate(variants):
        mine = [p for p in found if p[0] == variant]
        ax.scatter([p[2] for p in mine], [p[3] for p in mine], color=colours[i % len(colours)],
                   marker=markers[i % len(markers)], s=36, label=variant, zorder=3)
        for _, case, x, y in mine:
            ax.annotate(case, (x, y), textcoords="offset points", xytext=(4, 3), fontsize=6, color="dimgray")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low, high)
    ax.set_xlabel("arithmetic intensity (FLOP per minimal DRAM byte: 4·B·N²·d / 16·B·N·d = N/4)")
    ax.set_ylabel("TFLOP/s (4·B·N²·d / kernel time)")
    gpu = ((results[0].metadata.get("gpu") or {}).get("name", "CPU")) if results else "-"
    measured = bool(result_roofs and result_roofs[0].measured)
    ax.set_title(f"Roofline — {gpu} ({'measured ceilings' if measured else 'no measured ceilings'})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right", ncol=2)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path
