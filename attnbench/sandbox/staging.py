"""A submission is data, never a path: its files copied without following anything, and trees removed
at any depth.

The judge runs as root over strangers' folders, so nothing in a submission is followed: a symbolic link,
a hard link to a file outside the submission, a device node or a FIFO is refused with a sentence saying
which entry and why. Files are read with O_NOFOLLOW and written into fresh files the judge creates
(O_CREAT | O_EXCL: never onto a path that exists), with the mode bits & 0o755 (no setuid, no setgid)
and no extended attributes. A built program is taken out the same way, after `lstat` finds one regular
file with one link.

The walks are iterative and work through folder descriptors (`dir_fd`), so a tree 3000 folders deep
neither reaches Python's recursion limit nor a path too long for the kernel. Written here because
shutil's copytree and rmtree recurse, follow what they are told to keep, and stop at a folder its owner
made unwritable.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from attnbench.errors import AttnbenchError
from attnbench.printable import printable

MAX_DEPTH = 64  # deeper than any course submission; a deeper tree is refused, not copied
MAX_ENTRIES = 20000
MAX_BYTES = 1 << 30
PROGRAM_BYTES = 64 << 20  # a program's largest size, unless the judge is told otherwise (SandboxSettings)
SAFE_MODE = 0o755
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_NONBLOCK", 0)
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20


class StagingRefused(AttnbenchError):
    """A submission (or its build) holds what the judge will not follow or copy; the row says why, as
    "refused: " and this message (so the message itself never ends in "refused")."""

    exit_code = 1


def shown(name: str | bytes) -> str:
    """A name as it is printed and saved: bytes that are not UTF-8 as \\xNN, control characters escaped."""
    return printable(os.fsdecode(name))


def _copy_file(src_dir: int, name: str, dst_dir: int, info: os.stat_result, shown_path: str,
               limit: int = MAX_BYTES) -> int:
    """Copy one regular file by descriptor into a fresh file, at most `limit` bytes (StagingRefused past it,
    should it grow while copied); returns the bytes copied."""
    try:
        source = os.open(name, _READ, dir_fd=src_dir)
    except OSError as exc:
        raise StagingRefused(f"{shown_path}: cannot be read ({exc.strerror})") from None
    try:
        now = os.fstat(source)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
            raise StagingRefused(f"{shown_path}: changed while it was copied")
        target = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         stat.S_IMODE(now.st_mode) & SAFE_MODE | stat.S_IRUSR | stat.S_IWUSR, dir_fd=dst_dir)
        copied = 0
        try:
            while chunk := os.read(source, _CHUNK):
                copied += len(chunk)
                if copied > limit:
                    raise StagingRefused(f"more than {MAX_BYTES >> 20} MiB of files")
                os.write(target, chunk)
            os.fchmod(target, stat.S_IMODE(now.st_mode) & SAFE_MODE | stat.S_IRUSR)
        finally:
            os.close(target)
        return copied
    finally:
        os.close(source)


def copy_submission(source: Path, destination: Path) -> None:
    """Copy the folder (or the one file) `source` into the new folder `destination`, following nothing.
    StagingRefused names the first entry that is a link, a hard link to a file outside, or not a plain file
    or folder, and a tree too deep or too large; `destination` is then partly made (remove it)."""
    top = os.lstat(source)
    os.mkdir(destination, 0o755)
    if stat.S_ISLNK(top.st_mode):
        raise StagingRefused(f"{shown(source.name)}: a symbolic link: a submission is judged from its own "
                             "files only")
    if not stat.S_ISDIR(top.st_mode):
        src_dir, dst_dir = os.open(source.parent, _FOLDER), os.open(destination, _FOLDER)
        try:
            _check_entry(top, source.name, {(top.st_dev, top.st_ino): 1})
            _copy_file(src_dir, source.name, dst_dir, top, source.name)
        finally:
            os.close(src_dir)
            os.close(dst_dir)
        return
    inodes = _count_inodes(source)
    src_top, dst_top = os.open(source, _FOLDER), os.open(destination, _FOLDER)
    try:
        if (os.fstat(src_top).st_dev, os.fstat(src_top).st_ino) != (top.st_dev, top.st_ino):
            raise StagingRefused(f"{shown(source.name)}: changed while it was copied")
        _copy_tree(src_top, dst_top, inodes)
    finally:
        os.close(src_top)
        os.close(dst_top)


def _open_below(top: int, parts: tuple[str, ...]) -> int:
    """A descriptor of the folder top/parts..., each step opened with O_NOFOLLOW (one open at a time)."""
    folder = os.dup(top)
    for part in parts:
        try:
            below = os.open(part, _FOLDER, dir_fd=folder)
        finally:
            os.close(folder)
        folder = below
    return folder


def _unreadable(parts: tuple[str, ...], exc: OSError) -> StagingRefused:
    """A folder or entry of the submission the judge's user cannot read, named (a TA without root met
    "could not be staged or built: Permission denied" on a row, naming nothing)."""
    return StagingRefused(f"{shown('/'.join(parts)) or '.'}: cannot be read ({exc.strerror})")


def _read_below(top: int, parts: tuple[str, ...]) -> tuple[int, list[str]]:
    """A descriptor of the submission's folder top/parts... and its names, sorted."""
    try:
        folder = _open_below(top, parts)
    except OSError as exc:
        raise _unreadable(parts, exc) from None
    try:
        return folder, sorted(os.listdir(folder))
    except OSError as exc:
        os.close(folder)
        raise _unreadable(parts, exc) from None


