"""Writing files safely, and checking an output path before any work is done.

A regular file (or a new one) is written through a temporary file in the same folder, then renamed
into place: an error or Ctrl-C never leaves a partial file, and an existing file is replaced only
once the new one is complete. A symlink is followed: the file it points to is written, the link
stays. A special file (a device such as /dev/null, a FIFO) is written through, never replaced.
Errors name the path the user gave, never the temporary one.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import os
import stat
import tempfile
import threading
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable

from attnbench.errors import DiskFull, OutputError, no_space


def _target(path: Path) -> Path:
    """The file a write lands in: symlinks followed (a dangling link's target is created). A special file is
    written through the path given: /dev/stdout in a pipe links to "pipe:[N]", which no path reaches, while
    opening the link itself reaches the pipe."""
    if is_special(path):
        return path
    _refuse_anothers_link(path)
    return Path(os.path.realpath(path))


def _refuse_anothers_link(path: Path) -> None:
    """Root follows no symbolic link another user made: one planted in a folder that user owns pointed root's
    `report -o` at an empty file or an earlier report of root's anywhere, and replaced it (red team). The
    kernel's fs.protected_symlinks guards sticky folders such as /tmp only."""
    if os.geteuid() != 0:
        return
    try:
        facts = os.lstat(path)
    except OSError:
        return
    if stat.S_ISLNK(facts.st_mode) and facts.st_uid != 0:
        raise OutputError(f"{path}: is a symbolic link another user made (uid {facts.st_uid}); root follows none "
                          "for a write: give the file's own path")


def is_special(path: Path) -> bool:
    """Whether `path` is there and neither a plain file nor a folder: a device, a pipe, a socket."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def check_output_path(path: str | os.PathLike, inputs: Iterable[str | os.PathLike] = ()) -> None:
    """Refuse, before any work, an output that cannot be written or that is one of the inputs."""
    given = str(path)
    # Path() drops a trailing slash, and with it the user's word that this names a folder.
    if given.endswith(("/", os.sep)):
        raise OutputError(f"{given}: names a folder; give the output a file name")
    target = _target(Path(path))
    if target.is_dir():
        raise OutputError(f"{given}: is a folder; give the output a file name")
    for source in inputs:
        if target.exists() and Path(source).exists() and os.path.samefile(target, source):
            raise OutputError(f"{given}: is the input file {source}; writing there would destroy it")
    if is_special(target):
        if not os.access(target, os.W_OK):
            raise OutputError(f"{given}: permission denied")
        return
    folder = target.parent
    if not folder.is_dir():
        raise OutputError(f"{given}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{given}: no permission to write in {folder}")
    if target.exists() and not os.access(target, os.W_OK):
        raise OutputError(f"{given}: permission denied")


# Where compare, sweep, judge, profile and ceilings save runs unless told otherwise: a folder of the
# working directory that a checkout of this project ignores, so a user's runs never land in tracked files.
DEFAULT_RESULTS_DIR = "attnbench-results"


def check_results_folder(path: str | os.PathLike) -> None:
    """Refuse, before any work, a folder results cannot be saved in: a file of that name, no permission to
    write there, or a missing folder whose nearest existing parent cannot take it. Errors name `path`."""
    given = os.fsdecode(path)
    for step in (Path(given), *Path(given).parents):  # realpath() follows a dangling link (or gives up on a
        # loop) as if its end could be made, and the save's mkdir then failed on the link itself ("File exists")
        if os.path.islink(step) and not os.path.exists(step):
            raise OutputError(f"{given}: {'' if step == Path(given) else f'{step}, on its way, '}is a symbolic link "
                              "to nothing (its target is missing, or a loop of links); give --results-dir a folder")
    folder = Path(os.path.realpath(path))
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        where = "" if existing == folder else f" ({existing} is a file)"
        raise OutputError(f"{given}: is not a folder{where}; give --results-dir a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputError(f"{given}: no permission to write" + ("" if existing == folder else f" in {existing}"))
    # access() answers for the mode bits only: root passes it where the file system still refuses (/proc, a
    # read-only mount), and a compare that ran to its end then lost its results. A folder made and removed asks
    # the file system itself.
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".attnbench-probe-", dir=existing))
    except OSError as exc:
        if no_space(exc):
            raise DiskFull(f"{given}: cannot be written ({exc.strerror}): its disk is full") from None
        raise OutputError(f"{given}: cannot be written ({exc.strerror}); give --results-dir a folder") from None


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> None:
    """Write `path` safely (see the module's rules); an OSError becomes one line naming `path`."""
    given = str(path)
    target = _target(Path(path))
    try:
        if is_special(target):
            special = open(target, "wb")  # noqa: SIM115  # closed below, where a stopped reader's pipe may refuse it
            sink = _UntilReaderStops(special)
            try:
                write(sink)  # type: ignore[arg-type]  # a BinaryIO's every attribute but write and flush is f's
                sink.flush()
            finally:
                try:
                    special.close()
                except BrokenPipeError:  # the bytes still buffered when the reader stopped: dropped with the rest
                    pass
            return
        # a name of this write's own: the file an earlier write replaced may still be under that write's
        # temporary name, waiting for its release thread to unlink it
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{next(_PARTIAL_NAMES)}.partial")
        try:
            with open(tmp, "w+b") as f:  # readable too: a large array is written through a mapping (bulk_io)
                write(f)
            if target.is_file() and _exchange(tmp, target):
                old: Path | None = tmp  # the replaced file, now under the temporary name
            else:
                old = _keep_old(target)
                os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        if old is not None:
            _release_later(old)
    except OSError as exc:
        raise (DiskFull if no_space(exc) else OutputError)(f"{given}: {exc.strerror or exc}") from None


class _UntilReaderStops:
    """A special file written through until its reader stops early (`| head -c 300`): no failure, as on stdout;
    the rest of the output is dropped and the caller's work still runs to its end. Swallowing the BrokenPipeError
    around the whole write instead cut that work short (a streamed `run` then failed with a traceback, its
    pipeline half run) and hid a broken pipe of the caller's own as success."""

    def __init__(self, file: BinaryIO) -> None:
        self._file, self.stopped = file, False

    def write(self, data: Any) -> int:
        if not self.stopped:
            try:
                return self._file.write(data)
            except BrokenPipeError:
                self.stopped = True
        return memoryview(data).nbytes

    def flush(self) -> None:
        if not self.stopped:
            try:
                self._file.flush()
            except BrokenPipeError:
                self.stopped = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


_PARTIAL_NAMES = itertools.count()
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(new: Path, target: Path) -> bool:
    """Swap the complete new file with the one it replaces, in one atomic step (the name never goes missing).

    A rename that replaces a file makes ext4 start writing the new file's data back to disk inside the rename
    (its auto_da_alloc rule): 8 to 55 ms for t22's 262 MB output on an H200 host, inside the course clock. An
    exchange is not such a rename. Python's os.replace is rename(2) and it has no renameat2, hence ctypes.
    False where the C library, the kernel or the file system cannot exchange (the caller renames)."""
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    return renameat2(_AT_FDCWD, os.fsencode(new), _AT_FDCWD, os.fsencode(target), _RENAME_EXCHANGE) == 0


@functools.cache
def _renameat2() -> Any:
    """The C library's renameat2, looked up once (the exchange runs inside the course clock); None without one."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return renameat2


_OLD_NAMES = itertools.count()


def _keep_old(target: Path) -> Path | None:
    """A second name for the file about to be replaced, so that the rename does not free its pages.

    Replacing a large file frees its cached pages inside the rename (measured on an H200 host: 0.15 s
    for t22's 262 MB output, half the course clock of a run). With a second hard link the rename only
    moves a name; the old file is unlinked after, off the timed path. None where there is no old file
    or the file system has no hard links."""
    if not target.is_file():
        return None
    old = target.with_name(f".{target.name}.{os.getpid()}.{next(_OLD_NAMES)}.old")
    try:
        os.link(target, old)
    except OSError:
        return None
    return old


def _release_later(old: Path) -> None:
    """Unlink the replaced file in a thread the interpreter waits for at exit (so no .old is left)."""
    threading.Thread(target=old.unlink, kwargs={"missing_ok": True}, name="attnbench-release-old").start()


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write a text file atomically. A path that is not UTF-8, quoted in the text, is written as escapes
    (`\\udcff`), as the terminal shows it, rather than failing the whole write."""
    atomic_write(path, lambda f: f.write(text.encode("utf-8", "backslashreplace")))
