"""attnbench.sandbox.staged_inputs: as root, a staged input is bound read-only into the box instead of copied, and
the program can neither write it, nor learn where it lives on the host, nor tell by it a rerun from a first run."""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from pathlib import Path

import pytest

from attnbench.sandbox import case_disk, staged_inputs
from attnbench.sandbox.room import Sandbox, SandboxSettings, find_bwrap
from tests.sandbox.c_programs import built

# argv[1] the input, argv[2] the output: writes what the program could learn of its input and do to it
PROBE = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    FILE *out = fopen(argv[2], "w");
    if (!out) return 2;
    struct stat s;
    if (stat(argv[1], &s) != 0) return 3;
    fprintf(out, "before atime %lld mtime %lld ctime %lld ino %llu uid %u gid %u mode %o size %lld\n",
            (long long)s.st_atime, (long long)s.st_mtime, (long long)s.st_ctime, (unsigned long long)s.st_ino,
            s.st_uid, s.st_gid, s.st_mode & 07777, (long long)s.st_size);
    fprintf(out, "me %u\n", (unsigned)getgid());
    unsigned long long sum = 0;
    unsigned char buf[65536];
    int fd = open(argv[1], O_RDONLY);
    ssize_t n;
    while (fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++) sum = sum * 31 + buf[i];
    if (fd >= 0) close(fd);
    fprintf(out, "sum %llu\n", sum);
    stat(argv[1], &s);
    fprintf(out, "after atime %lld\n", (long long)s.st_atime);
    fprintf(out, "write %d\n", open(argv[1], O_WRONLY) >= 0 ? 0 : errno);
    fprintf(out, "truncate %d\n", truncate(argv[1], 0) == 0 ? 0 : errno);
    fprintf(out, "chmod %d\n", chmod(argv[1], 0666) == 0 ? 0 : errno);
    fprintf(out, "utime %d\n", utimes(argv[1], NULL) == 0 ? 0 : errno);
    fprintf(out, "unlink %d\n", unlink(argv[1]) == 0 ? 0 : errno);
    fprintf(out, "rename %d\n", rename(argv[1], "moved.in") == 0 ? 0 : errno);
    struct statx x;
    if (statx(AT_FDCWD, argv[1], 0, STATX_BTIME, &x) == 0)
        fprintf(out, "btime %d %lld\n", (x.stx_mask & STATX_BTIME) ? 1 : 0, (long long)x.stx_btime.tv_sec);
    struct statvfs v;
    if (statvfs(argv[1], &v) == 0) fprintf(out, "statvfs %llu\n", (unsigned long long)(v.f_blocks * v.f_frsize));
    char line[4096];
    FILE *mounts = fopen("/proc/self/mountinfo", "r");
    while (mounts && fgets(line, sizeof line, mounts)) fprintf(out, "mount %s", line);
    return fclose(out) != 0;
}
"""


def _probe(tmp_path: Path) -> Path:
    return built(PROBE, tmp_path)


def _as_root_in_bwrap() -> None:
    if find_bwrap()[0] is None:
        pytest.skip("no bwrap")
    if not staged_inputs.can_stage():
        pytest.skip("staging needs root (a tmpfs of the judge's own) and the system-call filter; without them every "
                    "run copies its input")


def _run(sandbox: Sandbox, label: str, source: Path) -> tuple[dict[str, str], list[str], float]:
    """The probe run on `source` as a judged run is: what it wrote (word -> rest), its mount lines, and the
    time just before its case was prepared."""
    started = time.time()
    case = sandbox.prepare(label, source)
    try:
        assert case.staged is not None and not case.input.exists(), "the input was copied, not bound"
        limits = sandbox.limits_for(1 << 20, 30)
        outcome = sandbox.run([sandbox.program_path(), case.input_arg, case.output_arg], case, 30, limits)
        assert outcome.returncode == 0, outcome.stderr_tail
        lines = case.output.read_text().splitlines()
    finally:
        sandbox.finish(case)
    seen = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in lines if not line.startswith("mount ")}
    return seen, [line[6:] for line in lines if line.startswith("mount ")], started


def _fields(text: str) -> dict[str, int]:
    words = text.split()
    return {words[i]: int(words[i + 1], 8 if words[i] == "mode" else 10) for i in range(0, len(words), 2)}


def _sum(data: bytes) -> int:
    total = 0
    for byte in data:
        total = (total * 31 + byte) % (1 << 64)
    return total


@pytest.fixture
def staged_room(tmp_path):
    _as_root_in_bwrap()
    sandbox = Sandbox.open(_probe(tmp_path), SandboxSettings("required"))
    if sandbox.view is None:
        sandbox.close()
        pytest.skip(f"no view here ({sandbox.view_reason}): inputs are copied")
    yield sandbox
    sandbox.close()
    staged_inputs.unstage_all()


def test_a_staged_input_is_bound_read_only_and_nothing_the_program_does_changes_it(staged_room, tmp_path):
    source = tmp_path / "fresh-secret-seed.in"
    data = os.urandom(300_000)
    source.write_bytes(data)
    assert staged_inputs.stage("t01", source)
    for _ in range(2):  # the second run gets the same bytes, whatever the first tried
        seen, _, _ = _run(staged_room, "t01", source)
        assert int(seen["sum"]) == _sum(data)
        for attempt in ("write", "truncate", "chmod", "utime"):
            assert int(seen[attempt]) != 0, attempt  # EROFS or EACCES: refused
        assert int(seen["unlink"]) != 0 and int(seen["rename"]) != 0  # a mount point: EBUSY
    assert hashlib.sha256(staged_inputs.staged(source).read_bytes()).digest() == hashlib.sha256(data).digest()
    assert source.read_bytes() == data


def test_the_box_names_no_host_folder_and_no_seed_of_a_staged_input(staged_room, tmp_path):
    source = tmp_path / "t01-0123456789abcdef.in"
    source.write_bytes(os.urandom(70_000))
    assert staged_inputs.stage("t01", source)
    seen, mounts, _ = _run(staged_room, "t01", source)
    line = next(m for m in mounts if " /judge/case/t01.in " in m)
    assert line.split()[3] == f"/{staged_inputs.STAGED_NAME}" and " - tmpfs attnbench-case " in line
    everything = "\n".join(mounts)
    for secret in (str(tmp_path), tempfile.gettempdir() + "/", "0123456789abcdef", staged_inputs.STAGED_PREFIX):
        assert secret not in everything
    assert int(seen["statvfs"]) < 1 << 20  # its own tmpfs, sized to the input: no disk of the host's


def test_a_staged_input_shows_no_clock_so_a_rerun_looks_like_a_first_run(staged_room, tmp_path):
    """atime and mtime the epoch before and after a read (noatime), no birth time, the ctime the run's own moment
    as a copy's was, the same inode whatever round staged it."""
    runs = []
    for round_number in range(3):  # a first run and two reruns, each round's input a new one for the label
        source = tmp_path / f"round{round_number}.in"
        source.write_bytes(os.urandom(50_000))
        assert staged_inputs.stage("t01", source)
        time.sleep(1.1)  # a copy made at staging would show it: ctime a second older than the run
        seen, _, started = _run(staged_room, "t01", source)
        before = _fields(seen["before"])
        assert before["atime"] == 0 and before["mtime"] == 0 and _fields(seen["after"])["atime"] == 0
        assert before["ctime"] >= int(started)  # set right before the run, not at staging
        assert before["mode"] == 0o440  # the judge's (root, shown as the overflow uid in the box), not the run's
        assert seen["btime"].split()[0] == "0"  # no birth time: the tmpfs's dated the staging (red team)
        runs.append(before["ino"])
    assert len(set(runs)) == 1


