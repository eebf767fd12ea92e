"""attnbench.judge.class_flow: one flow judges a class whatever executor carries its jobs. The same class on the
in-process worker, on a pool of stand-in workers and on the Slurm path without a cluster (each Slurm job's call
made here, its result left where submitit leaves it) gives the same verdicts, the same saved seeds and the same
events."""

from __future__ import annotations

import importlib.util
import itertools
import pickle
import shutil
from collections import Counter
from dataclasses import astuple, is_dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

from attnbench.analysis.time_left import ClassProgress
from attnbench.api import programs as api_programs
from attnbench.judge import fresh_inputs
from attnbench.judge.gpu_needed import NOT_JUDGED_HERE
from attnbench.results.judge_events import CaseJudged, NotJudgedHere, RerunJudged, SubmissionBuilt
from attnbench.spread import executor, slurm
from attnbench.spread.devices import CPU_WORKERS_ENV, no_gpu_here
from tests.judge.classes import CASES, EXAMPLE, ORDER, RANKS, can_build, class_sandbox, verdicts, wrapping

COURSE_PROGRAM = Path(__file__).resolve().parents[2] / "examples" / "course_program" / "hw4.cu"

EXECUTORS = ("in-process", "pool", "slurm")




@pytest.fixture
def slurm_here(monkeypatch):
    """Slurm without a cluster: each job's call (pickled and back, as submitit sends it) made here at
    submission, its result left as submitit leaves it; squeue shows no job active. Returns the calls made."""
    made: list[int] = []
    numbers = itertools.count(100)

    def submit_array(folder, options, job_name, calls):
        ids = []
        for call in calls:
            function, arguments = pickle.loads(pickle.dumps(call))
            job_id = str(next(numbers))
            slurm.result_file(folder, job_id).write_bytes(pickle.dumps(("success", function(*arguments))))
            made.append(len(arguments[1]))
            ids.append(job_id)
        return ids

    monkeypatch.setattr(slurm, "submit_array", submit_array)
    monkeypatch.setattr(slurm, "squeue_states", lambda: {})
    monkeypatch.setattr(slurm, "_submitit", lambda: None)  # no sbatch asked for: a machine without Slurm runs it too
    return made


def judged_on(where: str, classroom: Path, tmp_path: Path, monkeypatch, cases: str = CASES,
              stand_ins: bool = True) -> tuple:
    """The class judged on one executor, each run drawing the same seeds: the board and what its listener heard.
    The pool's workers stand in for GPUs (two cpu workers), or are this host's GPUs."""
    seeds = itertools.count(1)
    monkeypatch.setattr(fresh_inputs, "secrets", SimpleNamespace(randbits=lambda bits: next(seeds)))
    options: dict = {}
    if where == "pool":
        if stand_ins:
            monkeypatch.setenv(CPU_WORKERS_ENV, "2")
        options = {"gpus": "all"}
    elif where == "slurm":
        options = {"executor": "slurm", "slurm": slurm.SlurmOptions(folder=tmp_path / "jobs", poll_s=0.0)}
    events: list = []
    board = api_programs.judge_class([classroom], cases, time_limits="none", rerun_top=1, sandbox=class_sandbox(),
                                     listener=events.append, **options)
    return board, events


def heard(events: list) -> Counter:
    """What a listener heard, as a TA reads it: builds, verdicts and phases, whatever order workers ended in."""
    said: Counter = Counter()
    for event in events:
        if isinstance(event, SubmissionBuilt):
            said[astuple(event)] += 1
        elif isinstance(event, (CaseJudged, RerunJudged)):
            said[(type(event).__name__, event.submission, event.case, event.entry.verdict)] += 1
        elif isinstance(event, ClassProgress):
            said[(event.phase, event.done, event.total, event.note)] += 1
        elif isinstance(event, NotJudgedHere):
            said[astuple(event)] += 1
        else:
            raise AssertionError(f"an untyped event: {event!r}")
    return said


