"""A whole program's kernel time: the launches its kernel-records collector wrote (cuda/kernel_records.cpp),
read and summed. Pure data: recording them is `attnbench.backends.kernel_records`.

The kernel time is the GPU's busy span: the union of every launch's [start, end), so kernels that overlap
(on several streams) count once; the plain sum of the launches is kept beside it. The records come from
inside the program's own process, which could write anything there: every figure says its source, and no
default ranking rests on them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from attnbench.printable import printable

RECORDS_HEADER = "attnbench-kernel-records 1"
CUPTI_SOURCE = ("CUPTI activity records (every kernel launch's GPU start and end), gathered in an untimed run "
                "inside the program's own process, which could forge them")
TOP_KERNELS = 8  # the kernels a saved result names (the rest are summed into the totals only)
_NAME_CHARS = 300


class KernelRecordsError(ValueError):
    """The records file is not one the collector writes (or was cut short): the reason, one line."""


@dataclass(frozen=True)
class KernelSummary:
    """One kernel (by name): how many launches, and their GPU time summed."""

    name: str
    launches: int
    total_s: float

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "launches": self.launches, "total_s": self.total_s}


@dataclass(frozen=True)
class KernelTime:
    """Every launch of one run of a program, summed: the busy span (overlaps once), the plain sum, the
    launches, each kernel's share (most time first), and the records CUPTI reported lost."""

    busy_s: float
    total_s: float
    launches: int
    kernels: tuple[KernelSummary, ...]
    dropped: int = 0
    source: str = CUPTI_SOURCE

    def tflops(self, flops: float) -> float | None:
        """TFLOP/s of `flops` over the busy span; None without a kernel."""
        return flops / self.busy_s / 1e12 if self.busy_s > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {"busy_s": self.busy_s, "total_s": self.total_s, "launches": self.launches,
                "kernels": [k.to_dict() for k in self.kernels[:TOP_KERNELS]],
                "kernels_named": min(len(self.kernels), TOP_KERNELS), "kernels_in_all": len(self.kernels),
                "dropped": self.dropped, "source": self.source}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KernelTime:
        kernels = tuple(KernelSummary(str(k["name"]), int(k["launches"]), float(k["total_s"]))
                        for k in data.get("kernels", []))
        return cls(float(data["busy_s"]), float(data["total_s"]), int(data["launches"]), kernels,
                   int(data.get("dropped", 0)), str(data.get("source", CUPTI_SOURCE)))


@dataclass(frozen=True)
class KernelRecording:
    """What one recording run gave: the kernel time, or the one line that says why there is none."""

    time: KernelTime | None
    why: str = ""

    def to_extra(self, flops: float) -> dict[str, Any]:
        """What a saved cell or entry keeps: {"kernel": ..., with TFLOP/s of `flops`} or {"kernel_note": why}."""
        if self.time is None:
            return {"kernel_note": self.why}
        return {"kernel": {**self.time.to_dict(), "tflops": self.time.tflops(flops)}}


def busy_span_ns(intervals: list[tuple[int, int]]) -> int:
    """The length of the union of [start, end) intervals: overlapping launches count once."""
    covered, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start >= reach:
            covered += end - start
            reach = end
        elif end > reach:
            covered += end - reach
            reach = end
    return covered


_LARGEST = (1 << 63) - 1  # the collector writes uint64 nanoseconds and counts; CUPTI's clock fits in int64
_LONGEST_NS = 86_400 * 10**9  # a launch, or the file's whole span, over a day is no run the judge waited for


def _whole(word: str) -> int:
    """A record's number: a whole number from 0 to 2^63 - 1, else ValueError (a program can write the file: a
    4000-digit number would pass int() and overflow every sum taken in floats)."""
    if not (0 < len(word) <= 19 and word.isascii() and word.isdigit()):
        raise ValueError(word)
    value = int(word)
    if value > _LARGEST:
        raise ValueError(word)
    return value


def parse_records(text: str) -> KernelTime:
    """The collector's file as a KernelTime; KernelRecordsError naming the first thing that is wrong."""
    lines = text.splitlines()
    if not lines or lines[0] != RECORDS_HEADER:
        raise KernelRecordsError("not a kernel-records file (its first line is not the collector's)")
    intervals: list[tuple[int, int]] = []
    per_name: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    dropped, ended = 0, None
    for number, line in enumerate(lines[1:], start=2):
        if ended is not None:
            raise KernelRecordsError(f"line {number}: records after the end line")
        words = line.split(" ", 11)
        try:
            if words[0] == "kernel" and len(words) == 12:
                start, end = _whole(words[1]), _whole(words[2])
                for word in words[3:11]:  # grid, block, device, stream, ...: whole numbers
                    _whole(word)
                if end < start:
                    raise KernelRecordsError(f"line {number}: a launch that ends before it starts")
                if end - start > _LONGEST_NS:
                    raise KernelRecordsError(f"line {number}: a launch that lasts more than a day")
                intervals.append((start, end))
                name = printable(words[11][:_NAME_CHARS])
                per_name[name][0] += 1
                per_name[name][1] += end - start
            elif words[0] == "dropped" and len(words) == 2:
                dropped += _whole(words[1])
            elif words[0] == "end" and len(words) == 2:
                ended = _whole(words[1])
            else:
                raise KernelRecordsError(f"line {number}: not a record the collector writes")
        except ValueError as exc:
            if isinstance(exc, KernelRecordsError):
                raise
            raise KernelRecordsError(f"line {number}: a number that is not a whole number from 0 to 2^63 - 1") from None
    if ended is None:
        raise KernelRecordsError("the records were cut short (no end line: the program ended without running its "
                                 "exit handlers, by _exit, a signal or its timeout)")
    if ended != len(intervals):
        raise KernelRecordsError(f"the end line counts {ended} launches, the file holds {len(intervals)}")
    if intervals and max(e for _, e in intervals) - min(s for s, _ in intervals) > _LONGEST_NS:
        raise KernelRecordsError("its launches span more than a day")
    kernels = sorted((KernelSummary(name, count, ns / 1e9) for name, (count, ns) in per_name.items()),
                     key=lambda k: (-k.total_s, k.name))
    return KernelTime(busy_span_ns(intervals) / 1e9, sum(e - s for s, e in intervals) / 1e9, len(intervals),
                      tuple(kernels), dropped)


def kernel_time_of(extra: dict[str, Any] | None) -> KernelTime | None:
    """The kernel time a saved cell or entry carries, or None."""
    data = (extra or {}).get("kernel")
    if not isinstance(data, dict):
        return None
    try:
        return KernelTime.from_dict(data)
    except (KeyError, TypeError, ValueError):
        return None


def kernel_ms_text(time: KernelTime) -> str:
    """'1.234 ms in 3 launches'."""
    ms = 1e3 * time.busy_s
    figure = f"{ms:.1f}" if ms >= 100 else f"{ms:.3f}" if ms >= 1 else f"{ms:.4f}"
    return f"{figure} ms in {time.launches} launch{'es' if time.launches != 1 else ''}"
