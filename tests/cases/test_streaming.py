"""Reading a course input file by whole batch items into caller buffers, with one or several threads."""

from __future__ import annotations

import os

import numpy as np
import pytest

from attnbench.cases import streaming
from attnbench.cases.streaming import TestcaseFile
from attnbench.cases.testcase import read_testcase, write_testcase
from attnbench.errors import TestcaseError
from tests.conftest import random_testcase


@pytest.fixture
def case_file(tmp_path):
    testcase = random_testcase(7, 50, 12, np.random.default_rng(3))
    path = tmp_path / "case.in"
    write_testcase(path, testcase)
    return testcase, path


@pytest.mark.parametrize("threads", [1, 3])
def test_read_items_gives_the_same_bytes_as_read_testcase(case_file, threads, monkeypatch):
    monkeypatch.setattr(streaming, "MIN_PIECE_BYTES", 1000)  # split even these small reads among threads
    testcase, path = case_file
    with TestcaseFile(path, threads=threads) as source:
        assert source.shape == testcase.shape and source.item_bytes == 12 * 50 * 12
        buffer = np.zeros(3 * source.item_bytes + 17, dtype=np.uint8)  # larger than needed, as ring buffers are
        for b0, b1 in ((0, 3), (3, 6), (6, 7), (2, 5)):
            source.read_items(b0, b1, memoryview(buffer))
            got = buffer[: (b1 - b0) * source.item_bytes].view(np.float32).reshape(b1 - b0, 3, 50, 12)
            assert np.array_equal(got, testcase.qkv[b0:b1])
        assert np.array_equal(source.read_all().qkv, read_testcase(path).qkv)


def test_a_float_buffer_is_read_as_bytes(case_file):
    testcase, path = case_file
    with TestcaseFile(path, threads=1) as source:
        into = np.empty((2, 3, 50, 12), np.float32)
        source.read_items(1, 3, memoryview(into))
        assert np.array_equal(into, testcase.qkv[1:3])


def test_a_buffer_too_small_is_refused(case_file):
    _, path = case_file
    with TestcaseFile(path, threads=1) as source:
        with pytest.raises(ValueError, match="cannot hold 2 items"):
            source.read_items(0, 2, memoryview(bytearray(source.item_bytes)))


def test_a_truncated_file_is_refused_when_opened(case_file):
    _, path = case_file
    os.truncate(path, os.path.getsize(path) - 4)
    with pytest.raises(TestcaseError, match="should be 12 \\+ 12\\*B\\*N\\*d"):
        TestcaseFile(path)


def test_a_file_that_shrinks_while_read_names_where_it_ended(case_file):
    _, path = case_file
    with TestcaseFile(path, threads=1) as source:
        os.truncate(path, 12 + 2 * source.item_bytes + 100)
        source.read_items(0, 2, memoryview(bytearray(2 * source.item_bytes)))
        with pytest.raises(TestcaseError, match=f"file ended after {12 + 2 * source.item_bytes + 100} bytes"):
            source.read_items(2, 4, memoryview(bytearray(2 * source.item_bytes)))


def test_read_threads_follow_the_environment(monkeypatch):
    monkeypatch.setenv("ATTNBENCH_READ_THREADS", "3")
    assert streaming.default_read_threads() == 3
    monkeypatch.setenv("ATTNBENCH_READ_THREADS", "many")
    assert 1 <= streaming.default_read_threads() <= streaming.MAX_READ_THREADS
