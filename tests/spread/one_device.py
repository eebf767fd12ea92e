"""The one-device matrix as compare and sweep run it (`workers.run_here`: the case groups through `InProcess`),
for tests that hand it variants the catalogue need not know and a GPU of their own (or none)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from attnbench.bench.check_rule import CheckRule, CourseRule
from attnbench.bench.sampler import TimingPolicy
from attnbench.cases.inputs import BenchInput, CaseInfo
from attnbench.kernels.catalogue import REGISTRY
from attnbench.kernels.variant import Variant
from attnbench.results.resultset import Cell
from attnbench.spread.cellgroups import CellPlan
from attnbench.spread.devices import Device
from attnbench.spread.workers import run_here


def matrix_here(variants: list[Variant], inputs: list[BenchInput], gpu: Any,
                policy: Callable[[Variant], TimingPolicy], rule: CheckRule = CourseRule(),
                listener: Any = None) -> tuple[list[CaseInfo], list[Cell]]:
    """Every cell of variants x inputs on `gpu`, in this process; the variants are named in the catalogue
    while it runs (a case group finds its variants by name)."""
    added = [v.name for v in variants if v.name not in REGISTRY]
    REGISTRY.update({v.name: v for v in variants if v.name in added})
    try:
        return run_here(Device(0), gpu, variants, CellPlan.of(variants, policy, rule), inputs, listener)
    finally:
        for name in added:
            del REGISTRY[name]
