"""compare, sweep and report (attnbench/cli/matrix_commands.py)."""

import json

import pytest


def _interrupted_on_the_second_cell(monkeypatch) -> None:
    """Ctrl-C as the compare measures its second cell."""
    from attnbench.bench import matrix

    real_measure_cell, calls = matrix.measure_cell, []

    def interrupted_on_the_second(*args, **kwargs):
        calls.append(args[1])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_measure_cell(*args, **kwargs)

    monkeypatch.setattr(matrix, "measure_cell", interrupted_on_the_second)


def test_a_local_compare_interrupted_saves_what_was_measured_and_exits_130(cli, tmp_path, monkeypatch):
    from attnbench.results.resultset import load

    _interrupted_on_the_second_cell(monkeypatch)
    result = cli("compare", "--variants", "cpu", "--cases", "odd_17x48,odd_100x32", "--reps", "3",
                 "--results-dir", str(tmp_path), "--name", "cut")
    assert result.exit_code == 130, result.output
    assert "**Interrupted** (Ctrl-C)" in (tmp_path / "cut.md").read_text()  # its Markdown says so too
    saved = load(tmp_path / "cut.json")
    assert [(c.case, c.status) for c in saved.cells] == [("odd_17x48", "ok")]
    assert [c.label for c in saved.cases] == ["odd_17x48"] and saved.settings.interrupted is True


def test_a_compare_with_json_interrupted_prints_json_alone_on_stdout(cli, tmp_path, monkeypatch):
    """`compare --json` stopped by Ctrl-C printed its "saved ..." lines on stdout, and no JSON."""
    _interrupted_on_the_second_cell(monkeypatch)
    result = cli("compare", "--variants", "cpu", "--cases", "odd_17x48,odd_100x32", "--reps", "3",
                 "--results-dir", str(tmp_path), "--name", "cut", "--json")
    assert result.exit_code == 130, result.output
    printed = json.loads(result.stdout, parse_constant=lambda word: pytest.fail(f"{word} in strict JSON"))
    assert [cell["case"] for cell in printed["cells"]] == ["odd_17x48"] and (tmp_path / "cut.json").exists()
    assert "saved " in result.stderr


def test_a_compare_against_a_saved_run_saves_its_verdicts_and_names_that_run(cli, tmp_path):
    import csv

    first = cli("compare", "-v", "cpu", "-c", "odd_17x48", "--reps", "8", "--results-dir", str(tmp_path), "--name", "a")
    assert first.exit_code == 0, first.output
    again = cli("compare", "--against", str(tmp_path / "a.json"), "--reps", "8", "--results-dir", str(tmp_path),
                "--name", "b", "--same-within", "1000%")
    assert again.exit_code == 0, again.output
    record = json.loads((tmp_path / "b.json").read_text())["settings"]["against"]
    assert record["saved"] == "a" and record["saved_path"] == str(tmp_path / "a.json")
    assert [(c["variant"], c["case"], c["verdict"]) for c in record["cells"]] == [("cpu", "odd_17x48", "SAME")]
    rows = list(csv.DictReader((tmp_path / "b.csv").read_text().splitlines()))
    assert rows[0]["against"] == "a" and rows[0]["against_verdict"] == "SAME"
    markdown = (tmp_path / "b.md").read_text()
    assert "## Against a" in markdown and "SAME" in markdown.split("## Against a")[1]


def test_compare_prints_failed_cells_then_each_warning_once_with_its_cells():
    from attnbench.bench.sampler import NOISE_WARNING
    from attnbench.output.render.matrix_run import print_problems
    from attnbench.output.render.terminal import err_console
    from tests.synthetic import COURSE_SHAPES, result_set

    result = result_set({"a": {"t10": 1.0, "t11": None}, "b": {"t10": 2.0, "t11": 3.0}},
                        {c: COURSE_SHAPES[c] for c in ("t10", "t11")})
    for cell in result.cells:
        if cell.measurement is not None:
            cell.measurement.kernel.warnings.append(NOISE_WARNING)
    with err_console.capture() as captured:
        print_problems(result)
    lines = captured.get().splitlines()
    assert lines[0] == "WRONG a on t11: 3 of 100 elements fail |out - ref| <= 0.005"
    assert lines[1:] == [f"warning: {NOISE_WARNING.sentence()} [a/t10, b/t10, b/t11]"]


