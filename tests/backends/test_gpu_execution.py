"""GpuExecution under the sampler, on the fake driver: the L2 is flushed once before each timed sample,
never with --hot, and the saved policy says which of the two ran."""

from __future__ import annotations

import numpy as np
import pytest

from attnbench.api import TimingOptions
from attnbench.bench.first_pass import WholeInput
from attnbench.bench.runner import run_cell
from attnbench.bench.sampler import TimingPolicy
from attnbench.cases.inputs import SyntheticInput
from attnbench.cases.testcase import Shape
from tests.backends.test_gpu_pipeline_fake_driver import VARIANT, FakeDriver, FakeGpu
from tests.conftest import random_testcase
from tests.fakes import SteadyClock
from tests.spread.one_device import matrix_here


class LoggedClock(SteadyClock):
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def start(self) -> None:
        self.log.append("start")

    def stop(self) -> float:
        self.log.append("stop")
        return super().stop()


class RecordingGpu(FakeGpu):
    """The fake GPU, recording each L2 flush and each timed region in order."""

    compute_capability = (9, 0)

    def __init__(self, driver: FakeDriver) -> None:
        super().__init__(driver)
        self.log: list[str] = []

    def clock(self, what):
        return LoggedClock(self.log)

    def l2_flush_pending_bytes(self) -> int:
        return 1 << 20

    def flush_l2(self) -> None:
        self.log.append("flush")

    def throttle_reasons(self) -> list[str]:
        return []

    def context_error(self) -> None:
        return None


def timed_regions(log: list[str]) -> list[list[str]]:
    """The log cut before each timed region: what happened since the last one ended, then its start."""
    regions, current = [], []
    for event in log:
        current.append(event)
        if event == "start":
            regions.append(current)
            current = []
    return regions


@pytest.mark.parametrize("flush", [True, False])
def test_each_timed_sample_follows_exactly_one_flush_or_none(flush):
    gpu = RecordingGpu(FakeDriver())
    testcase = random_testcase(2, 9, 4, np.random.default_rng(3))
    run = run_cell(VARIANT, WholeInput(testcase, "rand"), gpu, TimingPolicy(warmup=2, reps=5, flush_l2=flush))
    regions = timed_regions(gpu.log)
    assert len(regions) >= 5 + 2  # the warm-up passes are timed too
    assert run.measurement.kernel.count == 5
    for region in regions:
        assert region.count("flush") == (1 if flush else 0), gpu.log
        assert not flush or region[-2:] == ["flush", "start"], "the flush comes right before the clock starts"


@pytest.mark.parametrize("hot", [False, True])
def test_hot_and_the_default_reach_the_gpu_and_the_saved_policy_agrees(hot, tmp_path):
    gpu = RecordingGpu(FakeDriver())
    options = TimingOptions(reps=3, hot=hot)
    bench_input = SyntheticInput(Shape(2, 17, 8), seed=5)  # in memory: no suite file for other tests to find
    infos, cells = matrix_here([VARIANT], [bench_input], gpu, options.policy_for)
    assert [c.status for c in cells] == ["ok"], cells[0].message
    flushed = "flush" in gpu.log
    assert flushed == (not hot)
    assert options.record()["flush_l2"] == flushed
