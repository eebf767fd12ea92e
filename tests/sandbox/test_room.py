"""The sandbox's rooms: which confinement is chosen, what a case folder holds, what the command mounts,
the one-line warning of the fallback, and --sandbox required's refusal; a CUDA program inside it."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from attnbench.cases.testcase import Shape
from attnbench.sandbox.process import run_process
from attnbench.cli import main
from attnbench.judge import course_judge as judging
from attnbench.sandbox import room as sandboxing
from attnbench.sandbox.room import Sandbox, SandboxSettings, SandboxUnavailable

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HAS_BWRAP = sandboxing.find_bwrap()[0] is not None


@pytest.fixture
def program(tmp_path) -> Path:
    path = tmp_path / "prog"
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o700)
    return path


@pytest.fixture
def no_bwrap(monkeypatch, tmp_path):
    """As on a machine without bwrap: $ATTNBENCH_BWRAP names a file that cannot run."""
    missing = tmp_path / "bwrap"
    missing.write_text("")
    monkeypatch.setenv(sandboxing.BWRAP_ENV, str(missing))
    return missing


def test_the_bwrap_variable_is_honoured_and_a_bad_one_is_named(no_bwrap):
    tool, why = sandboxing.find_bwrap()
    assert tool is None and f"$ATTNBENCH_BWRAP={no_bwrap} is not an executable file" == why


@pytest.mark.skipif(not HAS_BWRAP, reason="no bwrap")
def test_a_relative_bwrap_variable_names_the_tool_from_the_callers_folder(program, monkeypatch, tmp_path):
    """ATTNBENCH_BWRAP=./bwrap passed the check here, then the probe, started in a case folder, found no such
    file: the sandbox was dropped with a false reason ("No such file or directory")."""
    (tmp_path / "bwrap").symlink_to(shutil.which("bwrap"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(sandboxing.BWRAP_ENV, "./bwrap")
    assert sandboxing.find_bwrap() == (str(tmp_path / "bwrap"), "")
    sandbox = Sandbox.open(program, SandboxSettings("auto"))
    sandbox.close()
    assert sandbox.confinement.sandboxed, sandbox.confinement.warning()


def test_without_bwrap_auto_falls_back_and_required_refuses(program, no_bwrap):
    sandbox = Sandbox.open(program, SandboxSettings("auto"))
    try:
        assert not sandbox.confinement.sandboxed
        assert "no sandbox ($ATTNBENCH_BWRAP=" in sandbox.confinement.warning()
        if os.geteuid() == 0:  # each run a uid of its own: the one drawn at opening, then drawn again for every case
            first = sandbox.user
            assert first in sandboxing.OWN_UIDS and sandbox.sole_user
            sandbox.finish(sandbox.prepare("c", None))
            assert sandbox.user == first
            sandbox.finish(sandbox.prepare("d", None))
            assert sandbox.user in sandboxing.OWN_UIDS and sandbox.user != first
        else:
            assert sandbox.user is None
    finally:
        sandbox.close()
    assert not sandbox.root.exists()
    with pytest.raises(SandboxUnavailable, match="--sandbox required: no sandbox can be made here"):
        Sandbox.open(program, SandboxSettings("required"))


@pytest.mark.skipif(os.geteuid() != 0, reason="only root drops programs to nobody")
def test_a_sandbox_that_cannot_run_as_nobody_says_it_runs_programs_as_root(program, monkeypatch):
    monkeypatch.setattr(sandboxing, "find_bwrap", lambda: ("/usr/bin/bwrap", ""))
    monkeypatch.setattr(Sandbox, "_probe", lambda self, tool, user: "bwrap failed: no userns" if user else "")
    sandbox = Sandbox.open(program, SandboxSettings("required"))
    sandbox.close()
    assert sandbox.confinement.sandboxed and sandbox.user is None
    assert "cannot run as nobody (bwrap failed: no userns)" in sandbox.confinement.warning()
    assert "--max-processes does not bind" in sandbox.confinement.warning()


@pytest.mark.parametrize("returncode, stderr, said", [
    (1, b"", "/opt/bw/bwrap failed without a word (exited with status 1)"),
    (-9, b"", "/opt/bw/bwrap failed without a word (killed by SIGKILL)"),
    (1, b"bwrap: setting up uid map: Permission denied\n\n", "/opt/bw/bwrap failed (exited with status 1): bwrap: "
                                                             "setting up uid map: Permission denied"),
    (-9, b"\x1b[2Jcleared\n", "/opt/bw/bwrap failed (killed by SIGKILL): \\x1b[2Jcleared"),
])
def test_a_probe_that_fails_names_the_tool_and_how_it_ended(returncode, stderr, said):
    """A bwrap that failed without a word was "bwrap failed: 1": no path, and an exit status read as a reason."""
    from attnbench.sandbox.room import probe_failure

    assert probe_failure("/opt/bw/bwrap", returncode, stderr) == said


def test_the_cli_warns_once_without_a_sandbox_and_exits_3_when_one_is_required(program, no_bwrap, tmp_path):
    runner = CliRunner()
    fallback = runner.invoke(main, ["judge", str(program), "--cases", "odd_17x48,odd_100x32", "--no-save"])
    assert fallback.exit_code == 1 and fallback.output.count("warning: no sandbox") == 1, fallback.output
    required = runner.invoke(main, ["judge", str(program), "--cases", "odd_17x48", "--sandbox", "required"])
    assert required.exit_code == 3
    lines = [line for line in required.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "--sandbox required" in lines[0] and "Traceback" not in required.output


def test_a_case_folder_holds_a_copy_of_the_input_and_the_program_is_a_copy(program, tmp_path):
    source = tmp_path / "case.in"
    source.write_bytes(b"\x01\x02\x03")
    sandbox = Sandbox.open(program, SandboxSettings("none"))
    try:
        case = sandbox.prepare("t01", source)
        assert case.input.read_bytes() == source.read_bytes()
        assert os.stat(case.input).st_ino != os.stat(source).st_ino  # a copy, not a link
        assert case.folder.parent == sandbox.root
        assert sandbox.program.read_bytes() == program.read_bytes() and sandbox.program != program
        assert stat.S_IMODE(sandbox.program.stat().st_mode) == 0o555
        assert case.input_arg == str(case.input)  # the fallback gives host paths
        sandbox.finish(case)
        assert not case.folder.exists()
    finally:
        sandbox.close()


@pytest.mark.skipif(not HAS_BWRAP, reason="no bwrap here")
def test_the_sandbox_command_mounts_the_case_and_program_only(program, tmp_path, private_data_dir):
    sandbox = Sandbox.open(program, SandboxSettings("required", binds=(tmp_path,)))
    try:
        case = sandbox.prepare("t01", None)
        words = sandbox.command([sandbox.program_path(), case.input_arg, case.output_arg], case)
        assert words[0] == sandbox.confinement.tool and "--unshare-all" in words and "--clearenv" in words
        binds = {words[i + 2]: words[i + 1] for i, w in enumerate(words) if w == "--bind"}
        assert binds["/judge/case"] == "."  # run in it
        if case.scratch is not None:  # as root: /tmp and /dev/shm capped in bytes and files, named relatively too
            assert binds["/tmp"].startswith("../t01-tmp-") and binds["/dev/shm"].startswith("../t01-shm-")
        assert str(sandbox.root) not in " ".join(words)  # bwrap's command line (/proc/1/cmdline) names no judge folder
        assert words[-3:] == ["/judge/program/prog", "/judge/case/t01.in", "/judge/case/t01.out"]
        assert str(private_data_dir) not in " ".join(words) and str(Path.home()) not in words
        at = words.index(str(tmp_path))  # the bind's source where it is bound as it is, else its destination
        bound = words[at - 1:at + 2] if sandbox.view is None else words[at - 2:at + 1]
        if sandbox.view is None:
            assert bound == ["--ro-bind", str(tmp_path), str(tmp_path)]
        else:  # as root, through the view's overlay of it (box_view): named relatively, like the case
            assert bound[0] == "--ro-bind" and bound[1].startswith("../view-") and bound[2] == str(tmp_path)
    finally:
        sandbox.close()


@pytest.mark.skipif(not HAS_BWRAP, reason="no bwrap here")
def test_the_launcher_wraps_the_sandbox_which_wraps_the_program(program, tmp_path):
    judged_program = judging.make_program(str(program), "env FOO=1", "{in} {out}")
    sandbox = Sandbox.open(judged_program.path, SandboxSettings("required"), launched=True)
    try:
        case = sandbox.prepare("t01", None)
        spec = judged_program.spec("t01", tmp_path / "t01.in", Shape(1, 17, 48), 10.0)
        words = sandbox.wrapped(spec.argv(sandbox.program_path(), case.input_arg, case.output_arg), case,
                                spec.launcher)
        assert words[:3] == ["env", "FOO=1", sandbox.confinement.tool]
        assert words[-3:] == ["/judge/program/prog", "/judge/case/t01.in", "/judge/case/t01.out"]
        assert "--clearenv" not in words and sandbox.user is None  # the job step keeps its environment
    finally:
        sandbox.close()


@pytest.mark.parametrize("mode", [pytest.param("required", marks=pytest.mark.skipif(not HAS_BWRAP, reason="no bwrap")),
                                  "none"])
def test_a_submission_builds_with_make_in_a_sandbox_opened_without_a_program(tmp_path, mode):
    if shutil.which("make") is None or shutil.which("cc") is None:
        pytest.skip("no make or cc")
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "Makefile").write_text("hw: hw.c\n\tcc -O1 -o hw hw.c\n")
    (submission / "hw.c").write_text("int main(void) { return 7; }\n")
    sandbox = Sandbox.open(None, SandboxSettings(mode))
    try:
        case = sandbox.prepare("build", None, files=submission)
        outcome = run_process(sandbox.command(["make"], case), case.folder, 60, user=sandbox.user,
                              limits=sandbox.settings.limits_for(16 << 20, 60), env=sandbox.case_env(case))
        assert outcome.returncode == 0, outcome.stderr_tail
        assert subprocess.run([case.folder / "hw"]).returncode == 7
        assert not (submission / "hw").exists()  # built in the case folder's copy
        sandbox.finish(case)
    finally:
        sandbox.close()
    with pytest.raises(ValueError, match="without a program"):
        sandbox.program_path()


def test_the_limits_of_a_case():
    limits = SandboxSettings(processes=64, memory_mb=1024).limits_for(output_bytes=10 << 20, timeout_s=5)
    assert limits.file_bytes == 40 << 20 and limits.processes == 64
    assert limits.memory_bytes == 1 << 30 and limits.cpu_s == 20
    small = SandboxSettings(cpu_s=3.5).limits_for(output_bytes=100, timeout_s=1)
    assert small.file_bytes == 1 << 20 and small.cpu_s == 4 and small.memory_bytes is None


def test_memory_and_processes_are_left_to_the_runs_cgroup_where_it_watches_them(tmp_path):
    """RLIMIT_NPROC beside pids.max refused the fork first, unrecorded by the cgroup: the row said CRASH
    (found on an H200's host, where the judge makes cgroups)."""
    from attnbench.sandbox.cgroups import RunGroups

    room = Sandbox(sandboxing.Confinement("fallback", reason="a test"), tmp_path, None,
                   settings=SandboxSettings(processes=3, memory_mb=64))
    room.groups = RunGroups(tmp_path, ("memory", "pids"))
    watched = room.limits_for(100, 5.0)
    assert watched.processes is None and watched.memory_bytes is None and watched.cpu_s == 20
    room.groups = RunGroups(tmp_path, ("cpuset",))
    unwatched = room.limits_for(100, 5.0)
    assert unwatched.processes == 3 and unwatched.memory_bytes == 64 << 20
    room.groups = None
    assert room.limits_for(100, 5.0) == unwatched


@pytest.mark.parametrize("field, value", [("processes", 0), ("processes", -1), ("memory_mb", 0), ("memory_mb", -5),
                                          ("cpu_s", float("nan")), ("cpu_s", 0), ("cpu_s", -1.0), ("program_mb", 0),
                                          ("program_mb", None), ("processes", 2.5)])
def test_settings_out_of_the_command_lines_ranges_are_refused_in_one_sentence(field, value):
    """From Python, cpu_s=nan ended the judge in a ValueError traceback at its first case, and processes=0 or
    memory_mb=-5 (no limit at all) or cpu_s=0 (every case killed) were taken without a word."""
    from attnbench.errors import UsageError

    with pytest.raises(UsageError, match=rf"^{field}="):
        SandboxSettings("auto", **{field: value})
    assert SandboxSettings("auto", processes=None, memory_mb=None, cpu_s=None).limits_for(1, 5.0).cpu_s == 20


def test_the_saved_results_say_how_cases_were_confined(tmp_path, program):
    runner = CliRunner()
    result = runner.invoke(main, ["judge", str(program), "--cases", "odd_17x48", "--results-dir", tmp_path / "res",
                                  "--sandbox", "none", "--max-processes", "77"])
    assert result.exit_code == 1, result.output
    settings = json.loads(next((tmp_path / "res").glob("*.json")).read_text())["settings"]
    assert settings["sandbox"]["kind"] == "fallback" and settings["sandbox"]["reason"] == "--sandbox none"
    assert settings["sandbox_limits"]["processes"] == 77 and settings["sandbox_limits"]["memory"] is None


# -- on a GPU ---------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_the_course_cuda_program_passes_in_the_sandbox(gpu, tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc")
    if not HAS_BWRAP:
        pytest.skip("no bwrap: install bubblewrap or set ATTNBENCH_BWRAP to a bwrap binary")
    exe = tmp_path / "hw4"
    subprocess.run([nvcc, "-O3", f"-arch={gpu.arch}", "-o", str(exe), str(EXAMPLES / "course_program" / "hw4.cu")],
                   check=True)
    result = CliRunner().invoke(main, ["judge", str(exe), "--cases", "t01-t03", "--sandbox", "required",
                                       "--time-limits", "none", "--results-dir", str(tmp_path / "res")])
    assert result.exit_code == 0, result.output
    assert "3 of 3 cases passed" in result.output and "warning: no sandbox" not in result.output
    saved = json.loads(next((tmp_path / "res").glob("*.json")).read_text())
    assert saved["settings"]["sandbox"]["kind"] == "bwrap"
    assert [c["extra"]["verdict"] for c in saved["cells"]] == ["PASS"] * 3


@pytest.mark.parametrize("mode", [pytest.param("required", marks=pytest.mark.skipif(not HAS_BWRAP, reason="no bwrap")),
                                  "none"])
def test_cudas_jit_cache_is_written_by_the_warm_up_only_and_read_by_every_judged_run(tmp_path, mode):
    """A program built as PTX would compile its kernels in every case without it (2 s a case on an H200);
    a writable cache shared by the judged runs would let one run replay another's output."""
    from attnbench.judge.class_flow import cache_of, cuda_caches

    caches = cuda_caches()
    seen = []
    try:
        for writable in (True, False, False):
            sandbox = Sandbox.open(None, SandboxSettings(mode), cuda_cache=cache_of(caches, "one"),
                                   cache_writable=writable)
            try:
                case = sandbox.prepare("c", None)
                script = 'ls "$CUDA_CACHE_PATH"; (touch "$CUDA_CACHE_PATH/run-$$.bin" 2>/dev/null && echo wrote) || true'
                outcome = run_process(sandbox.command(["/bin/sh", "-c", script], case), case.folder, 30,
                                      user=sandbox.user, env=sandbox.case_env(case))
                assert outcome.returncode == 0, outcome.stderr_tail
                seen.append(outcome.stdout_tail.split())
                sandbox.finish(case)
                if writable:
                    assert sandbox.seal_warm_cache() == ""
            finally:
                sandbox.close()
        assert seen[0] == ["wrote"]  # the warm-up fills it
        # each judged run finds what the warm-up wrote, and writes only into a copy of its own
        assert seen[1][0].startswith("run-") and seen[1][-1] == "wrote" and seen[2] == seen[1]
        assert len(list(cache_of(caches, "one").iterdir())) == 1
        assert os.stat(caches).st_mode & 0o777 == 0o711
        assert cache_of(caches, "one") != cache_of(caches, "two") and len(cache_of(caches, "one").name) == 32
    finally:
        shutil.rmtree(caches, ignore_errors=True)


def test_a_class_refuses_to_run_without_the_sandbox_unless_told_none(program, no_bwrap, tmp_path):
    from attnbench.api import programs as api_programs

    (tmp_path / "class").mkdir()
    shutil.copy(program, tmp_path / "class" / "one")
    with pytest.raises(SandboxUnavailable, match="a class runs strangers' code, so it is judged in the sandbox only"):
        api_programs.judge_class([tmp_path / "class"], "odd_17x48", time_limits="none")
    result = CliRunner().invoke(main, ["judge", str(tmp_path / "class"), "--cases", "odd_17x48", "--no-save"])
    lines = [line for line in result.output.splitlines() if line.strip() and not line.startswith("note:")]
    assert result.exit_code == 3 and len(lines) == 1 and "--sandbox none judges it without one" in lines[0]
    assert lines[0].count("can be made here") == 1  # "none can be made here (no sandbox can be made here: ...)"
    board = api_programs.judge_class([tmp_path / "class"], "odd_17x48", time_limits="none", rerun_top=0,
                                     sandbox=SandboxSettings("none"))
    assert board.settings["confinement"]["kind"] == "fallback"


@pytest.mark.skipif(not HAS_BWRAP, reason="no bwrap")
def test_a_bwrap_that_fails_on_this_runs_mounts_is_an_error_not_a_fallback(program, tmp_path):
    try:
        Sandbox.open(program, SandboxSettings("auto")).close()
    except SandboxUnavailable:
        pytest.skip("bwrap cannot make namespaces here")
    bad = SandboxSettings("auto", binds=(tmp_path / "gone",))  # a bind whose source is missing
    with pytest.raises(SandboxUnavailable, match="bwrap works here but not with this run's mounts"):
        Sandbox.open(program, bad)


def test_relative_and_world_writablelibrary_folders_are_never_bound(tmp_path, monkeypatch):
    open_folder = tmp_path / "anybody"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    kept = tmp_path / "libs"
    kept.mkdir()
    kept.chmod(0o755)
    tmp_path.chmod(0o755)
    monkeypatch.setenv("LD_LIBRARY_PATH", f".:lib:{open_folder}:{kept}:")
    monkeypatch.chdir(tmp_path)
    assert sandboxing.library_folders(()) == [kept]


def test_a_folder_holding_the_judges_temporary_folder_is_never_bound(tmp_path, monkeypatch):
    """Bound into the box (a parent of it: as it is when mounts lie inside, as the rooms' case mounts do), the
    temporary folder showed every room open beside the run's, and their programs' copies (read-only to all): a
    program ran another submission's program. An LD_LIBRARY_PATH entry holding it is not bound; a --sandbox-bind
    is refused (exit 2)."""
    import tempfile

    from attnbench.sandbox.room import BindRefused

    temp = tmp_path / "temp"
    temp.mkdir(mode=0o755)
    tmp_path.chmod(0o755)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    beside = tmp_path / "libs"
    beside.mkdir(mode=0o755)
    monkeypatch.setenv("LD_LIBRARY_PATH", f"{tmp_path}:{temp}:{beside}")
    assert sandboxing.library_folders(()) == [beside]
    for folder in (tmp_path, temp):
        with pytest.raises(BindRefused, match="holds the judge's temporary folder") as refused:
            SandboxSettings("required", binds=(beside, folder))
        assert refused.value.exit_code == 2
    assert SandboxSettings("required", binds=(beside, temp / "inside")).binds  # a folder inside it shows no room


@pytest.mark.skipif(not HAS_BWRAP, reason="no bwrap here")
def test_the_programs_pid_1_shows_none_of_the_judges_folders(tmp_path):
    sandbox = Sandbox.open(None, SandboxSettings("required"))
    try:
        case = sandbox.prepare("c", None)
        outcome = run_process(sandbox.command(["/bin/sh", "-c", "tr '\\0' ' ' < /proc/1/cmdline"], case), case.folder,
                              30, user=sandbox.user, env=sandbox.case_env(case))
        shown = outcome.stdout_tail
        assert outcome.returncode == 0 and "bwrap" in shown and "/judge/case" in shown
        assert str(sandbox.root) not in shown and "attnbench-judge" not in shown
        sandbox.finish(case)
    finally:
        sandbox.close()


def test_each_limit_that_does_not_hold_is_said_once_and_saved(program, tmp_path):
    from attnbench.sandbox import cgroups

    result = CliRunner().invoke(main, ["judge", str(program), "--cases", "odd_17x48", "--memory-limit", "4096",
                                       "--results-dir", tmp_path / "res"])
    said = [line for line in result.output.splitlines() if line.startswith("limit not applied:")]
    groups, why = cgroups.RunGroups.make()
    if groups is not None:  # a cgroup v2 with memory here: --memory-limit holds as memory.max
        groups.close()
        assert not any(line.startswith("limit not applied: memory") for line in said)
    else:
        assert f"limit not applied: memory: no cgroup ({why}): --memory-limit is RLIMIT_AS" in said[0]
    assert sum("disk:" in line for line in said) == (0 if os.geteuid() == 0 else 1)  # once, not once per case
    saved = json.loads(next((tmp_path / "res").glob("*.json")).read_text())
    assert saved["settings"]["sandbox"]["limits_not_applied"] == [line.split(": ", 1)[1] for line in said]


def test_a_run_whose_cgroup_cannot_be_made_is_judged_without_groups_and_says_why(program, tmp_path):
    class Refusing:
        controllers = ("memory", "pids")
        closed = False

        def run_group(self, *args):
            raise OSError(28, "No space left on device")

        def close(self):
            Refusing.closed = True

    sandbox = Sandbox.open(program, SandboxSettings("none"))
    try:
        sandbox.groups = Refusing()
        case = sandbox.prepare("t01", None)
        assert case.cgroup is None and sandbox.groups is None and Refusing.closed
        assert "a run's cgroup could not be made (No space left on device)" == sandbox.groups_reason
        sandbox.finish(case)
    finally:
        sandbox.close()


@pytest.mark.skipif(not HAS_BWRAP, reason="no bwrap")
def test_as_root_a_runs_tmp_and_shm_are_capped_in_files_too(tmp_path):
    """bwrap's own --tmpfs caps bytes only: 470,000 empty files in /tmp once took 465 MB of kernel memory."""
    from attnbench.sandbox import case_disk

    if not case_disk.can_cap():
        pytest.skip("cannot mount a tmpfs here (not root, or a container forbids it)")
    sandbox = Sandbox.open(None, SandboxSettings("required"))
    try:
        case = sandbox.prepare("c", None)
        assert case.scratch is not None
        script = ('for d in /tmp /dev/shm; do i=0; while [ $i -lt 12000 ] && true 2>/dev/null > $d/f$i; do '
                  'i=$((i+1)); done; echo $i; done')
        outcome = run_process(sandbox.command(["/bin/sh", "-c", script], case), case.folder, 120,
                              user=sandbox.user, env=sandbox.case_env(case))
        assert outcome.returncode == 0, outcome.stderr_tail
        made = [int(n) for n in outcome.stdout_tail.split()]
        assert len(made) == 2 and all(5000 < n < 12000 for n in made), made
        scratch = case.scratch
        sandbox.finish(case)
        assert not any(p.exists() for p in scratch)
    finally:
        sandbox.close()


@pytest.mark.parametrize("mode", [pytest.param("required", marks=pytest.mark.skipif(not HAS_BWRAP, reason="no bwrap")),
                                  "none"])
def test_as_root_a_judged_runs_cache_copy_is_capped_in_total_and_unmounted_after(tmp_path, mode):
    """A run once wrote 3.1 GB into its copy of the CUDA cache, on the host's disk, within its time limit."""
    from attnbench.judge.class_flow import cache_of, cuda_caches
    from attnbench.sandbox import case_disk
    from attnbench.sandbox.jit_cache import CACHE_SLACK_BYTES

    if not case_disk.can_cap():
        pytest.skip("a tmpfs cannot be mounted here (not root, or not allowed)")
    caches = cuda_caches()
    try:
        warm = cache_of(caches, "one")
        warm.mkdir()
        (warm / "index").write_bytes(b"x" * 1000)
        sandbox = Sandbox.open(None, SandboxSettings(mode), cuda_cache=warm)
        try:
            case = sandbox.prepare("c", None)
            assert case.cache is not None and case.cache_capped
            script = ('for i in 1 2 3 4; do head -c 31457280 /dev/zero > "$CUDA_CACHE_PATH/f$i" 2>/dev/null; done; '
                      'cat "$CUDA_CACHE_PATH"/f* | wc -c; cat "$CUDA_CACHE_PATH/index" | wc -c')
            outcome = run_process(sandbox.command(["/bin/sh", "-c", script], case), case.folder, 60,
                                  user=sandbox.user, env=sandbox.case_env(case))
            assert outcome.returncode == 0, outcome.stderr_tail
            written, index = map(int, outcome.stdout_tail.split())
            assert index == 1000  # the warm-up's cache is there to read
            assert written <= CACHE_SLACK_BYTES < 4 * 31457280  # 120 MiB asked, the cap kept
            holder = case.cache.parent
            sandbox.finish(case)
            assert not holder.exists() and str(holder) not in Path("/proc/self/mounts").read_text()
        finally:
            sandbox.close()
    finally:
        shutil.rmtree(caches, ignore_errors=True)


def _in_box(sandbox: Sandbox, script: str) -> str:
    case = sandbox.prepare("c", None)
    try:
        outcome = run_process(sandbox.command(["/bin/sh", "-c", script], case), case.folder, 30, user=sandbox.user,
                              env=sandbox.case_env(case))
        assert outcome.returncode == 0, outcome.stderr_tail
        return outcome.stdout_tail
    finally:
        sandbox.finish(case)


@pytest.mark.skipif(not HAS_BWRAP, reason="no bwrap")
def test_the_box_shows_its_own_accounts_and_no_log_path_of_the_judges():
    # the host's /etc/passwd and /etc/group named its accounts; the log files' links named the judge's folders
    host_accounts = {line.split(":")[0] for line in Path("/etc/passwd").read_text().splitlines() if line}
    sandbox = Sandbox.open(None, SandboxSettings("required"))
    try:
        shown = _in_box(sandbox, "cut -d: -f1 /etc/passwd; cut -d: -f1 /etc/group; id -un; "
                                 "readlink /proc/self/fd/1 /proc/self/fd/2")
    finally:
        sandbox.close()
    words = shown.split()
    assert set(words[:-3]) <= {"root", "runner", "nobody", "nogroup"} and words[-3] in ("runner", "root")
    assert all(w.startswith("pipe:") for w in words[-2:]) and str(sandbox.root) not in shown
    assert host_accounts - {"root", "nobody"}, "the host has no other account: the test cannot fail"


@pytest.mark.skipif(not HAS_BWRAP, reason="no bwrap")
def test_the_box_shows_none_of_the_hosts_cgroups():
    """/sys is the host's (a GPU's driver reads it), but its cgroup tree is not the box's to read: it names the
    judge's groups (its pid among them), and a batch job's and its steps' groups, born when the job began, date the
    class (a kernfs folder's times are its birth), as their counters (cpu.stat, memory.peak) measure it (red team)."""
    if not any(Path("/sys/fs/cgroup").iterdir()):
        pytest.skip("this host shows no cgroup at all: the test could not fail")
    sandbox = Sandbox.open(None, SandboxSettings("required"))
    try:
        shown = _in_box(sandbox, "ls -A /sys/fs/cgroup; echo end; ls /sys/devices >/dev/null && echo sys")
    finally:
        sandbox.close()
    assert shown.split() == ["end", "sys"]


def test_a_sealed_program_is_linked_into_each_room_never_copied_and_a_large_one_is_refused(tmp_path):
    from attnbench.sandbox.process import ProgramError
    from attnbench.sandbox.staging import take_program

    built = tmp_path / "built"
    built.write_bytes(b"\x7fELF" + b"\0" * 4096)
    sealed = take_program(built, tmp_path / "program", "hw4")
    rooms = [Sandbox.open(sealed, SandboxSettings("none")) for _ in range(2)]
    try:
        assert all(os.stat(r.program).st_ino == os.stat(sealed).st_ino for r in rooms)  # one copy on the disk
    finally:
        for r in rooms:
            r.close()
    assert sealed.exists() and os.stat(sealed).st_nlink == 1  # the rooms' links went with them
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.truncate(65 << 20)  # a Makefile once padded hw4 to 1000 MiB: each run copied it
    with pytest.raises(ProgramError, match="over the 64 MiB a program may be"):
        Sandbox.open(big, SandboxSettings("none"))
    assert Sandbox.open(big, SandboxSettings("none", program_mb=128)).close() is None
    from attnbench.sandbox.staging import StagingRefused

    with pytest.raises(StagingRefused, match="over the 64 MiB"):
        take_program(big, tmp_path / "program2", "hw4")


@pytest.mark.skipif(not HAS_BWRAP, reason="no bwrap")
def test_no_process_the_sandbox_starts_is_left_a_zombie():
    # each bwrap probe once left its children to this process (a subreaper) unreaped: 16 zombies a class
    from attnbench.sandbox.reaper import become_subreaper, descendants

    become_subreaper()
    before = {pid for pid, state in descendants(os.getpid()).items() if state == "Z"}
    for _ in range(3):
        sandbox = Sandbox.open(None, SandboxSettings("required"))
        _in_box(sandbox, "true")
        sandbox.close()
    zombies = {pid for pid, state in descendants(os.getpid()).items() if state == "Z"} - before
    assert not zombies


def test_as_root_the_warm_ups_cache_is_a_capped_tmpfs_and_sealed_into_the_cache(tmp_path):
    from attnbench.sandbox import case_disk

    if not case_disk.can_cap():
        pytest.skip("a tmpfs cannot be mounted here (not root, or not allowed)")
    cache = tmp_path / "cache"
    mode = "required" if HAS_BWRAP else "none"
    sandbox = Sandbox.open(None, SandboxSettings(mode), cuda_cache=cache, cache_writable=True)
    try:
        shown = _in_box(sandbox, 'echo kept > "$CUDA_CACHE_PATH/entry"; '
                                 'head -c 400000000 /dev/zero > "$CUDA_CACHE_PATH/big" 2>/dev/null; '
                                 'wc -c < "$CUDA_CACHE_PATH/big"; stat -f -c %b "$CUDA_CACHE_PATH"')
        written = int(shown.split()[0])
        assert written <= sandboxing.WARM_CACHE_BYTES < 400000000  # its disk is the tmpfs, not the judge's
        why = sandbox.seal_warm_cache()
        assert "dropped" in why and list(cache.iterdir()) == []
        warm = str(sandbox.root / "warm-cache")  # the room's view (box_view) stays mounted until close
        assert not any(warm in line for line in Path("/proc/self/mounts").read_text().splitlines())
    finally:
        sandbox.close()
    assert not any(str(sandbox.root) in line for line in Path("/proc/self/mounts").read_text().splitlines())


def test_a_limit_nobody_asked_for_is_not_said_to_be_not_applied(program):
    sandbox = Sandbox.open(program, SandboxSettings("auto"))
    try:
        assert not any(note.startswith("memory") for note in sandbox.limit_notes())
    finally:
        sandbox.close()


@pytest.mark.skipif(not HAS_BWRAP, reason="no bwrap")
def test_a_rooms_probe_runs_once_per_process_for_the_same_mounts_and_again_for_others(program, tmp_path, monkeypatch):
    """A class opens a room for every run: the probe's own box, once a run, cost more than the rest of the run's
    room. It is asked once for the same user kind and mounts; a bind that changes (or goes) is probed again."""
    try:
        Sandbox.open(program, SandboxSettings("required")).close()
    except SandboxUnavailable:
        pytest.skip("bwrap cannot make namespaces here")
    monkeypatch.setattr(sandboxing, "_PROBED_OK", set())
    probes: list[object] = []
    real = Sandbox._probe_now
    monkeypatch.setattr(Sandbox, "_probe_now", lambda self, tool, user: probes.append(user) or real(self, tool, user))
    rooms = [Sandbox.open(program, SandboxSettings("required")) for _ in range(3)]
    for room in rooms:
        room.close()
    assert len(probes) == 1 and len({room.confinement.kind for room in rooms}) == 1
    if rooms[0].confinement.own_uids:  # as root: still a uid of each room's own
        assert len({room.confinement.user for room in rooms}) == 3
    extra = Path(tempfile.mkdtemp(prefix="attnbench-test-bind-"))  # a folder every run's user may pass through
    try:
        os.chmod(extra, 0o755)
        Sandbox.open(program, SandboxSettings("required", binds=(extra,))).close()
        assert len(probes) == 2
    finally:
        extra.rmdir()  # the same path gone: probed again, and the room refused as before
    with pytest.raises(SandboxUnavailable, match="not with this run's mounts"):
        Sandbox.open(program, SandboxSettings("auto", binds=(extra,)))
    assert len(probes) >= 3


@pytest.mark.parametrize("mode", ["required", "none"])
def test_without_root_the_header_says_every_write_that_is_not_capped(program, monkeypatch, mode):
    """Without a tmpfs of a run's own, the line names each place a run writes uncapped: its case folder, its
    cache copy, the warm-up's cache, and /tmp (bwrap's caps bytes, not files; the fallback's is the machine's)."""
    from attnbench.sandbox import case_disk

    if mode == "required" and not HAS_BWRAP:
        pytest.skip("no bwrap")
    monkeypatch.setattr(case_disk, "can_cap", lambda: False)  # as without root
    sandbox = Sandbox.open(program, SandboxSettings(mode))
    try:
        disk = [note for note in sandbox.limit_notes() if note.startswith("disk:")]
    finally:
        sandbox.close()
    assert len(disk) == 1
    for place in ("case folder", "copy of the CUDA cache", "warm-up writes in its cache", "the disk the judge writes to"):
        assert place in disk[0], (place, disk[0])
    assert ("in bytes (not in files)" if mode == "required" else "the machine's own, not capped") in disk[0]


def test_a_room_whose_judge_was_killed_outright_is_removed_with_its_mounts_by_the_next(tmp_path):
    """SIGKILL runs no clean-up: the room stays, and (as root) its case tmpfs, holding the input, stays mounted.
    The next process that opens a room removes it, never a live process's room."""
    import signal
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    opened = ("from attnbench.sandbox.room import Sandbox, SandboxSettings; import os, sys; "
              "room = Sandbox.open(None, SandboxSettings('none')); case = room.prepare('c', None); "
              "print(room.root, case.capped, flush=True); ")
    killed = subprocess.Popen([sys.executable, "-c", opened + "os.kill(os.getpid(), 9)"], cwd=root, env=env,
                              stdout=subprocess.PIPE, text=True)
    left, capped = killed.stdout.readline().split()
    assert killed.wait(timeout=60) == -signal.SIGKILL and Path(left).is_dir()
    assert (capped == "True") == any(left in line for line in Path("/proc/self/mounts").read_text().splitlines())
    closed = "room.finish(case); room.close()"
    live = subprocess.Popen([sys.executable, "-c", opened + "sys.stdin.read(); " + closed], cwd=root, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        kept = live.stdout.readline().split()[0]
        subprocess.run([sys.executable, "-c", opened + closed], cwd=root, env=env, check=True, capture_output=True, timeout=60)
        assert not Path(left).exists() and Path(kept).is_dir()
        assert not any(left in line for line in Path("/proc/self/mounts").read_text().splitlines())
    finally:
        live.communicate("", timeout=60)
    assert not any(str(tmp_path) in line for line in Path("/proc/self/mounts").read_text().splitlines())


@pytest.mark.skipif(os.geteuid() != 0, reason="only root gives each run a uid of its own")
@pytest.mark.parametrize("mode", [pytest.param("required", marks=pytest.mark.skipif(not HAS_BWRAP, reason="no bwrap")),
                                  "none"])
def test_each_run_has_a_uid_of_its_own_drawn_once_and_killed_once(program, tmp_path, monkeypatch, mode):
    """A run's uid is drawn once (the room's first run takes the one drawn when it opened) and every process of it
    is killed once, the moment the program exits (a second kill in finish, and a second draw, each scanned /proc:
    ~15 ms and ~8 ms of every run); a run that never ran is still killed by finish."""
    from attnbench.sandbox import process as processing

    Sandbox.open(program, SandboxSettings(mode)).close()  # its probe asked, once for the process
    draws, kills = [], []
    real_draw, real_kill = sandboxing.draw_uid, sandboxing.kill_user
    monkeypatch.setattr(sandboxing, "draw_uid", lambda: draws.append(1) or real_draw())
    monkeypatch.setattr(sandboxing, "kill_user", lambda uid: kills.append(uid) or real_kill(uid))
    real_kill_run = processing.kill_run  # the run's end: by its cgroup where it has one, else by its uid
    monkeypatch.setattr(processing, "kill_run", lambda group, uid: kills.append(uid) or real_kill_run(group, uid))
    source = tmp_path / "case.in"
    source.write_bytes(b"\x00" * 12)
    room = Sandbox.open(program, SandboxSettings(mode))
    try:
        if not room.confinement.own_uids:
            pytest.skip("this machine's sandbox runs programs as nobody or root")
        users = []
        for label in ("a", "b"):
            case = room.prepare(label, source)
            users.append(room.user)
            outcome = room.run([room.program_path()], case, 10.0, room.limits_for(12, 10.0))
            room.finish(case)
            assert outcome.returncode == 0 and outcome.all_ended
        unrun = room.prepare("c", source)  # prepared, never run: finish kills its uid
        users.append(room.user)
        room.finish(unrun)
    finally:
        room.close()
    assert len(set(users)) == 3 and all(u in sandboxing.OWN_UIDS for u in users)
    assert kills == users  # once each
    assert len(draws) <= 3  # the room's opening drew the first run's uid; without a probe, one draw a run


def test_a_runs_pids_max_leaves_room_for_bwraps_own_two_processes(tmp_path):
    settings = SandboxSettings(processes=1)
    boxed = Sandbox(sandboxing.Confinement("bwrap", "bwrap"), tmp_path, None, settings=settings)
    assert boxed._group_processes() == 1 + sandboxing.BWRAP_PROCESSES  # pids.max 1 refused bwrap its own fork
    bare = Sandbox(sandboxing.Confinement("fallback"), tmp_path, None, settings=settings)
    assert bare._group_processes() == 1
    case = bare.prepare("c", None)
    assert bare.watched_limits(case) == ()  # no group: nothing is watched
    bare.finish(case)


def test_a_limit_past_the_machines_hard_one_or_64_bits_is_said_before_any_run(monkeypatch):
    """`judge --max-processes 100000` (ulimit -Hu 96365) and `--memory-limit 17592186044416` were CRASH rows:
    prlimit failed in the box before the program started, and the program was blamed."""
    import resource

    from attnbench.sandbox import room

    hard = {resource.RLIMIT_NPROC: 96365, resource.RLIMIT_CPU: 3600}
    monkeypatch.setattr(room.resource, "getrlimit", lambda which: (0, hard.get(which, resource.RLIM_INFINITY)))
    assert SandboxSettings(processes=96364).unreachable_limit() is None
    assert "at most 96364 (ulimit -Hu is 96365)" in SandboxSettings(processes=100000).unreachable_limit()
    assert "at most 8796093022207 MiB" in SandboxSettings(memory_mb=1 << 44).unreachable_limit()
    assert SandboxSettings(memory_mb=(1 << 43) - 1).unreachable_limit() is None
    assert "at most 3599 s" in SandboxSettings(cpu_s=3600).unreachable_limit()
    assert SandboxSettings().unreachable_limit() is None


def test_a_cpu_time_past_what_the_kernel_counts_is_said_before_any_run():
    """`judge --cpu-time 36028797018963968` (2**55 s) was a RESOURCE LIMIT row in the program's first instant, and
    `--cpu-time 18446744073709551615` a CRASH row naming prlimit: the kernel keeps the limit in nanoseconds of 64
    bits, and prlimit took no larger number; the program was blamed."""
    from attnbench.sandbox.room import MAX_CPU_S

    for asked in (1 << 55, 1 << 63, (1 << 64) - 1, MAX_CPU_S + 1):
        assert f"--cpu-time {asked}: at most {MAX_CPU_S} s" in SandboxSettings(cpu_s=asked).unreachable_limit()
    assert SandboxSettings(cpu_s=MAX_CPU_S).unreachable_limit() is None or "ulimit -Ht" in (
        SandboxSettings(cpu_s=MAX_CPU_S).unreachable_limit())


@pytest.mark.skipif(not HAS_BWRAP, reason="no bwrap")
def test_the_box_binds_only_the_gpu_cuda_visible_devices_names_and_names_it_by_uuid(monkeypatch, tmp_path):
    """A --gpus pool's worker gives its runs one GPU by CUDA_VISIBLE_DEVICES, which a program can unset: with every
    /dev/nvidiaN bound it then saw every GPU of the node, and ran on the one where a rival was being timed (red team)."""
    from attnbench.sandbox import gpu_nodes

    gpus = (gpu_nodes.ListedGpu(0, "GPU-aaaa", "NVIDIA H200", "00000000:17:00.0"),
            gpu_nodes.ListedGpu(1, "GPU-bbbb", "NVIDIA H200", "00000000:3D:00.0"))
    monkeypatch.setattr(gpu_nodes, "listed_gpus", lambda: gpus)
    for bus, minor in (("0000:17:00.0", 0), ("0000:3d:00.0", 1)):
        (tmp_path / bus).mkdir()
        (tmp_path / bus / "information").write_text(f"Device Minor: \t {minor}\n")
    monkeypatch.setattr(gpu_nodes, "DRIVER_GPUS", tmp_path)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    nodes = ["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm"]
    real_glob = gpu_nodes.glob.glob

    def node_glob(pattern, *args, **kwargs):  # this node's devices only (a GPU host has nvidia-caps, dri of its own)
        return nodes if pattern == "/dev/nvidia*" else [] if pattern.startswith("/dev/") else real_glob(pattern, *args, **kwargs)

    for launched in (False, True):
        sandbox = Sandbox.open(None, SandboxSettings("required"), launched=launched)
        try:
            case = sandbox.prepare("c", None)
            # the node's devices, once the box is made (its probe binds them for real)
            monkeypatch.setattr(gpu_nodes.glob, "glob", node_glob)
            words = sandbox.command(["/bin/true"], case)
            monkeypatch.setattr(gpu_nodes.glob, "glob", real_glob)
            sandbox.finish(case)
        finally:
            sandbox.close()
        bound = sorted(words[i + 1] for i, w in enumerate(words) if w == "--dev-bind")
        set_env = {words[i + 1]: words[i + 2] for i, w in enumerate(words) if w == "--setenv"}
        if launched:  # a launcher's node has its own GPUs and its job step's CUDA_VISIBLE_DEVICES: as before
            assert bound == sorted(nodes) and "CUDA_VISIBLE_DEVICES" not in set_env
        else:
            assert bound == ["/dev/nvidia-uvm", "/dev/nvidia1", "/dev/nvidiactl"]
            assert set_env["CUDA_VISIBLE_DEVICES"] == "GPU-bbbb"  # inside, the one GPU is CUDA's 0: "1" names none


@pytest.mark.skipif(not HAS_BWRAP, reason="no bwrap")
def test_a_program_printing_past_the_output_size_limit_in_the_box_is_stopped(tmp_path):
    # The file-size limit moved into the box (prlimit) and the judge's cap on the pipes went with it: a
    # program printed 2.5 GB to stdout and was judged NO OUTPUT "exited normally".
    spammer = tmp_path / "spammer"
    spammer.write_text("#!/bin/sh\nexec yes spam\n")
    spammer.chmod(0o700)
    result = CliRunner().invoke(main, ["judge", str(spammer), "--cases", "odd_17x48", "--time-limits", "none",
                                       "--timeout", "10", "--no-save", "--sandbox", "required"])
    assert result.exit_code == 1, result.output
    assert "RESOURCE LIMIT" in result.output and "stdout or stderr" in result.output


@pytest.mark.parametrize("mode", ["none", "auto"])
def test_what_a_rooms_opening_made_is_stamped_again_right_before_each_run(program, tmp_path, mode):
    """A class opens a row's next room ahead, beside the previous run's check: the change times (which no utime
    sets) of the program's folder and link, and of the view's files, dated the opening, so a run could tell
    whether its room was opened ahead. Every run sees them changed right before it, its other times kept."""
    source = tmp_path / "case.in"
    source.write_bytes(b"\x01")
    sandbox = Sandbox.open(program, SandboxSettings(mode))
    try:
        seen = [sandbox.program.parent, sandbox.program]
        if sandbox.view is not None:
            seen += [sandbox.view.root / "blank", *sandbox.view.etc.iterdir()]
        opened = {path: os.lstat(path) for path in seen}
        before_run = time.time_ns()
        while time.time_ns() == before_run:  # a clock tick between the opening and the run
            pass
        case = sandbox.prepare("t01", source)
        for path, at_opening in opened.items():
            now = os.lstat(path)
            assert now.st_ctime_ns >= before_run, path
            assert (now.st_mtime_ns, now.st_atime_ns) == (at_opening.st_mtime_ns, at_opening.st_atime_ns), path
        assert os.lstat(sandbox.program).st_ctime_ns >= os.lstat(sandbox.program.parent).st_ctime_ns
        sandbox.finish(case)
    finally:
        sandbox.close()


def test_the_judges_own_user_is_told_from_a_runs_own_uid_without_walking_the_range(monkeypatch):
    """`None in OWN_UIDS` walked all 40 million uids of the range (0.8-2 s of every room opened as the judge's own
    user): a class's rerun spy, warmed up 2.2 s before its first run, took its first run for a rerun."""
    from attnbench.sandbox import fallback_users

    class OnlyInts:
        def __contains__(self, uid):
            assert isinstance(uid, int), f"{uid!r} asked of the own uids: a range walks itself for it"
            return 2_100_000_000 <= uid < 2_140_000_000

    monkeypatch.setattr(fallback_users, "OWN_UIDS", OnlyInts())
    kind = fallback_users.uid_kind
    assert kind(None) is None and kind(65534) == 65534 and kind(2_100_000_007) == "own"
