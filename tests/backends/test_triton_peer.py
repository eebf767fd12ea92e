"""The Triton peer (attnbench.backends.triton_peer, triton_tune, triton_kernel).

Without a GPU: a missing Triton or PyTorch is one sentence, per cell in a compare; the registry's facts
(flavours, units, the head dimensions it takes, its GPU floor); the autotune cache's keying, reading and
writing with a fake tuner. Where Triton and PyTorch import (not in CI: they are large), the kernel runs on
the CPU through Triton's interpreter against float64. On a GPU: every tile config and every flavour
against float64, and a compare in which `triton:tf32` is WRONG.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

from attnbench.backends import triton_tune as tt
from attnbench.backends.triton_peer import import_triton, precision_of
from attnbench.bench.matrix import MatrixSettings, run_matrix
from attnbench.bench.sampler import TimingPolicy
from attnbench.cases.inputs import SyntheticInput
from attnbench.cases.testcase import Shape
from attnbench.cli import main
from attnbench.errors import PeerUnavailable
from attnbench.kernels.catalogue import get_variant, variants_for

ROOT = Path(__file__).resolve().parents[2]
FLAVOURS = ("triton", "triton:ieee", "triton:tf32")
HAS_TRITON = all(importlib.util.find_spec(name) is not None for name in ("torch", "triton"))


# -- refusals: one sentence, and per cell in a compare -----------------------------------------------
def test_missing_torch_is_one_sentence(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(PeerUnavailable) as info:
        import_triton()
    message = str(info.value)
    assert message.startswith("the triton peer needs PyTorch") and "\n" not in message
    assert "pip install -e '.[gpu,triton]'" in message and info.value.exit_code == 3


def test_missing_triton_is_one_sentence(monkeypatch):
    fake_torch = types.SimpleNamespace(__version__="0.0", cuda=types.SimpleNamespace(is_available=lambda: True))
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    monkeypatch.setitem(sys.modules, "triton", None)
    with pytest.raises(PeerUnavailable) as info:
        import_triton()
    message = str(info.value)
    assert message.startswith("the triton peer needs Triton, which is not installed here") and "\n" not in message


def test_a_torch_without_cuda_is_one_sentence(monkeypatch):
    fake_torch = types.SimpleNamespace(__version__="9.9+cpu", cuda=types.SimpleNamespace(is_available=lambda: False))
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    monkeypatch.setitem(sys.modules, "triton", types.SimpleNamespace(__version__="3.0"))
    with pytest.raises(PeerUnavailable, match=r"^PyTorch 9\.9\+cpu is installed but sees no CUDA device"):
        import_triton()


class _GpuWithoutTriton:
    """Enough of an open Gpu for the matrix to reach the peer's own refusal."""

    name = "Fake GPU"
    compute_capability = (9, 0)

    def context_error(self) -> None:
        return None


def test_compare_says_per_cell_that_triton_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "triton", None)
    inputs = [SyntheticInput(Shape(2, 17, 32), 1), SyntheticInput(Shape(1, 9, 8), 2)]
    settings = MatrixSettings(policy=lambda v: TimingPolicy(warmup=0, reps=2, flush_l2=False))
    _, cells = run_matrix([get_variant("cpu"), get_variant("triton")], inputs, _GpuWithoutTriton(), settings)
    by_variant = {(c.variant, c.case): c for c in cells}
    assert all(by_variant[("cpu", i.label)].ok for i in inputs)  # the other variants still run
    for bench_input in inputs:
        cell = by_variant[("triton", bench_input.label)]
        assert cell.status == "error" and cell.message.startswith("the triton peer needs PyTorch")
        assert "\n" not in cell.message


