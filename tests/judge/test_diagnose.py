"""attnbench.judge.diagnose: a failed case run again under compute-sanitizer, its first error on the row."""

import os
import stat

import pytest

from attnbench.judge.diagnose import first_error
from tests.judge.test_class_flow import slurm_here  # noqa: F401 - a fixture: the Slurm path without a cluster

# As compute-sanitizer 2025 prints a misaligned float4 store into a padded shared-memory row (a real
# submission's bug), and a launch for an architecture the binary was not built for.
MISALIGNED = """========= COMPUTE-SANITIZER
========= Invalid __shared__ write of size 16 bytes
=========     at flash_attention_kernel(float *, float *, float *, float *, int, int)+0x2d0 in /judge/case/hw4.cu:93
=========     by thread (1,0,0) in block (0,0,0)
=========     Address 0x404 is misaligned
=========
========= ERROR SUMMARY: 1 error (1 error not printed)
"""
NO_IMAGE = """========= COMPUTE-SANITIZER
========= Program hit cudaErrorNoKernelImageForDevice (error 209) due to "no kernel image is available for execution on the device" on CUDA API call to cudaLaunchKernel.
=========     Saved host backtrace up to driver entry point at error
=========         Host Frame: main [0x9d5f] in hw4
=========
========= ERROR SUMMARY: 1 error
"""


def test_the_first_error_is_one_line_with_its_source_line():
    assert first_error(MISALIGNED) == "Invalid __shared__ write of size 16 bytes at hw4.cu:93"
    assert first_error(NO_IMAGE).startswith("Program hit cudaErrorNoKernelImageForDevice (error 209)")
    assert first_error("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n") is None
    assert first_error("the program's own words\n") is None
    assert "\x1b" not in first_error("========= Invalid read \x1b[2J\n")  # a program's bytes never print raw


def _fake_sanitizer(folder):
    """A stand-in for compute-sanitizer: it runs the program (the words after its options), then reports the
    misaligned store on standard output, as the real one does."""
    folder.mkdir()
    tool = folder / "compute-sanitizer"
    report = "".join(f"echo '{line}'\n" for line in MISALIGNED.splitlines())
    tool.write_text(f'#!/bin/sh\nshift 4\n"$@"\ncode=$?\n{report}exit $code\n')
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    folder.chmod(0o755)
    return folder


def test_diagnose_adds_the_sanitizers_first_error_to_a_failed_case(tmp_path, monkeypatch):
    from tests.judge.test_course_judge import _cc

    off = _cc(tmp_path, "attention_off", "-DOFF_BY_ONE")
    fake = _fake_sanitizer(tmp_path / "tools")
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    from click.testing import CliRunner

    from attnbench.cli import main

    result = CliRunner().invoke(main, ["judge", str(off), "--cases", "odd_17x48", "--time-limits", "none",
                                       "--diagnose", "--sandbox-bind", str(fake), "--no-save"])
    assert result.exit_code == 1, result.output
    joined = " ".join(result.output.split())
    assert ("compute-sanitizer (its report, in the run's output, which the program can also write): Invalid "
            "__shared__ write of size 16 bytes at hw4.cu:93") in joined


def test_without_compute_sanitizer_diagnose_says_so_in_the_row(tmp_path, monkeypatch):
    from attnbench.judge import diagnose

    monkeypatch.setattr(diagnose, "sanitizer_path", lambda: None)
    from attnbench.cases.testcase import Shape
    from attnbench.sandbox.program_run import ProgramSpec

    spec = ProgramSpec("t01", tmp_path / "in", Shape(1, 2, 3), 1.0)
    assert diagnose.diagnosis(tmp_path / "prog", spec, None) == "--diagnose: compute-sanitizer is not installed here"


