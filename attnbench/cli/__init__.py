"""The command line: click only. Each command parses its options, calls `attnbench.api` and renders
what it returns with `attnbench.output`; expected failures become one sentence and an exit code.

Exit codes, for every command: 0 success; 1 a verification failure, a wrong, impossible or suspect cell or a regression;
2 bad usage or bad input; 3 the environment (no GPU, pycuda or nvcc; out of memory); 130 interrupted.
"""

from __future__ import annotations

import _thread
import os
import signal
import sys
import threading

import click
from rich.markup import escape

from attnbench.errors import classify
from attnbench.host_threads import refuse_a_bad_share
from attnbench.output.render.terminal import err_console, printable
from attnbench.version import __version__

EXIT_CODES_HELP = ("Exit codes: 0 success; 1 a verification failure, a wrong, impossible or suspect cell or a "
                   "regression; 2 bad usage or bad input; 3 the environment (no GPU, pycuda or nvcc; out of memory); "
                   "130 interrupted.")


def _error(message: str) -> None:
    err_console.print(f"[red]error:[/red] {escape(printable(message))}", highlight=False, soft_wrap=True)


def _text_streams_never_fail() -> None:
    """A path that is not UTF-8 reaches the output as stand-in characters that strict encoding refuses:
    write them as escapes (`\\udcff`) instead of ending in a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a stream already closed or detached: nothing to mend
                pass


def _ctrl_c_raises() -> None:
    """Hand Ctrl-C back to Python (`python -m attnbench` answered it with an exit while importing), so a
    command's own handling runs: partial results saved, no half-written file left. SIGTERM (a `timeout`, a
    Slurm job's end, a TA's kill) is handled as Ctrl-C is: by default it ended the process at once, and a
    class's fresh inputs (6 GB for the course) and folders stayed in the temporary folder. SIGHUP (the TA's
    terminal or ssh session closed) likewise: by default it ended a class judge with exit 129, no word, nothing
    saved, and its rooms left mounted. A SIGHUP ignored already (`nohup attnbench ...`) stays ignored."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _terminated)
        if signal.getsignal(signal.SIGHUP) != signal.SIG_IGN:
            signal.signal(signal.SIGHUP, _terminated)
    if not getattr(sys.unraisablehook, "raises_interruptions_again", False):
        sys.unraisablehook = _interruption_raised_again(sys.unraisablehook)


def _interruption_raised_again(previous):  # type: ignore[no-untyped-def]
    """An interruption that came while Python ran code that cannot raise (an at-fork callback, as logging's
    after every fork of a program's run; a __del__) was printed as "Exception ignored in ..." with a traceback
    and lost: a SIGTERM to a class judge was ignored, which ran on to its end and exited 0. It is raised again,
    a moment later, in the main thread's ordinary code (Python's own simulated Ctrl-C, so no signal is lost if
    that moment falls in such code again: it comes back here)."""
    def hook(unraisable) -> None:  # type: ignore[no-untyped-def]
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            again = threading.Timer(0.05, _thread.interrupt_main)
            again.daemon = True
            again.start()
            return
        previous(unraisable)

    hook.raises_interruptions_again = True  # type: ignore[attr-defined]
    return hook


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _visible_options(command: click.Command) -> set[str]:
    return {name for param in command.params if not getattr(param, "hidden", False)
            for name in (*param.opts, *param.secondary_opts)}


def _usage_error(exc: click.UsageError) -> None:
    """A usage error as git writes one: the error on one line, then where the help is. Exit 2. No command at all
    is no error to squeeze into a line: the help is shown as --help shows it (exit 2, as git does)."""
    no_command = getattr(click.exceptions, "NoArgsIsHelpError", ())  # click 8.2 on
    if isinstance(exc, no_command) and exc.ctx is not None:
        click.echo(exc.ctx.get_help(), err=True)
        raise click.exceptions.Exit(2)
    if isinstance(exc, click.NoSuchOption) and exc.ctx is not None:  # never suggest a hidden option
        exc.possibilities = sorted(set(exc.possibilities or ()) & _visible_options(exc.ctx.command))
    where = exc.ctx.command_path if exc.ctx is not None else "attnbench"
    _error(" ".join(exc.format_message().split()))
    err_console.print(f"see '{where} --help'", highlight=False, markup=False, soft_wrap=True)
    raise click.exceptions.Exit(2)


def _reader_left() -> None:
    """The reader of stdout closed it (`| head -1`): what it did not read is not wanted, and that is
    no failure. Later writes (the interpreter's last flush) go to /dev/null, as Python's docs advise."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _flush_stdout() -> None:
    """Flush now, so a reader that stopped early (`| head -1`) shows here and not as a traceback at exit."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _reader_left()


