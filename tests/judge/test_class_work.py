"""attnbench.judge.class_work: a class on the GPU pool (cpu workers standing in for GPUs) keeps what the
judge guarantees: a worker that dies costs one entry, Ctrl-C keeps what was judged, marked interrupted."""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path

import pytest

from attnbench.api import programs as api_programs
from attnbench.judge.case_verdict import JUDGE_ERROR
from attnbench.judge.class_work import EntryMade, InputNotDrawn, RunStarted, to_diagnose
from attnbench.spread.devices import CPU_WORKERS_ENV
from attnbench.spread.executor import ExecutorEvent, JobTold
from attnbench.results.scoreboard import CaseEntry, SubmissionRow
from attnbench.spread.pool import GpuPool
from tests.judge.classes import CASES, ORDER, can_build, class_sandbox, verdicts




@pytest.fixture
def two_cpu_workers(monkeypatch):
    monkeypatch.setenv(CPU_WORKERS_ENV, "2")


def test_a_worker_killed_on_a_case_costs_that_entry_only(classroom, two_cpu_workers, monkeypatch):
    whole = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=0, gpus="all",
                                     sandbox=class_sandbox())
    killed: list[int] = []
    handle = GpuPool._handle

    def handle_then_kill(pool: GpuPool, event: ExecutorEvent) -> None:
        handle(pool, event)
        if isinstance(event, JobTold) and isinstance(event.event, RunStarted) \
                and pool.jobs[event.job].submission == "carol" and not killed:
            process = pool.slots[event.device.index].process
            os.kill(process.pid, signal.SIGKILL)
            killed.append(process.pid)

    monkeypatch.setattr(GpuPool, "_handle", handle_then_kill)
    board = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=0, gpus="all",
                                     sandbox=class_sandbox())
    assert killed and [r.name for r in board.rows] == ORDER
    carol = next(r for r in board.rows if r.name == "carol")
    lost = [label for label, e in carol.entries.items() if e.verdict == JUDGE_ERROR]
    assert len(lost) == 1 and "died (signal 9)" in carol.entries[lost[0]].message
    assert carol.entries[lost[0]].device is None  # no device finished it
    expected = verdicts(whole)
    expected["carol"][lost[0]] = JUDGE_ERROR
    assert verdicts(board) == expected  # every other entry judged as before


def test_ctrl_c_saves_what_was_judged_marked_interrupted_and_exits_130(classroom, two_cpu_workers, monkeypatch,
                                                                        tmp_path):
    import json

    from click.testing import CliRunner

    from attnbench.cli import main

    handle = GpuPool._handle

    def handle_then_stop(pool: GpuPool, event: ExecutorEvent) -> None:
        handle(pool, event)
        if isinstance(event, JobTold) and isinstance(event.event, EntryMade):
            raise KeyboardInterrupt

    monkeypatch.setattr(GpuPool, "_handle", handle_then_stop)
    result = CliRunner().invoke(main, ["judge", str(classroom), "--cases", CASES, "--time-limits", "none",
                                       "--gpus", "all", "--sandbox", class_sandbox().mode,
                                       "--results-dir", str(tmp_path)])
    assert result.exit_code == 130, result.output
    saved = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert saved["interrupted"] is True
    assert sum(len(row["entries"]) for row in saved["rows"]) == 1  # the one entry judged before Ctrl-C
    assert not [p for p in multiprocessing.active_children() if p.name.startswith("attnbench-")]


