"""How a submission is built: the course's rule, its example Makefile's flags, old architectures, and the
steps run one after another in the submission's sandbox (`run_steps`) until one builds.

The course says "All of your code should be compiled by `make hw4` with the same Makefile" (2024 and 2025),
and its example Makefile builds `hw4` with `nvcc -std=c++11 -O3 -Xptxas="-v" -arch=sm_61 -o hw4 hw4.cu -lm`
(`all:` also names the course's own `seq-attention` and `seq-flashattention`, whose sources are not part
of a submission). The steps, each said in the row:

1. A folder with a Makefile: `make hw4`; plain `make` only when make says the Makefile has no `hw4` target.
2. When nvcc refuses the architecture a build names (CUDA 13 dropped the course's sm_61), the same build
   again with `-arch=ARCH` appended through `NVCC_APPEND_FLAGS` (nvcc takes the last `-arch`), so every
   other flag of the student's (`-D...`, `--use_fast_math`, `-maxrregcount`) is kept.
3. When the Makefile still fails and `hw4.cu` is there: `hw4.cu` built as the course's example Makefile
   builds it, for ARCH.
A folder without a Makefile (or one `.cu` file) is built with the example's flags for ARCH at once.

ARCH is `--arch` when given (then appended to every Makefile build from the start), else the judging GPU's
(`sm_XY` from nvidia-smi), else, with no GPU, the oldest architecture this nvcc builds for. `--build-command`
replaces every step: one shell line run in each submission's folder.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from attnbench.errors import UsageError
from attnbench.kernels.nvcc_here import first_error_lines, nvcc_architectures
from attnbench.printable import printable
from attnbench.sandbox.process import ProcessLimits, ProcessOutcome
from attnbench.sandbox.case_folder import CasePaths
from attnbench.sandbox.room import Sandbox

COURSE_EXECUTABLE = "hw4"  # the course's Makefile builds hw4 from hw4.cu
COURSE_NVFLAGS = ("-std=c++11", "-O3", "-Xptxas=-v")  # the example Makefile's NVFLAGS, less its -arch=sm_61
COURSE_LDFLAGS = ("-lm",)
APPEND_ENV = "NVCC_APPEND_FLAGS"  # nvcc reads it on every call: the flag reaches nvcc whatever the Makefile says

_REFUSED = re.compile(r"Unsupported gpu architecture '([\w.]+)'|Value '([\w.]+)' is not defined for option "
                      r"'gpu-(?:architecture|name)'")
_ARCH = re.compile(r"(sm|compute)_\d+[af]?|native|all|all-major")  # what nvcc's -arch takes
_NO_HW4_RULE = re.compile(r"No rule to make target ['`]hw4'\.")  # not "..., needed by 'hw4'": that is a missing file
ERROR_LINES = 3
# The headers of CUDA's libraries (cuBLAS, cuRAND, ...): the course's machine has the whole toolkit, so a build that
# fails on one this host lacks is the host's doing, not the submission's
CUDA_LIBRARY_HEADERS = ("cublas_v2.h", "cublas.h", "cublasLt.h", "cublasXt.h", "cusparse.h", "cufft.h", "curand.h",
                        "curand_kernel.h", "cusolverDn.h", "cusolverSp.h", "nvrtc.h", "nvToolsExt.h", "npp.h", "nvjpeg.h",
                        "cudnn.h", "nccl.h", "cutensor.h")
_MISSING_HEADER = re.compile(r"fatal error: '?([\w./+-]+?)'?(?::)? (?:No such file or directory|file not found)")
MIN_STEP_S = 1.0  # a build step is not started with less of the build's timeout left


@dataclass(frozen=True)
class BuildRules:
    """How every submission of a run is built: for which architecture, or by the user's own command."""

    arch: str | None = None  # sm_90, native, ...: what the builds are for
    arch_given: bool = False  # --arch said it: appended to every Makefile build, not only on a refusal
    command: str | None = None  # --build-command: one shell line run in each submission's folder

    def describe(self) -> str:
        """The rule saved with a scoreboard."""
        if self.command:
            return f"--build-command {self.command!r} in each submission's folder" + (
                f", {APPEND_ENV}=-arch={self.arch}" if self.arch_given else "")
        arch = f"-arch={self.arch}" if self.arch else "nvcc's default architecture"
        makefile = (f"`make hw4` with {arch} appended" if self.arch_given else
                    f"`make hw4` (plain `make` without a hw4 target; {arch} appended when nvcc refuses the "
                    "Makefile's architecture)")
        return (f"a Makefile: {makefile}, and when it fails, hw4.cu as the course's example builds it; "
                f"no Makefile: nvcc {' '.join(COURSE_NVFLAGS)} {arch} -o hw4 hw4.cu {' '.join(COURSE_LDFLAGS)}")


