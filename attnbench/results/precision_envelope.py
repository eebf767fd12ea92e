"""The accuracy envelope of a reduced-precision unit: the largest error its roundings can put on one output
element, from the input's value ranges, so a variant refuses an input whose ranges put the check's tolerance
out of its reach before any launch, and a check that fails by a rounding-sized amount says so.

A unit declares what its arithmetic rounds beyond float32 (`Rounding`, data on its `ComputeUnit`). For one output
row O = sum_j w_j V_j, with weights w_j = P_j / l and P_j = exp(s_j - m) in (0, 1], each rounding moves O by at
most (first order; products of two roundings are below float32's own noise):
- V rounded to the format: each V_j by at most half the format's spacing at |V_j|, so a convex combination of
  them by at most half the spacing at max |V| (`values`);
- P rounded to the format: each P_j by at most `weights_relative` * P_j in the format's normal range, so O by at
  most `weights_relative` * max |V| (`weights`);
- the scores: each product q_c k_c of Q K^T by at most `scores_relative` |q_c k_c| + `scores_absolute`
  (|q_c| + |k_c|), a score s_j = sum_c q_c k_c / sqrt(d) by ds = sqrt(d) (that at max |Q|, max |K|); each weight
  then by a factor within exp(+-2 ds), so O by at most (exp(2 ds) - 1) max |V| (`scores`);
- weights below the format's normal range (P_j < 2^-14 in FP16), rounded to an absolute spacing: at most
  N * weights_absolute / (1 + N * weights_absolute) * max |V| (`tail`).

The refusal holds V's and P's terms to the tolerance (`representation`): a row whose weight sits on a few keys
(large scores; the usual case in attention) meets them nearly in full, whatever the kernel does, so an input
whose ranges make them exceed the tolerance is out of reach. The scores' and the tail's worst cases need every
product of a row at the ends of the ranges with rounding errors of one sign, or thousands of tiny weights each
rounded toward its V_j's sign; real rounding errors cancel like a random walk (Q scaled by 30, |Q| up to 90:
the scores' worst case is 9.4e-3, and wgmma16s is tested to stay within 2.5e-3 there), so refusing on them would refuse inputs the
kernel passes. They count in `full`, the bound a failed check's error is held to before it is called a
rounding error rather than a launch that did not compute.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnbench.cases.fresh_values import InputRange

TENSOR_NAMES = ("Q", "K", "V")


@dataclass(frozen=True)
class Rounding:
    """What a unit's arithmetic rounds beyond float32, as data (its products' formats and their roundings)."""

    name: str  # the format, as a sentence says it: "FP16"
    value_format: str  # numpy's name of the format V and P are rounded to: its spacing and its largest value
    weights_relative: float  # P rounded to the format in its normal range: relative, half an ulp
    weights_absolute: float  # P below the format's normal range: absolute, half the subnormal spacing
    scores_relative: float  # per product of Q K^T, relative to |q k|
    scores_absolute: float  # per product of Q K^T, per unit of |q| + |k| (a low part below the normal range)

    @property
    def largest(self) -> float:
        """The format's largest finite value: Q, K or V beyond it cannot be held at all."""
        return float(np.finfo(np.dtype(self.value_format)).max)

    def half_spacing(self, magnitude: float) -> float:
        """Half the format's spacing at `magnitude` (rounded to the format first): the most a value of at most
        that magnitude moves when rounded to the format."""
        held = np.dtype(self.value_format).type(magnitude)
        return float(np.spacing(abs(held))) / 2


