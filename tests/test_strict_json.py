"""Every JSON attnbench prints or saves is strict: no NaN or Infinity tokens, which strict parsers refuse."""

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from attnbench import strict_json
from attnbench.cases import suite
from attnbench.cases.testcase import read_output, write_output
from attnbench.cli import main
from attnbench.results import ceilings


def _refuse(constant: str):
    raise ValueError(f"not strict JSON: {constant}")


def strict_loads(text: str):
    """json.loads as a strict parser (JSON.parse, jq) reads it."""
    return json.loads(text, parse_constant=_refuse)


def test_non_finite_floats_become_strings_and_come_back():
    value = {"a": math.nan, "b": [math.inf, -math.inf, 1.5], "c": (2.0, None, "x")}
    text = strict_json.dumps(value)
    parsed = strict_loads(text)
    assert parsed == {"a": "NaN", "b": ["Infinity", "-Infinity", 1.5], "c": [2.0, None, "x"]}
    back = strict_json.restore(parsed)
    assert math.isnan(back["a"]) and back["b"][:2] == [math.inf, -math.inf]


def test_the_strict_parser_refuses_python_default_json():
    with pytest.raises(ValueError, match="NaN"):
        strict_loads(json.dumps({"noise": math.nan}))


@pytest.fixture
def cli():
    runner = CliRunner()
    return lambda *args: runner.invoke(main, list(args), catch_exceptions=False)


def test_run_json_with_too_few_samples_for_a_noise_is_strict(cli, tmp_path):
    result = cli("run", "odd_100x32", str(tmp_path / "j.out"), "--variant", "cpu", "--reps", "3", "--json")
    assert result.exit_code == 0, result.output
    parsed = strict_loads(result.stdout)
    assert parsed["kernel"]["noise"] == "NaN"  # fewer than 6 samples: no noise estimate


def test_verify_json_of_an_output_holding_nan_and_inf_is_strict(cli, tmp_path):
    case = suite.get_case("odd_17x48")
    cli("gen", case.name)
    out = read_output(suite.reference_path(case), case.shape).copy()
    out[0, 0, 0], out[1, 2, 3] = np.nan, np.inf
    write_output(tmp_path / "nan.out", out)
    result = cli("verify", str(tmp_path / "nan.out"), case.name, "--json")
    assert result.exit_code == 1
    parsed = strict_loads(result.stdout)
    assert parsed["passed"] is False


def test_saved_results_and_the_ceilings_cache_are_strict(cli, tmp_path):
    result = cli("compare", "--variants", "cpu", "--cases", "odd_17x48", "--reps", "3", "--results-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    saved = list(tmp_path.glob("*.json"))
    assert saved
    for path in saved:
        strict_loads(path.read_text())
    found = ceilings.CeilingSet(gpu="G", driver="1", arch="sm_90", sm_count=132, sm_clock_mhz=math.nan, date="d",
                                ceilings=[ceilings.Ceiling("ffma", "FFMA", math.nan, "TFLOP/s")])
    path = ceilings.save(found)
    strict_loads(path.read_text())
    assert math.isnan(ceilings.load_cached("G", "1").ceilings[0].value)


def test_no_module_writes_json_but_through_strict_json():
    from pathlib import Path

    import attnbench

    package = Path(attnbench.__file__).parent
    writers = [str(p.relative_to(package)) for p in package.rglob("*.py")
               if p.name != "strict_json.py" and ("json.dump(" in p.read_text() or "json.dumps(" in p.read_text())]
    assert writers == []
