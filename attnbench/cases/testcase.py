"""The course's binary formats: testcase input (B, N, d, then Q K V per batch item) and output O.

Input, little-endian: int32 B, int32 N, int32 d, then for each batch item Q_i, K_i, V_i
(N*d float32 each, row-major). Output: B*N*d float32, no header.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from attnbench.cases.bulk_io import PARALLEL_BYTES, pread_into, write_mapped, write_repeated
from attnbench.cases.shape import (  # noqa: F401 - the formats' face: the shape and header read with the arrays
    FLOAT_BYTES,
    HEADER,
    INT32_MAX,
    PUBLISHED_ELEMENT_BOUND,
    Shape,
    check_shape,
    read_shape,
    refuse_a_stream,
)
from attnbench.errors import TestcaseError
from attnbench.files import atomic_write

_READ_CHUNK = 64 << 20


@dataclass
class Testcase:
    """One course input held as a single (B, 3, N, d) float32 array: Q, K, V of item i at [i, 0..2]."""

    qkv: np.ndarray
    path: Path | None = None

    __test__ = False  # not a pytest test class

    @property
    def shape(self) -> Shape:
        B, _, N, d = self.qkv.shape
        return Shape(B, N, d)

    @property
    def q(self) -> np.ndarray:
        return self.qkv[:, 0]

    @property
    def k(self) -> np.ndarray:
        return self.qkv[:, 1]

    @property
    def v(self) -> np.ndarray:
        return self.qkv[:, 2]

    @classmethod
    def from_arrays(cls, q: np.ndarray, k: np.ndarray, v: np.ndarray) -> "Testcase":
        """Build a testcase from three (B, N, d) arrays (copied into the interleaved layout)."""
        q, k, v = (np.asarray(a, dtype=np.float32) for a in (q, k, v))
        if q.ndim != 3 or q.shape != k.shape or q.shape != v.shape:
            raise ValueError(f"Q, K, V must share one (B, N, d) shape, got {q.shape}, {k.shape}, {v.shape}")
        return cls(np.ascontiguousarray(np.stack([q, k, v], axis=1)))


def _readinto_exact(f: BinaryIO, buffer: memoryview, path: Path, start: int = 0) -> None:
    """Fill `buffer` from `f`, which is at byte `start` of the file (the header's size for an input); a large
    buffer by several threads at once (bulk_io)."""
    done = 0
    total = len(buffer)
    if total >= PARALLEL_BYTES:
        position = f.tell()
        done = pread_into(f.fileno(), buffer, position)
        f.seek(position + done)
        if done < total:
            raise TestcaseError(f"{path}: file ended after {start + done} bytes while reading")
        return
    while done < total:
        got = f.readinto(buffer[done : done + _READ_CHUNK])
        if not got:
            raise TestcaseError(f"{path}: file ended after {start + done} bytes while reading")
        done += got


def read_checked_shape(path: str | os.PathLike) -> Shape:
    """The header of a course input file, checked against the file's exact size."""
    path = Path(path)
    shape = read_shape(path)
    found = path.stat().st_size
    if found != shape.input_bytes:
        raise TestcaseError(
            f"{path}: header says B={shape.B}, N={shape.N}, d={shape.d}, so the file should be "
            f"12 + 12*B*N*d = {shape.input_bytes} bytes, but it is {found} bytes"
        )
    return shape


def read_testcase(path: str | os.PathLike) -> Testcase:
    """Read a course input file into one array, validating header and exact size.

    The data is read straight into its final buffer, so peak memory stays near the file size.
    """
    path = Path(path)
    shape = read_checked_shape(path)
    qkv = np.empty((shape.B, 3, shape.N, shape.d), dtype="<f4")
    with open(path, "rb") as f:
        f.seek(HEADER.size)
        _readinto_exact(f, memoryview(qkv.reshape(-1)).cast("B"), path, HEADER.size)
    return Testcase(qkv, path)


def _write_array(f: BinaryIO, array: np.ndarray) -> None:
    flat = np.ascontiguousarray(array, dtype="<f4").reshape(-1)
    if write_mapped(f, flat):  # a large array, several threads at once
        return
    view = memoryview(flat).cast("B")
    for start in range(0, len(view), _READ_CHUNK):
        f.write(view[start : start + _READ_CHUNK])


def write_testcase(path: str | os.PathLike, testcase: Testcase) -> None:
    """Write a testcase in the course input format (atomically)."""
    atomic_write(path, lambda f: write_testcase_into(f, testcase))


def write_testcase_into(f: BinaryIO, testcase: Testcase) -> None:
    """A testcase in the course input format, written to an open file (one the caller makes whole or removes)."""
    shape = testcase.shape
    f.write(HEADER.pack(shape.B, shape.N, shape.d))
    _write_array(f, testcase.qkv)


def write_repeated_into(f: BinaryIO, shape: Shape, block: np.ndarray) -> None:
    """An input of `shape` in the course input format whose values are `block`'s (float32) repeated to its size,
    written to an open file without being held whole (bulk_io.write_repeated)."""
    f.write(HEADER.pack(shape.B, shape.N, shape.d))
    write_repeated(f, np.ascontiguousarray(block, dtype="<f4"), shape.input_bytes - HEADER.size)


def write_output(path: str | os.PathLike, out: np.ndarray) -> None:
    """Write O (B, N, d) float32 in the course output format (atomically)."""
    atomic_write(path, lambda f: _write_array(f, out))


def read_output(path: str | os.PathLike, shape: Shape) -> np.ndarray:
    """Read a course output file, checking its size against the testcase's shape."""
    path = Path(path)
    refuse_a_stream(path)
    try:
        found = path.stat().st_size
    except FileNotFoundError:
        raise TestcaseError(f"{path}: no such file") from None
    if found != shape.output_bytes:
        raise TestcaseError(
            f"{path}: an output for B={shape.B}, N={shape.N}, d={shape.d} should be "
            f"4*B*N*d = {shape.output_bytes} bytes, but it is {found} bytes"
        )
    out = np.empty((shape.B, shape.N, shape.d), dtype="<f4")
    with open(path, "rb") as f:
        _readinto_exact(f, memoryview(out.reshape(-1)).cast("B"), path)
    return out


class OutputFile:
    """A course output file read in chunks, never whole: comparing two large files stays in bounded memory.

    With a shape, its size must be exactly 4*B*N*d bytes; without one, any whole number of floats.
    """

    def __init__(self, path: str | os.PathLike, shape: Shape | None = None) -> None:
        self.path = Path(path)
        refuse_a_stream(self.path)
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            raise TestcaseError(f"{path}: no such file") from None
        except PermissionError:
            raise TestcaseError(f"{path}: permission denied") from None
        if self.path.is_dir():
            raise TestcaseError(f"{path}: is a directory, expected an output file")
        if shape is not None and size != shape.output_bytes:
            raise TestcaseError(
                f"{path}: an output for B={shape.B}, N={shape.N}, d={shape.d} should be "
                f"4*B*N*d = {shape.output_bytes} bytes, but it is {size} bytes"
            )
        if size % FLOAT_BYTES:
            raise TestcaseError(f"{path}: {size} bytes is not a whole number of float32 values")
        if size == 0:  # two empty files "agreed in 0 of 0 elements": a PASS for no output at all
            raise TestcaseError(f"{path}: is empty (0 bytes); an attention output holds B*N*d float32 values")
        self.shape = shape
        self.size = size // FLOAT_BYTES
        self._lock = threading.Lock()
        try:
            self._file = open(self.path, "rb")
        except PermissionError:
            raise TestcaseError(f"{path}: permission denied") from None

    def chunk(self, start: int, stop: int) -> np.ndarray:
        """Elements [start, stop) as float32 (threads may ask at once: a check reads chunks in parallel)."""
        count = max(0, min(stop, self.size) - start)
        values = np.empty(count, dtype="<f4")
        with self._lock:  # seek and read as one step
            self._file.seek(start * FLOAT_BYTES)
            _readinto_exact(self._file, memoryview(values).cast("B"), self.path, start * FLOAT_BYTES)
        return values

    def value(self, index: int) -> float:
        return float(self.chunk(index, index + 1)[0])

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "OutputFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
