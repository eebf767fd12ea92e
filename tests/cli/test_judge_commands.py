"""attnbench/cli/judge_commands.py: the judge's options are refused in one line when no run could use them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.mark.parametrize("option, value", [("--timeout", "nan"), ("--timeout", "inf"), ("--timeout", "1e300"),
                                           ("--build-timeout", "nan"), ("--build-timeout", "1e300")])
def test_a_time_limit_that_is_no_number_of_seconds_is_refused_before_any_run(cli, tmp_path, option, value):
    """--timeout nan ended in "ValueError: cannot convert float NaN to integer", inf and 1e300 in an
    OverflowError, after the cases were prepared; --build-timeout nan was taken."""
    program = tmp_path / "prog"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o700)
    result = cli("judge", str(program), "--cases", "odd_17x1", option, value, "--no-save", "--time-limits", "none")
    assert result.exit_code == 2 and f"Invalid value for '{option}'" in result.output, result.output
    assert "[1/1]" not in result.output  # refused before the first case



def test_a_missing_program_is_said_alone_before_any_note_of_what_the_cases_write(cli, tmp_path):
    """`judge nosuch` first said "note: the cases not generated yet take 8.6 GB", then that there is no program."""
    result = cli("judge", str(tmp_path / "nosuch"), "--no-save")
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].endswith("nosuch: no such program"), result.output


COURSE_PROGRAM = __import__("pathlib").Path(__file__).resolve().parents[2] / "examples" / "course_program" / "hw4.cu"


def _no_gpu_here() -> None:
    """The tests below are of a host without an NVIDIA GPU (this one, CI): skipped on one with a GPU."""
    from attnbench.spread.devices import no_gpu_here

    if no_gpu_here() is None:
        pytest.skip("a GPU is here: CUDA programs are judged (test_on_a_gpu_... covers it)")


def _built_by_nvcc(tmp_path, name: str = "hw4"):
    import shutil
    import subprocess

    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")
    program = tmp_path / name
    subprocess.run(["nvcc", "-O3", "-o", str(program), str(COURSE_PROGRAM)], check=True, capture_output=True,
                   timeout=300)
    return program


def test_one_cu_file_without_a_gpu_is_one_line_exit_3_before_any_build_note_or_run(cli, tmp_path):
    """`judge hw4.cu` on a laptop built it, judged it WRONG ("every element is 0") and exited 1: the laptop's
    fault, blamed on the program."""
    _no_gpu_here()
    source = tmp_path / "hw4.cu"
    source.write_text(COURSE_PROGRAM.read_text())
    result = cli("judge", str(source), "--cases", "odd_17x48", "--results-dir", str(tmp_path / "res"))
    lines = result.output.strip().splitlines()
    assert result.exit_code == 3 and len(lines) == 1, result.output
    assert lines[0].startswith(f"error: {source}: not judged: a CUDA program (a .cu file, built by nvcc) and no "
                               "NVIDIA GPU here (")
    assert not (tmp_path / "res").exists()


def test_one_cuda_executable_without_a_gpu_is_one_line_exit_3_and_nothing_runs(cli, tmp_path):
    _no_gpu_here()
    program = _built_by_nvcc(tmp_path)
    result = cli("judge", str(program), "--cases", "odd_17x48", "--no-save")
    lines = result.output.strip().splitlines()
    assert result.exit_code == 3 and len(lines) == 1 and "[1/1]" not in result.output, result.output
    assert "a CUDA program (it holds CUDA device code, a .nv_fatbin section)" in lines[0]


def test_a_cuda_executable_with_a_launcher_runs_where_the_launcher_puts_it_and_is_not_refused_here(cli, tmp_path):
    _no_gpu_here()
    program = _built_by_nvcc(tmp_path)
    result = cli("judge", str(program), "--cases", "odd_17x48", "--no-save", "--launcher", "env",
                 "--time-limits", "none")
    assert "[1/1] odd_17x48:" in result.output and "not judged" not in result.output, result.output


def test_a_class_without_a_gpu_saves_its_board_judges_its_c_rows_and_exits_3(cli, tmp_path):
    """A TA's laptop: the CUDA row is NOT JUDGED (said before the runs, and again at the end), the C row judged,
    the scoreboard saved, and the exit is the environment's (3), not a verdict's."""
    import json

    from tests.judge.classes import can_build, class_sandbox, wrapping

    _no_gpu_here()
    if not can_build():
        pytest.skip("no C compiler or make")
    classroom = tmp_path / "class"
    classroom.mkdir()
    _built_by_nvcc(classroom, "ada")  # an executable handed in: known by what it holds
    (classroom / "bob.c").write_text(wrapping(""))
    result = cli("judge", str(classroom), "--cases", "odd_17x48", "--rerun-top", "0", "--time-limits", "none",
                 "--sandbox", class_sandbox().mode, "--results-dir", str(tmp_path / "res"))
    out = result.output
    assert result.exit_code == 3, out
    said = out.index("not judged: 1 CUDA program (ada), no NVIDIA GPU here (")
    assert said < out.index("first runs") and "bob odd_17x48: PASS" in out
    assert "error: 1 CUDA program not judged: no NVIDIA GPU here (" in out.strip().splitlines()[-1]
    (saved,) = (tmp_path / "res").glob("*.json")
    rows = {row["name"]: row for row in json.loads(saved.read_text())["rows"]}
    assert rows["ada"]["not_judged"].startswith("no NVIDIA GPU here") and rows["ada"]["entries"] == {}
    assert rows["bob"]["rank"] == 1 and rows["bob"]["not_judged"] == ""


def test_a_build_failed_for_a_header_this_hosts_toolkit_lacks_is_not_judged_and_the_class_exits_3(cli, tmp_path,
                                                                                                   monkeypatch):
    """A real submission includes cublas_v2.h: on a host whose toolkit lacks cuBLAS its row read 0 of 30, grade 0,
    "build failed", though its note said the host was the cause (a TA's trial). It is NOT JUDGED now, as a CUDA
    program where no GPU is, the class's other rows judged, and the exit is the environment's."""
    import json
    import shutil

    from tests.judge.classes import can_build, class_sandbox, wrapping

    if not can_build():
        pytest.skip("no C compiler or make")
    if any(Path(f, "cublas_v2.h").is_file() for f in ("/usr/include", "/usr/local/include")):
        pytest.skip("this host's system include folder has cuBLAS's header")
    toolkit = tmp_path / "cuda"  # a toolkit without cuBLAS, whatever this host has
    (toolkit / "bin").mkdir(parents=True)
    (toolkit / "include").mkdir()
    nvcc = toolkit / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\nexit 1\n")
    nvcc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{toolkit / 'bin'}:{os.environ['PATH']}")
    assert shutil.which("nvcc") == str(nvcc)
    classroom = tmp_path / "class"
    classroom.mkdir()
    (classroom / "lib.c").write_text("#include <cublas_v2.h>\n" + wrapping(""))
    (classroom / "bob.c").write_text(wrapping(""))
    result = cli("judge", str(classroom), "--cases", "odd_17x48", "--rerun-top", "0", "--time-limits", "none",
                 "--sandbox", class_sandbox().mode, "--results-dir", str(tmp_path / "res"))
    out = result.output
    assert result.exit_code == 3, out
    assert "lib: not judged: this host's CUDA toolkit lacks cublas_v2.h" in out and "bob odd_17x48: PASS" in out
    assert out.strip().splitlines()[-1].startswith("error: 1 submission not judged (lib): this host's CUDA toolkit "
                                                   "lacks cublas_v2.h"), out
    (saved,) = (tmp_path / "res").glob("*.json")
    rows = {row["name"]: row for row in json.loads(saved.read_text())["rows"]}
    assert rows["lib"]["not_judged"].startswith("this host's CUDA toolkit lacks") and rows["lib"]["grade"] is None
    assert rows["bob"]["rank"] == 1 and rows["bob"]["not_judged"] == ""


def test_a_class_of_c_programs_without_a_gpu_is_judged_and_exits_0(cli, tmp_path):
    from tests.judge.classes import can_build, class_sandbox, wrapping

    if not can_build():
        pytest.skip("no C compiler or make")
    classroom = tmp_path / "class"
    classroom.mkdir()
    (classroom / "bob.c").write_text(wrapping(""))
    (classroom / "carol.c").write_text(wrapping("#define OFF_BY_ONE"))
    result = cli("judge", str(classroom), "--cases", "odd_17x48", "--rerun-top", "0", "--time-limits", "none",
                 "--sandbox", class_sandbox().mode, "--no-save")
    assert result.exit_code == 0 and "not judged" not in result.output.lower(), result.output
    assert "bob odd_17x48: PASS" in result.output and "carol odd_17x48: WRONG" in result.output


@pytest.mark.gpu
def test_on_a_gpu_the_same_cuda_program_and_class_are_judged_as_ever(gpu, cli, tmp_path):
    """Where a GPU is, nothing above is refused: the course's hw4.cu, alone and in a class, passes."""
    import shutil

    from tests.judge.classes import class_sandbox

    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")
    source = tmp_path / "hw4.cu"
    source.write_text(COURSE_PROGRAM.read_text())
    alone = cli("judge", str(source), "--cases", "t01", "--no-save", "--time-limits", "none")
    assert alone.exit_code == 0 and "[1/1] t01: PASS" in alone.output, alone.output
    classroom = tmp_path / "class"
    classroom.mkdir()
    shutil.copy(source, classroom / "ada.cu")
    whole = cli("judge", str(classroom), "--cases", "t01", "--rerun-top", "0", "--time-limits", "none",
                "--sandbox", class_sandbox().mode, "--no-save")
    assert whole.exit_code == 0 and "ada t01: PASS" in whole.output, whole.output
    assert "not judged" not in whole.output.lower()


def test_html_for_one_program_is_refused_not_ignored(cli, tmp_path):
    """`judge ./prog --html` judged the program and saved no page, without a word."""
    program = tmp_path / "prog"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o700)
    result = cli("judge", str(program), "--cases", "odd_17x1", "--html", "--results-dir", str(tmp_path / "res"),
                 "--time-limits", "none")
    assert result.exit_code == 2 and "--html saves a class's scoreboard" in result.output, result.output
    assert "[1/1]" not in result.output


