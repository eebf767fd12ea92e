"""A class whose submissions try to starve the judge (issue: a judge no submission can starve), judged as
root on a small tmpfs standing in for the judge's disk (no root reserve): space reserved through stdout,
stderr and the warm-up's cache, folders deeper than PATH_MAX in the cache, a rerun told from a first run,
a 1000 MiB program, the host read from the box. The disk keeps its space, the honest rows pass, the
scoreboard is saved with every round's seeds, and no zombie is left."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.judge.classes import EXAMPLE, can_build, wrapping

CASE = "odd_17x48"
PROGRAMS = Path(__file__).resolve().parents[1] / "adversarial" / "programs"
DISK_BYTES = 192 << 20


def _can_mount() -> str:
    from attnbench.sandbox import case_disk
    from attnbench.sandbox.room import find_bwrap

    if not can_build():
        return "no C compiler or make"
    if not case_disk.can_cap():
        return "a small tmpfs for the judge's disk needs root and mount"
    if find_bwrap()[0] is None:
        return "no bubblewrap"
    return ""


pytestmark = pytest.mark.skipif(bool(_can_mount()), reason=_can_mount() or "runs")


@pytest.fixture
def small_disk(tmp_path, monkeypatch):
    """A tmpfs of DISK_BYTES as the judge's temporary disk (every folder it makes goes there)."""
    from attnbench.judge import fresh_inputs

    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES},mode=1777", "judge-disk", str(disk)], check=True)
    monkeypatch.setattr(tempfile, "tempdir", str(disk))
    monkeypatch.setenv("TMPDIR", str(disk))
    monkeypatch.setattr(fresh_inputs, "_folder", [])
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def _free(disk: Path) -> int:
    info = os.statvfs(disk)
    return info.f_bavail * info.f_frsize


def _class(folder: Path) -> Path:
    folder.mkdir()
    honest = folder / "alice"
    honest.mkdir()
    shutil.copy(EXAMPLE, honest / "attention.c")
    (honest / "Makefile").write_text("hw4: attention.c\n\tcc -O2 -o hw4 attention.c -lm\n")
    reserver = (PROGRAMS / "disk_reserver.c").read_text()
    (folder / "streams.c").write_text(wrapping(reserver, "{ int rc = reserve_streams(); if (rc) return rc; }"))
    (folder / "cachehog.c").write_text(wrapping(reserver, "{ int rc = reserve_in_cache(); if (rc) return rc; }"))
    deep = (PROGRAMS / "deep_cache.c").read_text()
    (folder / "deep.c").write_text(wrapping(deep, "{ int rc = plant_deep(); if (rc) return rc; }"))
    spy = (PROGRAMS / "rerun_spy.c").read_text()
    (folder / "spy.c").write_text(wrapping(spy, "{ int rc = spy_on_reruns(2.0); if (rc) return rc; }"))
    # slow and honest, judged after the spy: its build, warm-up and first run put seconds between the
    # spy's first run and a rerun that would not warm up again
    (folder / "zed.c").write_text(wrapping("", "usleep(1500000);"))
    padded = folder / "padded"
    padded.mkdir()
    shutil.copy(EXAMPLE, padded / "attention.c")
    (padded / "Makefile").write_text("hw4: attention.c\n\tcc -O2 -o hw4 attention.c -lm && truncate -s 1000M hw4\n")
    shutil.copy(PROGRAMS / "host_reader.c", folder / "reader.c")
    return folder


def test_no_submission_starves_the_judge(tmp_path, small_disk):
    from click.testing import CliRunner

    from attnbench.cli import main
    from attnbench.results.scoreboard import load_scoreboard
    from attnbench.sandbox.reaper import become_subreaper, descendants

    become_subreaper()
    zombies_before = {pid for pid, state in descendants(os.getpid()).items() if state == "Z"}
    submissions = _class(tmp_path / "class")
    free_before = _free(small_disk)
    results = tmp_path / "results"
    outcome = CliRunner().invoke(main, ["judge", str(submissions), "--cases", CASE, "--time-limits", "none",
                                        "--rerun-top", "6", "--sandbox", "required", "--results-dir", str(results)])
    assert outcome.exit_code == 0, outcome.output
    saved = sorted(results.glob("*.json"))
    assert len(saved) == 1
    board = load_scoreboard(saved[0])
    rows = {row.name: row for row in board.rows}
    seeds = board.settings["seeds"]
    assert set(seeds) == {"first", "rerun 2", "rerun 3"}, seeds  # the final scoreboard, every round's seeds
    for name in ("alice", "streams", "cachehog", "deep", "spy", "zed"):
        entry = rows[name].entries[CASE]
        assert entry.verdict == "PASS", (name, entry.message)
        assert len(entry.runs_s) == 3, (name, entry.runs_s)  # reruns too: none told apart from a first run
    assert "dropped" in rows["deep"].build_message and "deeper than" in rows["deep"].build_message
    assert not rows["padded"].built and "over the 64 MiB" in rows["padded"].build_message
    shown = rows["reader"].entries[CASE].message
    assert "stdout=pipe:" in shown and "stdout_free=0" in shown and str(small_disk) not in shown
    accounts = shown.split("accounts=")[1].split()[0].strip(",").split(",")
    assert set(accounts) <= {"root", "runner", "nobody"}, accounts
    assert str(_free(small_disk)) not in shown
    assert _free(small_disk) >= free_before - (1 << 20)  # the disk keeps its space
    zombies = {pid for pid, state in descendants(os.getpid()).items() if state == "Z"} - zombies_before
    assert not zombies
