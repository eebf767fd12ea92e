"""A class's submissions: finding them in what the user named, and building each into a program.

A submission is one of:
- a folder holding the course's files (a `Makefile`, or `hw4.cu`, and `modules.list` if present) or an
  executable; a folder holding only `hw4.hip` (the 2025 course's AMD part) is a row that says it is not
  judged;
- a `.cu` file (built with nvcc) or a `.c` file (built with cc);
- an executable file.
A folder that is none of these is a folder OF submissions: each entry in it is one. A submission is
data, never a path (attnbench.sandbox.staging): an entry that is a symbolic link, or holds one, is a row
refused with the reason, and so is a hard link to a file outside it. Builds run in a copy of the
submission, in the judge's sandbox (`attnbench.sandbox.room`: the build sees its own files
and the system's, not the other submissions or the suite), under a time limit and resource limits; a
failed build is one line with the compiler's first error lines, and never stops the others.

Builds follow the course's rule ("compiled by `make hw4` with the same Makefile"), in steps, each said in
the row (`attnbench.judge.course_build` has the steps and the course's example flags).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import stat
import time
import unicodedata
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from attnbench.judge.course_build import COURSE_EXECUTABLE, BuildAttempts, BuildRules, oldest_arch, run_steps
from attnbench.sandbox.process import ARCHIVE_SUFFIXES, ProcessLimits, ProgramError
from attnbench.sandbox.room import Sandbox, SandboxSettings
from attnbench.sandbox.staging import StagingRefused, copy_submission, shown, take_program
from attnbench.errors import AttnbenchError
from attnbench.printable import first_few, printable

HIP_SOURCE = "hw4.hip"  # the 2025 course's AMD part: judged on its own scoreboard there, never here
HIP_NOT_JUDGED = "HIP is not judged (the course's AMD part)"
BUILD_FAILED = "the build failed: "  # how a build whose tools failed is said (its tools' first lines follow)
BUILD_TIMEOUT_S = 300.0
BUILD_FILE_BYTES = 1 << 30  # object files and a fat binary: far above a program's own output limit
# Address space of each build process: `#include "/dev/zero"` grew one cc1 to 24 GB and sent the host to its OOM
# killer (red team 16); nvcc's and gcc's own steps on a course program take well under 1 GB
BUILD_ADDRESS_BYTES = 4 << 30


@dataclass(frozen=True)
class Submission:
    """One submission as found: its name, where it came from, and how it is built."""

    name: str  # as printed and saved: bytes that are not UTF-8 and control characters escaped
    source: Path  # as found, never resolved through a link
    how: str  # "make", "nvcc", "cc", "ready" (an executable already), "link" (refused: a symbolic link),
    # "hip" (only hw4.hip: not judged) or "none" (a folder of a class that holds no submission: a row that says so)
    note: str = ""  # why its name is not the plain one (it clashed with another's)
    unjudged: str = ""  # what it holds that is not judged (hw4.hip beside hw4.cu)

    @property
    def slug(self) -> str:
        """A short name for the judge's own folders: safe characters of the name, and a hash of it."""
        raw = os.fsencode(self.source.name)
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", raw.decode("ascii", "replace"))[:32].lstrip(".") or "submission"
        return f"{safe}-{hashlib.sha256(raw + b'/' + self.name.encode()).hexdigest()[:8]}"


@dataclass(frozen=True)
class Built:
    """A submission's build: the program to judge, or why there is none."""

    submission: Submission
    program: Path | None
    message: str  # the first error lines of a failed build, or a short note on a good one
    attempted: bool = True  # False: no build ran (not a submission, HIP only, a link, files refused)
    host_lacks: str = ""  # the CUDA library header its failed build did not find and this host's toolkit lacks

    @property
    def not_judged(self) -> str:
        """Why its row is neither passed nor failed here: a build that failed for want of what the course's machine
        has and this host lacks (judged again on a host with it); '' otherwise."""
        if not self.host_lacks:
            return ""
        return (f"this host's CUDA toolkit lacks {printable(self.host_lacks)}, which its build includes and the "
                "course's machine has")

    @property
    def ok(self) -> bool:
        return self.program is not None


