"""The public API for the user's own code: judging whole programs as the course does, and a starting
kernel with its launch facts. The command line renders what these return."""

from __future__ import annotations

import contextlib
import os
import shlex
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

from attnbench.analysis.class_history import HistoryRow, history, load_boards, runs_on_other_cases
from attnbench.analysis.ranking import RANK_BY
from attnbench.api.empty_arguments import refuse_empty
from attnbench.api.notices import Notice, quiet, say_suite_writes
from attnbench.cases.gpu_reference import failed_over, made_on_the_cpu
from attnbench.backends.kernel_records import unavailable as kernel_records_unavailable
from attnbench.cases.inputs import BenchInput, ProgressFactory, bytes_to_write, no_progress
from attnbench.errors import AttnbenchError, EnvironmentProblem, UsageError
from attnbench.files import DEFAULT_RESULTS_DIR
from attnbench.judge import course_judge as judging
from attnbench.judge.class_executors import Carrier
from attnbench.judge.class_executors import resumed as resumed_slurm_class
from attnbench.judge.class_flow import judge_class as judge_class_flow
from attnbench.judge.case_verdict import JUDGE_ERROR
from attnbench.judge.classroom import RERUN_TOP, Checkpoint, ClassRequest, ClassSettings
from attnbench.judge.classroom import confinement as class_confinement
from attnbench.judge.course_judge import JudgedCase
from attnbench.judge.fresh_inputs import RULE as FRESH_RULE
from attnbench.judge.fresh_inputs import draw, seeds_of
from attnbench.judge.course_build import BuildRules, build_rules
from attnbench.judge.gpu_needed import refuse_without_gpu
from attnbench.judge.phases import phase, timing
from attnbench.judge.submissions import (BUILD_TIMEOUT_S, HIP_NOT_JUDGED, Submission, build, find_submissions,
                                         missing_builder, not_a_submission)
from attnbench.judge.time_limits import COURSE_LIMITS_BRIEF
from attnbench.kernels.starter import StarterFiles, write_starter
from attnbench.kernels.user import find_launch_facts
from attnbench.locations import data_dir
from attnbench.results.judge_events import JudgeListener, hears_nothing
from attnbench.results.metadata import collect
from attnbench.results.resultset import ResultSet
from attnbench.results.scoreboard import Scoreboard
from attnbench.sandbox import oom_priority
from attnbench.sandbox.reaper import subreaper_restored
from attnbench.sandbox.process import MAX_WAIT_S, ProgramError, check_program
from attnbench.sandbox.room import MODES as SANDBOX_MODES
from attnbench.sandbox.room import NO_SANDBOX_HERE, Confinement, SandboxSettings, SandboxUnavailable
from attnbench.sandbox.staging import remove_tree
from attnbench.spread.slurm import SlurmOptions, default_folder, refuse_without_slurm
from attnbench.spread.devices import devices_for, no_gpu_here
from attnbench.spread.executor import SLURM, choose_executor
from attnbench.printable import counted, first_few, printable

__all__ = ["COURSE_LIMITS_BRIEF", "MAX_WAIT_S", "SANDBOX_MODES", "BuildFailed", "Confinement", "JudgeOptions", "JudgedCase", "SandboxSettings",
           "SlurmOptions", "class_history", "class_runs_on_other_cases", "is_class", "is_source", "judge", "judge_class", "judge_program",
           "judge_submissions", "judge_writes", "new_kernel", "resume_class"]

