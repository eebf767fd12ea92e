"""The shared fixtures' promises: inputs depend only on the seed and the test id; hypothesis is seeded."""

from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import TEST_SEED, rng_for


@given(st.text(max_size=40))
def test_a_test_id_always_gets_the_same_generator(nodeid):
    assert rng_for(nodeid).integers(1 << 62) == rng_for(nodeid).integers(1 << 62)


def test_every_hypothesis_test_is_seeded_at_collection(request):
    hypothesis_tests = [i for i in request.session.items
                        if getattr(getattr(i, "function", None), "is_hypothesis_test", False)]
    assert hypothesis_tests, "this file holds a hypothesis test"
    for item in hypothesis_tests:
        assert getattr(item.function, "_hypothesis_internal_use_seed", None) == TEST_SEED, item.nodeid


def test_pytest_q_prints_the_seed():
    """The README's test command is `pytest -q`, which prints no header: the seed is printed at the end."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    found = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_strict_json.py"],
                           cwd=root, capture_output=True, text=True, timeout=300)
    assert found.returncode == 0, found.stdout
    assert "random seed: ATTNBENCH_TEST_SEED=" in found.stdout


def test_a_test_that_needs_the_gpu_to_itself_is_skipped_among_several_xdist_workers():
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    test = "tests/judge/test_course_judge.py::test_the_course_cuda_program_passes_t01_to_t10"
    env = {**os.environ, "PYTEST_XDIST_WORKER_COUNT": "2"}
    found = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:randomly", test],
                           cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert found.returncode == 0, found.stdout[-2000:]
    assert "needs the GPU to itself" in found.stdout, found.stdout[-2000:]
