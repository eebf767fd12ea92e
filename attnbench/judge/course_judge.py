"""The course judge for whole programs: run `PROGRAM IN OUT` per case, time the process, check the output.

A program is a black box, as the course's judge sees it: it gets its own copy of the case's input
and the name of the output file to write, in a fresh case folder. It runs in a sandbox where one can
be made (attnbench.sandbox.room: no suite folder, no other case, no network, its own PID namespace)
under resource limits, and every process it started is killed when it ends or its time is up. It is
timed by the wall clock from launch to exit. Its output is checked against the suite's float64
reference by the course's rule (every element within 5e-3). Each case ends in exactly one verdict,
with one line that says why (attnbench.judge.case_verdict).
"""

from __future__ import annotations

import hashlib
import re
import shlex
import shutil
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from attnbench.backends.kernel_records import record_kernels
from attnbench.backends.program import NO_LIMIT_TIMEOUT_S, PROCESS_TIME_NOTE, PROCESS_TIME_WARNING
from attnbench.bench.check_rule import CourseRule
from attnbench.cases import suite
from attnbench.cases.gpu_reference import kernel_built, one_gpu_context, shares_the_gpu, start_finding
from attnbench.cases.inputs import (
    BenchInput,
    CaseInfo,
    FileInput,
    ProgressFactory,
    SuiteInput,
    inputs_for,
    no_progress,
)
from attnbench.cases.testcase import Shape, Testcase, read_output, write_testcase_into
from attnbench.errors import AttnbenchError
from attnbench.judge.diagnose import DIAGNOSED, diagnosis
from attnbench.judge.fresh_inputs import FreshInput, release
from attnbench.judge.phases import phase
from attnbench.judge.case_verdict import (  # noqa: F401 - the verdicts are part of the judge's interface
    CRASH,
    JUDGE_ERROR,
    NAN,
    NO_OUTPUT,
    PASS,
    RESOURCE,
    SIZE,
    SLOW,
    TIMEOUT,
    WRONG_ANSWER,
    judge_outcome,
)
from attnbench.judge.time_limits import (  # noqa: F401 - part of the judge's interface
    COURSE_LIMITS_DEVICE,
    COURSE_LIMITS_TEXT,
    TimeLimits,
    course_limit,
    load_time_limits,
)
from attnbench.printable import counted
from attnbench.results.course_grade import FULL_MARKS, GRADE_RULE, course_grade, limited_throughout
from attnbench.results.judge_cost import JudgeCost
from attnbench.results.kernel_time import CUPTI_SOURCE, KernelRecording
from attnbench.results.measurement import Measurement
from attnbench.results.resultset import ERROR, OK, WRONG, Cell, ResultKind, ResultSet, VariantInfo
from attnbench.results.run_settings import RunSettings
from attnbench.results.stats import KernelStats
from attnbench.results.verification import VerifyReport
from attnbench.sandbox import ProgramSpec, run_unfinished, staged_inputs
from attnbench.sandbox.program_run import WarmUp
from attnbench.sandbox.program_run import warm_up as warm_up_room
from attnbench.sandbox.process import ProgramError, check_program
from attnbench.sandbox.room import Confinement, Sandbox, SandboxSettings
from attnbench.results.judge_events import JudgeListener, ProgramCaseJudged

# How a verdict is saved: ok (passed), wrong (ran to the end, but the output or its time fails),
# error (the process did not finish normally).
_CELL_STATUS = {PASS: OK, SLOW: WRONG, WRONG_ANSWER: WRONG, NAN: WRONG, SIZE: WRONG, NO_OUTPUT: WRONG,
                CRASH: ERROR, TIMEOUT: ERROR, RESOURCE: ERROR, JUDGE_ERROR: ERROR}

DEFAULT_ARGS = "{in} {out}"
TIMEOUT_FACTOR = 2.0  # with a limit: killed at twice the limit, so an overrun is measured, a hang is not waited on
PREPARED_AHEAD_BYTES = 4 << 30  # one program's inputs made before their runs, at most (prepared_together)


class LauncherUnavailable(AttnbenchError):
    """The launcher (srun, say) is not on this machine."""

    exit_code = 3