def test_an_input_a_worker_cannot_make_is_a_lost_rerun_not_a_failed_case(monkeypatch):
    """The worker's disk full while it makes a rerun's fresh input: the worker says so (`InputNotDrawn`), and in a
    rerun round the parent hears it apart from the entries (the row keeps its runs: classroom.lose_round);
    in the first round it is still that entry's JUDGE ERROR."""
    import errno

    from attnbench.cases.testcase import Shape
    from attnbench.judge import class_work
    from attnbench.judge.classroom import ClassSettings
    from attnbench.judge.fresh_inputs import FreshInput
    from attnbench.judge.time_limits import TimeLimits

    def disk_full(bench_input):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(class_work, "prepare_case", disk_full)
    fresh = FreshInput("odd_17x48", Shape(1, 17, 48), 7, "odd_17x48")
    job = class_work.CaseJob("alice", Path("/nonexistent/hw4"), fresh, None)
    said: list[object] = []
    class_work.ClassCaseWork(ClassSettings(TimeLimits("none"))).run(job, {}, said.append)
    assert [type(e) for e in said] == [RunStarted, InputNotDrawn] and "No space left on device" in said[1].why

    class Replay:  # an executor that replays what the worker said
        def run(self, jobs, listener):
            for event in said:
                listener(JobTold(0, None, event))

    entries, lost = [], []
    class_work.judge_jobs(Replay(), [job], lambda *entry: entries.append(entry), lambda *note: None,
                          on_not_drawn=lambda name, why: lost.append((name, why)))
    assert entries == [] and lost == [("alice", said[1].why)]
    class_work.judge_jobs(Replay(), [job], lambda *entry: entries.append(entry), lambda *note: None)
    assert [(n, label, e.verdict) for n, label, e in entries] == [("alice", "odd_17x48", JUDGE_ERROR)]


def test_on_the_pool_every_run_first_or_rerun_comes_right_after_its_rows_warm_up_on_its_worker(tmp_path,
                                                                                                two_cpu_workers):
    """A spy reads, in the cache its warm-up wrote, how long ago that warm-up ran, and fails a run when it was
    over 2 s ago. Warmed up once per row in the parent, it met its first runs after two slow rows' warm-ups
    (1.5 s each); now a row's jobs of each round run back to back on the worker that takes them, right after
    its warm-up there, as in process and over Slurm."""
    saved = _spied_class(tmp_path, "rerun_spy.c", "{ int rc = spy_on_reruns(2.0); if (rc) return rc; }", 2, "spied",
                         "--gpus", "all", "--rerun-top", "3")
    rows = {row["name"]: row for row in saved["rows"]}
    for label, spied in rows["aspy"]["entries"].items():
        assert spied["verdict"] == "PASS", (label, spied["message"])
        assert len(spied["runs_s"]) == 3  # no rerun told apart from a first run
    assert rows["aspy"]["reruns"] == 3
    assert "on the worker that runs its jobs of a round, right before them" in saved["settings"]["warm_up"]


@pytest.mark.parametrize("gpus", [None, "all"], ids=["in-process", "pool"])
def test_a_rerun_cannot_tell_itself_from_a_first_run_by_its_programs_birth_time(tmp_path, monkeypatch, gpus):
    """A spy reads its program's birth time (statx btime, which no one can set) and fails a run when it was born
    over 4 s ago. The one sealed copy every run linked was born at the build: every first run passed, and every
    rerun, after two slow rows' first runs, failed. Now each row's program is born again right before its runs
    of a round, on the worker that runs them."""
    if gpus:
        monkeypatch.setenv(CPU_WORKERS_ENV, "2")
    saved = _spied_class(tmp_path, "birth_spy.c", "{ int rc = spy_on_birth(4.0); if (rc) return rc; }", 2, "born",
                         *(["--gpus", gpus] if gpus else []), "--rerun-top", "3")
    rows = {row["name"]: row for row in saved["rows"]}
    for label, spied in rows["aspy"]["entries"].items():
        assert spied["verdict"] == "PASS", (label, spied["message"])
        assert len(spied["runs_s"]) == 3  # no rerun told apart from a first run


def test_a_row_not_warmed_up_again_cannot_date_its_reruns_by_its_programs_birth_time(tmp_path):
    """A row whose warm-up writes no cache is not warmed up again for the reruns. Were its program born anew before
    the warm-up, a warm-up that idles 3 s would put 3 s between a first run and the program's birth, and none
    before a rerun: the spy below idles 1 s on the runs it takes for reruns (program under 2 s old). Born anew
    after the warm-up, every run of the row sees the same age: its three runs of a case take the same time."""
    row = _spied_class(tmp_path, "birth_spy.c", "slow_when_young(argv[1], 2.0, 3.0);", 0, "young",
                       "--rerun-top", "1")["rows"][0]
    for label, entry in row["entries"].items():
        assert entry["verdict"] == "PASS" and len(entry["runs_s"]) == 3, (label, entry)
        assert max(entry["runs_s"]) - min(entry["runs_s"]) < 0.5, (label, entry["runs_s"])  # no run told apart


