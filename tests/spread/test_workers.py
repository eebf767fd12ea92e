"""Spreading a matrix over worker processes, with cpu workers standing in for GPUs."""

from __future__ import annotations

import multiprocessing
import os
import signal

import pytest
from click.testing import CliRunner

from attnbench import api
from attnbench.bench.check_rule import CourseRule
from attnbench.bench.sampler import TimingPolicy
from attnbench.cases.inputs import SyntheticInput
from attnbench.cases.testcase import Shape
from attnbench.cli import main
from attnbench.errors import TestcaseError, UsageError
from attnbench.kernels.catalogue import REGISTRY
from attnbench.results.matrix_events import BarClosed, BarOpened, CellFinished, CellStarted, MatrixBegun
from attnbench.results.resultset import ERROR
from attnbench.spread import pool as gpu_pool
from attnbench.spread.cellgroups import CellPlan
from attnbench.spread.devices import CPU_WORKERS_ENV, Device, devices_for
from attnbench.spread.executor import DeviceReady, ExecutorEvent, JobDone, JobTold
from attnbench.spread.pool import GpuPool
from attnbench.spread.workers import (
    CaseGroupWork,
    CaseLoaded,
    CellMeasured,
    MatrixInterrupted,
    SpreadMatrix,
    VariantStarted,
    run_here,
)
from tests.bench.fake_cells import LosingGpu, UnreadableInput, fake_cells
from tests.bench.test_run_input import CPU32, FAULT, variants
from tests.spread.one_device import matrix_here

CASES = "odd_17x48,odd_100x32,t02,odd_1000x64,odd_33x64"
POLICY = lambda v: TimingPolicy(warmup=0, reps=1, flush_l2=False)


def essentials(result):
    """What must not depend on where cells ran: cells, their statuses and checks, and the inputs."""
    cells = [(c.variant, c.case, c.status, c.message if c.status != "ok" else "", c.check) for c in result.cells]
    return cells, [c.to_dict() for c in result.cases], result.baseline, result.variant_names


@pytest.fixture
def two_cpu_workers(monkeypatch):
    monkeypatch.setenv(CPU_WORKERS_ENV, "2")


def test_two_workers_give_the_cells_and_checks_of_one_process(two_cpu_workers):
    single = api.compare("cpu", CASES)
    spread = api.compare("cpu", CASES, gpus="all")
    assert essentials(spread) == essentials(single)
    assert all(c.ok for c in spread.cells)
    assert {c.extra["gpu"]["index"] for c in spread.cells} <= {0, 1}
    assert all(c.extra["gpu"]["name"].startswith("cpu worker") for c in spread.cells)
    assert spread.settings.executor == "local: cpu worker 0, cpu worker 1"
    assert "gpu" not in single.cells[0].extra


def kill_at(monkeypatch, case: str) -> list[tuple[int, int]]:
    """Kill the worker that starts the first cell on `case`, as the pool hears of it; the list says whom."""
    killed: list[tuple[int, int]] = []
    handle = GpuPool._handle

    def handle_then_kill(pool: GpuPool, event: ExecutorEvent) -> None:
        handle(pool, event)
        if isinstance(event, JobTold) and isinstance(event.event, VariantStarted) \
                and pool.jobs[event.job][0].label == case and not killed:
            slot = pool.slots[event.device.index]
            os.kill(slot.process.pid, signal.SIGKILL)
            killed.append((slot.process.pid, slot.device.index))

    monkeypatch.setattr(GpuPool, "_handle", handle_then_kill)
    return killed


def test_a_killed_worker_loses_only_its_cell(two_cpu_workers, monkeypatch):
    single = api.compare("cpu", CASES)
    notes = []
    killed = kill_at(monkeypatch, "t02")
    spread = api.compare("cpu", CASES, gpus="0,1", notice=notes.append)
    assert killed
    errors = [c for c in spread.cells if c.status == "error"]
    assert [c.case for c in errors] == ["t02"]
    assert "died (signal 9) while running this cell" in errors[0].message
    assert any("died" in note and "starting another" in note for note in notes)
    kept = [x for x in essentials(single)[0] if x[1] != "t02"]
    assert [x for x in essentials(spread)[0] if x[1] != "t02"] == kept
    assert len(spread.cells) == len(single.cells)


