"""What the box sees of the host's disk: as root, nothing.

A folder bound into the box from the host's disk tells a program two things through plain system calls:
its mount's root in `/proc/self/mountinfo` is its path on that disk (the judge's temporary folders), and
`statvfs` on it is that disk's size and free space. As root the judge therefore binds nothing from the
host's disk directly. Each room gets a small tmpfs of its own (the view) holding
- the box's /etc files (copies of the few the system's loader needs, and the generated accounts), and
- for each host folder bound in (the system's /usr and the like, library folders, the program's folder) a
  read-only overlay whose top layer is an empty folder of the view: the overlay shows the host folder's
  files unchanged (nothing is copied: the program stays one linked copy), its `statvfs` is the view's
  tmpfs (the kernel's overlay reports its top layer), and its mount names its layers by the relative
  paths it was given (`lowerdir=blank:/usr`, `lowerdir=blank:../program`), never the judge's folders.

Bubblewrap 0.8 has no option for this (0.10's --ro-overlay reports its top layer, the host's disk) and
mounting needs root, so without root (or where overlays cannot be mounted) the binds are plain and the
run's header says what the box shows (Sandbox.limit_notes).

An overlay's lower layer is the folder's own file system, without what is mounted inside it: a container's
runtime binds the GPU driver's libraries (libcuda.so.1) over files of /usr/lib, and an overlay of /usr showed
the files underneath (CUDA programs in the box failed: "CUDA driver version is insufficient"). A folder with
mounts inside it is therefore bound as it is (bwrap binds recursively), and the header names it.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from attnbench.sandbox import case_disk
from attnbench.sandbox.bwrap_args import ETC_FILES

VIEW_BYTES = 8 << 20  # the /etc copies (ld.so.cache is the largest, well under 1 MiB) and the accounts
_OVERLAY_UNSAFE = frozenset(":,\\\n")  # overlay's option syntax: such a folder is bound as it is


@dataclass
class BoxView:
    """One room's view: a tmpfs with the box's /etc and an overlay per host folder (`sources`)."""

    root: Path
    sources: dict[str, Path] = field(default_factory=dict)  # host folder -> its overlay in the view
    as_is: list[Path] = field(default_factory=list)  # host folders with mounts inside: bound as they are

    @property
    def etc(self) -> Path:
        return self.root / "etc"

    @property
    def accounts(self) -> Path:
        return self.root / "accounts"

    def source(self, host: str | Path) -> Path:
        """What the box binds for this host folder or /etc entry: its overlay or its copy, else itself."""
        if str(host) in self.sources:
            return self.sources[str(host)]
        name = os.path.relpath(host, "/etc")
        if name in ETC_FILES and os.path.lexists(self.etc / name):
            return self.etc / name
        return Path(host)

    def close(self) -> None:
        """Unmount the overlays (whatever is mounted in the view), then its tmpfs (umount2: no program started;
        lazily where busy)."""
        case_disk.unmount_all_below(self.root)
        case_disk.uncap(self.root)

_MS_RDONLY = 1  # mount(2)'s flag
_CLONE_FS = 0x200  # unshare(2)'s flag: a working folder (and root, umask) of the calling thread's own


def make(room: Path, folders: Sequence[Path]) -> tuple[BoxView | None, str]:
    """A view in the room folder over `folders` (absolute host folders, or folders of the room), or None and
    why not. Root only: a tmpfs and overlays are mounted."""
    if not case_disk.can_cap():
        return None, "mounting needs root"
    view = BoxView(Path(tempfile.mkdtemp(prefix="view-", dir=room)))
    if not case_disk.cap(view.root, VIEW_BYTES):
        view.root.rmdir()
        return None, "a tmpfs could not be mounted"
    try:
        os.chmod(view.root, 0o755)
        (view.root / "blank").mkdir(mode=0o755)
        view.accounts.mkdir(mode=0o755)
        mounted = mount_points()
        overlays: list[tuple[str, str]] = []  # (mount point, lower folder), both as seen from the view's root
        for number, folder in enumerate([*folders, *_copy_etc(view.etc)]):
            if _OVERLAY_UNSAFE & set(str(folder)):
                continue
            if not folder.is_relative_to(room) and has_mounts_inside(folder, mounted):
                view.as_is.append(folder)
                continue
            overlay = view.root / f"layer-{number}"
            overlay.mkdir(mode=0o755)
            lower = os.path.relpath(folder, view.root) if folder.is_relative_to(room) else str(folder)
            overlays.append((overlay.name, lower))
            view.sources[str(folder)] = overlay
        _mount_overlays(view.root, overlays)
    except (OSError, subprocess.SubprocessError) as exc:
        view.close()
        return None, f"an overlay could not be mounted ({exc})"
    return view, ""


def _mount_overlays(root: Path, overlays: Sequence[tuple[str, str]]) -> None:
    """Each (mount point, lower folder) a read-only overlay over the view's blank folder, mounted with mount(2) by
    one thread that works in `root`: the options name folders relative to it (what /proc/self/mountinfo shows:
    `lowerdir=blank:../program`). The thread first takes a working folder of its own (unshare(CLONE_FS)), so its
    chdir moves no other thread's, where the judge's is shared by its threads. The `mount` program, once per
    overlay, cost 2.5 ms a start: four a run; a forked child, which did it next, cost the judge's whole process
    copied and torn down in every run (about 7 ms on 2 busy cores)."""
    if not overlays:
        return
    ended: list[int] = []  # 0, or 10 + the overlay refused, or 1: no working folder of its own

    def mount_all() -> None:
        ended.append(_mount_each(root, overlays))

    mounter = threading.Thread(target=mount_all, name="attnbench-view-mounts")
    mounter.start()
    mounter.join()
    code = ended[0] if ended else 1
    if code != 0:
        which = overlays[code - 10][1] if 10 <= code < 10 + len(overlays) else "the view's folder"
        raise OSError(f"overlay refused over {which}")


def _mount_each(root: Path, overlays: Sequence[tuple[str, str]]) -> int:
    """In a thread of its own that ends after: its own working folder, `root`, then each overlay (what
    _mount_overlays reads back: 0, 1 or 10 + the overlay refused)."""
    if ctypes.CDLL(None, use_errno=True).unshare(_CLONE_FS) != 0:
        return 1
    try:
        os.chdir(root)
    except OSError:
        return 1
    for number, (point, lower) in enumerate(overlays):
        options = f"lowerdir=blank:{lower}".encode()
        if case_disk.mount_now(b"overlay", point.encode(), b"overlay", _MS_RDONLY, options) != 0:
            return 10 + number
    return 0


def mount_points(mountinfo: str | None = None) -> list[str]:
    """The mount points of this process's mount namespace (/proc/self/mountinfo's fifth field, its octal escapes
    undone)."""
    if mountinfo is None:
        try:
            mountinfo = Path("/proc/self/mountinfo").read_text()
        except OSError:
            return []
    points = []
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) > 4:
            points.append(fields[4].encode().decode("unicode_escape").encode("latin-1").decode(errors="replace"))
    return points


def has_mounts_inside(folder: Path, points: Sequence[str]) -> bool:
    """Whether anything is mounted strictly inside `folder` (its path as mounted: links resolved)."""
    top = os.path.realpath(folder).rstrip("/") + "/"
    return any(point.startswith(top) and point != top.rstrip("/") for point in points)


def _copy_etc(etc: Path, host_etc: Path = Path("/etc")) -> list[Path]:
    """The few /etc files a program's loader and libc read, copied (a link's file, not the link: bwrap binds what
    a link names, so /etc/localtime, a link into /usr/share/zoneinfo, was bound from the host's disk, and statvfs
    on it showed that disk's free space); returns the /etc folders among them (links to folders too), for
    overlays (copying /etc/alternatives' 390 links took 50 ms a room)."""
    etc.mkdir(mode=0o755)
    folders = []
    for name in ETC_FILES:
        host = host_etc / name
        if host.is_dir():
            folders.append(host)
        elif host.is_file():
            shutil.copy2(host, etc / name)
    return folders
