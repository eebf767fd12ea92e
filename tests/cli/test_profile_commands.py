"""The explaining commands' command line: `roof` (no GPU needed)."""

from click.testing import CliRunner

from attnbench.cli import main


def test_roof_prints_each_cases_bound_and_its_sources(cli):
    result = cli("roof", "t11", "t30", "--gpu", "h200")
    assert result.exit_code == 0
    assert "H200 SXM" in result.output and "185.7 us" in result.output
    assert "https://www.nvidia.com/en-us/data-center/h200/" in result.output


def test_roof_of_an_unknown_card_is_one_line_and_exit_2():
    result = CliRunner().invoke(main, ["roof", "t11", "--gpu", "nosuch"], prog_name="attnbench")
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "no peaks for 'nosuch'" in result.output


def test_info_with_an_empty_shape_is_refused_not_the_default_case(cli):
    """`info --shape ""` (an unset variable) described t29 with exit 0, as if no shape had been given."""
    result = cli("info", "-v", "qreg", "--shape", "")
    assert result.exit_code == 2
    assert "--shape" in result.output and "t29" not in result.output


def test_profile_with_empty_metrics_is_refused_before_any_work(cli):
    """`profile --metrics ""` profiled without the extra metrics it was asked for, without a word."""
    for empty in ("", " , "):
        result = cli("profile", "t02", "-v", "qreg", "--metrics", empty)
        assert result.exit_code == 2 and "--metrics" in result.output and "is empty" in result.output