def stop_after_first(event: object) -> None:
    """A listener that presses Ctrl-C once the first cell is in."""
    if isinstance(event, CellFinished):
        raise KeyboardInterrupt


def test_ctrl_c_stops_the_workers_and_keeps_what_was_measured(two_cpu_workers):
    with pytest.raises(MatrixInterrupted) as caught:
        api.compare("cpu", CASES, gpus="all", listener=stop_after_first)
    assert caught.value.exit_code == 130
    partial = caught.value.partial
    assert 1 <= len(partial.cells) < 5 and all(c.ok for c in partial.cells)
    assert [c.label for c in partial.cases] == CASES.split(",")
    assert not [p for p in multiprocessing.active_children() if p.name.startswith("attnbench-")]


def test_stand_ins_run_only_the_cpu_variant(two_cpu_workers):
    assert devices_for("all") == [Device(0, True), Device(1, True)]
    with pytest.raises(UsageError, match="only the cpu variant"):
        api.compare("naive", "odd_17x48", gpus="all")


def test_exit_codes_of_the_options(monkeypatch, tmp_path):
    runner = CliRunner()

    def code(*args: str) -> int:
        return runner.invoke(main, ["compare", "-v", "cpu", "-c", "odd_17x48", "--no-save", *args]).exit_code

    assert code("--gpus", "gpu0") == 2
    assert code("--gpus", "0", "--executor", "slurm") == 2
    monkeypatch.setenv(CPU_WORKERS_ENV, "2")
    assert code("--gpus", "2") == 2
    assert code("--gpus", "1") == 0
    monkeypatch.delenv(CPU_WORKERS_ENV)
    from attnbench.backends.gpu import gpu_probe

    if gpu_probe() is not None:
        assert code("--gpus", "all") == 3  # no GPU here
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch
    assert code("--executor", "slurm", "--results-dir", str(tmp_path)) == 3


def test_a_sweep_spread_over_workers_matches_one_process(two_cpu_workers):
    single = api.sweep("N", "cpu", values="64,128,256", batch=2, head_dim=32)
    spread = api.sweep("N", "cpu", values="64,128,256", batch=2, head_dim=32, gpus="all")
    assert essentials(spread) == essentials(single)
    assert spread.settings.sweep == "N" and spread.settings.elapsed_s > 0


def test_a_cell_plan_carries_an_exe_program_by_its_path(tmp_path):
    """An `exe:` program is no catalogue name: the plan a worker or a Slurm job gets names its path."""
    import pickle

    from attnbench.spread.cellgroups import CellPlan
    from attnbench.backends.program import program_variant
    from attnbench.kernels.catalogue import get_variant

    program = tmp_path / "prog"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    chosen = [get_variant("cpu"), program_variant(f"exe:{program}")]
    plan = pickle.loads(pickle.dumps(CellPlan.of(chosen, api.TimingOptions().policy_for, CourseRule(0.005, 0.0))))
    assert [(v.name, v.backend, v.source) for v in plan.variants()] == [
        ("cpu", "cpu", None), ("exe:prog", "program", str(program.resolve()))]


def test_a_worker_keeps_to_its_share_of_the_host(monkeypatch):
    """Workers sharing a host split its cores (their references and checks, BLAS included) instead
    of each running every core's worth of threads against the others."""
    import queue

    from threadpoolctl import threadpool_info, threadpool_limits

    from attnbench.spread.cellgroups import CellPlan
    from attnbench.bench.sampler import TimingPolicy
    from attnbench.host_threads import HOST_THREADS_ENV, share_of

    monkeypatch.setenv(HOST_THREADS_ENV, "")  # whatever the worker claims is undone after the test
    monkeypatch.setattr(gpu_pool.signal, "signal", lambda *args: None)  # this process keeps its Ctrl-C
    monkeypatch.setattr("attnbench.host_threads.host_cores", lambda: 12)
    plan = CellPlan(("cpu",), {"cpu": TimingPolicy()})
    inbox, sent = queue.Queue(), []
    inbox.put(None)
    with threadpool_limits(limits=None, user_api="blas"):  # puts back the BLAS limits it found
        gpu_pool.worker_main(CaseGroupWork(plan), Device(0, stand_in=True), inbox,
                             type("Pipe", (), {"send": sent.append})(), 3)
        blas = {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}
    assert os.environ[HOST_THREADS_ENV] == str(share_of(3)) == "4"
    assert blas <= {4}
    assert isinstance(sent[0], DeviceReady)