def test_every_executor_gives_the_same_verdicts_seeds_and_events(classroom, tmp_path, monkeypatch, slurm_here):
    results = {where: judged_on(where, classroom, tmp_path, monkeypatch) for where in EXECUTORS}
    here, _ = results["in-process"]
    assert [r.name for r in here.rows] == ORDER and {r.name: r.rank for r in here.rows} == RANKS
    assert set(here.settings["seeds"]) == {"first", "rerun 2", "rerun 3"}  # every round's, on every executor
    for where, (board, events) in results.items():
        assert verdicts(board) == verdicts(here), where
        assert [r.reruns for r in board.rows] == [3, 1, 1, 1, 1], where
        assert board.settings["seeds"] == here.settings["seeds"], where
        assert heard(events) == heard(results["in-process"][1]), where
        assert not board.interrupted and "stopped_by" not in board.settings, where
    assert slurm_here == [2, 2, 2, 2, 2, 2]  # a Slurm job per built submission, then per rerun round of the top one
    assert not (tmp_path / "jobs").exists()  # the jobs folder goes once the class is judged
    built = sorted((e.submission, e.ok) for e in results["slurm"][1] if isinstance(e, SubmissionBuilt))
    assert built == [("alice", True), ("bob", True), ("carol", True), ("dave", True), ("erin", False)]


def test_every_executor_tells_the_flow_the_same_typed_events_of_each_job(classroom, tmp_path, monkeypatch, slurm_here):
    """Beneath the listener, at the seam: each (submission, case) job's events are the same frozen dataclasses on
    the in-process worker, the pool's stand-in workers and the Slurm path (their pickles crossed as they are)."""
    from attnbench.judge import class_flow, class_work

    def seam_events(where: str) -> Counter:
        told: list = []
        real = class_work.judge_jobs

        def recorded(pool, jobs, *rest, **options):
            class Recording:
                def run(self, jobs, listener):
                    pool.run(jobs, lambda event: (told.append((jobs, event)), listener(event)))

            return real(Recording(), jobs, *rest, **options)

        monkeypatch.setattr(class_flow, "judge_jobs", recorded)
        judged_on(where, classroom, tmp_path, monkeypatch)
        said: Counter = Counter()
        for jobs, event in told:
            assert is_dataclass(event) and type(event).__dataclass_params__.frozen, event
            if isinstance(event, executor.JobEvent):
                job = jobs[event.job]
                inner = getattr(event, "event", None)
                assert inner is None or (is_dataclass(inner) and type(inner).__dataclass_params__.frozen), inner
                said[(type(event).__name__, job.submission, job.case.label, type(inner).__name__,
                      getattr(getattr(inner, "entry", None), "verdict", None))] += 1
        return said

    here = seam_events("in-process")
    assert here[("JobTold", "alice", CASES.split(",")[0], "EntryMade", "PASS")] == 3  # the first run, two reruns
    for where in ("pool", "slurm"):
        assert seam_events(where) == here, where


def test_in_process_a_rows_jobs_go_through_the_seam_back_to_back_after_its_warm_up(classroom, monkeypatch):
    ran, real = [], executor.InProcess.run

    def recorded(self, jobs, listener):
        ran.append([(job.submission, job.case.label, job.warm_up is not None) for job in jobs])
        return real(self, jobs, listener)

    monkeypatch.setattr(executor.InProcess, "run", recorded)
    board = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=1, sandbox=class_sandbox())
    labels = CASES.split(",")
    # row by row, each row's first job warming it up right before its runs; erin did not build
    first = [(name, label, label == labels[0]) for name in ("alice", "bob", "carol", "dave") for label in labels]
    rerun = [("alice", label, label == labels[0]) for label in labels]
    assert ran == [first, rerun, rerun]
    assert {e.device for r in board.rows for e in r.entries.values()} == {board.rows[0].gpu}  # each entry names it


