"""The reaper: descendants found through /proc, and a sweep that kills them (setsid and double forks too)."""

import os
import subprocess
import sys
import time

from attnbench.sandbox import reaper

# A child that leaves its session and forks again, then exits: the grandchild is an orphan.
ESCAPE = ("import os, time\n"
          "if os.fork() == 0:\n"
          "    os.setsid()\n"
          "    if os.fork() == 0:\n"
          "        time.sleep(30)\n"
          "    os._exit(0)\n")


def test_an_orphan_of_a_double_fork_stays_below_the_subreaper_and_is_swept():
    assert reaper.become_subreaper()
    spared = set(reaper.descendants(os.getpid()))
    subprocess.run([sys.executable, "-c", ESCAPE], check=True, timeout=30)
    deadline = time.monotonic() + 5
    while not set(reaper.descendants(os.getpid())) - spared and time.monotonic() < deadline:
        time.sleep(0.02)
    orphans = set(reaper.descendants(os.getpid())) - spared
    assert orphans, "the grandchild should have been handed to this process"
    assert reaper.sweep(spared) == []
    assert not {pid for pid, state in reaper.descendants(os.getpid()).items() if state != "Z"} - spared


def test_a_sweep_reports_what_it_could_not_kill(monkeypatch):
    # what was here before, as the judge spares it (an earlier test's multiprocessing resource tracker, say)
    spared = set(reaper.descendants(os.getpid()))
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        monkeypatch.setattr(reaper.os, "kill", lambda pid, sig: None)  # as if the kill were refused
        left = reaper.sweep(spared, timeout_s=0.1)
        assert [p.pid for p in left] == [child.pid] and "time.sleep(30)" in left[0].command
    finally:
        monkeypatch.undo()
        child.kill()
        child.wait()


def test_processes_of_counts_this_user():
    assert reaper.processes_of(os.getuid()) >= 1


def test_a_zombie_seen_in_a_scan_means_another_scan(monkeypatch):
    """/proc read line by line: a child listed alive forks, exits and reads as a zombie; its child, born after
    the listing, shows up only in the next scan, which the sweep must make."""
    scans = iter([{101: "Z"}, {102: "S"}, {}])
    killed = []
    monkeypatch.setattr(reaper, "descendants", lambda root: next(scans))
    monkeypatch.setattr(reaper, "_reap", lambda pid: True)
    monkeypatch.setattr(reaper.os, "kill", lambda pid, sig: killed.append(pid))
    monkeypatch.setattr(reaper.time, "sleep", lambda s: None)
    assert reaper.sweep(set()) == [] and killed == [102]
