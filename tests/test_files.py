"""attnbench.files: safe writes that never leave a partial or replaced-file name behind."""

from __future__ import annotations

import os
import threading

import pytest

from attnbench.errors import DiskFull, OutputError
from attnbench.files import _exchange, _keep_old, atomic_write


def _settle() -> None:
    for thread in threading.enumerate():
        if thread.name == "attnbench-release-old":
            thread.join()


def test_replacing_a_file_moves_only_a_name_and_leaves_nothing_behind(tmp_path):
    out = tmp_path / "o.bin"
    out.write_bytes(b"old" * 1000)
    atomic_write(out, lambda f: f.write(b"new"))
    _settle()
    assert out.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.bin"]


def test_a_second_write_survives_the_first_ones_late_release(tmp_path, monkeypatch):
    """After an exchange the replaced file sits under the write's temporary name until a thread unlinks it. If
    the next write of the same path reused that name, the late unlink would delete the new file before its
    exchange (seen as a one-in-four failure: \"t.in: No such file or directory\"). Here the release runs at the
    worst moment, just before the second write's exchange."""
    from attnbench import files

    out = tmp_path / "o.bin"
    out.write_bytes(b"first")
    pending: list = []
    monkeypatch.setattr(files, "_release_later", pending.append)
    exchange = files._exchange

    def release_then_exchange(new, target):
        while pending:
            pending.pop().unlink(missing_ok=True)
        return exchange(new, target)

    monkeypatch.setattr(files, "_exchange", release_then_exchange)
    atomic_write(out, lambda f: f.write(b"second"))
    atomic_write(out, lambda f: f.write(b"third"))
    assert out.read_bytes() == b"third"
    for old in pending:
        old.unlink(missing_ok=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.bin"]


def test_an_exchange_swaps_two_files_whole_or_not_at_all(tmp_path):
    new, target = tmp_path / "new", tmp_path / "target"
    new.write_bytes(b"new")
    target.write_bytes(b"old")
    swapped = _exchange(new, target)
    assert (target.read_bytes(), new.read_bytes()) == ((b"new", b"old") if swapped else (b"old", b"new"))
    assert not _exchange(tmp_path / "missing", target) and target.read_bytes() == (b"new" if swapped else b"old")


def test_a_reader_of_the_replaced_file_still_reads_it_whole(tmp_path):
    out = tmp_path / "o.bin"
    out.write_bytes(b"old" * 1000)
    with open(out, "rb") as reader:
        atomic_write(out, lambda f: f.write(b"new"))
        _settle()
        assert reader.read() == b"old" * 1000
    assert out.read_bytes() == b"new" and sorted(p.name for p in tmp_path.iterdir()) == ["o.bin"]


def test_the_old_file_keeps_a_second_name_until_released(tmp_path):
    out = tmp_path / "o.bin"
    out.write_bytes(b"old")
    old = _keep_old(out)
    assert old is not None and os.path.samefile(old, out) and os.stat(out).st_nlink == 2
    assert _keep_old(tmp_path / "missing") is None
    old.unlink()


def test_a_failed_write_keeps_the_old_file_whole(tmp_path):
    out = tmp_path / "o.bin"
    out.write_bytes(b"old")

    def fail(f):
        f.write(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(out, fail)
    _settle()
    assert out.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["o.bin"]


def test_an_unwritable_folder_is_one_line_naming_the_path(tmp_path):
    with pytest.raises(OutputError, match="nowhere/o.bin"):
        atomic_write(tmp_path / "nowhere" / "o.bin", lambda f: f.write(b"x"))


def test_an_output_pipe_whose_reader_stops_early_is_no_failure():
    """`run t02 /dev/stdout | head -c 300` ended in "error: /dev/stdout: Broken pipe", exit 2, where the docs say a
    reader that stops early is no failure (as on stdout)."""
    import os

    from attnbench.files import atomic_write

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has stopped
    try:
        atomic_write(f"/proc/self/fd/{write_end}", lambda f: f.write(b"x" * (1 << 20)))
    finally:
        os.close(write_end)


def test_an_output_that_is_a_pipe_through_a_proc_link_is_written_through_it():
    """OUT /dev/stdout in a pipe was "No such file or directory": its link names "pipe:[N]", which realpath
    cannot follow, and the temporary file went beside that name."""
    import os
    import threading

    from attnbench.files import atomic_write, check_output_path

    read_end, write_end = os.pipe()
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(os.read(read_end, 100)))
    reader.start()
    try:
        path = f"/proc/self/fd/{write_end}"  # what /dev/stdout is when stdout is a pipe
        check_output_path(path)
        atomic_write(path, lambda f: f.write(b"written"))
        reader.join(timeout=10)
    finally:
        os.close(write_end)
        os.close(read_end)
    assert got == [b"written"]


def test_a_results_folder_the_file_system_refuses_is_refused_before_any_work(tmp_path):
    """As root, access() passed /proc/x (the mode bits allow it) and a compare ran to its end before the save
    said "No such file or directory"."""
    from attnbench.files import check_results_folder

    with pytest.raises(OutputError, match=r"^/proc/attnbench-nowhere: "):
        check_results_folder("/proc/attnbench-nowhere")
    check_results_folder(tmp_path / "new" / "deeper")  # a folder that can be made is fine, and not made yet
    assert not (tmp_path / "new").exists() and list(tmp_path.iterdir()) == []


def test_a_full_disk_is_the_environment_exit_3_naming_the_path():
    """A write onto a full file system said "No space left on device" with exit 2, as if the path were bad input."""
    with pytest.raises(DiskFull, match=r"^/dev/full: No space left on device$") as caught:
        atomic_write("/dev/full", lambda f: f.write(b"x" * 65536))
    assert caught.value.exit_code == 3


@pytest.mark.parametrize("link", ["dangling", "loop", "dangling/deeper"])
def test_a_results_folder_that_is_a_link_to_nothing_is_refused_before_any_work(tmp_path, link):
    """A dangling link (or a loop of links) passed the check, and the save after the whole run said "File exists"."""
    from attnbench.files import check_results_folder

    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "loop").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop")
    given = str(tmp_path / link)
    with pytest.raises(OutputError, match="symbolic link to nothing") as caught:
        check_results_folder(given)
    assert str(caught.value).startswith(given + ": ")
    (tmp_path / "real").mkdir()
    (tmp_path / "good").symlink_to(tmp_path / "real")
    check_results_folder(tmp_path / "good")  # a link to a folder is a folder


