"""attnbench.judge.classroom and `api.judge_class`: a small class of C submissions built and judged on the
CPU: correct, slow, wrong, crashing, one that does not build, one with a Makefile; the order is asserted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from attnbench.api import programs as api_programs
from attnbench.judge.course_judge import CRASH, WRONG_ANSWER

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cpu_program" / "attention.c"
CASES = "odd_17x48,odd_100x32"


def _wrapping(body_before_main: str, before_call: str = "") -> str:
    """A C file that is the example program, with something added before it runs."""
    return (f"#include <unistd.h>\n#include <stdlib.h>\n{body_before_main}\n#define main attention_main\n"
            f'#include "{EXAMPLE}"\n#undef main\n'
            f"int main(int argc, char **argv) {{ {before_call} return attention_main(argc, argv); }}\n")


@pytest.fixture(scope="module")
def classroom(tmp_path_factory) -> Path:
    if shutil.which("cc") is None or shutil.which("make") is None:
        pytest.skip("no C compiler or make")
    folder = tmp_path_factory.mktemp("class")
    alice = folder / "alice"  # the course's layout: a Makefile that builds hw4
    alice.mkdir()
    shutil.copy(EXAMPLE, alice / "attention.c")
    (alice / "Makefile").write_text("hw4: attention.c\n\tcc -O2 -o hw4 attention.c -lm\n")
    (folder / "bob.c").write_text(_wrapping("", "usleep(400000);"))  # right, but 0.4 s slower per case
    (folder / "carol.c").write_text(_wrapping("#define OFF_BY_ONE"))  # one element off in every output
    (folder / "dave.c").write_text("#include <stdlib.h>\nint main(void) { abort(); }\n")  # crashes
    (folder / "erin.c").write_text("int main(void) { return 0 }\n")  # does not build
    (folder / "notes.txt").write_text("not a submission")
    return folder


def test_a_class_is_built_judged_ranked_and_the_top_rerun(classroom):
    events = []
    board = api_programs.judge_class([classroom], CASES, time_limits="none",
                                     listener=lambda *event: events.append(event))
    assert [row.name for row in board.rows] == ["alice", "bob", "carol", "dave", "erin"]
    ranks = {row.name: row.rank for row in board.rows}
    assert ranks == {"alice": 1, "bob": 2, "carol": None, "dave": None, "erin": None}
    rows = {row.name: row for row in board.rows}
    assert rows["alice"].passed == rows["bob"].passed == 2
    assert rows["bob"].total_s > rows["alice"].total_s + 0.6
    assert {e.verdict for e in rows["carol"].entries.values()} == {WRONG_ANSWER}
    assert {e.verdict for e in rows["dave"].entries.values()} == {CRASH}
    assert not rows["erin"].built and "error" in rows["erin"].build_message and rows["erin"].entries == {}
    # the top rows ran every passed case three times; their case time is the median of the three
    for name in ("alice", "bob"):
        assert rows[name].reruns == 3 and all(len(e.runs_s) == 3 for e in rows[name].entries.values())
    assert rows["carol"].reruns == 1
    assert ("erin", "build", "build failed") in events
    assert board.cases == ["odd_17x48", "odd_100x32"] and not board.interrupted
    assert "passed first" in board.settings["ranking"]


def test_the_scoreboard_saves_as_strict_json(classroom, tmp_path):
    from attnbench.output.scoreboard import save_scoreboard
    from attnbench.results.scoreboard import load_scoreboard

    board = api_programs.judge_class([classroom / "alice", classroom / "dave.c"], ["odd_17x48"],
                                     time_limits="none", rerun_top=0)
    paths = save_scoreboard(board, tmp_path, "class", with_html=True)
    assert [p.suffix for p in paths] == [".json", ".csv", ".md", ".html"]

    def refuse(constant):
        raise ValueError(constant)

    json.loads(paths[0].read_text(), parse_constant=refuse)
    again = load_scoreboard(paths[0])
    assert [r.name for r in again.rows] == ["alice", "dave"] and again.rows[0].rank == 1
    assert "alice" in paths[1].read_text() and "<table>" in paths[3].read_text()


def test_bad_arguments_are_one_line(tmp_path):
    from attnbench.errors import AttnbenchError

    with pytest.raises(AttnbenchError, match="no such file"):
        api_programs.judge_class([tmp_path / "missing"], "odd_17x48")
    (tmp_path / "empty").mkdir()
    with pytest.raises(AttnbenchError, match="no submission found"):
        api_programs.judge_class([tmp_path / "empty"], "odd_17x48")
