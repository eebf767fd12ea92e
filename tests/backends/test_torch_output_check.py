"""The peers' check on the device, in PyTorch: the host check's numbers, on the CPU's tensors where PyTorch is
installed and on the GPU's; a kept copy something wrote into hands the check to the host."""

from __future__ import annotations

import numpy as np
import pytest

from attnbench.backends import torch_output_check
from attnbench.backends.torch_output_check import TorchOutputCheck
from attnbench.bench.timed_check import pass_errors
from attnbench.cases.testcase import Shape
from tests.backends.test_gpu_output_check import outputs


def devices():
    yield "cpu"
    yield pytest.param("cuda", marks=pytest.mark.gpu)


@pytest.mark.parametrize("where", devices())
@pytest.mark.parametrize("B,N,d", [(3, 5, 4), (1, 7, 8), (6, 1, 2), (9, 40, 16)])
@pytest.mark.parametrize("rtol", [0.0, 1e-2])
def test_the_torch_check_gives_the_host_checks_numbers(where, B, N, d, rtol, rng, monkeypatch):
    torch = pytest.importorskip("torch")
    if where == "cuda" and not torch.cuda.is_available():
        pytest.skip("no GPU for PyTorch here")
    monkeypatch.setattr(torch_output_check, "GROUP_ELEMENTS", 2 * N * d)  # several groups of items
    shape = Shape(B, N, d)
    base, transform, got = outputs(shape, rng)
    outputs_now = [torch.from_numpy(base).to(where)]  # the first pass's output, then a later pass's
    check = TorchOutputCheck.keep(torch, lambda: outputs_now[-1])
    outputs_now.append(torch.from_numpy(got).to(where))
    want = pass_errors(got, base, transform, shape, 5e-3, rtol)
    failing, nonfinite, largest = check.errors(transform, 5e-3, rtol)
    assert (failing, nonfinite) == want[:2] and largest == pytest.approx(want[2], rel=1e-6)
    check._kept[0, 0, 0] += 1.0  # something wrote into the kept copy
    assert check.errors(transform, 5e-3, rtol) is None
