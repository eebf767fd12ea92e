"""compare, sweep and report (attnbench/cli/matrix_commands.py)."""

import json


def test_a_local_compare_interrupted_saves_what_was_measured_and_exits_130(cli, tmp_path, monkeypatch):
    from attnbench.bench import matrix
    from attnbench.results.resultset import load

    real_run_cell, calls = matrix.run_cell, []

    def interrupted_on_the_second(*args, **kwargs):
        calls.append(args[1])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_run_cell(*args, **kwargs)

    monkeypatch.setattr(matrix, "run_cell", interrupted_on_the_second)
    result = cli("compare", "--variants", "cpu", "--cases", "odd_17x48,odd_100x32", "--reps", "3",
                 "--results-dir", str(tmp_path), "--name", "cut")
    assert result.exit_code == 130, result.output
    saved = load(tmp_path / "cut.json")
    assert [(c.case, c.status) for c in saved.cells] == [("odd_17x48", "ok")]
    assert [c.label for c in saved.cases] == ["odd_17x48"] and saved.settings["interrupted"] is True


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
    from attnbench.output.matrix_run import print_problems
    from attnbench.output.terminal import err_console
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
