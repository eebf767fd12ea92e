"""The PyTorch peer: a missing torch is one sentence; on a GPU with torch, SDPA matches float64."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from attnbench.backends.torch_peer import import_torch
from attnbench.cases.testcase import Shape
from attnbench.errors import PeerUnavailable
from attnbench.kernels.catalogue import get_variant

ROOT = Path(__file__).resolve().parents[2]


def test_missing_torch_is_one_clear_sentence(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(PeerUnavailable) as info:
        import_torch()
    message = str(info.value)
    assert message.startswith("the torch peer needs PyTorch") and "\n" not in message
    assert "pip install -e '.[gpu,triton]'" in message  # the extra that brings it, as every other extra is named
    assert info.value.exit_code == 3


def test_the_peer_is_a_torch_backend_variant():
    assert get_variant("torch").backend == "torch"


@pytest.mark.gpu
def test_sdpa_on_the_same_context_matches_float64(gpu, rng):
    pytest.importorskip("torch")
    from attnbench.bench.first_pass import WholeInput
    from attnbench.bench.runner import run_cell
    from attnbench.bench.sampler import TimingPolicy
    from attnbench.bench.verify import compare_outputs
    from attnbench.cases.reference import reference_output
    from tests.conftest import random_testcase

    tc = random_testcase(3, 200, 64, rng)
    ref = reference_output(tc)
    run = run_cell(get_variant("torch"), WholeInput(tc, "rand"), gpu, TimingPolicy(warmup=1, reps=5),
                      lambda out: compare_outputs(out, ref), gate=True)
    assert run.check.passed and run.check.rel_l2_error < 1e-5
    assert run.measurement is not None and run.measurement.kernel.count == 5 and run.measurement.kernel.median > 0


def test_the_half_precision_flavours_round_the_inputs_to_their_type():
    from attnbench.backends.torch_peer import dtype_name_of

    fp16, bf16, torch = (get_variant(n) for n in ("torch:fp16", "torch:bf16", "torch"))
    assert {v.backend for v in (fp16, bf16)} == {"torch"} and (fp16.unit, bf16.unit) == ("fp16", "bf16")
    assert [dtype_name_of(v) for v in (torch, fp16, bf16, None)] == ["float32", "float16", "bfloat16", "float32"]
    assert (fp16.arithmetic, bf16.arithmetic, torch.arithmetic) == ("FP16", "BF16", "3xTF32")


# The execution's own steps on the CPU with PyTorch's CPU build: the host stands in for the device (its calls to
# the CUDA runtime answered as a single GPU would), so the type handling is what runs, not a copy of it.
ON_THE_HOST = textwrap.dedent("""
    import json, sys, types
    import numpy as np, torch
    from attnbench.backends import torch_peer
    from attnbench.backends.base import HostClock
    from attnbench.bench.verify import compare_outputs
    from attnbench.cases.reference import reference_output
    from attnbench.cases.fresh_values import SUITE_RANGE
    from attnbench.cases.testcase import Testcase
    from attnbench.kernels.catalogue import get_variant
    from attnbench.results.limits import UNKNOWN_LIMITS

    host = torch.device("cpu")
    torch.device = lambda *args: host
    torch.cuda.set_device = lambda index: None
    torch.cuda.current_stream = lambda device=None: types.SimpleNamespace(cuda_stream=0)
    torch_peer.import_torch = lambda: torch

    class HostGpu:
        name, index, fp32_peak_flops, limits = "Host", 0, 1e12, UNKNOWN_LIMITS
        driver = types.SimpleNamespace(Context=types.SimpleNamespace(get_current=lambda: None))
        def clock(self, what): return HostClock()

    rng = np.random.default_rng(int(sys.argv[1]))
    results = []
    for name in ("torch", "torch:fp16", "torch:bf16"):
        tc = Testcase(rng.uniform(-3, 3, size=(2, 3, 37, 24)).astype(np.float32))
        execution = torch_peer.TorchExecution(HostGpu(), tc, get_variant(name))
        execution.upload()
        execution.run_pass()
        out = execution.download()
        report = compare_outputs(out, reference_output(tc))
        execution.refresh_inputs(20261126, SUITE_RANGE)  # a fresh sample, as the timed passes get
        execution.run_pass()
        sample = execution.check_sample(20261126, SUITE_RANGE, np.arange(0, 2 * 37, 3), 5e-3, 0.0)
        digest = execution.output_digest()
        results.append({"name": name, "input": str(execution._q.dtype), "output": str(out.dtype),
                        "max_abs": report.max_abs_error, "fresh_failing": sample.failing_elements,
                        "fresh_largest": sample.worst.error, "digest_rows": int(digest.size)})
    print(json.dumps(results))
""")


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="PyTorch is not importable here")
def test_the_flavours_run_sdpa_on_half_inputs_and_read_back_float32_on_the_host(rng):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", ON_THE_HOST, str(int(rng.integers(2**31)))], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    full, fp16, bf16 = json.loads(done.stdout.splitlines()[-1])
    assert [r["input"] for r in (full, fp16, bf16)] == ["torch.float32", "torch.float16", "torch.bfloat16"]
    assert {r["output"] for r in (full, fp16, bf16)} == {"float32"}
    # float32 stays float32-accurate; rounding the inputs shows in the error, bfloat16's (8 bits) more than float16's
    assert full["max_abs"] < 1e-5 and 1e-5 < fp16["max_abs"] < bf16["max_abs"] < 0.5, (full, fp16, bf16)
    # the verified passes' check on the device compares the moved half output with the kept one in float32
    # each sample's check computes the fresh input's rows exactly: float32 is within 1e-5 there too, and the
    # half flavours' rounding shows in it; every output row gets a digest
    assert full["fresh_failing"] == 0 and full["fresh_largest"] < 1e-5, full
    assert 1e-5 < fp16["fresh_largest"] < 0.5 and 1e-5 < bf16["fresh_largest"] < 0.5, (fp16, bf16)
    assert {r["digest_rows"] for r in (full, fp16, bf16)} == {2 * 37}


@pytest.mark.gpu
@pytest.mark.parametrize("name, dtype", [("torch:fp16", "float16"), ("torch:bf16", "bfloat16")])
def test_the_half_flavours_on_the_gpu_run_half_sdpa_and_are_checked_in_float32(gpu, rng, name, dtype):
    pytest.importorskip("torch")
    from attnbench.backends.registry import make_execution
    from attnbench.bench.verify import compare_outputs
    from attnbench.cases.reference import reference_output
    from tests.conftest import random_testcase, skip_unless_runs

    skip_unless_runs(get_variant(name), Shape(1, 1, 1), gpu)
    tc = random_testcase(3, 200, 64, rng)
    execution = make_execution(get_variant(name), tc, gpu)
    try:
        execution.upload()
        execution.run_pass()
        assert str(execution._out.dtype) == f"torch.{dtype}"
        out = execution.download()
    finally:
        execution.free()
    report = compare_outputs(out, reference_output(tc))
    assert out.dtype.name == "float32" and report.nan_count == 0
    assert 1e-5 < report.max_abs_error < 0.1, report.max_abs_error  # half precision shows, and stays half precision