def _plain_file(path: Path) -> bool:
    """A regular file by lstat (a link to one is not)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _executable(path: Path) -> bool:
    return _plain_file(path) and os.access(path, os.X_OK)


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def _is_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _there(path: Path) -> bool:
    """A plain file, or a link (refused when it is staged, with the reason on its row)."""
    return _is_link(path) or _plain_file(path)


def _how_folder(folder: Path) -> str | None:
    """How a folder builds, if it is a submission itself."""
    cuda = _there(folder / f"{COURSE_EXECUTABLE}.cu")
    if _there(folder / HIP_SOURCE) and not cuda:
        return "hip"  # with or without a Makefile: the NVIDIA part is what the course grades
    if any(_there(folder / n) for n in ("Makefile", "makefile", "GNUmakefile")):
        return "make"
    if cuda:
        return "nvcc"
    if _is_link(folder / COURSE_EXECUTABLE) or _executable(folder / COURSE_EXECUTABLE):
        return "ready"  # a link is refused when it is staged, with the reason on its row
    return None


def _folder_note(folder: Path, how: str | None) -> str:
    """What a submission folder holds that is not judged: hw4.hip beside hw4.cu."""
    if how in ("make", "nvcc", "ready") and _there(folder / HIP_SOURCE):
        return f"its {HIP_SOURCE} is not judged (the course's AMD part)"
    return ""


def _how_file(path: Path) -> str | None:
    if _is_link(path):
        return "link"
    if path.suffix == ".cu":
        return "nvcc"
    if path.suffix == ".c":
        return "cc"
    return "ready" if _executable(path) else None


def _name(path: Path) -> str:
    path = Path(os.path.abspath(path))  # `judge .` or `judge ..` from a submission's folder: its own name, not ""
    plain = path.name if _is_folder(path) else path.stem if path.suffix in (".cu", ".c") else path.name
    return shown(plain)


def _archive(path: Path) -> bool:
    """A student's submission handed in packed: a row that says so, not a file skipped without a word."""
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def _entry_how(entry: Path) -> str | None:
    """How an entry of a folder of submissions is judged; a symbolic link is a row refused (never followed), and
    so is a folder that holds no submission (every folder given is a row: one was dropped without a word), or
    an archive left packed."""
    if _is_link(entry):
        return "link"
    if _is_folder(entry):
        return _how_folder(entry) or "none"
    if _plain_file(entry) and _archive(entry):
        return "none"
    return _how_file(entry)


def not_a_submission(folder: Path) -> str:
    """Why a folder of a class (or an archive in it) is no submission, with a few of the names it holds."""
    if _plain_file(folder):
        return "not a submission: an archive left packed (unpack it into a folder of its own to judge it)"
    if _plain_file(folder / COURSE_EXECUTABLE):  # "no hw4 in it (it holds hw4)" would contradict itself
        return (f"not a submission: its {COURSE_EXECUTABLE} is not executable and no Makefile or "
                f"{COURSE_EXECUTABLE}.cu builds one (chmod +x it to judge it)")
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        # "not a submission" claimed what nobody saw: a student's folder of mode 700 may hold one
        return f"cannot be read ({exc.strerror}), so whether it holds a submission is unknown"
    # a folder's name ends in "/": "no hw4 in it (it holds hw4)" read as a contradiction for a folder hw4
    held = first_few([shown(n) + ("/" if _is_folder(folder / n) else "") for n in names[:5]] + names[5:])
    packed = " (unpack its archive in it to judge it)" if any(_archive(folder / n) for n in names) else ""
    return (f"not a submission: no Makefile, {COURSE_EXECUTABLE}.cu, {HIP_SOURCE} or {COURSE_EXECUTABLE} in it "
            f"(it holds {held or 'nothing'}){packed}")


def _inner_submissions(folder: Path) -> str:
    """A folder judged as one submission (its own Makefile or hw4.cu) whose folders are submissions too: a
    class folder with a helper Makefile of the TA's at its top was one failed row, its students unsaid. The
    command it offers names the folder as it was given: by its name alone, `judge .` was told `judge /*/`."""
    if not _is_folder(folder):
        return ""
    try:
        inner = [entry.name for entry in _entries(folder) if _is_folder(entry) and _how_folder(entry) is not None]
    except ProgramError:
        return ""
    if not inner:
        return ""
    return (f"its own files make it one submission, though {len(inner)} of its folders are submissions too "
            f"({first_few([shown(n) for n in inner])}): name them (`attnbench judge {shown(shlex.quote(str(folder)))}/*/`)"
            " to judge them as a class")


def _entries(folder: Path) -> list[Path]:
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        raise ProgramError(f"{folder}: cannot be read ({exc.strerror})") from None
    return [folder / name for name in names if not name.startswith(".")]


_LOOK_ALIKE = str.maketrans({"1": "l", "i": "l", "|": "l", "0": "o"})  # after casefold: I is i


