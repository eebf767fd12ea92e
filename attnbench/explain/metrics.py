"""The one table from friendly metric names to Nsight Compute metric names, per architecture.

Every counter `attnbench profile` shows is named here and nowhere else. A friendly metric is one ncu
metric, or the sum or ratio of two (sectors per request is sectors / requests). Names are those of
Nsight Compute 2023-2025 (`ncu --query-metrics`); where an architecture names a counter differently,
`ARCH_OVERRIDES` says so. Nsight Compute does not profile GPUs before Volta (sm_70).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Combine = Literal["value", "sum", "ratio"]


@dataclass(frozen=True)
class Metric:
    """A row of the profile table: how to compute it from ncu metrics, and how to print it."""

    key: str  # friendly name, used in --json and tests
    label: str  # the row label
    ncu: tuple[str, ...]  # the ncu metrics it needs
    combine: Combine = "value"
    unit: str = ""  # "ns", "B", "B/s", "%", "" (a count or a plain number)
    note: str = ""


_BASE: tuple[Metric, ...] = (
    Metric("duration", "duration", ("gpu__time_duration.sum",), unit="ns"),
    Metric("achieved_occupancy", "achieved occupancy", ("sm__warps_active.avg.pct_of_peak_sustained_active",), unit="%"),
    Metric("sm_throughput", "SM throughput", ("sm__throughput.avg.pct_of_peak_sustained_elapsed",), unit="%"),
    Metric("fma_pipe", "FMA pipe utilisation", ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",), unit="%"),
    Metric("tensor_pipe", "tensor pipe utilisation (mma.sync)",
           ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",), unit="%"),
    Metric("xu_pipe", "XU pipe utilisation (MUFU: exp2, rcp)",
           ("sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",), unit="%",
           note="a softmax's exponentials; 16 a clock per SM"),
    Metric("issue_active", "issue slots busy", ("smsp__issue_active.avg.pct_of_peak_sustained_active",), unit="%"),
    Metric("dram_bytes", "DRAM bytes", ("dram__bytes.sum",), unit="B"),
    Metric("dram_throughput", "DRAM throughput", ("dram__bytes.sum.per_second",), unit="B/s"),
    Metric("l2_hit_rate", "L2 hit rate", ("lts__t_sector_hit_rate.pct",), unit="%"),
    Metric("shared_ld_wavefronts", "shared load wavefronts", ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",)),
    Metric("shared_st_wavefronts", "shared store wavefronts", ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",)),
    Metric("shared_ld_conflicts", "shared load bank conflicts",
           ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",)),
    Metric("shared_st_conflicts", "shared store bank conflicts",
           ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",)),
    Metric("global_ld_sectors_per_request", "global load sectors / request",
           ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
           combine="ratio", note="4 is ideal for 32-bit loads (one 128-byte line per warp)"),
    Metric("global_st_sectors_per_request", "global store sectors / request",
           ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"),
           combine="ratio"),
    Metric("registers", "registers / thread", ("launch__registers_per_thread",)),
    Metric("smem_per_block", "shared memory / block",
           ("launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic"), combine="sum", unit="B"),
    Metric("local_bytes", "local memory traffic (spills)",
           ("l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum"),
           combine="sum", unit="B", note="ptxas's spill bytes are in `attnbench info`"),
)

# On Hopper the same counter counts wgmma's cycles too: Nsight Compute 2025 describes it as the tensor pipe's cycles
# active for "HMMA/HFMA2.MMA/HGMMA/QGMMA" and has no gmma-only cycles counter (sm__pipe_tensor_op_gmma_cycles_active,
# which this table asked for, was reported for no kernel on an H200, wgmma's included).
ARCH_OVERRIDES: dict[str, tuple[Metric, ...]] = {
    "sm_90": (
        Metric("tensor_pipe", "tensor pipe utilisation (mma.sync and wgmma)",
               ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",), unit="%"),
    ),
}

PROFILABLE_FROM = (7, 0)


def metric_table(arch: str) -> list[Metric]:
    """The metrics to collect on `arch` (sm_XY): the base table, then that architecture's additions."""
    key = arch.lower().rstrip("a")
    extra = {m.key: m for m in ARCH_OVERRIDES.get(key, ())}
    table = [extra.pop(m.key, m) for m in _BASE]
    at = next((i for i, m in enumerate(table) if m.key == "tensor_pipe"), len(table)) + 1
    return table[:at] + list(extra.values()) + table[at:]


def raw_metric(name: str) -> Metric:
    """A metric asked for by its ncu name with --metrics: shown as it comes."""
    return Metric(name, name, (name,))


def ncu_metric_names(metrics: list[Metric]) -> list[str]:
    """Every ncu metric the table needs, each once, in table order."""
    names: list[str] = []
    for metric in metrics:
        names += [n for n in metric.ncu if n not in names]
    return names


def evaluate(metric: Metric, values: dict[str, float]) -> float | None:
    """The friendly value from one kernel's ncu values (base units); None when ncu did not report them."""
    found = [values.get(name) for name in metric.ncu]
    if any(v is None for v in found):
        if metric.combine == "sum" and any(v is not None for v in found):
            return sum(v for v in found if v is not None)
        return None
    numbers: list[float] = found  # type: ignore[assignment]
    if metric.combine == "sum":
        return sum(numbers)
    if metric.combine == "ratio":
        return numbers[0] / numbers[1] if numbers[1] else None
    return numbers[0]
