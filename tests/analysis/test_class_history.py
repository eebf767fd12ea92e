"""attnbench.analysis.class_history: a submission's runs over saved scoreboards."""

from attnbench.analysis.class_history import history
from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow


def test_a_row_not_judged_is_no_run_of_its_submission():
    """A CUDA program judged on a laptop (NOT JUDGED: no GPU there) neither adds a run nor hides its real ones."""
    judged = Scoreboard(["t01"], [SubmissionRow("cu", "cu.cu", True, rank=1,
                                                entries={"t01": CaseEntry("PASS", runs_s=[0.5])})],
                        metadata={"date": "2026-11-01"})
    laptop = Scoreboard(["t01"], [SubmissionRow("cu", "cu.cu", True, not_judged="no NVIDIA GPU here (x)"),
                                  SubmissionRow("c", "c.c", True, entries={"t01": CaseEntry("WRONG")})],
                        metadata={"date": "2026-11-02"})
    rows = {row.name: row for row in history([judged, laptop])}
    assert rows["cu"].runs == 1 and rows["cu"].latest.passed == 1 and rows["c"].runs == 1


def test_a_row_an_interruption_left_unrun_is_no_run_of_its_submission():
    """Ctrl-C before a row's cases saves it with no entries: its latest run is still the last real one."""
    passed = Scoreboard(["t01"], [SubmissionRow("a", "a", True, rank=1, entries={"t01": CaseEntry("PASS", runs_s=[0.5])})],
                        metadata={"date": "2026-11-01"})
    stopped = Scoreboard(["t01"], [SubmissionRow("a", "a", True, "built with `make hw4` (0.1 s)")],
                         metadata={"date": "2026-11-02"}, interrupted=True)
    (row,) = history([passed, stopped])
    assert row.runs == 1 and row.latest.passed == 1


def test_a_damaged_scoreboard_is_named_not_skipped(tmp_path):
    """A hand-damaged or cut-short scoreboard vanished from `judge --history` ("no saved scoreboard", exit 0)."""
    import json

    import pytest

    from attnbench.analysis.class_history import load_boards
    from attnbench.errors import ResultsError

    board = Scoreboard(["t01"], [SubmissionRow("ada", "ada.c", True, rank=1,
                                               entries={"t01": CaseEntry("PASS", runs_s=[0.5])})],
                       metadata={"date": "2026-11-01"})
    (tmp_path / "other.json").write_text(json.dumps({"schema": "attnbench-results", "cells": []}))
    (tmp_path / "run.json").write_text(board.to_json())
    assert [b.cases for b in load_boards(tmp_path)] == [["t01"]]  # another command's JSON is skipped
    for damaged in (board.to_json()[:60], board.to_json().replace('"entries": {', '"entries": [1], "x": {', 1)):
        (tmp_path / "run.json").write_text(damaged)
        with pytest.raises(ResultsError, match=r"run\.json: a saved scoreboard, damaged"):
            load_boards(tmp_path)


def test_a_scoreboard_of_a_newer_attnbench_is_named_not_skipped(tmp_path):
    """A scoreboard saved by a newer attnbench (a larger version) vanished from `judge --history` without a word,
    exit 0, though it may be the class's latest run."""
    import pytest

    from attnbench.analysis.class_history import load_boards
    from attnbench.errors import ResultsError
    from attnbench.results.scoreboard import SCOREBOARD_VERSION

    board = Scoreboard(["t01"], [SubmissionRow("ada", "ada.c", True, rank=1,
                                               entries={"t01": CaseEntry("PASS", runs_s=[0.5])})],
                       metadata={"date": "2026-11-01"})
    (tmp_path / "old.json").write_text(board.to_json())
    newer = board.to_json().replace(f'"version": {SCOREBOARD_VERSION},', f'"version": {SCOREBOARD_VERSION + 1},', 1)
    (tmp_path / "new.json").write_text(newer)
    with pytest.raises(ResultsError, match=rf"new\.json: a scoreboard of version {SCOREBOARD_VERSION + 1}, newer"):
        load_boards(tmp_path)