def test_an_input_changed_after_staging_is_copied_not_bound(tmp_path):
    if not staged_inputs.can_stage():
        pytest.skip("staging needs root")
    source = tmp_path / "a.in"
    source.write_bytes(b"x" * 1000)
    try:
        assert staged_inputs.stage("a", source)
        assert staged_inputs.staged(source) is not None
        source.write_bytes(b"y" * 1001)
        assert staged_inputs.staged(source) is None
    finally:
        staged_inputs.unstage_all()


def test_a_new_input_for_a_label_replaces_the_old_one_and_the_end_removes_every_mount(tmp_path):
    if not staged_inputs.can_stage():
        pytest.skip("staging needs root")
    first, second = tmp_path / "1.in", tmp_path / "2.in"
    first.write_bytes(b"1" * 100)
    second.write_bytes(b"2" * 100)
    assert staged_inputs.stage("t01", first) and staged_inputs.stage("t01", second)
    assert staged_inputs.staged(first) is None and staged_inputs.staged(second).read_bytes() == b"2" * 100
    root = staged_inputs._staging_root()
    mounted = [line for line in Path("/proc/self/mounts").read_text().splitlines() if f" {root}/" in line]
    assert len(mounted) == 1 and " noatime" in mounted[0].replace(",", " ")
    staged_inputs.unstage_all()
    assert not root.exists()
    assert f" {root}/" not in Path("/proc/self/mounts").read_text()


