"""Shared fixtures: a private data folder for generated cases, and the GPU (skipped when absent)."""

from __future__ import annotations

import numpy as np
import pytest

from attnbench.cases.testcase import Testcase


@pytest.fixture(autouse=True)
def private_data_dir(tmp_path_factory, monkeypatch):
    """Generated suite files go to a per-session temporary folder, never the checkout."""
    folder = tmp_path_factory.getbasetemp() / "suite-data"
    monkeypatch.setenv("ATTNBENCH_DATA", str(folder))
    monkeypatch.setenv("ATTNBENCH_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))  # no user's ceilings
    return folder


def random_testcase(B: int, N: int, d: int, rng: np.random.Generator, low: float = -3.0, high: float = 3.0) -> Testcase:
    """Fresh uniform inputs in the course's range."""
    return Testcase(rng.uniform(low, high, size=(B, 3, N, d)).astype(np.float32))


@pytest.fixture(scope="session")
def gpu():
    """An open GPU, or a clean skip where there is none (no pycuda, no driver, no device)."""
    from attnbench.backends.gpu import Gpu, gpu_probe

    reason = gpu_probe()
    if reason is not None:
        pytest.skip(f"no usable GPU: {reason}")
    device = Gpu(0)
    yield device
    device.close()