def judge(program: str, cases: str | Sequence[str] = "course", *, launcher: str | None = None, time_limits: str = "course",
          args: str = judging.DEFAULT_ARGS, timeout: float | None = None, progress: ProgressFactory = no_progress,
          listener: JudgeListener | None = None, command: str | None = None, sandbox: SandboxSettings | None = None,
          opened: Callable[[Confinement], None] | None = None,
          fresh_inputs: bool = False, arch: str | None = None, build_command: str | None = None,
          diagnose: bool = False, kernel_time: bool = False,
          build_timeout: float = BUILD_TIMEOUT_S) -> tuple[judging.Judgement, ResultSet]:
    """Run PROGRAM IN OUT on each case in its own case folder and sandbox (see attnbench.sandbox.room),
    time the whole process, check the output by the course's rule; returns the judgement and its result
    set (kind "judge"). `opened` hears how cases are confined (bwrap, or the fallback and why) first;
    `listener` hears each case judged (a `ProgramCaseJudged` event).
    A `.cu` or `.c` file is one program too: built first, in the sandbox, as a class's submission is (for
    `arch`, or by `build_command`; a failed build: BuildFailed).
    `fresh_inputs`: judge on inputs drawn anew from secret seeds (attnbench.judge.fresh_inputs), not the
    suite's; the seeds are saved in the result's settings. `diagnose`: a failed case runs once more under
    compute-sanitizer, whose first error joins its message (attnbench.judge.diagnose). `kernel_time`: each
    passed case's kernels recorded in a second, untimed run (attnbench.backends.kernel_records), saved beside
    its process time, never judged. What judging cost beside the program's runs (its phases and their ratio,
    `results.judge_cost`) is the judgement's `cost` and the result's `settings.judge_cost`."""
    options = JudgeOptions(programs=(program,), cases=cases if isinstance(cases, str) else tuple(cases),
                           launcher=launcher, time_limits=time_limits,
                           args=args, timeout=timeout, sandbox=sandbox or SandboxSettings(), command=command,
                           fresh_inputs=fresh_inputs, arch=arch, build_command=build_command, diagnose=diagnose,
                           kernel_time=kernel_time, build_timeout=build_timeout)
    return _judged_program(options, progress, listener, opened)


def _judged_program(options: JudgeOptions, progress: ProgressFactory, listener: JudgeListener | None,
                    opened: Callable[[Confinement], None] | None) -> tuple[judging.Judgement, ResultSet]:
    """`judge` of the one program `options` names, its phases timed."""
    with subreaper_restored(), timing() as clock:
        judgement, result = _judge_one(options, progress, listener, opened)
    judgement.cost = clock.cost(judgement.program_runs_s)
    result.settings.judge_cost = judgement.cost.to_dict()
    return judgement, result


def _judge_one(options: JudgeOptions, progress: ProgressFactory, listener: JudgeListener | None,
               opened: Callable[[Confinement], None] | None) -> tuple[judging.Judgement, ResultSet]:
    program = options.programs[0]
    limits = judging.load_time_limits(options.time_limits)
    inputs = _inputs_of(options)
    _refuse_cuda_without_gpu(program, options.launcher)
    if is_source(program):
        with built_source(program, options.sandbox, build_rules(options.arch, options.build_command),
                          options.build_timeout) as path:
            if options.launcher is None:  # a .c file that links the CUDA runtime is one too
                refuse_without_gpu(program, path)
            built = replace(options, programs=(str(path),), arch=None, build_command=None,
                            build_timeout=BUILD_TIMEOUT_S)
            return _judge_one(built, progress, listener, opened)
    prog = judging.make_program(program, options.launcher, options.args)
    fresh = bool(options.fresh_inputs)
    if fresh:
        inputs = draw(inputs)
    judgement = judging.run_judge(prog, inputs, limits, options.timeout, progress, listener,
                                  options.sandbox, opened, options.diagnose, options.kernel_time)
    result = judging.judge_results(judgement, collect(None, False, options.command))
    result.settings.inputs = FRESH_RULE if fresh else "the suite's inputs (public seeds)"
    result.settings.seeds = seeds_of(inputs)
    return judgement, result