def test_a_class_diagnoses_each_failed_case_and_leaves_passed_ones_alone(tmp_path, monkeypatch):
    from attnbench.api import programs as api_programs
    from tests.judge.classes import can_build, class_sandbox, make_class

    if not can_build():
        import pytest

        pytest.skip("no C compiler or make")
    fake = _fake_sanitizer(tmp_path / "tools")
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    from dataclasses import replace

    folder = make_class(tmp_path / "class" if (tmp_path / "class").mkdir() is None else tmp_path)
    board = api_programs.judge_class([folder / "alice", folder / "carol.c"], "odd_17x48", time_limits="none",
                                     rerun_top=0, sandbox=replace(class_sandbox(), binds=(fake,)), diagnose=True)
    rows = {row.name: row for row in board.rows}
    assert rows["alice"].entries["odd_17x48"].passed and rows["alice"].entries["odd_17x48"].message == ""
    assert rows["carol"].entries["odd_17x48"].message.endswith(
        "which the program can also write): Invalid __shared__ write of size 16 bytes at hw4.cu:93")


def test_only_a_submissions_first_failed_case_is_diagnosed_under_the_cases_own_name(tmp_path, monkeypatch):
    """Red team: a program that saw '-diagnose' in its input's name slept in every diagnosis (60-600 s a failed
    case) and printed a forged report. One diagnosis a submission, and the same names as a judged run."""
    from tests.judge.test_course_judge import _cc

    off = _cc(tmp_path, "attention_off", "-DOFF_BY_ONE")
    fake = _fake_sanitizer(tmp_path / "tools")
    tool = fake / "compute-sanitizer"  # its report names the input it was given
    tool.write_text(tool.read_text().replace("Invalid __shared__ write of size 16 bytes", "Invalid read of $2"))
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    from attnbench.api import programs as api_programs
    from attnbench.sandbox.room import SandboxSettings

    judgement, _ = api_programs.judge(str(off), "odd_17x48,odd_100x32", time_limits="none", diagnose=True,
                                      sandbox=SandboxSettings(binds=(fake,)))
    diagnosed = [j for j in judgement.judged if "compute-sanitizer" in j.message]
    assert [j.verdict for j in judgement.judged] == ["WRONG", "WRONG"] and len(diagnosed) == 1
    assert "Invalid read of" in diagnosed[0].message and "diagnose" not in diagnosed[0].message.split("Invalid")[1]


@pytest.mark.parametrize("where", ["in-process", "pool", "slurm"])
def test_a_class_diagnoses_each_failing_submission_once_whatever_runs_its_jobs(tmp_path, monkeypatch, where, request):
    """Red team: pool workers are processes of their own, and each diagnosed a submission's "first" failed case:
    with W workers a submission was diagnosed up to W times (each up to 600 s). The class flow decides, once per
    submission: its first failed case, diagnosed on the input it failed on."""
    from dataclasses import replace

    from attnbench.api import programs as api_programs
    from attnbench.spread.devices import CPU_WORKERS_ENV
    from tests.judge.classes import EXAMPLE, can_build, class_sandbox, wrapping

    if not can_build():
        pytest.skip("no C compiler or make")
    fake = _fake_sanitizer(tmp_path / "tools")
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "honest.c").write_text(EXAMPLE.read_text())
    (tmp_path / "class" / "wrong.c").write_text(wrapping("#define OFF_BY_ONE"))
    options: dict = {}
    if where == "pool":
        monkeypatch.setenv(CPU_WORKERS_ENV, "2")
        options = {"gpus": "all"}
    elif where == "slurm":  # each Slurm job's call made here (tests.judge.test_class_flow.slurm_here)
        from attnbench.spread import slurm

        request.getfixturevalue("slurm_here")
        options = {"executor": "slurm", "slurm": slurm.SlurmOptions(folder=tmp_path / "jobs", poll_s=0.0)}
    cases = ["odd_17x48", "odd_100x32", "odd_33x64"]
    board = api_programs.judge_class([str(tmp_path / "class")], ",".join(cases), time_limits="none", rerun_top=0,
                                     sandbox=replace(class_sandbox(), binds=(fake,)), diagnose=True, **options)
    rows = {row.name: row for row in board.rows}
    assert [rows["wrong"].entries[case].verdict for case in cases] == ["WRONG"] * 3
    diagnosed = [case for case in cases if "compute-sanitizer" in rows["wrong"].entries[case].message]
    assert diagnosed == ["odd_17x48"], {case: e.message for case, e in rows["wrong"].entries.items()}
    assert rows["wrong"].entries["odd_17x48"].message.endswith("Invalid __shared__ write of size 16 bytes at hw4.cu:93")
    assert all(entry.passed and entry.message == "" for entry in rows["honest"].entries.values())
