"""attnbench.judge.time_limits: the course's limits, the 2024 course's RTX 3070 preset, none, a user's file."""

import pytest

from attnbench.judge.time_limits import PRESETS, load_time_limits
from attnbench.locations import shipped_limits
from attnbench.sandbox.process import ProgramError


def test_the_2024_rtx3070_limits_ship_ready_for_every_course_case():
    limits = load_time_limits("course-rtx3070")
    assert [limits.limit_for(f"t{i:02d}") for i in (1, 10, 11, 20, 21, 30)] == [1, 1, 3, 3, 5, 5]
    assert limits.limit_for("odd_17x48") is None  # not a course case: no limit
    assert "RTX 3070" in limits.describe() and "better of" in limits.describe()
    assert shipped_limits(PRESETS["course-rtx3070"][0]).is_file()


def test_the_course_none_and_a_users_file(tmp_path):
    assert load_time_limits("course").limit_for("t11") == 6 and load_time_limits("none").limit_for("t11") is None
    mine = tmp_path / "limits.toml"
    mine.write_text("t01 = 0.5\ndefault = 4\n")
    assert load_time_limits(str(mine)).limit_for("t01") == 0.5 and load_time_limits(str(mine)).limit_for("t02") == 4
    mine.write_text("t01 = -1\n")
    with pytest.raises(ProgramError, match="positive number of seconds"):
        load_time_limits(str(mine))


@pytest.mark.parametrize("value", ["nan", "inf", "1e300"])
def test_a_limits_file_with_no_number_of_seconds_is_refused_in_one_line(tmp_path, value):
    """`t01 = nan` passed the check (NaN <= 0 is false) and the judge ended in a traceback at the first case."""
    from attnbench.judge.time_limits import load_time_limits
    from attnbench.sandbox.process import ProgramError

    limits = tmp_path / "limits.toml"
    limits.write_text(f"t01 = {value}\n")
    with pytest.raises(ProgramError, match=r"limits\.toml: t01 = .*: a limit is a positive number of seconds"):
        load_time_limits(str(limits))


def test_a_users_file_names_the_cases_it_leaves_without_a_limit(tmp_path):
    """A limits file with a typo (`tO1 = 2`) judged t01 with no limit and said nothing."""
    given = tmp_path / "limits.toml"
    given.write_text("tO1 = 2\nt02 = 3\n")
    assert load_time_limits(str(given)).unlimited(["t01", "t02"]) == ["t01"]
    given.write_text("tO1 = 2\ndefault = 5\n")
    assert load_time_limits(str(given)).unlimited(["t01", "t02"]) == []  # the default covers them
    assert load_time_limits("course").unlimited(["odd_17x48"]) == []  # the course's own say so in describe
    assert load_time_limits("none").unlimited(["t01"]) == []


def test_a_limits_name_that_is_no_file_says_which_names_attnbench_knows():
    """`--time-limits rtx3070` said only "no such file": the preset is course-rtx3070."""
    with pytest.raises(ProgramError, match="rtx3070: no such file, and not one of the limits attnbench knows: "
                                           "course, none, course-rtx3070"):
        load_time_limits("rtx3070")


def test_the_names_a_users_file_limits_that_are_no_case_here_or_in_the_suite(tmp_path):
    given = tmp_path / "my.toml"
    given.write_text("t01 = 2\nt30 = 10\nmine = 1\nzz = 2\ndefault = 5\n")
    assert load_time_limits(str(given)).strangers(["t01", "mine"]) == ["zz"]
    assert load_time_limits("course").strangers(["t01"]) == [] and load_time_limits("none").strangers([]) == []