def _lstat_below(folder: int, parts: tuple[str, ...], name: str) -> os.stat_result:
    try:
        return os.lstat(name, dir_fd=folder)
    except OSError as exc:  # a folder readable but not searchable (mode 0644)
        raise _unreadable((*parts, name), exc) from None


def _copy_tree(src_top: int, dst_top: int, inodes: dict[tuple[int, int], int]) -> None:
    stack: list[tuple[str, ...]] = [()]
    entries = copied = 0
    while stack:
        parts = stack.pop()
        src_dir, names = _read_below(src_top, parts)
        try:
            dst_dir = _open_below(dst_top, parts)
        except BaseException:
            os.close(src_dir)
            raise
        try:
            for name in names:
                path = "/".join((*parts, name))
                info = _lstat_below(src_dir, parts, name)
                entries += 1
                if entries > MAX_ENTRIES:
                    raise StagingRefused(f"more than {MAX_ENTRIES} files and folders")
                _check_entry(info, path, inodes)
                if stat.S_ISDIR(info.st_mode):
                    if len(parts) + 1 > MAX_DEPTH:
                        raise StagingRefused(f"folders nested deeper than {MAX_DEPTH}")
                    os.mkdir(name, 0o755, dir_fd=dst_dir)
                    stack.append((*parts, name))
                else:
                    # counted before the copy, by the size a file says it has: a sparse 3 GiB file (no block on
                    # the disk) was written out in full before the cap was checked (red team)
                    if copied + info.st_size > MAX_BYTES:
                        raise StagingRefused(f"more than {MAX_BYTES >> 20} MiB of files")
                    copied += _copy_file(src_dir, name, dst_dir, info, shown(path), MAX_BYTES - copied)
        finally:
            os.close(src_dir)
            os.close(dst_dir)


def _check_entry(info: os.stat_result, path: str, inodes: dict[tuple[int, int], int]) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise StagingRefused(f"{shown(path)}: a symbolic link: a submission is judged from its own files only")
    if stat.S_ISDIR(info.st_mode):
        return
    if not stat.S_ISREG(info.st_mode):
        raise StagingRefused(f"{shown(path)}: not a plain file or folder (a device, FIFO or socket)")
    if info.st_nlink > inodes.get((info.st_dev, info.st_ino), 0):
        raise StagingRefused(f"{shown(path)}: a hard link to a file outside the submission")


def _count_inodes(source: Path) -> dict[tuple[int, int], int]:
    """How many names each regular file has inside the tree (a hard link inside it is fine), bounded like
    the copy (a tree too deep or too large is refused there)."""
    counts: dict[tuple[int, int], int] = {}
    top = os.open(source, _FOLDER)
    stack: list[tuple[str, ...]] = [()]
    seen = 0
    try:
        while stack and seen <= MAX_ENTRIES:
            parts = stack.pop()
            folder, names = _read_below(top, parts)
            try:
                for name in names:
                    seen += 1
                    info = _lstat_below(folder, parts, name)
                    if stat.S_ISREG(info.st_mode):
                        key = (info.st_dev, info.st_ino)
                        counts[key] = counts.get(key, 0) + 1
                    elif stat.S_ISDIR(info.st_mode) and len(parts) < MAX_DEPTH:
                        stack.append((*parts, name))
            finally:
                os.close(folder)
    finally:
        os.close(top)
    return counts


