"""The judge API: how much it will write, said before it writes it; the options a judge takes."""

import os
from pathlib import Path

import pytest

from attnbench.api import programs
from attnbench.cases import suite
from attnbench.errors import UsageError


def test_judge_writes_counts_only_what_is_not_generated_yet():
    case = suite.get_case("odd_1000x128")
    for path in (suite.input_path(case), suite.reference_path(case)):
        path.unlink(missing_ok=True)
    assert programs.judge_writes(["odd_1000x128"]) == case.shape.input_bytes + case.shape.output_bytes
    suite.generate_input(case)
    assert programs.judge_writes("odd_1000x128") == case.shape.output_bytes


def test_judge_options_refuse_what_does_not_fit_together(tmp_path):
    with pytest.raises(UsageError, match="judge needs a PROGRAM"):
        programs.JudgeOptions()
    (tmp_path / "a.cu").write_text("")
    assert not programs.JudgeOptions(programs=(str(tmp_path / "a.cu"),)).judges_a_class  # one program's source
    with pytest.raises(UsageError, match="--launcher and --args are for one program"):
        programs.JudgeOptions(programs=(str(tmp_path / "a.cu"), str(tmp_path / "a.cu")), launcher="srun")
    assert programs.JudgeOptions(programs=(str(tmp_path),)).judges_a_class  # a folder of submissions
    assert programs.JudgeOptions(resume=str(tmp_path)).judges_a_class
    assert not programs.JudgeOptions(programs=("./hw4",), launcher="srun").judges_a_class


@pytest.mark.parametrize("given, said", [({"programs": ("",)}, "program is empty"),
                                         ({"programs": ("./hw4", " ")}, "program is empty"),
                                         ({"programs": ("./hw4",), "time_limits": ""}, "time_limits is empty")])
def test_an_empty_program_or_limits_from_python_is_named(given, said):
    """From Python judge_class([""]) judged the working folder as a class, judge("") said ": is a folder"
    and time_limits="" said ".: is a folder, not a TOML file"."""
    with pytest.raises(UsageError, match=said):
        programs.JudgeOptions(**given)


@pytest.mark.parametrize("given, said", [({"rerun_top": 5}, "--rerun-top reruns a class's"),
                                         ({"slurm": programs.SlurmOptions(partition="x")}, "--partition, --gres and --time"),
                                         ({"arch": "sm_90"}, "./hw4 is an executable"),
                                         ({"build_command": "make"}, "./hw4 is an executable"),
                                         ({"build_timeout": 5.0}, "./hw4 is an executable")])
def test_a_class_option_given_for_one_program_is_refused_not_ignored(given, said):
    """`judge ./hw4 --rerun-top 5` (or --partition, --time, --arch, --build-command, --build-timeout) judged the
    program and dropped the option without a word."""
    with pytest.raises(UsageError, match=said):
        programs.JudgeOptions(programs=("./hw4",), **given)
    assert not programs.JudgeOptions(programs=("./hw4.cu",), arch="sm_90", build_timeout=5.0).judges_a_class


def test_a_judge_says_what_its_cases_will_write_before_it_starts(monkeypatch):
    said, started = [], []
    monkeypatch.setattr(programs, "judge_writes", lambda cases: 3 * 10**6)
    monkeypatch.setattr(programs, "_judged_program", lambda *args, **kwargs: started.append(list(said)))
    monkeypatch.setattr(programs, "check_program", lambda program: None)  # ./hw4 stands for a program that runs
    programs.judge_program(programs.JudgeOptions(programs=("./hw4",), cases="t01"), notice=said.append)
    assert started == [said] and "the cases not generated yet take 3 MB" in said[0] and "--cases" in said[0]
    monkeypatch.setattr(programs, "judge_writes", lambda cases: 0)
    said.clear()
    programs.judge_program(programs.JudgeOptions(programs=("./hw4",), cases="t01"), notice=said.append)
    assert said == []


def test_a_limit_this_machine_cannot_set_on_a_program_is_bad_usage():
    """--memory-limit 17592186044416 (2^64 bytes) judged every case CRASH: prlimit failed before the program ran."""
    with pytest.raises(UsageError, match="--memory-limit 17592186044416: at most"):
        programs.JudgeOptions(programs=("./hw4",), sandbox=programs.SandboxSettings(memory_mb=17592186044416))


@pytest.mark.parametrize("option, field", [("--launcher", "launcher"), ("--arch", "arch"),
                                           ("--build-command", "build_command")])
