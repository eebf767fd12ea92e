"""The course judge for whole programs: run `PROGRAM IN OUT` per case, time the process, check the output.

A program is a black box, as the course's judge sees it: it gets the case's input file and the name
of the output file to write, runs in a fresh temporary folder in its own process group (so a
timeout kills the program and everything it started), and is timed by the wall clock from launch
to exit. Its output is checked against the suite's float64 reference by the course's rule (every
element within 5e-3). Each case ends in exactly one verdict, with one line that says why.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from attnbench.backends.program import (
    NO_LIMIT_TIMEOUT_S,
    PROCESS_TIME_NOTE,
    ProgramError,
    check_program,
    exit_text,
    last_line,
    run_process,
)
from attnbench.bench.verify import COURSE_ATOL, compare_outputs
from attnbench.cases import suite
from attnbench.cases.inputs import BenchInput, CaseInfo, FileInput, ProgressFactory, SuiteInput, inputs_for, no_progress
from attnbench.cases.testcase import Shape, read_output
from attnbench.errors import AttnbenchError
from attnbench.results.measurement import Measurement
from attnbench.results.resultset import ERROR, OK, WRONG, Cell, ResultSet, VariantInfo
from attnbench.results.stats import KernelStats
from attnbench.results.verification import VerifyReport

# Verdicts, in the order the checks run: the first that applies is the case's verdict.
TIMEOUT, CRASH, NO_OUTPUT, SIZE, NAN, WRONG_ANSWER, SLOW, PASS = (
    "TIMEOUT", "CRASH", "NO OUTPUT", "WRONG SIZE", "NaN", "WRONG", "OVER LIMIT", "PASS")
# How a verdict is saved: ok (passed), wrong (ran to the end, but the output or its time fails),
# error (the process did not finish normally).
_CELL_STATUS = {PASS: OK, SLOW: WRONG, WRONG_ANSWER: WRONG, NAN: WRONG, SIZE: WRONG, NO_OUTPUT: WRONG,
                CRASH: ERROR, TIMEOUT: ERROR}

COURSE_LIMITS_DEVICE = "GTX 1080"
COURSE_LIMITS_TEXT = "t01-t10 2 s, t11-t20 6 s, t21-t30 10 s"
DEFAULT_ARGS = "{in} {out}"
TIMEOUT_FACTOR = 2.0  # with a limit: killed at twice the limit, so an overrun is measured, a hang is not waited on


class LauncherUnavailable(AttnbenchError):
    """The launcher (srun, say) is not on this machine."""

    exit_code = 3


# -- time limits --------------------------------------------------------------------------------------
def course_limit(label: str) -> float | None:
    """The course's whole-program limit for t01..t30 (seconds, on a GTX 1080), None for other cases."""
    match = re.fullmatch(r"t(\d\d)", label)
    if not match or not 1 <= int(match[1]) <= 30:
        return None
    number = int(match[1])
    return 2.0 if number <= 10 else 6.0 if number <= 20 else 10.0


@dataclass(frozen=True)
class TimeLimits:
    """Seconds allowed per case: the course's, none, or a user's file."""

    source: str  # "course", "none", or the file's path
    limits: dict[str, float] = field(default_factory=dict)
    default: float | None = None

    def limit_for(self, label: str) -> float | None:
        if self.source == "course":
            return course_limit(label)
        return self.limits.get(label, self.default)

    def describe(self) -> str:
        if self.source == "course":
            return f"the course's limits ({COURSE_LIMITS_TEXT}), set for a {COURSE_LIMITS_DEVICE}, not for this machine"
        if self.source == "none":
            return "no time limits"
        return f"limits from {self.source}"


def load_time_limits(spec: str) -> TimeLimits:
    """`course`, `none`, or a TOML file of `case = seconds` lines (and optionally `default = seconds`)."""
    if spec in ("course", "none"):
        return TimeLimits(spec)
    from attnbench.kernels.user import read_toml

    data = read_toml(Path(spec), ProgramError)
    limits: dict[str, float] = {}
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ProgramError(f"{spec}: {key} = {value!r}: a limit is a positive number of seconds")
        limits[key] = float(value)
    default = limits.pop("default", None)
    return TimeLimits(spec, limits, default)


# -- cases ----------------------------------------------------------------------------------------------
def cases_for(selector: str | Sequence[str]) -> list[BenchInput]:
    """Suite names, groups, ranges (t01-t10) and input files, as for compare (one parser: suite.case_parts)."""
    return inputs_for(selector)


@dataclass(frozen=True)
class PreparedCase:
    """A case ready to judge: its input file on disk, its reference, and what results record about it."""

    label: str
    shape: Shape
    input_path: Path
    reference: np.ndarray
    info: CaseInfo


