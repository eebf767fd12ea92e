"""attnbench.spread.slurm: the Slurm executor (submitting again only what has no result), and the fixture
for the tests (marker `slurm`) that need a real one-node cluster started by tools/slurm_local.sh (CI
exports its SLURM_CONF)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from attnbench.spread import slurm
from tests.spread.test_pool import Squared


# -- a real one-node cluster ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster():
    """A Slurm that answers with an idle node, or a clean skip (start one with tools/slurm_local.sh)."""
    pytest.importorskip("submitit")
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        pytest.skip("no Slurm here (tools/slurm_local.sh starts a one-node cluster)")
    try:
        states = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=15).stdout
    except (OSError, subprocess.SubprocessError):
        states = ""
    if not any(s.startswith(("idle", "mix", "alloc")) for s in states.split()):
        pytest.skip("Slurm does not answer with a usable node (start one with tools/slurm_local.sh)")


def test_the_slurm_executor_submits_again_only_what_has_no_result_and_tells_each_result(tmp_path, monkeypatch):
    import pickle

    def finished(job_id: str, value: dict) -> None:
        slurm.result_file(tmp_path, job_id).write_bytes(pickle.dumps(("success", value)))

    sent: list[list[tuple]] = []

    def submit_array(folder, options, job_name, calls):
        sent.append([arguments for _, arguments in calls])
        ids = [f"9_{i}" for i in range(len(calls))]
        for job_id, (_, arguments) in zip(ids, calls):
            finished(job_id, {"square": arguments[0] ** 2})
        return ids

    monkeypatch.setattr(slurm, "submit_array", submit_array)
    monkeypatch.setattr(slurm, "squeue_states", lambda: {"8_2": "RUNNING"})
    finished("8_0", {"square": 4})
    ids = {"a": "8_0", "b": "8_1", "c": "8_2", "d": None}
    saved = []
    executor = slurm.SlurmExecutor(tmp_path, slurm.SlurmOptions(poll_s=0), "test", ids, lambda: saved.append(dict(ids)))
    assert executor.outstanding(["a", "b", "c", "d"]) == ["b", "d"]  # c is still queued
    monkeypatch.setattr(slurm, "squeue_states", lambda: {})
    finished("8_2", {"square": 16})
    events: list = []
    results = executor.run({key: (pow, (n, 2)) for key, n in zip("abcd", (2, 3, 4, 5))}, events.append)
    assert sent == [[(3, 2), (5, 2)]] and saved == [{"a": "8_0", "b": "9_0", "c": "8_2", "d": "9_1"}]
    assert events[0] == slurm.JobsSubmitted(["b", "d"], 4, True, "9")
    told = {e.key: e.result["square"] for e in events if isinstance(e, slurm.JobResult)}
    assert told == {"a": 4, "b": 9, "c": 16, "d": 25}
    assert results == {key: {"square": n * n} for key, n in zip("abcd", (2, 3, 4, 5))}


class _Squares:
    """A picklable stand-in for a `Work`: each job a number, its square emitted."""

    def open(self, device, workers):
        return None, "ready"

    def run(self, job, state, emit):
        emit(Squared(job[1] ** 2, state))
        return None

    def close(self, state):
        pass


def test_slurm_workers_are_the_executor_seam_one_slurm_job_per_group_and_a_lost_one_costs_each_of_its_jobs(
        tmp_path, monkeypatch):
    """SlurmWorkers.run(jobs, listener) as InProcess and the pool run them: each group's jobs one Slurm job,
    run in process on the node; its events told with the run's own job indices; a Slurm job that ended
    without a result is a `JobDied` for each of its jobs. The events come back through the pickle as the same
    dataclasses a pool's worker sends. Runs are numbered, so a second run's jobs are new Slurm jobs."""
    import pickle

    from attnbench.spread.executor import DeviceReady, JobDied, JobDone, JobTold

    sent: list[list] = []
    numbers = iter(range(100))

    def submit_array(folder, options, job_name, calls):
        ids = []
        for function, arguments in calls:
            job_id = str(next(numbers))
            work, jobs = arguments
            sent.append([job for job in jobs])
            if jobs[0][0] == "lost":
                slurm.result_file(folder, job_id).write_bytes(pickle.dumps(("error", "Traceback\nMemoryError")))
            else:
                slurm.result_file(folder, job_id).write_bytes(pickle.dumps(("success", function(*arguments))))
            ids.append(job_id)
        return ids

    monkeypatch.setattr(slurm, "submit_array", submit_array)
    monkeypatch.setattr(slurm, "squeue_states", lambda: {})
    ids: dict = {}
    workers = slurm.SlurmWorkers(tmp_path, slurm.SlurmOptions(poll_s=0), "test", _Squares(), lambda job: job[0], ids)
    events: list = []
    jobs = [("a", 2), ("b", 3), ("a", 4), ("lost", 5), ("b", 6)]
    workers.run(jobs, events.append)
    assert sent == [[("a", 2), ("a", 4)], [("b", 3), ("b", 6)], [("lost", 5)]]  # one Slurm job per group
    assert [e for e in events if isinstance(e, JobTold)] == [
        JobTold(0, None, Squared(4, None)), JobTold(2, None, Squared(16, None)),
        JobTold(1, None, Squared(9, None)), JobTold(4, None, Squared(36, None))]
    assert sorted(e.job for e in events if isinstance(e, JobDone)) == [0, 1, 2, 4]
    assert [e for e in events if isinstance(e, DeviceReady)] == [DeviceReady(None, "ready")] * 2
    died = [e for e in events if isinstance(e, JobDied)]
    assert [e.job for e in died] == [3] and "MemoryError" in died[0].how
    assert set(ids) == {(1, "a"), (1, "b"), (1, "lost")}
    workers.run([("a", 7)], events.append)
    assert (2, "a") in ids and ids[(2, "a")] != ids[(1, "a")] and events[-1] == JobDone(0, None, None)


def test_a_refused_sbatch_is_one_line_its_last_words(tmp_path, monkeypatch, capsys):
    """sbatch's whole stderr was joined into the error, its newlines printed as \\n; and submitit copied it to our
    stderr too, four raw lines above the error's one."""
    import contextlib
    import sys
    from types import SimpleNamespace

    class Refusing:
        def __init__(self, **settings):
            pass

        def update_parameters(self, **parameters):
            pass

        @contextlib.contextmanager
        def batch(self):
            yield
            print("sbatch: error: DNS SRV lookup failed", file=sys.stderr)  # as submitit copies sbatch's stderr
            raise subprocess.CalledProcessError(1, "sbatch", output=b"sbatch: error: DNS SRV lookup failed\n"
                                                                    b"sbatch: fatal: Could not establish a source\n")

        def submit(self, function, *arguments):
            return None

    monkeypatch.setattr(slurm, "_submitit", lambda: SimpleNamespace(SlurmExecutor=Refusing))
    with pytest.raises(slurm.SlurmUnavailable) as refused:
        slurm.submit_array(tmp_path, slurm.SlurmOptions(), "job", [(print, ())])
    assert str(refused.value) == "sbatch refused the jobs: sbatch: fatal: Could not establish a source"
    assert capsys.readouterr().err == ""
