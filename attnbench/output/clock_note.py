"""The line under a compare's or sweep's tables that says which SM clock the timed cells ran at."""

from __future__ import annotations

from attnbench.results.resultset import ResultSet


def clock_note(result: ResultSet) -> str | None:
    """One line under a compare's tables: the SM clock the timed cells ran at; None when unknown."""
    clocks = [c.measurement.kernel.clock for c in result.cells if c.ok and c.measurement is not None]
    known = [c for c in clocks if c is not None]
    if not known:
        return None
    low, high = min(c.low for c in known), max(c.high for c in known)
    medians = sorted(c.median for c in known)
    middle = medians[len(medians) // 2]
    spread = f", {low:.0f}-{high:.0f} MHz over all samples" if high - low > 0 else ""
    return (f"SM clock (NVML, after each sample): {middle:.0f} MHz, the median of {len(known)} cells' medians{spread}; "
            "each cell's clocks are in the saved files")