@dataclass(frozen=True)
class ErrorBound:
    """The most a unit's roundings move one output element on an input of these ranges, term by term."""

    rounding: Rounding
    largest: tuple[float, float, float]  # max |Q|, |K|, |V|
    values: float  # V's rounding
    weights: float  # P's rounding (weights in the format's normal range)
    scores: float  # the scores' rounding, through the softmax
    tail: float  # weights below the format's normal range

    @property
    def beyond_format(self) -> str | None:
        """The first tensor whose values the format cannot hold at all, or None."""
        for name, value in zip(TENSOR_NAMES, self.largest):
            if value > self.rounding.largest:
                return name
        return None

    @property
    def representation(self) -> float:
        """V's and P's roundings: what a refusal holds to the tolerance (infinite when the format cannot hold a
        value)."""
        return math.inf if self.beyond_format else self.values + self.weights

    @property
    def full(self) -> float:
        """Every rounding at its worst, the scores' and the tail's too: what a failed check's error is held to."""
        return self.representation + self.scores + self.tail

    def reason(self) -> str:
        """'|V| up to 1000 gives FP16 rounding errors up to 0.74 per element (V 0.25, P 0.49)'."""
        name = self.rounding.name
        beyond = self.beyond_format
        if beyond is not None:
            value = self.largest[TENSOR_NAMES.index(beyond)]
            return f"|{beyond}| up to {value:.4g} is beyond {name}'s largest value {self.rounding.largest:g}"
        v = self.largest[2]
        return (f"|V| up to {v:.4g} gives {name} rounding errors up to {self.representation:.2g} per element "
                f"(V {self.values:.2g}, P {self.weights:.2g})")


    def explains(self, error: float) -> bool:
        """Whether an element off by `error` is within what these roundings can do (the tail counted in)."""
        return error <= self.full

    def explanation(self) -> str:
        """'FP16's rounding of V, P and the scores explains: up to 0.0051 per element on this input (|Q|, |K|,
        |V| up to 3, 3, 5)'."""
        q, k, v = self.largest
        return (f"{self.rounding.name}'s rounding of V, P and the scores explains: up to {self.full:.2g} per "
                f"element on this input (|Q|, |K|, |V| up to {q:.4g}, {k:.4g}, {v:.4g})")


def largest_magnitudes(ranges: InputRange) -> tuple[float, float, float]:
    """max |Q|, |K|, |V| of an input's ranges."""
    return tuple(max(abs(low), abs(high)) for low, high in zip(ranges.low, ranges.high))  # type: ignore[return-value]


def _grown(exponent: float) -> float:
    """exp(x) - 1, infinite past float64's range (scores that large are beyond every format anyway)."""
    return math.expm1(exponent) if exponent < 700 else math.inf


def error_bound(rounding: Rounding, ranges: InputRange, N: int, d: int) -> ErrorBound:
    """The bound of the module's note for an input of these ranges and of sequence length N, head dim d."""
    q, k, v = largest_magnitudes(ranges)
    score_error = math.sqrt(d) * (rounding.scores_relative * q * k + rounding.scores_absolute * (q + k))
    tail_weight = N * rounding.weights_absolute
    return ErrorBound(rounding, (q, k, v), rounding.half_spacing(v) if v <= rounding.largest else math.inf,
                      rounding.weights_relative * v, _grown(2 * score_error) * v if v else 0.0,
                      tail_weight / (1 + tail_weight) * v)


# Split FP16 for Q K^T (hi = fp16(x), lo = fp16(x - hi); hi*hi + hi*lo + lo*hi, FP32 sums) and FP16 for P V:
# x - hi - lo is at most 2^-11 |x - hi| <= 2^-22 |x| per operand, and the dropped lo*lo at most 2^-22 |q k|:
# 3 * 2^-22 per product; a low part below FP16's normal range (|x - hi| < 2^-14) is off by at most half the
# subnormal spacing, 2^-25, per operand. P and V: half an FP16 ulp, 2^-11 relative; P below 2^-14: 2^-25.
SPLIT_FP16_WITH_FP16_PV = Rounding("FP16", "float16", weights_relative=2.0**-11, weights_absolute=2.0**-25,
                                   scores_relative=3 * 2.0**-22, scores_absolute=2.0**-25)
