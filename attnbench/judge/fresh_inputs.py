"""Secret inputs: every case drawn anew from a seed of the OS's entropy, so that nothing a program ships can
know the answer.

The suite's seeds are public and `attnbench gen` rebuilds every expected output, so a submission could
carry the answers of the suite's cases (a table of 2.6 MB a case passes at 24x the honest speed). A fresh
input keeps the case's name, its shape and the suite's distribution (values uniform in [-3, 3), the
generator the suite uses), and takes its values from `secrets.randbits(128)`; its float64 reference
(rounded to float32, as the suite stores references) is computed by the judge, on the judging GPU where
there is one (attnbench.cases.gpu_reference: t29 takes 26 s on 16 CPU cores). The seeds are saved with
the results (`seeds_of`; a class's, each round's, on its scoreboard: `record_seeds`), so staff can rebuild any
run's inputs, and no program ever sees them: a run gets a copy of its input, in a folder only the judge can
read until it is copied, or (as root in the box) the input written straight into the tmpfs its run binds
read-only (attnbench.sandbox.staged_inputs). Each rerun draws again.

A user's input file (`--cases my.in`) has no distribution to draw from: it is judged as it is.
"""

from __future__ import annotations

import atexit
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from attnbench.cases.inputs import (
    BenchInput,
    CaseInfo,
    ProgressFactory,
    SuiteInput,
    computed_reference,
    no_progress,
    seeded_testcase,
)
from attnbench.cases.testcase import Shape, Testcase, write_testcase
from attnbench.results.scoreboard import Scoreboard
from attnbench.sandbox.owned_folders import make_owned, remove_owned, remove_stale

SEED_BITS = 128
RULE = ("fresh inputs: each case (and each rerun) drawn anew in the suite case's shape and distribution "
        f"(values uniform in [-3, 3)) from a {SEED_BITS}-bit seed of the OS's entropy, its float64 reference "
        "computed by the judge; seeds saved here, never shown to programs")


@dataclass(frozen=True)
class FreshInput:
    """A suite case's name and shape with values from a secret seed (a BenchInput)."""

    label: str
    shape: Shape
    seed: int
    like: str  # the suite case it stands in for

    def prepare(self, progress: ProgressFactory = no_progress) -> None:
        pass

    def load(self, progress: ProgressFactory = no_progress) -> Testcase:
        with progress(f"drawing a fresh {self.label}", 3 * self.shape.elements) as advance:
            return seeded_testcase(self.shape, self.seed, advance)

    def reference(self, testcase: Testcase, progress: ProgressFactory = no_progress) -> np.ndarray:
        """Made on the judging GPU where there is one: the judge makes it before the case's run, never during."""
        return computed_reference(testcase, self.label, progress, on_gpu=True)

    def info(self, testcase: Testcase | None = None) -> CaseInfo:
        """No sha256: the seed names the bytes (the suite's generator rebuilds them exactly, `load`), and a
        digest is one serial pass over every byte (t22's 0.68 s, the longest step of its input on an H200's
        host), as long as the rest of its making."""
        return CaseInfo(self.label, self.shape, None, "fresh", f"fresh {self.like}",
                        f"seed {seed_text(self.seed)}, values uniform in [-3, 3)")

    def write(self, testcase: Testcase) -> Path:
        """The input in the judge's private folder (mode 0600 in a 0700 folder), for the sandbox to copy."""
        path = private_folder() / f"{self.label}-{self.seed:032x}.in"
        write_testcase(path, testcase)
        os.chmod(path, 0o600)
        return path


def seed_text(seed: int) -> str:
    """A seed as saved: hexadecimal text (JSON numbers lose bits past 2^53 in many readers)."""
    return f"0x{seed:0{SEED_BITS // 4}x}"


def draw(inputs: Sequence[BenchInput]) -> list[BenchInput]:
    """Each suite case (or fresh input) as a fresh input of its shape, from a new secret seed; other inputs
    (a user's file) as they are."""
    drawn: list[BenchInput] = []
    for i in inputs:
        if isinstance(i, (SuiteInput, FreshInput)):
            drawn.append(FreshInput(i.label, i.shape, secrets.randbits(SEED_BITS), getattr(i, "like", i.label)))
        else:
            drawn.append(i)
    return drawn


def round_inputs(inputs: Sequence[BenchInput], fresh: bool) -> list[BenchInput]:
    """A round's inputs (a class's first runs, or a rerun round's): drawn anew when `fresh`, else the suite's."""
    return draw(inputs) if fresh else list(inputs)


def seeds_of(inputs: Sequence[BenchInput]) -> dict[str, str]:
    return {i.label: seed_text(i.seed) for i in inputs if isinstance(i, FreshInput)}


def record_seeds(board: Scoreboard, run: str, inputs: Sequence[BenchInput]) -> None:
    """Save the seeds of a run's fresh inputs with the scoreboard ("first", "rerun 2", ...)."""
    seeds = seeds_of(inputs)
    if seeds:
        board.settings.setdefault("seeds", {})[run] = seeds


FRESH_PREFIX = "attnbench-fresh-"
_folder: list[Path] = []


def private_folder() -> Path:
    """This process's folder for fresh inputs, readable by the judge only; removed when the process ends, or by
    the next judge if this one is killed (attnbench.sandbox.owned_folders)."""
    if not _folder:
        remove_stale(FRESH_PREFIX)  # a judge killed outright left its inputs behind
        _folder.append(make_owned(FRESH_PREFIX))
        atexit.register(remove_owned, _folder[0])
    return _folder[0]


def release(path: Path) -> None:
    """Remove a fresh input's file once its runs are done (a file of the private folder only)."""
    if _folder and path.parent == _folder[0]:
        try:
            path.unlink()
        except OSError:
            pass
