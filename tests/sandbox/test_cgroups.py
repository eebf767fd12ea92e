"""attnbench.sandbox.cgroups: a run's cgroup gets its memory and process limits, and where none can be made
the reason is said (the judge then uses RLIMIT_AS). The kernel's side needs root and a delegated cgroup v2
with the memory controller; here a folder stands in for the hierarchy, to check what is written."""

from __future__ import annotations

import os

import pytest

from attnbench.sandbox import cgroups


def test_a_run_group_gets_memory_max_swap_zero_and_pids_max(tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("only root makes cgroups")
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("")
    monkeypatch.setattr(cgroups, "_v2_root", lambda: tmp_path)
    groups, why = cgroups.RunGroups.make()
    assert groups is not None and why == "" and groups.controllers == ("memory", "pids")
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+memory +pids"
    group = groups.run_group(64 << 20, 40)
    assert (group / "memory.max").read_text() == str(64 << 20) and (group / "pids.max").read_text() == "40"
    (group / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    assert cgroups.limits_hit(group) == cgroups.LimitsHit(memory=True, processes=False)


def test_without_a_memory_pids_or_cpuset_controller_the_reason_is_given(tmp_path, monkeypatch):
    (tmp_path / "cgroup.controllers").write_text("hugetlb\n")
    monkeypatch.setattr(cgroups, "_v2_root", lambda: tmp_path)
    groups, why = cgroups.RunGroups.make()
    assert groups is None
    assert why in ("the cgroup v2 here has no memory, pids or cpuset controller",
                   "the judge is not root, so it cannot make a cgroup")


def test_a_run_group_gets_its_processes_and_cores_without_a_memory_controller(tmp_path):
    parent = tmp_path / "judge"
    parent.mkdir()
    groups = cgroups.RunGroups(parent, ("pids", "cpuset"))
    run = groups.run_group(None, 64, [2, 3])
    assert (run / "pids.max").read_text() == "64" and (run / "cpuset.cpus").read_text() == "2,3"
    assert not (run / "memory.max").exists()


def test_the_kernels_refusals_are_read_from_the_groups_events(tmp_path):
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 12\noom 0\noom_kill 0\n")
    (tmp_path / "pids.events").write_text("max 3\n")
    assert cgroups.limits_hit(tmp_path) == cgroups.LimitsHit(memory=False, processes=True)  # memory reclaimed, no kill
    (tmp_path / "pids.events").write_text("max 0\n")
    (tmp_path / "memory.events").write_text("oom_kill 2\n")
    assert cgroups.limits_hit(tmp_path) == cgroups.LimitsHit(memory=True, processes=False)
    assert cgroups.limits_hit(tmp_path / "gone") == cgroups.LimitsHit()


def test_a_run_is_killed_by_one_write_to_cgroup_kill_and_waited_for_by_its_events(tmp_path):
    """A folder stands in for the group: the kill is the write of "1", the wait ends when `populated 0` is read."""
    (tmp_path / "cgroup.kill").write_text("")
    (tmp_path / "cgroup.events").write_text("populated 0\nfrozen 0\n")
    assert cgroups.kill_and_wait(tmp_path, 1.0) == []
    assert (tmp_path / "cgroup.kill").read_text() == "1"


def test_what_a_kill_could_not_end_in_time_is_named_by_pid(tmp_path):
    (tmp_path / "cgroup.kill").write_text("")
    (tmp_path / "cgroup.events").write_text("populated 1\nfrozen 0\n")
    (tmp_path / "cgroup.procs").write_text("4242\n4243\n")
    assert cgroups.kill_and_wait(tmp_path, 0.1) == [4242, 4243]


def test_a_thread_still_exiting_past_the_wait_is_not_taken_for_an_ended_run(tmp_path):
    """A process whose leader has exited and whose last thread is still on its way out (a large memory freed in
    exit_mm, its files not yet closed) keeps the group populated, but cgroup.procs leaves it out (a dying leader
    without live threads is not listed): the empty list was read as "every one has exited" (red team 18)."""
    (tmp_path / "cgroup.kill").write_text("")
    (tmp_path / "cgroup.events").write_text("populated 1\nfrozen 0\n")
    (tmp_path / "cgroup.procs").write_text("")
    (tmp_path / "cgroup.threads").write_text("4244\n")
    assert cgroups.kill_and_wait(tmp_path, 0.1) == [4244]
    (tmp_path / "cgroup.threads").write_text("")  # populated, yet naming no task: still not ended
    assert cgroups.kill_and_wait(tmp_path, 0.1) == [0]


def test_without_cgroup_kill_the_caller_is_told_to_kill_another_way(tmp_path):
    (tmp_path / "cgroup.events").write_text("populated 1\n")
    assert cgroups.kill_and_wait(tmp_path, 0.1) is None
