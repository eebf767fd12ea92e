"""attnbench.sandbox.staging: a submission copied as data, within its caps, before any byte is written past them."""

import os
import shutil

import pytest

from attnbench.sandbox import staging
from attnbench.sandbox.staging import StagingRefused, copy_submission


def test_a_sparse_file_past_the_cap_is_refused_before_it_is_written_out(tmp_path, monkeypatch):
    """Red team: `truncate -s 3G` (no block on the disk) was copied out in full, 3 GiB of the judge's disk,
    before the cap was checked."""
    monkeypatch.setattr(staging, "MAX_BYTES", 8 << 20)
    source = tmp_path / "sub"
    source.mkdir()
    (source / "hw4.cu").write_text("int main() { return 0; }\n")
    with open(source / "data.bin", "wb") as f:
        f.truncate(1 << 30)
    before = shutil.disk_usage(tmp_path).used
    with pytest.raises(StagingRefused, match="more than 8 MiB of files"):
        copy_submission(source, tmp_path / "copy")
    written = sum(os.stat(p).st_blocks * 512 for p in (tmp_path / "copy").rglob("*") if p.is_file())
    assert written < (1 << 20)  # nothing of the big file
    assert shutil.disk_usage(tmp_path).used - before < (64 << 20)


def test_files_within_the_cap_are_copied_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(staging, "MAX_BYTES", 8 << 20)
    source = tmp_path / "sub"
    source.mkdir()
    (source / "a.bin").write_bytes(os.urandom(3 << 20))
    (source / "b.bin").write_bytes(os.urandom(3 << 20))
    copy_submission(source, tmp_path / "copy")
    assert (tmp_path / "copy" / "a.bin").read_bytes() == (source / "a.bin").read_bytes()
    (source / "c.bin").write_bytes(os.urandom(3 << 20))  # 9 MiB together: over
    with pytest.raises(StagingRefused, match="more than 8 MiB"):
        copy_submission(source, tmp_path / "copy2")


def _birth_s(path) -> int:
    """The file's birth time in whole seconds (coreutils' stat), 0 where the file system keeps none."""
    import subprocess

    done = subprocess.run(["stat", "-c", "%W", str(path)], capture_output=True, text=True)
    return int(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip().isdigit() else 0


def test_a_reborn_program_is_a_fresh_sealed_file_born_now_and_earlier_links_keep_theirs(tmp_path):
    import time

    folder = tmp_path / "built"
    folder.mkdir()
    made = folder / "made"
    made.write_bytes(b"\x7fELF program bytes")
    program = staging.take_program(made, tmp_path / "sealed", "hw4")
    linked = tmp_path / "room-link"
    os.link(program, linked)  # a room opened before the renewal
    before = os.stat(program)
    started = int(time.time())
    staging.reborn_program(program)
    after = os.stat(program)
    assert (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino)  # a new file: born now
    assert program.read_bytes() == b"\x7fELF program bytes"
    assert after.st_mode & 0o7777 == 0o555 and after.st_uid == before.st_uid and after.st_nlink == 1
    assert sorted(os.listdir(program.parent)) == ["hw4"]  # nothing left beside it
    assert os.stat(linked).st_ino == before.st_ino and linked.read_bytes() == b"\x7fELF program bytes"
    if _birth_s(program):
        assert _birth_s(program) >= started


def test_a_sealed_program_that_is_not_a_plain_file_is_not_renewed(tmp_path):
    (tmp_path / "elsewhere").write_text("x")
    (tmp_path / "hw4").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(StagingRefused):
        staging.reborn_program(tmp_path / "hw4")
    assert (tmp_path / "hw4").is_symlink() and sorted(os.listdir(tmp_path)) == ["elsewhere", "hw4"]


def test_a_folder_of_the_submission_the_judge_cannot_read_is_named(tmp_path, monkeypatch):
    """Without root, a student's folder of mode 000 made the row say "could not be staged or built: Permission
    denied", naming nothing the TA could look at. (Root reads it anyway: its refusal is played here.)"""
    source = tmp_path / "fay"
    (source / "src" / "private").mkdir(parents=True)
    (source / "hw4.cu").write_text("int main() {}\n")
    opened = staging._open_below

    def open_below(top, parts):
        if parts == ("src", "private"):
            raise PermissionError(13, "Permission denied")
        return opened(top, parts)

    monkeypatch.setattr(staging, "_open_below", open_below)
    with pytest.raises(StagingRefused) as refused:
        copy_submission(source, tmp_path / "copy")
    assert str(refused.value) == "src/private: cannot be read (Permission denied)"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a folder of mode 000")
def test_a_folder_of_mode_000_is_named_when_the_judge_is_not_root(tmp_path):
    source = tmp_path / "fay"
    (source / "sub").mkdir(parents=True)
    (source / "sub").chmod(0)
    try:
        with pytest.raises(StagingRefused) as refused:
            copy_submission(source, tmp_path / "copy")
    finally:
        (source / "sub").chmod(0o755)
    assert str(refused.value) == "sub: cannot be read (Permission denied)"