@dataclass(frozen=True)
class BuildStep:
    """One build command as it runs in the submission's folder, and the words its row uses for it."""

    argv: tuple[str, ...]
    says: str  # "`make hw4`", "the course's example flags (nvcc ...)": what follows "built with"
    env: dict[str, str] = field(default_factory=dict)

    def appending(self, arch: str) -> BuildStep:
        """The same build with -arch=ARCH appended to every nvcc call it makes."""
        return BuildStep(self.argv, f"{self.says} with -arch={arch} appended ({APPEND_ENV})",
                         {**self.env, APPEND_ENV: f"-arch={arch}"})


def make_steps(rules: BuildRules) -> tuple[BuildStep, BuildStep]:
    """`make hw4`, and plain `make` for a Makefile without a hw4 target (with --arch, each appends it)."""
    steps = (BuildStep(("make", "hw4"), "`make hw4`"),
             BuildStep(("make",), "plain `make` (its Makefile has no hw4 target)"))
    if rules.arch_given and rules.arch:
        return steps[0].appending(rules.arch), steps[1].appending(rules.arch)
    return steps


def _operand(source: str) -> str:
    """A source file as a compiler operand: a name starting with '-' (`-x.c`) would be read as an option, one
    starting with '@' as a file of options where one of that name exists."""
    return f"./{source}" if source.startswith(("-", "@")) else source


def course_example(source: str, rules: BuildRules) -> BuildStep:
    """`source` built as the course's example Makefile builds hw4.cu, for the judging architecture."""
    arch = (f"-arch={rules.arch}",) if rules.arch else ()
    source = _operand(source)
    argv = ("nvcc", *COURSE_NVFLAGS, *arch, "-o", "hw4", source, *COURSE_LDFLAGS)
    # its -arch is the judging GPU's, not the example's sm_61 (which CUDA 13 refuses): said, so that the row does
    # not pass the GPU's architecture off as the course's
    instead = f", -arch={rules.arch} for the course's sm_61" if rules.arch else ""
    return BuildStep(argv, f"the course's example flags{instead} ({' '.join(argv)})")


def c_program(source: str) -> BuildStep:
    source = _operand(source)
    return BuildStep(("cc", "-O2", "-o", "hw4", source, "-lm"), f"cc -O2 -o hw4 {source} -lm")


def user_command(rules: BuildRules) -> BuildStep:
    """--build-command, run by the shell in the submission's folder."""
    assert rules.command is not None
    step = BuildStep(("/bin/sh", "-c", rules.command), f"--build-command {shlex.quote(rules.command)}")
    return step.appending(rules.arch) if rules.arch_given and rules.arch else step


def refused_architecture(stderr: str) -> str | None:
    """The architecture nvcc refused in a build's error output ('sm_61'), or None."""
    found = _REFUSED.search(stderr)
    return (found.group(1) or found.group(2)) if found else None


def no_hw4_target(stderr: str) -> bool:
    """make said the Makefile has no rule for hw4 (and none of its files is missing)."""
    return _NO_HW4_RULE.search(stderr) is not None


def missing_library_header(stderr: str) -> str | None:
    """The CUDA library header a failed build did not find ('cublas_v2.h'), or None."""
    for found in _MISSING_HEADER.finditer(stderr):
        if Path(found.group(1)).name in CUDA_LIBRARY_HEADERS:
            return found.group(1)
    return None


def host_lacks_header(header: str) -> bool:
    """Whether neither the toolkit of the nvcc on PATH (its include folder and targets/*/include) nor the
    system's include folder has the header (its file name): a build that did not find one that is there looked
    in the wrong place (cc, a Makefile's own -I), or printed the compiler's words itself, and the failure is its
    own, not the host's."""
    name = Path(header).name
    folders = [Path("/usr/include"), Path("/usr/local/include")]
    nvcc = shutil.which("nvcc")
    if nvcc is not None:
        root = Path(os.path.realpath(nvcc)).parent.parent
        folders += [root / "include", *sorted(root.glob("targets/*/include"))]
    return not any((folder / name).is_file() for folder in folders)


def build_errors(stderr: str) -> str:
    """A failed build's first error lines, the compiler's or the shell's before make's own "***" lines."""
    own = "\n".join(line for line in stderr.splitlines() if not line.lstrip().startswith(("make: ***", "make[")))
    return first_error_lines(own if own.strip() else stderr, ERROR_LINES)


def _build_path() -> str:
    """PATH for the build: where make, nvcc and cc are on the host (under /usr they are in the sandbox too)."""
    found = [str(Path(t).parent) for t in (shutil.which(n) for n in ("nvcc", "cc", "make")) if t]
    return ":".join(dict.fromkeys([*found, "/usr/local/bin", "/usr/bin", "/bin"]))