def test_an_against_run_with_no_cell_in_common_is_refused_before_measuring(cli, tmp_path, monkeypatch):
    from attnbench.bench import matrix

    assert cli("compare", "-v", "cpu", "-c", "odd_17x48", "--reps", "1", "--results-dir", str(tmp_path),
               "--name", "a").exit_code == 0
    monkeypatch.setattr(matrix, "measure_cell", lambda *a, **k: (_ for _ in ()).throw(AssertionError("measured")))
    result = cli("compare", "-v", "cpu", "-c", "odd_17x1", "--against", str(tmp_path / "a.json"), "--no-save")
    assert result.exit_code == 2 and "no cell in common" in result.output, result.output
    assert str(tmp_path / "a.json") in " ".join(result.output.split())


def test_repeating_a_saved_run_leaves_out_its_files_missing_here_and_says_so(cli, tmp_path):
    import shutil

    from attnbench.cases import suite

    assert cli("gen", "odd_17x1").exit_code == 0
    own = tmp_path / "k" / "d.in"
    own.parent.mkdir()
    shutil.copyfile(suite.input_path(suite.get_case("odd_17x1")), own)
    assert cli("compare", "-v", "cpu", "-c", f"odd_17x48,{own}", "--reps", "1", "--results-dir", str(tmp_path),
               "--name", "a").exit_code == 0
    shutil.rmtree(own.parent)  # the saved run was made elsewhere: its file is not here
    result = cli("compare", "--against", str(tmp_path / "a.json"), "--reps", "1", "--no-save",
                 "--same-within", "1000%")
    said = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert f"its input file {own} is not here; that case is left out" in said


def test_an_empty_case_list_is_refused_not_an_empty_table(cli):
    for args in (["compare", "-v", "cpu", "-c", ",", "--no-save"], ["cases", ","], ["gen", ","],
                 ["sweep", "d", "-v", ",", "--no-save"]):
        result = cli(*args)
        assert result.exit_code == 2, (args, result.output)


def test_report_over_a_folder_of_json_leaves_out_what_is_not_results_and_says_so(cli, tmp_path):
    assert cli("compare", "-v", "cpu", "-c", "odd_17x1", "--reps", "1", "--results-dir", str(tmp_path),
               "--name", "a").exit_code == 0
    (tmp_path / "b_ceilings.json").write_text(json.dumps({"gpu": "H200", "ceilings": {}}))
    result = cli("report", str(tmp_path / "a.json"), str(tmp_path / "b_ceilings.json"), "-o",
                 str(tmp_path / "report.md"), "--no-plots")
    assert result.exit_code == 0, result.output
    assert "b_ceilings.json: not an attnbench results file" in " ".join(result.output.split())
    assert (tmp_path / "report.md").is_file()
    result = cli("report", str(tmp_path / "b_ceilings.json"))  # alone, it is refused
    assert result.exit_code == 2


def test_every_saved_run_a_help_text_names_exists():
    """The examples in --help (and the API's docstrings) name saved runs a reader can open."""
    import re
    from pathlib import Path

    import attnbench
    from attnbench.cli import main

    root = Path(attnbench.__file__).resolve().parents[1]
    texts = [command.help or "" for command in main.commands.values()]
    texts += [path.read_text() for path in (root / "attnbench").rglob("*.py")]
    named = {m for text in texts for m in re.findall(r"docs/results/20\d\d-[\w.-]+\.json", text)}
    assert named and all((root / name).is_file() for name in named), sorted(n for n in named if not (root / n).is_file())


def test_a_data_folder_that_cannot_be_written_is_named_not_its_lock_file(cli, tmp_path, monkeypatch):
    (tmp_path / "afile").write_text("")
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "afile" / "data"))
    result = cli("gen", "odd_17x1")
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {tmp_path / 'afile' / 'data'}: ") and ".lock" not in lines[0]