def judge_class(submissions: Sequence[str | Path], cases: str | Sequence[str] = "course", *,
                time_limits: str = "course", timeout: float | None = None, build_timeout: float = BUILD_TIMEOUT_S,
                rerun_top: int = RERUN_TOP, gpus: str | None = None, executor: str = "local",
                slurm: SlurmOptions | None = None, sandbox: SandboxSettings | None = None,
                results_dir: str | Path = DEFAULT_RESULTS_DIR, progress: ProgressFactory = no_progress,
                listener: JudgeListener | None = None, command: str | None = None,
                fresh_inputs: bool = True, checkpoint: Checkpoint | None = None, arch: str | None = None,
                build_command: str | None = None, diagnose: bool = False, kernel_time: bool = False,
                rank_by: str = "wall") -> Scoreboard:
    """Build and judge every submission (folders, .cu or .c files, executables, or folders of them) on the
    same cases, rank them (passed cases first, then total time; ties within noise), rerun the top ones
    and rank again; returns the scoreboard, which the command line renders and saves. With
    `gpus` ("all" or "0,1"), the cases run on one worker process per GPU; with `executor="slurm"`, each
    submission's cases of a round are a Slurm job, in the jobs folder of `slurm` (default
    results_dir/slurm/<date>_<time>, removed once the class is judged). Every build and every case runs in the
    judge's sandbox (`sandbox`; a class needs one unless its mode is "none"). `fresh_inputs` (the default):
    every case and every rerun on inputs drawn anew from secret seeds, saved with the scoreboard; False: the
    suite's inputs. `listener` hears the class's typed events (`attnbench.results.judge_events`: each
    submission built, each case and rerun judged; and `ClassProgress`: the phase, its steps done and in all,
    the time left estimated), the same whatever the executor.
    `checkpoint` gets the board as it grows (after the builds and each case judged), to save it.
    Submissions are built as the course builds them (`attnbench.judge.course_build`): for `arch` (sm_90,
    native; default the judging GPU's), or each by the shell line `build_command`. `diagnose`: each failed
    case runs once more under compute-sanitizer, whose first error joins its message.
    `kernel_time`: each passed run's kernels recorded in a second, untimed run, in the sandbox like every run;
    `rank_by` "kernel" ranks by them (and records them), "wall" (the default) by the course's wall clock."""
    options = JudgeOptions(programs=tuple(os.fspath(s) for s in submissions),
                           cases=cases if isinstance(cases, str) else tuple(cases), time_limits=time_limits,
                           timeout=timeout, sandbox=sandbox or SandboxSettings(), rerun_top=rerun_top, gpus=gpus,
                           build_timeout=build_timeout, executor=executor, slurm=slurm or SlurmOptions(),
                           results_dir=results_dir, command=command, fresh_inputs=fresh_inputs, arch=arch,
                           build_command=build_command, diagnose=diagnose, kernel_time=kernel_time,
                           rank_by=rank_by, a_class=True)
    return _judged(class_request(options), listener, checkpoint, progress)


def class_request(options: JudgeOptions) -> ClassRequest:
    """The one request a class's options make, checked before any work: bad usage, or no GPU, raised here."""
    if options.rank_by not in RANK_BY:
        raise UsageError(f"--rank-by {options.rank_by}: one of {', '.join(RANK_BY)}")
    chosen = choose_executor(options.gpus, options.executor)
    devices = devices_for(options.gpus) if options.gpus is not None else []
    if options.rerun_top < 0:
        raise UsageError(f"--rerun-top {options.rerun_top}: give 0 or more")
    found = _without_results_folder(find_submissions(list(options.programs)), options.results_dir)
    if all(s.how == "none" for s in found):  # a class one folder too high: a row for each folder, nothing judged,
        # exit 0, where an empty folder is "no submission found", exit 2
        raise UsageError(f"{', '.join(printable(str(p)) for p in options.programs)}: no submission found in its "
                         f"{counted(len(found), 'folder')} ({found[0].name}: {not_a_submission(found[0].source)})")
    if chosen is SLURM:
        refuse_without_slurm()
    rules = build_rules(options.arch, options.build_command)
    _refuse_missing_builders(found, rules)
    inputs = _inputs_of(options)
    settings = ClassSettings(judging.load_time_limits(options.time_limits), options.timeout, options.build_timeout,
                             options.rerun_top, class_sandbox(options.sandbox), options.fresh_inputs is not False,
                             rules, options.diagnose,
                             options.kernel_time, options.rank_by)
    slurm = options.slurm
    if chosen is SLURM and slurm.folder is None:
        slurm = replace(slurm, folder=default_folder(options.results_dir))
    return ClassRequest(tuple(found), tuple(inputs), settings, chosen, tuple(devices),
                        slurm if chosen is SLURM else None, collect(None, False, options.command))


