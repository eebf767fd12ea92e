"""The listing tables and lines of `attnbench cases` and `attnbench gen`."""

from attnbench.cases import suite
from attnbench.output.tables.listing_tables import cases_table, generated_line, on_disk


def test_a_case_shows_what_of_it_is_on_disk():
    case = suite.get_case("odd_17x1")
    for path in (suite.input_path(case), suite.reference_path(case)):
        path.unlink(missing_ok=True)
    assert on_disk(case) == "-"
    suite.generate_input(case)
    assert on_disk(case) == "input"
    suite.generate_reference(case)
    assert on_disk(case) == "input+ref"
    assert cases_table([case]).rows[0][7].text == "input+ref"


def test_the_gen_line_names_the_input_and_the_reference_when_made():
    case = suite.get_case("odd_17x1")
    assert generated_line(case, False) == f"odd_17x1 ({case.shape}): input {suite.input_path(case)}"
    assert generated_line(case, True).endswith(f", reference {suite.reference_path(case)}")
