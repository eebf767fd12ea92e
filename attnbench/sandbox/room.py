"""The room a judged program runs in: its own copy of the input, a folder for its output, the GPU.

With bubblewrap (`bwrap`, found through $ATTNBENCH_BWRAP or PATH) each case runs in fresh namespaces:
- mounts: only the system's read-only folders (/usr, /lib*, /bin, a few files of /etc, /sys), the
  program's copy (read-only, at /judge/program), the case folder (read-write, at /judge/case), the
  GPU's device nodes and a small private /tmp. The suite's folder, the user's home and every other
  case are simply not there;
- network: a fresh namespace with no interface up, so even 127.0.0.1 is unreachable;
- PIDs: its own namespace, so the end of the program (or of bwrap, killed at the timeout) ends every
  process in it, whatever they did (setsid, a double fork, a daemon);
- users: when the judge is root, each run as a uid of its own (fallback_users.OWN_UIDS; nobody where bwrap
  cannot), since RLIMIT_NPROC does not bind root and counts every process of a shared uid;
- a read-only `/` and `/dev`, a 64 MiB `/dev/shm` and a 256 MiB `/tmp`, made fresh for each run.
- as root, nothing bound from the host's disk as it is (attnbench.sandbox.box_view): its mounts name no
  folder of the judge's and `statvfs` shows no disk of the host's.

Where bwrap is missing or cannot make namespaces (`--sandbox auto` for one program, one warning;
`required` refuses; a class needs `--sandbox none` said outright), the fallback still copies the input
into a fresh case folder outside the suite's, and kills every descendant (attnbench.sandbox.reaper).
As root it runs each run as a uid of its own, drawn from a range no user has (OWN_UIDS), kills every
process of that uid after the run and removes what the uid left in the machine's shared temporary
folders. A bwrap that is there and permitted but fails on this run's mounts is an error, never a
quiet fallback.

The API is for anything that runs untrusted code per case (one program's cases, a class's builds):
`Sandbox.open` once (with the program, or None to run commands such as `make` only), then `prepare` a
case folder (with an input copy, or a submission's files to build), `run` a command in it (under
`limits_for` the case, or a build's own limits), `finish` it; `close`. A program's judged run is all of
these at once: `attnbench.sandbox.run_program`.
"""

from __future__ import annotations

import math
import os
import resource
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

from attnbench.errors import AttnbenchError, UsageError
from attnbench.printable import printable
from attnbench.sandbox import (box_view, case_disk, cgroups, held_signals, inner_limits, oom_priority, staged_inputs,
                               syscall_filter)
from attnbench.sandbox.bwrap_args import (
    BWRAP_ENV,  # noqa: F401 - the variable is part of the sandbox's interface
    account_files,
    bwrap_starts,
    find_bwrap,
    gpu_binds,
    holds_temp_folder,
    library_folders,
    sys_binds,
    system_binds,
    system_folders,
)
from attnbench.sandbox.case_folder import CasePaths, WrittenInput
from attnbench.sandbox.fallback_users import (OWN_UIDS, SHARED_TEMP, draw_uid, leave_network_and_ipc, remove_files_of,
                                              uid_kind)
from attnbench.sandbox.owned_folders import make_owned, release, remove_owned, remove_stale
from attnbench.sandbox.gpu_nodes import visible_choice
from attnbench.sandbox.jit_cache import CACHE_BYTES, CACHE_SLACK_BYTES, cache_copy, seal_cache, tree_bytes
from attnbench.sandbox.process import ProcessLimits, ProcessOutcome, exit_text, run_process
from attnbench.sandbox.program_copy import program_copy
from attnbench.sandbox.reaper import descendants, kill_user, sweep
from attnbench.sandbox.staging import PROGRAM_BYTES, remove_tree

MODES = ("auto", "required", "none")
ROOM_PREFIX = "attnbench-judge-"
NOBODY = 65534
INSIDE_CASE, INSIDE_PROGRAM, INSIDE_CACHE = "/judge/case", "/judge/program", "/judge/cuda-cache"
TMP_BYTES = 256 << 20  # the private /tmp lives in memory; nvcc's JIT cache fits
SHM_BYTES = 64 << 20  # /dev/shm, the only writable place in the read-only /dev
BWRAP_PROCESSES = 2  # bwrap's outer process, which waits, and the box's init: both in the run's cgroup
WARM_CACHE_BYTES = CACHE_BYTES + (1 << 20)  # the warm-up's cache, as root: a sealed cache's cap and a little
_PASSED_ENV = ("LANG", "LC_ALL", "TZ", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES",
               "NVIDIA_DRIVER_CAPABILITIES", "LD_LIBRARY_PATH", "OMP_NUM_THREADS")
_PATH = "/usr/local/bin:/usr/bin:/bin"


_PROBED_OK: set[tuple[object, ...]] = set()  # what Sandbox._probe found working in this process


class BindRefused(AttnbenchError):
    """A --sandbox-bind folder that would show the judge's own rooms to every program."""

    exit_code = 2


NO_SANDBOX_HERE = "--sandbox required: no sandbox can be made here: "  # then why


class SandboxUnavailable(AttnbenchError):
    """--sandbox required, and no sandbox can be made here."""

    exit_code = 3


MAX_CPU_S = (1 << 64) // 10**9 - 1  # the largest --cpu-time whose hard limit (one more) the kernel holds exactly


