"""The first pass as the cell engine's strategy: the input whole (`WholeInput`) or streamed (`StreamedFile`), and
`run`, compare and the workers all reaching the one engine (`runner.run_cell`); the streamed pass end to end is `test_runner_pipelined`'s."""

from __future__ import annotations

import numpy as np
import pytest

from attnbench.bench import matrix, runner
from attnbench.bench.first_pass import WholeInput
from attnbench.bench.matrix import MatrixSettings, course_check
from attnbench.bench.runner import run_case, run_cell
from attnbench.bench.sampler import TimingPolicy
from attnbench.cases.inputs import SyntheticInput
from attnbench.cases.reference import reference_output
from attnbench.cases.testcase import Shape, read_output
from attnbench.errors import KernelLaunchError
from attnbench.kernels.catalogue import get_variant
from tests.conftest import random_testcase

ONE_PASS = TimingPolicy(warmup=0, reps=1, flush_l2=False)


class FailingLaunch:
    """An execution whose kernel fails to launch."""

    freed = False

    def upload(self) -> None:
        pass

    def run_pass(self) -> None:
        raise KernelLaunchError("launch failed: too many resources requested")

    def free(self) -> None:
        self.freed = True


def test_a_failed_first_launch_names_the_case(rng):
    first, execution = WholeInput(random_testcase(1, 8, 4, rng), "mine.in"), FailingLaunch()
    with pytest.raises(KernelLaunchError, match=r"too many resources requested \(case mine.in\)$"):
        first.run(execution)


def test_the_whole_input_writes_its_output_once_measured_with_its_read_time(rng, tmp_path):
    tc, out = random_testcase(2, 16, 8, rng), tmp_path / "out.bin"
    run = run_cell(get_variant("cpu"), WholeInput(tc, "rand", input_s=0.25, out=out), None, ONE_PASS)
    m = run.measurement
    assert m.input_s == 0.25 and m.output_s is not None and m.clock is None
    assert np.array_equal(read_output(out, tc.shape), run.output)
    assert np.allclose(run.output, reference_output(tc), atol=1e-5)


def test_without_a_check_the_first_output_is_still_scanned_for_nan(rng):
    tc = random_testcase(1, 8, 4, rng)
    run = run_cell(get_variant("cpu"), WholeInput(tc, "rand"), None, ONE_PASS)
    assert run.check.passed and run.check.elements == tc.shape.elements and run.measurement.nonfinite == 0


def test_a_gated_cell_whose_first_output_fails_is_not_timed(rng):
    run = run_cell(get_variant("cpu"), WholeInput(random_testcase(1, 8, 4, rng), "rand"), None, ONE_PASS,
                   lambda output: course_check()(output, output + 1.0), gate=True)
    assert run.measurement is None and run.timed_check is None and not run.check.passed


def engine_calls(monkeypatch) -> list:
    """Every first pass the engine is given, in order."""
    seen: list = []
    engine = runner.run_cell

    def recording(variant, first, *args, **kwargs):
        seen.append(first)
        return engine(variant, first, *args, **kwargs)

    monkeypatch.setattr(runner, "run_cell", recording)
    monkeypatch.setattr(matrix, "run_cell", recording)
    return seen


def test_run_and_a_compare_cell_reach_the_same_engine(monkeypatch, tmp_path):
    seen = engine_calls(monkeypatch)
    bench_input = SyntheticInput(Shape(1, 12, 8), seed=2)
    run_case(get_variant("cpu"), bench_input, None, ONE_PASS, tmp_path / "out.bin", check=True)
    testcase = bench_input.load()
    settings = MatrixSettings(policy=lambda variant: ONE_PASS)
    cell = matrix.measure_cell(get_variant("cpu"), "synthetic", testcase, reference_output(testcase), None, settings)
    assert cell.status == "ok"
    assert [type(first) for first in seen] == [WholeInput, WholeInput]

