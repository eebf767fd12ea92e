"""attnbench.sandbox.box_view: as root, a program in the box reads nothing of the host's disk: its mounts name
none of the judge's folders, and statvfs on every folder bound in reports the box's own tmpfs."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from attnbench.sandbox import case_disk
from attnbench.sandbox.process import run_process
from attnbench.sandbox.room import Sandbox, SandboxSettings, find_bwrap
from tests.sandbox.c_programs import built

# Writes into the file argv[1] its mounts, then "statvfs PATH BLOCKS FREE" for each path after it
PROBE = r"""
#include <stdio.h>
#include <sys/statvfs.h>
int main(int argc, char **argv) {
    char line[4096];
    FILE *out = fopen(argv[1], "w"), *mounts = fopen("/proc/self/mountinfo", "r");
    if (!out) return 2;
    while (mounts && fgets(line, sizeof line, mounts)) fputs(line, out);
    for (int i = 2; i < argc; i++) {
        struct statvfs s;
        if (statvfs(argv[i], &s) == 0) fprintf(out, "statvfs %s %llu %llu\n", argv[i],
            (unsigned long long)s.f_blocks, (unsigned long long)s.f_bfree);
    }
    return fclose(out) != 0;
}
"""
SEEN = ("/usr", "/etc/passwd", "/etc/ld.so.cache", "/judge/program", "/judge/program/probe", "/judge/case", "/tmp")


def _probe(tmp_path: Path) -> Path:
    return built(PROBE, tmp_path)


def _in_box(sandbox: Sandbox) -> str:
    case = sandbox.prepare("c", None)
    try:
        outcome = run_process(sandbox.command([sandbox.program_path(), f"{case.output_arg}", *SEEN], case),
                              case.folder, 30, user=sandbox.user, env=sandbox.case_env(case))
        assert outcome.returncode == 0, outcome.stderr_tail
        return case.output.read_text()
    finally:
        sandbox.finish(case)


@pytest.mark.skipif(find_bwrap()[0] is None, reason="no bwrap")
def test_as_root_the_box_names_no_folder_of_the_judges_and_no_statistics_of_the_hosts_disk(tmp_path):
    if not case_disk.can_cap():
        pytest.skip("mounting needs root (without it the run's header says what the box shows)")
    sandbox = Sandbox.open(_probe(tmp_path), SandboxSettings("required"))
    try:
        assert sandbox.view is not None, sandbox.view_reason
        # a folder with mounts inside (a container's GPU driver files in /usr/lib) is bound as it is, and said
        as_is = [str(folder) for folder in sandbox.view.as_is]
        notes = [n for n in sandbox.confinement.limit_notes if n.startswith("what the box shows")]
        assert len(notes) == bool(as_is) and all("bound as they are" in n for n in notes), notes
        shown = _in_box(sandbox)
    finally:
        sandbox.close()
    disks = {(s.f_blocks, s.f_bfree) for s in (os.statvfs(p) for p in ("/", "/usr", tempfile.gettempdir(), tmp_path))}
    seen = {words[1]: (int(words[2]), int(words[3])) for words in
            (line.split() for line in shown.splitlines() if line.startswith("statvfs "))}
    assert set(seen) == set(SEEN), shown
    for path, (blocks, free) in seen.items():  # the free count moves: compare the size, and the free nearby
        if any(path == folder or path.startswith(folder + "/") for folder in as_is):
            continue  # bound as it is, as its note says
        assert not any(blocks == b and abs(free - f) < 1 << 16 for b, f in disks), f"{path} shows the host's disk"
    mounts = "\n".join(line for line in shown.splitlines() if not line.startswith("statvfs "))
    assert "/judge/program" in mounts and str(sandbox.root) not in mounts
    assert tempfile.gettempdir() + "/" not in mounts and str(tmp_path) not in mounts
    assert "/usr" in as_is or not any(line.split()[3] == "/" and line.split()[4] == "/usr" and " ext" in line
                                      for line in mounts.splitlines()), "/usr is bound from the host's disk as it is"
    assert not [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if str(sandbox.root) in line]


def test_without_a_view_the_header_says_what_the_box_shows(tmp_path, monkeypatch):
    from attnbench.sandbox import box_view

    if find_bwrap()[0] is None:
        pytest.skip("no bwrap")
    monkeypatch.setattr(box_view, "make", lambda room, folders: (None, "mounting needs root"))
    sandbox = Sandbox.open(_probe(tmp_path), SandboxSettings("required"))
    try:
        notes = [n for n in sandbox.confinement.limit_notes if n.startswith("what the box shows")]
        assert len(notes) == 1 and "mounting needs root" in notes[0] and "free space" in notes[0]
        assert "/judge/program" in _in_box(sandbox)  # the runs still run, binding the host's folders
    finally:
        sandbox.close()


def test_a_view_bwrap_cannot_bind_falls_back_to_plain_binds_and_says_so(tmp_path, monkeypatch):
    """Overlays bwrap refuses (some kernel or container, say) cost the view, never the sandbox, even after a room
    whose view worked: the probe asked once per process (room._probe_key) is asked again for another view."""
    from attnbench.sandbox import box_view

    if find_bwrap()[0] is None or not case_disk.can_cap():
        pytest.skip("needs bwrap and root")
    program = _probe(tmp_path)
    Sandbox.open(program, SandboxSettings("required")).close()  # its view's probe passed, and is kept
    real = box_view.make

    def unbindable(room, folders):  # a view whose overlay of /usr is no folder at all: bwrap cannot bind it
        view, why = real(room, folders)
        if view is not None:
            view.sources["/usr"] = view.root / "missing"
        return view, why

    monkeypatch.setattr(box_view, "make", unbindable)
    sandbox = Sandbox.open(program, SandboxSettings("required"))
    try:
        assert sandbox.confinement.sandboxed and sandbox.view is None
        notes = [n for n in sandbox.confinement.limit_notes if n.startswith("what the box shows")]
        assert len(notes) == 1 and "bwrap could not bind its overlays here" in notes[0]
        assert "/judge/program" in _in_box(sandbox)
    finally:
        sandbox.close()
    assert not [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if str(sandbox.root) in line]


COPY = r"""
#include <stdio.h>
int main(int argc, char **argv) {  /* copies the file argv[2] into argv[1] */
    FILE *in = fopen(argv[2], "r"), *out = fopen(argv[1], "w");
    int c;
    if (!in || !out) return 2;
    while ((c = fgetc(in)) != EOF) fputc(c, out);
    return fclose(out) != 0;
}
"""


def test_a_folder_with_mounts_inside_is_bound_as_it_is_so_a_containers_driver_files_show(tmp_path):
    """A container's runtime binds the GPU driver's libraries over files of /usr/lib; an overlay of the folder
    showed the files underneath, and every CUDA program in the box failed ("CUDA driver version is insufficient
    for CUDA runtime version"): on an H200, eight real submissions wrote zeros or crashed."""
    if find_bwrap()[0] is None or not case_disk.can_cap() or shutil.which("cc") is None:
        pytest.skip("needs bwrap, root and cc")
    libs = tmp_path / "libs"
    libs.mkdir(mode=0o755)
    placeholder = libs / "libdriver.so.1"
    placeholder.write_text("the file underneath\n")
    driver = tmp_path / "driver"
    driver.write_text("the driver the runtime bound\n")
    for path in (placeholder, driver):
        path.chmod(0o644)
    (tmp_path / "copy.c").write_text(COPY)
    subprocess.run(["cc", "-O1", "-o", str(tmp_path / "copy"), str(tmp_path / "copy.c")], check=True)
    subprocess.run(["mount", "--bind", str(driver), str(placeholder)], check=True)
    try:
        sandbox = Sandbox.open(tmp_path / "copy", SandboxSettings("required", binds=(libs,)))
        try:
            assert sandbox.view is not None and libs in sandbox.view.as_is, sandbox.view_reason
            notes = [n for n in sandbox.confinement.limit_notes if n.startswith("what the box shows")]
            assert len(notes) == 1 and str(libs) in notes[0] and "bound as they are" in notes[0]
            case = sandbox.prepare("c", None)
            try:
                outcome = run_process(sandbox.command([sandbox.program_path(), case.output_arg, str(placeholder)],
                                                      case), case.folder, 30, user=sandbox.user,
                                      env=sandbox.case_env(case))
                assert outcome.returncode == 0, outcome.stderr_tail
                assert case.output.read_text() == "the driver the runtime bound\n"
            finally:
                sandbox.finish(case)
        finally:
            sandbox.close()
    finally:
        subprocess.run(["umount", str(placeholder)], check=False)


def test_mount_points_are_read_with_their_escapes_and_only_mounts_strictly_inside_count():
    from attnbench.sandbox.box_view import has_mounts_inside, mount_points

    info = ("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
            "40 22 0:5 /lib/x86_64-linux-gnu/libcuda.so.580 /usr/lib/x86_64-linux-gnu/libcuda.so.1 ro - ext4 x ro\n"
            "41 22 0:6 / /opt/my\\040libs/sub rw - tmpfs tmpfs rw\n")
    points = mount_points(info)
    assert points == ["/", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/opt/my libs/sub"]
    assert has_mounts_inside(Path("/usr"), points) and has_mounts_inside(Path("/opt/my libs"), points)
    assert not has_mounts_inside(Path("/usr/lib/x86_64-linux-gnu/libcuda.so.1"), points)
    assert not has_mounts_inside(Path("/us"), points) and not has_mounts_inside(Path("/etc"), points)


def test_etc_entries_that_are_links_are_copied_as_what_they_name_never_bound_from_the_hosts_disk(tmp_path):
    """/etc/localtime is a link into /usr/share/zoneinfo: copied as a link, bwrap bound the file it names from the
    host's disk, and statvfs on /etc/localtime in the box showed that disk's size and free space."""
    from attnbench.sandbox.box_view import _copy_etc

    host = tmp_path / "host-etc"
    (host / "zones").mkdir(parents=True)
    (host / "zones" / "UTC").write_bytes(b"TZif2 zone data")
    (host / "conf.d").mkdir()
    (host / "localtime").symlink_to(host / "zones" / "UTC")
    (host / "ld.so.conf.d").symlink_to(host / "conf.d")
    (host / "nsswitch.conf").symlink_to(host / "missing")
    (host / "ld.so.cache").write_bytes(b"cache")
    copies = tmp_path / "view-etc"
    folders = _copy_etc(copies, host)
    assert not (copies / "localtime").is_symlink() and (copies / "localtime").read_bytes() == b"TZif2 zone data"
    assert (copies / "ld.so.cache").read_bytes() == b"cache"
    assert folders == [host / "ld.so.conf.d"]  # a link to a folder gets an overlay, as a folder does
    assert not os.path.lexists(copies / "nsswitch.conf")  # a dangling link: nothing to bind


@pytest.mark.skipif(find_bwrap()[0] is None, reason="no bwrap")
def test_as_root_statvfs_on_etc_localtime_in_the_box_shows_no_disk_of_the_hosts(tmp_path):
    if not case_disk.can_cap():
        pytest.skip("mounting needs root (without it the run's header says what the box shows)")
    if not os.path.islink("/etc/localtime") or not os.path.isfile("/etc/localtime"):
        pytest.skip("/etc/localtime is no link to a file here")
    sandbox = Sandbox.open(_probe(tmp_path), SandboxSettings("required"))
    try:
        case = sandbox.prepare("c", None)
        try:
            outcome = run_process(sandbox.command([sandbox.program_path(), case.output_arg, "/etc/localtime"], case),
                                  case.folder, 30, user=sandbox.user, env=sandbox.case_env(case))
            assert outcome.returncode == 0, outcome.stderr_tail
            shown = case.output.read_text()
        finally:
            sandbox.finish(case)
    finally:
        sandbox.close()
    host = os.statvfs(os.path.realpath("/etc/localtime"))
    line = next(line for line in shown.splitlines() if line.startswith("statvfs /etc/localtime "))
    assert int(line.split()[2]) != host.f_blocks, "statvfs on /etc/localtime shows the host's disk"
    mount = [line for line in shown.splitlines() if " /etc/localtime " in line and not line.startswith("statvfs")]
    assert mount and "attnbench-case" in mount[0], mount


def test_a_view_is_mounted_without_forking_the_judge_and_moves_no_threads_working_folder(tmp_path, monkeypatch):
    """A forked child mounted the overlays: the judge's whole process copied and torn down in every run (about 7 ms
    of each run on 2 busy cores). A thread with a working folder of its own mounts them now: the options still name
    the layers relative to the view, and the judge's working folder stays where it was."""
    from attnbench.sandbox import box_view

    if not case_disk.can_cap():
        pytest.skip("mounting needs root")

    def no_fork() -> int:
        raise AssertionError("the view forked the judge")

    monkeypatch.setattr(os, "fork", no_fork)
    room = Path(tempfile.mkdtemp(dir=tmp_path))
    (room / "program").mkdir()
    (room / "program" / "hw4").write_text("built")
    here = os.getcwd()
    view, why = box_view.make(room, [Path("/usr"), room / "program"])
    try:
        assert view is not None, why
        assert os.getcwd() == here
        assert (view.source(room / "program") / "hw4").read_text() == "built"
        mounts = Path("/proc/self/mountinfo").read_text()
        assert "lowerdir=blank:../program" in mounts and str(room / "program") not in mounts
    finally:
        if view is not None:
            view.close()
