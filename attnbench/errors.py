"""Error types that the CLI turns into one clear sentence and an exit code.

The exit code comes from the kind of failure, one base class each: bad usage or input (2) and what
the environment lacks (3). A verification failure (1) is a result, not an exception. `classify` is the one place that turns an
exception into a command's exit code and its one line.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass


class AttnbenchError(Exception):
    """An expected failure: printed as one line, never as a traceback."""

    exit_code = 1


class BadInput(AttnbenchError):
    """Bad usage or bad input: options, files, names, shapes a variant refuses. Exit code 2."""

    exit_code = 2


class EnvironmentProblem(AttnbenchError):
    """What this machine lacks or ran out of: a GPU, pycuda, nvcc, memory, a library. Exit code 3."""

    exit_code = 3


# Bad usage or input (exit 2).
class TestcaseError(BadInput):
    """A testcase or output file is missing, unreadable, truncated or inconsistent."""

    __test__ = False  # not a pytest test class


class InputNotFinite(TestcaseError):
    """An input holds NaN or Inf: every output of it is NaN, so the input is at fault, not a variant."""


class ReferenceNotFinite(TestcaseError):
    """A reference holds NaN or Inf: no output can match it, so the reference is at fault, not the output."""


class UsageError(BadInput):
    """Options that do not fit together (a baseline not among the variants, a bad sweep size)."""


class ShapeNotSupported(BadInput):
    """A variant was asked for a shape outside its constraints."""


class OutOfPrecision(ShapeNotSupported):
    """A variant's arithmetic cannot hold the check's tolerance on an input's value ranges: refused before any
    launch. `refusal` is the record (`results.refusal.Refusal`) a compare's cell keeps."""

    def __init__(self, refusal: object) -> None:
        super().__init__(refusal.sentence())  # type: ignore[attr-defined]
        self.refusal = refusal


class UnknownName(BadInput):
    """An unknown variant, suite case or group name."""


class ResultsError(BadInput):
    """A saved results file is unreadable, of an unknown schema, or not comparable with this run."""


class NotResultsFile(ResultsError):
    """A file that is not an attnbench results file at all (a ceilings cache, a profile, any JSON)."""


class CompileCheckFailed(BadInput):
    """nvcc rejected a kernel in a compile check (`info`, `list`): the source or the architecture asked for."""


class OutputError(BadInput):
    """The output path cannot be written: a missing folder, no permission, or the input file itself."""


# The environment (exit 3).
class GpuUnavailable(EnvironmentProblem):
    """No pycuda, no driver, or no GPU. `remedy` (e.g. "or use --variant cpu") is kept apart from the
    reason, so a command without that option (ceilings) can say the reason alone."""

    def __init__(self, reason: str, remedy: str | None = None) -> None:
        super().__init__(f"{reason}, {remedy}" if remedy else reason)
        self.reason, self.remedy = reason, remedy


class KernelCompileError(EnvironmentProblem):
    """nvcc rejected a variant's source; the message carries nvcc's own output."""


class KernelLaunchError(EnvironmentProblem):
    """A kernel launch or a device call failed."""


class DeviceMemoryError(EnvironmentProblem):
    """The run needs more device memory than is free."""


class HostMemoryError(EnvironmentProblem):
    """The run needs more host memory than this machine has (or has free)."""


class PeerUnavailable(EnvironmentProblem):
    """A peer implementation (PyTorch) was asked for but cannot run here."""


class ProfilerUnavailable(EnvironmentProblem):
    """Nsight Compute is missing, or may not read this GPU's performance counters."""


class VariantUnsupported(EnvironmentProblem):
    """This GPU cannot run the variant (it is built for another architecture)."""


class SuiteManifestDamaged(EnvironmentProblem):
    """The suite's manifest (testcases/suite.json) is missing, unreadable or not as attnbench wrote it."""


class DiskFull(EnvironmentProblem):
    """A write found its file system full (or the user's quota spent): the machine's state, not the user's input."""


# A full disk or a spent quota: what the machine ran out of, as host memory is (exit 3, not 2).
_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})


def no_space(exc: BaseException) -> bool:
    """Whether an OSError says its file system is full (or the quota spent)."""
    return isinstance(exc, OSError) and exc.errno in _NO_SPACE


class PlotsUnavailable(EnvironmentProblem):
    """matplotlib (the `plot` extra) is not installed."""


@dataclass(frozen=True)
class Failure:
    """How a command ends on an expected failure: its exit code and one line (`error`: said as an error)."""

    exit_code: int
    line: str
    error: bool = True


INTERRUPTED = Failure(130, "interrupted; no partial output was left behind", error=False)


def classify(exc: BaseException) -> Failure | None:
    """The exit code and the one line of an expected failure, for every command: attnbench's own errors (their
    class says the code), Ctrl-C (130), host memory exhausted or a disk full (3), a file the system refused (2, named), a CUDA driver error that escaped
    the backends' wrapping (3). None for anything else: a bug, whose traceback must show."""
    if isinstance(exc, AttnbenchError):
        return Failure(exc.exit_code, str(exc))
    if isinstance(exc, KeyboardInterrupt):
        return INTERRUPTED
    if isinstance(exc, MemoryError):  # numpy's _ArrayMemoryError says how much it could not allocate
        return Failure(3, f"out of host memory: {exc}" if str(exc) else "out of host memory")
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        return Failure(3 if no_space(exc) else 2, where + str(exc.strerror or exc))
    if type(exc).__module__.startswith("pycuda"):
        return Failure(3, f"CUDA: {exc}")
    return None
