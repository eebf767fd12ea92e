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


def _sealed(written: Path, tmp_path: Path) -> tuple[str, Path]:
    sealed = tmp_path / f"sealed-{written.name}"
    return jit_cache.seal_cache(written, sealed), sealed


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_cache_over_its_bytes_or_entries_is_dropped_with_a_reason(tmp_path, monkeypatch):
    small = _cache(tmp_path / "small", [1000, 2000])
    why, sealed = _sealed(small, tmp_path)
    assert why == "" and _tree(sealed) == _tree(small) == ["sub", "sub/entry0", "sub/entry1"]
    assert (sealed / "sub" / "entry1").read_bytes() == (small / "sub" / "entry1").read_bytes()
    monkeypatch.setattr(jit_cache, "CACHE_BYTES", 2500)
    why, sealed = _sealed(_cache(tmp_path / "big", [1000, 2000]), tmp_path)
    assert "dropped" in why and sealed.is_dir() and not list(sealed.iterdir())
    monkeypatch.setattr(jit_cache, "CACHE_BYTES", 1 << 30)
    monkeypatch.setattr(jit_cache, "CACHE_ENTRIES", 2)
    why, sealed = _sealed(_cache(tmp_path / "many", [1, 1, 1]), tmp_path)
    assert "entries" in why and not list(sealed.iterdir())


def test_blocks_a_file_reserves_past_its_size_count(tmp_path, monkeypatch):
    # fallocate(FALLOC_FL_KEEP_SIZE) once held the judge's disk under a cache that sealing measured by size
    written = _cache(tmp_path / "reserved", [10])
    with open(written / "sub" / "entry0", "r+b") as f:
        try:
            os.posix_fallocate(f.fileno(), 0, 1)  # touch the call first: some file systems have none
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            if libc.fallocate(f.fileno(), 1, ctypes.c_long(0), ctypes.c_long(4 << 20)) != 0:  # KEEP_SIZE
                pytest.skip("this file system cannot reserve past a file's size")
        except OSError:
            pytest.skip("no fallocate here")
    assert os.stat(written / "sub" / "entry0").st_size == 10
    monkeypatch.setattr(jit_cache, "CACHE_BYTES", 1 << 20)
    why, sealed = _sealed(written, tmp_path)
    assert "more than 1 MiB" in why and not list(sealed.iterdir())


def test_a_cache_of_many_small_entries_under_both_caps_is_dropped_too(tmp_path, monkeypatch):
    # The red team's second bomb: entries of exactly LINK_FROM bytes are copied into every run, so a cache
    # under the byte and entry caps still made each judged run copy 124 MiB untimed.
    monkeypatch.setattr(jit_cache, "LINK_FROM", 1000)
    monkeypatch.setattr(jit_cache, "COPIED_BYTES", 2500)
    why, _ = _sealed(_cache(tmp_path / "linked", [5000, 5000, 5000]), tmp_path)  # large entries: linked
    assert why == ""
    why, sealed = _sealed(_cache(tmp_path / "small", [1000, 1000, 1000]), tmp_path)
    assert "small files" in why and not list(sealed.iterdir())


def _deep(folder: Path, levels: int) -> int:
    """folder/NAME/NAME/... `levels` deep, names of 255 bytes (past PATH_MAX from 16 on); its descriptor."""
    below = os.open(folder, os.O_RDONLY)
    for _ in range(levels):
        os.mkdir("n" * 255, dir_fd=below)
        inner = os.open("n" * 255, os.O_RDONLY, dir_fd=below)
        os.close(below)
        below = inner
    return below


@pytest.mark.parametrize("plant", ["big", "link", "setuid", "fifo"])
def test_what_hides_below_folders_deeper_than_path_max_drops_the_whole_cache(tmp_path, plant):
    # sealing once met ENAMETOOLONG from lstat and went on: 683 MiB in 3,202 entries, a link to /etc/shadow
    # and a mode-04777 file stayed in the sealed cache every judged run copied
    from attnbench.sandbox.staging import remove_tree

    written = _cache(tmp_path / "deep", [100])
    bottom = _deep(written, 17)
    try:
        if plant == "big":
            fd = os.open("blob", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=bottom)
            os.ftruncate(fd, jit_cache.CACHE_BYTES + 1)
            os.close(fd)
        elif plant == "link":
            os.symlink("/etc/shadow", "shadow", dir_fd=bottom)
        elif plant == "setuid":
            fd = os.open("suid", os.O_WRONLY | os.O_CREAT, 0o4777, dir_fd=bottom)
            os.fchmod(fd, 0o4777)
            os.close(fd)
        else:
            os.mkfifo("fifo", dir_fd=bottom)
    finally:
        os.close(bottom)
    why, sealed = _sealed(written, tmp_path)
    remove_tree(written)
    assert "dropped" in why and "deeper than" in why, why
    assert sealed.is_dir() and not list(sealed.iterdir())


