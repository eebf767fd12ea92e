"""The reference kernel's cubin kept between judges only where root alone writes."""

import os

import pytest

from attnbench.cases import root_cubins
from attnbench.locations import CACHE_ENV

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="root's judges keep the cubin: needs root")


@pytest.fixture
def builds(monkeypatch, tmp_path):
    """Each build counted; the cache under tmp_path."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    made: list[bytes] = []

    def build() -> bytes:
        made.append(b"cubin %d" % len(made))
        return made[-1]

    return made, build


def kept_file(tmp_path):
    (found,) = (tmp_path / "cache" / root_cubins.FOLDER_NAME).iterdir()
    return found


def test_root_builds_once_and_reads_back_what_it_kept(builds, tmp_path):
    made, build = builds
    first = root_cubins.root_cubin("source", "sm_90", ["-O3"], build)
    assert root_cubins.root_cubin("source", "sm_90", ["-O3"], build) == first == b"cubin 0" and len(made) == 1
    found = kept_file(tmp_path)
    assert found.stat().st_mode & 0o777 == 0o600 and found.parent.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("other", [("changed source", "sm_90", ["-O3"]), ("source", "sm_80", ["-O3"]),
                                   ("source", "sm_90", ["-O2"])])
def test_another_source_architecture_or_option_is_built_anew(builds, other):
    made, build = builds
    root_cubins.root_cubin("source", "sm_90", ["-O3"], build)
    assert root_cubins.root_cubin(*other, build) == b"cubin 1"


@pytest.mark.parametrize("how", ["file another's", "file group-writable", "folder another's",
                                 "folder others-writable", "file a link", "file two links"])
def test_a_kept_cubin_any_other_user_could_have_written_is_never_read(builds, tmp_path, how):
    """A cubin another user could have planted would be every later judge's yardstick: it is built anew."""
    made, build = builds
    root_cubins.root_cubin("source", "sm_90", ["-O3"], build)
    found = kept_file(tmp_path)
    planted = b"planted: passes anything"
    found.write_bytes(planted)
    if how == "file another's":
        os.chown(found, 65534, 65534)
    elif how == "file group-writable":
        found.chmod(0o620)
    elif how == "folder another's":
        os.chown(found.parent, 65534, 65534)
    elif how == "folder others-writable":
        found.parent.chmod(0o703)
    elif how == "file a link":
        target = tmp_path / "elsewhere.cubin"
        target.write_bytes(planted)
        found.unlink()
        found.symlink_to(target)
    elif how == "file two links":
        os.link(found, tmp_path / "second-name")
    assert root_cubins.root_cubin("source", "sm_90", ["-O3"], build) == b"cubin 1"


def test_a_judge_not_root_keeps_nothing_and_reads_nothing(builds, tmp_path, monkeypatch):
    made, build = builds
    root_cubins.root_cubin("source", "sm_90", ["-O3"], build)
    monkeypatch.setattr(root_cubins.os, "geteuid", lambda: 1000)
    assert root_cubins.root_cubin("source", "sm_90", ["-O3"], build) == b"cubin 1"
    assert root_cubins.root_cubin("other", "sm_90", ["-O3"], build) == b"cubin 2"
    assert len(list((tmp_path / "cache" / root_cubins.FOLDER_NAME).iterdir())) == 1


def test_a_cache_that_cannot_be_made_costs_a_build_nothing_more(monkeypatch, tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "a-file"))
    assert root_cubins.root_cubin("source", "sm_90", [], lambda: b"built") == b"built"


def staged_cubin(tmp_path, planted: bytes):
    """Root's own copy of a submission holding reference-kernels/KEY.cubin, as every class build stages one
    (root-owned, mode 0644, one link): chosen bytes in a folder root owns and alone writes."""
    from attnbench.sandbox.staging import copy_submission

    submission = tmp_path / "submission"
    (submission / root_cubins.FOLDER_NAME).mkdir(parents=True)
    key = root_cubins._key("source", "sm_90", ["-O3"])
    (submission / root_cubins.FOLDER_NAME / f"{key}.cubin").write_bytes(planted)
    (tmp_path / "build-root").mkdir(mode=0o700)
    copy_submission(submission, tmp_path / "build-root" / "files")
    return tmp_path / "build-root" / "files"


@pytest.mark.parametrize("how", ["a folder above another's", "a link above"])
def test_a_cache_reached_through_what_another_user_can_change_is_never_read(monkeypatch, tmp_path, how):
    """Another user who owns a folder above the cache (ATTNBENCH_CACHE in it, or ~/.cache under sudo -E)
    swaps what is below it for a link to root's staged copy of a submission: that copy is root's alone, so
    checking the folder and the file let its planted cubin be the yardstick."""
    staged = staged_cubin(tmp_path, b"planted: passes anything")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "cache").symlink_to(staged)
    if how == "a folder above another's":
        os.chown(theirs, 65534, 65534)
        monkeypatch.setenv(CACHE_ENV, str(theirs / "cache"))
    else:  # a link another user made in a folder all may write (/tmp), named by ATTNBENCH_CACHE
        theirs.chmod(0o1777)
        os.lchown(theirs / "cache", 65534, 65534)
        monkeypatch.setenv(CACHE_ENV, str(theirs / "cache"))
    assert root_cubins.root_cubin("source", "sm_90", ["-O3"], lambda: b"built") == b"built"
    assert (staged / root_cubins.FOLDER_NAME).stat().st_uid == 0  # the planted copy was root's alone


def test_a_cache_below_a_folder_another_user_owns_is_neither_read_nor_written(monkeypatch, tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    monkeypatch.setenv(CACHE_ENV, str(theirs / "cache"))
    made = []
    for _ in range(2):
        assert root_cubins.root_cubin("source", "sm_90", ["-O3"], lambda: made.append(1) or b"built") == b"built"
    assert len(made) == 2 and not (theirs / "cache" / root_cubins.FOLDER_NAME).exists()
