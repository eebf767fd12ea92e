"""How passes are timed, as the user states it (`--warmup`, `--reps`, `--hot`, `--timeout`, `--noise`), and the
policy each variant gets from it: run, compare and sweep take the same options."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from attnbench.bench.sampler import TimingPolicy
from attnbench.errors import UsageError
from attnbench.kernels.variant import Variant

CPU_SAMPLING_BUDGET_S = 2.0  # the cpu variant's sampling budget unless --timeout says: several passes, not minutes
GPU_SAMPLING_BUDGET_S = 10.0
CPU_TARGET_NOISE = 0.05  # host passes jitter more than kernels; within the budget, 5% is what they can promise
MAX_PASSES = 1_000_000  # far beyond any useful sample or warm-up count; a larger one ran on without end


def _whole(name: str, value: object, least: int) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not least <= value <= MAX_PASSES):
        raise UsageError(f"{name}={value!r}: give a whole number from {least} to {MAX_PASSES:,}, or None")


def _positive(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise UsageError(f"{name}={value!r}: give a finite number > 0")


@dataclass(frozen=True)
class TimingOptions:
    """How passes are timed, as the user states it; `policy_for` turns it into a variant's policy."""

    warmup: int | None = None  # untimed passes first [GPU: 2, cpu: 0]
    reps: int | None = None  # a fixed sample count; None: sample until the noise is low
    hot: bool = False  # do not flush the L2 cache before each sample
    timeout: float | None = None  # seconds at most for adaptive sampling (None: 10 on a GPU, 2 for the cpu variant)
    noise: float = 1.0  # target relative noise, percent

    def __post_init__(self) -> None:
        # The command line's options hold these ranges; from Python, reps=0 ended in a StatisticsError traceback,
        # and timeout=-1, noise=nan or reps=1.5 were taken and sampled by no rule the docs give.
        _whole("warmup", self.warmup, 0)
        _whole("reps", self.reps, 1)
        if self.timeout is not None:
            _positive("timeout", self.timeout)
        _positive("noise", self.noise)

    def policy_for(self, variant: Variant) -> TimingPolicy:
        if variant.kind.runs_on_host:  # host passes are slow: no warm-up, a short budget (the first pass counts)
            return TimingPolicy(warmup=self.warmup or 0, reps=self.reps, flush_l2=False, min_samples=6,
                                min_time_s=0.0, timeout_s=self.timeout or CPU_SAMPLING_BUDGET_S,
                                target_noise=max(self.noise / 100, CPU_TARGET_NOISE))
        return TimingPolicy(warmup=2 if self.warmup is None else self.warmup, reps=self.reps, flush_l2=not self.hot,
                            timeout_s=self.timeout or GPU_SAMPLING_BUDGET_S, target_noise=self.noise / 100)

    def record(self) -> dict[str, Any]:
        """The GPU policy as saved results record it."""
        policy = asdict(TimingPolicy(warmup=2 if self.warmup is None else self.warmup, reps=self.reps,
                                     flush_l2=not self.hot, timeout_s=self.timeout or GPU_SAMPLING_BUDGET_S,
                                     target_noise=self.noise / 100))
        policy["host_variants"] = (f"host wall time per pass, no warm-up, every pass on a fresh input and checked; "
                                   f"until the noise is under {100 * max(self.noise / 100, CPU_TARGET_NOISE):g}% "
                                   f"after 6 passes or more, or before a pass that would not fit in "
                                   f"{self.timeout or CPU_SAMPLING_BUDGET_S:g} s (--timeout: a pass over a sixth of it "
                                   "gives fewer than 6, and an unknown noise), or --reps passes")
        policy["noise"] = "half-width of the median's 95% confidence interval, relative to the median"
        return policy