def test_a_labels_next_input_keeps_the_first_ones_device_and_inode_whatever_mounts_came_and_went(tmp_path):
    """A staged input's device number is the one thing of it a run can read that its staging chose: a fresh tmpfs
    each round took the lowest number free at that moment, which a round's other mounts decide (the first round's,
    staged right after the builds, had numbers no rerun round's had: a run told the two apart by its input's st_dev;
    red team). A label's tmpfs is kept for the class and its file rewritten in place: one device, one inode."""
    if not staged_inputs.can_stage():
        pytest.skip("staging needs root")
    first, second = tmp_path / "1.in", tmp_path / "2.in"
    first.write_bytes(os.urandom(5000))
    second.write_bytes(os.urandom(5000))
    hole = tmp_path / "hole"
    hole.mkdir()
    assert case_disk.cap(hole, 1 << 20)  # takes the lowest number free: the staging below gets a higher one
    try:
        assert staged_inputs.stage("t01", first)
        before = os.stat(staged_inputs.staged(first))
    finally:
        case_disk.uncap(hole)  # a lower number free again, as a build's or a room's mount frees one
    try:
        assert staged_inputs.stage("t01", second)
        path = staged_inputs.staged(second)
        after = os.stat(path)
        assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)
        assert path.read_bytes() == second.read_bytes() and staged_inputs.staged(first) is None
        assert (after.st_atime_ns, after.st_mtime_ns, after.st_mode & 0o7777) == (0, 0, staged_inputs.STAGED_MODE)
    finally:
        staged_inputs.unstage_all()


def test_without_root_nothing_is_staged_and_runs_copy_their_input(tmp_path, monkeypatch):
    monkeypatch.setattr(staged_inputs, "can_stage", lambda: False)
    source = tmp_path / "a.in"
    source.write_bytes(b"x" * 10)
    assert not staged_inputs.stage("a", source)
    assert staged_inputs.staged(source) is None


def test_an_input_written_straight_into_its_slot_is_bound_as_a_copied_one_is(staged_room, tmp_path):
    """A fresh input written in place (stage_written: no file on the disk, no copy) shows what a staged copy
    shows: the same bytes, read-only, the epoch's times, one inode however often its label is written again."""
    data = [os.urandom(40_000) for _ in range(2)]
    seen_inodes = []
    for number, payload in enumerate(data):
        path = staged_inputs.stage_written("t01", len(payload), lambda f, payload=payload: f.write(payload))
        assert path is not None and staged_inputs.staged(path) == path and path.read_bytes() == payload
        info = os.stat(path)
        assert (info.st_atime_ns, info.st_mtime_ns, info.st_mode & 0o7777) == (0, 0, staged_inputs.STAGED_MODE)
        seen, _, _ = _run(staged_room, "t01", path)
        assert int(seen["sum"]) == _sum(payload) and seen["write"] != "0" and seen["truncate"] != "0"
        seen_inodes.append(_fields(seen["before"])["ino"])
    assert seen_inodes[0] == seen_inodes[1]


