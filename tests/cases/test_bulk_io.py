"""Large files read and written by several threads: the bytes are exactly a single thread's, and a file that
cannot be mapped or ends early is said so."""

from __future__ import annotations

import os

import numpy as np
import pytest

from attnbench.cases import bulk_io, testcase
from attnbench.cases.testcase import HEADER, Shape, Testcase, read_output, read_testcase, write_testcase
from attnbench.errors import TestcaseError


@pytest.fixture
def small_parallel(monkeypatch):
    """Arrays of a few pages count as large, and four threads share them (the host's threads vary)."""
    monkeypatch.setattr(bulk_io, "PARALLEL_BYTES", 4 * 4096)
    monkeypatch.setattr(testcase, "PARALLEL_BYTES", 4 * 4096)
    monkeypatch.setattr(bulk_io, "host_threads", lambda: 4)


def test_the_shares_cover_every_byte_once_in_page_aligned_pieces():
    shares = bulk_io._shares(10 * 4096 + 5, 3)
    assert shares[0][0] == 0 and shares[-1][1] == 10 * 4096 + 5
    assert all(a[1] == b[0] for a, b in zip(shares, shares[1:]))
    assert all(start % 4096 == 0 for start, _ in shares)


def test_a_testcase_written_and_read_in_parallel_is_the_single_threaded_bytes(tmp_path, small_parallel):
    values = np.random.default_rng(3).standard_normal((3, 3, 17, 40)).astype(np.float32)
    path = tmp_path / "t.in"
    write_testcase(path, Testcase(values))
    raw = path.read_bytes()
    assert raw == HEADER.pack(3, 17, 40) + values.tobytes()
    assert np.array_equal(read_testcase(path).qkv, values)


def test_an_output_read_in_parallel_is_its_bytes(tmp_path, small_parallel):
    values = np.arange(5 * 33 * 64, dtype=np.float32).reshape(5, 33, 64)
    path = tmp_path / "o.out"
    path.write_bytes(values.tobytes())
    assert np.array_equal(read_output(path, Shape(5, 33, 64)), values)


def test_a_file_that_ends_inside_a_parallel_read_names_where(tmp_path, small_parallel):
    path = tmp_path / "short.in"
    data = np.ones(40_000, dtype=np.float32)
    path.write_bytes(HEADER.pack(1, 1, 1) + data.tobytes()[:-4096 * 3 - 8])
    buffer = np.empty(40_000, dtype=np.float32)
    with open(path, "rb") as f:
        f.seek(HEADER.size)
        with pytest.raises(TestcaseError, match=f"file ended after {path.stat().st_size} bytes"):
            testcase._readinto_exact(f, memoryview(buffer).cast("B"), path, HEADER.size)


def test_pread_counts_only_the_bytes_before_the_end(tmp_path, small_parallel):
    path = tmp_path / "f"
    path.write_bytes(bytes(range(256)) * 200)  # 51,200 bytes
    buffer = bytearray(80_000)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert bulk_io.pread_into(fd, memoryview(buffer), 100) == 51_100
    finally:
        os.close(fd)
    assert bytes(buffer[:51_100]) == path.read_bytes()[100:]


def test_a_mapped_write_lands_at_the_position_and_moves_it(tmp_path, small_parallel):
    data = np.random.default_rng(5).integers(0, 255, 70_000, dtype=np.uint8)
    path = tmp_path / "w"
    with open(path, "w+b") as f:
        f.write(b"head")
        assert bulk_io.write_mapped(f, data)
        f.write(b"tail")
    assert path.read_bytes() == b"head" + data.tobytes() + b"tail"


@pytest.mark.parametrize("opened", ["write-only", "pipe"])
def test_a_file_that_cannot_be_mapped_is_left_to_the_plain_write(tmp_path, small_parallel, opened):
    data = np.zeros(70_000, dtype=np.uint8)
    if opened == "pipe":
        read_end, write_end = os.pipe()
        os.close(read_end)
        f = os.fdopen(write_end, "wb")
    else:
        f = open(tmp_path / "w", "wb")
    with f:
        assert not bulk_io.write_mapped(f, data)
    if opened == "write-only":
        assert (tmp_path / "w").stat().st_size == 0


def test_a_small_array_is_left_to_the_plain_write(tmp_path):
    with open(tmp_path / "w", "w+b") as f:
        assert not bulk_io.write_mapped(f, np.zeros(1000, dtype=np.uint8))


@pytest.mark.parametrize("opened", ["mapped", "write-only"])
@pytest.mark.parametrize("total", [1, 999, 1000, 70_001])
def test_a_repeated_block_fills_exactly_its_bytes_whichever_way_it_is_written(tmp_path, small_parallel, opened, total):
    """A warm-up's input: one block over and over, its last repeat cut short, at the file's position, whether the
    mapped way (several threads, each share starting mid-block) or plain writes take it."""
    block = np.random.default_rng(7).integers(0, 255, 1000, dtype=np.uint8)
    path = tmp_path / "w"
    with open(path, "w+b" if opened == "mapped" else "wb") as f:
        f.write(b"head")
        bulk_io.write_repeated(f, block, total)
        f.write(b"tail")
    assert path.read_bytes() == b"head" + (block.tobytes() * 71)[:total] + b"tail"


def test_an_empty_block_is_refused_not_an_endless_write(tmp_path):
    with open(tmp_path / "w", "w+b") as f, pytest.raises(ValueError):
        bulk_io.write_repeated(f, np.zeros(0, dtype=np.uint8), 10)