def judge_errors(board: Scoreboard) -> list[tuple[str, str, str]]:
    """(submission, case, why) of each case the judge itself failed to judge (verdict JUDGE ERROR), in order."""
    return [(row.name, case, entry.message) for row in board.rows for case, entry in row.entries.items()
            if entry.verdict == JUDGE_ERROR]


def _without_results_folder(found: list[Submission], results_dir: str | Path) -> list[Submission]:
    """The class less the judge's own results folder, which `attnbench judge .` from the class's folder puts
    among the submissions: the next judge made it a row, "not a submission", graded 0. A submission by the name
    of the results folder is refused (UsageError): a student's folder named attnbench-results left the class
    without a word, and the judge saved its scoreboards in it (red team 12)."""
    results = Path(results_dir)
    if not results.is_dir():
        return found
    kept = [s for s in found if not (s.source.is_dir() and not s.source.is_symlink()
                                     and os.path.samefile(s.source, results))]
    if not kept:  # the results folder given as the class itself: said as ever, by what reads it
        return found
    for dropped in (s for s in found if s not in kept):
        if dropped.how != "none":  # a student's folder by that name: its row vanished, the boards saved in it
            raise UsageError(f"--results-dir {printable(str(results_dir))}: a submission of the class "
                             f"({dropped.name}), not the judge's results folder; give another --results-dir")
    return kept


def _refuse_missing_builders(found: Sequence[Submission], rules: BuildRules) -> None:
    """EnvironmentProblem (exit 3) before any work when a tool that builds some of the class is not on PATH
    (nvcc without the CUDA module loaded): each of their rows would be a failed build, graded 0, with exit 0."""
    needing: dict[str, list[str]] = {}
    for submission in found:
        tool = missing_builder(submission, rules)
        if tool is not None:
            needing.setdefault(tool, []).append(submission.name)
    if needing:
        said = "; ".join(f"{tool}, which builds {counted(len(names), 'submission')} of the class ({first_few(names)})"
                         for tool, names in needing.items())
        raise EnvironmentProblem(f"not on this machine's PATH: {said}; put {'it' if len(needing) == 1 else 'them'} "
                                 f"on PATH{' (load the CUDA toolkit for nvcc)' if 'nvcc' in needing else ''}, or give "
                                 "--build-command")


def _judged(request: ClassRequest, listener: JudgeListener | None, checkpoint: Checkpoint | None,
            progress: ProgressFactory, carrier: Carrier | None = None) -> Scoreboard:
    """The class judged by its one flow, its phases timed (board.cost) and a program that exhausts memory
    killed, not the judge."""
    with subreaper_restored(), oom_priority.judge_last() as lowered, timing() as clock:
        board = judge_class_flow(request, listener or hears_nothing, checkpoint, progress, carrier)
        board.cost = clock.cost(sum(row.program_s for row in board.rows))
    board.settings["oom_killer"] = (
        f"programs {oom_priority.PROGRAM_ADJ}, the judge {lowered}" if lowered is not None else
        f"programs {oom_priority.PROGRAM_ADJ}; the judge's own could not be lowered ({oom_priority.why_not_lowered()})")
    return board