# -- the registry's facts --------------------------------------------------------------------------
def test_the_peer_and_its_flavours_are_registered():
    triton, ieee, tf32 = (get_variant(name) for name in FLAVOURS)
    assert {v.backend for v in (triton, ieee, tf32)} == {"triton"}
    assert [v.unit for v in (triton, ieee, tf32)] == ["tf32x3", "ffma", "tensor"]
    assert [precision_of(v) for v in (triton, ieee, tf32)] == ["tf32x3", "ieee", "tf32"]
    assert triton not in variants_for("all")  # `all` is every kernel of ours, not the peers


def test_attnbench_list_shows_the_flavours():
    result = CliRunner().invoke(main, ["list", "--no-resources"])
    assert result.exit_code == 0, result.output
    listed = result.output.split()
    assert all(name in listed for name in FLAVOURS)


@pytest.mark.parametrize("shape", [(3, 1, 1), (2, 17, 48), (1, 33, 5), (2, 1000, 256), (13600, 128, 32)])
def test_it_takes_any_n_and_head_dims_up_to_256(shape):
    assert all(get_variant(name).refusal(Shape(*shape)) is None for name in FLAVOURS)


def test_larger_head_dims_and_old_gpus_are_refused_in_one_sentence():
    triton = get_variant("triton:ieee")
    assert triton.refusal(Shape(4, 64, 512)) == "triton:ieee needs d in [1, 256], and the case has d=512"
    assert triton.gpu_refusal((6, 1)) == "triton:ieee needs sm_80 or newer, and this GPU is sm_61"
    assert triton.gpu_refusal((8, 0)) is None and triton.gpu_refusal((9, 0)) is None


# -- the autotune cache, with a fake tuner ---------------------------------------------------------
class FakeTuner:
    """Milliseconds made up from a config (the smaller the tile, the faster; then the fewer stages), and a call log;
    configs in `failing` raise as a config that does not compile would."""

    def __init__(self, failing: tuple[tt.TileConfig, ...] = ()) -> None:
        self.calls: list[tt.TileConfig] = []
        self.failing = failing

    def __call__(self, config: tt.TileConfig) -> float:
        self.calls.append(config)
        if config in self.failing:
            raise RuntimeError("out of resource: shared memory, Required: 262144, Hardware limit: 232448")
        return config.block_m * config.block_n / 256 + config.num_stages * 1e-3


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ATTNBENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


T22 = Shape(500, 2048, 64)


def test_a_choice_is_tuned_once_then_read_from_disk(cache):
    key = tt.TuneKey.of("NVIDIA H200", "3.5.0", "tf32x3", T22)
    tuner, staged = FakeTuner(), []
    first = tt.choose_tiles(key, T22, tuner, before_tuning=lambda: staged.append(1))
    assert first.tuned and staged == [1] and tuner.calls == tt.candidates(T22)
    assert first.config == tt.TileConfig(16, 16, 4, 1)  # the fake's fastest
    assert first.path.parent == cache and first.path.name == "triton-tiles_nvidia-h200_triton-3-5-0.json"

    again = tt.choose_tiles(key, T22, FakeTuner(), before_tuning=lambda: staged.append(2))
    assert not again.tuned and again.config == first.config and staged == [1]  # nothing staged, nothing timed

    refreshed = FakeTuner()
    assert tt.choose_tiles(key, T22, refreshed, refresh=True).tuned and refreshed.calls