def _closed_streams_go_nowhere() -> None:
    """A command started with stdout or stderr closed (`>&-`) writes what it prints to /dev/null instead of
    failing on it; the null device also takes the descriptor, so no file the command opens lands on it."""
    for name, fd in (("stdout", 1), ("stderr", 2)):
        if getattr(sys, name) is None:
            devnull = os.open(os.devnull, os.O_WRONLY)
            if devnull != fd:
                os.dup2(devnull, fd)
                os.close(devnull)
            setattr(sys, name, open(fd, "w", closefd=False))


def _empty(value: object) -> bool:
    values = value if isinstance(value, (list, tuple)) else [value]
    return any(isinstance(v, str) and not v.strip() for v in values)


# options that take a suite case or a file, though not a click.Path (a case's name is no path): empty, `info
# --case ""` fell back to the default case with exit 0, `verify --case ""` and `judge --time-limits ""` read "."
_NAMES_A_CASE_OR_FILE = frozenset({"case", "case_selector", "limits_spec"})


def _refuse_repeated_or_empty(ctx: click.Context, name: str, command: click.Command, args: list[str]) -> None:
    """An option that takes one value, given twice (`run --reps 5 --reps 50`, `judge --cases t01 --cases t02`), is
    refused in one line, as `once` refuses --variant: click would keep the last silently. Flags and options that
    take several values (`--sandbox-bind`) may repeat. An empty argument or path (`run "" o.bin`, an unset
    variable) is refused too: as a path it is the current folder (`judge ""` judged it as a class)."""
    probe = click.Context(command, info_name=name, parent=ctx, resilient_parsing=True)
    try:
        opts, _, order = command.make_parser(probe).parse_args(args=list(args))
    except click.UsageError:
        return  # the command's own parse says what is wrong
    for param in command.params:
        takes_a_path = (isinstance(param, click.Argument) or isinstance(param.type, click.Path)
                        or param.name in _NAMES_A_CASE_OR_FILE)
        if takes_a_path and param.name in opts and _empty(opts[param.name]):
            what = param.human_readable_name if isinstance(param, click.Argument) else max(param.opts, key=len)
            raise click.UsageError(f'{what} is empty (""): give a name or a path', ctx=probe)
    seen: dict[click.Option, int] = {}
    for param in order:
        if isinstance(param, click.Option) and not (param.multiple or param.count or param.is_flag):
            seen[param] = seen.get(param, 0) + 1
    for param, times in seen.items():
        if times > 1:
            long_name = max(param.opts, key=len)
            raise click.UsageError(f"{long_name} given {times} times; give it once", ctx=probe)


class AttnbenchGroup(click.Group):
    """Turns expected failures into one sentence and an exit code (`errors.classify`), never a traceback;
    usage errors into one line and a pointer to --help, instead of click's usage block."""

    def main(self, *args, **kwargs):  # type: ignore[no-untyped-def, override]
        _closed_streams_go_nowhere()
        _text_streams_never_fail()
        return super().main(*args, **kwargs)

    def make_context(self, info_name, args, parent=None, **extra):  # type: ignore[no-untyped-def, override]
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            _usage_error(exc)
        except BrokenPipeError:  # `attnbench --help | head -0`: click's own answer was a silent exit 1
            _reader_left()
            raise click.exceptions.Exit(0) from None

    def resolve_command(self, ctx: click.Context, args: list[str]):  # type: ignore[no-untyped-def, override]
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None and name is not None and not ctx.resilient_parsing:
            _refuse_repeated_or_empty(ctx, name, command, rest)
        return name, command, rest

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        _ctrl_c_raises()
        try:
            try:
                refuse_a_bad_share()
                outcome = super().invoke(ctx)
            except SystemExit:  # a command's own exit status stands, whoever reads its output
                _flush_stdout()
                raise
            _flush_stdout()
            return outcome
        except click.UsageError as exc:
            _usage_error(exc)
        except BrokenPipeError:
            _reader_left()
            ctx.exit(0)
        except (Exception, KeyboardInterrupt) as exc:
            failure = classify(exc)
            if failure is None:
                raise
            if failure.error:
                _error(failure.line)
            else:
                err_console.print(failure.line)
            ctx.exit(failure.exit_code)


@click.group(cls=AttnbenchGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES_HELP)
@click.version_option(__version__, "--version", "-V", prog_name="attnbench")
def main() -> None:
    """Run, verify, time and compare CUDA attention kernels on course-style testcases.

    \b
    Example:
      attnbench run t29 out.bin --variant bankfree --check
    """


from attnbench.cli import judge_commands, matrix_commands, profile_commands, single_commands  # noqa: E402

for _command in (*single_commands.COMMANDS, *matrix_commands.COMMANDS, *profile_commands.COMMANDS,
                 *judge_commands.COMMANDS):
    if "130" not in (_command.help or "") and not _command.epilog:
        _command.epilog = EXIT_CODES_HELP  # every --help carries the exit codes, said once here
    main.add_command(_command)