def test_a_truncated_input_file_given_as_a_case_is_one_line_naming_it(cli, tmp_path):
    """`judge ./prog --cases short.in` (a header promising more than the file holds) ended in a traceback:
    "ValueError: mmap length is greater than file size", from the check for NaN before any run."""
    import struct

    program = tmp_path / "prog"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o700)
    short = tmp_path / "short.in"
    short.write_bytes(struct.pack("<3i", 2, 16, 32) + b"\0" * 400)
    result = cli("judge", str(program), "--cases", str(short), "--no-save", "--time-limits", "none")
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert f"error: {short}: header says B=2, N=16, d=32" in said


@pytest.mark.parametrize("args, said", [(["--no-save", "--name", "x"], "--no-save saves nothing, so --name would be ignored"),
                                        (["--no-save", "--results-dir", "{tmp}"], "so --results-dir would be ignored"),
                                        (["--partition", "p", "--time", "5"], "--partition, --time are for --executor slurm")])
def test_an_option_the_rest_of_the_line_makes_meaningless_is_refused(cli, tmp_path, args, said):
    """`judge ./prog --no-save --name x` and `--partition p` (no Slurm) judged and exited 0, the option dropped."""
    program = tmp_path / "prog"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o700)
    result = cli("judge", str(program), "--cases", "odd_17x1", "--time-limits", "none",
                 *[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert result.exit_code == 2 and said in " ".join(result.output.split()), result.output
    assert "[1/1]" not in result.output


def test_an_interrupted_class_under_no_save_does_not_say_it_saved_what_was_judged(cli, tmp_path, monkeypatch):
    """`judge CLASS --no-save` stopped by Ctrl-C said "interrupted; what was judged is saved"; nothing was."""
    from attnbench.api import programs as api_programs
    from attnbench.results.scoreboard import Scoreboard

    (tmp_path / "class").mkdir()
    monkeypatch.setattr(api_programs, "judge_submissions",
                        lambda options, **kwargs: Scoreboard(["odd_17x1"], [], {}, {}, True))
    result = cli("judge", str(tmp_path / "class"), "--cases", "odd_17x1", "--no-save")
    said = " ".join(result.output.split())
    assert result.exit_code == 130 and "interrupted; nothing is saved (--no-save)" in said, result.output
    assert "is saved" not in said.replace("nothing is saved", "")


def test_a_class_interrupted_before_any_row_does_not_say_it_saved_what_was_judged(cli, tmp_path, monkeypatch):
    """Ctrl-C during the builds: "interrupted; what was judged is saved", and the results folder held nothing."""
    from attnbench.api import programs as api_programs
    from attnbench.results.scoreboard import Scoreboard

    (tmp_path / "class").mkdir()
    monkeypatch.setattr(api_programs, "judge_submissions",
                        lambda options, **kwargs: Scoreboard(["odd_17x1"], [], {}, {}, True))
    result = cli("judge", str(tmp_path / "class"), "--cases", "odd_17x1", "--results-dir", str(tmp_path / "res"))
    said = " ".join(result.output.split())
    assert result.exit_code == 130 and "nothing is saved" in said, result.output
    assert "what was judged is saved" not in said and not list((tmp_path / "res").glob("*"))


def test_a_class_whose_cases_the_judge_itself_failed_exits_3_not_0(cli, tmp_path, monkeypatch):
    """Slurm jobs that left the queue without a result made every case JUDGE ERROR ("the worker on its device
    died"), and the class exited 0 with the scoreboard saved, as if judged."""
    from attnbench.api import programs as api_programs
    from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow

    died = "the judge could not finish this: RuntimeError: the worker on its device died (Slurm job 42_0 ended)"
    rows = [SubmissionRow("ada", "ada.c", True, entries={"odd_17x1": CaseEntry("JUDGE ERROR", died)}),
            SubmissionRow("bob", "bob.c", True, rank=1, entries={"odd_17x1": CaseEntry("PASS", runs_s=[0.5])})]
    (tmp_path / "class").mkdir()
    monkeypatch.setattr(api_programs, "judge_submissions",
                        lambda options, **kwargs: Scoreboard(["odd_17x1"], rows, {}, {}))
    result = cli("judge", str(tmp_path / "class"), "--cases", "odd_17x1", "--no-save")
    said = " ".join(result.output.split())
    assert result.exit_code == 3, result.output
    assert "error: 1 case not judged, the judge's own error (first: ada odd_17x1: the judge could not finish" in said


def test_a_resumed_class_is_saved_under_its_own_cases_not_the_default_selector(cli, tmp_path, monkeypatch):
    """`judge --resume JOBS` of a class judged on `--cases odd` saved its scoreboard as <date>_class_course."""
    from attnbench.api import programs as api_programs
    from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow

    rows = [SubmissionRow("bob", "bob.c", True, rank=1,
                          entries={case: CaseEntry("PASS", runs_s=[0.5]) for case in ("odd_17x1", "odd_100x32")})]
    (tmp_path / "jobs").mkdir()
    monkeypatch.setattr(api_programs, "judge_submissions", lambda options, **kwargs: Scoreboard(
        ["odd_17x1", "odd_100x32"], rows, {"date": "2026-01-02T03:04:05"}, {}))
    result = cli("judge", "--resume", str(tmp_path / "jobs"), "--results-dir", str(tmp_path / "res"))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == [
        f"2026-01-02_class_odd_17x1-odd_100x32.{kind}" for kind in ("csv", "json", "md")]


def test_history_of_a_folder_that_does_not_exist_is_bad_input_not_an_empty_history(cli, tmp_path):
    """`judge --history nosuch` said "nosuch: no saved scoreboard" and exited 0, as for an empty folder."""
    result = cli("judge", "--history", str(tmp_path / "nosuch"))
    first = result.output.strip().splitlines()[0]
    assert result.exit_code == 2 and "nosuch" in first and "does not exist" in first, result.output


def test_history_never_prints_the_folder_name_raw(cli, tmp_path):
    """A results folder named with an escape code was echoed raw to the terminal."""
    folder = tmp_path / "\x1b[31mred"
    folder.mkdir()
    result = cli("judge", "--history", str(folder))
    assert result.exit_code == 0 and "\x1b" not in result.output and "red: no saved scoreboard" in result.output, \
        result.output


def test_history_says_how_many_runs_on_other_cases_it_leaves_out(cli, tmp_path):
    """A class judged on t01-t03 and then on t01: the first run vanished from --history without a word."""
    from attnbench.output.export.scoreboard_export import save_scoreboard
    from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow

    def board(cases, date):
        row = SubmissionRow("ada", "ada", True, rank=1, entries={c: CaseEntry("PASS", runs_s=[0.5]) for c in cases})
        return Scoreboard(cases, [row], metadata={"date": date})

    save_scoreboard(board(["t01", "t02", "t03"], "2026-11-01T10:00:00"), tmp_path, "wide")
    save_scoreboard(board(["t01"], "2026-11-02T10:00:00"), tmp_path, "narrow")
    result = cli("judge", "--history", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "1 saved run on other cases than the latest run's is not in this history" in " ".join(result.output.split())


def test_history_of_the_class_folder_points_at_its_results_folder(cli, tmp_path):
    """`judge --history .` in the class's folder said ".: no saved scoreboard" though ./attnbench-results, where
    `judge .` saves, held the class's runs."""
    from attnbench.output.export.scoreboard_export import save_scoreboard
    from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow

    row = SubmissionRow("ada", "ada", True, rank=1, entries={"t01": CaseEntry("PASS", runs_s=[0.5])})
    save_scoreboard(Scoreboard(["t01"], [row], metadata={"date": "2026-11-01"}), tmp_path / "attnbench-results", "a")
    result = cli("judge", "--history", str(tmp_path))
    said = " ".join(result.output.split())
    assert f"no saved scoreboard; its attnbench-results folder holds the class's: attnbench judge --history " \
           f"{tmp_path / 'attnbench-results'}" in said, said
    assert "holds" not in cli("judge", "--history", str(tmp_path / "attnbench-results")).output


def test_html_into_a_folder_holding_a_newer_scoreboard_is_refused_before_the_class_is_judged(cli, tmp_path):
    """The page shows the folder's history: a scoreboard of a newer attnbench there was skipped without a word;
    named now, it is named before any build, not after the class was judged and its files saved."""
    from attnbench.results.scoreboard import SCOREBOARD_VERSION, CaseEntry, Scoreboard, SubmissionRow

    results = tmp_path / "res"
    results.mkdir()
    board = Scoreboard(["odd_17x48"], [SubmissionRow("ada", "ada.c", True, rank=1,
                                                     entries={"odd_17x48": CaseEntry("PASS", runs_s=[0.5])})],
                       metadata={"date": "2026-11-01"})
    newer = board.to_json().replace(f'"version": {SCOREBOARD_VERSION},', f'"version": {SCOREBOARD_VERSION + 1},', 1)
    (results / "later.json").write_text(newer)
    classroom = tmp_path / "class"
    classroom.mkdir()
    (classroom / "ada.c").write_text("int main(void) { return 1; }\n")
    result = cli("judge", str(classroom), "--cases", "odd_17x48", "--html", "--results-dir", str(results),
                 "--time-limits", "none", "--rerun-top", "0", "--sandbox", "none")
    assert result.exit_code == 2 and "later.json: a scoreboard of version" in result.output, result.output
    assert result.output.count("\n") == 1 and sorted(p.name for p in results.iterdir()) == ["later.json"]


def test_new_never_prints_its_folder_raw(cli, tmp_path, monkeypatch):
    """`attnbench new kern --dir $'e\\e[31mx'` printed the escape raw in its three lines."""
    monkeypatch.chdir(tmp_path)
    result = cli("new", "kern", "--dir", "e\x1b[31mx")
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "wrote e\\x1b[31mx/kern.cu" in result.output, result.output
    assert (tmp_path / "e\x1b[31mx" / "kern.cu").is_file()


def test_the_saved_lines_show_the_results_folder_as_given_escaped_never_read_as_markup(cli, tmp_path):
    """`judge PROGRAM --results-dir 'res[bold]x'` said "saved resx/..." (rich read [bold] as markup), and a folder
    named with ESC reached the terminal raw."""
    import shutil
    import subprocess

    from tests.judge.classes import EXAMPLE

    if shutil.which("cc") is None:
        pytest.skip("needs cc")
    program = tmp_path / "attention"
    subprocess.run(["cc", "-O2", "-o", str(program), str(EXAMPLE), "-lm"], check=True, capture_output=True)
    for folder in ("res[bold]x", "r\x1b[31mx"):
        result = cli("judge", str(program), "--cases", "odd_17x1", "--time-limits", "none",
                     "--results-dir", str(tmp_path / folder))
        assert result.exit_code == 0, result.output
        saved = [line for line in result.output.splitlines() if line.startswith("saved ")]
        assert len(saved) == 3 and "\x1b" not in result.output, result.output
        assert all(line.startswith(f"saved {tmp_path}/{folder.replace(chr(27), chr(92) + 'x1b')}/") for line in saved)


@pytest.mark.parametrize("columns, shown", [(80, True), (160, False)])
def test_below_120_columns_a_ranked_rows_notes_are_said_under_the_table(tmp_path, monkeypatch, columns, shown):
    """At 80 columns the note column is dropped: a ranked row's "its hw4.hip is not judged" was nowhere."""
    from click.testing import CliRunner

    from attnbench.api import programs as api_programs
    from attnbench.cli import main
    from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow

    noted = SubmissionRow("noted", "/s/noted", True, "built with `make hw4` (0.1 s); its hw4.hip is not judged",
                          gpu="stand-in", rank=1, entries={"odd_17x1": CaseEntry("PASS", runs_s=[1.0])})
    (tmp_path / "class").mkdir()
    monkeypatch.setattr(api_programs, "judge_submissions",
                        lambda options, **kwargs: Scoreboard(["odd_17x1"], [noted], {}, {}))
    monkeypatch.setenv("COLUMNS", str(columns))
    result = CliRunner().invoke(main, ["judge", str(tmp_path / "class"), "--cases", "odd_17x1", "--no-save"])
    lines = [" ".join(line.split()) for line in result.output.splitlines()]
    assert result.exit_code == 0, result.output
    assert ("noted: built with `make hw4` (0.1 s); its hw4.hip is not judged" in lines) is shown, result.output
    assert any("hw4.hip is not judged" in line for line in lines), result.output  # in the table or under it


def test_one_submissions_folder_that_fails_exits_1_as_one_program_does_and_a_class_exits_0(tmp_path):
    """`judge hw4_folder` (one student's folder, the course's layout) is a class of one: it exited 0 when the
    program failed a case, where `judge ./hw4` exits 1; a class's exit says nothing of its verdicts."""
    import shutil

    from click.testing import CliRunner

    from attnbench.cli import main
    from tests.judge.classes import CLASS_MODE, EXAMPLE, can_build, wrapping

    if not can_build():
        pytest.skip("no C compiler or make")

    def student(folder: Path, source: str) -> Path:
        folder.mkdir(parents=True)
        (folder / "attention.c").write_text(source)
        (folder / "Makefile").write_text("hw4: attention.c\n\tcc -O2 -o hw4 attention.c -lm\n")
        return folder

    right = student(tmp_path / "right", EXAMPLE.read_text())
    wrong = student(tmp_path / "class" / "wrong", wrapping("#define OFF_BY_ONE"))
    shutil.copytree(right, tmp_path / "class" / "right")

    def judged(folder: Path) -> int:
        return CliRunner().invoke(main, ["judge", str(folder), "--cases", "odd_17x48", "--sandbox", CLASS_MODE,
                                         "--rerun-top", "0", "--time-limits", "none", "--no-save"]).exit_code

    assert judged(right) == 0
    assert judged(wrong) == 1
    assert judged(tmp_path / "class") == 0  # a class: its scoreboard is the result


@pytest.mark.parametrize("option, words", [("--memory-limit", ("memory.max", "RLIMIT_AS")),
                                            ("--max-processes", ("pids.max", "RLIMIT_NPROC"))])
def test_the_help_and_the_docs_name_the_same_mechanisms_of_a_limit(cli, option, words):
    """`judge --help` called --memory-limit an address-space limit while docs/judging.md said a cgroup: both now
    name each mechanism, and this holds them together."""
    import re
    from pathlib import Path

    helped = " ".join(cli("judge", "--help").output.split())
    said = helped[helped.index(option):][:400]
    docs = (Path(__file__).resolve().parents[2] / "docs" / "judging.md").read_text(encoding="utf-8")
    (row,) = [line for line in docs.splitlines() if re.match(rf"\| `{option} ", line)]
    for word in words:
        assert word in said and word in row, (word, said, row)


def test_one_program_on_the_suites_inputs_is_told_they_are_public_and_not_on_fresh_ones(cli, tmp_path):
    """Red team 28: a program that carried t01's answer passed it in 0.024 s, and nothing said the inputs were public."""
    import shutil
    import subprocess

    from tests.judge.classes import EXAMPLE

    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    program = tmp_path / "prog"
    subprocess.run(["cc", "-O2", "-o", str(program), str(EXAMPLE), "-lm"], check=True)
    suite = cli("judge", str(program), "--cases", "odd_17x48", "--no-save", "--time-limits", "none")
    assert suite.exit_code == 0, suite.output
    assert "inputs: the suite's public odd_17x48: a program can carry their answers; --fresh-inputs" in " ".join(
        suite.output.split())
    fresh = cli("judge", str(program), "--cases", "odd_17x48", "--no-save", "--time-limits", "none", "--fresh-inputs")
    assert fresh.exit_code == 0 and "inputs: the suite's public" not in fresh.output, fresh.output
