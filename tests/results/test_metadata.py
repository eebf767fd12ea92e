"""A result's metadata block."""

from __future__ import annotations

import sys

from attnbench.results.metadata import collect


def test_the_torch_versions_the_workers_reported_are_kept_without_importing_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` fails here
    reported = {"torch_version": "2.11.0+cu130", "torch_cuda_version": "13.0"}
    data = collect(with_torch=True, torch_versions=reported)
    assert (data["torch_version"], data["torch_cuda_version"]) == ("2.11.0+cu130", "13.0")
    assert collect(with_torch=True)["torch_version"] is None  # nothing reported and no torch here
    assert collect(with_torch=False, torch_versions=reported)["torch_version"] is None  # no peer in the run