def test_the_key_is_gpu_triton_version_precision_and_shape_bucket(cache):
    tuner = FakeTuner()
    tt.choose_tiles(tt.TuneKey.of("NVIDIA H200", "3.5.0", "tf32x3", T22), T22, tuner)
    tuned = len(tuner.calls)
    same_bucket = Shape(450, 1100, 64)  # B and N round up to 512 and 2048, as t22's do
    assert tt.TuneKey.of("NVIDIA H200", "3.5.0", "tf32x3", same_bucket).entry == "tf32x3/d64/n2048/b512"
    assert not tt.choose_tiles(tt.TuneKey.of("NVIDIA H200", "3.5.0", "tf32x3", same_bucket), same_bucket, tuner).tuned
    others = [("NVIDIA H100 80GB HBM3", "3.5.0", "tf32x3", T22), ("NVIDIA H200", "3.6.0", "tf32x3", T22),
              ("NVIDIA H200", "3.5.0", "ieee", T22), ("NVIDIA H200", "3.5.0", "tf32x3", Shape(500, 2049, 64)),
              ("NVIDIA H200", "3.5.0", "tf32x3", Shape(513, 2048, 64)), ("NVIDIA H200", "3.5.0", "tf32x3", Shape(500, 2048, 32))]
    for gpu, version, precision, shape in others:
        assert tt.choose_tiles(tt.TuneKey.of(gpu, version, precision, shape), shape, tuner).tuned, (gpu, version, precision, shape)
    assert len(tuner.calls) > tuned * len(others)
    assert sorted(p.name for p in cache.iterdir()) == [
        "triton-tiles_nvidia-h100-80gb-hbm3_triton-3-5-0.json", "triton-tiles_nvidia-h200_triton-3-5-0.json",
        "triton-tiles_nvidia-h200_triton-3-6-0.json"]
    entries = json.loads((cache / "triton-tiles_nvidia-h200_triton-3-5-0.json").read_text())["entries"]
    assert sorted(entries) == ["ieee/d64/n2048/b512", "tf32x3/d32/n2048/b512", "tf32x3/d64/n2048/b1024",
                               "tf32x3/d64/n2048/b512", "tf32x3/d64/n4096/b512"]


def _strict(text: str) -> dict:
    def refuse(constant: str) -> None:
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_the_file_keeps_every_trial_and_failing_configs_are_skipped(cache):
    failing = (tt.TileConfig(16, 16, 4, 1), tt.TileConfig(32, 32, 4, 2))
    key = tt.TuneKey.of("NVIDIA A100-SXM4-80GB", "3.5.0", "ieee", T22)
    choice = tt.choose_tiles(key, T22, FakeTuner(failing))
    assert choice.config == tt.TileConfig(64, 32, 8, 2)  # the fastest of those that ran
    data = _strict(choice.path.read_text())
    assert data["version"] == tt.CACHE_VERSION and data["gpu"] == key.gpu and data["triton"] == "3.5.0"
    entry = data["entries"]["ieee/d64/n2048/b512"]
    assert entry["config"] == {"block_m": 64, "block_n": 32, "num_warps": 8, "num_stages": 2}
    assert entry["tuned_on"] == {"B": 500, "N": 2048, "d": 64}
    trials = {(t["config"]["block_m"], t["config"]["block_n"], t["config"]["num_stages"]): t for t in entry["trials"]}
    assert trials[(16, 16, 1)]["ms"] is None and "out of resource" in trials[(16, 16, 1)]["error"]
    assert trials[(128, 64, 2)]["ms"] > 0 and trials[(128, 64, 2)]["error"] is None


def test_when_no_config_runs_the_error_names_each(cache):
    key = tt.TuneKey.of("NVIDIA H200", "3.5.0", "tf32x3", Shape(2, 1, 1))
    with pytest.raises(tt.NoTileRuns, match=r"^16x16: out of resource"):
        tt.choose_tiles(key, Shape(2, 1, 1), FakeTuner(tuple(tt.TILE_CONFIGS)))
    assert not tt.cache_path(key).exists()


@pytest.mark.parametrize("damage", ["{not json", '{"version": 99, "gpu": "NVIDIA H200", "triton": "3.5.0", "entries": {}}',
                                    "[]", '{"version": 1, "gpu": "NVIDIA H200", "triton": "3.5.0", '
                                          '"entries": {"tf32x3/d64/n2048/b512": {"config": {"block_m": 64}}}}'])
