"""The verified passes on a simulated device: honest kernels pass; every trick of the adversarial corpus
(lazy, sly, cached, half-lazy, a K-row watcher, work on a side stream) is caught, by values or by time.

The device is numpy: its 'kernel' is the cpu variant's attention over the execution's own copy of the
input, so the input changes have their real answers. Its clock is virtual: a pass that computes costs
10 ms, one that skips 0.01 ms, on the event clock and on the host's wall clock alike (unless the work
goes to a side stream, which only the wall clock sees).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from attnbench.backends.cpu import flash_attention_cpu
from attnbench.bench.runner import run_variant
from attnbench.bench.sampler import TimingPolicy, sample_execution
from attnbench.bench.timed_check import PASSES, check_timed_passes, pass_errors
from attnbench.backends.input_transform import InputTransform
from attnbench.cases.testcase import Shape, Testcase
from attnbench.kernels.catalogue import get_variant
from attnbench.results.resultset import dumps
from attnbench.results.timed_check import SKIPPED_WORK, WRONG_VALUES, TimedCheck
from attnbench.results.limits import UNKNOWN_LIMITS
from tests.conftest import random_testcase

COMPUTE_MS, SKIP_MS = 10.0, 0.01


class VirtualClock:
    def __init__(self, device: "SimulatedDevice") -> None:
        self.device = device

    def start(self) -> None:
        self.t0 = self.device.event_ms

    def stop(self) -> float:
        return self.device.event_ms - self.t0


class SimulatedDevice:
    """An execution whose kernel follows `behaviour(device) -> computed?`."""

    device_name, peak_flops, compile_s = "simulated GPU", 1e12, 0.0
    limits = UNKNOWN_LIMITS

    def __init__(self, testcase: Testcase, behaviour, side_stream: bool = False, device_check: bool = False) -> None:
        self.qkv = testcase.qkv.copy()
        self.device_check = device_check
        self.kept: np.ndarray | None = None
        self.shape = testcase.shape
        self.out = np.full((self.shape.B, self.shape.N, self.shape.d), np.nan, dtype=np.float32)
        self.behaviour, self.side_stream = behaviour, side_stream
        self.clock = VirtualClock(self)
        self.event_ms = self.wall_ms = 0.0
        self.launches = 0
        self.memory: dict = {}

    def compute(self, items=slice(None)) -> None:
        self.out[items] = flash_attention_cpu(Testcase(self.qkv))[items]

    def run_pass(self) -> None:
        computed = self.behaviour(self)
        self.launches += 1
        cost = COMPUTE_MS if computed else SKIP_MS
        self.wall_ms += cost
        self.event_ms += SKIP_MS if self.side_stream else cost

    def upload(self) -> None:
        pass

    def download(self) -> np.ndarray:
        return self.out.copy()

    def flush_l2(self) -> None:
        pass

    def poison_output(self) -> None:
        self.out.fill(np.nan)

    def permute_inputs(self, transform: InputTransform) -> None:
        self.qkv = transform.apply(self.qkv)

    def keep_output(self):
        if not self.device_check:
            return None
        self.kept = self.out.copy()
        return SimulatedOutputCheck(self)

    def synchronize(self) -> None:
        pass

    def free(self) -> None:
        pass

    def wall_clock(self) -> float:
        return self.wall_ms / 1e3


def bit_sum(array: np.ndarray) -> int:
    return int(array.view(np.uint32).sum(dtype=np.uint64))


class SimulatedOutputCheck:
    """The device's check (backends.gpu_output_check) in numpy: the output where it lies, against the copy kept
    'on the device', which a kernel can write into; a changed copy's checksum hands the check to the host."""

    def __init__(self, device: SimulatedDevice) -> None:
        self.device, self.checksum = device, bit_sum(device.kept)
        self.checks = 0

    def errors(self, transform, atol, rtol):
        if bit_sum(self.device.kept) != self.checksum:
            return None
        self.checks += 1
        return pass_errors(self.device.out, self.device.kept, transform, self.device.shape, atol, rtol)

    def free(self) -> None:
        self.device.kept = None


def honest(device) -> bool:
    device.compute()
    return True


def lazy(device) -> bool:
    """Computes on its first launch only (a device flag)."""
    if device.launches == 0:
        device.compute()
        return True
    return False


def sly(device) -> bool:
    """Lazy, but recomputes whenever its output's first element is NaN (the poison)."""
    if device.launches == 0 or np.isnan(device.out.flat[0]):
        device.compute()
        return True
    return False