def test_the_workers_pytorch_versions_reach_the_run_without_the_parent_importing_it():
    from attnbench.kernels.catalogue import variants_for

    spread = SpreadMatrix(variants_for("cpu"), [])
    versions = {"torch_version": "2.11.0", "torch_cuda_version": "13.0"}
    spread.hear(DeviceReady(Device(0), ({"name": "GPU A"}, "sm_90", None)))
    assert spread.summary.torch_versions is None
    spread.hear(DeviceReady(Device(1), ({"name": "GPU B"}, "sm_90", versions)))
    assert spread.summary.torch_versions == versions
    assert spread.summary.all_facts() == [{"name": "GPU A"}, {"name": "GPU B"}]


def test_groups_are_dealt_by_their_expected_seconds_host_work_included():
    """t11 (55.7M elements, 29 GFLOP) takes longer than t29 (4.2M elements, 550 GFLOP): dealt by FLOPs
    alone, the long host work of t11 came last and left one GPU idle at the end."""
    from attnbench.spread.cellgroups import group_seconds
    from attnbench.cases.inputs import inputs_for
    from attnbench.kernels.catalogue import variants_for

    variants = variants_for("tf32x3,qreg")
    inputs = inputs_for("t10,t11,t22,t29")
    ranked = sorted(inputs, key=lambda i: -group_seconds(variants, i))
    assert [i.label for i in ranked] == ["t22", "t11", "t29", "t10"]
    assert group_seconds(variants_for("tf32x3"), inputs_for("sq8192")[0]) == 0.0  # d = 8192: refused


@pytest.mark.gpu
def test_the_hosts_gpus_give_the_cells_and_checks_of_one_process():
    """Real GPU workers (one per GPU of this host; one where there is one GPU): the same cells and
    checks as one process, every cell naming its GPU, and PyTorch's versions from the workers."""
    from attnbench.backends.gpu import gpu_probe

    reason = gpu_probe()
    if reason is not None:
        pytest.skip(f"no usable GPU: {reason}")
    import pycuda.driver as driver

    timing = api.TimingOptions(warmup=0, reps=2)
    cases = "odd_17x48,odd_100x32,t02,odd_33x64"
    with_torch = "tf32x3,qreg" + (",torch" if _torch_sees_a_gpu() else "")
    single = api.compare(with_torch, cases, timing=timing)
    spread = api.compare(with_torch, cases, timing=timing, gpus="all")
    assert essentials(spread) == essentials(single)
    count = driver.Device.count()
    for cell in (c for c in spread.cells if c.status != "refused"):
        where = cell.extra["gpu"]
        assert 0 <= where["index"] < count and where["name"] == spread.metadata["gpus"][0]["name"]
    if "torch" in with_torch:
        assert spread.metadata["torch_version"] == single.metadata["torch_version"]


