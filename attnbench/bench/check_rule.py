"""Which check every cell of a matrix gets, as a record that pickles: the course's rule with its
tolerances, or the square lab's rule. It names the check and the tolerance every timed sample's check holds to."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

from attnbench.bench.matrix import Check, course_check
from attnbench.bench.squarelab import LAB_TOLERANCE_FACTOR, lab_check
from attnbench.bench.verify import COURSE_ATOL
from attnbench.errors import UsageError


def refuse_bad_tolerance(atol: float, rtol: float) -> None:
    """A tolerance is a finite number >= 0: from Python (the command line's options refuse them too), atol=nan
    failed every element and blamed the variant (WRONG, exit 1), and atol=-1 did the same."""
    for name, value in (("atol", atol), ("rtol", rtol)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise UsageError(f"{name}={value!r}: a tolerance must be a finite number >= 0")


@dataclass(frozen=True)
class CourseRule:
    """The course's check: every element within atol + rtol*|ref|."""

    atol: float = COURSE_ATOL
    rtol: float = 0.0

    def __post_init__(self) -> None:
        refuse_bad_tolerance(self.atol, self.rtol)

    def check(self) -> Check:
        return course_check(self.atol, self.rtol)

    @property
    def tolerance(self) -> tuple[float, float]:
        """(atol, rtol) of every timed sample's check: the check's own."""
        return (self.atol, self.rtol)

    def describe(self) -> str:
        """The rule in one line, as results save it: |out - ref| <= 0.005 per element, float64 reference."""
        relative = f" + {self.rtol:g}*|ref|" if self.rtol else ""
        return f"|out - ref| <= {self.atol:g}{relative} per element, float64 reference"


@dataclass(frozen=True)
class LabRule:
    """The square lab's check (a sum of errors against n^2 FLT_EPSILON); each timed batch's check keeps the
    course's tolerance per element."""

    def check(self) -> Check:
        return lab_check

    @property
    def tolerance(self) -> tuple[float, float]:
        return (COURSE_ATOL, 0.0)

    def describe(self) -> str:
        """The rule in one line, as results save it."""
        return f"sum |Y - Y_ref| <= {LAB_TOLERANCE_FACTOR} n^2 FLT_EPSILON (the lab's rule), float64 reference"


CheckRule = Union[CourseRule, LabRule]
