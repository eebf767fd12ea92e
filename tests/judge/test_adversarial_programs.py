"""The adversarial programs (tests/adversarial/programs/, one trick each) against the judge, in its
sandbox and in its fallback: each is caught with the right verdict, no process it started outlives
the judge, and the suite's files are byte for byte what they were."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from attnbench.api import programs as api_programs
from attnbench.judge import course_judge as judging
from attnbench.sandbox.room import Sandbox, SandboxSettings

SOURCES = Path(__file__).resolve().parents[1] / "adversarial" / "programs"
CASES = "odd_17x48,odd_100x32"
ROOT = os.geteuid() == 0


def _sandbox_confinement():
    """How the judge would confine programs here with --sandbox auto."""
    with tempfile.NamedTemporaryFile() as program:
        sandbox = Sandbox.open(Path(program.name), SandboxSettings("auto"))
        sandbox.close()
        return sandbox.confinement


CONFINEMENT = _sandbox_confinement()
SANDBOXED = CONFINEMENT.sandboxed
MODES = [pytest.param("required", marks=pytest.mark.skipif(not SANDBOXED, reason="no bwrap sandbox here")),
         "none"]
# Root is not bound by RLIMIT_NPROC: a sandbox that cannot run programs as nobody cannot contain a fork bomb.
BOMB_MODES = [pytest.param("required", marks=pytest.mark.skipif(
    not SANDBOXED or (ROOT and CONFINEMENT.user is None), reason="no bwrap sandbox that runs programs as nobody")),
    "none"]


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """build(name, **defines): the trick compiled with -D defines, under a name unique to this run (so a
    /proc scan for it finds only its processes); the suite's data folder is DATA_DIR."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    folder = tmp_path_factory.mktemp("adversarial")
    data = tmp_path_factory.getbasetemp() / "suite-data"  # as conftest's private_data_dir sets it

    def compile_one(name: str, **defines: str) -> Path:
        exe = folder / f"{name}_{os.getpid()}_{len(defines)}"
        flags = [f"-D{key}={value}" for key, value in {"DATA_DIR": f'"{data}"', **defines}.items()]
        subprocess.run([compiler, "-O1", "-o", str(exe), *flags, str(SOURCES / f"{name}.c"), "-lm"], check=True)
        return exe

    return compile_one


def _judge(program: Path, mode: str, cases: str = CASES, timeout: float = 10.0, **limits) -> judging.Judgement:
    settings = SandboxSettings(mode, **limits)
    judgement, _ = api_programs.judge(str(program), cases, time_limits="none", timeout=timeout, sandbox=settings)
    assert judgement.confinement.sandboxed == (mode == "required")
    return judgement


