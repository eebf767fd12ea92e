"""Shared fixtures: one seed for every random input, a private data folder, the GPU (skipped when absent).

Random inputs come from the `rng` fixture only. Its generator is seeded from ATTNBENCH_TEST_SEED
(default DEFAULT_TEST_SEED; `random` draws a fresh one) and the test's id, so each test sees the
same values on every run and in any order, and a failing test's report ends with the line to
reproduce it: "random seed: ATTNBENCH_TEST_SEED=N". Every hypothesis test takes the same seed, given
here once at collection (hypothesis' own @seed), so no test file has to remember it.
"""

from __future__ import annotations

import os
import secrets
import zlib

import hypothesis
import numpy as np
import pytest

from attnbench.cases.testcase import Testcase

DEFAULT_TEST_SEED = 20261122


def _session_seed() -> int:
    raw = os.environ.get("ATTNBENCH_TEST_SEED", "").strip()
    if not raw:
        return DEFAULT_TEST_SEED
    if raw == "random":
        return secrets.randbits(32)
    try:
        return int(raw)
    except ValueError:
        raise pytest.UsageError(f"ATTNBENCH_TEST_SEED={raw!r}: give an integer, or `random`") from None


TEST_SEED = _session_seed()


def rng_for(nodeid: str) -> np.random.Generator:
    """The generator a test with this id gets: from the session seed and the id, independent of order."""
    return np.random.default_rng([TEST_SEED, zlib.crc32(nodeid.encode())])


@pytest.fixture
def rng(request) -> np.random.Generator:
    """The only source of random inputs in the tests (see the module docstring)."""
    return rng_for(request.node.nodeid)


def pytest_report_header(config) -> str:
    return f"random seed: ATTNBENCH_TEST_SEED={TEST_SEED}"


def pytest_terminal_summary(terminalreporter) -> None:
    """The seed again at the end, where `pytest -q` (which prints no header) shows it too."""
    if terminalreporter.config.option.verbose < 0:
        terminalreporter.write_line(f"random seed: ATTNBENCH_TEST_SEED={TEST_SEED}")


def pytest_collection_modifyitems(config, items) -> None:
    """Seed every hypothesis test from the session seed: which inputs it draws never depends on luck. Under
    pytest-xdist with several workers, skip the tests that need the GPU to themselves: the other workers'
    kernels would stretch their wall clock (on an H100 under -n 8, the fresh samples' clock check flagged
    30 honest built-ins and the course program ran over its time limit; alone, all passed)."""
    shared = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1
    alone = pytest.mark.skip(reason="needs the GPU to itself (its clock is checked against the wall clock): run it without -n")
    for item in items:
        if shared and item.get_closest_marker("gpu_alone") is not None:
            item.add_marker(alone)
        function = getattr(item, "function", None)
        if getattr(function, "is_hypothesis_test", False):
            hypothesis.seed(TEST_SEED)(function)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Every failing report of a test that drew random inputs names the seed that reproduces it."""
    outcome = yield
    report = outcome.get_result()
    seeded = "rng" in getattr(item, "fixturenames", ()) or getattr(getattr(item, "obj", None), "is_hypothesis_test", False)
    if report.failed and seeded:
        line = f"ATTNBENCH_TEST_SEED={TEST_SEED} python3 -m pytest '{item.nodeid}'"
        report.sections.append(("random seed", f"random seed: ATTNBENCH_TEST_SEED={TEST_SEED}; rerun: {line}"))


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


def skip_unless_runs(variant, shape, gpu) -> None:
    """Skip when the variant refuses the shape or this GPU (wgmma3x runs on Hopper only)."""
    reason = variant.refusal(shape) or variant.gpu_refusal(getattr(gpu, "compute_capability", None))
    if reason is not None:
        pytest.skip(reason.sentence())