def test_a_warm_up_cannot_tell_a_rerun_round_by_its_programs_birth_time(tmp_path):
    """The warm-up runs the program too: born anew only after it, the program a rerun round's warm-up met was born
    one round before (seconds or minutes), the first round's at the build, moments before; the spy's warm-up
    below marks the cache "rerun" when its program is over 5 s old, and its runs fail on the mark. Born anew
    before the warm-up as well, every warm-up meets a program just born."""
    saved = _spied_class(tmp_path, "birth_spy.c", "{ int rc = mark_reruns_in_warm_up(argv[1], 5.0); if (rc) return rc; }",
                         2, "marked", "--rerun-top", "3")
    rows = {row["name"]: row for row in saved["rows"]}
    for label, spied in rows["aspy"]["entries"].items():
        assert spied["verdict"] == "PASS" and len(spied["runs_s"]) == 3, (label, spied)


def test_a_worker_makes_a_rows_inputs_of_the_round_before_its_warm_up_never_between_it_and_its_runs(monkeypatch):
    """A worker makes a round's input (a fresh draw and its float64 reference: 0.3 s for t05 on a CPU) for the
    first row that needs it there. Made between the row's warm-up (and its program's renewal) and its run, it
    told the run whether its row came first to the worker: the first row by name always did in the first round,
    not in a rerun round that took it third (a spy on the pool idled 0.5 s on those reruns alone). Now a row's
    first job makes all the row's inputs of the round before the warm-up; nothing but its runs comes after."""
    from attnbench.cases.testcase import Shape
    from attnbench.judge import class_work
    from attnbench.judge.classroom import ClassSettings, WarmedUp
    from attnbench.judge.fresh_inputs import FreshInput
    from attnbench.judge.time_limits import TimeLimits
    from attnbench.results.scoreboard import CaseEntry

    events: list[str] = []
    monkeypatch.setattr(class_work, "prepare_case", lambda b: events.append(f"made {b.label}") or b.label)
    monkeypatch.setattr(class_work, "reborn_program", lambda program: events.append("reborn"))
    monkeypatch.setattr(class_work, "warm_up_entry", lambda *args: events.append("warm-up") or WarmedUp())
    monkeypatch.setattr(class_work, "judge_entry",
                        lambda program, case, settings, cache, room, open_next: events.append(f"run {case}") or (
                            CaseEntry("PASS", ""), None))
    first, second = (FreshInput(label, Shape(1, 17, 48), 7, label) for label in ("a", "b"))
    jobs = [class_work.CaseJob("alice", Path("/nonexistent/hw4"), first, Path("/nonexistent/cache"), first,
                               round_cases=(first, second)),
            class_work.CaseJob("alice", Path("/nonexistent/hw4"), second, Path("/nonexistent/cache"))]
    work, state = class_work.ClassCaseWork(ClassSettings(TimeLimits("none"))), {"device": "cpu"}
    for job in jobs:
        work.run(job, state, lambda event: None)
    assert events == ["made a", "made b", "reborn", "warm-up", "reborn", "run a", "run b"]