def test_a_slurm_class_interrupted_keeps_its_jobs_folder_and_a_resume_judges_the_same_inputs(
        classroom, tmp_path, monkeypatch, slurm_here):
    """Ctrl-C while the reruns' Slurm jobs are awaited: the board says so and names the jobs folder; the resume
    runs the flow again, finds the first jobs' results, draws nothing anew and submits only what was lost."""
    options = slurm.SlurmOptions(folder=tmp_path / "jobs", poll_s=0.0)
    real = slurm.SlurmWorkers.run

    def stopped_on_the_reruns(self, jobs, listener):
        if self.runs == 0:  # the first runs' jobs go out and come back
            return real(self, jobs, listener)
        raise KeyboardInterrupt

    monkeypatch.setattr(slurm.SlurmWorkers, "run", stopped_on_the_reruns)
    first = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=1, executor="slurm",
                                     slurm=options, sandbox=class_sandbox())
    assert first.interrupted and first.settings["slurm_jobs_folder"] == str(tmp_path / "jobs")
    assert set(first.settings["seeds"]) == {"first", "rerun 2"}  # saved before the round's jobs went out
    monkeypatch.setattr(slurm.SlurmWorkers, "run", real)
    submitted = len(slurm_here)
    again = api_programs.resume_class(tmp_path / "jobs")
    assert len(slurm_here) == submitted + 2  # only the rerun rounds' jobs: the first ones had come back
    assert verdicts(again) == verdicts(first) and not again.interrupted
    assert {run: again.settings["seeds"][run] for run in first.settings["seeds"]} == first.settings["seeds"]
    assert [r.reruns for r in again.rows] == [3, 1, 1, 1, 1]
    assert not (tmp_path / "jobs").exists()


@pytest.mark.gpu
def test_a_class_of_cuda_programs_gets_the_same_verdicts_seeds_events_and_gpu_on_every_executor(
        gpu, tmp_path, monkeypatch, slurm_here):
    """On a GPU: the course's CUDA program beside a wrong and a crashing C program, judged in process, on the GPU
    pool (a worker per GPU, CUDA_VISIBLE_DEVICES naming its own) and on the Slurm path without a cluster."""
    if shutil.which("nvcc") is None or not can_build():
        pytest.skip("no nvcc, C compiler or make")
    classroom = tmp_path / "class"
    classroom.mkdir()
    shutil.copy(COURSE_PROGRAM, classroom / "ada.cu")
    (classroom / "carol.c").write_text(wrapping("#define OFF_BY_ONE"))
    (classroom / "dave.c").write_text("#include <stdlib.h>\nint main(void) { abort(); }\n")
    # a GPU machine without the slurm extra (submitit) still judges the class in process and on the pool
    executors = EXECUTORS if importlib.util.find_spec("submitit") is not None else EXECUTORS[:2]
    results = {where: judged_on(where, classroom, tmp_path / where, monkeypatch, "t01,t02", stand_ins=False)
               for where in executors}
    here, here_events = results["in-process"]
    assert verdicts(here) == {"ada": {"t01": "PASS", "t02": "PASS"}, "carol": {"t01": "WRONG", "t02": "WRONG"},
                              "dave": {"t01": "CRASH", "t02": "CRASH"}}
    devices = {e.device for r in here.rows for e in r.entries.values()}
    assert len(devices) == 1 and "no GPU" not in devices.pop()  # every entry names the GPU that ran it
    assert not any(r.not_judged for r in here.rows) and "not_judged_here" not in here.settings  # a GPU is here
    for where, (board, events) in results.items():
        assert verdicts(board) == verdicts(here), where
        assert board.settings["seeds"] == here.settings["seeds"] and len(board.settings["seeds"]) == 3, where
        assert heard(events) == heard(here_events), where
        assert {e.device for r in board.rows for e in r.entries.values()} == {here.rows[0].gpu}, where
        assert next(r for r in board.rows if r.name == "ada").reruns == 3, where


def cuda_beside_c(tmp_path: Path, c_programs: bool = True) -> Path:
    """The course's CUDA program (ada.cu) beside a right and a wrong C program (unless `c_programs` is False);
    skipped where a GPU is here (the gpu-marked test above judges it there) or nvcc, cc or make is missing."""
    if no_gpu_here() is None:
        pytest.skip("a GPU is here: its CUDA programs are judged (the gpu-marked test covers it)")
    if shutil.which("nvcc") is None or not can_build():
        pytest.skip("no nvcc, C compiler or make")
    classroom = tmp_path / "class"
    classroom.mkdir()
    shutil.copy(COURSE_PROGRAM, classroom / "ada.cu")
    if c_programs:
        (classroom / "bob.c").write_text(wrapping(""))
        (classroom / "carol.c").write_text(wrapping("#define OFF_BY_ONE"))
    return classroom


