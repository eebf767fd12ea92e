"""`compare`'s selection: the variants a selector names, once each, and the names shell completion offers."""

from __future__ import annotations

import pytest

from attnbench import api
from attnbench.api.compare_command import case_names, variant_names, variants_from
from attnbench.errors import AttnbenchError, UsageError


def test_a_selector_names_each_variant_once_in_its_order():
    assert [v.name for v in variants_from("cpu,naive,cpu")] == ["cpu", "naive"]
    assert [v.name for v in variants_from(["naive", " cpu "])] == ["naive", "cpu"]


def test_an_empty_selection_is_refused():
    with pytest.raises(AttnbenchError):
        variants_from(" , ")


def test_completion_offers_the_groups_with_the_names():
    assert {"cpu", "naive", "all", "ladder"} <= set(variant_names())
    assert {"t01", "all", "known"} <= set(case_names())


def test_a_compare_says_what_its_cases_will_write_before_writing_any():
    """`compare --cases course` on an empty data folder wrote 11.7 GB without a word; judge and gen say it first."""
    from attnbench import api
    from attnbench.cases import suite

    case = suite.get_case("odd_17x48")
    for path in (suite.input_path(case), suite.reference_path(case)):
        path.unlink(missing_ok=True)
    said: list[tuple[str, bool]] = []
    api.compare("cpu", "odd_17x48", timing=api.TimingOptions(reps=1),
                notice=lambda line: said.append((line, suite.is_generated(case))))
    pending = [written for line, written in said if "the cases not generated yet take" in line and "--cases" in line]
    assert pending == [False]  # said once, before the input was written
    said.clear()
    api.compare("cpu", "odd_17x48", timing=api.TimingOptions(reps=1), notice=lambda line: said.append((line, True)))
    assert not any("not generated yet" in line for line, _ in said)  # nothing left to write: nothing said


@pytest.mark.parametrize("same_within", [-1, float("nan"), float("inf"), "2%"])
@pytest.mark.parametrize("command", ["compare", "sweep"])
def test_a_same_within_outside_the_options_range_is_refused_from_python(command, same_within):
    """same_within=-1 or nan from Python ran and saved a run in which no difference could be SAME."""
    run = (lambda: api.compare("cpu", "odd_17x48", timing=api.TimingOptions(reps=1), same_within=same_within)) \
        if command == "compare" else \
        (lambda: api.sweep("N", "cpu", values="8", batch=1, head_dim=8, timing=api.TimingOptions(reps=1),
                           same_within=same_within))
    with pytest.raises(UsageError, match="same_within="):
        run()


def test_without_a_gpu_compare_and_sweep_name_their_own_option_not_runs_variant(monkeypatch):
    """`compare --variants cpu,mine` without pycuda said "or use --variant cpu": an option compare does not take."""
    from attnbench.api import compare_command
    from attnbench.errors import GpuUnavailable
    from attnbench.kernels.catalogue import variants_for

    def no_gpu(device=0):
        raise GpuUnavailable("pycuda is not installed, so no GPU variant can run", "or use --variant cpu")

    monkeypatch.setattr(compare_command, "open_gpu", no_gpu)
    chosen = variants_for("cpu,naive,qreg")
    with pytest.raises(GpuUnavailable) as listed:
        compare_command.open_gpu_for(chosen, listed=True)
    assert str(listed.value).endswith("or leave naive, qreg out of --variants") and "--variant " not in str(listed.value)
    with pytest.raises(GpuUnavailable) as one:  # run's own remedy stays: it does take --variant
        compare_command.open_gpu_for(chosen[1:2])
    assert str(one.value).endswith("or use --variant cpu")
    assert compare_command.open_gpu_for(chosen[:1], listed=True) is None  # cpu alone needs no GPU
    with pytest.raises(GpuUnavailable) as every:  # `--variants all`: a count, not twenty names
        compare_command.open_gpu_for(variants_for("all"), listed=True)
    assert str(every.value).endswith(" GPU variants out of --variants") and "naive" not in str(every.value)