# -- on GPUs ----------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_a_cuda_class_on_the_gpu_pool_passes_each_run_after_its_rows_warm_up_on_its_worker(gpu, tmp_path):
    """The course's hw4.cu as two submissions on every GPU here, in the sandbox: each row's runs of a round (first
    or rerun) back to back after its warm-up on the worker's GPU that runs them, every case passes three times;
    the cost line is printed for a comparison with the judge before this scheme (every row warmed up in the
    parent, the jobs case by case)."""
    import json
    import shutil

    from click.testing import CliRunner

    from attnbench.cli import main
    from attnbench.sandbox.room import find_bwrap

    if shutil.which("nvcc") is None or find_bwrap()[0] is None:
        pytest.skip("needs nvcc and bwrap")
    example = Path(__file__).resolve().parents[2] / "examples" / "course_program" / "hw4.cu"
    classroom = tmp_path / "class"
    for name in ("ann", "ben"):
        (classroom / name).mkdir(parents=True)
        shutil.copy(example, classroom / name / "hw4.cu")
    results = tmp_path / "results"
    outcome = CliRunner().invoke(main, ["judge", str(classroom), "--cases", "t01-t03", "--time-limits", "none",
                                        "--gpus", "all", "--sandbox", "required", "--rerun-top", "2",
                                        "--results-dir", str(results), "--name", "pool"])
    assert outcome.exit_code == 0, outcome.output
    print("\n".join(line for line in outcome.output.splitlines() if "judging took" in line))
    saved = json.loads((results / "pool.json").read_text())
    assert "on the worker that runs its jobs" in saved["settings"]["warm_up"]
    for row in saved["rows"]:
        assert row["reruns"] == 3 and "dropped" not in row["build_message"], row["build_message"]
        for label, entry in row["entries"].items():
            assert entry["verdict"] == "PASS" and len(entry["runs_s"]) == 3, (row["name"], label, entry["message"])


def test_a_class_on_the_pool_leaves_the_judge_no_zombie(classroom, two_cpu_workers):
    """The workers' unreaped bwraps came to the judge (a subreaper) when the workers ended, and no later run's
    sweep collected them (it spares what was there before it began): zombies for as long as the judge lived."""
    from attnbench.sandbox.reaper import become_subreaper, descendants

    become_subreaper()
    zombies_before = {pid for pid, state in descendants(os.getpid()).items() if state == "Z"}
    board = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=0, gpus="all",
                                     sandbox=class_sandbox())
    assert board.rows
    assert not {pid for pid, state in descendants(os.getpid()).items() if state == "Z"} - zombies_before


def _spied_class(tmp_path: Path, spy_file: str, spy_call: str, slow_rows: int, name: str, *options: str) -> dict:
    """A class of the spy `spy_file` (tests/adversarial/programs) calling `spy_call` in its main, as `aspy`, and
    `slow_rows` honest rows that sleep 1.5 s (judged after it), judged on CASES in the sandbox with `options`;
    its saved scoreboard."""
    import json

    from click.testing import CliRunner

    from attnbench.cli import main
    from tests.judge.classes import CLASS_MODE, wrapping

    if not can_build():
        pytest.skip("no C compiler or make")
    classroom = tmp_path / "class"
    classroom.mkdir()
    spy = (Path(__file__).resolve().parents[1] / "adversarial" / "programs" / spy_file).read_text()
    (classroom / "aspy.c").write_text(wrapping(spy, spy_call))
    for row in range(1, slow_rows + 1):
        (classroom / f"zed{row}.c").write_text(wrapping("", "usleep(1500000);"))
    results = tmp_path / "results"
    outcome = CliRunner().invoke(main, ["judge", str(classroom), "--cases", CASES, "--time-limits", "none", *options,
                                        "--sandbox", CLASS_MODE, "--results-dir", str(results), "--name", name])
    assert outcome.exit_code == 0, outcome.output
    return json.loads((results / f"{name}.json").read_text())


def test_diagnose_picks_a_rows_first_failed_case_that_a_memory_error_explains():
    row = SubmissionRow("carol", "carol.c", True, entries={
        "t01": CaseEntry("PASS", runs_s=[0.1]), "t02": CaseEntry("TIMEOUT"), "t03": CaseEntry("WRONG"),
        "t04": CaseEntry("CRASH")})
    assert to_diagnose(row, ["t01", "t02", "t03", "t04"]) == "t03"
    assert to_diagnose(row, ["t04", "t03"]) == "t04"
    assert to_diagnose(row, ["t01", "t02"]) is None


class _Rooms:
    """A stand-in for the sandbox's rooms: which are open, and which run each was opened beside."""

    def __init__(self) -> None:
        self.open_now: set[int] = set()
        self.opened = 0
        self.beside: list[bool] = []  # per opening: whether it came while a run's output was checked
        self.checking = False

    def room_class(self):  # noqa: ANN201
        rooms = self

        class Room:
            settings = None

            @classmethod
            def open(cls, *args, **kwargs):
                rooms.opened += 1
                rooms.beside.append(rooms.checking)
                room = cls()
                room.number = rooms.opened
                rooms.open_now.add(room.number)
                return room

            def close(self):
                rooms.open_now.discard(self.number)

        return Room


