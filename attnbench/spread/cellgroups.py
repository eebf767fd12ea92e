"""A case group: every variant of one input, run on one device, away from the process that asked.

Several GPUs of a host (`workers`) and the nodes of a Slurm cluster (`slurm`) both run the matrix
this way. The unit of work is one input with all the variants that take it, so that a case's
baseline and its other variants share a device and their speedups compare like with like. What
travels to a worker is a `CellPlan` (variant names, timing policies, which check) and the input's
recipe (a suite name and seed, a file path, a synthetic shape and seed), never its bytes; what
comes back is plain data: the input's CaseInfo and its cells as dictionaries.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from dataclasses import dataclass, field
from typing import Any, Callable

from attnbench.backends.device import GpuDevice
from attnbench.backends.program import EXE_PREFIX, program_variant
from attnbench.bench.check_rule import CheckRule, CourseRule
from attnbench.bench.matrix import CellEvents, LoadedInput, MatrixSettings, cell_work, refusal_of, run_input
from attnbench.bench.sampler import TimingPolicy
from attnbench.bench.squarelab import LabTimer
from attnbench.cases.inputs import BenchInput, CaseInfo, ProgressFactory, SuiteInput, no_progress
from attnbench.errors import AttnbenchError, UsageError
from attnbench.kernels.catalogue import get_variant
from attnbench.kernels.nvcc import is_users, source_file
from attnbench.kernels.user import variant_for_source
from attnbench.kernels.variant import Variant
from attnbench.results.resultset import ERROR, REFUSED, Cell
from attnbench.spread.devices import STAND_IN_NAME, Device


@dataclass(frozen=True)
class CellPlan:
    """How every cell of a run is checked and timed, in a form that pickles (names, not objects)."""

    variant_names: tuple[str, ...]
    policies: dict[str, TimingPolicy]
    rule: CheckRule = CourseRule()
    lab_timing: bool = False
    programs: dict[str, str] = field(default_factory=dict)  # an `exe:` program's name -> its path
    program_sandbox: str = "auto"  # --sandbox for those programs
    # a user variant's name -> its kernel file: one given by its path (`-v kernels/lazy.cu`) is named for the
    # file, a name no lookup from the worker's folder finds
    kernel_files: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, variants: list[Variant], policy: Callable[[Variant], TimingPolicy], rule: CheckRule,
           lab_timing: bool = False, program_sandbox: str = "auto") -> "CellPlan":
        programs = {v.name: str(v.source) for v in variants if v.kind.whole_program}
        kernel_files = {v.name: str(source_file(v)) for v in variants
                        if v.kind.compiled and v.source is not None and is_users(v)}
        return cls(tuple(v.name for v in variants), {v.name: policy(v) for v in variants}, rule, lab_timing,
                   programs, program_sandbox, kernel_files)

    def variant(self, name: str) -> Variant:
        """A variant by name: the catalogue's or the user's, or an `exe:` program from its path."""
        if name in self.programs:
            return program_variant(EXE_PREFIX + self.programs[name])
        if name in self.kernel_files:
            variant = variant_for_source(self.kernel_files[name])
            flavour = name[len(variant.name) + 1:]
            return variant.flavoured(flavour) if flavour else variant
        return get_variant(name)

    def variants(self) -> list[Variant]:
        return [self.variant(name) for name in self.variant_names]

    def settings(self) -> MatrixSettings:
        return MatrixSettings(policy=lambda v: self.policies[v.name], check=self.rule.check(),
                              timer=LabTimer() if self.lab_timing else None, tolerance=self.rule.tolerance,
                              program_sandbox=self.program_sandbox)


@dataclass
class OpenDevice:
    """A worker's device once open: the Gpu (None for host-only runs) and what cells record of it."""

    gpu: GpuDevice | None
    record: dict[str, Any] | None  # {"index", "name", "uuid"} for extra["gpu"]; None without a device
    facts: dict[str, Any] | None = None  # Gpu.facts(), for the run's metadata
    arch: str | None = None
    torch_versions: dict[str, Any] | None = None  # the PyTorch this worker runs, when it runs the peer


# A cell's seconds, fitted to a compare of six GPU variants over t10-t30 on an H200 (2026-11-22): the
# sampler's minimum time, the host's share (upload, download, the check) growing with the elements,
# about ten timed passes at a modest rate; and once an input, reading and hashing it.
CELL_FLOOR_S = 0.3
HOST_S_PER_ELEMENT = 5e-9
LOAD_S_PER_ELEMENT = 15e-9
GPU_FLOPS_RATE = 2e13


def group_work(variants: list[Variant], bench_input: BenchInput) -> float:
    """Expected cost of an input's cells for the progress bar: their FLOPs (a host variant counts 50x)."""
    return sum(cell_work(v, bench_input) for v in variants if v.refusal(bench_input.shape) is None)


def cell_seconds(variant: Variant, bench_input: BenchInput) -> float:
    """A rough time for one cell with its kernel compiled (host variants far slower)."""
    shape = bench_input.shape
    if variant.kind.runs_on_host:
        return 0.2 + 2 * shape.flops / 5e9
    return CELL_FLOOR_S + HOST_S_PER_ELEMENT * shape.elements + 10 * shape.flops / GPU_FLOPS_RATE


def group_seconds(variants: list[Variant], bench_input: BenchInput) -> float:
    """A rough time for an input's cells, loading it included: the order in which groups are dealt.

    Host work, which grows with the elements, outweighs the FLOPs on most course cases: t11 (55.7M
    elements, 29 GFLOP) took longer than t29 (4.2M, 550 GFLOP)."""
    takers = [v for v in variants if v.refusal(bench_input.shape) is None]
    if not takers:
        return 0.0
    return LOAD_S_PER_ELEMENT * bench_input.shape.elements + sum(cell_seconds(v, bench_input) for v in takers)