def prepare_case(bench_input: BenchInput, progress: ProgressFactory = no_progress) -> PreparedCase:
    """Generate a suite input (and its float64 reference) if missing; a user's file gets a fresh reference."""
    if isinstance(bench_input, SuiteInput):
        case = bench_input.case
        if not suite.is_generated(case):
            with progress(f"generating {case.name}", 3 * case.shape.elements) as advance:
                suite.generate_input(case, advance)
        if suite.has_reference(case):
            reference = read_output(suite.reference_path(case), case.shape)
        else:
            reference = bench_input.reference(bench_input.load(progress), progress)
        info = CaseInfo(case.name, case.shape, case.input_sha256, "suite", case.provenance, case.note)
        return PreparedCase(case.name, case.shape, suite.input_path(case), reference, info)
    if isinstance(bench_input, FileInput):
        testcase = bench_input.load(progress)
        reference = bench_input.reference(testcase, progress)
        return PreparedCase(bench_input.label, testcase.shape, bench_input.path.resolve(), reference,
                            bench_input.info(testcase))
    raise ProgramError(f"{bench_input.label}: the judge needs a suite case or an input file")


# -- the program ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Program:
    """How to start the program: launcher words, the executable, and the argument template."""

    path: Path
    launcher: tuple[str, ...] = ()
    args: tuple[str, ...] = ("{in}", "{out}")

    @property
    def label(self) -> str:
        return self.path.name

    def argv(self, input_path: Path, output_path: Path) -> list[str]:
        words = [a.replace("{in}", str(input_path)).replace("{out}", str(output_path)) for a in self.args]
        return [*self.launcher, str(self.path), *words]

    def sha256(self) -> str | None:
        try:
            return hashlib.sha256(self.path.read_bytes()).hexdigest()[:16]
        except OSError:
            return None


def make_program(program: str, launcher: str | None = None, args: str = DEFAULT_ARGS) -> Program:
    """Check the program and the launcher before any case runs; one line naming what is wrong."""
    path = check_program(program)
    try:
        words = tuple(shlex.split(args))
    except ValueError as exc:
        raise ProgramError(f"--args {args!r}: {exc}") from None
    joined = " ".join(words)
    if "{out}" not in joined or "{in}" not in joined:
        raise ProgramError(f"--args {args!r}: the template must name both {{in}} and {{out}}")
    unknown = set(re.findall(r"\{[^}]*\}", joined)) - {"{in}", "{out}"}
    if unknown:
        raise ProgramError(f"--args {args!r}: unknown placeholder {sorted(unknown)[0]} (only {{in}} and {{out}})")
    launch: tuple[str, ...] = ()
    if launcher:
        try:
            launch = tuple(shlex.split(launcher))
        except ValueError as exc:
            raise ProgramError(f"--launcher {launcher!r}: {exc}") from None
        if launch and shutil.which(launch[0]) is None:
            raise LauncherUnavailable(f"--launcher: {launch[0]} is not on this machine's PATH")
    return Program(path, launch, words)


# -- one case -------------------------------------------------------------------------------------------
@dataclass
class JudgedCase:
    """The verdict on one case, with the process time and the check behind it."""

    label: str
    shape: Shape
    verdict: str
    message: str  # one line: why it failed, or the worst element of a pass
    wall_s: float | None  # the whole process, launch to exit; None when it never ran
    limit_s: float | None
    timeout_s: float
    check: VerifyReport | None = None
    returncode: int | None = None

    @property
    def passed(self) -> bool:
        return self.verdict == PASS

    @property
    def slack_s(self) -> float | None:
        """Seconds under the limit (negative: over it)."""
        if self.limit_s is None or self.wall_s is None:
            return None
        return self.limit_s - self.wall_s


def _check_output(output_path: Path, case: PreparedCase) -> tuple[str, str, VerifyReport | None]:
    """Verdict, message and check of what the program wrote."""
    if not output_path.exists():
        return NO_OUTPUT, "the program exited normally but wrote no output file", None
    size = output_path.stat().st_size
    if size != case.shape.output_bytes:
        return SIZE, (f"the output is {size} bytes; {case.shape} needs 4*B*N*d = {case.shape.output_bytes} "
                      "(B*N*d float32, no header)"), None
    report = compare_outputs(read_output(output_path, case.shape), case.reference, COURSE_ATOL)
    if report.nan_count or report.inf_count:
        first = f"; first at {report.first_failures[0]}" if report.first_failures else ""
        return NAN, f"{report.nan_count} NaN and {report.inf_count} Inf in the output{first}", report
    if not report.passed:
        return WRONG_ANSWER, (f"{report.failing} of {report.elements} elements off by more than {report.atol:g}; "
                              f"worst {report.worst}"), report
    return PASS, f"max error {report.max_abs_error:.2g}", report