def test_a_scoreboard_whose_version_no_attnbench_wrote_is_named_not_skipped(tmp_path):
    """A scoreboard whose version was hand-edited to 0, -1, null, "1" or 1e400 vanished from `judge --history`
    ("no saved scoreboard", exit 0)."""
    import pytest

    from attnbench.analysis.class_history import load_boards
    from attnbench.errors import ResultsError
    from attnbench.results.scoreboard import SCOREBOARD_VERSION

    board = Scoreboard(["t01"], [SubmissionRow("ada", "ada.c", True, rank=1,
                                               entries={"t01": CaseEntry("PASS", runs_s=[0.5])})],
                       metadata={"date": "2026-11-01"})
    for written in ("0", "-1", "null", '"1"', "1e400"):
        edited = board.to_json().replace(f'"version": {SCOREBOARD_VERSION},', f'"version": {written},', 1)
        (tmp_path / "run.json").write_text(edited)
        with pytest.raises(ResultsError, match=r"run\.json: a saved scoreboard, damaged"):
            load_boards(tmp_path)


def test_runs_on_other_cases_than_the_latest_are_counted_for_the_note_under_the_history():
    """A judge on t01-t03, then one on t01-t02: the first vanished from the history without a word."""
    from attnbench.analysis.class_history import runs_on_other_cases

    row = SubmissionRow("a", "a", True, rank=1, entries={"t01": CaseEntry("PASS", runs_s=[0.5])})
    wide = Scoreboard(["t01", "t02", "t03"], [row], metadata={"date": "2026-11-01"})
    narrow = Scoreboard(["t01"], [row], metadata={"date": "2026-11-02"})
    assert runs_on_other_cases([wide, wide, narrow]) == 2 and runs_on_other_cases([narrow]) == 0
    assert runs_on_other_cases([]) == 0


def test_a_row_no_build_ran_for_is_not_said_to_have_failed_its_build():
    """A folder holding only x.c (no submission) showed "build failed" in --history, though no build ran."""
    rows = [SubmissionRow("bob", "bob", False, "not a submission: no Makefile, hw4.cu, hw4.hip or hw4 in it"),
            SubmissionRow("eve", "eve", False, "refused: hw4.cu: cannot be read (Permission denied)"),
            SubmissionRow("hip", "hip", False, "HIP is not judged (the course's AMD part)"),
            SubmissionRow("cc", "cc", False, "the build failed: cc (exit 1): x.c:1: error: y")]
    said = {row.name: row.latest.not_built for row in history([Scoreboard(["t01"], rows, metadata={"date": "d"})])}
    assert said == {"bob": "not a submission", "eve": "refused", "hip": "HIP is not judged", "cc": "build failed"}


def test_a_scoreboard_that_cannot_be_read_is_named_not_skipped(tmp_path, monkeypatch):
    """Another TA's run saved with umask 077 in a shared results folder vanished from `judge --history` without a word.
    (Root reads it anyway: the refusal is played here.)"""
    from pathlib import Path

    import pytest

    from attnbench.analysis.class_history import load_boards
    from attnbench.errors import ResultsError

    board = Scoreboard(["t01"], [SubmissionRow("ada", "ada.c", True, rank=1,
                                               entries={"t01": CaseEntry("PASS", runs_s=[0.5])})],
                       metadata={"date": "2026-11-01"})
    (tmp_path / "mine.json").write_text(board.to_json())
    (tmp_path / "theirs.json").write_text(board.to_json())
    opened = Path.open

    def open_file(path, *args, **kwargs):
        if path.name == "theirs.json":
            raise PermissionError(13, "Permission denied", str(path))
        return opened(path, *args, **kwargs)

    monkeypatch.setattr(Path, "open", open_file)
    with pytest.raises(ResultsError, match=r"theirs\.json: cannot be read \(Permission denied\)"):
        load_boards(tmp_path)
