"""Sweep inputs: the square-attention lab's 102 sizes, and sweeps over N or d of the (B, N, d) workload.

The square sizes are suite cases (sqN) where the suite has them, so their float64 references are
stored after the first run; other sizes are seeded synthetic inputs.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from attnbench.cases import suite
from attnbench.cases.inputs import BenchInput, SuiteInput, SyntheticInput
from attnbench.cases.testcase import Shape
from attnbench.errors import HostMemoryError

# The lab's sizes: c-1, c, c+1 for c = 64, 128, ..., 2048, then 4095..4097 and 8191..8193.
SQUARE_SIZES: tuple[int, ...] = tuple(n for c in range(64, 2049, 64) for n in (c - 1, c, c + 1)) + (
    4095, 4096, 4097, 8191, 8192, 8193,
)
# Sweeps over N or d keep B*N*d near this (16 Mi elements per tensor, 192 MiB of input) unless --batch.
SWEEP_ELEMENTS = 1 << 24
INT32_MAX = (1 << 31) - 1


def _refuse_beyond_host_memory(shape: Shape) -> None:
    """A sweep point whose input and output alone exceed this machine's memory is refused before any point runs
    (numpy's allocation failed with a traceback after the points before it had run)."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return
    needed = shape.input_bytes + shape.output_bytes
    if needed > memory:
        raise HostMemoryError(f"{shape}: its input and output alone take {needed / 1e9:,.1f} GB, but this machine "
                              f"has {memory / 1e9:,.1f} GB of memory; give smaller sizes")


@dataclass(frozen=True)
class SweepAxis:
    """One size a sweep can vary: the command's words for it, the name results save, the plots' label."""

    name: str  # as saved in a sweep's settings ("sweep": "N") and named on the command line
    aliases: tuple[str, ...]  # other words the command line takes for it (any case)
    plot_label: str  # the size the plots put on their x axis
    default_values: str | None  # --values when not given (None: the square lab's sizes, chosen by --sizes)


SWEEP_AXES: tuple[SweepAxis, ...] = (
    SweepAxis("square", (), "n", None),
    SweepAxis("N", ("n", "seq"), "N", "128..32768"),
    SweepAxis("d", ("head-dim",), "d", "16,32,48,64,80,96,128"),
)
SWEEP_AXIS_WORDS: tuple[str, ...] = tuple(word for axis in SWEEP_AXES for word in (axis.name, *axis.aliases))


def sweep_axis(word: str) -> SweepAxis:
    """The axis a word names (its name or an alias, in any case); a ValueError naming the words otherwise."""
    for axis in SWEEP_AXES:
        if word.lower() in (axis.name.lower(), *axis.aliases):
            return axis
    raise ValueError(f"{word!r} is not a sweep axis: {', '.join(SWEEP_AXIS_WORDS)}")


# -- inputs -------------------------------------------------------------------------------------------
def _seed_for(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def _integer(text: str, option: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{option} {text.strip()!r}: not a whole number") from None


def parse_sizes(text: str | None) -> list[int]:
    """Square sizes: 'all' (the lab's 102), a comma list, and 'a-b' for the lab's sizes within [a, b].
    Errors name --sizes; a selection of no size at all is one."""
    if text is None or text.strip() == "all":
        return list(SQUARE_SIZES)
    if not text.strip():  # an empty option is a mistake, not a wish for all 102 sizes
        raise ValueError(f"--sizes {text!r}: give all, a comma list or a-b")
    sizes: list[int] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if "-" in part:
            low, high = (_integer(x, "--sizes") for x in part.split("-", 1))
            within = [n for n in SQUARE_SIZES if low <= n <= high]
            if not within:
                raise ValueError(f"--sizes {part!r}: none of the lab's sizes is within [{low}, {high}] "
                                 f"(they run from {SQUARE_SIZES[0]} to {SQUARE_SIZES[-1]})")
            sizes.extend(within)
        else:
            sizes.append(_integer(part, "--sizes"))
    if not sizes or any(n < 1 for n in sizes):
        raise ValueError(f"--sizes {text!r}: square sizes must be positive whole numbers")
    return list(dict.fromkeys(sizes))


def square_inputs(sizes: list[int]) -> list[BenchInput]:
    """The lab's n x n cases: suite cases sqN where the suite has them (in memory when not on disk)."""
    found: list[BenchInput] = []
    for n in sizes:
        name = f"sq{n}"
        if name in suite.SUITE:
            found.append(SuiteInput(suite.SUITE[name], in_memory=True))
        else:
            found.append(SyntheticInput(Shape(1, n, n), _seed_for(f"square {n}"), name))
    return found


def parse_values(text: str) -> list[int]:
    """Sweep values: a comma list, and 'a..b' for the powers-of-two doubling from a up to b."""
    values: list[int] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if ".." in part:
            low, high = (_integer(x, "--values") for x in part.split("..", 1))
            if low < 1 or high < low:
                raise ValueError(f"--values {part!r}: write low..high with 1 <= low <= high")
            v = low
            while v <= high:
                values.append(v)
                v *= 2
        else:
            values.append(_integer(part, "--values"))
    if not values or any(v < 1 for v in values):
        raise ValueError(f"--values {text!r}: sweep values must be positive whole numbers")
    return list(dict.fromkeys(values))


def shape_inputs(axis: str, values: list[int], batch: int | None, seq_len: int, head_dim: int) -> list[BenchInput]:
    """Synthetic (B, N, d) inputs along N or d; B keeps B*N*d near 16 Mi elements unless given."""
    for name, size in (("batch", batch), ("seq_len", seq_len), ("head_dim", head_dim)):
        # the command line's options hold these >= 1; from Python seq_len=0 was a ZeroDivisionError, batch=0 a
        # traceback when the input was made, and head_dim=-1 a sweep of nothing
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
            raise ValueError(f"{name}={size!r}: B, N and d are whole numbers >= 1")
    found: list[BenchInput] = []
    for value in values:
        N, d = (value, head_dim) if axis == "N" else (seq_len, value)
        B = batch if batch is not None else max(1, SWEEP_ELEMENTS // (N * d))
        shape = Shape(B, N, d)
        for name, size in (("B", B), ("N", N), ("d", d)):
            if size > INT32_MAX:
                raise ValueError(f"{name}={size}: the course format's int32 header holds at most {INT32_MAX}")
        _refuse_beyond_host_memory(shape)
        found.append(SyntheticInput(shape, _seed_for(f"sweep {shape}")))
    return found