def test_a_report_into_a_folder_it_cannot_write_names_the_report_not_a_plot(cli, tmp_path):
    assert cli("compare", "-v", "cpu", "-c", "odd_17x1", "--reps", "1", "--results-dir", str(tmp_path),
               "--name", "a").exit_code == 0
    (tmp_path / "afile").write_text("")
    result = cli("report", str(tmp_path / "a.json"), "-o", str(tmp_path / "afile" / "r.md"))
    assert result.exit_code == 2 and "ceilings.png" not in result.output
    assert str(tmp_path / "afile" / "r.md") in " ".join(result.output.split())


def test_a_report_onto_a_name_with_a_trailing_slash_is_refused_not_written_as_a_file(cli, tmp_path):
    """`report a.json -o rep/` wrote a file named rep (and its plots beside it): the slash said a folder."""
    assert cli("compare", "-v", "cpu", "-c", "odd_17x1", "--reps", "1", "--results-dir", str(tmp_path),
               "--name", "a").exit_code == 0
    result = cli("report", str(tmp_path / "a.json"), "-o", f"{tmp_path / 'rep'}/", "--no-plots")
    assert result.exit_code == 2, result.output
    assert " ".join(result.output.split()) == f"error: {tmp_path / 'rep'}/: names a folder; give the output a file name"
    assert not (tmp_path / "rep").exists()


def test_a_report_onto_an_html_name_is_refused_not_written_as_markdown(cli, tmp_path):
    """`report a.json -o report.html` wrote Markdown under an HTML name and said "report report.html"."""
    assert cli("compare", "-v", "cpu", "-c", "odd_17x1", "--reps", "1", "--results-dir", str(tmp_path),
               "--name", "a").exit_code == 0
    for name in ("report.html", "report.CSV"):
        result = cli("report", str(tmp_path / "a.json"), "-o", str(tmp_path / name), "--no-plots")
        assert result.exit_code == 2, result.output
        assert "the report is Markdown" in result.output and not (tmp_path / name).exists()
    assert cli("report", str(tmp_path / "a.json"), "-o", str(tmp_path / "r.txt"), "--no-plots").exit_code == 0


def test_runs_are_saved_by_default_in_a_folder_a_checkout_ignores():
    """compare, sweep, judge and profile save into ./attnbench-results/ unless told otherwise; the project's
    .gitignore lists it, so a user's runs never land in tracked files."""
    from pathlib import Path

    import attnbench
    from attnbench.cli import main

    defaults = {name: next(p.default for p in main.commands[name].params if p.name == "results_dir")
                for name in ("compare", "sweep", "judge", "profile")}
    assert set(defaults.values()) == {"attnbench-results"}, defaults
    ignored = (Path(attnbench.__file__).resolve().parents[1] / ".gitignore").read_text().splitlines()
    assert "attnbench-results/" in ignored


