"""attnbench.kernels.backend_kinds and backends.registry: each kind's facts stated once, a maker for each."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import attnbench
from attnbench.backends.registry import MAKERS, STREAMING_MAKERS
from attnbench.kernels.backend_kinds import BACKEND_KINDS
from attnbench.kernels.catalogue import REGISTRY

PACKAGE = Path(attnbench.__file__).parent


def test_every_registered_variant_has_a_known_kind():
    for variant in REGISTRY.values():
        assert variant.kind is BACKEND_KINDS[variant.backend]


@pytest.mark.parametrize("kind", list(BACKEND_KINDS.values()), ids=lambda k: k.name)
def test_the_facts_of_a_kind_agree_with_each_other(kind):
    if kind.compiled or kind.needs_torch:
        assert kind.needs_gpu and not kind.runs_on_host
    if kind.pipelined:
        assert kind.compiled  # the ring feeds device buffers that compiled kernels read
    assert (kind.name in STREAMING_MAKERS) == kind.pipelined  # a streaming execution for each kind that streams
    if kind.whole_program:
        assert not (kind.compiled or kind.pipelined or kind.runs_on_host)
        assert kind.name not in MAKERS  # a program runs as a process, not as an execution of passes
    else:
        assert kind.name in MAKERS
    assert kind.cost_weight > 0


def _string_tests_of_backend(path: Path) -> list[int]:
    """Lines where `<x>.backend` is compared (==, !=, in) with a string or a tuple of strings."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        if not any(isinstance(o, ast.Attribute) and o.attr == "backend" for o in operands):
            continue
        literal = any(isinstance(o, ast.Constant) and isinstance(o.value, str) for o in operands) or any(
            isinstance(o, (ast.Tuple, ast.List, ast.Set)) for o in operands)
        if literal:
            found.append(node.lineno)
    return found


def test_no_module_outside_backends_asks_a_variant_for_its_backend_by_name():
    offenders = {str(p.relative_to(PACKAGE)): lines for p in sorted(PACKAGE.rglob("*.py"))
                 if "backends" not in p.relative_to(PACKAGE).parts and (lines := _string_tests_of_backend(p))}
    assert offenders == {}


def test_the_string_test_finder_finds_one(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("if variant.backend == 'cpu':\n    pass\nok = v.backend in ('gpu', 'torch')\n")
    assert _string_tests_of_backend(sample) == [1, 3]
