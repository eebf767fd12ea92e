import json

import numpy as np
import pytest
from click.testing import CliRunner

from attnbench.bench import squarelab
from attnbench.cases import suite
from attnbench.cases import sweeps as sweep
from attnbench.cases.inputs import SuiteInput, SyntheticInput, seeded_testcase
from attnbench.cases.testcase import Shape
from attnbench.cli import main
from attnbench.output.render import markdown


@pytest.fixture
def cli():
    runner = CliRunner()
    return lambda *args: runner.invoke(main, list(args), catch_exceptions=False)


def test_the_labs_102_sizes():
    sizes = sweep.SQUARE_SIZES
    assert len(sizes) == 102
    assert sizes[:6] == (63, 64, 65, 127, 128, 129) and sizes[-6:] == (4095, 4096, 4097, 8191, 8192, 8193)
    assert [c.shape.N for c in suite.cases_in("square")] == list(sizes)


def test_size_selection():
    assert sweep.parse_sizes("all") == list(sweep.SQUARE_SIZES)
    assert sweep.parse_sizes("63-129") == [63, 64, 65, 127, 128, 129]
    assert sweep.parse_sizes("100,63,100") == [100, 63]
    assert sweep.parse_values("128..1024") == [128, 256, 512, 1024]
    assert sweep.parse_values("16,32,48") == [16, 32, 48]
    with pytest.raises(ValueError):
        sweep.parse_values("0,4")


def test_square_inputs_come_from_the_suite_in_memory():
    found = sweep.square_inputs([63, 100])
    assert isinstance(found[0], SuiteInput) and found[0].in_memory and found[0].label == "sq63"
    assert isinstance(found[1], SyntheticInput) and found[1].label == "sq100" and found[1].shape == Shape(1, 100, 100)


def test_shape_sweeps_keep_the_work_per_input_near_constant():
    along_n = sweep.shape_inputs("N", [128, 1024], None, 2048, 64)
    assert [i.shape for i in along_n] == [Shape(2048, 128, 64), Shape(256, 1024, 64)]
    along_d = sweep.shape_inputs("d", [32, 64], 3, 100, 64)
    assert [i.shape for i in along_d] == [Shape(3, 100, 32), Shape(3, 100, 64)]


@pytest.mark.parametrize("given", [{"batch": 0}, {"seq_len": 0}, {"head_dim": -1}, {"batch": 1.5}])
def test_a_shape_below_one_is_refused_before_any_input_is_made(given):
    """From Python (attnbench.sweep), seq_len=0 was a ZeroDivisionError, batch=0 a traceback later, and
    head_dim=-1 a sweep of nothing that returned."""
    shape = {"batch": None, "seq_len": 64, "head_dim": 8, **given}
    axis = "d" if "seq_len" in given else "N"
    with pytest.raises(ValueError, match=next(iter(given))):
        sweep.shape_inputs(axis, [8], shape["batch"], shape["seq_len"], shape["head_dim"])


def test_lab_rule_on_known_errors():
    ref = np.zeros((1, 50, 50), dtype=np.float32)
    bound = 100 * 50 * 50 * np.finfo(np.float32).eps
    ok = squarelab.lab_check(ref + np.float32(0.9 * bound / 2500), ref)
    assert ok.passed and ok.l1_error == pytest.approx(0.9 * bound, rel=1e-5) and ok.bound == pytest.approx(bound)
    bad = squarelab.lab_check(ref + np.float32(1.1 * bound / 2500), ref)
    assert not bad.passed and "exceeds 100 n^2 FLT_EPSILON" in bad.describe()
    nan = ref.copy()
    nan[0, 1, 2] = np.nan
    assert not squarelab.lab_check(nan, ref).passed and squarelab.lab_check(nan, ref).nan_count == 1


def test_lab_report_line_uses_cs_formats():
    assert markdown.lab_line(8193, 1583.2, 2, 1.3952) == "Size: 8193\tGflop/s: 1.58e+03 (2 iter, 1.395 seconds)"
    assert markdown.lab_line(63, 7.534, 2048, 0.1361) == "Size: 63\tGflop/s: 7.53 (2048 iter, 0.136 seconds)"


class FakeSampler:
    """A fresh sampler whose passes each take 1 ms; it records each batch (a fresh input, the last output checked)."""

    def __init__(self):
        self.batches = []

    def batch(self, passes, flush_l2):
        assert flush_l2 is False  # the lab times hot
        self.batches.append(passes)
        return float(passes)


