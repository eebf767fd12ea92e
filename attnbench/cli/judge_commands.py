"""The commands for the user's own code: `judge` (whole programs, as the course judges them) and `new`."""

from __future__ import annotations

import sys

import click

from attnbench.api import programs as api_programs
from attnbench.cli.options import command_line, notice
from attnbench.locations import data_dir
from attnbench.output.save import save
from attnbench.output.tables import format_s, scoreboard_table
from attnbench.output.terminal import console, err_console, print_table, progress_bar


@click.command()
@click.argument("program")
@click.option("--cases", "-c", "case_selector", default="course", show_default=True,
              help="Suite names, groups, ranges (t01-t10) or input files, comma separated.")
@click.option("--launcher", default=None,
              help='Words put before the program, e.g. "srun -p nvidia -N1 -n1 --gres=gpu:1".')
@click.option("--time-limits", "limits_spec", default="course", show_default=True,
              help="course (2/6/10 s, set for a GTX 1080), none, or a TOML file of `case = seconds` lines.")
@click.option("--args", "args_template", default="{in} {out}", show_default=True,
              help="How the program takes its files; {in} and {out} are replaced by their paths.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Kill a case after this many seconds [default: twice its limit; 300 s without one].")
@click.option("--results-dir", default="results", show_default=True, type=click.Path(file_okay=False),
              help="Folder for the saved JSON, CSV and Markdown.")
@click.option("--name", default=None, help="File stem for the saved results [default: date_judge_cpu_cases].")
@click.option("--no-save", is_flag=True, help="Do not save the results.")
def judge(program: str, case_selector: str, launcher: str | None, limits_spec: str, args_template: str,
          timeout: float | None, results_dir: str, name: str | None, no_save: bool) -> None:
    """Judge a whole program as the course does: run PROGRAM IN OUT per case, time it, check it.

    Each case runs in a fresh temporary folder, in its own process group, and is timed by the wall
    clock from launch to exit (the whole process, not a kernel). The output must be within 5e-3 of
    the float64 reference in every element. A crash, a hang (killed at --timeout), no output file, a
    wrong size, NaN, or a time over the limit: each gets its own row. The course's limits belong to
    a GTX 1080; on another machine read them as a guide.

    Exit status: 0 when every case passed, 1 when any failed, 2 for a bad program or option,
    3 when the launcher is missing, 130 when interrupted (what was judged is still saved).

    \b
    Examples:
      attnbench judge ./hw4 --cases t01-t10
      attnbench judge ./hw4 --cases t01-t30 --launcher "srun -p nvidia -N1 -n1 --gres=gpu:1"
      attnbench judge ./attention --cases odd --time-limits none --args "-i {in} -o {out}"
    """
    pending = api_programs.judge_writes(case_selector)
    if pending:  # all 30 course cases take about 12 GB: say so before writing any
        notice(f"the cases not generated yet take {pending / 1e9:.1f} GB (inputs and float64 references) in "
               f"{data_dir()}; --cases limits them (e.g. --cases t01-t10)")

    def finished(index: int, total: int, judged) -> None:
        err_console.print(f"[{index}/{total}] {judged.label}: {judged.verdict} {format_s(judged.wall_s)}",
                          highlight=False, markup=False)

    judgement, result = api_programs.judge(program, case_selector, launcher=launcher, time_limits=limits_spec,
                                           args=args_template, timeout=timeout, progress=progress_bar,
                                           finished=finished, command=command_line())
    prog = judgement.program
    where = f" via {' '.join(prog.launcher)}" if prog.launcher else ""
    print_table(scoreboard_table(result, f"judge {prog.label}{where}"))
    console.print(f"times: {result.policy['timing']}; limits: {result.settings['time_limits']}", highlight=False,
                  soft_wrap=True)
    console.print(judgement.summary(), highlight=False)
    if not no_save and judgement.judged:
        for path in save(result, results_dir, name, case_selector if "," not in case_selector else None):
            console.print(f"saved {path}", highlight=False, soft_wrap=True)
    if judgement.interrupted:
        notice("interrupted; the running program was killed")
    sys.exit(judgement.exit_status)


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
    console.print(f"wrote {files.kernel}", highlight=False, markup=False)
    action = f"added [variants.{name}] to" if files.appended else "wrote"
    console.print(f"{action} {files.config}", highlight=False, markup=False)
    console.print(f"next: attnbench run t02 out.bin --variant {name} --check", highlight=False, markup=False)


COMMANDS = (judge, new)