def _row_jobs(names_cases: list[tuple[str, str]]):  # noqa: ANN202
    from attnbench.cases.testcase import Shape
    from attnbench.judge import class_work
    from attnbench.judge.course_judge import PreparedCase

    jobs = []
    for i, (name, label) in enumerate(names_cases):
        case = PreparedCase(label, Shape(1, 4, 8), Path(f"/nonexistent/{label}.in"), None, None)  # type: ignore[arg-type]
        more = i + 1 < len(names_cases) and names_cases[i + 1][0] == name
        jobs.append(class_work.CaseJob(name, Path(f"/nonexistent/{name}/hw4"), case, Path(f"/nonexistent/{name}/cache"),
                                       more_of_row=more))
    return jobs


@pytest.fixture
def fake_rooms(monkeypatch):  # noqa: ANN201
    from attnbench.judge import classroom
    from attnbench.judge.course_judge import JudgedCase

    rooms = _Rooms()
    monkeypatch.setattr(classroom, "Sandbox", rooms.room_class())

    def judged(program, case, limit, timeout, sandbox, beside_check=None):
        rooms.checking = True  # the run is over; its output is being checked
        try:
            if beside_check is not None:
                beside_check()
        finally:
            rooms.checking = False
        return JudgedCase(case.label, case.shape, "PASS", "", 0.1, limit, timeout)

    monkeypatch.setattr(classroom, "judge_case", judged)
    return rooms


def test_a_rows_next_room_is_opened_while_its_run_is_checked_and_none_is_left_open(fake_rooms):
    """Opening and closing a room were 10 ms of every run of a class on an H200's host: a row's next run's room is
    opened while this run's output is checked. A fresh room each run still; none left once the row is done, nor
    where the next job is another row's."""
    from attnbench.judge import class_work
    from attnbench.judge.classroom import ClassSettings
    from attnbench.judge.time_limits import TimeLimits

    work, state = class_work.ClassCaseWork(ClassSettings(TimeLimits("none"))), {"device": "cpu"}
    verdicts_seen: list[str] = []
    for job in _row_jobs([("alice", "a"), ("alice", "b"), ("alice", "c"), ("bob", "a"), ("bob", "b")]):
        work.run(job, state, lambda event: isinstance(event, EntryMade) and verdicts_seen.append(event.entry.verdict))
    assert verdicts_seen == ["PASS"] * 5
    assert fake_rooms.opened == 5  # one room a run
    assert fake_rooms.beside == [False, True, True, False, True]  # each row's first opened before its run
    assert fake_rooms.open_now == set() and class_work.ROOM_AHEAD not in state


def test_a_room_opened_ahead_for_another_job_or_before_ctrl_c_is_closed(fake_rooms):
    from attnbench.judge import class_work
    from attnbench.judge.classroom import ClassSettings
    from attnbench.judge.time_limits import TimeLimits

    work, state = class_work.ClassCaseWork(ClassSettings(TimeLimits("none"))), {"device": "cpu"}
    alice, _ = _row_jobs([("alice", "a"), ("alice", "b")])
    bob = _row_jobs([("bob", "a")])[0]
    work.run(alice, state, lambda event: None)
    assert len(fake_rooms.open_now) == 1  # alice's next run's room
    work.run(bob, state, lambda event: None)  # not alice's next run: her room closed, bob's opened
    assert fake_rooms.open_now == set()

    def interrupted(event: object) -> None:
        if isinstance(event, EntryMade):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        work.run(alice, state, interrupted)
    assert fake_rooms.open_now == set() and class_work.ROOM_AHEAD not in state


