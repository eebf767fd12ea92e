"""A class's submissions: finding them in what the user named, and building each into a program.

A submission is one of:
- a folder holding the course's files (a `Makefile`, or `hw4.cu`, and `modules.list` if present) or an
  executable;
- a `.cu` file (built with nvcc) or a `.c` file (built with cc);
- an executable file.
A folder that is none of these is a folder OF submissions: each entry in it is one. Builds run in a
copy of the submission, in a folder of their own, under a time limit; a failed build is one line with
the compiler's first error lines, and never stops the others.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from attnbench.backends.program import ProcessOutcome, ProgramError, run_process

COURSE_EXECUTABLE = "hw4"  # the course's Makefile builds hw4 from hw4.cu
BUILD_TIMEOUT_S = 300.0
ERROR_LINES = 3


@dataclass(frozen=True)
class Submission:
    """One submission as found: its name, where it came from, and how it is built."""

    name: str
    source: Path
    how: str  # "make", "nvcc", "cc" or "ready" (an executable already)

    def describe(self) -> str:
        return {"make": "built with make", "nvcc": "built with nvcc", "cc": "built with cc",
                "ready": "an executable"}[self.how]


@dataclass(frozen=True)
class Built:
    """A submission's build: the program to judge, or why there is none."""

    submission: Submission
    program: Path | None
    message: str  # the first error lines of a failed build, or a short note on a good one

    @property
    def ok(self) -> bool:
        return self.program is not None


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _how_folder(folder: Path) -> str | None:
    """How a folder builds, if it is a submission itself."""
    if (folder / "Makefile").is_file() or (folder / "makefile").is_file():
        return "make"
    if (folder / f"{COURSE_EXECUTABLE}.cu").is_file():
        return "nvcc"
    if _executable(folder / COURSE_EXECUTABLE):
        return "ready"
    return None


def _how_file(path: Path) -> str | None:
    if path.suffix == ".cu":
        return "nvcc"
    if path.suffix == ".c":
        return "cc"
    return "ready" if _executable(path) else None


def _name(path: Path) -> str:
    return path.name if path.is_dir() else path.stem if path.suffix in (".cu", ".c") else path.name


def find_submissions(named: Sequence[str | Path]) -> list[Submission]:
    """Every submission in what was named (files, submission folders, or folders of submissions)."""
    found: list[Submission] = []
    for item in map(Path, named):
        if not item.exists():
            raise ProgramError(f"{item}: no such file or folder")
        how = _how_folder(item) if item.is_dir() else _how_file(item)
        if how is not None:
            found.append(Submission(_name(item), item.resolve(), how))
            continue
        if not item.is_dir():
            raise ProgramError(f"{item}: not a submission (an executable, a .cu or .c file, or a folder)")
        for entry in sorted(p for p in item.iterdir() if not p.name.startswith(".")):
            entry_how = _how_folder(entry) if entry.is_dir() else _how_file(entry)
            if entry_how is not None:
                found.append(Submission(_name(entry), entry.resolve(), entry_how))
    names = [s.name for s in found]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise ProgramError(f"two submissions are named {duplicate!r}: give them distinct names")
    if not found:
        raise ProgramError(f"{', '.join(map(str, named))}: no submission found (an executable, a .cu or .c file, "
                           "or a folder with a Makefile, hw4.cu or hw4)")
    return found


def first_errors(text: str, count: int = ERROR_LINES) -> str:
    """The first lines of a compiler's output that say `error` (else its last lines), joined by ' | '."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return " | ".join((errors or lines[-count:])[:count])


def _command(submission: Submission, folder: Path) -> list[str]:
    if submission.how == "make":
        return ["make", "-C", str(folder)]
    if submission.how == "nvcc":
        source = folder / (f"{COURSE_EXECUTABLE}.cu" if submission.source.is_dir() else submission.source.name)
        return ["nvcc", "-O3", "-o", str(folder / COURSE_EXECUTABLE), str(source)]
    source = folder / submission.source.name
    return [shutil.which("cc") or "cc", "-O2", "-o", str(folder / COURSE_EXECUTABLE), str(source), "-lm"]


def _program_after_build(folder: Path, before: set[str]) -> Path | None:
    """The course's hw4 if the build made it, else the one new executable it made."""
    if _executable(folder / COURSE_EXECUTABLE):
        return folder / COURSE_EXECUTABLE
    made = [p for p in folder.iterdir() if p.name not in before and _executable(p)]
    return made[0] if len(made) == 1 else None


Runner = Callable[[list[str], Path, float], ProcessOutcome]


def build(submission: Submission, build_root: Path, timeout_s: float = BUILD_TIMEOUT_S,
          runner: Runner = run_process) -> Built:
    """Copy the submission into build_root/NAME and build it there; never raises for a bad submission."""
    folder = build_root / submission.name
    if submission.source.is_dir():
        shutil.copytree(submission.source, folder, symlinks=True)
    else:
        folder.mkdir(parents=True)
        shutil.copy2(submission.source, folder / submission.source.name)
    if submission.how == "ready":
        program = folder / (COURSE_EXECUTABLE if submission.source.is_dir() else submission.source.name)
        return Built(submission, program, "an executable, not built")
    tool = _command(submission, folder)[0]
    if shutil.which(tool) is None:
        return Built(submission, None, f"{tool} is not on this machine's PATH, so it could not be built")
    before = {p.name for p in folder.iterdir()}
    outcome = runner(_command(submission, folder), folder, timeout_s)
    if outcome.timed_out:
        return Built(submission, None, f"the build ran past {timeout_s:g} s and was stopped")
    if outcome.returncode != 0:
        return Built(submission, None, f"the build failed (exit {outcome.returncode}): "
                                       f"{first_errors(outcome.stderr_tail) or 'no message'}")
    program = _program_after_build(folder, before)
    if program is None:
        return Built(submission, None, f"the build made no {COURSE_EXECUTABLE} (nor one other executable)")
    return Built(submission, program, f"{submission.describe()} in {outcome.wall_s:.1f} s")