def _distinct(found: list[Submission]) -> list[Submission]:
    """Every submission under a name of its own, decided by the names alone (never the class's end): one
    whose plain name clashes (bob/ and bob.c) is named by its whole file name; one that still clashes
    (jam.c/ beside jam.c, or two names printed alike, zed\x01 and zed\\x01) gets a short hash of the raw
    bytes of its path; each renamed row says why."""
    def clashing(named: list[Submission]) -> set[str]:
        # names that read alike clash too: café in NFC and in NFD, or Zed beside zed
        # and names that differ in white space only ("honest " beside "honest": two rows printed alike)
        # and ASCII look-alikes (wiII beside will, b0b beside bob)
        looks = [" ".join(unicodedata.normalize("NFKC", s.name).casefold().translate(_LOOK_ALIKE).split())
                 for s in named]
        return {s.name for s, look in zip(named, looks) if looks.count(look) > 1}

    clash = clashing(found)
    found = [replace(s, name=shown(s.source.name), note=f"named by its whole file name: another submission is "
                     f"also {s.name!r}") if s.name in clash else s for s in found]
    clash = clashing(found)
    found = [replace(s, name=f"{s.name}~{hashlib.sha256(os.fsencode(s.source)).hexdigest()[:6]}",
                     note=f"named with a hash of its path: another submission is also {s.name!r}")
             if s.name in clash else s for s in found]
    # A letter from another script can look like an ASCII one (Cyrillic о beside Latin o), and no
    # normalisation maps one onto the other: a name that holds any non-ASCII character carries its hash,
    # and its note spells those characters out, so it never reads like another row.
    found = [replace(s, name=f"{s.name}~{hashlib.sha256(os.fsencode(s.source)).hexdigest()[:6]}",
                     note=f"named with a hash of its path: its name holds {_non_ascii(s.name)}")
             if not s.name.isascii() and not s.note else s for s in found]
    seen: dict[str, int] = {}
    numbered = []
    for s in found:  # the very same path named twice: numbered in the order given
        seen[s.name] = seen.get(s.name, 0) + 1
        numbered.append(s if seen[s.name] == 1 else replace(s, name=f"{s.name}~{seen[s.name]}",
                                                            note=f"named twice: this is its run number {seen[s.name]}"))
    return numbered


def _non_ascii(name: str) -> str:
    """The non-ASCII characters of a name, each with its code point: 'о (U+043E)'."""
    chars = dict.fromkeys(c for c in name if not c.isascii())
    return ", ".join(f"{c if c.isprintable() else '?'} (U+{ord(c):04X})" for c in chars)


def find_submissions(named: Sequence[str | Path]) -> list[Submission]:
    """Every submission in what was named (files, submission folders, or folders of submissions)."""
    found: list[Submission] = []
    for item in map(Path, named):
        if not item.exists():
            raise ProgramError(f"{item}: no such file or folder")
        how = _how_folder(item) if item.is_dir() else _how_file(item)
        if how is not None:
            unjudged = "; ".join(n for n in (_folder_note(item, how), _inner_submissions(item)) if n)
            found.append(Submission(_name(item), item.absolute(), how, unjudged=unjudged))
            continue
        if not item.is_dir():
            raise ProgramError(f"{item}: not a submission (an executable, a .cu or .c file, or a folder)")
        for entry in _entries(item):
            entry_how = _entry_how(entry)
            if entry_how is not None:
                note = _folder_note(entry, entry_how) if _is_folder(entry) else ""
                found.append(Submission(_name(entry), entry.absolute(), entry_how, unjudged=note))
    found = _distinct(found)
    if not found:
        raise ProgramError(f"{', '.join(map(str, named))}: no submission found (an executable, a .cu or .c file, "
                           "or a folder with a Makefile, hw4.cu, hw4.hip or hw4)")
    return found



def _program_after_build(folder: Path, before: set[str]) -> tuple[Path | None, str]:
    """The course's hw4 if the build made it (or a link or other thing named so: refused when taken), else the
    one new executable it made; with None, what it made instead, said ("made no hw4 (nor one other executable)"
    read wrong of a build that made two, and said nothing of a bin/hw4)."""
    hw4 = folder / COURSE_EXECUTABLE
    if _plain_file(hw4) and not _is_link(hw4) and not os.access(hw4, os.X_OK):  # ./hw4 would be refused
        return None, f"its {COURSE_EXECUTABLE} is not executable (the course runs ./{COURSE_EXECUTABLE})"
    if _is_link(hw4) or os.path.lexists(hw4):
        return hw4, ""
    made = sorted(p.name for p in folder.iterdir() if p.name not in before and _executable(p))
    if len(made) == 1:
        return folder / made[0], ""
    if made:
        return None, (f"it made {len(made)} new executables ({first_few([shown(n) for n in made], 3)}) and none "
                      f"named {COURSE_EXECUTABLE}, so which one the course would run is not known")
    deeper = sorted(str(p.relative_to(folder)) for p in _found_below(folder, COURSE_EXECUTABLE))
    if deeper:
        return None, (f"its {COURSE_EXECUTABLE} is at {first_few([shown(n) for n in deeper], 3)}, not in its own "
                      f"folder, where the course runs ./{COURSE_EXECUTABLE}")
    return None, f"it made no {COURSE_EXECUTABLE} and no other executable"