def take_program(built: Path, folder: Path, name: str, max_bytes: int = PROGRAM_BYTES) -> Path:
    """The built program copied into a fresh folder the judge makes (folder/name, created with O_EXCL),
    after `lstat` finds one regular file with one link, of `max_bytes` at most; mode & 0o755, no extended
    attributes. This is the program's one sealed copy: every run links it (attnbench.sandbox.room)."""
    info = os.lstat(built)
    if stat.S_ISLNK(info.st_mode):
        raise StagingRefused(f"the built {shown(built.name)} is a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        raise StagingRefused(f"the built {shown(built.name)} is not a plain file")
    if info.st_nlink != 1:
        raise StagingRefused(f"the built {shown(built.name)} is a hard link")
    if info.st_size > max_bytes:  # a Makefile once padded hw4 to 1000 MiB with truncate
        raise StagingRefused(f"the built {shown(built.name)} is {info.st_size / 2**20:.0f} MiB, over the "
                             f"{max_bytes >> 20} MiB a program may be (--max-program-mib)")
    os.mkdir(folder, 0o755)
    src_dir, dst_dir = os.open(built.parent, _FOLDER), os.open(folder, _FOLDER)
    try:
        _copy_file(src_dir, built.name, dst_dir, info, shown(built.name)) if built.name == name else \
            _copy_renamed(src_dir, built.name, dst_dir, name, info)
    finally:
        os.close(src_dir)
        os.close(dst_dir)
    os.chmod(folder / name, 0o555, follow_symlinks=False)
    return folder / name


def reborn_program(program: Path) -> None:
    """The sealed program (take_program's) replaced by a fresh copy of itself, born now: a file's birth time
    (statx's btime) cannot be set, and the one sealed copy every run links was born at its build, so a rerun,
    later than every first run, told itself from one by its program's age (red team). The class renews it
    right before each row's runs of a round, so every run, first or rerun, sees the same age pattern. The
    copy is made beside it (O_EXCL) and renamed over it: a room linking it meanwhile gets one or the other,
    both sealed."""
    fresh = program.with_name(f".{program.name}.reborn")
    _quietly(os.unlink, fresh)
    src_dir = os.open(program.parent, _FOLDER)
    try:
        info = os.lstat(program.name, dir_fd=src_dir)
        if not stat.S_ISREG(info.st_mode):
            raise StagingRefused(f"the sealed {shown(program.name)} is not a plain file: refused")
        _copy_renamed(src_dir, program.name, src_dir, fresh.name, info)
        os.chmod(fresh.name, 0o555, dir_fd=src_dir)  # the file just made (O_EXCL), in the judge's folder
        os.rename(fresh.name, program.name, src_dir_fd=src_dir, dst_dir_fd=src_dir)
    except BaseException:
        _quietly(os.unlink, fresh.name, dir_fd=src_dir)
        raise
    finally:
        os.close(src_dir)


def _copy_renamed(src_dir: int, name: str, dst_dir: int, new_name: str, info: os.stat_result) -> None:
    source = os.open(name, _READ, dir_fd=src_dir)
    try:
        now = os.fstat(source)
        if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
            raise StagingRefused(f"the built {shown(name)} changed while it was copied")
        target = os.open(new_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o700,
                         dir_fd=dst_dir)
        try:
            while chunk := os.read(source, _CHUNK):
                os.write(target, chunk)
        finally:
            os.close(target)
    finally:
        os.close(source)


def remove_tree(path: Path) -> None:
    """Remove path and everything under it, at any depth, without following links, making folders a
    program locked (mode 000) usable again on the way; what cannot be removed is left (never raises).
    One folder descriptor is open at a time (the walk climbs back by `..`), so depth costs no descriptors."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            _quietly(os.unlink, path)
            return
        os.chmod(path, stat.S_IRWXU)
        current = os.open(path, _FOLDER)
    except OSError:
        _quietly(os.rmdir, path)
        return
    stack: list[tuple[list[str], str]] = [(_names(current), "")]
    try:
        while stack:
            names, own_name = stack[-1]
            if not names:
                stack.pop()
                if not stack:
                    break
                parent = os.open("..", _FOLDER, dir_fd=current)
                os.close(current)
                current = parent
                _quietly(os.rmdir, own_name, dir_fd=current)
                continue
            name = names.pop()
            try:
                info = os.lstat(name, dir_fd=current)
                if not stat.S_ISDIR(info.st_mode):
                    os.unlink(name, dir_fd=current)
                    continue
                os.chmod(name, stat.S_IRWXU, dir_fd=current)  # lstat said a folder: no link is followed
                below = os.open(name, _FOLDER, dir_fd=current)
            except OSError:
                continue
            os.close(current)
            current = below
            stack.append((_names(current), name))
    except OSError:
        pass
    finally:
        _quietly(os.close, current)
    _quietly(os.rmdir, path)


def _names(folder: int) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _quietly(func, *args, **kwargs) -> None:  # noqa: ANN001 - any os function
    try:
        func(*args, **kwargs)
    except OSError:
        pass
