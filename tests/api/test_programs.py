"""The judge says how much it will write before it writes it."""

from attnbench.api import programs
from attnbench.cases import suite


def test_judge_writes_counts_only_what_is_not_generated_yet():
    case = suite.get_case("odd_1000x128")
    for path in (suite.input_path(case), suite.reference_path(case)):
        path.unlink(missing_ok=True)
    assert programs.judge_writes(["odd_1000x128"]) == case.shape.input_bytes + case.shape.output_bytes
    suite.generate_input(case)
    assert programs.judge_writes("odd_1000x128") == case.shape.output_bytes
