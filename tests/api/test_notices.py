"""attnbench.api.notices: what is said before work starts."""

from __future__ import annotations

from attnbench.api import notices
from attnbench.cases import suite
from attnbench.cases.inputs import SuiteInput, SyntheticInput
from attnbench.cases.testcase import Shape


def test_a_reference_that_takes_hours_on_this_cpu_is_said_before_it_starts(monkeypatch):
    """`sweep N --variants cpu --values 1048576` computed its float64 reference for hours without a word."""
    monkeypatch.setattr(notices, "host_threads", lambda: 2)
    said: list[str] = []
    notices.say_reference_time([SyntheticInput(Shape(1, 1 << 20, 64), 7)], said.append)
    assert len(said) == 1 and "hours on this machine's CPU (2 threads)" in said[0] and "Ctrl-C" in said[0]
    seconds = notices.reference_seconds([SyntheticInput(Shape(1, 1 << 20, 64), 7)])
    assert seconds == 4.0 * (1 << 40) * 64 / (notices.REFERENCE_FLOPS_PER_THREAD * 2)


def test_small_inputs_and_stored_references_are_not_said(monkeypatch):
    said: list[str] = []
    notices.say_reference_time([SyntheticInput(Shape(2, 256, 64), 7)], said.append)
    assert said == []
    t30 = SuiteInput(suite.get_case("t30"))  # 2 x 32768^2 x 64: minutes on a CPU, unless stored
    monkeypatch.setattr(notices.suite, "has_reference", lambda case: True)
    assert notices.reference_seconds([t30]) == 0.0
