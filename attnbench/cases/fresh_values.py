"""Fresh inputs for the timed samples: a new seed from the OS's entropy per sample, and the values it gives.

Element e of tensor t (Q 0, K 1, V 2; e counts over all items, b*N*d + i*d + c) for seed s is a pure function
of (s, t, e): SplitMix64's output function of the counter (tensor_seed(s, t) + (e + 1) * 0x9E3779B97F4A7C15),
its top 24 bits a uniform u in [0, 1), the value low + span*u in float32. The device makes the same values in
our generator kernel (cuda/fresh_samples.cu, `fresh_value`), and can make them again from the seed alone, after
the kernel under test ran, so no kernel can change the input its output is checked against. This module is the
host's copy of that function (the cpu variant's inputs, and the tests of the device's), in numpy.

The range of each tensor is the case's: the smallest and largest finite value of that tensor in the case's own
input (the suite's cases are uniform in [-3, 3); a user's file keeps its own per-tensor range). It is taken from
the input on the host before any kernel ran, never from device buffers a kernel under test could have written
(a kernel that shrank its input's range to near zero could then answer every fresh sample with zeros). A range
that cannot give varied values (one value, past float32's resolution, too narrow for the check's tolerance, or so
wide that float32 attention overflows) is made one that does (`varied_bounds`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from attnbench.cases.testcase import HEADER, Shape, Testcase
from attnbench.errors import InputNotFinite

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
TENSORS = ("Q", "K", "V")


def mix64(z: int) -> int:
    """SplitMix64's output function on a Python int (mod 2^64)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def draw_seed(entropy=os.urandom) -> int:
    """A new 64-bit seed from the operating system's entropy (never the suite's seed)."""
    return int.from_bytes(entropy(8), "little")


def tensor_seed(seed: int, tensor: int) -> int:
    """The seed of one tensor (0 Q, 1 K, 2 V) of a sample's input."""
    return mix64((seed + (tensor + 1) * GOLDEN) & MASK64)


def fresh_values(seed: int, tensor: int, start: int, count: int, low: float, span: float) -> np.ndarray:
    """Elements [start, start + count) of `tensor` for `seed`, float32 (the device's values, up to the last bit of
    a rare double rounding: the device rounds low + span*u once, with an FMA)."""
    return stream_values(tensor_seed(seed, tensor), start, count, low, span)