def test_an_empty_launcher_arch_or_build_command_is_refused(option, field):
    """`judge ./hw4 --launcher "$SRUN"` with SRUN unset judged without a launcher, exit 0, without a word."""
    with pytest.raises(UsageError, match=f'{option} is empty'):
        programs.JudgeOptions(programs=("./hw4.cu",), **{field: " "})


def said_before_judging_t01(limits_text: str, monkeypatch, tmp_path) -> tuple[Path, list[str]]:
    """The notes a one-program judge of t01 gives before any run, with a limits file holding `limits_text`."""
    said: list[str] = []
    limits = tmp_path / "my.toml"
    limits.write_text(limits_text)
    monkeypatch.setattr(programs, "judge_writes", lambda cases: 0)
    monkeypatch.setattr(programs, "_judged_program", lambda *args, **kwargs: None)
    monkeypatch.setattr(programs, "check_program", lambda program: None)
    programs.judge_program(programs.JudgeOptions(programs=("./hw4",), cases="t01", time_limits=str(limits)),
                           notice=said.append)
    return limits, said


def test_a_judge_says_which_cases_a_users_limits_file_leaves_unlimited(monkeypatch, tmp_path):
    """`--time-limits my.toml` with a typo (`tO1 = 2`) judged t01 without a limit and without a word."""
    limits, said = said_before_judging_t01("tO1 = 2\n", monkeypatch, tmp_path)
    assert said == [f"{limits}: no limit for t01 (no line for it, no `default = seconds`); judged without one",
                    f"{limits}: tO1 names no case of the suite or of --cases; not used"]


def test_a_judge_says_which_names_of_a_users_limits_file_are_no_case(monkeypatch, tmp_path):
    """`zz = 2` in a limits file named no case of the suite or of --cases and was used nowhere, without a word;
    a suite case not judged this time (t30) is no stranger."""
    limits, said = said_before_judging_t01("t01 = 2\nt30 = 10\nzz = 2\n", monkeypatch, tmp_path)
    assert said == [f"{limits}: zz names no case of the suite or of --cases; not used"]


@pytest.mark.parametrize("field, value", [("timeout", -1.0), ("timeout", float("nan")), ("timeout", "5"),
                                          ("build_timeout", 0), ("build_timeout", float("inf"))])
def test_a_timeout_that_is_no_positive_number_is_refused(tmp_path, field, value):
    """From Python, judge(timeout=-1) judged every case at once and timeout=nan ended in a traceback."""
    with pytest.raises(UsageError, match=field):
        programs.JudgeOptions(programs=(str(tmp_path / "a.c"),), **{field: value})


def test_an_unknown_sandbox_mode_is_refused(tmp_path):
    """SandboxSettings("x") was judged as auto without a word."""
    with pytest.raises(UsageError, match="sandbox mode 'x'"):
        programs.JudgeOptions(programs=(str(tmp_path),), sandbox=programs.SandboxSettings("x"))


def test_a_gpu_reference_that_failed_over_to_the_cpu_is_said_once_the_judge_is_done(monkeypatch):
    """On an H200 a mishandled context sent every reference to the CPU (33 s instead of 1.6 s) without a word."""
    from attnbench.cases import gpu_reference

    said = []
    monkeypatch.setattr(programs, "judge_writes", lambda cases: 0)
    monkeypatch.setattr(programs, "_judged_program", lambda *args, **kwargs: None)
    monkeypatch.setattr(programs, "check_program", lambda program: None)
    monkeypatch.setattr(programs, "_judged", lambda *args, **kwargs: None)
    monkeypatch.setattr(programs, "class_request", lambda options: None)
    monkeypatch.setattr(gpu_reference, "_availability", ["no CUDA GPU is present"])  # no GPU: nothing to say
    programs.judge_program(programs.JudgeOptions(programs=("./hw4",), cases="t01"), notice=said.append)
    assert said == []
    monkeypatch.setattr(gpu_reference, "_availability", ["the GPU reference failed (LogicError: invalid context)"])
    programs.judge_program(programs.JudgeOptions(programs=("./hw4",), cases="t01"), notice=said.append)
    programs.judge_submissions(programs.JudgeOptions(programs=("./class",), cases="t01"), notice=said.append)
    assert len(said) == 2 and all(line.startswith("the GPU reference failed (LogicError: invalid context): the "
                                                  "float64 references it could not make were made on this machine's "
                                                  "CPU") for line in said)