@pytest.mark.parametrize("where", ["in-process", "pool"])
def test_without_a_gpu_a_cuda_submission_is_not_judged_and_said_before_any_run_the_c_ones_are_judged_as_ever(
        tmp_path, monkeypatch, where):
    """On a host without a GPU, the course's CUDA program was judged WRONG ("every element is 0: a kernel may have
    failed to launch") or CRASH ("CUDA driver version is insufficient"): the host's fault, blamed on the program.
    It is built, then NOT JUDGED (no entry, no rank), said before the first run; the C programs beside it are
    judged and ranked as ever, in process and on the pool's stand-in workers alike."""
    classroom = cuda_beside_c(tmp_path)
    board, events = judged_on(where, classroom, tmp_path / "board", monkeypatch, "odd_17x48")
    rows = {row.name: row for row in board.rows}
    ada = rows["ada"]
    assert ada.built and ada.entries == {} and ada.rank is None and board.grade(ada) is None
    assert ada.not_judged.startswith(f"{NOT_JUDGED_HERE} (") and "a CUDA program: it holds CUDA device code" in \
        ada.not_judged
    assert verdicts(board) == {"ada": {}, "bob": {"odd_17x48": "PASS"}, "carol": {"odd_17x48": "WRONG"}}
    assert rows["bob"].rank == 1 and not rows["bob"].not_judged and not rows["carol"].not_judged
    said = [event for event in events if isinstance(event, NotJudgedHere)]
    assert said == [NotJudgedHere(("ada",), board.settings["not_judged_here"], 2)]
    first_run = next(i for i, event in enumerate(events) if isinstance(event, CaseJudged))
    assert events.index(said[0]) < first_run


def test_without_a_gpu_a_class_of_cuda_programs_alone_draws_no_input_and_runs_nothing(tmp_path, monkeypatch):
    classroom = cuda_beside_c(tmp_path, c_programs=False)
    board, events = judged_on("in-process", classroom, tmp_path / "board", monkeypatch, "odd_17x48")
    assert [row.not_judged != "" for row in board.rows] == [True] and board.settings["seeds"] == {}
    assert {event.phase for event in events if isinstance(event, ClassProgress)} == {"builds"}
    assert not any(isinstance(event, (CaseJudged, RerunJudged)) for event in events)


def test_a_class_whose_every_build_failed_draws_no_input_and_makes_no_reference(tmp_path, monkeypatch):
    """Nothing to run: no fresh input is drawn (t01-t30 are 8.6 GB and minutes of references, thrown away)."""
    if not can_build():
        pytest.skip("no C compiler or make")
    classroom = tmp_path / "class"
    classroom.mkdir()
    (classroom / "ann.c").write_text("this is not C\n")
    (classroom / "bea.c").write_text("int main(void) { return missing; }\n")
    monkeypatch.setattr(fresh_inputs.FreshInput, "load", lambda *a: pytest.fail("an input drawn for nobody"))
    board, events = judged_on("in-process", classroom, tmp_path / "board", monkeypatch, "odd_17x48")
    assert [row.built for row in board.rows] == [False, False] and board.settings.get("seeds", {}) == {}
    assert {event.phase for event in events if isinstance(event, ClassProgress)} == {"builds"}


def test_without_a_gpu_the_course_style_class_is_built_and_not_judged_never_failed(tmp_path, monkeypatch):
    """The issue's scoreboard: on a TA's laptop every student of a course-style class was WRONG or CRASH. Each
    row that builds is NOT JUDGED (whatever built it: the course's Makefile, the student's flags, a lone hw4.cu,
    the example flags after a failing Makefile); the rows that do not build say so as ever; no input is drawn."""
    from tests.judge.course_class import make_course_class

    if no_gpu_here() is None:
        pytest.skip("a GPU is here: its CUDA programs are judged")
    if shutil.which("nvcc") is None or shutil.which("make") is None:
        pytest.skip("nvcc and make build the course-style class")
    classroom = make_course_class(tmp_path / "class" if (tmp_path / "class").mkdir() is None else tmp_path)
    board, _ = judged_on("in-process", classroom, tmp_path / "board", monkeypatch, "odd_17x48")
    rows = {row.name: row for row in board.rows}
    not_judged = {name for name, row in rows.items() if row.not_judged}
    assert not_judged == {"course_makefile", "all_hw4", "own_flags", "cu_only", "hip_beside", "makefile_fails"}
    assert {name for name, row in rows.items() if not row.built} == {"hip_only", "nothing_builds"}
    assert all(not row.entries and row.rank is None for row in rows.values()) and board.settings["seeds"] == {}