# -- cases ----------------------------------------------------------------------------------------------
def cases_for(selector: str | Sequence[str]) -> list[BenchInput]:
    """Suite names, groups, ranges (t01-t10) and input files, as for compare (one parser: suite.case_parts)."""
    return inputs_for(selector)


def refuse_nonfinite_inputs(inputs: Sequence[BenchInput]) -> None:
    """A user's input file holding NaN or Inf is the input's fault, not a program's: refused (exit 2) before any
    program runs, as run and compare refuse it (suite inputs are finite by their seeds)."""
    for bench_input in inputs:
        if isinstance(bench_input, FileInput):
            bench_input.value_range().require_finite(bench_input.label)


@dataclass(frozen=True)
class PreparedCase:
    """A case ready to judge: its input file on disk, its reference, and what results record about it."""

    label: str
    shape: Shape
    input_path: Path
    reference: np.ndarray
    info: CaseInfo


def prepare_case(bench_input: BenchInput, progress: ProgressFactory = no_progress, staged: bool = False,
                 drawn: Testcase | None = None) -> PreparedCase:
    """Generate a suite input (and its float64 reference) if missing; a user's file gets a fresh reference.
    `staged`: a fresh input is written straight into the tmpfs its runs' boxes bind (staged_inputs), where the
    judge can stage, instead of to its private folder. `drawn`: a fresh input's values, drawn already
    (`drawn_ahead`)."""
    with phase("inputs and references"):
        return _prepared(bench_input, progress, staged, drawn)


def drawn_ahead(inputs: Sequence[BenchInput]) -> Iterator[tuple[BenchInput, Testcase | None]]:
    """Each input with its values where it is a fresh one (None for others), the next fresh one drawn on a
    thread while the caller makes this one's file, digest and reference: drawing t21, t22 and t29 took 0.71 s
    of their 1.9 s on an H200's host, its threads idle while the GPU made references."""
    with ThreadPoolExecutor(1) as ahead:
        def draw(index: int) -> Any:
            following = inputs[index] if index < len(inputs) else None
            return ahead.submit(following.load) if isinstance(following, FreshInput) else None

        drawing = draw(0)
        for index, bench_input in enumerate(inputs):
            testcase = drawing.result() if drawing is not None else None
            drawing = draw(index + 1)
            yield bench_input, testcase


def _prepared(bench_input: BenchInput, progress: ProgressFactory, staged: bool = False,
              drawn: Testcase | None = None) -> PreparedCase:
    if isinstance(bench_input, SuiteInput):
        case = bench_input.case
        if not suite.is_generated(case):
            with progress(f"generating {case.name}", 3 * case.shape.elements) as advance:
                suite.generate_input(case, advance)
        stored = suite.stored_reference(case)  # its bytes checked against their record
        if stored is not None:
            reference = read_output(stored, case.shape)
        else:
            reference = bench_input.reference(bench_input.load(progress), progress)
        info = CaseInfo(case.name, case.shape, case.input_sha256, "suite", case.provenance, case.note)
        return PreparedCase(case.name, case.shape, suite.input_path(case), reference, info)
    if isinstance(bench_input, FreshInput):
        testcase = drawn if drawn is not None else bench_input.load(progress)
        # its file written while the reference is made (a file's write and pycuda's waits let go of the GIL:
        # t22's 786 MB take 0.4 s to write into a tmpfs on an H200's host)
        with ThreadPoolExecutor(1) as beside:
            written = beside.submit(_written, bench_input, testcase, staged)
            reference = bench_input.reference(testcase, progress)
            return PreparedCase(bench_input.label, testcase.shape, written.result(), reference, bench_input.info())
    if isinstance(bench_input, FileInput):
        testcase = bench_input.load(progress)
        reference = bench_input.reference(testcase, progress)
        return PreparedCase(bench_input.label, testcase.shape, bench_input.path.resolve(), reference,
                            bench_input.info(testcase))
    raise ProgramError(f"{bench_input.label}: the judge needs a suite case or an input file")


