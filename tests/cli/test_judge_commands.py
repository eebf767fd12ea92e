"""attnbench/cli/judge_commands.py: the judge's options are refused in one line when no run could use them."""

from __future__ import annotations

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
