"""A testcase's shape and the course input's 12-byte header (int32 B, N, d), read and checked without numpy: the
sandbox and a class's build workers need the shape alone, and each worker process starts Python afresh."""

from __future__ import annotations

import os
import re
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

from attnbench.errors import TestcaseError

HEADER = struct.Struct("<iii")
FLOAT_BYTES = 4
INT32_MAX = 2**31 - 1  # the largest B, N or d the header holds
# The course publishes B*N*d < 56,000,000; its own t22 breaks that, so it is a warning only.
PUBLISHED_ELEMENT_BOUND = 56_000_000
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class Shape:
    """Batch size, sequence length and head dimension of one attention problem."""

    B: int
    N: int
    d: int

    @property
    def elements(self) -> int:
        """Elements in one of Q, K, V or O over the whole batch."""
        return self.B * self.N * self.d

    @property
    def flops(self) -> int:
        """FLOPs as the course and the reports count them: 4*B*N*N*d."""
        return 4 * self.B * self.N * self.N * self.d

    @property
    def input_bytes(self) -> int:
        return HEADER.size + 3 * FLOAT_BYTES * self.elements

    @property
    def output_bytes(self) -> int:
        return FLOAT_BYTES * self.elements

    def __str__(self) -> str:
        return f"B={self.B}, N={self.N}, d={self.d}"

    @classmethod
    def parse(cls, text: str) -> Shape:
        """The one reader of a shape typed by a person: `B,N,d` or `BxNxd` (4,32768,32 or 4x32768x32),
        each at least 1; a ValueError in one sentence otherwise."""
        parts = re.split(r"\s*[,xX]\s*", text.strip())
        if len(parts) != 3 or not all(part.isdigit() for part in parts):
            raise ValueError(f"{text!r} is not B,N,d or BxNxd (three whole numbers)")
        shape = cls(*(int(part) for part in parts))
        if min(shape.B, shape.N, shape.d) < 1:
            raise ValueError(f"{text!r}: B, N and d must be at least 1")
        if max(shape.B, shape.N, shape.d) > INT32_MAX:  # N=99999999999 was described, passed to an int N
            raise ValueError(f"{text!r}: B, N and d are int32 in a testcase's header (at most {INT32_MAX})")
        return shape


def check_shape(shape: Shape, source: str) -> None:
    """Refuse dimensions no testcase can have; `source` names the file in the message."""
    for name, value in (("B", shape.B), ("N", shape.N), ("d", shape.d)):
        if value <= 0:
            raise TestcaseError(f"{source}: header has {name}={value}; B, N and d must be positive")
    if 12 * shape.elements + HEADER.size > _INT64_MAX:
        raise TestcaseError(
            f"{source}: header dimensions B={shape.B}, N={shape.N}, d={shape.d} overflow: "
            f"12*B*N*d does not fit in 64 bits"
        )


def refuse_a_stream(path: Path) -> None:
    """A pipe (`run <(gen) out.bin`) or a device has no size and can be read only once, and a file is read by its
    size and more than once (header, then data): the second read of a pipe took data bytes for the header ("header
    has B=-1079888360"), and its size of 0 was called the file's. Said as what it is instead."""
    try:
        mode = os.stat(path).st_mode
    except OSError:  # missing, or not reachable: the reader's own open says so, naming the path
        return
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        raise TestcaseError(f"{path}: is a pipe, not a file: it has no size and can be read only once; save it to a "
                            "file and give that")
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        raise TestcaseError(f"{path}: is a device, not a file; give a file")


def read_shape(path: str | os.PathLike) -> Shape:
    """Read and check only the header of a course input file."""
    path = Path(path)
    refuse_a_stream(path)
    try:
        with open(path, "rb") as f:
            head = f.read(HEADER.size)
    except FileNotFoundError:
        raise TestcaseError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TestcaseError(f"{path}: is a directory, expected a testcase file") from None
    except PermissionError:
        raise TestcaseError(f"{path}: permission denied") from None
    if len(head) < HEADER.size:
        raise TestcaseError(f"{path}: {len(head)} bytes is too short for the 12-byte header (int32 B, N, d)")
    shape = Shape(*HEADER.unpack(head))
    check_shape(shape, str(path))
    return shape