def test_an_input_written_into_its_slot_is_removed_by_unstage_and_a_failed_write_leaves_no_mount(tmp_path):
    if not staged_inputs.can_stage():
        pytest.skip("staging needs root")
    try:
        path = staged_inputs.stage_written("t02", 100, lambda f: f.write(b"2" * 100))
        root = staged_inputs._staging_root()
        assert path is not None and f" {path.parent} " in Path("/proc/self/mounts").read_text()
        staged_inputs.unstage(path)
        assert staged_inputs.staged(path) is None and not path.parent.exists()
        assert f" {path.parent} " not in Path("/proc/self/mounts").read_text()

        def fails(f):
            f.write(b"x" * 10)
            raise OSError("disk full")

        assert staged_inputs.stage_written("t03", 100, fails) is None
        assert staged_inputs.stage_written("t04", 100, lambda f: f.write(b"short")) is None  # not the size said
        assert f" {root}/" not in Path("/proc/self/mounts").read_text()
    finally:
        staged_inputs.unstage_all()


def test_without_root_nothing_is_written_into_a_slot(monkeypatch):
    monkeypatch.setattr(staged_inputs, "can_stage", lambda: False)
    assert staged_inputs.stage_written("a", 10, lambda f: pytest.fail("written")) is None


def _read_as(uid: int, path: Path) -> bool:
    """Whether `uid` (no groups but its own) can read `path` on the host, as a fallback run or any user could."""
    import subprocess

    done = subprocess.run(["cat", str(path)], user=uid, group=uid, extra_groups=[], capture_output=True)
    return done.returncode == 0


def test_no_other_user_of_the_host_reads_a_staged_input_only_the_run_it_is_lent_to(staged_room, tmp_path):
    """A staged path is in the host's mount table: a staged input every uid could read was read by a fallback run of
    another judge on the host (the later cases' inputs while the first one ran), and so was every one a judge killed
    outright left mounted (red team). It is the judge's alone, lent to a run's group for that run only."""
    from attnbench.sandbox.room import OWN_UIDS

    stranger = OWN_UIDS.start + 4321
    written = staged_inputs.stage_written("t02", 3000, lambda f: f.write(os.urandom(3000)))
    source = tmp_path / "t01.in"
    source.write_bytes(os.urandom(2000))
    assert written is not None and staged_inputs.stage("t01", source)
    copied = staged_inputs.staged(source)
    for path in (written, copied):
        assert not _read_as(stranger, path), path
    seen, _, _ = _run(staged_room, "t01", source)  # the run reads its own, lent to it
    assert int(seen["sum"]) == _sum(source.read_bytes())
    assert _fields(seen["before"])["gid"] == int(seen["me"]) != os.getegid()
    assert os.stat(copied).st_gid == os.getegid() and not _read_as(int(seen["me"]), copied)  # taken back


def test_a_killed_judges_staged_inputs_are_unmounted_by_the_next_judges_sandbox_whatever_it_stages(tmp_path):
    """A one-program judge killed mid-run left its batch's staged inputs mounted; the next judge that staged
    nothing (suite inputs) kept them, in memory, for good (red team from the docs)."""
    import subprocess
    import sys

    from attnbench.sandbox import room

    if not staged_inputs.can_stage():
        pytest.skip("staging needs root")
    killed = subprocess.run([sys.executable, "-c", (
        "import os\nfrom attnbench.sandbox import staged_inputs\n"
        "path = staged_inputs.stage_written('t01', 100, lambda f: f.write(b'1' * 100))\n"
        "print(path.parent.parent, flush=True)\nos._exit(9)  # killed: no clean-up ran\n")],
        capture_output=True, text=True, check=False)
    folder = Path(killed.stdout.strip())
    assert killed.returncode == 9 and f" {folder}/t01 " in Path("/proc/self/mounts").read_text()
    room.remove_rooms_of_the_gone()  # what every judge's sandbox does when it opens
    assert not folder.exists() and f" {folder}/" not in Path("/proc/self/mounts").read_text()