@dataclass(frozen=True)
class SandboxSettings:
    """What the user chose: the mode, the limits that are not per case, and extra read-only folders."""

    mode: str = "auto"
    processes: int | None = 512
    memory_mb: int | None = None
    cpu_s: float | None = None  # None: CPU_FACTOR times the case's timeout
    binds: tuple[Path, ...] = ()
    program_mb: int = PROGRAM_BYTES >> 20  # the largest program judged (its sealed copy is linked into each run)
    # Variables every run gets besides the few passed (program_env): an untimed run's kernel-records collector
    # (attnbench.backends.kernel_records: CUDA_INJECTION64_PATH and the file it writes), nothing else
    env: tuple[tuple[str, str], ...] = ()

    CPU_FACTOR = 4.0

    def __post_init__(self) -> None:
        # The command line's option ranges hold these; from Python, cpu_s=nan ended the judge in a traceback, and
        # processes=0, memory_mb=-5 or cpu_s=0 were taken (no limit at all, or every case killed) by no rule given.
        for name, value in (("processes", self.processes), ("memory_mb", self.memory_mb),
                            ("program_mb", self.program_mb)):
            if (value is not None or name == "program_mb") and (
                    isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise UsageError(f"{name}={value!r}: give a whole number >= 1" + ("" if name == "program_mb" else
                                                                                 ", or None for the default"))
        if self.cpu_s is not None and (isinstance(self.cpu_s, bool) or not isinstance(self.cpu_s, (int, float))
                                       or not math.isfinite(self.cpu_s) or self.cpu_s <= 0):
            raise UsageError(f"cpu_s={self.cpu_s!r}: give a finite number of seconds > 0, or None for the default")
        for folder in self.binds:
            if holds_temp_folder(folder):
                raise BindRefused(f"--sandbox-bind {folder}: it holds the judge's temporary folder "
                                  f"({tempfile.gettempdir()}), where the room of every run is: each program would see "
                                  "the others' programs; bind the folder the program needs, beside it")
    FILE_FACTOR = 4  # the output-size limit: this many times the expected output, at least FILE_FLOOR
    FILE_FLOOR = 1 << 20

    @property
    def program_bytes(self) -> int:
        return self.program_mb << 20

    def unreachable_limit(self) -> str | None:
        """Why a limit asked for cannot be set on a program here, or None: prlimit in the box cannot raise a limit
        past this machine's hard one, nor take a byte count past 64 bits, and it failed before the program ran,
        which was then judged CRASH ("prlimit: failed to set the NPROC resource limit")."""
        hard_processes = resource.getrlimit(resource.RLIMIT_NPROC)[1]
        room = hard_processes - inner_limits.BOX_PROCESSES
        if self.processes is not None and hard_processes != resource.RLIM_INFINITY and self.processes > room:
            return (f"--max-processes {self.processes}: this machine's hard limit allows the program at most {room} "
                    f"(ulimit -Hu is {hard_processes})")
        if self.memory_mb is not None and self.memory_mb << 20 >= 1 << 63:
            return f"--memory-limit {self.memory_mb}: at most {((1 << 63) - 1) >> 20} MiB (a byte count of 64 bits)"
        # The kernel keeps a CPU limit as nanoseconds in 64 bits: a larger one wrapped round to a small one (2**55 s
        # to none at all), and the program was judged RESOURCE LIMIT or CRASH in its first instant.
        if self.cpu_s is not None and (math.ceil(self.cpu_s) + 1) * 10**9 >= 1 << 64:
            return (f"--cpu-time {self.cpu_s}: at most {MAX_CPU_S} s (the kernel counts CPU time in nanoseconds of "
                    "64 bits)")
        hard_cpu = resource.getrlimit(resource.RLIMIT_CPU)[1]
        if self.cpu_s is not None and hard_cpu != resource.RLIM_INFINITY and math.ceil(self.cpu_s) + 1 > hard_cpu:
            return f"--cpu-time {self.cpu_s:g}: this machine's hard limit allows at most {hard_cpu - 1} s (ulimit -Ht)"
        return None

    def limits_for(self, output_bytes: int, timeout_s: float) -> ProcessLimits:
        """The resource limits of one case."""
        cpu = self.cpu_s if self.cpu_s is not None else max(10.0, self.CPU_FACTOR * timeout_s)
        return ProcessLimits(
            file_bytes=max(self.FILE_FACTOR * output_bytes, self.FILE_FLOOR),
            processes=self.processes,
            memory_bytes=self.memory_mb << 20 if self.memory_mb else None,
            cpu_s=math.ceil(cpu),
        )


@dataclass(frozen=True)
class Confinement:
    """How the cases are confined: bwrap, or the fallback with the reason no sandbox could be made."""

    kind: str  # "bwrap" or "fallback"
    tool: str | None = None
    user: int | None = None  # the uid programs run as, when it is not the judge's own
    own_uids: bool = False  # the fallback as root: each run gets a uid of its own (OWN_UIDS)
    limit_notes: tuple[str, ...] = ()  # each limit that does not hold as asked here (Sandbox.limit_notes)
    reason: str | None = None  # why there is no sandbox; with bwrap, why it runs programs as root

    @property
    def sandboxed(self) -> bool:
        return self.kind == "bwrap"

    def warning(self) -> str | None:
        """The one line said when programs run without a sandbox, or in one as root."""
        if self.sandboxed:
            return self.reason  # set only when it could not run programs as nobody
        return (f"no sandbox ({self.reason}): programs see this machine's files and network; each still gets "
                "a copy of its input, and every process it starts is killed")

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "tool": self.tool, "user": self.user, "reason": self.reason,
                "own_uids": f"{OWN_UIDS.start}-{OWN_UIDS.stop - 1}" if self.own_uids else None,
                "limits_not_applied": list(self.limit_notes)}