def test_over_slurm_a_cuda_program_is_never_refused_for_the_judges_own_host(tmp_path, monkeypatch, slurm_here):
    """Slurm's nodes may have the GPU the submitting host lacks: the class goes to them whole (here, a node without
    a GPU too, so its verdict is whatever such a run gets; what matters is that it ran)."""
    classroom = cuda_beside_c(tmp_path, c_programs=False)
    board, events = judged_on("slurm", classroom, tmp_path / "board", monkeypatch, "odd_17x48")
    (ada,) = board.rows
    assert not ada.not_judged and set(ada.entries) == {"odd_17x48"} and slurm_here
    assert "not_judged_here" not in board.settings and not any(isinstance(e, NotJudgedHere) for e in events)


def test_the_builds_a_judge_killed_outright_left_are_removed_by_the_next_class_never_an_unlocked_folder(
        classroom, tmp_path, monkeypatch):
    """SIGKILL runs no clean-up: a class's build folder (its programs) stays; the next class removes it, and
    keeps a folder of the same prefix that holds no lock (attnbench did not make it so)."""
    import os
    import signal
    import subprocess
    import sys
    import tempfile

    from attnbench.judge.class_flow import BUILDS_PREFIX

    root = Path(__file__).resolve().parents[2]
    code = ("from attnbench.sandbox.owned_folders import make_owned; from attnbench.judge.class_flow import "
            "BUILDS_PREFIX; folder = make_owned(BUILDS_PREFIX); (folder / 'hw4').write_text('built');"
            "print(folder, flush=True); import os; os.kill(os.getpid(), 9)")
    killed = subprocess.Popen([sys.executable, "-c", code], cwd=root, env={**os.environ, "TMPDIR": str(tmp_path)},
                              stdout=subprocess.PIPE, text=True)
    left = Path(killed.stdout.readline().strip())
    assert killed.wait(timeout=60) == -signal.SIGKILL and (left / "hw4").is_file() and left.parent == tmp_path
    unrelated = tmp_path / f"{BUILDS_PREFIX}someone"
    unrelated.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    board = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=0, sandbox=class_sandbox())
    assert [r.name for r in board.rows] == ORDER
    assert not left.exists() and unrelated.is_dir()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(BUILDS_PREFIX)] == [unrelated.name]


def _disk_full_in_round_3(monkeypatch) -> list:
    """The judge's disk full from the fifth input it makes on: two cases first, two in round 2, round 3's find the
    disk full, wherever the inputs are made (here, or by a worker, as a Slurm node does). Returns the inputs made."""
    import errno

    from attnbench.judge import class_flow, class_work

    made: list = []
    real = class_flow.prepare_case

    def disk_full_in_round_3(bench_input, *args):
        if bench_input not in made:
            made.append(bench_input)
        if made.index(bench_input) >= 4:
            raise OSError(errno.ENOSPC, "No space left on device", "/tmp/attnbench-fresh-x/odd_17x48.in")
        return real(bench_input, *args)

    monkeypatch.setattr(class_flow, "prepare_case", disk_full_in_round_3)
    monkeypatch.setattr(class_work, "prepare_case", disk_full_in_round_3)
    return made


def _two_rows(tmp_path: Path) -> Path:
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(EXAMPLE, folder / "alice.c")
    (folder / "bob.c").write_text(wrapping("", "usleep(300000);"))
    return folder


def _lost_round_3(board_settings: dict, rows: dict) -> None:
    assert set(board_settings["seeds"]) == {"first", "rerun 2", "rerun 3"}
    assert "No space left on device" in board_settings["lost_rounds"]["rerun 3"]
    assert [rows["alice"]["rank"], rows["bob"]["rank"]] == [1, 2]  # ranked by the two runs each case had
    for row in rows.values():
        assert row["reruns"] == 2 and all(len(e["runs_s"]) == 2 and e["verdict"] == "PASS"
                                          for e in row["entries"].values()), row
        assert "rerun round 3 was not run" in row["build_message"]