@pytest.mark.skipif(os.geteuid() != 0, reason="root's rule: needs root")
def test_root_follows_no_symbolic_link_another_user_made_for_a_write(tmp_path):
    """A link nobody planted in a folder of theirs pointed root's report at an empty file of root's elsewhere,
    and the report replaced it (red team); root's own links are followed as ever."""
    from attnbench.files import write_text

    victim = tmp_path / "victim"
    victim.write_text("")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    planted = theirs / "a.md"
    planted.symlink_to(victim)
    os.chown(planted, 65534, 65534, follow_symlinks=False)
    with pytest.raises(OutputError, match="is a symbolic link another user made"):
        write_text(planted, "# attnbench report\n")
    assert victim.read_text() == ""
    mine = tmp_path / "mine.md"
    mine.symlink_to(victim)
    write_text(mine, "# attnbench report\n")
    assert victim.read_text() == "# attnbench report\n" and mine.is_symlink()


def test_work_writing_to_a_pipe_whose_reader_stopped_still_runs_to_its_end():
    """The broken pipe was swallowed around the whole write, so the caller's work stopped at its first write
    after the reader went: a streamed `run t02 /dev/stdout | head -c 300` then failed on its missing clock with a
    traceback, its pipeline half run (red team 18)."""
    import os

    from attnbench.files import atomic_write

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has stopped
    done = []
    try:
        atomic_write(f"/proc/self/fd/{write_end}",
                     lambda f: (f.write(b"x" * (1 << 20)), f.write(b"y" * 10), f.flush(), done.append("all")))
    finally:
        os.close(write_end)
    assert done == ["all"]


def test_a_broken_pipe_of_the_writers_own_is_not_taken_for_a_stopped_reader(tmp_path):
    """A BrokenPipeError that is not the output's (a pipe the work itself uses) was swallowed as success, the
    output left unwritten (red team 18)."""
    import os

    from attnbench.errors import OutputError
    from attnbench.files import atomic_write

    read_end, write_end = os.pipe()  # the output: its reader is still there

    def work(f):
        raise BrokenPipeError(32, "Broken pipe")  # another pipe's

    try:
        with pytest.raises(OutputError, match="Broken pipe"):
            atomic_write(f"/proc/self/fd/{write_end}", work)
    finally:
        os.close(read_end)
        os.close(write_end)
