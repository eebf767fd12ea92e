"""Host threads: a process alone, and workers sharing a host."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from attnbench import host_threads
from attnbench.host_threads import HOST_THREADS_ENV, MAX_HOST_THREADS


def blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


@pytest.fixture
def cores(monkeypatch):
    """Pretend the host has a given number of cores (no share claimed; any claim is undone after)."""
    monkeypatch.setenv(HOST_THREADS_ENV, "")

    def set_cores(count: int) -> None:
        monkeypatch.setattr(host_threads, "host_cores", lambda: count)

    return set_cores


@pytest.fixture
def restored_blas():
    np.dot(np.ones(4), np.ones(4))  # BLAS loaded, so threadpoolctl sees it
    with threadpool_limits(limits=None, user_api="blas"):  # puts back the limits it found
        yield


def test_a_process_alone_takes_its_cores_up_to_the_cap(cores):
    cores(3)
    assert host_threads.host_threads() == 3
    cores(64)
    assert host_threads.host_threads() == MAX_HOST_THREADS


def test_a_claimed_share_wins_and_a_bad_one_is_ignored(cores, monkeypatch):
    cores(64)
    monkeypatch.setenv(HOST_THREADS_ENV, "3")
    assert host_threads.host_threads() == 3
    for bad in ("0", "-2", "many", ""):
        monkeypatch.setenv(HOST_THREADS_ENV, bad)
        assert host_threads.host_threads() == MAX_HOST_THREADS


def test_workers_split_the_cores_and_each_keeps_at_least_one(cores):
    cores(32)
    assert [host_threads.share_of(n) for n in (1, 2, 4, 8, 64)] == [8, 8, 8, 4, 1]
    cores(6)
    assert [host_threads.share_of(n) for n in (0, 1, 2, 4, 7)] == [6, 6, 3, 1, 1]


def test_claiming_a_share_sets_this_process_and_its_blas(cores, restored_blas):
    cores(12)
    assert host_threads.claim_share(3) == 4
    assert os.environ[HOST_THREADS_ENV] == "4" and host_threads.host_threads() == 4
    if blas_threads():  # numpy built without a BLAS that threadpoolctl knows has nothing to limit
        assert set(blas_threads()) == {4}


def test_blas_runs_one_thread_inside_the_block_and_as_before_after_it(restored_blas):
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        with host_threads.blas_single_threaded():
            assert set(blas_threads()) <= {1}
        assert blas_threads() == before


@pytest.mark.parametrize("value", ["abc", "0", "-2", "1.5"])
def test_a_bad_host_threads_share_is_one_line_of_bad_usage_before_any_work(monkeypatch, value):
    """ATTNBENCH_HOST_THREADS=abc was ignored without a word (a newcomer pass): the command refuses it, exit 2."""
    from click.testing import CliRunner

    from attnbench.cli import main

    monkeypatch.setenv("ATTNBENCH_HOST_THREADS", value)
    result = CliRunner().invoke(main, ["cases"])
    assert result.exit_code == 2 and f"ATTNBENCH_HOST_THREADS={value!r}: give a number of threads" in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("value", ["3", " 2 ", ""])
def test_a_good_or_empty_host_threads_share_is_taken(monkeypatch, value):
    from click.testing import CliRunner

    from attnbench.cli import main

    monkeypatch.setenv("ATTNBENCH_HOST_THREADS", value)
    assert CliRunner().invoke(main, ["cases"]).exit_code == 0


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_one_allocator_arena_lets_threads_reuse_what_others_freed():
    """Threads that work in turn, each alive till the end (a class's drawing, writing and checking threads):
    with an arena each, what one freed stays mapped in its own arena while the next maps more (what every fork of
    the judge copies the page tables of); with one arena, the next takes what the last freed."""
    probe = textwrap.dedent("""
        import sys, threading
        from attnbench.host_threads import one_allocator_arena
        if sys.argv[1] == "one":
            assert one_allocator_arena()
        turns = [threading.Event() for _ in range(9)]
        done = threading.Event()
        pins = []
        def work(i):
            turns[i].wait()
            kept = [bytearray(100_000) for _ in range(300)]  # 30 MB below the mmap threshold: from an arena
            pins.append(bytearray(100_000))  # its arena's top held, so freeing the rest cannot shrink it
            del kept
            turns[i + 1].set()
            done.wait()
        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads: t.start()
        turns[0].set()
        turns[8].wait()
        print(int(open("/proc/self/statm").read().split()[1]) * 4096 // 2**20)
        done.set()
    """)
    rss = {arenas: int(subprocess.run([sys.executable, "-c", probe, arenas], capture_output=True, text=True,
                                      check=True, timeout=60).stdout) for arenas in ("many", "one")}
    assert rss["one"] < rss["many"] - 100, rss  # eight threads' 30 MB each against about one thread's