def test_a_room_opened_ahead_is_closed_when_ctrl_c_comes_between_two_jobs_of_its_row(fake_rooms):
    """The room opened for a row's next run is kept in the worker's state between its jobs: a Ctrl-C after one job
    ended, before the next took it, left it open (its view's overlays and tmpfs mounted until the next judge)."""
    from attnbench.judge import class_work
    from attnbench.judge.classroom import ClassSettings
    from attnbench.judge.time_limits import TimeLimits
    from attnbench.spread.executor import InProcess, JobDone

    def interrupted(event: ExecutorEvent) -> None:
        if isinstance(event, JobDone):
            raise KeyboardInterrupt

    work = class_work.ClassCaseWork(ClassSettings(TimeLimits("none")))
    with pytest.raises(KeyboardInterrupt):
        InProcess(work).run(_row_jobs([("alice", "a"), ("alice", "b")]), interrupted)
    assert fake_rooms.opened == 2 and fake_rooms.open_now == set()


def test_a_room_opened_ahead_after_its_run_was_given_up_is_closed(fake_rooms, monkeypatch):
    """The next room is opened on the thread beside the check. A second Ctrl-C in the wait for that thread (the
    first stopped the check) gives the run up before the thread's opening is done: the room it then opened was
    no run's, and stayed open (its view mounted) while the class stopped."""
    import threading

    from attnbench.judge import classroom
    from attnbench.judge.classroom import ClassSettings, judge_entry
    from attnbench.judge.time_limits import TimeLimits

    beside: list[threading.Thread] = []

    def given_up(program, case, limit, timeout, sandbox, beside_check=None):
        fake_rooms.checking = True
        beside.append(threading.Thread(target=lambda: (threading.Event().wait(0.2), beside_check())))
        beside[0].start()
        raise KeyboardInterrupt  # the wait for the thread interrupted: it goes on

    monkeypatch.setattr(classroom, "judge_case", given_up)
    job = _row_jobs([("alice", "a"), ("alice", "b")])[0]
    with pytest.raises(KeyboardInterrupt):
        judge_entry(job.program, job.case, ClassSettings(TimeLimits("none")), job.cache, None, True)
    beside[0].join()
    assert fake_rooms.opened == 2 and fake_rooms.open_now == set()


@pytest.mark.parametrize("gpus", [None, "all"], ids=["in-process", "pool"])
def test_a_run_cannot_tell_its_room_was_opened_ahead_beside_the_previous_runs_check(tmp_path, monkeypatch, gpus):
    """A row's next run's room is opened while this run's output is checked. Its program's link (linked and given
    the epoch's times at the opening) then changed again when this run's room, opened before it, was removed,
    after the program's folder was made: a run whose program changed after its folder knew its room was opened
    ahead, not right before it (the row's first run of a round). Every time of what the opening made is stamped
    again right before each run."""
    if gpus:
        monkeypatch.setenv(CPU_WORKERS_ENV, "2")
    saved = _spied_class(tmp_path, "room_age_spy.c", "{ int rc = spy_on_room_age(argv[1]); if (rc) return rc; }", 0,
                         "aged", *(["--gpus", gpus] if gpus else []), "--rerun-top", "0")
    for label, spied in saved["rows"][0]["entries"].items():
        assert spied["verdict"] == "PASS", (label, spied["message"])


def test_a_rerun_cannot_tell_itself_from_a_first_run_by_its_rooms_age(tmp_path):
    """The spy fails its first case on purpose, so a rerun round starts at its second, whose room was then opened
    right before it, not ahead beside the previous run's check as in the first round; it idles 1 s on the runs it
    takes for reruns. Now every run sees its room's opening stamped right before it: the spy takes every run of
    the case, or none, for a rerun, and its three runs take the same time."""
    first = CASES.split(",")[0]
    row = _spied_class(tmp_path, "room_age_spy.c", f'{{ int rc = rerun_by_room_age(argv[1], "{first}"); '
                       "if (rc) return rc; }", 0, "rerun-aged", "--rerun-top", "1")["rows"][0]
    for label, entry in row["entries"].items():
        if label != first:
            assert entry["verdict"] == "PASS" and len(entry["runs_s"]) == 3, (label, entry["message"])
            assert max(entry["runs_s"]) - min(entry["runs_s"]) < 0.5, (label, entry["runs_s"])  # none told apart