def _cores() -> set[int]:
    """The cores this process (a worker, pinned) may run on: its runs' cpuset."""
    try:
        return os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return set()


def program_env(home: str, cuda_cache: str | None = None) -> dict[str, str]:
    """The few variables a program gets: PATH, HOME and TMPDIR (its own folder), locale and GPU choice,
    and where CUDA keeps its JIT cache."""
    env = {name: os.environ[name] for name in _PASSED_ENV if name in os.environ}
    env.update(PATH=_PATH, HOME=home, TMPDIR=home)
    if cuda_cache is not None:
        env["CUDA_CACHE_PATH"] = cuda_cache
    return env


@dataclass
class Sandbox:
    """The judge's rooms for one run: a private root folder holding the program's copy and case folders."""

    confinement: Confinement
    root: Path
    program: Path | None  # the program's copy on the host (None: commands only, e.g. a build)
    launched: bool = False  # a launcher (srun) runs the command: keep its environment, bwrap cleans it
    settings: SandboxSettings = field(default_factory=SandboxSettings)
    # CUDA's JIT cache (CUDA_CACHE_PATH): without it a program built as PTX only (nvcc without -arch)
    # compiles its kernels again in every case (about 2 s a case for the course's hw4 on an H200, against
    # 0.3 s with the cache), which times the driver, not the program. It is written by one warm-up run that
    # is neither timed nor judged (`cache_writable`), in a folder of its own (as root a capped tmpfs), then
    # sealed (`seal_warm_cache`: copied by the judge into `cuda_cache`, files of its own, no write bit);
    # each judged run gets a copy of its own (CUDA may insist on writing to its cache), removed with the
    # run, so nothing a run writes reaches another run.
    cuda_cache: Path | None = None
    cache_writable: bool = False
    groups: cgroups.RunGroups | None = None  # with --memory-limit as root: a cgroup per run
    groups_reason: str = ""  # why there is none
    disk_capped: bool = False  # each case folder a size-capped tmpfs (case_disk), as root
    view: box_view.BoxView | None = None  # as root in bwrap: what the box binds instead of the host's disk
    view_reason: str = ""  # why there is none
    # With a uid of each run's own: the uids this room has run anything as (a probe, a run), never handed out
    # again; and the one whose every process its run's end already killed (finish need not kill it twice)
    spent_uids: set[int] = field(default_factory=set, init=False, repr=False)
    emptied_uid: int | None = field(default=None, init=False, repr=False)

    @classmethod
    def open(cls, program: Path | None, settings: SandboxSettings, launched: bool = False,
             cuda_cache: Path | None = None, cache_writable: bool = False) -> "Sandbox":
        """Copy the program (if any) into a fresh root folder and find out which confinement works here.
        `cuda_cache`: a folder (in a folder the program's user may pass through) holding CUDA's JIT cache
        of this program, sealed and copied into each run unless `cache_writable` (the warm-up run, which
        writes it); by default an empty one."""
        _remove_stale_rooms()
        root = make_owned(ROOM_PREFIX)
        sandbox = None
        try:
            os.chmod(root, 0o711)  # nobody may pass through to its case folder, not list the others
            (root / "program").mkdir(mode=0o755)
            copy = None if program is None else program_copy(program, root / "program", settings.program_bytes)
            sandbox = cls(Confinement("fallback"), root, copy, launched, settings, cuda_cache or root / "cuda-cache",
                          cache_writable)
            sandbox.disk_capped = case_disk.can_cap() and not launched
            sandbox._make_view()
            try:
                sandbox.confinement = sandbox._choose()
            except SandboxUnavailable:  # bwrap refused the view's overlays: its plain binds, said in the header
                if sandbox.view is None:
                    raise
                sandbox.view.close()
                sandbox.view, sandbox.view_reason = None, "bwrap could not bind its overlays here"
                sandbox.confinement = sandbox._choose()
            if not sandbox.confinement.sandboxed and sandbox.view is not None:
                sandbox.view.close()
                sandbox.view = None
            sandbox._make_cache()
            if not launched:  # memory, processes and cores of each run, where a cgroup v2 can be made
                sandbox.groups, sandbox.groups_reason = cgroups.RunGroups.make()
            sandbox.confinement = replace(sandbox.confinement, limit_notes=tuple(sandbox.limit_notes()))
        except BaseException:
            with held_signals.held():
                if sandbox is not None and sandbox.view is not None:
                    sandbox.view.close()
                case_disk.unmount_all_below(root)  # a view made but not yet the room's: its overlays too
                remove_owned(root)
                release(root)
            raise
        return sandbox

    @property
    def user(self) -> int | None:
        return self.confinement.user

    def _make_view(self) -> None:
        """As root, unless launched or told no sandbox: the room's view (box_view), so the box names no folder of
        the judge's and no disk statistics of the host's."""
        if self.launched or self.settings.mode == "none":
            return
        folders = [*system_folders(), *library_folders(self.settings.binds)]
        if self.program is not None:
            folders.append(self.program.parent)
        self.view, self.view_reason = box_view.make(self.root, folders)

    def _make_cache(self) -> None:
        assert self.cuda_cache is not None
        if not self.cuda_cache.exists():
            self.cuda_cache.mkdir(mode=0o755)
        if self.cache_writable:
            warm = self._warm_cache()
            warm.mkdir(mode=0o755)
            # as root a tmpfs of its own: the warm-up once reserved the judge's whole disk under its cache
            if self.disk_capped and case_disk.cap(warm, WARM_CACHE_BYTES):
                os.chmod(warm, 0o755)
            if self.user is not None:
                os.chown(warm, self.user, self.user)

    def _warm_cache(self) -> Path:
        """Where the warm-up run writes its cache (this room's own folder, never the sealed one)."""
        return self.root / "warm-cache"

    def seal_warm_cache(self) -> str:
        """After the warm-up: its cache sealed into `cuda_cache` (jit_cache.seal_cache, replacing what was there),
        the warm-up's folder removed; from then on each run gets a copy. Returns why it was dropped, or ''."""
        assert self.cuda_cache is not None
        why = seal_cache(self._warm_cache(), self.cuda_cache, linked=not self.disk_capped)  # capped: copied whole
        if self.disk_capped:
            case_disk.uncap(self._warm_cache())
        _remove(self._warm_cache())
        self.cache_writable = False
        return why

    def _cache_path(self) -> str:
        if self.confinement.sandboxed:
            return INSIDE_CACHE
        return str(self._warm_cache() if self.cache_writable else self.cuda_cache)

    def _choose(self) -> Confinement:
        own = os.geteuid() == 0 and not self.launched
        if self.settings.mode == "none":
            return Confinement("fallback", user=draw_uid() if own else None, reason="--sandbox none", own_uids=own)
        tool, why = find_bwrap()
        if tool is not None:
            # As root: a uid of each run's own first (RLIMIT_NPROC counts its processes only), nobody, root last
            for candidate in [draw_uid(), NOBODY, None] if own else [None]:
                failed = self._probe(tool, candidate)
                if not failed:
                    note = None if candidate is not None or not own else (
                        f"the sandbox cannot run as nobody ({why}): programs run in it as root, where "
                        "--max-processes does not bind")
                    return Confinement("bwrap", tool, candidate, reason=note,
                                       own_uids=candidate is not None and candidate != NOBODY)
                why = failed
            if not bwrap_starts(tool):
                raise SandboxUnavailable(f"bwrap works here but not with this run's mounts ({why}): fix the "
                                         "cause (a --sandbox-bind or LD_LIBRARY_PATH folder, say) rather than "
                                         "judge without the sandbox")
        if self.settings.mode == "required":
            raise SandboxUnavailable(f"{NO_SANDBOX_HERE}{why}")
        return Confinement("fallback", user=draw_uid() if own else None, reason=why, own_uids=own)

    def _probe(self, tool: str, user: int | None) -> str:
        """'' when bwrap runs a trivial program with this run's mounts as `user`; else its last words. Asked once
        per process for each kind of user and set of mounts (`_probe_key`) until it works: a class opens a room for
        every run, and the probe's box (about 60 ms a time on 2 cores) was most of what a run cost beside the
        program. A failure is not kept (a full disk, say, may pass)."""
        key = self._probe_key(tool, user)
        if key in _PROBED_OK:
            return ""
        failed = self._probe_now(tool, user)
        if not failed:
            _PROBED_OK.add(key)
        return failed

    def _probe_key(self, tool: str, user: int | None) -> tuple[object, ...]:
        """What the probe's answer depends on: bwrap, the kind of user (a run's own uid, nobody, the judge's), the
        mounts besides the room's own folders, where those folders are made, and the room's view (which host
        folders it binds through which of its overlays: a view bwrap refused must be probed again, not taken)."""
        kind = uid_kind(user)
        view = None if self.view is None else tuple(sorted(  # a room's own folders by their place in it
            (os.path.relpath(host, self.root) if Path(host).is_relative_to(self.root) else host,
             os.path.relpath(shown, self.view.root)) for host, shown in self.view.sources.items()))
        return (tool, kind, os.geteuid(), self.launched, tuple(map(_identity, library_folders(self.settings.binds))),
                tuple(gpu_binds(None if self.launched else visible_choice())), str(self.root.parent), tuple(self.settings.env), view)

    def _probe_now(self, tool: str, user: int | None) -> str:
        self.confinement = Confinement("bwrap", tool, user)
        if user is not None:
            self.spent_uids.add(user)
        probe = self.prepare("probe", None)
        ids = {"user": user, "group": user, "extra_groups": []} if user is not None else {}
        spared = set(descendants(os.getpid()))
        try:
            done = subprocess.run(self.command(["/bin/sh", "-c", "exit 0"], probe), stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=30, env=self.launcher_env(), cwd=probe.folder, **ids)
            return "" if done.returncode == 0 else probe_failure(tool, done.returncode, done.stderr)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"{printable(tool)} cannot run: {exc}"
        finally:
            sweep(spared)  # bwrap's own children, handed to this process (a subreaper) when bwrap exits: reaped
            self.finish(probe)

    def prepare(self, label: str, input_path: Path | None, files: Path | None = None,
                written: WrittenInput | None = None) -> CasePaths:
        """A fresh case folder holding a copy of the input (not a link: the suite's file stays intact), and
        a copy of the folder `files` if given (a submission to build, say). An input the judge staged
        (staged_inputs) is bound read-only instead, where the box has a view of its own (as root): the view's
        rule, that the box names no folder of the judge's, holds for the staged tmpfs too. `written`: the input
        is written into the folder instead (input_path names no file)."""
        if self.confinement.own_uids:  # a uid of its own for every run (the one drawn at opening, if unused)
            if self.user is None or self.user in self.spent_uids:
                self.confinement = replace(self.confinement, user=draw_uid())
            assert self.user is not None
            self.spent_uids.add(self.user)
            if self.cache_writable:
                os.chown(self._warm_cache(), self.user, self.user)
        folder = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=self.root))
        size = case_disk.case_bytes(input_path, files is not None, self.settings.FILE_FACTOR, self.settings.FILE_FLOOR,
                                    written.shape if written is not None else None)
        capped = self.disk_capped and case_disk.cap(folder, size)
        if files is not None:
            shutil.copytree(files, folder, symlinks=True, dirs_exist_ok=True)
        copy = folder / f"{label}.in"
        staged = self._staged(input_path) if written is None else None
        if staged is not None:
            staged_inputs.lend(staged, self.user)
        elif written is not None:
            with open(copy, "w+b") as f:  # readable too: written through a mapping (bulk_io)
                written.write(f)
            os.chmod(copy, 0o644)
        elif input_path is not None:
            shutil.copyfile(input_path, copy)
            os.chmod(copy, 0o644)
        if self.user is not None:
            for path in (folder, *folder.rglob("*")):
                os.chown(path, self.user, self.user, follow_symlinks=False)
        output = folder / f"{label}.out"
        inside = INSIDE_CASE if self.confinement.sandboxed else str(folder)
        cache, cache_capped = self._cache_copy(label)
        group = None
        if self.groups is not None:
            memory = self.settings.memory_mb << 20 if self.settings.memory_mb else None
            try:
                group = self.groups.run_group(memory, self._group_processes(), sorted(_cores()))
            except OSError as exc:  # the judge's group was made, a run's was not: no groups from here on
                self.groups.close()
                self.groups, self.groups_reason = None, f"a run's cgroup could not be made ({exc.strerror})"
        self._write_accounts()
        self._stamp_opening()
        return CasePaths(folder, copy, output, f"{inside}/{copy.name}", f"{inside}/{output.name}", group,
                         cache, cache_capped, capped,
                         self._scratch(label) if capped and self.confinement.sandboxed else None, staged)

    def _stamp_opening(self) -> None:
        """What the room's opening made that a run sees (the view's /etc copies and its overlays' empty top
        layer, the program's folder and its link) given a change time of now, right before each run, its other
        times kept. A change time cannot be set, and dated the opening: a class row's next room is opened ahead,
        beside this run's check (judge_entry's open_next), so a run whose program's link changed after its
        folder was made (this room's removal unlinks its own link of the same file) knew it was not its row's
        first of the round, and with its first case failed on purpose, told a rerun round's first run (red team)."""
        seen: list[Path] = []
        if self.view is not None:
            seen += [self.view.root / "blank", *(sorted(self.view.etc.iterdir()) if self.view.etc.is_dir() else [])]
        if self.program is not None:
            seen += [self.program.parent, self.program]
        for path in seen:
            info = os.lstat(path)
            os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns), follow_symlinks=False)

    @property
    def binds_staged_inputs(self) -> bool:
        """Whether this room's runs bind a staged input (in the box, with its own view, no launcher): only then
        may inputs be staged for them. A run outside a box (the fallback) sees the host's mount table, which names
        every staged input; each is the judge's alone but while a run it is lent to (staged_inputs.lend) is on."""
        return self.confinement.sandboxed and self.view is not None and not self.launched

    def _staged(self, input_path: Path | None) -> Path | None:
        """The input's staged file, where this run may bind it (`binds_staged_inputs`)."""
        if input_path is None or not self.binds_staged_inputs:
            return None
        return staged_inputs.staged(input_path)

    def _write_accounts(self) -> None:
        """The box's own passwd and group for the run's user (bwrap_args.account_files), in the room's folder."""
        folder = self.view.accounts if self.view is not None else self.root / "accounts"
        folder.mkdir(mode=0o755, exist_ok=True)
        account_files(folder, os.geteuid() if self.user is None else self.user)

    def _scratch(self, label: str) -> tuple[Path, Path] | None:
        """The run's /tmp and /dev/shm as capped tmpfs mounts of their own (case_disk.cap: bytes and files),
        owned by the run's user; None (bwrap's own, capped in bytes only) where one cannot be mounted."""
        made: list[Path] = []
        for name, size in (("tmp", TMP_BYTES), ("shm", SHM_BYTES)):
            folder = Path(tempfile.mkdtemp(prefix=f"{label}-{name}-", dir=self.root))
            if not case_disk.cap(folder, size):
                for done in made:
                    case_disk.uncap(done)
                for path in (*made, folder):
                    _remove(path)
                return None
            made.append(folder)
            os.chmod(folder, 0o1777 if self.user is None else 0o700)
            if self.user is not None:
                os.chown(folder, self.user, self.user)
        return made[0], made[1]

    def _cache_copy(self, label: str) -> tuple[Path | None, bool]:
        """A judged run's own copy of the sealed cache (None during the warm-up, which writes the cache), and
        whether it sits in a capped tmpfs of its own. As root it does: the copy is on the host's disk
        otherwise, and a run (or a build) once wrote 3.1 GB into it within its time limit; the cap is the
        sealed cache's size and CACHE_SLACK_BYTES, in files too. Without root it is bounded per file and by
        the timeout only."""
        if self.cuda_cache is None or self.cache_writable or not self.cuda_cache.is_dir():
            return None, False
        holder = Path(tempfile.mkdtemp(prefix=f"{label}-cache-", dir=self.root))
        if self.disk_capped and case_disk.cap(holder, tree_bytes(self.cuda_cache) + CACHE_SLACK_BYTES):
            os.chmod(holder, 0o755)
            inner = holder / "cache"
            inner.mkdir()
            return cache_copy(self.cuda_cache, inner, self.user), True  # another file system: copies, no links
        return cache_copy(self.cuda_cache, holder, self.user), False

    def limits_for(self, output_bytes: int, timeout_s: float) -> ProcessLimits:
        """The case's limits; memory and processes are the cgroup's where a cgroup was made: its memory.max
        counts real use, not address space (RLIMIT_AS), and its pids.max records a refused fork, which
        RLIMIT_NPROC, checked first by the kernel, would refuse unrecorded (the row said CRASH, not RESOURCE LIMIT)."""
        limits = self.settings.limits_for(output_bytes, timeout_s)
        if self.memory_by_cgroup:
            limits = replace(limits, memory_bytes=None)
        if self.processes_by_cgroup:
            limits = replace(limits, processes=None)
        return limits

    @property
    def memory_by_cgroup(self) -> bool:
        return self.groups is not None and "memory" in self.groups.controllers

    @property
    def processes_by_cgroup(self) -> bool:
        return self.groups is not None and "pids" in self.groups.controllers

    def pinning(self) -> str:
        """How a run is kept on its worker's cores (said in the run's header)."""
        held = "a cpuset of its own (cgroup v2), which it cannot widen" if (
            self.groups is not None and "cpuset" in self.groups.controllers) else "CPU affinity only (no cgroup v2 cpuset here)"
        return held + ("; sched_setaffinity is refused by the system-call filter" if syscall_filter.supported() else "")

    def before_exec(self, case: CasePaths):  # noqa: ANN205 - a function for run_process
        """The run's child's first steps, as the judge's user: the OOM killer's first choice; join its cgroup;
        in the fallback as root, leave host network and IPC."""
        group, isolate = case.cgroup, self.confinement.own_uids and not self.confinement.sandboxed
        return lambda: (oom_priority.make_this_process_first(), group is not None and cgroups.join(group),
                        isolate and leave_network_and_ipc())

    @staticmethod
    def after_limits(build: bool = False, fallback: bool = False):  # noqa: ANN205 - a function for run_process
        """The run's child's last step before exec, after limits and uid: a new empty session keyring and the
        system-call filter (attnbench.sandbox.syscall_filter; a build's, the fallback's); None where there is none."""
        return syscall_filter.installer(build, fallback) if syscall_filter.supported() else None

    def run(self, argv: Sequence[str], case: CasePaths, timeout_s: float, limits: ProcessLimits,
            launcher: Sequence[str] = (), build: bool = False) -> ProcessOutcome:
        """argv (as the program sees paths) run in this room's case: wrapped in the sandbox (and the launcher
        around it), as the run's user, under `limits`, with its first and last steps before exec. In the box the
        limits are set on the program, not on bwrap (attnbench.sandbox.inner_limits)."""
        stream_bytes = limits.file_bytes  # the pipes are drained out here, so their cap stays out here
        if self.confinement.sandboxed:
            words, limits = inner_limits.split(limits, os.getuid() if self.user is None else self.user)
            argv = inner_limits.limited(argv, words)
        outcome = run_process(self.wrapped(argv, case, launcher), case.folder, timeout_s, limits=limits,
                              user=self.user, env=self.case_env(case), sole_user=self.sole_user,
                              before_exec=self.before_exec(case),
                              after_limits=self.after_limits(build, not self.confinement.sandboxed),
                              stream_bytes=stream_bytes, group=case.cgroup)
        if self.sole_user and outcome.all_ended:  # run_process killed every process of the uid: none can be born
            self.emptied_uid = self.user
        return outcome

    def wrapped(self, argv: Sequence[str], case: CasePaths, launcher: Sequence[str] = ()) -> list[str]:
        """The whole command: the launcher (srun, say) wraps the sandbox, which wraps argv."""
        return [*launcher, *self.command(argv, case)]

    def _group_processes(self) -> int | None:
        """The run's pids.max: --max-processes for the program, plus bwrap's two processes (the one that waits
        and the box's init), which join the group before the program; at exactly --max-processes, bwrap
        itself was refused its fork and the row blamed the program."""
        if self.settings.processes is None:
            return None
        return self.settings.processes + (BWRAP_PROCESSES if self.confinement.sandboxed else 0)

    def limits_hit(self, case: CasePaths) -> cgroups.LimitsHit:
        """What the run's cgroup says the kernel enforced (nothing where the run had none)."""
        return cgroups.limits_hit(case.cgroup) if case.cgroup is not None else cgroups.LimitsHit()

    def watched_limits(self, case: CasePaths) -> tuple[str, ...]:
        """The limits whose crossing the run's cgroup records ("memory", "processes"); a crash under any
        other limit set on it can only be said to have maybe crossed it."""
        if case.cgroup is None or self.groups is None:
            return ()
        return tuple(name for name, controller in (("memory", "memory"), ("processes", "pids"))
                     if controller in self.groups.controllers)

    def limit_notes(self) -> list[str]:
        """Each limit that does not hold as asked here, one line each (said once, saved with the results)."""
        notes = []
        if self.settings.memory_mb is not None and not self.memory_by_cgroup:  # none asked: nothing not applied
            notes.append(f"memory: no cgroup ({self.groups_reason or 'no memory controller'}): --memory-limit is "
                         "RLIMIT_AS, address space per process, which CUDA reserves far beyond its use")
        if self.user == NOBODY and not (self.groups is not None and "pids" in self.groups.controllers):
            notes.append("processes: every run is nobody and no pids cgroup could be made: runs side by side share "
                         "one RLIMIT_NPROC count")
        if os.geteuid() == 0 and self.user is None and not self.launched:
            notes.append("processes: programs run as root, where RLIMIT_NPROC does not bind")
        elif os.geteuid() != 0 and not self.confinement.sandboxed:
            notes.append("processes: RLIMIT_NPROC counts every process of your user, not only the program's")
        if not syscall_filter.supported():
            notes.append("system calls: no filter here (another architecture, or a kernel without seccomp): "
                         "keyrings, io_uring and CPU affinity are open to programs")
        if self.confinement.sandboxed and self.view is None and not self.launched:
            notes.append(f"what the box shows: no view of its own ({self.view_reason}): /proc/self/mountinfo in the box "
                         f"names the judge's temporary folders bound in (under {tempfile.gettempdir()}), and statvfs "
                         "on /usr, the /etc files, /judge/program and /judge/case reports this machine's disk and "
                         "its free space")
        if self.confinement.sandboxed and self.view is not None and self.view.as_is and not self.launched:
            folders = ", ".join(str(folder) for folder in self.view.as_is)
            notes.append(f"what the box shows: {folders} bound as they are (mounts inside them, such as a container's "
                         "GPU driver files, which an overlay would hide): statvfs there reports this machine's disk")
        if not self.disk_capped:
            scratch = ("the in-memory /tmp and /dev/shm in bytes (not in files)" if self.confinement.sandboxed else
                       "/tmp, /var/tmp and /dev/shm are the machine's own, not capped")
            notes.append(f"disk: no tmpfs of a run's own (that needs root, and no launcher): each file is capped "
                         f"(RLIMIT_FSIZE), {scratch}, but not in total what a run writes in its case folder or in "
                         "its copy of the CUDA cache, nor what the warm-up writes in its cache: all on the disk the "
                         "judge writes to, bounded by the timeout")
        return notes

    def program_path(self) -> str:
        """The program as the command names it."""
        if self.program is None:
            raise ValueError("this sandbox was opened without a program")
        return f"{INSIDE_PROGRAM}/{self.program.name}" if self.confinement.sandboxed else str(self.program)

    def command(self, argv: Sequence[str], case: CasePaths) -> list[str]:
        """argv (the program and its arguments, as the program sees paths) wrapped in the sandbox."""
        if not self.confinement.sandboxed:
            return list(argv)
        assert self.confinement.tool is not None
        view = self.view
        accounts = view.accounts if view is not None else self.root / "accounts"

        def shown(host: str | Path) -> str:
            """What the box binds for a host folder: the view's overlay or copy of it (named as the case folder's
            relative path, like every room folder), else the folder itself."""
            source = Path(host) if view is None else view.source(host)
            return str(host) if source == Path(host) else self._source(source, case)

        gpus = None if self.launched else visible_choice()  # a launcher's node has GPUs of its own: all bound there
        args = [self.confinement.tool, "--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL",
                "--die-with-parent", "--new-session", *system_binds(shown),
                "--ro-bind", self._source(accounts / "passwd", case), "/etc/passwd",
                "--ro-bind", self._source(accounts / "group", case), "/etc/group", *sys_binds(),
                "--proc", "/proc", "--dev", "/dev", *gpu_binds(gpus)]
        if case.scratch is not None:
            args += ["--bind", self._source(case.scratch[1], case), "/dev/shm",
                     "--bind", self._source(case.scratch[0], case), "/tmp"]
        else:
            args += ["--size", str(SHM_BYTES), "--tmpfs", "/dev/shm", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
        for folder in library_folders(self.settings.binds):
            args += ["--ro-bind", shown(folder), str(folder)]
        if self.program is not None:
            folder = self.program.parent if view is None else view.source(self.program.parent)
            args += ["--ro-bind", self._source(folder, case), INSIDE_PROGRAM]
        args += ["--bind", self._source(case.folder, case), INSIDE_CASE, "--chdir", INSIDE_CASE]
        if case.staged is not None:
            args += ["--ro-bind", self._source(case.staged, case), f"{INSIDE_CASE}/{case.input.name}"]
        cache = case.cache or (self._warm_cache() if self.cache_writable else None)
        if cache is not None and cache.is_dir():
            args += ["--bind", self._source(cache, case), INSIDE_CACHE, "--setenv", "CUDA_CACHE_PATH", INSIDE_CACHE]
        if self.launched:  # the job step's environment (CUDA_VISIBLE_DEVICES, say), less the judge's own
            args += [w for name in os.environ if name.startswith("ATTNBENCH") for w in ("--unsetenv", name)]
            args += ["--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp"]
        else:
            env = program_env("/tmp", INSIDE_CACHE if self.cuda_cache is not None else None)
            args += ["--clearenv"] + [w for k, v in env.items() for w in ("--setenv", k, v)]
        if gpus is not None:  # the box's GPUs are numbered from 0: named by UUID, the index the host gave is another's
            args += ["--setenv", "CUDA_VISIBLE_DEVICES", ",".join(gpus.uuids)]
        args += [w for k, v in self.settings.env for w in ("--setenv", k, v)]
        args += ["--remount-ro", "/dev", "--remount-ro", "/"]  # last: the mounts above made their mount points
        return [*args, "--", *argv]

    def _source(self, host: Path, case: CasePaths) -> str:
        """A bind's source as bwrap's command line names it: relative to the case folder (bwrap runs there),
        since the program can read that command line (/proc/1/cmdline is bwrap's) and the judge's own
        folders are none of its business; absolute under a launcher, which may start elsewhere."""
        return str(host) if self.launched else os.path.relpath(host, case.folder)

    def launcher_env(self) -> dict[str, str] | None:
        """The environment of the command itself: a launcher's own (bwrap cleans it inside); else the few
        variables a program gets (bwrap clears them anyway; the fallback passes just these)."""
        if self.launched:
            return None
        home = "/tmp" if self.confinement.sandboxed else str(self.root)
        return program_env(home, self._cache_path())

    def case_env(self, case: CasePaths) -> dict[str, str] | None:
        """The environment a case's command starts with (the fallback's HOME is its case folder)."""
        if self.launched or self.confinement.sandboxed:
            env = self.launcher_env()
            if self.launched and not self.confinement.sandboxed and self.settings.env:
                return {**os.environ, **dict(self.settings.env)}
            return env
        return {**program_env(str(case.folder), str(case.cache) if case.cache else self._cache_path()),
                **dict(self.settings.env)}

    @property
    def sole_user(self) -> bool:
        """Whether the uid programs run as is this run's alone (kill every process of it afterwards)."""
        return self.confinement.own_uids

    def finish(self, case: CasePaths) -> None:
        """Remove the case's folder (read what you need first); in the fallback as root, also
        every process of the run's uid and what it left in the machine's shared temporary folders."""
        if case.staged is not None:
            staged_inputs.take_back(case.staged)
        if case.cgroup is not None:
            cgroups.end(case.cgroup)
        if case.cache is not None:
            if case.cache_capped:
                case_disk.uncap(case.cache.parent)
                _remove(case.cache.parent)
            else:
                _remove(case.cache)
        if case.capped:
            case_disk.uncap(case.folder)
        for scratch in case.scratch or ():
            case_disk.uncap(scratch)
            _remove(scratch)
        if self.confinement.own_uids and self.user is not None:
            if self.emptied_uid != self.user:
                kill_user(self.user)
            if not self.confinement.sandboxed:  # a box has no way to the machine's shared temporary folders
                remove_files_of(self.user, SHARED_TEMP)
        _remove(case.folder)

    def close(self) -> None:
        """Remove the root folder with everything left in it (unfinished case folders unmounted), the cgroup; an
        interrupt meanwhile is held until it is done (held_signals)."""
        with held_signals.held():
            if self.view is not None:
                self.view.close()
                self.view = None
            case_disk.uncap_all_below(self.root)
            remove_owned(self.root)
            release(self.root)
            if self.groups is not None:
                self.groups.close()


_swept: list[bool] = []


def probe_failure(tool: str, returncode: int, stderr: bytes) -> str:
    """Why a probe of the box failed, naming the tool's path and how it ended, with its last line, escaped, where it
    said one ("bwrap failed: 1" named neither the tool nor that 1 was an exit status)."""
    said = [line for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    if said:
        return f"{printable(tool)} failed ({exit_text(returncode)}): {printable(said[-1].strip()[:200])}"
    return f"{printable(tool)} failed without a word ({exit_text(returncode)})"


def _remove_stale_rooms() -> None:
    """Once per process: the rooms a judge (or a worker) killed outright left, with whatever is still mounted
    in them (case tmpfs mounts hold their inputs and outputs in memory), removed (owned_folders)."""
    if not _swept:
        _swept.append(True)
        remove_rooms_of_the_gone()


def remove_rooms_of_the_gone() -> None:
    """Now: every room whose judge or worker is gone (its lock free), what is mounted in it unmounted first;
    and their staged inputs (staged_inputs)."""
    remove_stale(ROOM_PREFIX, before=case_disk.unmount_all_below)
    staged_inputs.remove_staged_of_the_gone()


def _identity(folder: Path) -> tuple[str, int, int] | None:
    """A folder as a bind sees it (a folder removed or replaced is another), None when it is not there."""
    try:
        info = os.stat(folder)
    except OSError:
        return None
    return str(folder), info.st_dev, info.st_ino


def _remove(path: Path) -> None:
    """Remove a folder a program wrote in, at any depth, clearing folders it made unwritable."""
    remove_tree(path)
