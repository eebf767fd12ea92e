"""attnbench.sandbox.case_disk: a case folder as a size-capped tmpfs of its own (as root), mounted and unmounted
by system calls, never by starting `mount` and `umount` (four mounts a run, 2.5-9 ms each as programs)."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest

from attnbench.sandbox import case_disk

pytestmark = pytest.mark.skipif(not case_disk.can_cap(), reason="mounting a tmpfs needs root (and a kernel that lets us)")


def _mounted(folder: Path) -> list[str]:
    return [line for line in Path("/proc/self/mounts").read_text().splitlines() if line.split()[1] == str(folder)]


@pytest.fixture
def no_programs(monkeypatch):
    """Starting any program fails the test: the mounts are the judge's own system calls."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"a program was started: {args[0] if args else kwargs}")

    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)


def test_a_capped_folder_holds_its_size_and_no_more_and_is_gone_when_uncapped(tmp_path, no_programs):
    folder = tmp_path / "case"
    folder.mkdir()
    assert case_disk.cap(folder, 1 << 20)
    lines = _mounted(folder)
    assert len(lines) == 1 and lines[0].startswith("attnbench-case ") and " tmpfs " in lines[0]
    assert "size=1024k" in lines[0] and "nr_inodes=10000" in lines[0] and "mode=700" in lines[0]
    with pytest.raises(OSError) as full:
        (folder / "big").write_bytes(b"x" * (2 << 20))
    assert full.value.errno == errno.ENOSPC
    case_disk.uncap(folder)
    assert not _mounted(folder) and not list(folder.iterdir())  # what the run wrote went with the mount


def test_a_busy_folder_is_detached_and_a_link_is_never_followed(tmp_path, no_programs):
    folder = tmp_path / "busy"
    folder.mkdir()
    assert case_disk.cap(folder, 1 << 20)
    holder = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.chdir(folder)  # busy: a plain unmount is refused, a lazy one detaches it
        case_disk.uncap(folder)
        assert not _mounted(folder)
    finally:
        os.chdir(tmp_path)
        os.close(holder)
    target = tmp_path / "target"
    target.mkdir()
    assert case_disk.cap(target, 1 << 20)
    link = tmp_path / "link"
    link.symlink_to(target)
    case_disk.uncap(link)  # a link to a mount point: not followed, nothing unmounted
    assert _mounted(target)
    case_disk.uncap_all_below(tmp_path)
    assert not _mounted(target)
