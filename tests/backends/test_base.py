"""The clocks' common pieces (attnbench.backends.base)."""

import numpy as np

from attnbench.backends.base import event_ms
from attnbench.backends.gpu import EventClock
from tests.fakes import FakeEvent


def test_an_event_interval_keeps_its_float32_value_in_its_shortest_decimal(rng):
    for drawn in rng.uniform(1e-3, 1e3, 500).astype(np.float32):
        from_driver = float(drawn)  # what the driver hands over: a float32 widened to a Python float
        kept = event_ms(from_driver)
        assert np.float32(kept) == drawn
        assert len(repr(kept)) <= len(repr(from_driver)) and len(repr(kept)) <= 14


def test_the_event_clock_reports_the_shortest_decimal_of_the_drivers_float32():
    class Event(FakeEvent):
        elapsed_ms = float(np.float32(0.017504))  # 0.017503999173641205

    class Driver:
        Error = RuntimeError

    driver = Driver()
    driver.Event = Event
    clock = EventClock(driver, "a test")
    clock.start()
    assert clock.stop() == 0.017504