def _alive(name: str) -> list[str]:
    """Command lines of live processes that name the program (its copy keeps its file name)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and name in proc.joinpath("cmdline").read_bytes().decode(errors="replace"):
                if proc.joinpath("stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    found.append(proc.joinpath("cmdline").read_bytes().decode(errors="replace"))
        except OSError:
            pass
    return found


def _verdicts(judgement: judging.Judgement) -> list[str]:
    return [j.verdict for j in judgement.judged]


def _suite_sums(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.parametrize("mode", MODES)
def test_a_program_that_hunts_the_reference_does_not_pass(build, mode):
    if mode == "none" and not ROOT:
        pytest.skip("the fallback cannot hide a file from a program that runs as its owner (see README)")
    judgement = _judge(build("steal_reference"), mode)
    assert _verdicts(judgement) == [judging.CRASH, judging.CRASH]
    assert all("found no reference" in j.message for j in judgement.judged)


@pytest.mark.parametrize("mode", MODES)
def test_a_program_cannot_read_another_case_or_write_the_suite(build, mode, private_data_dir):
    if mode == "none" and not ROOT:
        pytest.skip("the fallback cannot hide a file from a program that runs as its owner (see README)")
    for case in judging.cases_for(CASES):  # the suite's files exist before the run
        judging.prepare_case(case)
    before = _suite_sums(private_data_dir)
    # the sandbox's /tmp is its own; the fallback's is the machine's, anybody's files in it are not cases'
    scan_tmp = {"SCAN_TMP": "1"} if mode == "required" else {}
    judgement = _judge(build("read_other_case", OTHER=f'"{private_data_dir}"', **scan_tmp), mode)
    assert all("found no other case" in j.message for j in judgement.judged), judgement.judged
    tamper = _judge(build("tamper_suite"), mode)
    assert all("changed nothing outside its folder" in j.message for j in tamper.judged), tamper.judged
    assert _suite_sums(private_data_dir) == before


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("trick, verdicts", [
    ("double_fork", {judging.NO_OUTPUT, judging.SIZE}),
    ("daemon", {judging.NO_OUTPUT}),
    ("ignore_signals", {judging.TIMEOUT}),
])
def test_no_process_a_program_started_outlives_the_judge(build, mode, trick, verdicts):
    program = build(trick)
    judgement = _judge(program, mode, cases="odd_17x48", timeout=1.0)
    judged = judgement.judged[0]
    assert judged.verdict in verdicts, judged.message
    assert not _alive(program.name), f"{trick} left a process running"
    if judged.verdict == judging.TIMEOUT:
        assert "killed (with every process it started)" in judged.message


@pytest.fixture
def own_temp(monkeypatch):
    """A temporary folder of this test's own for the judge's case folders (nobody may pass through it)."""
    folder = Path(tempfile.mkdtemp(prefix="attnbench-test-"))
    folder.chmod(0o711)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("mode", MODES)
def test_a_disk_filler_is_stopped_at_the_size_limit_and_leaves_nothing(build, mode, private_data_dir, own_temp):
    judging.prepare_case(judging.cases_for("odd_17x48")[0])
    sums = _suite_sums(private_data_dir)
    judgement = _judge(build("disk_filler", FILL_MB="64"), mode, cases="odd_17x48")
    judged = judgement.judged[0]
    assert judged.verdict == judging.RESOURCE
    assert "wrote more than the 1 MiB file-size limit: stopped" in judged.message
    assert list(own_temp.iterdir()) == []  # the case folder and its logs are gone
    assert _suite_sums(private_data_dir) == sums


@pytest.mark.parametrize("mode", BOMB_MODES)
def test_a_fork_bomb_is_contained(build, mode):
    program = build("fork_bomb")
    judgement = _judge(program, mode, cases="odd_17x48", processes=40)
    judged = judgement.judged[0]
    # RESOURCE LIMIT where the run's cgroup recorded the refused fork (as root on cgroup v2 with pids), else CRASH
    refused = judged.message.startswith("tried to run more than 40 processes and threads (--max-processes, its "
                                        "cgroup's): refused")
    assert judged.verdict == (judging.RESOURCE if refused else judging.CRASH), judged.message
    assert "exited with status 4" in judged.message, judged.message
    made = int(re.search(r"forked (\d+) children", judged.message)[1])
    assert made <= 40
    assert not _alive(program.name)


@pytest.fixture
def loopback_server():
    """A TCP server on 127.0.0.1 that counts the connections it accepts (for a few seconds at most)."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    accepted, stop = [], threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            accepted.append(connection.recv(16))
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join(timeout=2)
    server.close()


NETWORK_MODES = [pytest.param("required", marks=pytest.mark.skipif(not SANDBOXED, reason="no bwrap sandbox here")),
                 pytest.param("none", marks=pytest.mark.skipif(not ROOT, reason="the fallback cuts it as root only"))]


@pytest.mark.parametrize("mode", NETWORK_MODES)
def test_a_program_cannot_reach_the_network(build, loopback_server, mode):
    port, accepted = loopback_server
    judgement = _judge(build("network_call", PORT=str(port)), mode, cases="odd_17x48")
    judged = judgement.judged[0]
    assert judged.verdict == judging.CRASH and "no network: connect" in judged.message, judged.message
    assert accepted == []


def test_the_loopback_server_is_reachable_outside_the_sandbox(build, loopback_server):
    """The check above can fail: the same program outside the judge connects."""
    port, accepted = loopback_server
    done = subprocess.run([build("network_call", PORT=str(port)), "in", "out"], capture_output=True, timeout=10)
    assert done.returncode == 5 and b"connected" in done.stderr


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("trick, verdict, words", [
    ("nan_output", judging.NAN, "NaN and 0 Inf in the output"),
    ("late_writer", judging.WRONG_ANSWER, "elements off by more than"),
    ("symlink_output", judging.NO_OUTPUT, "symbolic link"),
])
def test_what_a_program_writes_is_judged_as_it_was_when_it_ended(build, mode, trick, verdict, words):
    judgement = _judge(build(trick), mode)
    assert _verdicts(judgement) == [verdict, verdict]
    assert all(words in j.message for j in judgement.judged), judgement.judged[0].message


@pytest.mark.parametrize("mode", [pytest.param("required", marks=pytest.mark.skipif(
    not SANDBOXED, reason="no bwrap sandbox here")), pytest.param("none", marks=pytest.mark.skipif(
    not ROOT, reason="without root the fallback cannot kill by uid (docs/defences.md says what holds)"))])