def _written(fresh: FreshInput, testcase: Testcase, staged: bool) -> Path:
    """A fresh input's file: written straight into the tmpfs its runs bind where it can be (`staged`), else in
    the judge's private folder."""
    path = staged_inputs.stage_written(fresh.label, testcase.shape.input_bytes,
                                       lambda f: write_testcase_into(f, testcase)) if staged else None
    return path or fresh.write(testcase)


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

    def spec(self, label: str, input_path: Path, shape: Shape, timeout_s: float) -> ProgramSpec:
        """One run of it on a case, as the room takes it (the launcher wraps the room, which wraps the program)."""
        return ProgramSpec(label, input_path, shape, timeout_s, self.args, self.launcher)

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
    kernels: KernelRecording | None = None  # its kernels, from a second, untimed run (--kernel-time)
    program_s: float = 0.0  # how long the program ran, whatever its verdict (the programs' time in the judge's cost)

    @property
    def passed(self) -> bool:
        return self.verdict == PASS


def judge_case(program: Program, case: PreparedCase, limit_s: float | None, timeout_s: float,
               sandbox: Sandbox | None = None, beside_check: Callable[[], None] | None = None) -> JudgedCase:
    """Run the program on one case in a fresh case folder (in the sandbox, where one can be made) and
    give the verdict. Without a sandbox given, one is opened (--sandbox auto) for this case alone.
    The run's case folder is removed on a thread while the output is checked, and then `beside_check`, the
    caller's work once the run is over (the input's file let go): t22's check took 0.1 s on an H200's host, its
    case folder's removal 0.02 s and its input's unstaging 0.05 s after it."""
    if sandbox is None:
        own = Sandbox.open(program.path, SandboxSettings(), bool(program.launcher))
        try:
            return judge_case(program, case, limit_s, timeout_s, own, beside_check)
        finally:
            own.close()
    with ThreadPoolExecutor(1, "attnbench-beside-check") as beside:
        with phase("runs"):
            outcome, finish = run_unfinished(sandbox, program.spec(case.label, case.input_path, case.shape, timeout_s))
        # the case folder's removal (its output read already), then the caller's step; Ctrl-C in the few bytecodes
        # before the thread has it leaves the folder to the room's close
        after = beside.submit(_one_after_another, finish, beside_check)
        judged = JudgedCase(case.label, case.shape, PASS, "", outcome.wall_s, limit_s, timeout_s,
                            returncode=outcome.returncode, program_s=outcome.wall_s)
        with phase("checks"):
            judged.verdict, judged.message, judged.check = judge_outcome(outcome, case.reference)
        with phase("runs"):
            after.result()  # what it raised is the judge's own failure, as where it ran after the check
    if judged.verdict not in (PASS, RESOURCE) and outcome.exceeded:
        judged.verdict, judged.message, judged.check = RESOURCE, outcome.exceeded, None
    if judged.verdict == TIMEOUT:
        judged.wall_s = None
    if judged.passed and limit_s is not None and outcome.wall_s > limit_s:
        judged.verdict = SLOW
        judged.message = (f"correct, but {outcome.wall_s:.2f} s is over the {limit_s:g} s limit by "
                          f"{outcome.wall_s - limit_s:.2f} s")
    return judged


def _one_after_another(*steps: Callable[[], None] | None) -> None:
    for step in steps:
        if step is not None:
            step()


def record_case_kernels(program: Program, case: PreparedCase, timeout_s: float, sandbox: Sandbox) -> KernelRecording:
    """The kernels of a passed case, from a second run on the same input with the kernel-records collector, in a
    room like the judged run's (its settings and sealed JIT cache): never the judged, timed run."""
    spec = program.spec(case.label, case.input_path, case.shape, timeout_s)
    return record_kernels(program.path, spec, sandbox.settings, sandbox.cuda_cache)


def warm_up(program: Program, shape: Shape, sandbox: Sandbox, timeout_s: float,
            before_launch: Callable[[], None] | None = None) -> WarmUp:
    """The program's untimed, unjudged warm-up run in its sandbox (attnbench.sandbox.warm_up): it fills CUDA's
    JIT cache, which is then sealed and copied into every judged run. Returns how it went (`WarmUp`).
    `before_launch`: called once its throwaway input is written, right before the program starts."""
    with phase("runs"):
        return warm_up_room(sandbox, program.spec("warmup", Path("warmup.in"), shape, timeout_s), before_launch)


