"""attnbench.spread.executor: the one list of executors, the one placement check, the in-process executor."""

from __future__ import annotations

import pytest

from attnbench.errors import UsageError
from attnbench.spread.devices import Device
from attnbench.spread.executor import (
    EXECUTOR_OPTIONS,
    EXECUTORS,
    GPU_POOL,
    IN_PROCESS,
    SLURM,
    DeviceLost,
    DeviceReady,
    DeviceUnusable,
    ExecutorEvent,
    InProcess,
    JobDone,
    JobNotRun,
    JobTold,
    choose_executor,
)
from tests.spread.test_pool import Squared, ToyWork, squares


def test_each_executor_is_chosen_one_way():
    assert EXECUTOR_OPTIONS == ("local", "slurm") and [k.name for k in EXECUTORS] == ["in-process", "gpu-pool", "slurm"]
    assert choose_executor(None, "local") == IN_PROCESS
    assert choose_executor("all", "local") == GPU_POOL
    assert choose_executor(None, "slurm") == SLURM
    with pytest.raises(UsageError, match="--executor cloud: choose local or slurm"):
        choose_executor(None, "cloud")
    with pytest.raises(UsageError, match="with --executor slurm each job gets its GPU from --gres"):
        choose_executor("0", "slurm")


def test_in_process_runs_the_jobs_here_and_tells_the_same_events():
    events: list[ExecutorEvent] = []
    device = Device(0, True)
    InProcess(ToyWork(), device).run([("n", 2), ("lose",), ("n", 3)], events.append)
    assert events == [DeviceReady(device, "cpu worker 0 of 1"), JobTold(0, device, Squared(4, 0)), JobDone(0, device),
                      JobDone(1, device, "the device fell off the bus"), DeviceLost(device, "the device fell off the bus"),
                      JobNotRun(2, device, "not run: the device fell off the bus")]
    assert squares(events) == {0: 4}
    events.clear()
    InProcess(ToyWork(unusable=(0,)), device).run([("n", 2)], events.append)
    assert events == [DeviceUnusable(device, "no such device"),
                      JobNotRun(0, device, "not run: cpu worker 0 could not start (no such device)")]


def test_in_process_lets_its_work_close_its_state_even_when_ctrl_c_comes_between_two_jobs():
    """A class's worker keeps, between a row's jobs, the next run's room opened ahead: a Ctrl-C between two jobs
    (the listener's, as here) left it open, its view mounted, since nothing closed what the state held."""
    closed: list[object] = []

    class Closing(ToyWork):
        def close(self, state) -> None:
            closed.append(state)

    def interrupted(event: ExecutorEvent) -> None:
        if isinstance(event, JobDone):
            raise KeyboardInterrupt

    device = Device(0, True)
    with pytest.raises(KeyboardInterrupt):
        InProcess(Closing(), device).run([("n", 2), ("n", 3)], interrupted)
    assert closed == [0]
    InProcess(Closing(), device).run([("n", 2)], lambda event: None)
    assert closed == [0, 0]


@pytest.mark.parametrize(("gpus", "executor", "words"), [
    (None, "cloud", "--executor cloud: choose local or slurm"),
    ("0", "slurm", "--gpus spreads over this host's GPUs; with --executor slurm each job gets its GPU"),
])
def test_compare_sweep_and_judge_refuse_a_placement_in_the_same_words(tmp_path, gpus, executor, words):
    from attnbench import api
    from attnbench.api import programs as api_programs

    (tmp_path / "alice.c").write_text("int main(void) { return 0; }\n")
    calls = [lambda: api.compare("cpu", "odd_17x48", gpus=gpus, executor=executor),
             lambda: api.sweep("N", "cpu", values="64", batch=1, head_dim=32, gpus=gpus, executor=executor),
             lambda: api_programs.judge_class([tmp_path], "odd_17x48", gpus=gpus, executor=executor)]
    for call in calls:
        with pytest.raises(UsageError, match=words.replace("?", "[?]")):
            call()