def stream_values(stream: int, start: int, count: int, low: float, span: float) -> np.ndarray:
    """Elements [start, start + count) of the stream of one tensor's seed (`tensor_seed`), as the device's
    `fill_fresh` makes them from that seed."""
    counter = np.arange(start + 1, start + count + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(stream) + counter * np.uint64(GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    unit = (z >> np.uint64(40)).astype(np.float64) * 2.0**-24
    return (np.float64(np.float32(span)) * unit + np.float64(np.float32(low))).astype(np.float32)


@dataclass(frozen=True)
class InputRange:
    """Each tensor's smallest and largest finite value (Q, K, V), and how many of its values are NaN or Inf."""

    low: tuple[float, float, float]
    high: tuple[float, float, float]
    nonfinite: tuple[int, int, int] = (0, 0, 0)

    def bounds(self, tensor: int) -> tuple[float, float]:
        """(low, span) of the fresh values of `tensor`, in float64: its range, made one whose values vary
        (`varied_bounds`)."""
        return varied_bounds(self.low[tensor], self.high[tensor])

    def require_finite(self, label: str) -> None:
        """An input holding NaN or Inf is the input's fault, not the variant's: one sentence, exit 2."""
        bad = [f"{count} in {name}" for name, count in zip(TENSORS, self.nonfinite) if count]
        if bad:
            raise InputNotFinite(f"{label}: the input holds NaN or Inf values ({', '.join(bad)}): every output of it "
                                "would be NaN, whatever the variant; fix the input")

    @classmethod
    def of(cls, q: np.ndarray, k: np.ndarray, v: np.ndarray) -> "InputRange":
        """The range of host arrays (B, N, d each, or any views of them), a group of items at a time."""
        return cls.of_qkv(lambda b0, b1: (q[b0:b1], k[b0:b1], v[b0:b1]), q.shape[0], q[0].size if len(q) else 1)

    @classmethod
    def of_qkv(cls, items, B: int, per_item: int) -> "InputRange":
        """The range of B items that `items(b0, b1)` gives as (Q, K, V) arrays, RANGE_GROUP floats at a time."""
        lows, highs, bad = [np.inf] * 3, [-np.inf] * 3, [0] * 3
        group = max(1, RANGE_GROUP // max(1, per_item))
        for b0 in range(0, B, group):
            for t, x in enumerate(items(b0, min(B, b0 + group))):
                x = np.asarray(x)
                finite = np.isfinite(x)
                count = int(x.size - np.count_nonzero(finite))
                values = x[finite] if count else x
                if values.size:
                    lows[t], highs[t] = min(lows[t], float(values.min())), max(highs[t], float(values.max()))
                bad[t] += count
        lows = [low if np.isfinite(low) else 0.0 for low in lows]
        highs = [high if np.isfinite(high) else 0.0 for high in highs]
        return cls(tuple(lows), tuple(highs), tuple(bad))  # type: ignore[arg-type]


# The largest magnitude of a fresh value: d * FRESH_LIMIT^2 (a score) and N * FRESH_LIMIT (a sum of V's rows) stay
# far below float32's 3.4e38 for any d and N below 2^40, so an honest float32 pass on a fresh input is finite.
FRESH_LIMIT = 2.0**40
# The least half-width of a fresh range: 1 (the suite's ranges are 3), or 1/64 of its middle's magnitude (2^17
# float32 steps). A narrower range gives inputs whose answer a kernel can guess within the check's tolerance
# (V within 5e-3 of one value, or Q or K so small that every weight is the same), or, past float32's
# resolution, one constant tensor.
LEAST_HALF_WIDTH = 1.0
LEAST_RELATIVE_HALF_WIDTH = 2.0**-6


def varied_bounds(low: float, high: float) -> tuple[float, float]:
    """(low, span) of fresh values made from a tensor's range [low, high], in float64 (float32's high - low can
    overflow): clamped to +-FRESH_LIMIT (an infinite bound too), then widened about its middle to at least the
    least half-width. A NaN bound is taken as 0 (an input holding NaN is refused before: `require_finite`)."""
    low, high = (0.0 if math.isnan(x) else min(max(float(x), -FRESH_LIMIT), FRESH_LIMIT) for x in (low, high))
    low, high = min(low, high), max(low, high)
    middle, half = (low + high) / 2, (high - low) / 2
    half = max(half, LEAST_HALF_WIDTH, abs(middle) * LEAST_RELATIVE_HALF_WIDTH)
    low, high = max(middle - half, -FRESH_LIMIT), min(middle + half, FRESH_LIMIT)
    return low, high - low


RANGE_GROUP = 1 << 24  # floats of one tensor looked at at once when taking a range
SUITE_RANGE = InputRange((-3.0, -3.0, -3.0), (3.0, 3.0, 3.0))  # the suite's and the sweeps' values: uniform in [-3, 3)


def file_range(path, shape) -> InputRange:
    """The range of a course input file, read through a map of it (the host never holds it whole)."""
    qkv = np.memmap(path, dtype="<f4", mode="r", offset=HEADER.size, shape=(shape.B, 3, shape.N, shape.d))
    return InputRange.of_qkv(lambda b0, b1: (qkv[b0:b1, 0], qkv[b0:b1, 1], qkv[b0:b1, 2]), shape.B,
                             shape.N * shape.d)


def fresh_testcase(shape: Shape, ranges: InputRange, seed: int) -> Testcase:
    """A whole input of `shape` with fresh values in each tensor's range (`InputRange.bounds`), drawn on the host
    from the same streams as the device's fill: for a whole program, which reads its input from a file."""
    B, N, d = shape.B, shape.N, shape.d
    qkv = np.empty((B, 3, N, d), dtype=np.float32)
    per_item = N * d
    for tensor in range(3):
        low, span = ranges.bounds(tensor)
        for item in range(B):  # an item at a time: the generator's temporaries stay small
            qkv[item, tensor] = fresh_values(seed, tensor, item * per_item, per_item, low, span).reshape(N, d)
    return Testcase(qkv)
