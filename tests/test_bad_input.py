"""The bad-input corpus: for every command, each bad input gets its exit code, one line naming the path
the user gave, and no file created, replaced or destroyed."""

from __future__ import annotations

import os
import stat
import struct
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from attnbench.cases import suite
from attnbench.cli import main

ODD = "odd_17x48"  # B=2, N=17, d=48: small and quick


@pytest.fixture
def folder(tmp_path):
    """A working folder with a course input, a corrupt one, an output and a reference of the right size."""
    case = suite.get_case(ODD)
    suite.generate_input(case)
    suite.generate_reference(case)
    (tmp_path / "good.in").write_bytes(suite.input_path(case).read_bytes())
    (tmp_path / "corrupt.in").write_bytes(struct.pack("<iii", 2, 8, 4) + b"\0" * 10)
    (tmp_path / "negative.in").write_bytes(struct.pack("<iii", -2, 8, 4))
    (tmp_path / "good.out").write_bytes(suite.reference_path(case).read_bytes())
    (tmp_path / "short.out").write_bytes(b"\0" * 12)
    (tmp_path / "out_dir").mkdir()
    (tmp_path / "some.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00binary")
    return tmp_path


def snapshot(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file below `folder` with its size, modification time and a prefix of its bytes."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            info = path.stat()
            found[str(path.relative_to(folder))] = (info.st_size, info.st_mtime_ns, path.read_bytes()[:64])
    return found


def run_cli(folder: Path, args: list[str]):
    old = os.getcwd()
    os.chdir(folder)
    try:
        return CliRunner().invoke(main, args, catch_exceptions=False)
    finally:
        os.chdir(old)


# (command line, exit code, text the one error line must hold)
CORPUS = [
    (["run", "missing.in", "o.bin", "--variant", "cpu"], 2, "missing.in: no such file"),
    (["run", "corrupt.in", "o.bin", "--variant", "cpu"], 2, "corrupt.in"),
    (["run", "negative.in", "o.bin", "--variant", "cpu"], 2, "negative.in"),
    (["run", "good.in", "no_such_dir/o.bin", "--variant", "cpu"], 2, "no_such_dir/o.bin"),
    (["run", "good.in", "good.in", "--variant", "cpu"], 2, "good.in: is the input file"),
    (["run", "good.in", "out_dir", "--variant", "cpu"], 2, "out_dir"),
    (["run", "good.in", "newdir/", "--variant", "cpu"], 2, "newdir/: names a folder"),
    (["run", "good.in", "o.bin", "--variant", "warp9"], 2, "no variant named 'warp9'"),
    (["run", "t99", "o.bin", "--variant", "cpu"], 2, "neither a file nor a suite case"),
    (["run", "good.in", "o.bin", "--variant", "cpu", "--atol", "-1"], 2, "--atol"),
    (["run", "good.in", "o.bin", "--variant", "cpu", "--atol", "nan"], 2, "--atol"),
    (["run", "good.in", "o.bin", "--variant", "cpu", "--rtol", "inf"], 2, "--rtol"),
    (["run", "good.in", "o.bin", "--variant", "cpu", "--timeout", "0"], 2, "--timeout"),
    (["run", "good.in", "o.bin", "--variant", "cpu", "--timeout", "nan"], 2, "--timeout"),
    (["run", "good.in", "o.bin", "--variant", "cpu", "--noise", "-5"], 2, "--noise"),
    (["verify", "missing.out", "good.out"], 2, "missing.out: no such file"),
    (["verify", "good.out", "missing.ref"], 2, "missing.ref: no such file"),
    (["verify", "short.out", ODD], 2, "short.out"),
    (["verify", "short.out", "good.out"], 2, "short.out"),
    (["verify", "good.out", "good.out", "--atol", "nan"], 2, "--atol"),
    (["verify", "out_dir", "good.out"], 2, "out_dir"),
    (["gen", "t99"], 2, "t99"),
    (["cases", "nonsense"], 2, "nonsense"),
    (["compare", "--variants", "warp9", "--cases", ODD, "--no-save"], 2, "warp9"),
    (["compare", "--variants", "cpu", "--cases", "missing.in", "--no-save"], 2, "missing.in: no such file"),
    (["compare", "--variants", "cpu", "--cases", ODD, "--same-within", "-3%", "--no-save"], 2, "--same-within"),
    (["compare", "--against", "missing.json", "--no-save"], 2, "missing.json"),
    (["report", "missing.json"], 2, "missing.json"),
    (["sweep", "square", "-v", "cpu", "--sizes", "5-10", "--no-save"], 2, "--sizes '5-10': none of the lab's sizes"),
    (["sweep", "N", "-v", "cpu", "--values", "abc", "--no-save"], 2, "--values 'abc': not a whole number"),
    (["sweep", "d", "-v", "cpu", "--values", "8..x", "--no-save"], 2, "--values 'x': not a whole number"),
    (["report", "some.png"], 2, "some.png: not a JSON file"),
    (["compare", "--against", "some.png", "--no-save"], 2, "some.png: not a JSON file"),
]


@pytest.mark.parametrize("args, code, text", CORPUS, ids=lambda a: " ".join(a) if isinstance(a, list) else None)
def test_bad_input_is_one_line_its_exit_code_and_touches_nothing(folder, args, code, text):
    before = snapshot(folder)
    result = run_cli(folder, args)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    assert "" not in result.output.splitlines(), "piped output carries a blank line"
    errors = [line for line in result.output.splitlines() if line.startswith(("error:", "Error:"))]
    assert len(errors) == 1, result.output
    message = result.output[result.output.index(errors[0]):]
    assert text in " ".join(message.split()), result.output
    assert snapshot(folder) == before, "a file was created, replaced or changed"
    assert not list(folder.glob(".*.partial"))


def test_dev_null_stays_a_sink(folder):
    result = run_cli(folder, ["run", "good.in", "/dev/null", "--variant", "cpu", "--reps", "1"])
    assert result.exit_code == 0, result.output
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null was replaced"


def test_a_symlink_out_is_written_through_and_stays_a_link(folder):
    link = folder / "link.bin"
    link.symlink_to(folder / "target.bin")
    result = run_cli(folder, ["run", "good.in", "link.bin", "--variant", "cpu", "--reps", "1"])
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and (folder / "target.bin").stat().st_size == 2 * 17 * 48 * 4


def test_a_symlink_to_the_input_is_refused(folder):
    (folder / "sneaky.bin").symlink_to(folder / "good.in")
    before = snapshot(folder)
    result = run_cli(folder, ["run", "good.in", "sneaky.bin", "--variant", "cpu"])
    assert result.exit_code == 2 and "is the input file" in result.output
    assert snapshot(folder) == before


def test_a_fifo_out_is_written_through(folder):
    fifo = folder / "pipe"
    os.mkfifo(fifo)
    received = []
    import threading

    reader = threading.Thread(target=lambda: received.append(open(fifo, "rb").read()))
    reader.start()
    result = run_cli(folder, ["run", "good.in", "pipe", "--variant", "cpu", "--reps", "1"])
    reader.join(timeout=30)
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and len(received[0]) == 2 * 17 * 48 * 4


def test_a_suite_name_wins_over_a_local_file_and_says_so(folder):
    (folder / ODD).write_bytes((folder / "good.in").read_bytes())
    result = run_cli(folder, ["run", ODD, "o.bin", "--variant", "cpu", "--reps", "1"])
    assert result.exit_code == 0 and f"./{ODD}" in result.output
    as_path = run_cli(folder, ["run", f"./{ODD}", "o2.bin", "--variant", "cpu", "--reps", "1"])
    assert as_path.exit_code == 0 and f"./{ODD}" not in as_path.output.split("note:")[-1] or "note:" not in as_path.output


def test_verify_two_files_of_equal_size_without_a_shape_names_flat_indices(folder):
    ref = folder / "a.ref"
    ref.write_bytes((folder / "good.out").read_bytes())
    values = np.fromfile(ref, dtype="<f4")
    values[100] += 0.5
    values.tofile(folder / "b.out")
    result = run_cli(folder, ["verify", "b.out", "a.ref"])
    assert result.exit_code == 1
    assert "(element 100)" in result.output and "flat element indices" in result.output
    with_case = run_cli(folder, ["verify", "b.out", "a.ref", "--case", "good.in"])
    assert with_case.exit_code == 1 and "(batch 0, row 2, col 4)" in with_case.output  # 100 = 2*48 + 4


def test_load_results_of_a_binary_file_is_an_attnbench_error(folder):
    import attnbench
    from attnbench.errors import ResultsError

    with pytest.raises(ResultsError, match="some.png: not a JSON file"):
        attnbench.load_results(folder / "some.png")