@pytest.mark.parametrize("plant", ["link", "fifo", "hardlink"])
def test_a_link_or_special_file_anywhere_drops_the_whole_cache(tmp_path, plant):
    written = _cache(tmp_path / "odd", [100, 200])
    if plant == "link":
        (written / "sub" / "shadow").symlink_to("/etc/shadow")
    elif plant == "fifo":
        os.mkfifo(written / "sub" / "fifo")
    else:
        os.link(written / "sub" / "entry0", written / "twice")
    why, sealed = _sealed(written, tmp_path)
    assert "dropped" in why and {"link": "symbolic link", "fifo": "special file", "hardlink": "hard link"}[plant] in why
    assert not list(sealed.iterdir())


def test_sealed_files_are_the_judges_own_read_only_and_a_new_seal_replaces_the_old(tmp_path):
    written = _cache(tmp_path / "w", [100])
    os.chmod(written / "sub" / "entry0", 0o6777)
    os.chmod(written / "sub", 0o777)
    why, sealed = _sealed(written, tmp_path)
    assert why == ""
    for path in (sealed / "sub", sealed / "sub" / "entry0"):
        info = os.lstat(path)
        assert info.st_uid == os.geteuid() and not info.st_mode & 0o7022
        assert os.stat(path).st_ino != os.stat(written / path.relative_to(sealed)).st_ino
    again = _cache(tmp_path / "again", [5])
    assert jit_cache.seal_cache(again, sealed) == "" and (sealed / "sub" / "entry0").read_bytes() == (
        again / "sub" / "entry0").read_bytes()


@pytest.mark.skipif(os.geteuid() != 0, reason="a run of another user needs root")
def test_a_runs_copy_links_large_entries_it_cannot_write_and_copies_the_rest(tmp_path):
    why, sealed = _sealed(_cache(tmp_path / "w", [jit_cache.LINK_FROM + 1, 100]), tmp_path)
    assert why == ""
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


def test_a_cache_each_run_copies_whole_is_capped_at_what_a_run_may_copy(tmp_path, monkeypatch):
    """As root a run's copy is a tmpfs of its own, where nothing can be linked: a warm-up that sealed 200 files of
    1 MB, each over LINK_FROM and so "linked", made every judged run copy 192 MB into memory (red team)."""
    monkeypatch.setattr(jit_cache, "LINK_FROM", 1000)
    monkeypatch.setattr(jit_cache, "UNLINKED_BYTES", 20000)  # blocks count: 8 KiB a file
    written = _cache(tmp_path / "large", [5000, 5000, 5000])
    assert jit_cache.seal_cache(written, tmp_path / "linked") == ""  # runs link the large entries
    why = jit_cache.seal_cache(written, tmp_path / "copied", linked=False)
    assert "which each run would copy" in why and not list((tmp_path / "copied").iterdir())
    assert jit_cache.seal_cache(_cache(tmp_path / "fits", [5000, 5000]), tmp_path / "kept", linked=False) == ""


@pytest.mark.skipif(not can_build(), reason="needs cc and make")
def test_as_root_a_warm_up_whose_cache_every_run_would_copy_whole_has_it_dropped(tmp_path, monkeypatch):
    from attnbench.cases.testcase import Shape
    from attnbench.sandbox import case_disk
    from attnbench.sandbox.program_run import ProgramSpec, warm_up
    from attnbench.sandbox.room import Sandbox, SandboxSettings

    if not case_disk.can_cap():
        pytest.skip("as root only: without it a run's copy is on the sealed cache's disk and links its large entries")
    monkeypatch.setattr(jit_cache, "UNLINKED_BYTES", 1 << 20)
    (tmp_path / "fill.c").write_text(r"""
#include <stdio.h>
#include <stdlib.h>
int main(void) {  /* three entries of 600 kB, each over LINK_FROM */
    char path[4096];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/entry%d", getenv("CUDA_CACHE_PATH"), i);
        FILE *f = fopen(path, "w");
        for (int j = 0; f && j < 600000; j++) fputc(j, f);
        if (f) fclose(f);
    }
    return 0;
}
""")
    subprocess.run(["cc", "-O1", "-o", str(tmp_path / "fill"), str(tmp_path / "fill.c")], check=True)
    cache = tmp_path / "cache"
    room = Sandbox.open(tmp_path / "fill", SandboxSettings(CLASS_MODE), cuda_cache=cache, cache_writable=True)
    try:
        if not room.disk_capped:
            pytest.skip("no capped tmpfs for the runs here")
        warmed = warm_up(room, ProgramSpec("c", tmp_path / "unused.in", Shape(1, 17, 48), 30))
    finally:
        room.close()
    assert "which each run would copy" in warmed.dropped and not list(cache.iterdir())