def _refuse_cuda_without_gpu(program: str, launcher: str | None) -> None:
    """One CUDA program (a .cu file, or an executable that is one) to run on this host without an NVIDIA GPU:
    GpuUnavailable (exit 3) before any build or run. With a launcher it runs elsewhere: never refused here."""
    if launcher is not None or Path(program).suffix == ".c" or not Path(program).is_file():
        return  # a .c file is known by what it builds; a missing one is said by what reads it
    refuse_without_gpu(program, None if Path(program).suffix == ".cu" else Path(program))


class BuildFailed(AttnbenchError):
    """The one program given as a source file did not build: its row, as a class would show it."""

    exit_code = 1


@contextlib.contextmanager
def built_source(source: str, sandbox: SandboxSettings, rules: BuildRules | None = None,
                 timeout_s: float = BUILD_TIMEOUT_S):
    """A .cu or .c file built in the sandbox, as a class's submission is; the program's path while it lasts."""
    if not Path(source).is_file():
        raise ProgramError(f"{source}: no such file")
    folder = Path(tempfile.mkdtemp(prefix="attnbench-source-"))
    try:
        (submission,) = find_submissions([source])
        tool = missing_builder(submission, rules)
        if tool is not None:  # the machine's lack: exit 3, never a failed build (exit 1) blamed on the source
            raise EnvironmentProblem(f"{source}: {tool} is not on this machine's PATH, so it cannot be built here; "
                                     f"put it on PATH ({'load the CUDA toolkit' if tool == 'nvcc' else 'install it'}) "
                                     "and judge again")
        with phase("builds"):
            made = build(submission, folder, timeout_s, settings=sandbox, rules=rules)
        if made.program is None:
            raise BuildFailed(f"{source}: {made.message}")
        yield made.program
    finally:
        remove_tree(folder)


def class_sandbox(settings: SandboxSettings) -> SandboxSettings:
    """A class runs strangers' code: it is judged in the sandbox, or without one only when `--sandbox none`
    says so outright (`auto` does not fall back for a class). SandboxUnavailable says why in one line."""
    if settings.mode == "none":
        return settings
    required = replace(settings, mode="required")
    try:
        class_confinement(ClassSettings(judging.load_time_limits("none"), sandbox=required))
    except SandboxUnavailable as exc:
        raise SandboxUnavailable(f"a class runs strangers' code, so it is judged in the sandbox only, and none can "
                                 f"be made here ({str(exc).removeprefix(NO_SANDBOX_HERE)}); --sandbox none judges it without "
                                 "one, on the host") from None
    return required


def class_history(folder: str | Path, cases: list[str] | None = None) -> list[HistoryRow]:
    """Every scoreboard saved in a results folder, per submission its best and latest run (of the runs on
    `cases`, by default the latest run's)."""
    refuse_empty("folder", folder, "the results folder of the class's saved scoreboards")
    return history(load_boards(folder), cases)


def class_runs_on_other_cases(folder: str | Path) -> int:
    """How many scoreboards saved in a results folder `class_history` leaves out: runs on other cases than the
    latest run's."""
    refuse_empty("folder", folder, "the results folder of the class's saved scoreboards")
    return runs_on_other_cases(load_boards(folder))


def resume_class(folder: str | Path, listener: JudgeListener | None = None,
                 checkpoint: Checkpoint | None = None) -> Scoreboard:
    """Finish a class judged over Slurm from its jobs folder: its flow runs again on the inputs it drew, what
    came back is kept, the rest resubmitted."""
    refuse_empty("folder", folder, "the class's Slurm jobs folder")
    request, carrier = resumed_slurm_class(folder)
    return _judged(request, listener, checkpoint, no_progress, carrier)


def is_class(program: str) -> bool:
    """Whether one argument of `judge` names a class (a folder of submissions, or one submission folder)
    rather than one program (an executable, or a .cu or .c file built first) to judge case by case."""
    return Path(program).is_dir()