def test_references_made_on_the_cpu_of_a_machine_with_a_gpu_are_said_once_the_judge_is_done(monkeypatch):
    """On an H200 whose pycuda could not be imported, one program's t21, t22 and t29 took 32 s of references on the
    CPU instead of 1.6 s, and only the phases' line showed it; a machine without a GPU has nothing to be told."""
    from attnbench.cases import gpu_reference
    from attnbench.cases.inputs import seeded_testcase
    from attnbench.cases.testcase import Shape

    said = []
    monkeypatch.setattr(programs, "judge_writes", lambda cases: 0)
    monkeypatch.setattr(programs, "check_program", lambda program: None)
    monkeypatch.setattr(gpu_reference, "_on_the_cpu", [])
    monkeypatch.setattr(gpu_reference, "_availability", ["no usable GPU (ModuleNotFoundError: No module named 'pycuda')"])

    def judged(*args, **kwargs):  # the judge made one reference
        gpu_reference.float64_reference(seeded_testcase(Shape(1, 4, 8), 1))

    monkeypatch.setattr(programs, "_judged_program", judged)
    monkeypatch.setattr(programs, "no_gpu_here", lambda: "no nvidia-smi and no /dev/nvidia* device")
    programs.judge_program(programs.JudgeOptions(programs=("./hw4",), cases="t01"), notice=said.append)
    assert said == []  # no GPU here: the CPU is the only place for them
    monkeypatch.setattr(programs, "no_gpu_here", lambda: None)
    programs.judge_program(programs.JudgeOptions(programs=("./hw4",), cases="t01"), notice=said.append)
    assert len(said) == 1 and said[0].startswith("this machine has an NVIDIA GPU, but the float64 references were made "
                                                 "on its CPU: no usable GPU (ModuleNotFoundError")
    monkeypatch.setattr(gpu_reference, "_on_the_cpu", [])  # a judge that made no reference (the suite's kept ones)
    monkeypatch.setattr(programs, "_judged_program", lambda *args, **kwargs: None)
    programs.judge_program(programs.JudgeOptions(programs=("./hw4",), cases="t01"), notice=said.append)
    assert len(said) == 1


@pytest.mark.parametrize("call", [lambda: programs.class_history(""), lambda: programs.resume_class(" "),
                                  lambda: programs.new_kernel("k9", "")])
def test_an_empty_folder_is_refused_not_read_as_the_working_one(call, tmp_path, monkeypatch):
    """class_history("") read the working folder's scoreboards ([] and no word), new_kernel(name, "") wrote
    there, and resume_class("") said ": not an attnbench class jobs folder" of a name it never showed."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match=r"^folder is empty"):
        call()
    assert list(tmp_path.iterdir()) == []


def test_a_judge_from_python_leaves_the_callers_process_no_subreaper(tmp_path):
    """A judge (or a compare with an exe: program) made the caller's process the reaper of every orphan for good: a
    notebook that judged once then collected, unreaped, the zombies of whatever it ran later."""
    import subprocess
    import sys

    program = tmp_path / "prog"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o700)
    script = (
        "import ctypes\n"
        "from attnbench.api import programs\n"
        "import attnbench\n"
        "libc = ctypes.CDLL(None)\n"
        "def state():\n"
        "    value = ctypes.c_int(-1)\n"
        "    libc.prctl(37, ctypes.byref(value), 0, 0, 0)\n"
        "    return value.value\n"
        "seen = [state()]\n"
        f"programs.judge({str(program)!r}, 'odd_17x1', time_limits='none', sandbox=programs.SandboxSettings('none'))\n"
        "seen.append(state())\n"
        f"attnbench.compare(['exe:{program}'], ['odd_17x1'], sandbox='none')\n"
        "seen.append(state())\n"
        "print(seen)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[0,", "0,", "0]"], done.stdout


def test_a_builder_missing_from_path_is_the_environment_not_a_failed_build(tmp_path, monkeypatch):
    """nvcc off PATH (the CUDA module not loaded): every .cu row was a failed build, graded 0, exit 0; a lone
    .c without cc exited 1 (a verification failure) for the machine's lack."""
    import attnbench.judge.submissions as submissions
    from attnbench.errors import EnvironmentProblem

    (tmp_path / "class" / "ada").mkdir(parents=True)
    (tmp_path / "class" / "ada" / "hw4.cu").write_text("int main() {}\n")
    (tmp_path / "class" / "carl.c").write_text("int main(void) { return 0; }\n")
    real = submissions.shutil.which
    monkeypatch.setattr(submissions.shutil, "which", lambda tool: None if tool in ("nvcc", "cc") else real(tool))
    with pytest.raises(EnvironmentProblem, match=r"not on this machine's PATH: nvcc, which builds 1 submission of "
                                                 r"the class \(ada\); cc, which builds 1 submission of the class "
                                                 r"\(carl\); put them on PATH \(load the CUDA toolkit for nvcc\)"):
        programs.class_request(programs.JudgeOptions((str(tmp_path / "class"),), "odd_17x48", a_class=True))
    with pytest.raises(EnvironmentProblem, match="carl.c: cc is not on this machine's PATH, so it cannot be built"):
        with programs.built_source(str(tmp_path / "class" / "carl.c"), programs.SandboxSettings("none")):
            pass
    # --build-command replaces the tools: nothing is missing
    programs.class_request(programs.JudgeOptions((str(tmp_path / "class"),), "odd_17x48", a_class=True,
                                                 build_command="true", sandbox=programs.SandboxSettings("none")))


