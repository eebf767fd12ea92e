"""Property tests of the course format: any shape and any float32 bits survive a write and a read, and
any header or length either reads as exactly what it says or gives one TestcaseError naming the file."""

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attnbench.cases.testcase import (
    Shape,
    Testcase,
    read_output,
    read_shape,
    read_testcase,
    write_output,
    write_testcase,
)
from attnbench.errors import TestcaseError

PROPERTIES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

small_shapes = st.builds(Shape, st.integers(1, 3), st.integers(1, 9), st.integers(1, 7))
# Every float32 bit pattern: NaNs with payloads, infinities, -0.0, subnormals.
any_float32 = st.integers(0, 2**32 - 1).map(lambda bits: np.array(bits, dtype=np.uint32).view(np.float32).item())


def float32_arrays(shape: tuple[int, ...]):
    return arrays(np.uint32, shape, elements=st.integers(0, 2**32 - 1)).map(lambda a: a.view(np.float32))


@st.composite
def course_inputs(draw) -> Testcase:
    shape = draw(small_shapes)
    return Testcase(draw(float32_arrays((shape.B, 3, shape.N, shape.d))))


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@PROPERTIES
@given(tc=course_inputs())
def test_any_testcase_survives_a_write_and_a_read_bit_for_bit(tmp_path, tc):
    path = tmp_path / "t.in"
    write_testcase(path, tc)
    data = path.read_bytes()
    B, N, d = tc.shape.B, tc.shape.N, tc.shape.d
    assert data[:12] == struct.pack("<iii", B, N, d)
    assert len(data) == 12 + 12 * B * N * d
    # The layout, read without attnbench: Q_0 K_0 V_0 Q_1 ... each N*d little-endian float32.
    items = np.frombuffer(data[12:], dtype="<f4").reshape(B, 3, N, d)
    assert same_bits(items, tc.qkv.astype("<f4"))
    back = read_testcase(path)
    assert back.shape == tc.shape and read_shape(path) == tc.shape
    assert same_bits(back.qkv, tc.qkv)


@PROPERTIES
@given(shape=small_shapes, data=st.data())
def test_from_arrays_keeps_q_k_v_in_their_places(shape, data):
    q, k, v = (data.draw(float32_arrays((shape.B, shape.N, shape.d))) for _ in range(3))
    tc = Testcase.from_arrays(q, k, v)
    assert tc.shape == shape
    assert same_bits(tc.q, q) and same_bits(tc.k, k) and same_bits(tc.v, v)
    assert same_bits(tc.qkv[:, 0], q) and same_bits(tc.qkv[:, 1], k) and same_bits(tc.qkv[:, 2], v)


@PROPERTIES
@given(shape=small_shapes, data=st.data())
def test_any_output_survives_a_write_and_a_read_and_a_wrong_shape_is_refused(tmp_path, shape, data):
    out = data.draw(float32_arrays((shape.B, shape.N, shape.d)))
    path = tmp_path / "o.bin"
    write_output(path, out)
    assert path.read_bytes() == out.astype("<f4").tobytes()
    assert same_bits(read_output(path, shape), out)
    other = data.draw(small_shapes.filter(lambda s: s.B * s.N * s.d != shape.B * shape.N * shape.d))
    with pytest.raises(TestcaseError, match=rf"should be 4\*B\*N\*d = {4 * other.elements} bytes, but it is {4 * shape.elements} bytes"):
        read_output(path, other)


int32s = st.integers(-(2**31), 2**31 - 1)


@PROPERTIES
@given(B=int32s | st.integers(1, 4), N=int32s | st.integers(1, 4), d=int32s | st.integers(1, 4),
       extra=st.integers(-16, 16), filler=any_float32)
def test_any_header_reads_as_what_it_says_or_gives_one_error_naming_the_file(tmp_path, B, N, d, extra, filler):
    """A header with random int32 B, N, d and a payload near the size it implies (when that is small)."""
    positive = B > 0 and N > 0 and d > 0
    expected = 12 * B * N * d if positive else 0
    payload = max(0, expected + extra) if positive and expected <= 4096 else max(0, 48 + extra)
    path = tmp_path / "h.in"
    path.write_bytes(struct.pack("<iii", B, N, d) + struct.pack("<f", filler) * (payload // 4) + b"\x01" * (payload % 4))
    if positive and payload == expected:
        tc = read_testcase(path)
        assert tc.shape == Shape(B, N, d)
        assert np.all(tc.qkv.view(np.uint32) == np.array(filler, dtype=np.float32).view(np.uint32))
        return
    with pytest.raises(TestcaseError) as info:
        read_testcase(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    if not positive:
        assert "must be positive" in message
    elif expected + 12 > 2**63 - 1:
        assert f"header dimensions B={B}, N={N}, d={d} overflow: 12*B*N*d does not fit in 64 bits" in message
    else:
        assert f"should be 12 + 12*B*N*d = {12 + expected} bytes, but it is {12 + payload} bytes" in message


@PROPERTIES
@given(data=st.binary(max_size=11))
def test_a_file_shorter_than_the_header_is_refused(tmp_path, data):
    path = tmp_path / "short.in"
    path.write_bytes(data)
    with pytest.raises(TestcaseError, match=rf"^{path}: {len(data)} bytes is too short for the 12-byte header"):
        read_shape(path)