def _torch_sees_a_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def test_a_worker_whose_context_is_lost_says_so_and_stops(monkeypatch):
    import queue

    from attnbench.bench.sampler import TimingPolicy
    from attnbench.spread.cellgroups import CellPlan, OpenDevice
    from attnbench.spread import workers

    lost = "the CUDA context was lost after naive failed on t02 (an illegal memory access was encountered)"
    monkeypatch.setattr(gpu_pool.signal, "signal", lambda *args: None)  # this process keeps its Ctrl-C
    monkeypatch.setattr(workers, "claim_share", lambda count: None)
    monkeypatch.setattr(workers, "open_device", lambda device, variants: OpenDevice(None, None))
    monkeypatch.setattr(workers, "run_case_group", lambda plan, bench_input, names, device, report, **how: lost)
    inbox, sent = queue.Queue(), []
    for group in (0, 1):
        inbox.put((group, (None, ["naive"])))
    gpu_pool.worker_main(CaseGroupWork(CellPlan(("naive",), {"naive": TimingPolicy()})), Device(0), inbox,
                         type("Pipe", (), {"send": sent.append})(), 1)
    assert [type(e) for e in sent] == [DeviceReady, JobDone] and sent[1] == JobDone(0, Device(0), lost)
    assert inbox.get_nowait()[0] == 1  # the next group was never taken


def test_the_pool_gives_up_a_device_whose_context_is_lost():
    import queue
    from collections import deque

    from attnbench.bench.sampler import TimingPolicy
    from attnbench.cases.inputs import inputs_for
    from attnbench.kernels.catalogue import variants_for
    from attnbench.spread.cellgroups import CellPlan

    variants = variants_for("cpu")
    notes = []
    spread = SpreadMatrix(variants, inputs_for("t01,t02"), warn=notes.append)
    spread.jobs = [(0, []), (1, ["cpu"])]  # the first group's cells have all come back
    pool = GpuPool([Device(0), Device(1)], CaseGroupWork(CellPlan.of(variants, lambda v: TimingPolicy(), CourseRule())))
    pool.jobs, pool.pending, pool.listener = [None, None], deque([1]), spread.hear
    for slot in pool.slots.values():
        slot.inbox = queue.Queue()
    pool.slots[0].job = 0
    pool.slots[1].retired = True
    lost = "the CUDA context was lost after cpu failed on t01 (an illegal memory access was encountered)"
    pool._handle(JobDone(0, Device(0), lost))
    assert pool.slots[0].retired and pool.slots[0].job is None
    assert notes == [f"GPU 0 runs no more cells: {lost}"]
    pool._loop()  # no device is left for the pending group
    cell = spread.cells[("cpu", "t02")]
    assert cell.status == "error" and cell.message == f"not run: no device is left (GPU 0: {lost})"


def test_the_case_groups_give_the_same_cells_through_any_executor(two_cpu_workers):
    """The seam: the same work and the same listener, in this process or on the pool."""
    from attnbench.bench.sampler import TimingPolicy
    from attnbench.cases.inputs import inputs_for
    from attnbench.kernels.catalogue import variants_for
    from attnbench.spread.cellgroups import CellPlan
    from attnbench.spread.executor import InProcess

    variants, inputs = variants_for("cpu"), inputs_for(CASES)
    plan = CellPlan.of(variants, lambda v: TimingPolicy(warmup=0, reps=1, flush_l2=False), CourseRule())
    here = SpreadMatrix(variants, inputs)
    cases_here, cells_here = here.run(InProcess(CaseGroupWork(plan), Device(0, True)))
    spread = SpreadMatrix(variants, inputs)
    with GpuPool(devices_for("all"), CaseGroupWork(plan), spread.rest_of) as pool:
        cases_spread, cells_spread = spread.run(pool)
    assert [c.to_dict() for c in cases_here] == [c.to_dict() for c in cases_spread]
    assert [(c.variant, c.case, c.status, c.check) for c in cells_here] == [
        (c.variant, c.case, c.status, c.check) for c in cells_spread]
    assert all(c.ok for c in cells_here) and here.summary.used is False


# -- run_here: the one-device matrix, its case groups through InProcess ------------------------------
def test_a_one_process_run_stops_on_an_input_that_cannot_be_loaded(monkeypatch):
    fake_cells(monkeypatch, {})
    inputs = [SyntheticInput(Shape(1, 9, 8), 1), UnreadableInput(Shape(1, 9, 8), 2, "broken")]
    with pytest.raises(TestcaseError, match="broken: the file ends"):
        matrix_here(variants("cpu"), inputs, None, POLICY)


