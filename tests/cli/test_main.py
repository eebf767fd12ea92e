"""The command group (attnbench/cli/__init__.py): help, usage errors, exit codes, a reader that leaves early."""

import pytest
from click.testing import CliRunner

from attnbench.cli import main


def test_every_command_has_an_example_in_its_help(cli):
    for name in main.commands:
        result = cli(name, "--help")
        assert result.exit_code == 0
        assert "Example" in result.output, name


@pytest.mark.parametrize("args, where", [
    (["run", "t02"], "attnbench run"),
    (["run", "t02", "o.bin", "--reps", "0"], "attnbench run"),
    (["run", "t02", "o.bin", "--atol", "nan"], "attnbench run"),
    (["compare", "--json"], "attnbench compare"),
    (["nosuch"], "attnbench"),
])
def test_a_usage_error_is_one_line_then_where_the_help_is(args, where):
    result = CliRunner().invoke(main, args, prog_name="attnbench")
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1] == f"see '{where} --help'", result.output
    assert "Usage:" not in result.output and "--job-seconds" not in result.output


def test_every_commands_help_lists_the_exit_codes():
    for name in main.commands:
        result = CliRunner().invoke(main, [name, "--help"], terminal_width=100)
        said = " ".join(result.output.split())
        assert result.exit_code == 0 and "130" in said and " 3 " in said, name


@pytest.mark.parametrize("args", [["cases", "all", "--wide"], ["run", "odd_17x48", "{tmp}/o.bin", "-v", "cpu", "--json"],
                                  ["--help"], ["-V"], ["run", "--help"]])
def test_a_reader_that_stops_early_is_no_failure(args, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    import attnbench

    root = Path(attnbench.__file__).resolve().parents[1]
    command = [sys.executable, "-m", "attnbench", *[a.replace("{tmp}", str(tmp_path)) for a in args]]
    process = subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # as `| head -0` would
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr.decode()


def test_no_command_shows_the_help_as_help_not_as_one_error_line():
    result = CliRunner().invoke(main, [], prog_name="attnbench")
    assert result.exit_code in (0, 2)
    assert "error:" not in result.output and "Commands:" in result.output.splitlines(), result.output


@pytest.mark.parametrize("option", ["--reps", "--warmup"])  # --warmup 99999999999 ran on without end
def test_a_sample_or_warm_up_count_that_would_run_forever_is_refused(option):
    result = CliRunner().invoke(main, ["run", "t02", "o.bin", option, "99999999999"], prog_name="attnbench")
    assert result.exit_code == 2 and option in result.output


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGHUP"])
def test_a_sigterm_is_an_interruption_that_leaves_no_temporary_folder(tmp_path, signal_name):
    """A SIGTERM ended a class judge at once, leaving its fresh inputs (6 GB for the course) and folders behind. So
    did a SIGHUP (the TA's terminal closed), with exit 129, no word, and its rooms left mounted."""
    import os
    import shutil
    import signal
    import subprocess
    import sys
    import time

    import pytest

    if shutil.which("cc") is None:
        pytest.skip("needs cc")
    from tests.judge.classes import CLASS_MODE, wrapping

    (tmp_path / "class").mkdir()
    for name in ("ann", "bob"):
        (tmp_path / "class" / f"{name}.c").write_text(wrapping("", "sleep(20);"))
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    process = subprocess.Popen([sys.executable, "-m", "attnbench", "judge", str(tmp_path / "class"), "--cases",
                                "odd_17x48", "--time-limits", "none", "--sandbox", CLASS_MODE, "--no-save"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(p.name.startswith("attnbench-fresh-") for p in temp.iterdir()):
        time.sleep(0.2)
    time.sleep(1.5)  # a program is running now
    process.send_signal(getattr(signal, signal_name))
    output = process.communicate(timeout=60)[0].decode()
    assert process.returncode == 130, output
    assert not [p.name for p in temp.iterdir() if p.name.startswith("attnbench-")], output


def test_a_sigterm_while_the_command_line_is_imported_is_an_interruption_too():
    """`timeout -s TERM 0.4 attnbench cases` (the imports take a second on a busy machine) ended with no word and
    exit 143; a Ctrl-C there was already "interrupted", 130."""
    import subprocess
    import sys

    started = ("from attnbench.__main__ import answer_interruptions_while_starting as answer; import os, signal, time; "
               "answer(); os.kill(os.getpid(), signal.SIGTERM); time.sleep(30)")
    done = subprocess.run([sys.executable, "-c", started], capture_output=True, text=True, timeout=60)
    assert done.returncode == 130 and done.stderr == "interrupted\n"


def test_a_sighup_while_the_command_line_is_imported_is_an_interruption_too():
    """A closed terminal's SIGHUP within the imports ended the process with no word and exit 129."""
    import subprocess
    import sys

    started = ("from attnbench.__main__ import answer_interruptions_while_starting as answer; import os, signal, time; "
               "answer(); os.kill(os.getpid(), signal.SIGHUP); time.sleep(30)")
    done = subprocess.run([sys.executable, "-c", started], capture_output=True, text=True, timeout=60)
    assert done.returncode == 130 and done.stderr == "interrupted\n"


def test_a_sighup_ignored_by_nohup_stays_ignored():
    """`nohup attnbench judge ...` must outlive the terminal: answering SIGHUP as an interruption must not undo
    the nohup."""
    import signal
    import subprocess
    import sys

    started = ("from attnbench.__main__ import answer_interruptions_while_starting as answer; import os, signal; "
               "answer(); from attnbench.cli import _ctrl_c_raises; _ctrl_c_raises(); "
               "os.kill(os.getpid(), signal.SIGHUP); print('still here')")
    done = subprocess.run([sys.executable, "-c", started], capture_output=True, text=True, timeout=60,
                          preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    assert done.returncode == 0 and done.stdout == "still here\n", done.stderr


def test_an_interruption_that_lands_in_an_at_fork_callback_is_not_lost():
    """A SIGTERM to a class judge that came while logging's after-fork callback ran (each program's run forks)
    was printed as "Exception ignored in: <function _releaseLock>" with a traceback, and lost: the class ran
    to its end and exited 0."""
    import subprocess
    import sys

    started = ("from attnbench.cli import _ctrl_c_raises; import os, time\n"
               "_ctrl_c_raises()\n"
               "def interrupted_now():\n    raise KeyboardInterrupt\n"
               "os.register_at_fork(after_in_parent=interrupted_now)\n"
               "try:\n    pid = os.fork()\n    if pid == 0:\n        os._exit(0)\n    os.waitpid(pid, 0)\n"
               "    end = time.monotonic() + 20\n"
               "    while time.monotonic() < end:\n        pass\n    print('ran on')\n"
               "except KeyboardInterrupt:\n    print('interrupted')\n")
    done = subprocess.run([sys.executable, "-c", started], capture_output=True, text=True, timeout=60)
    assert done.stdout == "interrupted\n" and "Exception ignored" not in done.stderr, done.stderr
