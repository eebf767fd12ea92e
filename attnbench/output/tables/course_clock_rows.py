"""The rows of the run table for a pipelined first pass: each stage's busy time, the wall time, the bound.

`run_tables.measurement_table` calls this when the measurement has a course clock (see
`attnbench.results.course_clock` for the definitions).
"""

from __future__ import annotations

from attnbench.output.tables.result_tables import format_s
from attnbench.output.tables.table_model import TableModel
from attnbench.results.course_clock import STAGE_NAMES, CourseClock


def _rate(value: float | None) -> str:
    return f"{value:.1f} GB/s" if value is not None else "-"


def course_clock_rows(table: TableModel, c: CourseClock, compile_s: float) -> None:
    """The pipelined first pass: each stage's own busy time (they overlap), then the wall time."""
    table.add_row("input", format_s(c.read_s), f"reading the file into the pinned ring, {_rate(c.read_gbps)} (busy time)")
    table.add_row("compute", format_s(c.compute_s),
                  f"device allocation {c.device_alloc_s:.3f} s + GPU busy {c.device_busy_s:.3f} s (copies and kernels, overlapped)")
    table.add_row("  H2D", format_s(c.h2d_s), f"host-to-device, {_rate(c.h2d_gbps)} from pinned buffers")
    table.add_row("  kernels", format_s(c.kernel_s), f"the first pass, chunk by chunk ({c.chunks} chunks)")
    table.add_row("  D2H", format_s(c.d2h_s), f"device-to-host, {_rate(c.d2h_gbps)} into pinned buffers")
    keep = (f"; scanning for NaN/Inf (and keeping a copy for --check) {c.keep_s:.3f} s on its own thread, "
            "overlapped" if c.keep_s else "")
    table.add_row("output", format_s(c.write_s), f"writing the output file, {_rate(c.write_gbps)} (busy time){keep}")
    table.add_row("total", format_s(c.wall_s),
                  f"first pass: wall time of its pipeline, setup {c.setup_s:.3f} s included (device buffers, pinned ring); "
                  f"compile {compile_s:.3f} s not included")
    bound = c.busy(c.bound)
    share = f"; the wall is {c.wall_s / bound:.2f}x its busy time" if bound > 0 else ""
    table.add_row("bound by", STAGE_NAMES[c.bound], f"the stage with the most busy time{share}")
    table.add_row("pipeline", f"{c.chunks} x {c.items_per_chunk}",
                  f"chunks x batch items; ring of {c.ring_depth} ({c.ring_bytes / 2**20:.1f} MiB pinned); "
                  "--no-pipeline runs the stages one after another")