def one_submission_exit(programs: tuple[str, ...], board: Scoreboard) -> int:
    """The exit status of a judge given one submission's own folder (not a class of them): 1 when it failed to
    build or failed a case, 2 when it holds only what attnbench does not judge (hw4.hip), else 0. A student's
    `judge hw4_folder` in a script exited 0 on a failure, where `judge ./hw4` exits 1. A class (0 here) exits 0
    whatever its verdicts: its scoreboard is the result."""
    if len(programs) != 1 or len(board.rows) != 1:
        return 0
    row = board.rows[0]
    given = Path(programs[0])
    # the row's source is the path escaped (`printable`): a folder named with a no-break space or a byte that is
    # not UTF-8 never resolved to the one given, and its failure exited 0
    if row.source != printable(os.fsdecode(given.absolute())) and Path(row.source).resolve() != given.resolve():
        return 0
    if not row.built and row.build_message == HIP_NOT_JUDGED:
        return 2
    return 0 if row.built and row.passed == len(board.cases) else 1


def is_source(program: str) -> bool:
    """A .cu or .c file: one program, built before it is judged."""
    return Path(program).suffix in (".cu", ".c")


def judge_writes(cases: str | Sequence[str] = "course") -> int:
    """Bytes a judge of these cases will write to the suite's data folder before it starts (inputs and
    references not generated yet); 0 when all are there."""
    return bytes_to_write(judging.cases_for(cases))


