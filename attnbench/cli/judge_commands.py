"""The commands for the user's own code: `judge` (whole programs, as the course judges them) and `new`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from attnbench.api import EXECUTOR_OPTIONS
from attnbench.api import programs as api_programs
from attnbench.cli.options import (command_line, complete_cases, error_line, file_stem, finite, notice,
                                   refuse_what_would_be_ignored)
from attnbench.files import DEFAULT_RESULTS_DIR, check_results_folder
from attnbench.output.export import save
from attnbench.output.export.scoreboard_export import RowByRow
from attnbench.output.render.matrix_run import result_json
from attnbench.output.render.terminal import console, err_console, judge_progress, print_prose, print_table, progress_bar
from attnbench.output.tables.result_tables import scoreboard_table
from attnbench.output.tables.scoreboard_table import (
    class_stem,
    cost_line,
    history_model,
    ranked_note_lines,
    scoreboard_lines,
    scoreboard_model,
)
from attnbench.printable import counted, printable


@click.command()
@click.argument("programs", nargs=-1)
@click.option("--cases", "-c", "case_selector", default="course", show_default=True, shell_complete=complete_cases,
              help="Suite names, groups, ranges (t01-t10) or input files, comma separated.")
@click.option("--launcher", default=None,
              help='Words put before the program, e.g. "srun -p nvidia -N1 -n1 --gres=gpu:1".')
@click.option("--time-limits", "limits_spec", default="course", show_default=True,
              help=f"course ({api_programs.COURSE_LIMITS_BRIEF}), course-rtx3070 (the 2024 course's second machine: "
                   "1/3/5 s), none, or a TOML file of `case = seconds` lines.")
@click.option("--args", "args_template", default="{in} {out}", show_default=True,
              help="How the program takes its files; {in} and {out} are replaced by their paths.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True, max=api_programs.MAX_WAIT_S), default=None,
              callback=finite,
              help="Kill a case after this many seconds [default: twice its limit; 300 s without one].")
@click.option("--sandbox", "sandbox_mode", type=click.Choice(api_programs.SANDBOX_MODES), default="auto",
              show_default=True,
              help="auto: a bubblewrap sandbox where one can be made, else a one-line warning and the fallback; "
                   "required: exit 3 when none can be made; none: no sandbox.")
@click.option("--max-processes", type=click.IntRange(min=1), default=512, show_default=True,
              help="Processes and threads a program may start (its cgroup's pids.max as root on cgroup v2, else "
                   "RLIMIT_NPROC).")
@click.option("--memory-limit", "memory_mb", type=click.IntRange(min=1), default=None,
              help="Memory in MiB: what a run's processes use together (a cgroup's memory.max, where the judge is "
                   "root on cgroup v2), else address space per process (RLIMIT_AS, which CUDA reserves far beyond "
                   "its use: give GPU programs tens of GiB) [default: none].")
@click.option("--cpu-time", "cpu_s", type=click.IntRange(min=1), default=None,
              help="Whole CPU seconds per process (RLIMIT_CPU counts whole seconds); a program over it is a "
                   "RESOURCE LIMIT [default: 4x the case's timeout, at least 10 s].")
@click.option("--max-program-mib", "program_mb", type=click.IntRange(min=1), default=64, show_default=True,
              help="The largest program judged, in MiB (its one read-only copy is linked into every run).")
@click.option("--sandbox-bind", "binds", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="A folder the program may read (a CUDA toolkit outside /usr, say); repeatable.")
@click.option("--fresh-inputs/--suite-inputs", "fresh_inputs", default=None,
              help="Judge on inputs drawn anew (each case in its shape and distribution, from a secret seed saved "
                   "with the results), or on the suite's public ones [default: fresh for a class, the suite's "
                   "for one program].")
@click.option("--kernel-time", is_flag=True,
              help="Record each passed case's kernels (CUPTI, in a second, untimed run in the sandbox) beside its "
                   "process time. The program could forge them; the judged run and its verdict never use them.")
@click.option("--rank-by", type=click.Choice(["wall", "kernel"]), default="wall", show_default=True,
              help="A class: rank by the course's wall clock, or by kernel time (records it; see --kernel-time).")
@click.option("--rerun-top", type=click.IntRange(min=0), default=3, show_default=True,
              help="A class: rerun this many top submissions (median of 3 runs per case) before ranks are final.")
@click.option("--gpus", default=None, help="A class: spread the cases over this host's GPUs (all, or 0,1).")
@click.option("--build-timeout", type=click.FloatRange(min=0, min_open=True, max=api_programs.MAX_WAIT_S), default=300.0,
              show_default=True,
              callback=finite,
              help="A class: seconds a submission's build may take.")
@click.option("--arch", default=None, metavar="ARCH",
              help="Build every submission for this GPU architecture (sm_90, native, ...), appended to its Makefile's "
                   "flags [default: the judging GPU's, appended only when nvcc refuses the Makefile's own].")
@click.option("--build-command", default=None, metavar="LINE",
              help="Build each submission with this shell line in its folder instead of the course's steps "
                   "(make hw4, then the example Makefile's flags), e.g. \"make hw4 NVFLAGS='-O3 -arch=sm_90'\".")
@click.option("--diagnose", is_flag=True,
              help="Run each failed case once more under compute-sanitizer (where installed) and add its first "
                   "error, with the source line, to the case's message.")
@click.option("--executor", type=click.Choice(EXECUTOR_OPTIONS), default="local", show_default=True,
              help="A class: slurm runs each submission as a Slurm job (needs submitit).")
@click.option("--partition", default=None, help="Slurm partition, e.g. nvidia.")
@click.option("--gres", default=None, help="Slurm generic resources per job, e.g. gpu:1.")
@click.option("--time", "time_min", type=click.IntRange(min=1), default=30, show_default=True,
              help="Each Slurm job's limit in minutes.")
@click.option("--resume", "resume_folder", default=None, type=click.Path(exists=True, file_okay=False),
              help="A class: finish a Slurm run from its jobs folder (attnbench-results/slurm/<date>_<time>).")
@click.option("--history", "history_folder", default=None, type=click.Path(file_okay=False, exists=True),
              help="Show a class's history instead of judging: every scoreboard saved in this results folder, per "
                   "submission its best and latest run.")
@click.option("--html", "with_html", is_flag=True, help="A class: save a one-file HTML page of the scoreboard too.")
@click.option("--results-dir", default=DEFAULT_RESULTS_DIR, show_default=True, type=click.Path(file_okay=False),
              help="Folder for the saved JSON, CSV and Markdown.")
@click.option("--name", default=None, callback=file_stem, help="File stem for the saved results [default: date_judge_cpu_cases].")
@click.option("--no-save", is_flag=True, help="Do not save the results.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the results as JSON on standard output (the records of the saved JSON file); the tables "
                   "and notes go to standard error.")
def judge(programs: tuple[str, ...], case_selector: str, launcher: str | None, limits_spec: str, args_template: str,
          timeout: float | None, sandbox_mode: str, max_processes: int, memory_mb: int | None, cpu_s: int | None,
          program_mb: int, binds: tuple[str, ...], rerun_top: int, gpus: str | None, build_timeout: float,
          arch: str | None, build_command: str | None, diagnose: bool, executor: str, partition: str | None,
          gres: str | None, time_min: int, resume_folder: str | None, with_html: bool, results_dir: str,
          name: str | None, no_save: bool, fresh_inputs: bool | None, history_folder: str | None,
          as_json: bool, kernel_time: bool, rank_by: str) -> None:
    """Judge whole programs as the course does: run PROGRAM IN OUT per case, time it, check it.

    One executable (or one .cu or .c file, built first) is judged case by case. Several, or a folder of
    submissions (each a folder with a Makefile, hw4.cu or hw4, or a .cu or .c file, or an executable),
    are a class: each is built in the sandbox (a failed build, or a submission holding a link, is one
    row), judged on the same fresh inputs (drawn from secret seeds, saved with the scoreboard), and ranked
    on a scoreboard (passed cases first, then the total time of the passed cases; totals within 2% tie;
    the top --rerun-top are rerun on fresh inputs again, median of 3, before ranks are final; GPU kinds
    are ranked apart). The scoreboard is saved as JSON, CSV and Markdown (--html adds a one-file page
    with the class's history; --history DIR shows it).

    Each case runs in a fresh case folder holding its own copy of the input, inside a bubblewrap
    sandbox (no suite folder, no other case, no network, its own PID namespace; the GPU's device
    nodes are there), under limits on output size (4x the output), processes, CPU time and, if asked,
    memory. When the program ends or its time is up, every process it started is killed. With
    --launcher, the launcher wraps the sandbox, which wraps the program. It is timed by the wall
    clock from launch to exit (the whole process, not a kernel). The output must be within 5e-3 of
    the float64 reference in every element. A crash, a hang (killed at --timeout), a resource limit
    hit, no output file (or one that is a link), a wrong size, NaN, or a time over the limit: each
    gets its own row. Without bubblewrap (or user namespaces) one program is still judged, with one
    warning line, its own input copy, the limits, and the kill of every process it started; a class is
    not, unless --sandbox none says so. The course's limits belong to a GTX 1080; on another machine
    read them as a guide.

    Exit status: 0 when every case passed (a class: once the scoreboard is made, whatever its verdicts; one
    submission's own folder judged alone is one program here),
    1 when any failed, 2 for a bad program or option,
    3 when the launcher is missing or --sandbox required cannot be met, a CUDA program is to run on a host
    without an NVIDIA GPU (one program: nothing runs; a class: those rows are NOT JUDGED, the rest judged),
    or an error of the judge's own stopped a class or lost one of its rerun rounds (the scoreboard is saved,
    seeds and all), 130 when interrupted (what was judged is still saved).

    \b
    Examples:
      attnbench judge ./hw4 --cases t01-t10
      attnbench judge ./hw4 --cases t01-t30 --launcher "srun -p nvidia -N1 -n1 --gres=gpu:1"
      attnbench judge ./attention --cases odd --time-limits none --args "-i {in} -o {out}"
      attnbench judge ./hw4 --cases t01-t03 --sandbox required --sandbox-bind /opt/cuda
      attnbench judge submissions/ --cases t01-t10 --gpus all
      attnbench judge submissions/ --cases t01-t10 --executor slurm --partition nvidia --gres gpu:1
    """
    if history_folder is not None:
        _refuse_beside_history(click.get_current_context())
        _show_history(history_folder)
        return
    refuse_what_would_be_ignored(click.get_current_context())
    if not no_save:
        check_results_folder(results_dir)  # before the first case, not after the last
    sandbox = api_programs.SandboxSettings(sandbox_mode, max_processes, memory_mb, cpu_s, tuple(Path(b) for b in binds),
                                           program_mb)
    options = api_programs.JudgeOptions(
        programs=programs, cases=case_selector, launcher=launcher, time_limits=limits_spec, args=args_template,
        timeout=timeout, sandbox=sandbox, rerun_top=rerun_top, gpus=gpus, build_timeout=build_timeout,
        executor=executor, slurm=api_programs.SlurmOptions(partition, gres, time_min), resume=resume_folder,
        results_dir=results_dir, command=command_line(), fresh_inputs=fresh_inputs, arch=arch,
        build_command=build_command, diagnose=diagnose, kernel_time=kernel_time, rank_by=rank_by)
    if options.judges_a_class:
        _judge_class(options, with_html, name, no_save, as_json)
    elif with_html:  # it was ignored without a word
        raise click.UsageError("--html saves a class's scoreboard as a page; one program's results are saved as "
                               "JSON, CSV and Markdown")
    else:
        _judge_program(options, name, no_save, as_json)


def _refuse_beside_history(ctx: click.Context) -> None:
    """--history shows saved scoreboards and judges nothing: a program or an option given with it would be
    ignored, so it is refused."""
    given = [param for param in ctx.command.params if param.name != "history_folder"
             and ctx.get_parameter_source(param.name) not in (click.core.ParameterSource.DEFAULT, None)]
    if given:
        words = ", ".join("PROGRAM" if not param.opts[0].startswith("-") else param.opts[0] for param in given)
        raise click.UsageError(f"--history shows a class's saved scoreboards and judges nothing: {words} would be "
                               "ignored; give --history FOLDER alone")


def _show_history(folder: str) -> None:
    past = api_programs.class_history(folder)
    if not past:
        inner = Path(folder) / DEFAULT_RESULTS_DIR  # the class's folder given, where `judge .` saved its runs
        hint = (f"; its {DEFAULT_RESULTS_DIR} folder holds the class's: attnbench judge --history {inner}"
                if inner.is_dir() and api_programs.class_history(str(inner)) else "")
        console.print(printable(f"{folder}: no saved scoreboard{hint}"), highlight=False, markup=False, soft_wrap=True)
        return
    print_table(history_model(past, f"history of {counted(len(past), 'submission')} in {printable(folder)}"))
    left_out = api_programs.class_runs_on_other_cases(folder)
    if left_out:
        notice(f"{counted(left_out, 'saved run')} on other cases than the latest run's {'is' if left_out == 1 else 'are'} "
               "not in this history (runs are compared on the same cases only)")


def _say_confinement(confinement: api_programs.Confinement) -> None:
    line = confinement.warning()
    if line:
        err_console.print(printable(f"warning: {line}"), highlight=False, markup=False, soft_wrap=True)
    for note in confinement.limit_notes:
        err_console.print(printable(f"limit not applied: {note}"), highlight=False, markup=False, soft_wrap=True)


def _judge_program(options: api_programs.JudgeOptions, name: str | None, no_save: bool, as_json: bool) -> None:
    """One program, case by case: print its table and summary, save it, exit with its status. With `as_json`
    standard output carries only the results' JSON."""
    judgement, result = api_programs.judge_program(options, progress=progress_bar, listener=judge_progress,
                                                   opened=_say_confinement, notice=notice)
    prog = judgement.program
    where = f" via {' '.join(prog.launcher)}" if prog.launcher else ""
    out = err_console if as_json else console
    print_table(scoreboard_table(result, f"judge {prog.label}{where}"), err=as_json)
    print_prose(f"times: {result.policy['timing']}; limits: {result.settings.time_limits}", out)
    public = [case.info.label for case in judgement.cases if case.info.origin == "suite"]
    if public:  # a program that carries their answers passes them unseen (red team 28): said, not hidden
        print_prose(f"inputs: the suite's public {', '.join(public[:6])}{' and more' if len(public) > 6 else ''}: "
                    "a program can carry their answers; --fresh-inputs judges it on inputs drawn anew", out)
    out.print(judgement.summary(), highlight=False)
    if cost_line(judgement.cost):
        print_prose(cost_line(judgement.cost), out)
    if not no_save and judgement.judged:
        selector = options.cases if "," not in options.cases else None
        for path in save(result, options.results_dir, name, selector):
            out.print(printable(f"saved {path}"), highlight=False, markup=False, soft_wrap=True)  # --results-dir is the user's
    if as_json:
        click.echo(result_json(result))
    if judgement.interrupted:
        notice("interrupted; the running program was killed")
    sys.exit(judgement.exit_status)


def _judge_class(options: api_programs.JudgeOptions, with_html: bool, name: str | None, no_save: bool,
                 as_json: bool) -> None:
    """A class: build, judge, rank, rerun the top; print the scoreboard and save it (row by row as it is judged).
    With `as_json` standard output carries only the scoreboard's JSON."""
    if with_html and not no_save and Path(options.results_dir).is_dir():  # the page shows the folder's history: a
        # damaged or newer scoreboard there is said before the class is judged, not after its files are saved
        api_programs.class_history(options.results_dir)
    # a resumed class's cases are its record's, not --cases (whose default named a resumed odd class "course")
    selector = options.cases if options.resume is None else ","
    saver = RowByRow(options.results_dir, lambda board: name or class_stem(board, selector), with_html)
    board = api_programs.judge_submissions(options, progress=progress_bar, listener=judge_progress, notice=notice,
                                           checkpoint=None if no_save or options.resume else saver)
    out = err_console if as_json else console
    if board.settings.get("confinement_warning"):
        err_console.print(f"warning: {board.settings['confinement_warning']}", highlight=False, markup=False,
                          soft_wrap=True)
    whole = print_table(scoreboard_model(board, f"scoreboard: {counted(len(board.rows), 'submission')}, "
                                                f"{counted(len(board.cases), 'case')}"), err=as_json)
    for line in ([] if whole else ranked_note_lines(board)) + scoreboard_lines(board, notes_shown=whole):
        print_prose(line, out)
    if cost_line(board.cost):
        print_prose(cost_line(board.cost), out)
    saved = not no_save and bool(board.rows or saver.paths)
    if saved:
        for path in saver.finish(board):
            out.print(printable(f"saved {path}"), highlight=False, markup=False, soft_wrap=True)  # --results-dir is the user's
    if as_json:
        click.echo(board.to_json())
    # it said "saved" either way, and "what was judged is saved" when a Ctrl-C during the builds left nothing
    kept = ("nothing is saved (--no-save)" if no_save else "what was judged is saved" if saved
            else "no submission was judged yet, so nothing is saved")
    for lost, why in board.settings.get("lost_rounds", {}).items():  # the judge's own failure: ranks stand, exit 3
        error_line(f"{lost} was not run: {why}; its rows are ranked by the runs before it; "
                   f"{'nothing is saved (--no-save)' if no_save else 'the scoreboard is saved'}")
    if board.settings.get("lost_rounds") and not board.interrupted:
        sys.exit(3)
    if board.settings.get("stopped_by"):  # the judge's own failure, not a submission's
        error_line(f"the class stopped: {board.settings['stopped_by']}; {kept}")
        sys.exit(3)
    if board.interrupted:
        notice(f"interrupted; {kept}")
        sys.exit(130)
    unjudged = [row for row in board.rows if row.not_judged]
    if unjudged:  # the host's fault, not the programs': their rows are neither passed nor failed
        without_gpu = [row for row in unjudged if row.built]
        unbuilt = [row for row in unjudged if not row.built]  # a header this host's toolkit lacks
        if without_gpu:
            error_line(f"{counted(len(without_gpu), 'CUDA program')} not judged: {board.settings['not_judged_here']}; "
                       "judge them on a machine with a GPU (or --executor slurm)")
        if unbuilt:
            error_line(f"{counted(len(unbuilt), 'submission')} not judged ({', '.join(r.name for r in unbuilt[:3])}"
                       f"{', ...' if unbuilt[3:] else ''}): {unbuilt[0].not_judged}; install that library's "
                       "development files and judge them again")
        sys.exit(3)
    judge_errors = api_programs.judge_errors(board)
    if judge_errors:  # the judge's own failure (Slurm jobs gone without a result, say): every case of the class
        # a JUDGE ERROR exited 0, as if the scoreboard were the class's
        name, case, why = judge_errors[0]
        error_line(f"{counted(len(judge_errors), 'case')} not judged, the judge's own error (first: {name} {case}: "
                   f"{why}); {'nothing is saved (--no-save)' if no_save else 'the scoreboard is saved'}: judge "
                   "the class again")
        sys.exit(3)
    alone = api_programs.one_submission_exit(options.programs, board)
    if alone == 2:
        error_line(f"{board.rows[0].name}: {board.rows[0].build_message}: attnbench judges CUDA and C programs")
    if alone:
        sys.exit(alone)


@click.command()
@click.argument("name")
@click.option("--dir", "folder", default=".", show_default=True, type=click.Path(file_okay=False),
              help="Where to write NAME.cu and attnbench.toml.")
def new(name: str, folder: str) -> None:
    """Write a starting kernel NAME.cu and its launch facts in attnbench.toml; never overwrites.

    The kernel is simple and correct (one thread per query row, online softmax, separate q, k, v
    pointers, any N, d up to 128) and passes --check; make it fast from there. With an existing
    attnbench.toml, its [variants.NAME] table is added at the end.

    \b
    Example:
      attnbench new mine && attnbench run t02 out.bin --variant mine --check
    """
    files = api_programs.new_kernel(name, folder)
    # --dir is the user's text: a name holding ESC reached the terminal raw
    console.print(printable(f"wrote {files.kernel}"), highlight=False, markup=False)
    action = f"added [variants.{name}] to" if files.appended else "wrote"
    console.print(printable(f"{action} {files.config}"), highlight=False, markup=False)
    console.print(printable(f"next: {api_programs.next_step(name, files)}"), highlight=False, markup=False)


COMMANDS = (judge, new)