def test_a_fork_storm_that_hops_pids_and_writes_the_answer_late_is_judged_wrong(build, mode):
    """The program writes zeros and exits; a process it left keeps changing its PID (a sweep of /proc finds
    only the dead) and writes the right answer 0.5 s later: every process of the run must be gone before
    the output is read (found by the red team: PASS 3 times of 3 with --sandbox none as root)."""
    hopper = build("pid_hopper")
    judgement = _judge(hopper, mode)
    assert _verdicts(judgement) == [judging.WRONG_ANSWER, judging.WRONG_ANSWER], judgement.judged[0].message
    assert not _alive(hopper.name)


@pytest.mark.skipif(not SANDBOXED, reason="no bwrap sandbox here")
def test_the_sandbox_root_and_dev_are_read_only_and_its_memory_folders_capped(build):
    judgement = _judge(build("tmpfs_filler", FILL_MB="96"), "required", cases="odd_17x48")
    judged = judgement.judged[0]
    filled = dict(pair.split("=") for pair in re.search(r"filled (.*)", judged.message)[1].split())
    assert filled["root"] == "0" and filled["dev"] == "0", judged.message
    assert int(filled["shm"]) <= 64 and int(filled["tmp"]) == 96, judged.message
    if ROOT:  # the case folder is a tmpfs capped at input + 4x output (at least 1 MiB) + 16 MiB
        assert int(filled["case"]) <= 18, judged.message


@pytest.mark.skipif(not ROOT, reason="the case folder's cap needs root")
def test_many_small_files_in_the_fallback_are_capped_by_the_case_folders_size(build):
    judgement = _judge(build("tmpfs_filler", FILL_MB="40"), "none", cases="odd_17x48")
    filled = dict(pair.split("=") for pair in re.search(r"filled (.*)", judgement.judged[0].message)[1].split())
    assert int(filled["case"]) <= 18, judgement.judged[0].message


@pytest.mark.skipif(not ROOT, reason="a uid of each run's own needs root")
def test_a_setsid_fork_storm_in_the_fallback_leaves_nothing_and_harms_no_other_run(build, tmp_path):
    from tests.judge.classes import EXAMPLE

    storm = build("setsid_storm", STORM="48")
    honest = tmp_path / "honest"
    subprocess.run([shutil.which("cc") or "gcc", "-O2", "-o", str(honest), str(EXAMPLE), "-lm"], check=True)
    board = api_programs.judge_class([str(storm), str(honest)], "odd_17x48", time_limits="none", rerun_top=0,
                                     sandbox=SandboxSettings("none", processes=200))
    rows = {row.name: row for row in board.rows}
    assert rows["honest"].passed == 1 and rows["honest"].rank == 1
    assert not _alive(storm.name)


@pytest.mark.skipif(not SANDBOXED, reason="no bwrap sandbox here")
def test_ld_library_path_dot_does_not_knock_the_judge_out_of_its_sandbox(build, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # "." is the judge's working folder: the submission's, say
    monkeypatch.setenv("LD_LIBRARY_PATH", ".:lib")
    settings = SandboxSettings("auto")
    judgement, _ = api_programs.judge(str(build("steal_reference")), "odd_17x48", time_limits="none", timeout=10.0,
                                      sandbox=settings)
    assert judgement.confinement.sandboxed
    assert [j.verdict for j in judgement.judged] == [judging.CRASH]
    assert "found no reference" in judgement.judged[0].message


@pytest.mark.skipif(not ROOT, reason="a uid of each run's own needs root")
def test_a_program_that_stops_its_uid_cannot_hold_the_fallbacks_kill_pass(build):
    """Its stoppers stopped the kill pass's child (the run's uid, before its pass), and the judge waited for ever."""
    stopper = build("stop_storm")
    judged: list = []
    judging_thread = threading.Thread(target=lambda: judged.append(_judge(stopper, "none", cases="odd_17x48", timeout=3.0)),
                                      daemon=True)
    judging_thread.start()
    judging_thread.join(60)
    if judging_thread.is_alive():  # let the stuck wait go: the stoppers are this test's own
        subprocess.run(["pkill", "-KILL", "-f", stopper.name], check=False)
        judging_thread.join(10)
    assert judged, "the judge waited for ever on its kill pass"
    assert _verdicts(judged[0]) == ["TIMEOUT"] and not _alive(stopper.name)  # its run lasts as its stoppers do
