import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnbench.kernels.expressions import ExpressionError, cdiv, parse_expression


@pytest.mark.parametrize("text, shape, value", [
    ("cdiv(N, 64)", (2, 100, 32), 2),
    ("cdiv(N, 64)", (2, 128, 32), 2),
    ("4 * (2 * 64 * d + 64)", (1, 1, 64), 4 * (128 * 64 + 64)),
    ("max(N // 2, min(d, 3), -1)", (1, 10, 4), 5),
    ("B * N % 7", (3, 5, 1), 1),
    ("-d + 2 * d", (1, 1, 9), 9),
    (128, (1, 1, 1), 128),
    ("  N  ", (1, 17, 1), 17),
    ("(" * 200 + "N" + ")" * 200, (1, 17, 1), 17),
])
def test_allowed_formulas_evaluate_as_integer_arithmetic(text, shape, value):
    assert parse_expression(text)(*shape) == value


@pytest.mark.parametrize("text, shape, value", [
    ("N // 2", (1, 7, 1), 3),
    ("-N // 2", (1, 7, 1), -4),  # floor division rounds down, not toward zero
    ("N % 4", (1, 7, 1), 3),
    ("cdiv(N, 2)", (1, 7, 1), 4),
    ("B * N * d * 3 // 3", (2**20 + 1, 2**20 + 3, 2**13 + 5), (2**20 + 1) * (2**20 + 3) * (2**13 + 5)),  # > 2**53
])
def test_launch_facts_are_exact_ints_on_fixed_cases(text, shape, value):
    got = parse_expression(text)(*shape)
    assert type(got) is int and got == value


@pytest.mark.parametrize("text, words", [
    ("__import__('os').system('true')", "only the calls"),
    ("__import__('os')", "only the calls"),
    ("open('/etc/passwd')", "only the calls"),
    ("N.bit_length()", "only the calls"),
    ("N.real", "attribute access"),
    ("(lambda: 1)()", "only the calls"),
    ("lambda: 1", "Lambda"),
    ("x + 1", "unknown name 'x'"),
    ("b", "unknown name 'b'"),
    ("cdiv", "unknown name 'cdiv'"),
    ("'64'", "str"),
    ("9 ** 999999", "`**`"),
    ("N / 2", "`/`"),
    ("1.5 * N", "float"),
    ("True + 1", "bool"),
    ("[i for i in range(3)]", "ListComp"),
    ("(N, d)", "Tuple"),
    ("N if B else d", "IfExp"),
    ("N < d", "Compare"),
    ("N << 2", "LShift"),
    ("~N", "Invert"),
    ("cdiv(N)", "2 arguments"),
    ("min(N)", "at least 2"),
    ("min(*[N, d])", "*args"),
    ("max(N, d, key=abs)", "only the calls"),
    ("N = 3", "not a formula"),
    ("", "empty"),
    ("N +", "not a formula"),
    ("N" + " + N" * 300, "characters long"),
    ("99999999999999999999", "64 bits"),
])
def test_code_and_anything_beyond_arithmetic_is_refused(text, words):
    with pytest.raises(ExpressionError) as info:
        parse_expression(text)
    message = str(info.value)
    assert "\n" not in message
    assert words in message


@pytest.mark.parametrize("value", [1.5, True, None, [64, 1], {"x": 1}])
def test_only_whole_numbers_and_text_are_formulas(value):
    with pytest.raises(ExpressionError, match="whole number or a formula"):
        parse_expression(value)


def test_division_by_zero_and_overflow_are_errors_at_evaluation():
    with pytest.raises(ExpressionError, match="division by zero"):
        parse_expression("N // (d - 4)")(1, 8, 4)
    with pytest.raises(ExpressionError, match="division by zero"):
        parse_expression("cdiv(N, d - d)")(1, 8, 4)
    with pytest.raises(ExpressionError, match="64 bits"):
        parse_expression("N * N * N * N * N")(1, 2**20, 1)


small = st.integers(min_value=1, max_value=1 << 20)


@given(B=small, N=small, d=small, tile=st.integers(min_value=1, max_value=4096))
def test_cdiv_grid_matches_ceiling_division(B, N, d, tile):
    grid = parse_expression(f"cdiv(N, {tile})")
    assert grid(B, N, d) == math.ceil(N / tile) == cdiv(N, tile)
    assert parse_expression(f"min(B, {tile}) + max(N % {tile}, d)")(B, N, d) == min(B, tile) + max(N % tile, d)


@given(st.text(max_size=40))
def test_arbitrary_text_is_either_refused_or_integer_arithmetic(text):
    try:
        expression = parse_expression(text)
    except ExpressionError:
        return
    try:
        value = expression(3, 5, 7)
    except ExpressionError:
        return
    assert type(value) is int


def _formulas():
    """Random formulas of the allowed grammar, as text."""
    leaves = st.one_of(st.integers(min_value=0, max_value=10**6).map(str), st.sampled_from(["B", "N", "d"]))

    def extend(inner):
        binary = st.tuples(inner, st.sampled_from(["+", "-", "*", "//", "%"]), inner).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})")
        calls = st.one_of(
            st.tuples(inner, inner).map(lambda t: f"cdiv({t[0]}, {t[1]})"),
            st.lists(inner, min_size=2, max_size=4).map(lambda xs: f"min({', '.join(xs)})"),
            st.lists(inner, min_size=2, max_size=4).map(lambda xs: f"max({', '.join(xs)})"),
        )
        return st.one_of(binary, calls, inner.map(lambda x: f"-{x}"))

    return st.recursive(leaves, extend, max_leaves=12)


@given(text=_formulas(), B=small, N=small, d=small)
def test_the_evaluator_agrees_with_python_arithmetic(text, B, N, d):
    expression = parse_expression(text)  # every formula of the grammar is accepted
    try:
        want = eval(text, {"__builtins__": {}}, {"B": B, "N": N, "d": d, "cdiv": cdiv, "min": min, "max": max})
    except ZeroDivisionError:
        with pytest.raises(ExpressionError, match="division by zero"):
            expression(B, N, d)
        return
    try:
        got = expression(B, N, d)
    except ExpressionError as exc:  # only for values beyond 64 bits somewhere on the way
        assert "64 bits" in str(exc)
        return
    assert got == want