def test_lab_timer_doubles_until_a_batch_takes_a_tenth_of_a_second():
    timer = squarelab.LabTimer()
    sampler = FakeSampler()
    stats = timer(sampler, None)
    assert sampler.batches == [1, 1, 2, 4, 8, 16, 32, 64, 128]  # warm-up, then doubling up to >= 100 ms
    assert stats.samples_ms == [1.0] and timer.last_extra == {"lab_passes": 128, "lab_seconds": 0.128}


def test_square_sweep_with_the_cpu_variant(cli, tmp_path):
    result = cli("sweep", "square", "--variants", "cpu", "--sizes", "63-65", "--results-dir", str(tmp_path),
                 "--name", "sq")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith(("Size:", "Average"))]
    assert [line.split("\t")[0] for line in lines[:3]] == ["Size: 63", "Size: 64", "Size: 65"]
    assert lines[3].startswith("Average ") and float(lines[3].split()[1]) > 0
    data = json.loads((tmp_path / "sq.json").read_text())
    assert data["kind"] == "sweep" and data["settings"]["sweep"] == "square"
    assert all(c["check"]["passed"] and c["check"]["l1_error"] <= c["check"]["bound"] for c in data["cells"])
    assert "Size: 63\tGflop/s:" in (tmp_path / "sq.md").read_text()
    # the float64 references were stored for the next run; the inputs were never written
    assert suite.has_reference(suite.get_case("sq64")) and not suite.is_generated(suite.get_case("sq64"))


def test_square_sweep_with_the_labs_timing(cli, tmp_path):
    result = cli("sweep", "square", "--variants", "cpu", "--sizes", "63", "--lab-timing", "--no-save")
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if line.startswith("Size: 63"))
    iterations, seconds = line.split("(")[1].split(" iter, ")
    assert int(iterations) >= 1 and float(seconds.split()[0]) >= 0.1


def test_sweep_over_n_with_the_cpu_variant(cli, tmp_path):
    result = cli("sweep", "N", "--variants", "cpu", "--values", "8..32", "--batch", "2", "--head-dim", "4",
                 "--results-dir", str(tmp_path), "--name", "n")
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "n.json").read_text())
    assert [c["shape"]["N"] for c in data["cases"]] == [8, 16, 32]
    assert data["settings"]["sweep"] == "N" and all(c["status"] == "ok" for c in data["cells"])


def test_synthetic_inputs_match_the_suite_generator():
    case = suite.get_case("odd_17x48")
    path = suite.generate_input(case)
    from attnbench.cases.inputs import sha256_of_testcase
    from attnbench.cases.testcase import read_testcase

    in_memory = seeded_testcase(case.shape, case.seed)
    assert np.array_equal(in_memory.qkv, read_testcase(path).qkv)
    assert sha256_of_testcase(in_memory) == case.input_sha256


@pytest.mark.parametrize("word, name", [("square", "square"), ("N", "N"), ("n", "N"), ("seq", "N"), ("SEQ", "N"),
                                        ("d", "d"), ("head-dim", "d")])
def test_every_word_for_a_sweep_axis_names_one_axis(word, name):
    assert sweep.sweep_axis(word).name == name


def test_the_command_line_takes_every_name_and_alias_of_the_axes():
    assert sweep.SWEEP_AXIS_WORDS == ("square", "N", "n", "seq", "d", "head-dim")


def test_an_unknown_sweep_axis_is_refused_naming_the_words():
    with pytest.raises(ValueError, match="square, N, n, seq, d, head-dim"):
        sweep.sweep_axis("B")


def test_each_axis_over_the_workload_has_default_values_that_parse():
    assert [a.name for a in sweep.SWEEP_AXES if a.default_values is None] == ["square"]
    assert sweep.parse_values(sweep.sweep_axis("N").default_values)[-1] == 32768
    assert sweep.parse_values(sweep.sweep_axis("d").default_values) == [16, 32, 48, 64, 80, 96, 128]


@pytest.mark.parametrize("args", [["N", "--values", ""], ["d", "--values", " "], ["square", "--sizes", ""]])
def test_an_empty_values_or_sizes_option_is_refused_not_the_whole_default_sweep(cli, args):
    """`sweep N --values ""` ran the default sweep (minutes of CPU passes up to B512_N512) instead of refusing."""
    result = cli("sweep", *args, "--variants", "cpu", "--no-save")
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and said.startswith(f"error: {args[1]} "), result.output