@dataclass
class BuildAttempts:
    """The build steps run so far in one submission's folder, against one deadline."""

    sandbox: Sandbox
    paths: CasePaths
    limits: ProcessLimits
    deadline: float
    said: list[str] = field(default_factory=list)  # what each failed step said, for the row
    outcome: ProcessOutcome | None = None
    missing_header: str | None = None  # a CUDA library header a failed step did not find

    def run(self, step: BuildStep) -> bool:
        """Run one step in the time left of the build's one timeout; True when it exited 0."""
        env = [f"{name}={value}" for name, value in sorted(step.env.items())]
        inside = ["/usr/bin/env", f"PATH={_build_path()}", *env, *step.argv]
        self.outcome = self.sandbox.run(inside, self.paths, self.deadline - time.monotonic(), self.limits, build=True)
        return self.outcome.returncode == 0 and not self.outcome.timed_out

    @property
    def may_go_on(self) -> bool:
        """Whether another step may run: the last one was not stopped at the timeout, and time is left (a
        Makefile that fails on purpose never buys more than the one --build-timeout)."""
        timed_out = self.outcome is not None and self.outcome.timed_out
        return not timed_out and self.deadline - time.monotonic() >= MIN_STEP_S

    @property
    def stderr(self) -> str:
        return self.outcome.stderr_tail if self.outcome is not None else ""

    def failed(self, step: BuildStep) -> None:
        code = self.outcome.returncode if self.outcome is not None else "?"
        self.said.append(f"{step.says} (exit {code}): {printable(build_errors(self.stderr))}")
        header = missing_library_header(self.stderr)
        if self.missing_header is None and header is not None and host_lacks_header(header):
            self.missing_header = header


def run_steps(attempts: BuildAttempts, source: str, how: str, rules: BuildRules, has_cuda: bool) -> BuildStep:
    """Run the course's steps for a submission (`source`: its file, or hw4.cu in its folder; `how`:
    `Submission.how`) until one builds; the last one run."""
    if rules.command:
        step = user_command(rules)
        attempts.run(step)
        return step
    if how == "cc":
        step = c_program(source)
        attempts.run(step)
        return step
    if how == "nvcc":
        step = course_example(source, rules)
        attempts.run(step)
        return step
    step, plain = make_steps(rules)
    if attempts.run(step):
        return step
    if no_hw4_target(attempts.stderr) and attempts.may_go_on:
        step = plain
        if attempts.run(step):
            return step
    refused = refused_architecture(attempts.stderr)
    if refused and rules.arch and not rules.arch_given and attempts.may_go_on:
        attempts.failed(step)
        step = step.appending(rules.arch)
        if attempts.run(step):
            # the build's own output said so: a Makefile can print nvcc's words without running nvcc (red team)
            return replace(step, says=f"{step.says}: its output said nvcc refused {refused}")
    if has_cuda and attempts.may_go_on:
        attempts.failed(step)
        step = course_example(f"{COURSE_EXECUTABLE}.cu", rules)
        attempts.run(step)
    return step


def judging_arch() -> str | None:
    """sm_XY of the GPU the programs run on (nvidia-smi's first visible one), or None without one."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        found = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                               text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    first = found.stdout.strip().split("\n")[0].strip() if found.returncode == 0 else ""
    match = re.fullmatch(r"(\d+)\.(\d+)", first)
    return f"sm_{match.group(1)}{match.group(2)}" if match else None


def oldest_arch() -> str | None:
    """The oldest sm_XY this nvcc builds for (what it builds by default), or None without nvcc."""
    numbered = sorted((int(a[3:]), a) for a in nvcc_architectures() if re.fullmatch(r"sm_\d+", a))
    return numbered[0][1] if numbered else None


def build_rules(arch: str | None = None, command: str | None = None) -> BuildRules:
    """The rules for this machine: `arch` when given, else the judging GPU's, else nvcc's oldest."""
    if arch is not None and _ARCH.fullmatch(arch) is None:
        raise UsageError(f"--arch {arch!r}: give an architecture nvcc's -arch takes (sm_90, sm_90a, native, ...)")
    if arch is not None:
        _refuse_unbuildable(arch)
        return BuildRules(arch, True, command)
    return BuildRules(judging_arch() or oldest_arch(), False, command)


def _refuse_unbuildable(arch: str) -> None:
    """UsageError for an architecture this nvcc does not build (sm_61 on CUDA 13): every CUDA build would fail
    and each row would blame its student for the TA's option. Without nvcc (or a list from it) nothing is said."""
    number = re.fullmatch(r"(?:sm|compute)_(\d+)[af]?", arch)
    known = nvcc_architectures()
    if number is None or not known or f"sm_{number.group(1)}" in known:
        return
    builds = sorted((a for a in known if re.fullmatch(r"sm_\d+", a)), key=lambda a: int(a[3:]))
    raise UsageError(f"--arch {arch}: this nvcc does not build for it (it builds {builds[0]} to {builds[-1]}), so "
                     f"every CUDA build would fail; give one of those, or leave --arch out")