def cached(device) -> bool:
    """Remembers a fingerprint of the input (a few elements of Q, K and V) and skips when it matches."""
    fingerprint = device.qkv[:, :, :2].tobytes()
    if device.memory.get("fingerprint") == fingerprint:
        return False
    device.memory["fingerprint"] = fingerprint
    device.compute()
    return True


def k_watcher(device) -> bool:
    """Recomputes only when the first rows of K changed (detects a permutation of K's rows)."""
    rows = device.qkv[:, 1, :4].tobytes()
    if device.memory.get("rows") == rows:
        return False
    device.memory["rows"] = rows
    device.compute()
    return True


def half_lazy(device) -> bool:
    """All of the output on its first launch, then only the first half of the batch items."""
    device.compute(slice(None) if device.launches == 0 else slice(0, max(1, device.shape.B // 2)))
    return True


def lazy_forger(device) -> bool:
    """Lazy, and writes its stale output into whatever the check kept on the device."""
    if device.kept is not None:
        device.kept[...] = device.out
    return lazy(device)


def run_cell(testcase: Testcase, behaviour, side_stream: bool = False, reps: int = 20,
             device_check: bool = False) -> TimedCheck:
    device = SimulatedDevice(testcase, behaviour, side_stream, device_check)
    device.run_pass()
    base = device.download()
    kept = device.keep_output()
    stats = sample_execution(device, TimingPolicy(warmup=1, reps=reps, flush_l2=True))
    return check_timed_passes(device, stats, base, testcase.shape, flush_l2=True, atol=5e-3, rtol=0.0,
                              expected_from="the first pass's output", device_clock=True, kept=kept,
                              wall_clock=device.wall_clock)


SHAPES = [(4, 24, 8), (1, 24, 8), (4, 1, 8), (1, 1, 8)]


@pytest.mark.parametrize("on", ["host", "device"])
@pytest.mark.parametrize("B,N,d", SHAPES)
def test_an_honest_kernel_passes_in_every_shape(B, N, d, on, rng):
    result = run_cell(random_testcase(B, N, d, rng), honest, device_check=on == "device")
    assert [p.checked_on for p in result.passes] == [on] * PASSES
    assert result.passed and result.clock_warning is None, result.describe()
    assert len(result.passes) == PASSES and result.passes[0].poisoned and not result.passes[1].poisoned
    assert [p.attempt for p in result.passes] == [1, 1]
    assert all(p.failing == 0 and p.max_abs_error < 1e-5 for p in result.passes)


@pytest.mark.parametrize("B,N,d", SHAPES)
@pytest.mark.parametrize("trick,failure", [(lazy, WRONG_VALUES), (sly, WRONG_VALUES), (cached, SKIPPED_WORK),
                                           (k_watcher, SKIPPED_WORK)])
@pytest.mark.parametrize("on", ["host", "device"])
def test_kernels_that_skip_work_are_caught(trick, failure, B, N, d, on, rng):
    result = run_cell(random_testcase(B, N, d, rng), trick, device_check=on == "device")
    assert not result.passed
    if (trick, B, N) == (k_watcher, 1, 1):  # the K rows cannot move: it computes only on the first launch
        failure = WRONG_VALUES
    assert result.failure == failure, result.describe()


def test_the_sentences_say_what_was_seen(rng):
    tc = random_testcase(4, 24, 8, rng)
    text = run_cell(tc, lazy).describe()
    assert text.startswith("the timed passes did not produce the checked output: after the samples, verified pass 1 "
                           "(output poisoned with NaN, batch items permuted")
    assert f"gave {tc.shape.elements} of {tc.shape.elements} elements outside |out - expected| <= 0.005" in text
    assert "NaN or Inf" in text
    text = run_cell(tc, cached).describe()
    assert text.startswith("the timed passes were 1000x faster than a pass that had to compute (0.01 ms against 10 ms")
    assert text.endswith("on every one of 3 attempts): the samples skipped work")


def test_a_sly_kernel_is_caught_by_the_unpoisoned_pass(rng):
    result = run_cell(random_testcase(4, 24, 8, rng), sly)
    assert result.failure == WRONG_VALUES
    first, second = result.passes[0], next(p for p in result.passes if not p.poisoned)
    assert first.failing == 0 and first.time_ms == pytest.approx(COMPUTE_MS)  # it saw the poison and computed
    assert second.failing > 0 and second.nonfinite == 0  # it saw no poison: pass 1's answer stayed


@pytest.mark.parametrize("B,N,d", SHAPES)
def test_a_kernel_that_writes_into_the_kept_output_is_checked_on_the_host(B, N, d, rng):
    result = run_cell(random_testcase(B, N, d, rng), lazy_forger, device_check=True)
    assert result.failure == WRONG_VALUES and result.passes[0].checked_on == "host"


def test_the_device_and_the_host_check_give_the_same_numbers(rng):
    """Both ways, the same passes' records: the device check is the host's check where the output lies."""
    tc = random_testcase(4, 24, 8, rng)
    seeds = [np.random.default_rng(7), np.random.default_rng(7)]
    records = []
    for on, seed in zip(("host", "device"), seeds):
        device = SimulatedDevice(tc, half_lazy, device_check=on == "device")
        device.run_pass()
        base = device.download()
        kept = device.keep_output()
        stats = sample_execution(device, TimingPolicy(warmup=1, reps=5, flush_l2=True))
        result = check_timed_passes(device, stats, base, tc.shape, flush_l2=True, atol=5e-3, rtol=0.0,
                                    expected_from="x", device_clock=True, kept=kept, rng=seed,
                                    wall_clock=device.wall_clock)
        records.append([(p.kinds, p.failing, p.nonfinite, p.max_abs_error) for p in result.passes])
    assert records[0] == records[1] and records[0][0][1] > 0


def test_a_half_lazy_kernel_leaves_poison(rng):
    tc = random_testcase(4, 24, 8, rng)
    result = run_cell(tc, half_lazy)
    assert result.failure == WRONG_VALUES and result.passes[0].nonfinite == tc.shape.elements // 2


def test_work_off_the_timed_stream_warns_with_its_remedy(rng):
    result = run_cell(random_testcase(4, 24, 8, rng), honest, side_stream=True)
    assert result.passed  # the values are right and the events agree with the samples' events
    warning = result.clock_warning
    assert warning is not None and warning.event_ms == pytest.approx(SKIP_MS)
    assert warning.wall_ms == pytest.approx(COMPUTE_MS)
    assert "nsys" in warning.remedy and "10.000 ms" in warning.sentence()


def test_one_slow_wall_clock_reading_is_not_a_warning(rng):
    tc = random_testcase(2, 8, 4, rng)
    device = SimulatedDevice(tc, honest)
    readings = iter([0.0, 0.050, 0.1, 0.110])  # pass 1: 50 ms of wall time (a hiccup); pass 2: 10 ms
    device.run_pass()
    base = device.download()
    stats = sample_execution(device, TimingPolicy(warmup=0, reps=5))
    result = check_timed_passes(device, stats, base, tc.shape, flush_l2=True, atol=5e-3, rtol=0.0,
                                expected_from="x", device_clock=True, wall_clock=lambda: next(readings))
    assert result.passed and result.clock_warning is None


def verified_at(testcase: Testcase, samples: list[float], verified_ms: float, slack_ms: float = 0.05) -> TimedCheck:
    """The verified passes of an honest kernel whose passes take `verified_ms`, after `samples`."""
    device = SimulatedDevice(testcase, honest)
    device.run_pass()
    base = device.download()

    def timed_pass() -> None:
        device.compute()
        device.event_ms += verified_ms
        device.wall_ms += verified_ms

    device.run_pass = timed_pass
    stats = type("Stats", (), {"samples_ms": samples})()
    return check_timed_passes(device, stats, base, testcase.shape, flush_l2=False, atol=5e-3, rtol=0.0,
                              expected_from="x", device_clock=True, slack_ms=slack_ms, wall_clock=device.wall_clock)


@pytest.mark.parametrize("samples,allowed", [([1.0] * 9 + [3.0], 3.0), ([1.0] * 10, 1.5), ([0.004] * 10, 0.05)])
def test_the_time_rule_allows_the_slowest_sample_and_launch_latency(samples, allowed, rng):
    """An honest pass as slow as the slowest sample, or 1.5x the median, or 0.05 ms over a tiny kernel, passes;
    a little slower is skipped work."""
    tc = random_testcase(2, 8, 4, rng)
    assert verified_at(tc, samples, allowed).passed
    over = verified_at(tc, samples, allowed * 1.1 + 0.01)
    assert over.failure == SKIPPED_WORK and [p.attempt for p in over.passes] == [1, 2, 3, 1, 2, 3]


def test_a_python_level_launcher_gets_its_own_launch_slack(rng):
    """A 0.03 ms triton pass whose verified passes took 0.096 ms (its launcher's host time in the window)."""
    tc = random_testcase(2, 8, 4, rng)
    samples = [0.0297, 0.0297, 0.0445]
    assert verified_at(tc, samples, 0.096).failure == SKIPPED_WORK
    held = verified_at(tc, samples, 0.096, slack_ms=0.25)
    assert held.passed and "+ 0.25 ms" in held.rule


def test_one_slow_pass_is_redone_on_a_fresh_change(rng):
    """A hiccup in one attempt is no verdict; the attempt after it, on another change, passes."""
    tc = random_testcase(3, 8, 4, rng)
    device = SimulatedDevice(tc, honest)
    device.run_pass()
    base = device.download()
    costs = iter([1.0, 9.0, 1.0])  # pass 1, pass 2 (a hiccup), pass 2 again

    def timed_pass() -> None:
        device.compute()
        device.event_ms += next(costs)

    device.run_pass = timed_pass
    stats = type("Stats", (), {"samples_ms": [1.0] * 10})()
    result = check_timed_passes(device, stats, base, tc.shape, flush_l2=False, atol=5e-3, rtol=0.0,
                                expected_from="x", device_clock=True, wall_clock=device.wall_clock)
    assert result.passed and [(p.poisoned, p.attempt) for p in result.passes] == [(True, 1), (False, 1), (False, 2)]


def test_the_host_variant_is_held_to_its_values_only(rng):
    tc = random_testcase(3, 20, 8, rng)
    run = run_variant(get_variant("cpu"), tc, "rand", None, TimingPolicy(warmup=0, reps=2, flush_l2=False))
    timed = run.measurement.timed_check
    assert timed.passed and timed.time_limit_ms is None and timed.clock_warning is None
    assert [p.kinds for p in timed.passes] == [["batch items permuted", "Q rows permuted",
                                                "K and V rows permuted together", "V negated"]] * 2
    assert np.array_equal(run.output, flash_attention_cpu(tc))  # the caller's testcase was not changed
    saved = json.loads(dumps_measurement(run.measurement))
    assert saved["timed_check"]["passed"] is True and TimedCheck.from_dict(saved["timed_check"]) == timed


def test_the_host_variant_with_its_first_pass_as_its_only_sample(rng):
    """With --reps 1 the first pass is the only sample: its output must survive the poison."""
    tc = random_testcase(2, 17, 48, rng)
    run = run_variant(get_variant("cpu"), tc, "rand", None, TimingPolicy(warmup=0, reps=1, flush_l2=False))
    assert run.measurement.timed_check.passed, run.measurement.timed_check.describe()
    assert np.isfinite(run.output).all()


def dumps_measurement(measurement) -> str:
    from attnbench.results.resultset import Cell, ResultSet

    cell = Cell(measurement.variant, measurement.case, "ok", measurement=measurement,
                timed_check=measurement.timed_check.to_dict())
    return json.dumps(json.loads(dumps(ResultSet("compare", {}, {}, [], [], [cell])))["cells"][0]["measurement"])


def test_pass_errors_count_nan_and_tolerance(rng):
    shape = Shape(3, 5, 4)
    base = rng.standard_normal((3, 5, 4)).astype(np.float32)
    transform = InputTransform.draw(shape, rng)
    got = transform.expected_items(base, 0, 3).copy()
    assert pass_errors(got, base, transform, shape, 5e-3, 0.0) == (0, 0, 0.0)
    got[0, 0, 0] += 0.004
    got[1, 1, 1] = np.nan
    got[2, 2, 2] += 0.1
    failing, nonfinite, max_abs = pass_errors(got, base, transform, shape, 5e-3, 0.0)
    assert (failing, nonfinite) == (2, 1) and max_abs == pytest.approx(0.1, rel=1e-4)
    ones = np.ones((3, 5, 4), dtype=np.float32)
    moved = transform.expected_items(ones, 0, 3) + np.float32(0.1)  # every expected element is -1
    assert pass_errors(moved, ones, transform, shape, 5e-3, 0.0)[0] == 60
    assert pass_errors(moved, ones, transform, shape, 5e-3, 0.2)[0] == 0  # 0.1 <= 0.005 + 0.2 * |-1|