def test_a_rerun_round_whose_inputs_cannot_be_made_is_lost_not_the_class(tmp_path, monkeypatch):
    """The judge's disk full while it makes round 3's inputs: that round is lost with a note, its rows keep the
    runs before it and are ranked by them, the final scoreboard is saved with every round's seeds, exit 3."""
    import json

    from click.testing import CliRunner

    from attnbench.cli import main
    from tests.judge.classes import CLASS_MODE

    if not can_build():
        pytest.skip("no C compiler or make")
    _disk_full_in_round_3(monkeypatch)
    results = tmp_path / "results"
    result = CliRunner().invoke(main, ["judge", str(_two_rows(tmp_path)), "--cases", CASES, "--time-limits", "none",
                                       "--sandbox", CLASS_MODE, "--results-dir", str(results), "--name", "lost"])
    assert result.exit_code == 3, result.output
    assert "error: rerun 3 was not run: " in result.output and "No space left on device" in result.output
    saved = json.loads((results / "lost.json").read_text())
    assert not saved["interrupted"] and "stopped_by" not in saved["settings"]
    _lost_round_3(saved["settings"], {row["name"]: row for row in saved["rows"]})


def test_over_slurm_a_rerun_round_a_node_cannot_make_inputs_for_is_lost_too(tmp_path, monkeypatch, slurm_here):
    """The flow is shared: a node (a worker) that cannot make a rerun's input says so, and the round is lost for
    its row as in process, never a failed case."""
    import json

    if not can_build():
        pytest.skip("no C compiler or make")
    _disk_full_in_round_3(monkeypatch)
    board = api_programs.judge_class([_two_rows(tmp_path)], CASES, time_limits="none", sandbox=class_sandbox(),
                                     executor="slurm", slurm=slurm.SlurmOptions(folder=tmp_path / "jobs", poll_s=0.0))
    saved = json.loads(board.to_json())
    assert not saved["interrupted"] and "stopped_by" not in saved["settings"]
    _lost_round_3(saved["settings"], {row["name"]: row for row in saved["rows"]})


def test_in_process_each_rounds_inputs_are_staged_before_its_runs_bound_not_copied_and_gone_at_the_end(
        classroom, monkeypatch):
    from attnbench.sandbox import room, staged_inputs

    if not staged_inputs.can_stage() or class_sandbox().mode != "required":
        pytest.skip("staging needs root and the sandbox")
    happened, real_stage, real_prepare = [], staged_inputs.stage, room.Sandbox.prepare
    roots: set[Path] = set()  # this judge's staging folder (other judges on the machine have their own)

    def stage(slot, source):
        happened.append(("staged", slot))
        staged = real_stage(slot, source)
        roots.add(staged_inputs._staging_root())
        return staged

    def prepare(self, label, input_path, files=None, written=None):
        case = real_prepare(self, label, input_path, files, written)
        if input_path is not None and label != "warmup" and label != "probe":
            happened.append(("bound" if case.staged is not None and not case.input.exists() else "copied", label))
        return case

    monkeypatch.setattr(staged_inputs, "stage", stage)
    monkeypatch.setattr(room.Sandbox, "prepare", prepare)
    api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=1, sandbox=class_sandbox())
    labels = CASES.split(",")
    staging = [("staged", label) for label in labels]
    first = [("bound", label) for _ in ("alice", "bob", "carol", "dave") for label in labels]
    rerun = [("bound", label) for label in labels]
    assert happened == [*staging, *first, *staging, *rerun, *staging, *rerun]
    assert not staged_inputs._slots and not staged_inputs._root  # a class's end unmounts every staged input
    (root,) = roots
    assert not root.exists() and f" {root}/" not in Path("/proc/self/mounts").read_text()


def test_without_the_sandbox_no_input_is_staged_for_every_user_to_read(classroom, monkeypatch):
    """A staged input is readable by every run's user (bwrap binds it as that user): with --sandbox none the
    programs run on the host, where another case's staged input would be theirs to read ahead."""
    from attnbench.sandbox import staged_inputs

    staged = []
    monkeypatch.setattr(staged_inputs, "stage", lambda slot, source: staged.append(slot) or False)
    board = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=0,
                                     sandbox=api_programs.SandboxSettings(mode="none"))
    assert board.rows and staged == []


