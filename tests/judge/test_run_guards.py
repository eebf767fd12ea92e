"""What every judged run and build gets in its child before exec (attnbench.sandbox.syscall_filter,
attnbench.sandbox.oom_priority): no keyring of the judge's, no system calls that carry state, the OOM
killer's first choice; and the judge itself nearly its last."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from attnbench.sandbox import oom_priority, syscall_filter
from attnbench.sandbox.room import Sandbox
from tests.judge.classes import CLASS_MODE, EXAMPLE, can_build, wrapping

ROOT = Path(__file__).resolve().parents[2]
THIEF = ROOT / "tests" / "adversarial" / "programs" / "keyring_thief.c"
CASE = "odd_17x48"

# The judge, run in a session keyring of its own holding a canary key (as a login through pam_keyinit or
# a systemd service has), judges a class; then the keyring is read back.
JUDGE_IN_A_KEYRING = textwrap.dedent(r"""
    import ctypes, json, sys
    from attnbench.api import programs
    from attnbench.sandbox.room import SandboxSettings
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    KEYCTL, ADD_KEY = {"x86_64": (250, 248), "aarch64": (219, 217)}[__import__("platform").machine()]
    if libc.syscall(KEYCTL, 1, None) < 0:  # KEYCTL_JOIN_SESSION_KEYRING
        sys.exit("no session keyring")
    canary = b"the judge's secret"
    key = libc.syscall(ADD_KEY, b"user", b"attnbench-test:canary", canary, len(canary), -3)
    board = programs.judge_class([sys.argv[1]], sys.argv[2], time_limits="none", rerun_top=1,
                                 sandbox=SandboxSettings(sys.argv[3]))
    buffer = ctypes.create_string_buffer(256)
    read = libc.syscall(KEYCTL, 11, key, buffer, 255)  # KEYCTL_READ
    counter = libc.syscall(KEYCTL, 10, -3, b"user", b"attnbench-test:counter", 0)  # KEYCTL_SEARCH
    print(json.dumps({"canary": buffer.raw[:read].decode(errors="replace"), "counter": counter,
                      "rows": {r.name: [r.built, r.build_message, {c: [e.verdict, e.message] for c, e in r.entries.items()}]
                               for r in board.rows}}))