def timeout_for(limit_s: float | None, timeout_s: float | None) -> float:
    """--timeout if given; else twice the case's limit; else NO_LIMIT_TIMEOUT_S."""
    if timeout_s is not None:
        return timeout_s
    return TIMEOUT_FACTOR * limit_s if limit_s is not None else NO_LIMIT_TIMEOUT_S


# -- the whole judge ------------------------------------------------------------------------------------
@dataclass
class Judgement:
    """Every case judged so far (all of them unless interrupted)."""

    program: Program
    limits: TimeLimits
    confinement: Confinement | None = None
    sandbox_settings: SandboxSettings = field(default_factory=SandboxSettings)
    cases: list[PreparedCase] = field(default_factory=list)
    judged: list[JudgedCase] = field(default_factory=list)
    interrupted: bool = False
    warm_up_s: float = 0.0  # the untimed warm-up's run
    cost: JudgeCost | None = None  # what judging cost beside the program's runs (set once it is over)

    @property
    def program_runs_s(self) -> float:
        """Every run of the program the judge made: the warm-up and each case's, passed or not."""
        return self.warm_up_s + sum(j.program_s for j in self.judged)

    @property
    def passed(self) -> int:
        return sum(j.passed for j in self.judged)

    @property
    def exit_status(self) -> int:
        if self.interrupted:
            return 130
        return 0 if self.passed == len(self.judged) else 1

    @property
    def grade(self) -> int | None:
        """The course's grade when every one of t01-t30 was judged under a time limit (results.course_grade),
        else None."""
        if self.interrupted or not limited_throughout(self.limits.limit_for):
            return None
        return course_grade({j.label: j.verdict for j in self.judged})

    def summary(self) -> str:
        text = f"{self.passed} of {counted(len(self.judged), 'case')} passed"
        if self.grade is not None:
            text += f"; the course's grade {self.grade} of {FULL_MARKS} (max(0, 60 - 3k), k cases failed)"
        return text + " (interrupted: the rest were not run)" if self.interrupted else text


def run_judge(program: Program, inputs: list[BenchInput], limits: TimeLimits, timeout_s: float | None,
              progress: ProgressFactory = no_progress, listener: JudgeListener | None = None,
              settings: SandboxSettings | None = None,
              opened: Callable[[Confinement], None] | None = None, diagnose: bool = False,
              kernel_time: bool = False) -> Judgement:
    """Judge every case in order, each in its own sandboxed case folder; `opened` hears how cases are
    confined before the first runs, `listener` each case judged (a `ProgramCaseJudged` event).
    With `diagnose`, a failed case runs once more under compute-sanitizer (attnbench.judge.diagnose).
    With `kernel_time`, each passed case's kernels are recorded in a second, untimed run after its judged one.
    Ctrl-C stops after killing the running program, keeping what was judged."""
    settings = settings or SandboxSettings()
    start_finding()  # the driver's start, beside the room's opening and the warm-up's input (_warmed_up_and_prepared)
    # SandboxUnavailable: exit 3
    sandbox = Sandbox.open(program.path, settings, bool(program.launcher), cache_writable=True)
    judgement = Judgement(program, limits, sandbox.confinement, settings)
    staged = sandbox.binds_staged_inputs  # never for runs outside a box (a staged file is every user's to read)
    if opened is not None:
        opened(sandbox.confinement)
    warm_up_timeout = timeout_for(limits.limit_for(inputs[0].label), timeout_s)
    try:
        for batch in prepared_together(inputs):
            if not judgement.cases:
                prepared, judgement.warm_up_s = _warmed_up_and_prepared(
                    program, batch, sandbox, warm_up_timeout, progress, staged)
            else:
                prepared = _prepared_batch(batch, progress, staged)
            for case in prepared:
                index = len(judgement.cases)
                judgement.cases.append(case)
                judged = _judged_case(program, case, limits, timeout_s, sandbox, judgement, settings, diagnose,
                                      kernel_time)
                _let_go(case)  # a fresh input's file, once its runs are done (done already beside the check)
                if listener is not None:
                    listener(ProgramCaseJudged(index + 1, len(inputs), judged.label, judged.verdict, judged.wall_s))
    except KeyboardInterrupt:
        judgement.interrupted = True
        judgement.cases = judgement.cases[: len(judgement.judged)]
    finally:
        sandbox.close()
        if staged:
            staged_inputs.unstage_all()  # fresh inputs are secrets: none left mounted, whatever happened
    return judgement


