"""attnbench.sandbox.owned_folders: a folder whose owner died (SIGKILL, no exit handler) is removed by the
next judge; a live owner's folder, a folder without the lock file and an unrelated folder are kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from attnbench.sandbox.owned_folders import LOCK_NAME, make_owned, remove_stale

PREFIX = "attnbench-fresh-"
ROOT = Path(__file__).resolve().parents[2]


def _owner(where: Path, then: str) -> subprocess.Popen:
    """A process that makes an owned folder under `where`, prints its path, then runs `then`."""
    code = textwrap.dedent(f"""
        import os, signal, sys, time
        from pathlib import Path
        from attnbench.sandbox.owned_folders import make_owned
        print(make_owned({PREFIX!r}, Path({str(where)!r})), flush=True)
        {then}
    """)
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)


def test_a_killed_owners_folder_is_removed_and_a_live_ones_is_kept(tmp_path):
    dead = _owner(tmp_path, "os.kill(os.getpid(), signal.SIGKILL)")
    dead_folder = Path(dead.stdout.readline().strip())
    (dead_folder / "case.in").write_bytes(b"x" * 4096)
    assert dead.wait(timeout=30) == -signal.SIGKILL and dead_folder.is_dir()  # SIGKILL ran no exit handler
    live = _owner(tmp_path, "time.sleep(60)")
    try:
        live_folder = Path(live.stdout.readline().strip())
        unlocked = tmp_path / f"{PREFIX}by-hand"  # no lock file: not made by make_owned
        unlocked.mkdir()
        unrelated = tmp_path / "somebody-elses"
        unrelated.mkdir()
        (unrelated / LOCK_NAME).write_text("")
        assert remove_stale(PREFIX, tmp_path) == [dead_folder]
        assert not dead_folder.exists() and live_folder.is_dir() and unlocked.is_dir() and unrelated.is_dir()
    finally:
        live.kill()
        live.wait(timeout=30)
    assert remove_stale(PREFIX, tmp_path) == [live_folder]  # its owner gone now


def test_this_processs_own_folder_is_kept_and_a_link_is_never_followed(tmp_path):
    mine = make_owned(PREFIX, tmp_path)
    target = tmp_path / "target"
    target.mkdir()
    (target / LOCK_NAME).write_text("")
    os.symlink(target, tmp_path / f"{PREFIX}link")
    assert remove_stale(PREFIX, tmp_path) == []
    assert mine.is_dir() and (mine / LOCK_NAME).read_text().startswith(f"pid {os.getpid()}")
    assert target.is_dir() and (tmp_path / f"{PREFIX}link").is_symlink()


def test_a_released_folder_is_no_longer_held(tmp_path):
    from attnbench.sandbox.owned_folders import release

    mine = make_owned(PREFIX, tmp_path)
    assert remove_stale(PREFIX, tmp_path) == []
    release(mine)
    assert remove_stale(PREFIX, tmp_path) == [mine] and not mine.exists()


def test_a_fifo_planted_as_the_lock_file_neither_hangs_the_next_judge_nor_is_removed(tmp_path):
    """Without root the fallback runs programs as the judge's own user, in the machine's /tmp: a FIFO named like
    a stale folder's lock file once made every later judge of that user wait forever at its start (opening a
    FIFO for reading waits for a writer)."""
    planted = tmp_path / f"{PREFIX}planted"
    planted.mkdir()
    os.mkfifo(planted / LOCK_NAME)
    sweeper = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        from pathlib import Path
        from attnbench.sandbox.owned_folders import remove_stale
        print(remove_stale({PREFIX!r}, Path({str(tmp_path)!r})))
        """)], cwd=ROOT, capture_output=True, text=True, timeout=20)
    assert sweeper.returncode == 0 and sweeper.stdout.strip() == "[]", sweeper.stderr
    assert (planted / LOCK_NAME).exists()  # not made by make_owned: kept


def test_a_folder_that_cannot_be_emptied_keeps_its_lock_so_the_next_sweep_tries_again(tmp_path, monkeypatch):
    """24 rooms whose removal left their tmpfs mounts behind had lost their lock file with the rest: no later
    judge's sweep would touch them. The lock goes last, and only with the folder."""
    from attnbench.sandbox import owned_folders

    folder = make_owned("attnbench-test-", tmp_path)
    (folder / "done").write_text("x")
    (folder / "stuck").mkdir()
    real = owned_folders.remove_tree
    monkeypatch.setattr(owned_folders, "remove_tree", lambda path: None if path.name == "stuck" else real(path))
    owned_folders.remove_owned(folder)
    owned_folders.release(folder)
    assert sorted(os.listdir(folder)) == [LOCK_NAME, "stuck"]  # what could go went; the lock stayed
    monkeypatch.setattr(owned_folders, "remove_tree", real)  # the mount gone: the next judge's sweep
    assert remove_stale("attnbench-test-", tmp_path) == [folder] and not folder.exists()


def test_an_emptied_folder_goes_with_its_lock(tmp_path):
    from attnbench.sandbox import owned_folders

    folder = make_owned("attnbench-test-", tmp_path)
    (folder / "a").mkdir()
    (folder / "a" / "b").write_text("x")
    owned_folders.remove_owned(folder)
    owned_folders.release(folder)
    assert not folder.exists()
