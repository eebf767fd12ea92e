"""attnbench.sandbox.jit_cache: a sealed cache is capped, and a run's copy links what it may only read."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from attnbench.sandbox import jit_cache
from tests.judge.classes import CLASS_MODE, can_build, wrapping

ROOT = Path(__file__).resolve().parents[2]
CASE = "odd_17x48"


def _cache(folder: Path, sizes: list[int]) -> Path:
    (folder / "sub").mkdir(parents=True)
    for i, size in enumerate(sizes):
        (folder / "sub" / f"entry{i}").write_bytes(os.urandom(size))
    return folder


def test_a_cache_over_its_bytes_or_entries_is_dropped_with_a_reason(tmp_path, monkeypatch):
    small = _cache(tmp_path / "small", [1000, 2000])
    assert jit_cache.seal_cache(small) == "" and len(list(small.rglob("*"))) == 3
    monkeypatch.setattr(jit_cache, "CACHE_BYTES", 2500)
    big = _cache(tmp_path / "big", [1000, 2000])
    why = jit_cache.seal_cache(big)
    assert "dropped" in why and big.is_dir() and not list(big.iterdir())
    monkeypatch.setattr(jit_cache, "CACHE_BYTES", 1 << 30)
    monkeypatch.setattr(jit_cache, "CACHE_ENTRIES", 2)
    many = _cache(tmp_path / "many", [1, 1, 1])
    assert "entries" in jit_cache.seal_cache(many) and not list(many.iterdir())


def test_a_cache_of_many_small_entries_under_both_caps_is_dropped_too(tmp_path, monkeypatch):
    # The red team's second bomb: entries of exactly LINK_FROM bytes are copied into every run, so a cache
    # under the byte and entry caps still made each judged run copy 124 MiB untimed.
    monkeypatch.setattr(jit_cache, "LINK_FROM", 1000)
    monkeypatch.setattr(jit_cache, "COPIED_BYTES", 2500)
    linked = _cache(tmp_path / "linked", [5000, 5000, 5000])  # large entries are linked, not copied
    assert jit_cache.seal_cache(linked) == ""
    small = _cache(tmp_path / "small", [1000, 1000, 1000])
    why = jit_cache.seal_cache(small)
    assert "small files" in why and not list(small.iterdir())


@pytest.mark.skipif(os.geteuid() != 0, reason="a run of another user needs root")
def test_a_runs_copy_links_large_entries_it_cannot_write_and_copies_the_rest(tmp_path):
    sealed = _cache(tmp_path / "sealed", [jit_cache.LINK_FROM + 1, 100])
    assert jit_cache.seal_cache(sealed) == ""
    before = (sealed / "sub" / "entry0").read_bytes()
    run = tmp_path / "run"
    run.mkdir()
    user = 2_000_000_123
    jit_cache.cache_copy(sealed, run, user)
    linked, copied = run / "sub" / "entry0", run / "sub" / "entry1"
    assert linked.stat().st_ino == (sealed / "sub" / "entry0").stat().st_ino and linked.stat().st_uid == 0
    assert copied.stat().st_ino != (sealed / "sub" / "entry1").stat().st_ino and copied.stat().st_uid == user
    tried = subprocess.run(["/bin/sh", "-c", f"echo x >> {linked}; echo y >> {copied}"], user=user, group=user,
                           extra_groups=[], capture_output=True)
    assert tried.returncode != 0 and (sealed / "sub" / "entry0").read_bytes() == before
    assert jit_cache.seal_cache(sealed, first=False) == "" and (sealed / "sub" / "entry0").exists()


@pytest.mark.skipif(not can_build(), reason="needs cc and make")
def test_a_warm_up_that_fills_the_cache_has_it_dropped_and_its_runs_start_empty(tmp_path, monkeypatch):
    from attnbench.api import programs
    from attnbench.sandbox.room import SandboxSettings

    monkeypatch.setattr(jit_cache, "CACHE_BYTES", 1 << 20)
    filler = (ROOT / "tests" / "adversarial" / "programs" / "cache_filler.c").read_text()
    (tmp_path / "filler.c").write_text(wrapping(filler, "int carried = fill_cache(4, 400000); if (carried) return carried;"))
    board = programs.judge_class([tmp_path / "filler.c"], CASE, time_limits="none", rerun_top=1,
                                 sandbox=SandboxSettings(CLASS_MODE))
    row = board.rows[0]
    assert row.entries[CASE].verdict == "PASS", row.entries[CASE].message  # no judged run saw the filling
    assert len(row.entries[CASE].runs_s) == 3 and "CUDA cache" in row.build_message and "dropped" in row.build_message