def test_the_cuda_caches_a_judge_killed_outright_left_are_removed_by_the_next(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    code = "from attnbench.judge.class_flow import cuda_caches; print(cuda_caches(), flush=True)"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    killed = subprocess.Popen([sys.executable, "-c", code + "; import os; os.kill(os.getpid(), 9)"], cwd=root,
                              env=env, stdout=subprocess.PIPE, text=True)
    left = Path(killed.stdout.readline().strip())
    assert killed.wait(timeout=60) == -signal.SIGKILL and (left / ".key").is_file()
    later = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                           timeout=60, check=True)
    made = Path(later.stdout.strip())
    assert not left.exists() and made.is_dir() and os.stat(made).st_mode & 0o777 == 0o711


@pytest.mark.skipif(not can_build(), reason="needs cc and make")
def test_a_rerun_round_runs_a_rows_failed_case_too_so_no_rerun_finds_its_warm_up_younger(tmp_path, monkeypatch):
    """Red team 21 (from the docs alone): a row that failed its first case on purpose, after 2 s, met its warm-up's
    cache 2 s old in its first run of the next case and 0.03 s old in every rerun of it (reruns skipped the failed
    case), and told a rerun from a first run. A rerun round now runs the failed case too, in its place, its verdict
    thrown away: every round runs the row's cases in the same order. Its run is the program's time in the judge's
    cost (a filler 0.3 s long, twice), as a warm-up's is."""
    from tests.judge.classes import EXAMPLE

    classroom = tmp_path / "class"
    classroom.mkdir()
    shutil.copy(EXAMPLE, classroom / "alice.c")
    (classroom / "frank.c").write_text(wrapping("#include <string.h>",
                                                'if (strstr(argv[1], "odd_17x48")) { usleep(300000); return 1; }'))
    ran, real = [], executor.InProcess.run

    def recorded(self, jobs, listener):
        ran.append([(job.submission, job.case.label, job.warm_up is not None, job.filler) for job in jobs])
        return real(self, jobs, listener)

    monkeypatch.setattr(executor.InProcess, "run", recorded)
    board = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=2, sandbox=class_sandbox())
    small, large = CASES.split(",")
    rerun = [("alice", small, True, False), ("alice", large, False, False),
             ("frank", small, True, True), ("frank", large, False, False)]
    assert ran[1:] == [rerun, rerun]
    frank = {row.name: row for row in board.rows}["frank"]
    assert not frank.entries[small].passed and len(frank.entries[large].runs_s) == 3  # the filler's verdict is no run
    assert len(frank.entries[small].runs_s) == 0
    rows = {row.name: row for row in board.rows}
    assert frank.fillers_s >= 0.6 and rows["alice"].fillers_s == 0.0
    assert board.cost is not None and board.cost.program_runs_s == pytest.approx(sum(row.program_s for row in board.rows))


@pytest.mark.skipif(not can_build(), reason="needs cc and make")
def test_a_run_that_times_out_is_its_programs_time_first_run_and_filler_alike(tmp_path):
    """Red team 22: a TIMEOUT entry carried no program time (its wall time is None), so a row that hung on a case,
    first and in each rerun round's filler, had its hangs printed as the judge's own cost (4.51x, not 1.3x)."""
    from tests.judge.classes import EXAMPLE

    classroom = tmp_path / "class"
    classroom.mkdir()
    shutil.copy(EXAMPLE, classroom / "alice.c")
    (classroom / "erin.c").write_text(wrapping("#include <string.h>", 'if (strstr(argv[1], "odd_17x48")) sleep(30);'))
    board = api_programs.judge_class([classroom], CASES, time_limits="none", timeout=1.0, rerun_top=2,
                                     sandbox=class_sandbox())
    erin = {row.name: row for row in board.rows}["erin"]
    small = CASES.split(",")[0]
    assert erin.entries[small].verdict == "TIMEOUT" and erin.entries[small].program_s >= 1.0
    assert erin.fillers_s >= 2.0  # the two rerun rounds' fillers hung to the timeout too
    assert board.cost is not None and board.cost.program_runs_s >= 3.0
