"""Where a compare's or a sweep's cells run: `compare` and `sweep` hand them here, and the executor that
`gpus` and `executor` choose runs them (in this process, on this host's GPUs, or as Slurm jobs); `resume`
finishes a Slurm run from its jobs folder.

    import attnbench
    rs = attnbench.compare("ladder", "course", gpus="all")
    rs = attnbench.resume("attnbench-results/slurm/2026-11-22_0730_compare")
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from attnbench.api.notices import Notice, quiet, say_reference_time
from attnbench.bench.check_rule import CheckRule
from attnbench.bench.matrix import MatrixInterrupted
from attnbench.bench.sampler import TimingPolicy
from attnbench.cases.inputs import BenchInput
from attnbench.kernels.variant import Variant
from attnbench.results.resultset import ResultKind, ResultSet
from attnbench.spread.cellgroups import CellPlan
from attnbench.spread.executor import EXECUTOR_OPTIONS, SLURM, Listener
from attnbench.spread.placement import MatrixRun, Placement, run_placed
from attnbench.spread.slurm import SlurmOptions, default_folder

__all__ = ["EXECUTOR_OPTIONS", "placed_matrix", "placement", "resume", "slurm_options"]


def slurm_options(executor: str, results_dir: str | Path, **fields: Any) -> SlurmOptions:
    """Slurm's options (`fields`, as SlurmOptions names them) for a compare or sweep; a Slurm run's jobs
    folder is a new one under `results_dir`."""
    return SlurmOptions(**fields, folder=default_folder(results_dir) if executor == SLURM.option else None)


def placement(gpus: str | None, executor: str, slurm: SlurmOptions | None) -> Placement:
    """Where the cells run: here, this host's GPUs, or Slurm jobs."""
    return Placement(gpus, executor, slurm or SlurmOptions())


def placed_matrix(kind: ResultKind, chosen: list[Variant], inputs: list[BenchInput],
                  policy: Callable[[Variant], TimingPolicy], rule: CheckRule, where: Placement, record: dict[str, Any],
                  listener: Listener | None, notice: Notice = quiet,
                  before_run: Callable[[Any, list[BenchInput]], None] | None = None, lab_timing: bool = False,
                  program_sandbox: str = "auto", open_here: Callable[[], Any] = lambda: None,
                  device: int = 0) -> ResultSet:
    """A compare or sweep on the executor `where` chooses (in this process on the GPU `open_here` opens, on
    this host's GPUs, or as Slurm jobs), each cell checked by `rule`; the same ResultSet whichever ran it, each
    spread cell recording its GPU. A sweep records its elapsed time (an interrupted one's partial result too)."""
    say_reference_time(inputs, notice)
    plan = CellPlan.of(chosen, policy, rule, lab_timing, program_sandbox)
    run = MatrixRun(kind, chosen, inputs, plan, record, listener, notice, before_run, open_here, device)
    start = time.perf_counter()
    try:
        result = run_placed(run, where)
    except MatrixInterrupted as exc:
        if kind is ResultKind.SWEEP and exc.partial is not None:
            exc.partial.settings.elapsed_s = time.perf_counter() - start
        raise
    if kind is ResultKind.SWEEP:
        result.settings.elapsed_s = time.perf_counter() - start
    return result


def resume(folder: str | Path, *, listener: Listener | None = None, notice: Notice = quiet) -> ResultSet:
    """Finish a Slurm run (compare or sweep) from its jobs folder: collect the results that came
    back, resubmit the jobs that were lost, and return the merged run."""
    from attnbench.spread.placement import resume as resume_slurm

    return resume_slurm(str(folder), listener, notice)


__all__ = ["SlurmOptions", "placed_matrix", "placement", "resume", "slurm_options"]
