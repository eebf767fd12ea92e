"""The pass checks after the samples (attnbench/bench/pass_checks.py): their order, what each asks of an execution
(held against every backend), and a new defence added as one class in the list."""

from __future__ import annotations

import numpy as np
import pytest

from attnbench.bench.fresh_samples import FreshSampler, SampleFailed
from attnbench.bench.pass_checks import AFTER_SAMPLES, StaleOutput, UnpoisonedOutput
from attnbench.cases.fresh_values import SUITE_RANGE
from attnbench.results.timed_check import REPEAT, STALE, UNPOISONED
from tests.bench.fake_device import HonestHostExecution
from tests.conftest import random_testcase


class Recording(HonestHostExecution):
    """An honest host execution that records the input of every launch."""

    def __init__(self, testcase) -> None:
        super().__init__(testcase)
        self.inputs: list[bytes] = []

    def run_pass(self) -> None:
        self.inputs.append(self.testcase.qkv.tobytes())
        super().run_pass()


def sampler_of(execution) -> FreshSampler:
    return FreshSampler(execution, execution.testcase.shape, SUITE_RANGE, (5e-3, 0.0), flush_l2=False, warmup=0)


def test_the_checks_run_repeat_then_unpoisoned_then_stale_on_the_unpoisoned_input(rng):
    assert [check.kind for check in AFTER_SAMPLES] == [REPEAT, UNPOISONED, STALE]
    execution = Recording(random_testcase(1, 8, 4, rng))
    sampler = sampler_of(execution)
    assert sampler.after_samples() is None
    first, second, unpoisoned, stale = execution.inputs
    assert first == second and unpoisoned == stale and len({first, unpoisoned}) == 2
    assert sampler.launches == 4 and sampler.fresh == 2


@pytest.mark.parametrize("name", ["cpu", "gpu_execution", "torch_peer", "triton_peer"])
def test_every_backend_has_what_every_check_needs(name):
    import importlib

    module = importlib.import_module(f"attnbench.backends.{name}")
    execution = next(getattr(module, n) for n in dir(module) if n.endswith("Execution") and n != "Execution"
                     and isinstance(getattr(module, n), type) and getattr(module, n).__module__ == module.__name__)
    for check in AFTER_SAMPLES:
        missing = [method for method in check.needs if not callable(getattr(execution, method, None))]
        assert not missing, f"{execution.__name__} lacks {missing}, which {type(check).__name__} needs"


class ZerosOnRepeat:
    """A defence of the test's own: the last input launched once more with zeros over the output."""

    kind = "zeros again"
    needs = ("refresh_inputs", "poison_output")

    def apply(self, sampler: FreshSampler) -> None:
        sampler.untimed(sampler.last_seed, True, self.kind, 1, fresh=False, output=0.0)


class ServesItsOutput(HonestHostExecution):
    """Computes once per input; a launch on an input it answered leaves the output as it is."""

    def run_pass(self) -> None:
        key = self.testcase.qkv.tobytes()
        if getattr(self, "answered", None) == key:
            return
        self.answered = key
        super().run_pass()


def test_a_new_defence_is_one_class_in_the_list(rng):
    execution = ServesItsOutput(random_testcase(1, 8, 4, rng))
    sampler = sampler_of(execution)
    sampler.after_samples((UnpoisonedOutput(),))  # without the new check, nothing is caught
    with pytest.raises(SampleFailed):
        sampler.after_samples((UnpoisonedOutput(), ZerosOnRepeat()))
    assert sampler.failure.kind == "zeros again" and np.all(execution.output == 0.0)


def test_the_stale_check_needs_a_launch_before_it(rng):
    with pytest.raises(AssertionError, match="repeats the launch before it"):
        StaleOutput().apply(sampler_of(Recording(random_testcase(1, 8, 4, rng))))