def judge_case(program: Program, case: PreparedCase, limit_s: float | None, timeout_s: float) -> JudgedCase:
    """Run the program on one case in a fresh temporary folder and give the verdict."""
    with tempfile.TemporaryDirectory(prefix=f"attnbench-judge-{case.label}-") as tmp:
        workdir = Path(tmp)
        output_path = workdir / f"{case.label}.out"
        outcome = run_process(program.argv(case.input_path, output_path), workdir, timeout_s)
        judged = JudgedCase(case.label, case.shape, PASS, "", outcome.wall_s, limit_s, timeout_s,
                            returncode=outcome.returncode)
        if outcome.timed_out:
            judged.verdict, judged.wall_s = TIMEOUT, None
            judged.message = f"still running after {timeout_s:g} s: killed (with every process it started)"
            return judged
        assert outcome.returncode is not None
        if outcome.returncode != 0:
            last = last_line(outcome.stderr_tail)
            judged.verdict = CRASH
            judged.message = exit_text(outcome.returncode) + (f"; its last words: {last}" if last else "")
            return judged
        judged.verdict, judged.message, judged.check = _check_output(output_path, case)
    if judged.passed and limit_s is not None and outcome.wall_s > limit_s:
        judged.verdict = SLOW
        judged.message = (f"correct, but {outcome.wall_s:.2f} s is over the {limit_s:g} s limit by "
                          f"{outcome.wall_s - limit_s:.2f} s")
    return judged


def timeout_for(limit_s: float | None, timeout_s: float | None) -> float:
    """--timeout if given; else twice the case's limit; else NO_LIMIT_TIMEOUT_S."""
    if timeout_s is not None:
        return timeout_s
    return TIMEOUT_FACTOR * limit_s if limit_s is not None else NO_LIMIT_TIMEOUT_S


# -- the whole judge ------------------------------------------------------------------------------------
JudgeListener = Callable[[int, int, JudgedCase], None]


@dataclass
class Judgement:
    """Every case judged so far (all of them unless interrupted)."""

    program: Program
    limits: TimeLimits
    cases: list[PreparedCase] = field(default_factory=list)
    judged: list[JudgedCase] = field(default_factory=list)
    interrupted: bool = False

    @property
    def passed(self) -> int:
        return sum(j.passed for j in self.judged)

    @property
    def exit_status(self) -> int:
        if self.interrupted:
            return 130
        return 0 if self.passed == len(self.judged) else 1

    def summary(self) -> str:
        text = f"{self.passed} of {len(self.judged)} cases passed"
        return text + " (interrupted: the rest were not run)" if self.interrupted else text


def run_judge(program: Program, inputs: list[BenchInput], limits: TimeLimits, timeout_s: float | None,
              progress: ProgressFactory = no_progress, listener: JudgeListener | None = None) -> Judgement:
    """Judge every case in order; Ctrl-C stops after killing the running program, keeping what was judged."""
    judgement = Judgement(program, limits)
    try:
        for index, bench_input in enumerate(inputs):
            case = prepare_case(bench_input, progress)
            judgement.cases.append(case)
            limit = limits.limit_for(case.label)
            judged = judge_case(program, case, limit, timeout_for(limit, timeout_s))
            judgement.judged.append(judged)
            if listener is not None:
                listener(index + 1, len(inputs), judged)
    except KeyboardInterrupt:
        judgement.interrupted = True
        judgement.cases = judgement.cases[: len(judgement.judged)]
    return judgement



def _cell(program: Program, judged: JudgedCase, device: str) -> Cell:
    extra: dict[str, Any] = {"verdict": judged.verdict, "limit_s": judged.limit_s, "wall_s": judged.wall_s,
                             "timeout_s": judged.timeout_s, "returncode": judged.returncode}
    measurement = None
    if judged.wall_s is not None and judged.verdict != CRASH:
        measurement = Measurement(
            variant=program.label, case=judged.label, shape=judged.shape, device=device,
            compute_s=judged.wall_s, kernel=KernelStats([judged.wall_s * 1e3]),
            verification=judged.check, warnings=[PROCESS_TIME_NOTE],
        )
    check = judged.check.to_dict() if judged.check is not None else None
    message = "" if judged.passed else judged.message
    return Cell(program.label, judged.label, _CELL_STATUS[judged.verdict], message, measurement, check, extra)


def judge_results(judgement: Judgement, metadata: dict[str, Any]) -> ResultSet:
    """A saved-results set of kind "judge": one variant (the program) and one cell per case."""
    program = judgement.program
    device = metadata.get("cpu") or "this machine"
    if program.launcher:
        device = f"via {' '.join(program.launcher)}"
    info = VariantInfo(program.label, "program", "a whole program run as " + " ".join(
        [program.label, *program.args]), "program", str(program.path), program.sha256())
    return ResultSet(
        kind="judge",
        metadata=metadata,
        policy={"timing": PROCESS_TIME_NOTE, "timeout_s": "--timeout, else twice the limit, else "
                f"{NO_LIMIT_TIMEOUT_S:g} s"},
        variants=[info],
        cases=[case.info for case in judgement.cases],
        cells=[_cell(program, judged, device) for judged in judgement.judged],
        baseline=None,
        settings={"check_rule": f"|out - ref| <= {COURSE_ATOL:g} per element, float64 reference",
                  "time_limits": judgement.limits.describe(), "launcher": list(program.launcher),
                  "args": list(program.args), "passed": judgement.passed, "judged": len(judgement.judged),
                  "interrupted": judgement.interrupted},
    )
