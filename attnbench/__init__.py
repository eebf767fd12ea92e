"""attnbench: run, verify, time and compare CUDA attention kernels on course-style testcases.

The public Python API (see `attnbench.api`), imported on first use so that `import attnbench` stays light:

    import attnbench
    m = attnbench.run("t02", variant="cpu", check=True).measurement
"""

from __future__ import annotations

from typing import Any

from attnbench.version import __version__

_API = ("run", "compare", "sweep", "verify", "generate", "load_results", "TimingOptions")


def __getattr__(name: str) -> Any:
    if name in _API:
        from attnbench import api

        return getattr(api, name)
    raise AttributeError(f"module 'attnbench' has no attribute {name!r}")


__all__ = ["__version__", *_API]