def test_a_damaged_or_foreign_file_is_tuned_again_and_rewritten(cache, damage):
    key = tt.TuneKey.of("NVIDIA H200", "3.5.0", "tf32x3", T22)
    tt.cache_path(key).parent.mkdir(parents=True)
    tt.cache_path(key).write_text(damage)
    assert tt.load_choice(key) is None
    assert tt.choose_tiles(key, T22, FakeTuner()).tuned
    assert tt.load_choice(key) == tt.TileConfig(16, 16, 4, 1)


def test_a_read_only_cache_folder_still_gives_a_choice(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("ATTNBENCH_CACHE", str(blocked / "cache"))  # under a file: cannot be made
    choice = tt.choose_tiles(tt.TuneKey.of("NVIDIA H200", "3.5.0", "tf32x3", T22), T22, FakeTuner())
    assert choice.tuned and choice.config == tt.TileConfig(16, 16, 4, 1)


@pytest.mark.parametrize("size, padded", [(1, 16), (5, 16), (16, 16), (17, 32), (48, 64), (64, 64), (65, 128), (256, 256)])
def test_padding_to_a_power_of_two_of_at_least_16(size, padded):
    assert tt.padded(size) == padded


def test_candidates_suit_the_shape():
    assert tt.candidates(Shape(3, 1, 32)) == [tt.TileConfig(16, 16, 4, 1)]  # N = 1: one 16-row tile
    assert all(c.block_m <= 32 and c.block_n <= 32 for c in tt.candidates(Shape(2, 17, 48)))
    wide = tt.candidates(Shape(1, 4096, 256))
    assert wide and all(c.block_m <= 64 and c.block_n <= 32 for c in wide)
    assert tt.candidates(T22) == list(tt.TILE_CONFIGS)
    for d in (1, 7, 31, 64, 100, 129, 200, 256):
        for n in (1, 15, 16, 17, 100, 1000, 32768):
            assert tt.candidates(Shape(1, n, d)), (n, d)


# -- the kernel on the CPU, through Triton's interpreter -------------------------------------------
INTERPRETED = textwrap.dedent("""
    import json, sys
    import numpy as np, torch
    from attnbench.backends.triton_kernel import launch
    from attnbench.backends.triton_peer import LOG2E
    from attnbench.cases.reference import reference_output
    from attnbench.cases.testcase import Testcase

    results = []
    for B, N, d, block_m, block_n, precision, seed in json.loads(sys.argv[1]):
        qkv = np.random.default_rng(seed).uniform(-3, 3, size=(B, 3, N, d)).astype(np.float32)
        out = torch.full((B, N, d), float("nan"))
        launch(torch.from_numpy(qkv), out, N, d, B, float(np.float32(LOG2E / d ** 0.5)), block_m, block_n, 4, 1, precision)
        got = out.numpy()
        results.append([float(np.abs(got - reference_output(Testcase(qkv))).max()), int(np.isnan(got).sum())])
    print(json.dumps(results))
""")


@pytest.mark.skipif(not HAS_TRITON, reason="Triton and PyTorch are not importable here (the triton extra)")
def test_the_kernel_matches_float64_in_the_interpreter(rng):
    # odd N (partial key and query tiles), N = 1, N a multiple of the key tile, d padded (1, 5, 20, 48) or not
    cases = [(2, 1, 1, 16, 16, "tf32x3"), (3, 37, 5, 16, 16, "ieee"), (2, 70, 48, 32, 32, "tf32x3"),
             (1, 33, 20, 64, 64, "tf32"), (2, 64, 32, 16, 32, "ieee"), (1, 17, 64, 16, 16, "tf32x3")]
    seeds = [int(s) for s in rng.integers(0, 2**31, size=len(cases))]
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", INTERPRETED, json.dumps([[*c, s] for c, s in zip(cases, seeds)])],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    for case, (max_abs, nans) in zip(cases, json.loads(done.stdout.splitlines()[-1])):
        assert nans == 0 and max_abs < 1e-5, (case, max_abs, nans)  # the interpreter's dot is numpy's float32
