"""attnbench.bench.sm_clock: the clock per sample, kept only when NVML answered for every sample."""

from __future__ import annotations

from attnbench.bench.sm_clock import SmClockRecorder
from attnbench.results.stats import KernelStats


class Reads:
    def __init__(self, *values):
        self.values = list(values)

    def sm_clock_mhz(self):
        return self.values.pop(0)

    def throttle_reasons(self):
        return ["software power cap"]


def test_one_clock_per_sample_with_the_throttle_reasons():
    recorder = SmClockRecorder(Reads(1980.0, 1755.0))
    recorder(1.0)
    recorder(1.1)
    stats = recorder.attach(KernelStats([1.0, 1.1]))
    assert stats.clocks_mhz == [1980.0, 1755.0] and stats.throttle_reasons == ("software power cap",)


def test_a_read_nvml_cannot_answer_leaves_the_clock_unknown():
    recorder = SmClockRecorder(Reads(1980.0, None, 1755.0))
    for sample in (1.0, 1.1, 1.2):
        recorder(sample)
    assert recorder.attach(KernelStats([1.0, 1.1, 1.2])).clocks_mhz is None


def test_no_gpu_or_a_count_mismatch_keeps_nothing():
    assert SmClockRecorder(None).attach(KernelStats([1.0])).clocks_mhz is None
    recorder = SmClockRecorder(Reads(1980.0))
    recorder(1.0)
    assert recorder.attach(KernelStats([1.0, 2.0])).clocks_mhz is None  # samples it did not see