@dataclass(frozen=True)
class JudgeOptions:
    """A judge as the command line states it: one program judged case by case, or a class (several
    programs, a folder of submissions, a .cu or .c file to build, or a Slurm run to resume)."""

    programs: tuple[str, ...] = ()
    cases: str | tuple[str, ...] = "course"  # the API's list of cases stays a list (a file's name may hold a comma)
    launcher: str | None = None  # one program only
    time_limits: str = "course"
    args: str = judging.DEFAULT_ARGS  # one program only
    timeout: float | None = None
    sandbox: SandboxSettings = SandboxSettings()
    rerun_top: int = RERUN_TOP  # a class only, as are the fields below
    gpus: str | None = None
    build_timeout: float = BUILD_TIMEOUT_S
    executor: str = "local"
    slurm: SlurmOptions = SlurmOptions()
    resume: str | None = None  # a class's Slurm jobs folder
    results_dir: str | Path = DEFAULT_RESULTS_DIR
    command: str | None = None
    fresh_inputs: bool | None = None  # None: fresh for a class, the suite's for one program
    arch: str | None = None  # builds: for this architecture (default: the judging GPU's)
    build_command: str | None = None  # builds: this shell line in each submission's folder
    diagnose: bool = False  # a failed case runs once more under compute-sanitizer
    kernel_time: bool = False  # each passed case's kernels, from a second, untimed run
    rank_by: str = "wall"  # a class only: "kernel" ranks by kernel time (and records it)
    a_class: bool = False  # judged as a class whatever the programs (the API's judge_class)

    def __post_init__(self) -> None:
        if not self.programs and not self.resume:
            raise UsageError("judge needs a PROGRAM (or several, or a folder of submissions), or --resume FOLDER")
        for program in self.programs:  # from Python judge_class([""]) judged the working folder as a class
            refuse_empty("program", program, "a program, a submission or a folder of them")
        refuse_empty("time_limits", self.time_limits, "course, course-rtx3070, none or a TOML file")
        for option, seconds in (("timeout", self.timeout), ("build_timeout", self.build_timeout)):
            # from Python, timeout=-1 judged every case at once and timeout=nan ended in a traceback in the sandbox
            if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
                                        or not 0 < seconds <= MAX_WAIT_S):
                raise UsageError(f"{option}={seconds!r}: give a number of seconds > 0, at most {MAX_WAIT_S:,.0f}")
        if self.sandbox.mode not in SANDBOX_MODES:  # SandboxSettings("x") was taken for auto
            raise UsageError(f"sandbox mode {self.sandbox.mode!r}: one of {', '.join(SANDBOX_MODES)}")
        for option, value in (("--launcher", self.launcher), ("--arch", self.arch), ("--build-command", self.build_command)):
            if value is not None and not value.strip():  # `--launcher ""` (an unset variable) was dropped without a word
                raise UsageError(f'{option} is empty (""): give its words, or leave {option} out')
        unreachable = self.sandbox.unreachable_limit()
        if unreachable is not None:
            raise UsageError(unreachable)
        if self.rank_by != "wall" and not self.judges_a_class:
            raise UsageError("--rank-by ranks a class; for one program, --kernel-time records its kernels")
        if self.judges_a_class and (self.launcher or self.args != judging.DEFAULT_ARGS):
            raise UsageError("--launcher and --args are for one program; a class runs each submission as the "
                             "course does (PROGRAM IN OUT), and --executor slurm places it")
        if not self.judges_a_class and (self.gpus is not None or self.executor != "local"):
            raise UsageError("--gpus and --executor spread a class's submissions; one program is judged here, "
                             "case by case (--launcher places it)")
        if not self.judges_a_class:
            self._refuse_what_one_program_ignores()

    def _refuse_what_one_program_ignores(self) -> None:
        """Options of a class given for one program were ignored without a word (`--rerun-top 5`, `--partition`;
        `--arch` for a program built already)."""
        if self.rerun_top != RERUN_TOP:
            raise UsageError("--rerun-top reruns a class's top submissions; one program is judged once per case")
        if self.slurm != SlurmOptions():
            raise UsageError("--partition, --gres and --time are for a class's Slurm jobs (--executor slurm); one "
                             "program is judged here (--launcher \"srun ...\" places it)")
        builds = self.arch is not None or self.build_command is not None or self.build_timeout != BUILD_TIMEOUT_S
        if builds and not is_source(self.programs[0]):
            raise UsageError(f"--arch, --build-command and --build-timeout build a class's submissions or a .cu or .c "
                             f"program; {self.programs[0]} is an executable, judged as it is")

    @property
    def judges_a_class(self) -> bool:
        """Whether these programs are a class (ranked on a scoreboard) rather than one program."""
        return self.a_class or bool(self.resume) or len(self.programs) > 1 or is_class(self.programs[0])


def _inputs_of(options: JudgeOptions) -> list[BenchInput]:
    """The cases `options` name, each finite: bad usage or bad input said in one line before any work."""
    inputs = judging.cases_for(options.cases)
    if not inputs:
        named = options.cases if isinstance(options.cases, str) else ",".join(options.cases)
        raise UsageError(f"--cases {named!r} names no case")
    judging.refuse_nonfinite_inputs(inputs)
    return inputs


def _say_pending(cases: str | Sequence[str], notice: Notice) -> None:
    """All 30 course cases take about 8.6 GB: say so before writing any."""
    say_suite_writes(judge_writes(cases), data_dir(), notice)


def _say_unlimited(options: JudgeOptions, notice: Notice) -> None:
    """A limits file of the user's that leaves a judged case without a limit says which, before any run."""
    limits = judging.load_time_limits(options.time_limits)
    labels = [i.label for i in judging.cases_for(options.cases)]
    missing, strangers = limits.unlimited(labels), limits.strangers(labels)
    if missing:
        notice(f"{options.time_limits}: no limit for {first_few(missing)} (no line for it, no `default = seconds`); "
               "judged without one")
    if strangers:
        notice(f"{options.time_limits}: {first_few(strangers)} "
               f"{'names' if len(strangers) == 1 else 'name'} no case of the suite or of --cases; not used")