def _prepared_batch(batch: Sequence[BenchInput], progress: ProgressFactory, staged: bool,
                    built: Callable[[], None] | None = None) -> list[PreparedCase]:
    """A batch's inputs and references, the references in one GPU context let go before any run; the phase holds
    the drawing ahead and the context's start and end, not only each case's making. `built` is called once
    the reference kernel is built (or found impossible), before the first case is made."""
    with phase("inputs and references"), one_gpu_context():
        if built is not None:
            kernel_built()
            built()
        return [prepare_case(bench_input, progress, staged, drawn) for bench_input, drawn in drawn_ahead(batch)]


def warm_up_beside_inputs() -> bool:
    """Whether one program's untimed warm-up runs while its first batch of inputs and references is made: where
    the references are the GPU's and it takes a second process (`shares_the_gpu`). Nothing is timed then: the
    warm-up is no judged run, and no timed run starts before the batch is made."""
    return shares_the_gpu()


def _warmed_up_and_prepared(program: Program, batch: Sequence[BenchInput], sandbox: Sandbox, timeout_s: float,
                            progress: ProgressFactory, staged: bool) -> tuple[list[PreparedCase], float]:
    """The first batch's cases and the program's warm-up, and the warm-up's run time. The warm-up's throwaway
    input is written first (t21's 393 MB), beside the driver's start (`start_finding`); then, where the GPU takes
    a second process (`warm_up_beside_inputs`), the batch is made on a thread while the warm-up runs (about 1 s of
    a one-program judge on t21, t22 and t29 on an H200, when the two ran one after the other), the program
    started once the reference kernel is built: its run's sweep kills every new descendant of the judge, and the
    build's nvcc is one. Elsewhere the batch is made first, on this thread, and the warm-up runs after it. Ctrl-C
    in the warm-up stops it here; the batch's making, a few seconds at most on a GPU, is waited for, so that
    nothing is left staged or half-written."""
    built = threading.Event()
    with ThreadPoolExecutor(1, "attnbench-inputs") as making:
        beside: list[Future] = []
        made: list[list[PreparedCase]] = []

        def before_launch() -> None:
            with phase("inputs and references"):
                if not warm_up_beside_inputs():  # one thing at a time: the batch, then the warm-up
                    made.append(_prepared_batch(batch, progress, staged))
                    return
                beside.append(making.submit(_prepared_batch, batch, progress, staged, built.set))
                while not built.wait(0.05) and not beside[0].done():
                    pass
            if beside[0].done() and beside[0].exception() is not None:
                raise _BatchFailed  # no warm-up for a judge about to stop: the batch's error is raised below

        warm_up_s = 0.0
        try:
            warm_up_s = warm_up(program, batch[0].shape, sandbox, timeout_s, before_launch).wall_s
        except _BatchFailed:
            pass
        with phase("inputs and references"):
            if beside:
                return beside[0].result(), warm_up_s
            return (made[0] if made else _prepared_batch(batch, progress, staged)), warm_up_s


class _BatchFailed(Exception):
    """The first batch's making failed before the warm-up started: it does not start."""


def prepared_together(inputs: Sequence[BenchInput], budget: int | None = None) -> list[list[BenchInput]]:
    """The cases in runs of consecutive ones whose inputs hold at most `budget` bytes together (one case at
    least): a run's inputs and references are made before any of its programs' runs, its references in one GPU
    context (each alone started and ended its own, 0.2 s each on an H200); the budget bounds the disk and
    memory they hold meanwhile."""
    budget = PREPARED_AHEAD_BYTES if budget is None else budget
    batches: list[list[BenchInput]] = []
    held = 0
    for bench_input in inputs:
        size = bench_input.shape.input_bytes
        if not batches or held + size > budget:
            batches.append([])
            held = 0
        batches[-1].append(bench_input)
        held += size
    return batches


def _let_go(case: PreparedCase) -> None:
    """A case's input let go once its runs are over: a fresh input's file removed, its staged copy unmounted (each
    done once, whoever asks again)."""
    release(case.input_path)
    staged_inputs.unstage(case.input_path)