def _found_below(folder: Path, name: str, depth: int = 3) -> list[Path]:
    """Files called `name` in folder's subfolders, down to `depth` levels, links not followed."""
    found: list[Path] = []
    if depth == 0:
        return found
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return found
    for entry in entries[:1000]:  # the listing is read whole; only its first 1000 entries are looked into
        if entry.is_dir(follow_symlinks=False):
            found += [Path(entry.path) / name] if _plain_file(Path(entry.path) / name) else []
            found += _found_below(Path(entry.path), name, depth - 1)
    return found


def _staged(submission: Submission, build_root: Path) -> Path:
    """A copy of the submission's files in build_root/SLUG/files, following nothing (StagingRefused)."""
    (build_root / submission.slug).mkdir(parents=True, mode=0o755)
    folder = build_root / submission.slug / "files"
    copy_submission(submission.source, folder)
    return folder


def build(submission: Submission, build_root: Path, timeout_s: float = BUILD_TIMEOUT_S,
          settings: SandboxSettings | None = None, rules: BuildRules | None = None) -> Built:
    """Build the submission in the sandbox by the course's steps (`attnbench.judge.course_build`, for
    `rules`); its program is copied into a fresh file the judge makes, build_root/SLUG/program/hw4. Never
    raises for a bad submission (SandboxUnavailable, for --sandbox required, does): a link, a refused file,
    a failed build or an error on the way is its row's message, which says which build ran."""
    try:
        return _build(submission, build_root, timeout_s, settings, rules or BuildRules(oldest_arch()))
    except StagingRefused as exc:
        return Built(submission, None, f"refused: {exc}", attempted=False)
    except OSError as exc:
        return Built(submission, None, f"could not be staged or built: {shown(exc.strerror or str(exc))}")


_BUILDERS = {"make": ("make",), "nvcc": ("nvcc",), "cc": ("cc",)}  # how a submission is built: the tools


def missing_builder(submission: Submission, rules: BuildRules | None = None) -> str | None:
    """A tool that builds the submission (make, nvcc or cc) when it is not on this machine's PATH: the
    environment's lack, not the submission's fault; None when they are there, not needed, or --build-command
    replaces them. A Makefile beside hw4.cu needs nvcc as well (the course's Makefile runs it, and the build
    that follows a failed Makefile is nvcc's): with nvcc off PATH a class of such folders was a failed build on
    every row, graded 0, exit 0 (red team 12)."""
    if rules is not None and rules.command:
        return None
    tools = _BUILDERS.get(submission.how, ())
    if submission.how == "make" and _there(submission.source / f"{COURSE_EXECUTABLE}.cu"):
        tools = (*tools, "nvcc")
    return next((tool for tool in tools if shutil.which(tool) is None), None)


