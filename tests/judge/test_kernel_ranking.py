"""Kernel time in the judge (one program and a class): recorded in a second, untimed run of each passed case,
in the sandbox like every run, shown beside the process time, and ranked by only with --rank-by kernel.

Without a GPU the collector cannot run, so these programs stand in for it: when the recording run loads the
collector (CUDA_INJECTION64_PATH set) they write the records it would, and their output is then wrong, so a
judged run that had the collector would fail its case."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from attnbench.analysis.ranking import KERNEL_RANKING_RULE, RANKING_RULE
from attnbench.api import programs as api_programs
from attnbench.backends import kernel_records
from attnbench.cli import main
from attnbench.output.tables.scoreboard_table import scoreboard_lines, scoreboard_model
from tests.fakes import stand_in_collector
from tests.judge.classes import CASES, can_build, class_sandbox, wrapping

pytestmark = pytest.mark.skipif(not can_build(), reason="no C compiler or make")


def _records_then_wrong(kernel_ns: int) -> str:
    """Code run before the example: with the collector, write two kernels' records (one launched twice) whose
    busy span is `kernel_ns`, and an empty output (a wrong size), then stop."""
    return (f'const char *out = getenv("{kernel_records.RECORDS_ENV}");\n'
            f'if (getenv("{kernel_records.INJECTION_ENV}") && out) {{\n'
            '  FILE *f = fopen(out, "w");\n'
            '  fprintf(f, "attnbench-kernel-records 1\\n");\n'
            f'  fprintf(f, "kernel 0 {kernel_ns // 2} 2 1 1 64 1 1 0 7 _Z4fillPf\\n");\n'
            f'  fprintf(f, "kernel {kernel_ns // 4} {kernel_ns // 2} 2 1 1 64 1 1 0 8 _Z4attnPf\\n");\n'
            f'  fprintf(f, "kernel {kernel_ns // 2} {kernel_ns} 2 1 1 64 1 1 0 7 _Z4fillPf\\n");\n'
            '  fprintf(f, "dropped 0\\nend 3\\n");\n  fclose(f);\n'
            '  fclose(fopen(argv[2], "w"));\n  return 0;\n}\n')


@pytest.fixture
def collector_here(tmp_path, monkeypatch):
    """This machine as one with a GPU and the collector built (a file standing in for the library)."""
    return stand_in_collector(tmp_path / "collector", monkeypatch)


def _build(folder: Path, name: str, kernel_ns: int, before: str = "") -> Path:
    source = folder / f"{name}.c"
    source.write_text(wrapping("#include <stdio.h>", before + _records_then_wrong(kernel_ns)))
    return source


def test_one_programs_kernels_are_recorded_beside_its_process_time_never_in_its_judged_run(tmp_path, collector_here):
    program = _build(tmp_path, "hw4", 400_000)
    judgement, result = api_programs.judge(str(program), CASES, time_limits="none", kernel_time=True,
                                           sandbox=class_sandbox())
    assert judgement.passed == 2  # the judged runs had no collector: their outputs are right
    for cell in result.cells:
        assert cell.extra["kernel"]["busy_s"] == pytest.approx(400e-6)
        assert cell.extra["kernel"]["total_s"] == pytest.approx(500e-6)  # one launch overlaps another
        assert cell.extra["kernel"]["launches"] == 3
        assert [k["name"] for k in cell.extra["kernel"]["kernels"]] == ["_Z4fillPf", "_Z4attnPf"]
        assert cell.extra["wall_s"] > 0 and cell.status == "ok"
    assert "could forge" in result.policy["kernel_time"]
    plain, _ = api_programs.judge(str(program), CASES, time_limits="none", sandbox=class_sandbox())
    assert all(j.kernels is None for j in plain.judged)  # recorded only when asked


def test_the_judge_command_shows_a_kernels_column_and_their_total(tmp_path, collector_here):
    program = _build(tmp_path, "hw4", 400_000)
    done = CliRunner().invoke(main, ["judge", str(program), "--cases", CASES, "--time-limits", "none",
                                     "--kernel-time", "--sandbox", class_sandbox().mode, "--no-save"],
                              catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert "kernels" in done.output and "0.400 ms" in done.output and "0.800 ms" in done.output  # total of 2


def test_rank_by_kernel_ranks_a_class_by_kernel_time_and_the_default_by_wall_time(tmp_path, collector_here):
    classroom = tmp_path / "class"
    classroom.mkdir()
    _build(classroom, "quick", 900_000)  # quick on the wall clock, slow kernels
    _build(classroom, "slow", 300_000, "usleep(300000);")  # 0.3 s slower on the wall clock, quicker kernels
    wall = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=0, sandbox=class_sandbox(),
                                    kernel_time=True)
    assert [(r.name, r.rank) for r in wall.rows] == [("quick", 1), ("slow", 2)]
    assert wall.settings["ranking"] == RANKING_RULE and wall.settings["rank_by"] == "wall"
    assert {r.name: r.kernel_total_s for r in wall.rows} == pytest.approx({"quick": 1.8e-3, "slow": 0.6e-3})
    by_kernel = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=0,
                                         sandbox=class_sandbox(), rank_by="kernel")
    assert [(r.name, r.rank) for r in by_kernel.rows] == [("slow", 1), ("quick", 2)]
    assert by_kernel.settings["ranking"] == KERNEL_RANKING_RULE and "could forge" in by_kernel.settings["kernel_time"]
    model = scoreboard_model(by_kernel)
    assert "kernels (passed)" in [c.name for c in model.columns]
    texts = [cell.text for row in model.rows for cell in row]
    assert "0.600 ms" in texts and any(t.endswith(" s, k 0.300 ms") for t in texts)
    lines = scoreboard_lines(by_kernel)
    assert any(line.startswith("ranked by kernel time; k: kernel time, CUPTI") for line in lines)
    assert any(line.startswith("ranked by wall time") for line in scoreboard_lines(wall))


def test_rank_by_kernel_without_kernel_times_ranks_by_wall_time_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_records, "gpu_present", lambda: False)
    classroom = tmp_path / "class"
    classroom.mkdir()
    _build(classroom, "quick", 900_000)
    _build(classroom, "slow", 300_000, "usleep(300000);")
    board = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=0, sandbox=class_sandbox(),
                                     rank_by="kernel")
    assert [(r.name, r.rank) for r in board.rows] == [("quick", 1), ("slow", 2)]
    assert all(e.kernel_note == "no kernel time: no NVIDIA GPU on this machine" for r in board.rows
               for e in r.entries.values())
    assert "no kernel time: no NVIDIA GPU on this machine" in scoreboard_lines(board)


def test_rank_by_is_for_a_class(tmp_path):
    with pytest.raises(api_programs.UsageError, match="--rank-by ranks a class"):
        api_programs.JudgeOptions(programs=(str(tmp_path / "hw4"),), rank_by="kernel")
