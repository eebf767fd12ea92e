"""Cells without kernels: `measure_cell` replaced by outcomes named per variant, a GPU whose context a failed
kernel does (or does not) lose, and an input that cannot be loaded."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from attnbench.bench import matrix
from attnbench.cases.inputs import ProgressFactory, SyntheticInput, no_progress
from attnbench.cases.testcase import Testcase
from attnbench.errors import TestcaseError
from attnbench.results.resultset import OK, Cell


class LosingGpu:
    """What the loop asks of a GPU: its capability and whether its CUDA context still works."""

    compute_capability = (8, 0)

    def __init__(self, broken: str | None) -> None:
        self.broken = broken
        self.asked = 0

    def context_error(self) -> str | None:
        self.asked += 1
        return self.broken


def fake_cells(monkeypatch: pytest.MonkeyPatch, outcomes: dict[str, str | Exception]) -> list[str]:
    """Each variant's cell has the status `outcomes` gives it (OK by default; an exception is raised);
    the list returned names the variants run, in order."""
    ran: list[str] = []

    def measure_cell(variant, label, testcase, reference, gpu, settings, ranges=None) -> Cell:
        ran.append(variant.name)
        outcome = outcomes.get(variant.name, OK)
        if isinstance(outcome, Exception):
            raise outcome
        return Cell(variant.name, label, outcome, "" if outcome == OK else f"{variant.name} failed")

    monkeypatch.setattr(matrix, "measure_cell", measure_cell)
    return ran


@dataclass
class UnreadableInput(SyntheticInput):
    """An input whose file cannot be read."""

    def load(self, progress: ProgressFactory = no_progress) -> Testcase:
        raise TestcaseError(f"{self.label}: the file ends after 12 of 4096 bytes")
