"""`python -m attnbench` and the `attnbench` command.

Ctrl-C (and SIGTERM, SIGHUP) is answered from the first instant: the imports behind the command line take a second or more
(numpy, rich, the kernel catalogue), and Python's own answer to a Ctrl-C then is a long traceback. Until
the command starts, a Ctrl-C or SIGTERM ends the process with one line and exit 130 (nothing has been written yet);
the command line then hands Ctrl-C back to Python, where its own handling saves what was measured.
"""

import os
import signal


def _interrupted_while_starting(signum: int, frame: object) -> None:
    os.write(2, b"interrupted\n")
    os._exit(130)


def answer_interruptions_while_starting() -> None:
    """Ctrl-C, SIGTERM (a `timeout`, a TA's kill) and SIGHUP (the terminal closed): a SIGTERM within the imports
    ended the process with no word and exit 143, where the command's own SIGTERM is an interruption (130)."""
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if number != signal.SIGHUP or signal.getsignal(number) != signal.SIG_IGN:  # `nohup attnbench ...` stays so
            signal.signal(number, _interrupted_while_starting)


def entry() -> None:
    """The console entry point: the Ctrl-C answer first, then the (slow) imports, then the command."""
    answer_interruptions_while_starting()
    from attnbench.host_threads import one_allocator_arena

    one_allocator_arena()  # before any thread: the imports' own (BLAS) and ours
    from attnbench.errors import AttnbenchError

    try:
        from attnbench.cli import main
    except AttnbenchError as exc:  # read while importing (the suite's manifest): one line, as any failure
        os.write(2, f"error: {exc}\n".encode("utf-8", "backslashreplace"))
        raise SystemExit(exc.exit_code) from None

    main(prog_name="attnbench")  # one name for completion (_ATTNBENCH_COMPLETE) and messages, however started


if __name__ == "__main__":
    entry()
