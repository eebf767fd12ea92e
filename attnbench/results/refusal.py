"""Why a variant does not run a cell, as a record: which variant, what kind of limit, the limit, the value.

A refusal is rendered last (`sentence`); tables group refusals by their fields, never by the words.
A refusal about the case (its d or N) differs from case to case only in its value, so cells group by
the requirement; one about the GPU has the same value for every case of a run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Union

Limit = Union[int, float, str, tuple[Union[int, None], ...]]


class RefusalKind(str, Enum):
    """What a variant needs that the cell does not have."""

    HEAD_DIMS = "head_dims"  # d one of a set; limit: the allowed values
    HEAD_DIM_RANGE = "head_dim_range"  # d in a range; limit: (lowest, highest or None)
    MAX_SEQ_LEN = "max_seq_len"  # limit: the largest N
    SEQ_LEN_MULTIPLE = "seq_len_multiple"  # limit: what N must be a multiple of
    ARCH = "arch"  # built for one architecture only; limit: it ("sm_90a")
    UNIT_CAPABILITY = "unit_capability"  # its unit's instructions need a GPU this new; limit: "sm_80"
    MIN_CAPABILITY = "min_capability"  # the variant needs a GPU this new; limit: "sm_80"
    # its arithmetic's error bound on the input's value ranges is above the check's tolerance; limit: the
    # tolerance (atol), value: why, in words (`precision_envelope.ErrorBound.reason`)
    PRECISION = "precision"


DEVICE_KINDS = frozenset({RefusalKind.ARCH, RefusalKind.UNIT_CAPABILITY, RefusalKind.MIN_CAPABILITY})


@dataclass(frozen=True)
class Refusal:
    """One variant refusing a shape or a GPU: `value` is the case's d or N, or the GPU's architecture."""

    variant: str
    kind: RefusalKind
    limit: Limit
    value: int | str | None
    unit: str | None = None  # UNIT_CAPABILITY: the unit whose instructions need the limit

    @property
    def about_device(self) -> bool:
        """Whether the GPU is refused (the same for every case) rather than the case's shape."""
        return self.kind in DEVICE_KINDS

    def requirement(self) -> str:
        """What the variant needs: 'bankfree needs d in {32, 64}'."""
        limit = self.limit
        if self.kind is RefusalKind.HEAD_DIMS:
            assert isinstance(limit, tuple)
            return f"{self.variant} needs d in {{{', '.join(map(str, limit))}}}"
        if self.kind is RefusalKind.HEAD_DIM_RANGE:
            assert isinstance(limit, tuple)
            lowest, highest = limit
            return f"{self.variant} needs d in [{lowest}, {'any' if highest is None else highest}]"
        if self.kind is RefusalKind.MAX_SEQ_LEN:
            return f"{self.variant} needs N <= {limit}"
        if self.kind is RefusalKind.SEQ_LEN_MULTIPLE:
            return f"{self.variant} needs N a multiple of {limit}"
        if self.kind is RefusalKind.ARCH:
            return f"{self.variant} runs on {limit} only"
        if self.kind is RefusalKind.UNIT_CAPABILITY:
            return f"{self.variant} needs {limit} or newer for its {self.unit} instructions"
        if self.kind is RefusalKind.PRECISION:
            return f"{self.variant} cannot meet {limit:g} on this input"
        return f"{self.variant} needs {limit} or newer"

    def found(self) -> str:
        """What the cell has instead: 'the case has d=48', 'this GPU is sm_61'."""
        if self.about_device:
            return f"this GPU is {self.value}"
        if self.kind is RefusalKind.PRECISION:
            return str(self.value)
        axis = "d" if self.kind in (RefusalKind.HEAD_DIMS, RefusalKind.HEAD_DIM_RANGE) else "N"
        return f"the case has {axis}={self.value}"

    def sentence(self) -> str:
        """The refusal in one line: 'bankfree needs d in {32, 64}, and the case has d=48'."""
        if self.kind is RefusalKind.PRECISION:
            return f"{self.requirement()}: {self.found()}; use a float32 variant (the default, --accuracy float32)"
        return f"{self.requirement()}, and {self.found()}"

    def group(self) -> Refusal:
        """The refusal with what differs from case to case left out: cells refused alike group under it."""
        return self if self.about_device else replace(self, value=None)

    def group_text(self) -> str:
        """How a group of cells refused alike is described: the requirement, or the whole sentence when
        the GPU is refused (its value is every case's)."""
        return self.sentence() if self.about_device else self.requirement()

    def to_dict(self) -> dict[str, Any]:
        limit = list(self.limit) if isinstance(self.limit, tuple) else self.limit
        return {"variant": self.variant, "kind": self.kind.value, "limit": limit, "value": self.value,
                "unit": self.unit}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Refusal:
        limit = data["limit"]
        return cls(data["variant"], RefusalKind(data["kind"]), tuple(limit) if isinstance(limit, list) else limit,
                   data.get("value"), data.get("unit"))