def test_a_compare_without_a_results_dir_saves_under_attnbench_results(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli("compare", "-v", "cpu", "-c", "odd_17x1", "--reps", "1", "--name", "a").exit_code == 0
    assert (tmp_path / "attnbench-results" / "a.json").is_file() and not (tmp_path / "results").exists()


def test_compare_runs_exe_programs_in_the_sandbox_and_says_once_when_it_cannot(cli, tmp_path, monkeypatch):
    program = tmp_path / "prog"
    program.write_text("#!/bin/sh\nexit 3\n")
    program.chmod(0o755)
    monkeypatch.setenv("ATTNBENCH_BWRAP", str(tmp_path / "no-bwrap"))
    ran = cli("compare", "-v", f"exe:{program}", "-c", "odd_17x48,odd_17x1", "--no-save")
    assert ran.exit_code == 1 and ran.output.count("no sandbox ($ATTNBENCH_BWRAP=") == 1, ran.output
    refused = cli("compare", "-v", f"exe:{program}", "-c", "odd_17x48", "--no-save", "--sandbox", "required")
    assert refused.exit_code == 3 and "--sandbox required: no sandbox can be made here" in refused.output


def test_compare_says_why_each_refused_cell_was_refused_once_per_reason():
    """The tables say only "refused"; under them, one line per reason names the cells."""
    from attnbench.output.render.matrix_run import print_problems
    from attnbench.output.render.terminal import err_console
    from attnbench.results.refusal import Refusal, RefusalKind
    from tests.synthetic import COURSE_SHAPES, result_set

    result = result_set({"a": {"t10": 1.0, "t11": 1.0}}, {c: COURSE_SHAPES[c] for c in ("t10", "t11")})
    for cell in result.cells:
        cell.status, cell.measurement = "refused", None
        cell.refusal = Refusal("a", RefusalKind.PRECISION, 0.0025, f"|V| up to 3 on {cell.case}")
    with err_console.capture() as captured:
        print_problems(result)
    assert captured.get().splitlines() == ["refused: a cannot meet 0.0025 on this input (t10, t11)"]


def test_a_sweep_option_of_another_axis_is_refused_not_ignored(cli):
    """`sweep square --values 5` ran all 102 lab sizes; `sweep N -N 64` and `sweep d --sizes 63` ignored theirs."""
    for args, named in ((["square", "--values", "5"], "--values"), (["square", "-B", "2", "-d", "32"], "--batch, --head-dim"),
                        (["N", "--seq-len", "64"], "--seq-len"), (["d", "--sizes", "63", "--lab-timing"], "--sizes, --lab-timing")):
        result = cli("sweep", *args, "-v", "cpu", "--no-save")
        said = " ".join(result.output.split())
        assert result.exit_code == 2 and f"does not use {named}" in said, (args, result.output)


def test_no_save_with_what_saves_or_slurm_options_without_slurm_are_refused(cli, tmp_path):
    """`compare --no-save --plot` wrote no plot, `--no-save --results-dir D` and `--partition x` (no Slurm) were
    dropped: each ran and exited 0."""
    for args, said in ((["--no-save", "--plot"], "so --plot would be ignored"),
                       (["--no-save", "--results-dir", str(tmp_path)], "so --results-dir would be ignored"),
                       (["--no-save", "--gres", "gpu:1", "--array-parallelism", "2"],
                        "--gres, --array-parallelism are for --executor slurm")):
        for command in (["compare", "-v", "cpu", "-c", "odd_17x1"], ["sweep", "N", "-v", "cpu", "--values", "8"]):
            result = cli(*command, *args)
            assert result.exit_code == 2 and said in " ".join(result.output.split()), (command, args, result.output)


def test_plot_without_matplotlib_is_refused_before_the_first_measurement(cli, tmp_path, monkeypatch):
    """compare --plot (and sweep --plot) without the plot extra ran the whole matrix, warned "no plots written" and
    exited 0; it is one sentence naming the extra and exit 3 before any cell runs."""
    import sys

    from attnbench.bench import matrix

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    measured = []
    monkeypatch.setattr(matrix, "measure_cell", lambda *args, **kwargs: measured.append(args) or None)
    for command in (("compare", "-v", "cpu", "-c", "odd_17x48"), ("sweep", "n", "-v", "cpu", "--values", "16")):
        result = cli(*command, "--plot", "--results-dir", str(tmp_path))
        assert result.exit_code == 3 and result.output.count("\n") == 1, result.output
        assert "pip install -e '.[plot]'" in result.output
    assert measured == [] and list(tmp_path.iterdir()) == []


def test_ladder_with_no_two_timed_ladder_steps_says_why_no_view_is_printed(cli):
    """`compare -v cpu --ladder` printed no ladder view and said nothing of the option it had taken."""
    result = cli("compare", "-v", "cpu", "-c", "odd_17x48", "--reps", "3", "--no-save", "--ladder")
    assert result.exit_code == 0 and "--ladder: no ladder view" in result.output, result.output
    plain = cli("compare", "-v", "cpu", "-c", "odd_17x48", "--reps", "3", "--no-save")
    assert "ladder" not in plain.output
