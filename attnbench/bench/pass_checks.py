"""The kernel checks after the timed samples: each a pass check that the engine applies, in the order of
`AFTER_SAMPLES` (`FreshSampler.after_samples`, called by `bench.fresh_samples.sample_fresh` for every cell).

Each check launches untimed through the sampler, so every launch of it is checked like a sample (a failure ends
the cell, WRONG, naming the check's kind), and states in `needs` what it asks of an execution beyond a pass and
its check; every backend is held to those by the tests. A new defence is one class here and one entry in
`AFTER_SAMPLES` (and its kind's sentence in `results.timed_check`).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

import numpy as np

from attnbench.cases.fresh_values import draw_seed
from attnbench.cases.testcase import Shape
from attnbench.results.timed_check import REPEAT, STALE, UNPOISONED, DifferingRows

NAMED_ROWS = 8


class Launcher(Protocol):
    """What a pass check asks of the sampler that applies it (`bench.fresh_samples.FreshSampler` is one): an
    untimed, checked launch, the execution, the case's shape, its entropy and the last launch's seed."""

    execution: Any
    shape: Shape
    entropy: Callable[[int], bytes]
    last_seed: int | None

    def untimed(self, seed: int, poison: bool, kind: str, number: int, fresh: bool = True,
                output: float = float("nan")) -> None: ...


class PassCheck(Protocol):
    """One defence, applied after the samples; it returns a finding that warns (None: nothing to say) and raises
    `SampleFailed` through the sampler when a launch of it fails its check."""

    kind: str  # its launches' kind, as a failure names them (results.timed_check)
    needs: tuple[str, ...]  # the Execution methods it calls besides run_pass, check_sample and synchronize

    def apply(self, sampler: Launcher) -> DifferingRows | None: ...


class RepeatedInput:
    """One fresh input launched twice, the output poisoned before each and each checked: a kernel that recognises
    an input it has seen serves the poison. Their rows must have the same bits, else the rows that differ are the
    finding (the determinism check: a warning, not a verdict)."""

    kind = REPEAT
    needs = ("refresh_inputs", "poison_output", "output_digest")

    def apply(self, sampler: Launcher) -> DifferingRows | None:
        seed = draw_seed(sampler.entropy)
        digests = []
        for number in (1, 2):
            sampler.untimed(seed, True, REPEAT, number, fresh=number == 1)
            digests.append(sampler.execution.output_digest())
        differ = np.flatnonzero(digests[0] != digests[1])
        if not differ.size:
            return None
        return DifferingRows([int(r) for r in differ[:NAMED_ROWS]], int(differ.size), sampler.shape.N)


class UnpoisonedOutput:
    """One launch on a fresh input with the output NOT poisoned first: a kernel that computes only when it finds
    its output poisoned leaves the last answer, which is not this input's."""

    kind = UNPOISONED
    needs = ("refresh_inputs",)

    def apply(self, sampler: Launcher) -> None:
        sampler.untimed(draw_seed(sampler.entropy), False, UNPOISONED, 1)


class StaleOutput:
    """The input of the launch before it, launched again with zeros written over the output first: a kernel that
    skips an input its previous launch answered while the output holds a number leaves the zeros (the square
    lab's batches, passes back to back on one input poisoned once, are where such a kernel would gain)."""

    kind = STALE
    needs = ("refresh_inputs", "poison_output")

    def apply(self, sampler: Launcher) -> None:
        assert sampler.last_seed is not None, "a stale launch repeats the launch before it"
        sampler.untimed(sampler.last_seed, True, STALE, 1, fresh=False, output=0.0)


# In this order: the stale launch repeats the unpoisoned one's input.
AFTER_SAMPLES: tuple[PassCheck, ...] = (RepeatedInput(), UnpoisonedOutput(), StaleOutput())