def test_once_the_context_is_lost_no_later_input_is_loaded(monkeypatch):
    fake_cells(monkeypatch, {"naive": ERROR})
    first = SyntheticInput(Shape(1, 9, 8), 1)
    inputs = [first, UnreadableInput(Shape(1, 9, 32), 2, "never_read")]  # loading it would raise
    infos, cells = matrix_here(variants("naive", "cpu32"), inputs, LosingGpu(FAULT), POLICY)
    why = f"not run: the CUDA context was lost after naive failed on {first.label} ({FAULT})"
    assert [(c.variant, c.case, c.status) for c in cells] == [
        ("naive", first.label, "error"), ("cpu32", first.label, "refused"),
        ("naive", "never_read", "error"), ("cpu32", "never_read", "error")]
    assert cells[2].message == cells[3].message == why
    assert infos[1].origin == "not loaded" and infos[1].note == why


def test_after_a_lost_context_a_variant_this_gpu_refuses_is_still_refused_and_nothing_more_is_said(monkeypatch):
    fake_cells(monkeypatch, {"naive": ERROR})
    first, second = SyntheticInput(Shape(1, 9, 8), 1), SyntheticInput(Shape(1, 9, 32), 2)
    notes: list[str] = []
    _, cells = run_here(Device(0), LosingGpu(FAULT), variants("naive", "gemmwg3x"),
                        CellPlan.of(variants("naive", "gemmwg3x"), POLICY, CourseRule()), [first, second],
                        warn=notes.append)
    assert [(c.variant, c.case, c.status) for c in cells] == [
        ("naive", first.label, "error"), ("gemmwg3x", first.label, "refused"),
        ("naive", second.label, "error"), ("gemmwg3x", second.label, "refused")]
    assert "sm_90a" in cells[3].message and notes == []  # the cells say why; no notice as a pool gives


def test_an_input_every_variant_refuses_is_not_loaded(monkeypatch):
    fake_cells(monkeypatch, {})
    infos, cells = matrix_here([CPU32], [UnreadableInput(Shape(1, 9, 8), 2, "refused")], None, POLICY)
    assert infos[0].origin == "not loaded" and infos[0].note == "every variant refused it"
    assert [c.status for c in cells] == ["refused"]


def test_the_listener_hears_each_cell_with_its_work(monkeypatch):
    fake_cells(monkeypatch, {})
    heard: list[tuple] = []

    def listener(event: object) -> None:
        match event:
            case MatrixBegun(cells=cells, work=work):
                heard.append(("start", cells, work))
            case CellStarted(variant=variant, case=case):
                heard.append(("started", variant, case))
            case CellFinished(cell=cell, work=work):
                heard.append((cell.variant, cell.status, work))

    bench_input = SyntheticInput(Shape(1, 9, 8), 1)
    matrix_here(variants("cpu", "cpu32"), [bench_input], None, POLICY, listener=listener)
    work = float(bench_input.shape.flops) * REGISTRY["cpu"].kind.cost_weight
    assert heard == [("start", 2, work), ("started", "cpu", bench_input.label), ("cpu", "ok", work),
                     ("cpu32", "refused", 0.0)]


def test_a_case_group_shows_the_bars_of_its_input_and_reference_as_events():
    from attnbench.spread.cellgroups import CellPlan, OpenDevice

    here = OpenDevice(None, None)
    work = CaseGroupWork(CellPlan.of(variants("cpu"), POLICY, CourseRule()), here)
    events: list[object] = []
    bench_input = SyntheticInput(Shape(1, 9, 8), 1)
    state, _ = work.open(Device(0), 1)
    assert work.run((bench_input, ["cpu"]), state, events.append) is None
    bars = [e.description for e in events if isinstance(e, BarOpened)]
    assert bars == [f"generating {bench_input.label}", f"float64 reference of {bench_input.label}"]
    assert [e.description for e in events if isinstance(e, BarClosed)] == bars
    assert [type(e) for e in events][-3:] == [CaseLoaded, VariantStarted, CellMeasured]
