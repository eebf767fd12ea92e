"""What the README promises a newcomer: a virtual environment first, an install that stays small (the
sm_61 compiler in its own extra), and a first "real output" that is what `attnbench run` prints now."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_the_quick_start_makes_a_virtual_environment_and_says_how_big_the_install_is():
    start = README.split("## Set up and try it", 1)[1].split("\n## ", 1)[0]
    assert "python3 -m venv" in start and start.index("python3 -m venv") < start.index("pip install")
    assert re.search(r"about \d+ MB", start) and "with the `test`" in start


def test_the_test_extra_leaves_the_sm61_compiler_to_its_own_extra():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert not any("nvrtc" in requirement for requirement in extras["test"])
    assert any(requirement.startswith("nvidia-cuda-nvrtc-cu12") for requirement in extras["sm61"])
    assert ".[test,sm61]" in (ROOT / ".ci" / "run").read_text()  # CI still runs the sm_61 check


def test_the_first_real_output_has_the_rows_run_prints_now(tmp_path):
    import attnbench
    from attnbench.output.tables.run_tables import measurement_table

    block = README.split("(real output", 1)[1].split("```\n", 2)[1]
    lines = block[block.index("cpu on t02"):].splitlines()[2:]  # after the title and the header
    shown = [line.strip() for line in lines if line.startswith(" ")]
    measurement = attnbench.run("t02", "cpu", str(tmp_path / "t02.out"), check=True,
                                timing=attnbench.TimingOptions(reps=6)).measurement
    names = [row[0].text for row in measurement_table(measurement).rows]
    assert len(shown) == len(names) and all(line.startswith(name) for line, name in zip(shown, names)), (shown, names)


def test_the_test_counts_say_which_machine_and_why_another_counts_otherwise():
    """The README's counts came from a machine with Slurm and did not say why a newcomer's differ."""
    before, after = README.split(" skipped, ", 1)
    counts = before.rsplit("```", 1)[0].rstrip().rsplit("\n\n", 1)[1]
    why = after.split("```", 1)[1].split("\n\n", 2)[1]
    assert "the machine these counts come from" in counts
    assert all(word in why for word in ("Slurm", "`nvcc`", "bubblewrap", "GPU", "-rs", "skipped"))
