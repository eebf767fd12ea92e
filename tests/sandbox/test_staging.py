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
