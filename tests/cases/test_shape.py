"""attnbench.cases.shape: a shape typed by a person, and the course input's header read and checked without
numpy."""

import pytest

from attnbench.cases.shape import Shape, check_shape, read_shape
from attnbench.errors import TestcaseError


@pytest.mark.parametrize("text", ["4,32768,32", "4x32768x32", "4X32768X32", " 4, 32768 ,32 "])
def test_a_shape_is_read_as_b_n_d_or_bxnxd(text):
    assert Shape.parse(text) == Shape(4, 32768, 32)


@pytest.mark.parametrize("text, words", [("1,2", "is not B,N,d or BxNxd"), ("1x2x3x4", "is not B,N,d"),
                                         ("1,-2,3", "is not B,N,d"), ("a,b,c", "is not B,N,d"),
                                         ("1,0,3", "must be at least 1"),
                                         ("1,99999999999,64", "int32 in a testcase.s header")])
def test_a_shape_that_is_not_one_is_refused_in_a_sentence(text, words):
    with pytest.raises(ValueError, match=words):
        Shape.parse(text)


def test_the_overflow_check_is_exact_at_the_64_bit_limit():
    largest = (2**63 - 1 - 12) // 12  # 12*B*N*d + 12 still fits in a signed 64-bit size
    check_shape(Shape(largest, 1, 1), "edge.in")
    with pytest.raises(TestcaseError, match=r"^edge.in: header dimensions B=768614336404564650, N=1, d=1 overflow"):
        check_shape(Shape(largest + 1, 1, 1), "edge.in")


def test_permission_denied_is_one_line(tmp_path, monkeypatch):
    import attnbench.cases.shape as shape_module

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(shape_module, "open", refuse, raising=False)
    with pytest.raises(TestcaseError, match=rf"^{tmp_path / 'x.in'}: permission denied$"):
        read_shape(tmp_path / "x.in")