def _say_no_kernels(options: JudgeOptions, notice: Notice) -> None:
    """When kernel times are asked for and none can be recorded here: the one line why (the rest goes on)."""
    if options.kernel_time or options.rank_by == "kernel":
        why = kernel_records_unavailable()
        if why is not None:
            ranks = "; ranks by wall time (no row has a kernel time)" if options.rank_by == "kernel" else ""
            notice(why + ranks)


def _say_cpu_references(notice: Notice) -> None:
    """A GPU reference that failed left the references to the CPU without a word (t21, t22 and t29 took 33 s
    instead of 1.6 s on an H200 when the context was mishandled): said once the judge is done. So is a machine
    with an NVIDIA GPU whose references never tried it (pycuda not importable: t21, t22 and t29 took 32 s instead
    of 1.6 s on an H200, and only the phases' line showed it)."""
    why = failed_over()
    if why:
        notice(f"{why}: the float64 references it could not make were made on this machine's CPU instead (the same "
               "yardstick, slower: t29's takes about 26 s on 16 cores)")
        return
    skipped = made_on_the_cpu()
    if skipped and no_gpu_here() is None:
        notice(f"this machine has an NVIDIA GPU, but the float64 references were made on its CPU: {skipped} (the "
               "same yardstick, slower: t29's takes about 26 s on 16 cores, 0.13 s on an H200; the `gpu` extra "
               "installs pycuda)")


def judge_program(options: JudgeOptions, *, progress: ProgressFactory = no_progress,
                  listener: JudgeListener | None = None,
                  opened: Callable[[Confinement], None] | None = None,
                  notice: Notice = quiet) -> tuple[judging.Judgement, ResultSet]:
    """`judge` of the one program `options` names (see `judge`), after a note of what its cases will write."""
    if not is_source(options.programs[0]):
        check_program(options.programs[0])  # a missing program is said alone, not after a note of gigabytes to write
    _refuse_cuda_without_gpu(options.programs[0], options.launcher)  # nor after that note
    if not options.fresh_inputs:  # fresh inputs are drawn into temporary space: the suite's folder gets nothing
        _say_pending(options.cases, notice)
    _say_no_kernels(options, notice)
    _say_unlimited(options, notice)
    judged = _judged_program(options, progress, listener, opened)
    _say_cpu_references(notice)
    return judged


def judge_submissions(options: JudgeOptions, *, progress: ProgressFactory = no_progress,
                      listener: JudgeListener | None = None, notice: Notice = quiet,
                      checkpoint: Checkpoint | None = None) -> Scoreboard:
    """The class `options` names judged (see `judge_class`), after a note of what its cases will write; or,
    with `resume`, its Slurm run finished."""
    if options.resume:
        return resume_class(options.resume, listener)
    request = class_request(options)
    if options.fresh_inputs is False:  # fresh inputs (a class's default) write nothing to the suite's folder
        _say_pending(options.cases, notice)
    _say_no_kernels(options, notice)
    _say_unlimited(options, notice)
    board = _judged(request, listener, checkpoint, progress)
    _say_cpu_references(notice)
    return board


def new_kernel(name: str, folder: str | Path = ".") -> StarterFiles:
    """Write NAME.cu (a simple, correct starting kernel) and its launch facts in attnbench.toml."""
    refuse_empty("folder", folder, "the folder to write in (\".\" for this one)")
    return write_starter(name, Path(folder))


def next_step(name: str, files: StarterFiles) -> str:
    """The command that runs the new kernel: from here when this folder's lookup finds its attnbench.toml,
    else after a `cd` to the folder that holds it (variants are looked up from the current folder up)."""
    command = f"attnbench run t02 out.bin --variant {name} --check"
    found = find_launch_facts(Path.cwd())
    if found is not None and found.path.resolve() == Path(files.config).resolve():
        return command
    return f"cd {shlex.quote(os.fsdecode(Path(files.config).parent))} && {command}"