def _gpu_uuid(gpu: GpuDevice) -> str | None:
    """The device's UUID (NVML or nvidia-smi, matched by PCI bus id); None where neither answers."""
    try:
        bus = gpu.device.pci_bus_id().lower()
    except Exception:
        return None
    try:
        import pynvml

        pynvml.nvmlInit()
        uuid = pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByPciBusId(bus.encode()))
        return uuid.decode() if isinstance(uuid, bytes) else str(uuid)
    except Exception:
        pass
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        text = subprocess.run([smi, "--query-gpu=pci.bus_id,uuid", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    short = bus.split(":", 1)[-1]  # nvidia-smi writes an 8-digit domain, CUDA a 4-digit one
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].lower().split(":", 1)[-1] == short:
            return parts[1]
    return None


def open_device(device: Device, variants: list[Variant]) -> OpenDevice:
    """Open the device a worker runs on (a GPU only when some variant needs one)."""
    if device.stand_in:
        if any(not v.kind.runs_on_host for v in variants):
            raise UsageError("cpu workers standing in for GPUs run only the cpu variant")
        return OpenDevice(None, {"index": device.index, "name": STAND_IN_NAME, "uuid": None})
    if all(v.kind.runs_on_host for v in variants):
        return OpenDevice(None, None)
    torch_versions = None
    if any(v.kind.needs_torch for v in variants):
        from attnbench.backends.torch_peer import import_torch
        from attnbench.results.metadata import torch_versions_of

        torch_versions = torch_versions_of(import_torch())
    from attnbench.backends.gpu import Gpu

    gpu = Gpu(device.index)
    record = {"index": device.index, "name": gpu.name, "uuid": _gpu_uuid(gpu), "host": socket.gethostname()}
    return OpenDevice(gpu, record, {**gpu.facts(), "uuid": record["uuid"], "host": record["host"]}, gpu.arch,
                      torch_versions)


@dataclass
class GroupReport:
    """Where a case group's events go: the input's info, a cell starting, a cell finished; and the bars of
    generating its input and reference."""

    info: Callable[[dict], None] = lambda info: None
    started: Callable[[str], None] = lambda variant: None
    finished: Callable[[dict], None] = lambda cell: None
    cells: list[dict] = field(default_factory=list)
    progress: ProgressFactory = no_progress


def run_case_group(plan: CellPlan, bench_input: BenchInput, names: list[str], device: OpenDevice,
                   report: GroupReport, failures_as_cells: bool = True) -> str | None:
    """Load one input and its reference, then run the named variants on it, one cell at a time; why the
    device's CUDA context was lost, if a cell lost it (the caller must then measure no more). An input every
    named variant refuses is not loaded: its cells are refused.

    Each event is reported as it happens, so a worker that dies loses only the cell it was running.
    An input that cannot be loaded, and any unexpected failure of a cell, is an ERROR cell with the reason
    (a worker reports every cell it was given); unless not `failures_as_cells` (a run in the asking process),
    where it stops the run, so that a bug surfaces."""
    try:
        variants = [plan.variant(name) for name in names]
        if _all_refused(bench_input, variants, device, report):
            return None
        testcase = bench_input.load(report.progress)
        loaded = LoadedInput(bench_input.label, testcase, bench_input.reference(testcase, report.progress),
                             bench_input.value_range(testcase))
        report.info(bench_input.info(testcase).to_dict())
    except Exception as exc:  # an unreadable input or an unknown variant: every cell says why
        if not failures_as_cells:
            raise
        why = str(exc) if isinstance(exc, AttnbenchError) else f"{type(exc).__name__}: {exc}"
        report_not_run(bench_input, names, why, report)
        return None

    def finished(cell: Cell) -> None:
        if device.record is not None and cell.status != REFUSED:
            cell.extra["gpu"] = dict(device.record)
        report.finished(cell.to_dict())

    events = CellEvents(report.started, finished)
    return run_input(variants, loaded, device.gpu, plan.settings(), events, failures_as_cells)


def _all_refused(bench_input: BenchInput, variants: list[Variant], device: OpenDevice, report: GroupReport) -> bool:
    """Report an input every variant refuses (on this device) as not loaded, with its refused cells; whether it was."""
    capability = getattr(device.gpu, "compute_capability", None)
    refusals = [refusal_of(v, bench_input.shape, capability) for v in variants]
    if any(refused is None for refused in refusals):
        return False
    report.info(CaseInfo(bench_input.label, bench_input.shape, None, "not loaded", "",
                         "every variant refused it").to_dict())
    for refused in refusals:
        assert refused is not None
        report.finished(Cell.refused(bench_input.label, refused).to_dict())
    return True


def report_not_run(bench_input: BenchInput, names: list[str], why: str, report: GroupReport) -> None:
    """A case group that is not measured: its input not loaded, and each named variant's cell an ERROR with `why`."""
    report.info(CaseInfo(bench_input.label, bench_input.shape, None, "not loaded", "", why).to_dict())
    for name in names:
        report.finished(Cell(name, bench_input.label, ERROR, why).to_dict())


def node_input(bench_input: BenchInput) -> BenchInput:
    """The input as a node should make it: suite cases generated in memory from their seeds when the
    node has no copy (never shipped)."""
    if isinstance(bench_input, SuiteInput):
        return SuiteInput(bench_input.case, in_memory=True)
    return bench_input