def _judged_case(program: Program, case: PreparedCase, limits: TimeLimits, timeout_s: float | None,
                 sandbox: Sandbox, judgement: Judgement, settings: SandboxSettings, diagnose: bool,
                 kernel_time: bool) -> JudgedCase:
    """One prepared case judged, diagnosed or its kernels recorded as asked, and added to the judgement. Its input
    is let go beside the check unless a second run (a diagnosis, the kernels' record) may need it."""
    limit = limits.limit_for(case.label)
    last_run = not diagnose and not kernel_time
    judged = judge_case(program, case, limit, timeout_for(limit, timeout_s), sandbox,
                        (lambda: _let_go(case)) if last_run else None)
    if diagnose and judged.verdict in DIAGNOSED and not any(j.verdict in DIAGNOSED for j in judgement.judged):
        spec = program.spec(case.label, case.input_path, case.shape, judged.timeout_s)
        judged.message = f"{judged.message}; {diagnosis(program.path, spec, settings)}"
    if kernel_time and judged.passed:
        judged.kernels = record_case_kernels(program, case, timeout_for(limit, timeout_s), sandbox)
    judgement.judged.append(judged)
    return judged


def _cell(program: Program, judged: JudgedCase, device: str) -> Cell:
    extra: dict[str, Any] = {"verdict": judged.verdict, "limit_s": judged.limit_s, "wall_s": judged.wall_s,
                             "timeout_s": judged.timeout_s, "returncode": judged.returncode}
    measurement = None
    if judged.wall_s is not None and judged.verdict != CRASH:
        measurement = Measurement(
            variant=program.label, case=judged.label, shape=judged.shape, device=device,
            compute_s=judged.wall_s, kernel=KernelStats([judged.wall_s * 1e3]),
            verification=judged.check, warnings=[PROCESS_TIME_WARNING],
        )
    if judged.kernels is not None:
        extra.update(judged.kernels.to_extra(judged.shape.flops))
    check = judged.check.to_dict() if judged.check is not None else None
    message = "" if judged.passed else judged.message
    return Cell(program.label, judged.label, _CELL_STATUS[judged.verdict], message, measurement, check, extra)


def _limits_text(settings: SandboxSettings) -> dict[str, Any]:
    memory = f"{settings.memory_mb} MiB" if settings.memory_mb else None
    cpu = f"{settings.cpu_s:g} s" if settings.cpu_s else f"{settings.CPU_FACTOR:g}x the timeout, at least 10 s"
    return {"output_file": f"{settings.FILE_FACTOR}x the output, at least {settings.FILE_FLOOR >> 20} MiB",
            "processes": settings.processes, "memory": memory, "cpu_time": cpu}


def judge_results(judgement: Judgement, metadata: dict[str, Any]) -> ResultSet:
    """A saved-results set of kind "judge": one variant (the program) and one cell per case."""
    program = judgement.program
    device = metadata.get("cpu") or "this machine"
    if program.launcher:
        device = f"via {' '.join(program.launcher)}"
    info = VariantInfo(program.label, "program", "a whole program run as " + " ".join(
        [program.label, *program.args]), "program", str(program.path), program.sha256())
    return ResultSet(
        kind=ResultKind.JUDGE,
        metadata=metadata,
        policy={"timing": PROCESS_TIME_NOTE, "timeout_s": "--timeout, else twice the limit, else "
                f"{NO_LIMIT_TIMEOUT_S:g} s",
                **({"kernel_time": f"{CUPTI_SOURCE}; the verdicts and limits use the process time only"}
                   if any(j.kernels is not None for j in judgement.judged) else {})},
        variants=[info],
        cases=[case.info for case in judgement.cases],
        cells=[_cell(program, judged, device) for judged in judgement.judged],
        baseline=None,
        settings=RunSettings(
            check_rule=CourseRule().describe(), time_limits=judgement.limits.describe(),
            launcher=list(program.launcher), args=list(program.args), passed=judgement.passed,
            sandbox=judgement.confinement.to_dict() if judgement.confinement else None,
            sandbox_limits=_limits_text(judgement.sandbox_settings), judged=len(judgement.judged),
            interrupted=judgement.interrupted, grade=judgement.grade,
            judge_cost=judgement.cost.to_dict() if judgement.cost is not None else None,
            grade_rule=GRADE_RULE if judgement.grade is not None else None),
    )