def test_nvcc_missing_is_the_environment_for_a_class_of_makefiles_too(tmp_path, monkeypatch):
    """The course's layout (a Makefile beside hw4.cu) with nvcc off PATH: the Makefile's nvcc and the nvcc build
    after it both failed on every row, graded 0, and the class exited 0 (red team 12)."""
    import attnbench.judge.submissions as submissions
    from attnbench.errors import EnvironmentProblem

    for name in ("ada", "bea"):
        (tmp_path / "class" / name).mkdir(parents=True)
        (tmp_path / "class" / name / "hw4.cu").write_text("int main() {}\n")
        (tmp_path / "class" / name / "Makefile").write_text("hw4: hw4.cu\n\tnvcc -o hw4 hw4.cu\n")
    (tmp_path / "class" / "cal").mkdir()
    (tmp_path / "class" / "cal" / "Makefile").write_text("hw4: a.c\n\tcc -o hw4 a.c\n")  # no CUDA: make alone
    real = submissions.shutil.which
    monkeypatch.setattr(submissions.shutil, "which", lambda tool: None if tool == "nvcc" else real(tool))
    with pytest.raises(EnvironmentProblem, match=r"not on this machine's PATH: nvcc, which builds 2 submissions of "
                                                 r"the class \(ada, bea\)"):
        programs.class_request(programs.JudgeOptions((str(tmp_path / "class"),), "odd_17x48", a_class=True))


def test_the_judges_own_results_folder_in_the_class_is_no_row(tmp_path, monkeypatch):
    """`attnbench judge .` from the class's folder saved ./attnbench-results there, and the next judge made it a
    row: "not a submission", graded 0 on a full run, a "build failed" in the history."""
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "hw4").write_text("#!/bin/sh\n")
    (tmp_path / "ada" / "hw4").chmod(0o755)
    (tmp_path / "attnbench-results").mkdir()
    (tmp_path / "attnbench-results" / "2026-11-29_class_t01.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    request = programs.class_request(programs.JudgeOptions((".",), "odd_17x48", a_class=True,
                                                           sandbox=programs.SandboxSettings("none")))
    assert [s.name for s in request.submissions] == ["ada"]
    other = programs.class_request(programs.JudgeOptions((".",), "odd_17x48", a_class=True, results_dir="elsewhere",
                                                         sandbox=programs.SandboxSettings("none")))
    assert [s.name for s in other.submissions] == ["ada", "attnbench-results"]  # not this judge's folder: a row


def test_a_submission_named_as_the_results_folder_is_refused_not_dropped(tmp_path, monkeypatch):
    """A student's folder named attnbench-results (a Makefile and its source) under `attnbench judge .` from the
    class's folder: its row vanished without a word and the judge saved the class's scoreboards into it (red
    team 12). Refused before any build, exit 2."""
    for name in ("ada", "attnbench-results"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "hw4.c").write_text("int main(void) { return 0; }\n")
        (tmp_path / name / "Makefile").write_text("hw4: hw4.c\n\tcc -o hw4 hw4.c\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match=r"--results-dir attnbench-results: a submission of the class "
                                         r"\(attnbench-results\), not the judge's results folder"):
        programs.class_request(programs.JudgeOptions((".",), "odd_17x48", a_class=True,
                                                     sandbox=programs.SandboxSettings("none")))
    assert sorted(os.listdir(tmp_path / "attnbench-results")) == ["Makefile", "hw4.c"]


