"""The PyTorch peer: a missing torch is one sentence; on a GPU with torch, SDPA matches float64."""

import sys

import pytest

from attnbench.backends.torch_peer import import_torch
from attnbench.errors import PeerUnavailable
from attnbench.kernels.catalogue import get_variant


def test_missing_torch_is_one_clear_sentence(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(PeerUnavailable) as info:
        import_torch()
    message = str(info.value)
    assert message.startswith("the torch peer needs PyTorch") and "\n" not in message
    assert info.value.exit_code == 3


def test_the_peer_is_a_torch_backend_variant():
    assert get_variant("torch").backend == "torch"


@pytest.mark.gpu
def test_sdpa_on_the_same_context_matches_float64(gpu, rng):
    pytest.importorskip("torch")
    from attnbench.bench.runner import run_variant
    from attnbench.bench.sampler import TimingPolicy
    from attnbench.bench.verify import compare_outputs
    from attnbench.cases.reference import reference_output
    from tests.conftest import random_testcase

    tc = random_testcase(3, 200, 64, rng)
    ref = reference_output(tc)
    run = run_variant(get_variant("torch"), tc, "rand", gpu, TimingPolicy(warmup=1, reps=5),
                      lambda out: compare_outputs(out, ref), gate=True)
    assert run.check.passed and run.check.rel_l2_error < 1e-5
    assert run.measurement is not None and run.measurement.kernel.count == 5 and run.measurement.kernel.median > 0
