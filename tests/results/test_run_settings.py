"""attnbench.results.run_settings: a result set's settings as a typed record, saved under the keys they always had."""

from __future__ import annotations

import json
from pathlib import Path

from attnbench.results import resultset as results
from attnbench.results.run_settings import RunSettings

REFERENCE_RUNS = Path(__file__).resolve().parents[2] / "docs" / "results"


def test_the_record_writes_only_what_is_set_under_the_old_keys():
    settings = RunSettings("|out - ref| <= 0.005 per element, float64 reference", 0.005, 0.0, 0.02)
    assert settings.to_dict() == {"check_rule": "|out - ref| <= 0.005 per element, float64 reference",
                                  "atol": 0.005, "rtol": 0.0, "same_within": 0.02}
    assert RunSettings.from_dict(settings.to_dict()) == settings


def test_a_settings_dict_of_an_older_file_is_read_field_by_field_and_its_unknown_keys_kept():
    old = {"sweep": "square", "lab_timing": False, "same_within": 0.02, "elapsed_s": 12.5,
           "check_rule": "sum |Y - Y_ref| <= ...", "a_key_of_its_own": [1, 2]}
    settings = RunSettings.from_dict(old)
    assert (settings.sweep, settings.lab_timing, settings.elapsed_s) == ("square", False, 12.5)
    assert settings.other == {"a_key_of_its_own": [1, 2]} and settings.to_dict() == old


def test_saved_reference_runs_load_and_save_their_settings_unchanged():
    for path in sorted(REFERENCE_RUNS.glob("*.json")):
        data = json.loads(path.read_text())
        if data.get("schema") != results.SCHEMA:
            continue
        loaded = results.load(path)
        assert isinstance(loaded.settings, RunSettings)
        assert loaded.settings.to_dict() == data["settings"], path.name
        assert loaded.settings.check_rule == data["settings"]["check_rule"]


def test_a_result_set_made_with_a_dict_holds_the_record():
    result = results.ResultSet("compare", {}, {}, [], [], [], settings={"same_within": 0.05, "executor": "slurm"})
    assert result.settings == RunSettings(same_within=0.05, executor="slurm")
    assert json.loads(results.dumps(result))["settings"] == {"same_within": 0.05, "executor": "slurm"}