def _build(submission: Submission, build_root: Path, timeout_s: float, settings: SandboxSettings | None,
           rules: BuildRules) -> Built:
    if submission.how == "link":
        raise StagingRefused(f"{submission.name}: a symbolic link: a submission is judged from its own files only")
    if submission.how == "hip":
        return Built(submission, None, HIP_NOT_JUDGED, attempted=False)
    if submission.how == "none":
        return Built(submission, None, not_a_submission(submission.source), attempted=False)
    folder = _staged(submission, build_root)
    program_folder = build_root / submission.slug / "program"
    settings = settings or SandboxSettings()
    if submission.how == "ready":
        made = folder / (COURSE_EXECUTABLE if _is_folder(submission.source) else submission.source.name)
        if not _executable(made):
            raise StagingRefused(f"{COURSE_EXECUTABLE} is not an executable plain file")
        return Built(submission, take_program(made, program_folder, COURSE_EXECUTABLE, settings.program_bytes),
                     "an executable, not built")
    tool = missing_builder(submission, rules)
    if tool is not None:
        return Built(submission, None, f"{tool} is not on this machine's PATH, so it could not be built")
    aside = _set_aside_prebuilt(folder)
    started = time.monotonic()
    sandbox = Sandbox.open(None, settings)
    try:
        paths = sandbox.prepare(submission.slug, None, files=folder)
        before = {p.name for p in paths.folder.iterdir()}
        limits = ProcessLimits(BUILD_FILE_BYTES, settings.processes, BUILD_ADDRESS_BYTES, int(4 * timeout_s))
        attempts = BuildAttempts(sandbox, paths, limits, started + timeout_s)
        has_cuda = _plain_file(paths.folder / f"{COURSE_EXECUTABLE}.cu")
        source = f"{COURSE_EXECUTABLE}.cu" if _is_folder(submission.source) else submission.source.name
        step = run_steps(attempts, source, submission.how, rules, has_cuda)
        outcome = attempts.outcome
        assert outcome is not None
        built = outcome.returncode == 0 and not outcome.timed_out
        earlier = "; ".join(attempts.said)  # the steps that failed before the one that built
        if not built:
            attempts.failed(step)
        made, not_made = _program_after_build(paths.folder, before) if built else (None, "")
        program = take_program(made, program_folder, COURSE_EXECUTABLE, settings.program_bytes) if made else None
        sandbox.finish(paths)
    finally:
        sandbox.close()
    if outcome.timed_out:
        return Built(submission, None, f"the build ran past {timeout_s:g} s and was stopped ({step.says})")
    if not built:
        # said as what can be checked, not as a verdict: a Makefile can print the compiler's words itself
        host = (f"; its output says {printable(attempts.missing_header)} was not found, a header of a CUDA library "
                "this host's toolkit lacks too (the course's machine has it): install that library's development "
                "files and judge it again before blaming the submission" if attempts.missing_header else "")
        return Built(submission, None, BUILD_FAILED + "; then ".join(attempts.said) + host,
                     host_lacks=attempts.missing_header or "")
    if made is None:
        return Built(submission, None, f"{step.says} ran, but {not_made}")
    took = time.monotonic() - started
    if made.name != COURSE_EXECUTABLE:  # the course runs ./hw4, which this build did not make: said, not hidden
        said = (f"built with {step.says} ({took:.1f} s); it made no {COURSE_EXECUTABLE}, so its one new executable "
                f"{shown(made.name)} is judged (the course's judge would find no {COURSE_EXECUTABLE})")
    elif submission.how == "make" and step.argv[0] == "nvcc":
        said = f"its Makefile failed, so built with {step.says} ({took:.1f} s); the Makefile: {earlier}"
    else:
        said = f"built with {step.says} ({took:.1f} s)"
    return Built(submission, program, f"{said}; {aside}" if aside else said)


# What a compiler or linker makes (ELF: a program, an object, a shared library, a cubin; ar: a static library;
# gpch, CPCH: gcc's and clang's precompiled headers, which the compiler takes in place of the header beside them)
_BUILT_MAGIC = (b"\x7fELF", b"!<arch>\n", b"gpch", b"CPCH")


def _set_aside_prebuilt(staged: Path) -> str:
    """Remove from the staged copy of a submission that has sources to build its prebuilt hw4 and every file a
    compiler made (an object, a library, at any depth): `make hw4` took them as up to date (the copy's files are
    all new, the later copied the newer) and judged a binary no source of the submission made, a committed hw4
    or an attention.o beside an honest attention.c; a.h.gch is compiled in place of an honest a.h (the course
    builds from hw4.cu and the Makefile). The note
    for its row, or "" when there was none."""
    aside: list[str] = []
    for folder, _, names in os.walk(staged):  # the judge's own copy: no link in it, at most 64 deep
        for name in sorted(names):
            path = Path(folder) / name
            if not _plain_file(path):
                continue
            if not (path == staged / COURSE_EXECUTABLE or _compiled(path)):
                continue
            path.unlink()
            aside.append(shown(str(path.relative_to(staged))))
    if not aside:
        return ""
    return (f"its prebuilt {first_few(sorted(aside))} {'was' if len(aside) == 1 else 'were'} set aside, and "
            f"{COURSE_EXECUTABLE} built anew from its sources")


def _compiled(path: Path) -> bool:
    """A file a compiler or linker made, by its first bytes."""
    try:
        with open(path, "rb") as file:
            return file.read(8).startswith(_BUILT_MAGIC)
    except OSError:
        return False


def failure_text(exc: BaseException) -> str:
    """One printable line for an error the judge met on a submission's behalf: attnbench's own errors are
    sentences already ("SlurmUnavailable: sbatch refused ..." showed a class name), others keep their type."""
    said = str(exc) if isinstance(exc, AttnbenchError) else f"{type(exc).__name__}: {exc}"
    return printable(f"the judge could not finish this: {said}")[:300]
