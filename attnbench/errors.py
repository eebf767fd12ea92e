"""Error types that the CLI turns into one clear sentence and an exit code."""

from __future__ import annotations


class AttnbenchError(Exception):
    """An expected failure: printed as one line, never as a traceback."""

    exit_code = 1


class TestcaseError(AttnbenchError):
    """A testcase or output file is missing, truncated or inconsistent."""

    __test__ = False  # not a pytest test class
    exit_code = 1


class ShapeNotSupported(AttnbenchError):
    """A variant was asked for a shape outside its constraints."""

    exit_code = 2


class UnknownName(AttnbenchError):
    """An unknown variant, suite case or group name."""

    exit_code = 2


class GpuUnavailable(AttnbenchError):
    """No pycuda, no driver, or no GPU."""

    exit_code = 3


class KernelCompileError(AttnbenchError):
    """nvcc rejected a variant's source; the message carries nvcc's own output."""

    exit_code = 3


class KernelLaunchError(AttnbenchError):
    """A kernel launch or a device call failed."""

    exit_code = 3


class DeviceMemoryError(AttnbenchError):
    """The run needs more device memory than is free."""

    exit_code = 3


class PeerUnavailable(AttnbenchError):
    """A peer implementation (PyTorch) was asked for but cannot run here."""

    exit_code = 3


class ResultsError(AttnbenchError):
    """A saved results file is unreadable, of an unknown schema, or not comparable with this run."""

    exit_code = 2


class PlotsUnavailable(AttnbenchError):
    """matplotlib (the `plot` extra) is not installed."""

    exit_code = 1


class ProfilerUnavailable(AttnbenchError):
    """Nsight Compute is missing, or may not read this GPU's performance counters."""

    exit_code = 3