def test_a_judge_on_fresh_inputs_says_nothing_of_writing_the_suites_folder(monkeypatch, tmp_path):
    """A class (fresh inputs by default) said "the cases not generated yet take 21 MB ... in testcases/data" and
    wrote nothing there: its inputs are drawn into temporary space."""
    said = []
    monkeypatch.setattr(programs, "judge_writes", lambda cases: 3 * 10**6)
    monkeypatch.setattr(programs, "_judged", lambda *args, **kwargs: None)
    monkeypatch.setattr(programs, "_judged_program", lambda *args, **kwargs: None)
    monkeypatch.setattr(programs, "check_program", lambda program: None)
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "hw4").write_text("#!/bin/sh\n")
    (tmp_path / "ada" / "hw4").chmod(0o755)
    sandbox = programs.SandboxSettings("none")
    programs.judge_submissions(programs.JudgeOptions((str(tmp_path),), "t01", a_class=True, sandbox=sandbox),
                               notice=said.append)
    programs.judge_program(programs.JudgeOptions(("./hw4",), "t01", fresh_inputs=True), notice=said.append)
    assert not any("not generated yet" in line for line in said), said
    programs.judge_submissions(programs.JudgeOptions((str(tmp_path),), "t01", a_class=True, sandbox=sandbox,
                                                     fresh_inputs=False), notice=said.append)
    assert any("not generated yet" in line for line in said)  # --suite-inputs writes them


def test_a_class_whose_folders_hold_no_submission_is_bad_input_before_any_build(tmp_path):
    """`judge class/` one folder too high (each student's folder holding another) made a row per folder, judged
    nothing and exited 0, where an empty folder is "no submission found", exit 2."""
    (tmp_path / "class" / "sec1" / "ada").mkdir(parents=True)
    (tmp_path / "class" / "sec1" / "ada" / "hw4.cu").write_text("")
    (tmp_path / "class" / "sec2").mkdir()
    with pytest.raises(UsageError, match=r"class: no submission found in its 2 folders \(sec1: not a submission: "
                       r".*\(it holds ada/\)\)") as refused:
        programs.class_request(programs.JudgeOptions((str(tmp_path / "class"),), "odd_17x48", a_class=True,
                                                     sandbox=programs.SandboxSettings("none")))
    assert refused.value.exit_code == 2


def test_a_slurm_class_without_submitit_is_refused_before_any_build(tmp_path, monkeypatch):
    """`judge class/ --executor slurm` without the slurm extra built every submission and drew every input, then
    stopped on the missing submitit."""
    import sys

    from attnbench.judge import submissions
    from attnbench.spread.slurm import SlurmUnavailable

    (tmp_path / "class" / "ada").mkdir(parents=True)
    (tmp_path / "class" / "ada" / "hw4").write_text("#!/bin/sh\n")
    (tmp_path / "class" / "ada" / "hw4").chmod(0o755)
    monkeypatch.setitem(sys.modules, "submitit", None)  # the extra is not installed: its import fails
    monkeypatch.setattr(submissions, "build", lambda *args: pytest.fail("a build before the refusal"))
    with pytest.raises(SlurmUnavailable, match="--executor slurm needs submitit") as refused:
        programs.class_request(programs.JudgeOptions((str(tmp_path / "class"),), "odd_17x48", a_class=True,
                                                     executor="slurm", sandbox=programs.SandboxSettings("none")))
    assert refused.value.exit_code == 3


@pytest.mark.parametrize("name", ["hw4\u00a0final", "hw4\tfolder", "hw4-\udcff"])
def test_one_submissions_folder_whose_path_is_escaped_on_the_board_still_exits_as_one_program(tmp_path, name):
    """A folder name holding what `printable` escapes (a no-break space, a tab, a byte that is not UTF-8) made the
    row's source differ from the path given, so a failed submission judged alone exited 0 as a class does."""
    from attnbench.api.programs import one_submission_exit
    from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow
    from attnbench.printable import printable

    folder = tmp_path / name
    folder.mkdir()
    row = SubmissionRow(name, printable(os.fsdecode(folder.absolute())), True, entries={"t01": CaseEntry("WRONG")})
    board = Scoreboard(["t01"], [row])
    assert one_submission_exit((str(folder),), board) == 1
    row.entries["t01"] = CaseEntry("PASS", runs_s=[0.1])
    assert one_submission_exit((str(folder),), board) == 0
    assert one_submission_exit((str(tmp_path),), board) == 0  # a class holding it


def test_one_submissions_folder_holding_only_hip_is_bad_input_not_a_failure(tmp_path):
    """A folder holding only hw4.hip judged alone exited 1, read by a student's script as a failed build: attnbench
    judges no HIP (the course's AMD part), so it is exit 2, and one line says so."""
    from click.testing import CliRunner

    from attnbench.cli import main

    folder = tmp_path / "amd"
    folder.mkdir()
    (folder / "hw4.hip").write_text("int main() { return 0; }\n")
    result = CliRunner().invoke(main, ["judge", str(folder), "--cases", "odd_17x48", "--sandbox", "none", "--no-save"])
    assert result.exit_code == 2, result.output
    assert "amd: HIP is not judged (the course's AMD part): attnbench judges CUDA and C programs" in " ".join(
        result.output.split())