""")


@pytest.mark.skipif(not syscall_filter.supported() or not can_build(), reason="needs the filter, cc and make")
@pytest.mark.parametrize("mode", sorted({CLASS_MODE, "none"}))
def test_no_run_sees_changes_or_leaves_a_key(tmp_path, mode):
    submissions = tmp_path / "class"
    submissions.mkdir()
    (submissions / "honest.c").write_text(wrapping(""))
    (submissions / "thief.c").write_text(wrapping(THIEF.read_text(), "if (keyring_trick()) return 3;"))
    # the build tries too: make runs the trick before it compiles
    (submissions / "builder").mkdir()
    (submissions / "builder" / "probe.c").write_text(THIEF.read_text() + "int main(void) { return keyring_trick(); }\n")
    (submissions / "builder" / "attention.c").write_text(EXAMPLE.read_text())
    (submissions / "builder" / "Makefile").write_text(
        "hw4: attention.c\n\tcc -o probe probe.c && ./probe\n\tcc -O2 -o hw4 attention.c -lm\n")
    done = subprocess.run([sys.executable, "-c", JUDGE_IN_A_KEYRING, str(submissions), CASE, mode],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["canary"] == "the judge's secret"  # neither read (the row would say so) nor overwritten
    assert seen["counter"] < 0  # no key left behind
    rows = seen["rows"]
    assert rows["builder"][0], rows["builder"]  # its build's probe found nothing and changed nothing
    assert rows["thief"][2][CASE][0] == "PASS", rows["thief"]  # every run, reruns too, saw no key
    assert "stole" not in json.dumps(rows)


def test_the_last_step_is_the_filter_where_this_machine_has_one():
    assert Sandbox.after_limits() is (syscall_filter.install_in_this_process if syscall_filter.supported() else None)
    assert Sandbox.after_limits(fallback=True) is (syscall_filter.install_for_the_fallback
                                                   if syscall_filter.supported() else None)


@pytest.mark.skipif(not Path("/proc/self/oom_score_adj").exists(), reason="no oom_score_adj here")
def test_a_judged_process_is_the_oom_killers_first_choice_and_the_judge_its_last(tmp_path):
    from attnbench.sandbox.process import ProcessLimits, run_process
    from attnbench.sandbox.case_folder import CasePaths

    paths = CasePaths(tmp_path, tmp_path / "in", tmp_path / "out", "in", "out")
    before = oom_priority.current()
    with oom_priority.judge_last() as lowered:
        inside = oom_priority.current()
        run_process(["/bin/sh", "-c", "cat /proc/self/oom_score_adj > adj"], tmp_path, 30,
                    limits=ProcessLimits(), before_exec=Sandbox.before_exec(_bare_sandbox(), paths))
    assert (tmp_path / "adj").read_text().strip() == str(oom_priority.PROGRAM_ADJ)
    if os.geteuid() != 0:
        assert lowered is None
    assert inside == (lowered if lowered is not None else before)  # lowered where root may (CAP_SYS_RESOURCE)
    assert oom_priority.current() == before  # restored after


def _bare_sandbox():
    from attnbench.sandbox.room import Confinement

    class Bare:
        confinement = Confinement("fallback")
    return Bare()


@pytest.mark.skipif(not can_build(), reason="needs cc and make")
def test_a_fork_storm_beside_a_run_cannot_stop_its_threads_nor_a_run_leave_its_cores(tmp_path, monkeypatch):
    from attnbench.api import programs

    programs_dir = ROOT / "tests" / "adversarial" / "programs"
    submissions = tmp_path / "class"
    submissions.mkdir()
    (submissions / "aaa_hog.c").write_text(wrapping((programs_dir / "nproc_hog.c").read_text(), "hog_processes();"))
    (submissions / "threads.c").write_text(wrapping((programs_dir / "threads_needed.c").read_text(),
                                                    "if (start_threads()) return 1;"))
    (submissions / "widener.c").write_text(
        "#define _GNU_SOURCE\n" + wrapping((programs_dir / "affinity_widener.c").read_text().replace("#define _GNU_SOURCE\n", ""),
                                           "if (widen_affinity()) return 5;"))
    monkeypatch.setenv("ATTNBENCH_CPU_WORKERS", "2")  # two workers: the two programs run side by side
    from attnbench.sandbox.room import SandboxSettings

    board = programs.judge_class([submissions / "aaa_hog.c", submissions / "threads.c", submissions / "widener.c"],
                                 CASE, time_limits="none",
                                 rerun_top=2, gpus="all", sandbox=SandboxSettings(CLASS_MODE, processes=64))
    rows = {r.name: r for r in board.rows}
    assert rows["threads"].entries[CASE].verdict == "PASS", rows["threads"].entries[CASE].message
    assert len(rows["threads"].entries[CASE].runs_s) == 3  # its reruns too, each beside the hog's
    if syscall_filter.supported():  # no run leaves its worker's cores
        assert rows["widener"].entries[CASE].verdict == "PASS", rows["widener"].entries[CASE].message
        assert "filter" in board.settings["cpu_pinning"]


def test_why_the_judges_oom_setting_was_not_lowered_names_the_cause(monkeypatch):
    monkeypatch.setattr(oom_priority, "current", lambda: None)
    assert oom_priority.why_not_lowered() == "this system has no such setting"
    monkeypatch.setattr(oom_priority, "current", lambda: 0)
    monkeypatch.setattr(oom_priority.os, "geteuid", lambda: 1000)
    assert oom_priority.why_not_lowered() == "it needs root"
    monkeypatch.setattr(oom_priority.os, "geteuid", lambda: 0)
    assert "refused" in oom_priority.why_not_lowered()  # root, and still above the judge's value
    monkeypatch.setattr(oom_priority, "current", lambda: oom_priority.JUDGE_ADJ)
    assert "already" in oom_priority.why_not_lowered()
