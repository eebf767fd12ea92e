"""run_input: the cells of one loaded input, the loop of every case group (`spread.cellgroups.run_case_group`),
in this process or a worker's."""

from __future__ import annotations

import numpy as np
import pytest

from attnbench.bench.matrix import CellEvents, LoadedInput, MatrixSettings, run_input
from attnbench.bench.sampler import TimingPolicy
from attnbench.cases.inputs import SyntheticInput
from attnbench.cases.testcase import Shape
from attnbench.kernels.catalogue import REGISTRY
from attnbench.kernels.variant import Constraints, Variant
from attnbench.results.resultset import ERROR
from tests.bench.fake_cells import LosingGpu, fake_cells

SETTINGS = MatrixSettings(policy=lambda v: TimingPolicy(warmup=0, reps=1, flush_l2=False))
FAULT = "an illegal memory access was encountered"
CPU32 = Variant(name="cpu32", report="test", technique="test", backend="cpu", constraints=Constraints(head_dims=(32,)))


def loaded(shape: Shape = Shape(1, 9, 8)) -> LoadedInput:
    bench_input = SyntheticInput(shape, 1)
    return LoadedInput(bench_input.label, bench_input.load(), np.zeros(1, dtype=np.float32))


def recorded() -> tuple[list[tuple], CellEvents]:
    """Events as they come: ("started", variant) and (variant, status, message)."""
    log: list[tuple] = []
    events = CellEvents(lambda name: log.append(("started", name)),
                        lambda cell: log.append((cell.variant, cell.status, cell.message)))
    return log, events


def variants(*names: str) -> list[Variant]:
    return [CPU32 if name == "cpu32" else REGISTRY[name] for name in names]


def test_each_variant_is_started_then_finished_and_a_refusal_is_never_started(monkeypatch):
    ran = fake_cells(monkeypatch, {})
    log, events = recorded()
    gpu = LosingGpu(None)
    lost = run_input(variants("cpu", "cpu32", "naive", "gemmwg3x"), loaded(), gpu, SETTINGS, events)
    assert lost is None and ran == ["cpu", "naive"]
    assert log[:2] == [("started", "cpu"), ("cpu", "ok", "")]
    assert log[2][:2] == ("cpu32", "refused") and "d=8" in log[2][2]  # the shape's refusal
    assert log[3:5] == [("started", "naive"), ("naive", "ok", "")]
    assert log[5][:2] == ("gemmwg3x", "refused") and "sm_90a" in log[5][2]  # this GPU's refusal


def test_a_lost_context_ends_the_input_with_cells_not_run_and_is_returned(monkeypatch):
    ran = fake_cells(monkeypatch, {"naive": ERROR})
    log, events = recorded()
    lost = run_input(variants("naive", "cpu", "cpu32", "kernels"), loaded(), LosingGpu(FAULT), SETTINGS, events)
    assert lost == f"the CUDA context was lost after naive failed on B1_N9_d8 ({FAULT})"
    assert ran == ["naive"]
    assert log[:2] == [("started", "naive"), ("naive", "error", "naive failed")]
    assert log[2] == ("cpu", "error", f"not run: {lost}")
    assert log[3][:2] == ("cpu32", "refused")  # a refusal stays a refusal
    assert log[4] == ("kernels", "error", f"not run: {lost}")
    assert len(log) == 5


def test_a_failure_that_leaves_the_context_working_costs_only_its_cell(monkeypatch):
    ran = fake_cells(monkeypatch, {"naive": ERROR})
    log, events = recorded()
    gpu = LosingGpu(None)
    assert run_input(variants("naive", "kernels"), loaded(), gpu, SETTINGS, events) is None
    assert ran == ["naive", "kernels"] and gpu.asked == 1 and log[-1] == ("kernels", "ok", "")


def test_a_host_variant_failure_does_not_ask_after_the_context(monkeypatch):
    fake_cells(monkeypatch, {"cpu": ERROR})
    gpu = LosingGpu(FAULT)
    assert run_input(variants("cpu", "naive"), loaded(), gpu, SETTINGS, recorded()[1]) is None
    assert gpu.asked == 0


def test_an_unexpected_exception_stops_a_one_process_run(monkeypatch):
    ran = fake_cells(monkeypatch, {"cpu": RuntimeError("a bug")})
    log, events = recorded()
    with pytest.raises(RuntimeError, match="a bug"):
        run_input(variants("cpu", "naive"), loaded(), None, SETTINGS, events)
    assert ran == ["cpu"] and log == [("started", "cpu")]


def test_a_worker_makes_an_unexpected_exception_its_cells_error_and_goes_on(monkeypatch):
    ran = fake_cells(monkeypatch, {"cpu": RuntimeError("a bug")})
    log, events = recorded()
    assert run_input(variants("cpu", "naive"), loaded(), None, SETTINGS, events, failures_as_cells=True) is None
    assert ran == ["cpu", "naive"]
    assert ("cpu", "error", "RuntimeError: a bug") in log and log[-1] == ("naive", "ok", "")


def test_a_variant_whose_arithmetic_cannot_hold_the_check_on_the_inputs_values_gets_a_refused_cell():
    from dataclasses import replace

    from attnbench.results.refusal import RefusalKind
    from attnbench.cases.reference import reference_output
    from attnbench.results.resultset import REFUSED

    rounded = replace(REGISTRY["cpu"], name="cpu16", unit="wgmma16s")  # the cpu variant given split FP16's roundings
    bench_input = SyntheticInput(Shape(1, 9, 8), 1)
    testcase = bench_input.load()
    testcase.qkv[:, 2] *= 1000 / 3
    testcase.qkv[0, 2, 0, 0] = 1000.0
    cells = []
    run_input([rounded, REGISTRY["cpu"]], LoadedInput("v1000", testcase, reference_output(testcase)), None,
              SETTINGS, CellEvents(lambda name: None, cells.append))
    refused, ran = cells
    assert refused.status == REFUSED and refused.refusal.kind is RefusalKind.PRECISION
    assert refused.message == ("cpu16 cannot meet 0.005 on this input: |V| up to 1000 gives FP16 rounding errors up "
                               "to 0.74 per element (V 0.25, P 0.49); use a float32 variant (the default, --accuracy "
                               "float32)")
    assert ran.variant == "cpu" and ran.status != REFUSED
    assert refused.refusal.group_text() == "cpu16 cannot meet 0.005 on this input"  # how refused cells group
