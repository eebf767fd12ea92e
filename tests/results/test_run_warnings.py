"""attnbench.results.run_warnings: warnings as records, rendered to the sentences they always were."""

from __future__ import annotations

from attnbench.bench.sampler import FEW_SAMPLES_WARNING, NOISE_WARNING
from attnbench.results.measurement import Measurement
from attnbench.results.run_warnings import RunWarning, WarningKind
from attnbench.results.stats import KernelStats
from attnbench.results.timed_check import ClockDisagreement
from tests.synthetic import COURSE_SHAPES, measurement


def test_the_samplers_warnings_render_the_sentences_they_were():
    assert NOISE_WARNING.sentence() == ("noise above the target when sampling stopped (see the ±): close other work "
                                        "on the machine, or give it longer with --timeout")
    assert FEW_SAMPLES_WARNING.sentence() == ("fewer than 6 samples, so the noise is unknown (±?): use --reps 10 or "
                                              "more, or a longer --timeout")
    assert NOISE_WARNING.kind is WarningKind.NOISE and FEW_SAMPLES_WARNING.kind is WarningKind.FEW_SAMPLES


def test_clock_warnings_carry_their_remedy_as_a_field():
    shift = KernelStats([1.0] * 6 + [1.3] * 6, clocks_mhz=[1980.0] * 6 + [1500.0] * 6).clock_warning
    assert shift is not None
    warning = shift.warning()
    assert warning.kind is WarningKind.CLOCK_SHIFT and warning.remedy == shift.remedy
    assert warning.sentence() == shift.text() and warning.sentence().endswith(f": {shift.remedy}")
    disagreement = ClockDisagreement(0.01, 5.0, 1.0)
    assert disagreement.warning().kind is WarningKind.CLOCK_DISAGREEMENT
    assert disagreement.warning().sentence() == disagreement.sentence()


def test_a_warning_without_a_remedy_is_its_text():
    assert RunWarning(WarningKind.PROCESS_TIME, "process time").sentence() == "process time"


def test_a_saved_record_and_an_older_files_sentence_both_load():
    record = RunWarning(WarningKind.NOISE, "noisy", "rerun")
    assert RunWarning.from_saved(record.to_dict()) == record
    assert RunWarning.from_saved("a sentence") == RunWarning(WarningKind.GENERIC, "a sentence")


def test_an_older_measurement_with_sentences_loads_without_repeating_the_kernels_warnings():
    m = measurement("naive", "t10", COURSE_SHAPES["t10"], 3.0)
    m.kernel = KernelStats([1.0] * 6 + [1.3] * 6, clocks_mhz=[1980.0] * 6 + [1500.0] * 6)
    m.kernel.warnings.append(NOISE_WARNING)
    m.warnings.append(ClockDisagreement(0.01, 5.0, 1.0).warning())
    data = m.to_dict()
    # as schema versions 1 to 3 wrote it: every warning a sentence, the kernel's among the measurement's
    data["warnings"] = [w.sentence() for w in m.all_warnings()]
    data["kernel"]["warnings"] = [NOISE_WARNING.sentence()]
    back = Measurement.from_dict(data)
    assert [w.sentence() for w in back.all_warnings()] == [w.sentence() for w in m.all_warnings()]
    assert back.warnings == [RunWarning(WarningKind.GENERIC, m.warnings[0].sentence())]
