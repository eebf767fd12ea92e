"""The one error classifier: an exception to a command's exit code and one line."""

from __future__ import annotations

from attnbench.errors import INTERRUPTED, Failure, GpuUnavailable, UsageError, classify


def test_attnbench_errors_keep_their_class_exit_code_and_sentence():
    assert classify(UsageError("give a variant or an accuracy, not both")) == Failure(
        2, "give a variant or an accuracy, not both")
    assert classify(GpuUnavailable("no GPU found", "or use --variant cpu")).exit_code == 3


def test_a_refused_file_is_named_and_exits_2():
    failure = classify(PermissionError(13, "Permission denied", "/root/out.bin"))
    assert failure == Failure(2, "/root/out.bin: Permission denied")


def test_ctrl_c_exits_130_without_an_error_word():
    assert classify(KeyboardInterrupt()) is INTERRUPTED and INTERRUPTED.exit_code == 130 and not INTERRUPTED.error


def test_a_bug_is_not_classified_so_its_traceback_shows():
    assert classify(ZeroDivisionError("division by zero")) is None


def test_host_memory_exhausted_is_the_environment_exit_3_in_one_line():
    import numpy as np

    try:
        np.empty(1 << 58, dtype=np.float32)  # 1 EiB: more than any host has
    except MemoryError as exc:
        failure = classify(exc)
    assert failure.exit_code == 3 and failure.line.startswith("out of host memory: Unable to allocate")


def test_a_full_disk_is_the_environment_exit_3_in_one_line_naming_the_file():
    import errno

    failure = classify(OSError(errno.ENOSPC, "No space left on device", "res/x.json"))
    assert failure == Failure(3, "res/x.json: No space left on device")
    assert classify(OSError(errno.EDQUOT, "Disk quota exceeded")).exit_code == 3
