"""A warning about a measurement, as a record: what kind it is, what was seen, and what to do about it.

Warnings are rendered last (`sentence`); tables group them by their fields and nobody parses the
sentence back. Each kind's producer supplies its remedy (the sampler, the clock rules, the verified
passes). Files saved before warnings were records hold sentences: they load as the generic kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


class WarningKind(str, Enum):
    """What a warning is about."""

    NOISE = "noise"  # the noise stayed above the target when sampling stopped
    FEW_SAMPLES = "few_samples"  # too few samples to know the noise
    CLOCK_SHIFT = "clock_shift"  # the SM clock moved the median beyond its noise
    CLOCK_DISAGREEMENT = "clock_disagreement"  # the wall clock saw more than the CUDA events timed
    NONDETERMINISTIC = "nondeterministic"  # one input launched twice gave different bits
    PROCESS_TIME = "process_time"  # a whole program's time is the process's, not a kernel's
    GENERIC = "generic"  # a sentence from a file saved before warnings were records


@dataclass(frozen=True)
class RunWarning:
    """One warning: `text` says what was seen, `remedy` what to do ("" when there is nothing to do)."""

    kind: WarningKind
    text: str
    remedy: str = ""

    def sentence(self) -> str:
        """What was seen, then its remedy, in one line."""
        return f"{self.text}: {self.remedy}" if self.remedy else self.text

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind.value, "text": self.text, "remedy": self.remedy}

    @classmethod
    def from_saved(cls, data: str | dict[str, Any]) -> RunWarning:
        """A warning as saved: a record, or a sentence from a file older than schema version 4."""
        if isinstance(data, str):
            return cls(WarningKind.GENERIC, data)
        return cls(WarningKind(data["kind"]), data["text"], data.get("remedy", ""))
