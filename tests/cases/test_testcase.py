import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

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
from attnbench.files import atomic_write


def course_file(path, B, N, d, rng):
    """A course input written the way another program would: header, then Q K V per batch item."""
    items = rng.uniform(-3, 3, size=(B, 3, N, d)).astype("<f4")
    with open(path, "wb") as f:
        f.write(struct.pack("<iii", B, N, d))
        for b in range(B):
            for m in range(3):
                f.write(items[b, m].tobytes())
    return items


def test_reads_a_file_written_by_another_program(tmp_path, rng):
    items = course_file(tmp_path / "c.in", 3, 17, 5, rng)
    tc = read_testcase(tmp_path / "c.in")
    assert tc.shape == Shape(3, 17, 5)
    np.testing.assert_array_equal(tc.q, items[:, 0])
    np.testing.assert_array_equal(tc.k, items[:, 1])
    np.testing.assert_array_equal(tc.v, items[:, 2])


def test_testcase_round_trip(tmp_path, rng):
    q, k, v = (rng.standard_normal((2, 7, 3)).astype(np.float32) for _ in range(3))
    write_testcase(tmp_path / "t.in", Testcase.from_arrays(q, k, v))
    back = read_testcase(tmp_path / "t.in")
    np.testing.assert_array_equal(back.q, q)
    np.testing.assert_array_equal(back.k, k)
    np.testing.assert_array_equal(back.v, v)
    assert (tmp_path / "t.in").stat().st_size == 12 + 12 * 2 * 7 * 3
    # The bytes in the course's order, read without attnbench: header, then Q_0 K_0 V_0 Q_1 K_1 V_1.
    data = (tmp_path / "t.in").read_bytes()
    assert struct.unpack("<iii", data[:12]) == (2, 7, 3)
    expected = b"".join(m[b].astype("<f4").tobytes() for b in range(2) for m in (q, k, v))
    assert data[12:] == expected


def test_output_round_trip_and_size_check(tmp_path):
    out = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    write_output(tmp_path / "o.bin", out)
    assert (tmp_path / "o.bin").stat().st_size == 4 * out.size
    np.testing.assert_array_equal(read_output(tmp_path / "o.bin", Shape(2, 3, 4)), out)
    with pytest.raises(TestcaseError, match=r"o.bin: an output for B=2, N=3, d=5 should be 4\*B\*N\*d = 120 bytes, but it is 96 bytes"):
        read_output(tmp_path / "o.bin", Shape(2, 3, 5))


@pytest.mark.parametrize(
    "header, payload, message",
    [
        (b"", 0, r"0 bytes is too short for the 12-byte header"),
        (b"\x01\x00\x00\x00\x02", 0, r"5 bytes is too short"),
        (struct.pack("<iii", 0, 4, 4), 0, r"B=0; B, N and d must be positive"),
        (struct.pack("<iii", 2, -4, 4), 0, r"N=-4; B, N and d must be positive"),
        (struct.pack("<iii", 2, 4, 0), 0, r"d=0"),
        (struct.pack("<iii", 2**31 - 1, 2**31 - 1, 2**31 - 1), 0, r"overflow"),
        (struct.pack("<iii", 2, 4, 4), 12 * 2 * 4 * 4 - 4, r"should be 12 \+ 12\*B\*N\*d = 396 bytes, but it is 392"),
        (struct.pack("<iii", 2, 4, 4), 12 * 2 * 4 * 4 + 1, r"= 396 bytes, but it is 397"),
    ],
)
def test_corrupt_inputs_give_one_line_errors_naming_the_file(tmp_path, header, payload, message):
    path = tmp_path / "bad.in"
    path.write_bytes(header + b"\x00" * payload)
    with pytest.raises(TestcaseError, match=message) as info:
        read_testcase(path)
    assert str(info.value).startswith(str(path))
    assert "\n" not in str(info.value)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(TestcaseError, match="no such file"):
        read_shape(tmp_path / "nope.in")
    with pytest.raises(TestcaseError, match="is a directory"):
        read_shape(tmp_path)


def test_atomic_write_leaves_nothing_on_error(tmp_path):
    target = tmp_path / "out.bin"

    def fail_halfway(f):
        f.write(b"x" * 100)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, fail_halfway)
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_keeps_the_old_file_on_error(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        atomic_write(target, lambda f: (f.write(b"new"), (_ for _ in ()).throw(RuntimeError("boom"))))
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_reading_a_large_file_does_not_copy_it_twice(tmp_path):
    """Peak resident memory while reading stays within 1.3x the file size."""
    B, N, d = 64, 1024, 128  # 100 MB of payload
    path = tmp_path / "big.in"
    with open(path, "wb") as f:
        f.write(struct.pack("<iii", B, N, d))
        f.truncate(12 + 12 * B * N * d)
    script = textwrap.dedent(
        f"""
        import resource, numpy
        from attnbench.cases.testcase import read_testcase
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        tc = read_testcase({str(path)!r})
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print((after - before) * 1024)
        """
    )
    grown = int(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout)
    size = os.path.getsize(path)
    assert grown <= 1.3 * size, f"reading {size} bytes grew resident memory by {grown}"


def test_from_arrays_stores_float32_and_refuses_mismatched_shapes():
    q = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 7  # float64 in, float32 stored
    tc = Testcase.from_arrays(q, q, q)
    assert tc.qkv.dtype == np.float32 and tc.qkv.flags.c_contiguous
    np.testing.assert_array_equal(tc.q, q.astype(np.float32))
    other = np.zeros((2, 3, 5))
    for args in ((q, other, q), (q, q, other)):
        with pytest.raises(ValueError, match=r"Q, K, V must share one \(B, N, d\) shape, got"):
            Testcase.from_arrays(*args)
    flat = np.zeros((3, 4))
    with pytest.raises(ValueError, match=r"got \(3, 4\), \(3, 4\), \(3, 4\)"):
        Testcase.from_arrays(flat, flat, flat)


def test_a_read_testcase_remembers_its_file(tmp_path, rng):
    course_file(tmp_path / "c.in", 1, 2, 3, rng)
    assert read_testcase(tmp_path / "c.in").path == tmp_path / "c.in"


def test_short_reads_fill_the_buffer_in_order_and_a_short_file_is_named(tmp_path):
    from attnbench.cases.testcase import _readinto_exact

    class Trickle:
        """A stream that hands out at most 5 bytes per read, as pipes and network files may."""

        def __init__(self, data):
            self.data, self.pos = data, 0

        def readinto(self, buffer):
            n = min(5, len(buffer), len(self.data) - self.pos)
            buffer[:n] = self.data[self.pos : self.pos + n]
            self.pos += n
            return n

    data = bytes(range(23))
    buffer = bytearray(23)
    _readinto_exact(Trickle(data), memoryview(buffer), tmp_path / "t.in")
    assert bytes(buffer) == data
    with pytest.raises(TestcaseError, match=rf"^{tmp_path / 't.in'}: file ended after 25 bytes while reading$"):
        _readinto_exact(Trickle(data[:13]), memoryview(bytearray(23)), tmp_path / "t.in", 12)


def test_a_file_that_shrinks_while_read_is_named(tmp_path, monkeypatch, rng):
    """The size is checked first; a file cut short between the check and the read still gives one line."""
    import attnbench.cases.testcase as testcase

    course_file(tmp_path / "c.in", 2, 3, 4, rng)
    write_output(tmp_path / "o.bin", np.zeros((1, 2, 3), np.float32))
    (tmp_path / "cut.in").write_bytes((tmp_path / "c.in").read_bytes()[:40])
    real_open = open
    monkeypatch.setattr(testcase, "open", lambda path, mode: real_open(tmp_path / "cut.in", mode), raising=False)
    with pytest.raises(TestcaseError, match=rf"^{tmp_path / 'c.in'}: file ended after 40 bytes while reading$"):
        read_testcase(tmp_path / "c.in")
    (tmp_path / "cut.in").write_bytes(b"\0" * 8)
    # An output has no header: the count is the bytes of the file itself.
    with pytest.raises(TestcaseError, match=rf"^{tmp_path / 'o.bin'}: file ended after 8 bytes while reading$"):
        read_output(tmp_path / "o.bin", Shape(1, 2, 3))


def test_reading_and_writing_in_small_chunks_changes_nothing(tmp_path, monkeypatch, rng):
    import attnbench.cases.testcase as testcase

    items = course_file(tmp_path / "c.in", 2, 5, 3, rng)
    monkeypatch.setattr(testcase, "_READ_CHUNK", 7)
    np.testing.assert_array_equal(read_testcase(tmp_path / "c.in").qkv, items)
    write_testcase(tmp_path / "again.in", Testcase(items))
    assert (tmp_path / "again.in").read_bytes() == (tmp_path / "c.in").read_bytes()


def test_outputs_are_written_as_float32_whatever_they_are_computed_in(tmp_path):
    out = np.linspace(-1, 1, 2 * 3 * 4).reshape(2, 3, 4)  # float64
    write_output(tmp_path / "o.bin", out)
    assert (tmp_path / "o.bin").read_bytes() == out.astype("<f4").tobytes()
    with pytest.raises(TestcaseError, match=rf"^{tmp_path / 'none.bin'}: no such file$"):
        read_output(tmp_path / "none.bin", Shape(2, 3, 4))


def test_atomic_write_names_the_error_of_a_file_it_could_not_open(tmp_path, monkeypatch):
    import attnbench.files as files
    from attnbench.errors import OutputError

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(files, "open", refuse, raising=False)
    # the user's path and the real cause, not a FileNotFoundError from cleaning up a file never made
    with pytest.raises(OutputError, match=r"out\.bin: Permission denied$"):
        atomic_write(tmp_path / "out.bin", lambda f: None)


def test_an_output_file_reads_chunks_and_values_by_flat_index(tmp_path, rng):
    from attnbench.cases.testcase import OutputFile

    out = rng.standard_normal((2, 3, 4)).astype(np.float32)
    write_output(tmp_path / "o.bin", out)
    flat = out.reshape(-1)
    with OutputFile(tmp_path / "o.bin", Shape(2, 3, 4)) as f:
        assert (f.size, f.shape, f.path) == (24, Shape(2, 3, 4), tmp_path / "o.bin")
        np.testing.assert_array_equal(f.chunk(0, 24), flat)
        middle = f.chunk(5, 11)
        assert middle.dtype == np.float32
        np.testing.assert_array_equal(middle, flat[5:11])
        np.testing.assert_array_equal(f.chunk(20, 30), flat[20:])  # clipped at the end of the file
        assert f.chunk(24, 30).size == 0 and f.chunk(30, 40).size == 0  # nothing past the end
        assert [f.value(i) for i in (0, 7, 23)] == [float(flat[0]), float(flat[7]), float(flat[23])]
    with pytest.raises(ValueError, match="closed file"):  # the context closed it
        f.chunk(0, 1)
    with OutputFile(tmp_path / "o.bin") as f:  # no shape: any whole number of floats
        assert (f.size, f.shape) == (24, None)
        np.testing.assert_array_equal(f.chunk(0, 24), flat)


def test_an_output_file_refuses_a_wrong_size_or_a_missing_file_in_one_line(tmp_path):
    from attnbench.cases.testcase import OutputFile

    write_output(tmp_path / "o.bin", np.zeros((2, 3, 4), np.float32))
    with pytest.raises(TestcaseError, match=rf"^{tmp_path / 'o.bin'}: an output for B=2, N=3, d=5 should be "
                                            r"4\*B\*N\*d = 120 bytes, but it is 96 bytes$"):
        OutputFile(tmp_path / "o.bin", Shape(2, 3, 5))
    (tmp_path / "odd.bin").write_bytes(b"\0" * 10)
    with pytest.raises(TestcaseError, match=rf"^{tmp_path / 'odd.bin'}: 10 bytes is not a whole number of float32 values$"):
        OutputFile(tmp_path / "odd.bin")
    with pytest.raises(TestcaseError, match=rf"^{tmp_path / 'none.bin'}: no such file$"):
        OutputFile(tmp_path / "none.bin")
    with pytest.raises(TestcaseError, match=rf"^{tmp_path}: is a directory, expected an output file$"):
        OutputFile(tmp_path)


def test_an_empty_output_file_is_refused_not_a_pass_of_zero_elements(tmp_path):
    """`verify empty.out empty.ref` printed PASS, "0 of 0" failing elements, and exited 0."""
    from attnbench.cases.testcase import OutputFile

    (tmp_path / "empty.out").write_bytes(b"")
    with pytest.raises(TestcaseError, match=rf"^{tmp_path / 'empty.out'}: is empty \(0 bytes\)"):
        OutputFile(tmp_path / "empty.out")


def test_an_output_file_it_may_not_read_is_one_line(tmp_path, monkeypatch):
    import attnbench.cases.testcase as testcase

    write_output(tmp_path / "o.bin", np.zeros((1, 1, 2), np.float32))

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(testcase, "open", refuse, raising=False)
    with pytest.raises(TestcaseError, match=rf"^{tmp_path / 'o.bin'}: permission denied$"):
        testcase.OutputFile(tmp_path / "o.bin")
    monkeypatch.undo()

    class Unlisted(type(tmp_path)):
        """A path whose folder may not be searched: stat itself is refused."""

        def stat(self, *args, **kwargs):
            raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(testcase, "Path", Unlisted)
    with pytest.raises(TestcaseError, match=rf"^{tmp_path / 'o.bin'}: permission denied$"):
        testcase.OutputFile(tmp_path / "o.bin")


def test_an_output_file_cut_short_after_it_was_opened_names_the_file_and_the_byte(tmp_path):
    from attnbench.cases.testcase import OutputFile

    write_output(tmp_path / "o.bin", np.zeros((2, 3, 4), np.float32))  # 96 bytes
    with OutputFile(tmp_path / "o.bin", Shape(2, 3, 4)) as f:
        os.truncate(tmp_path / "o.bin", 40)  # another process cuts it to ten floats
        np.testing.assert_array_equal(f.chunk(0, 8), np.zeros(8, np.float32))
        with pytest.raises(TestcaseError, match=rf"^{tmp_path / 'o.bin'}: file ended after 40 bytes while reading$"):
            f.chunk(8, 16)  # from byte 32: two floats, then the end of the file


def test_a_pipe_or_a_device_is_said_to_be_one_not_blamed_for_its_bytes():
    """`run <(cat t.in) out.bin` said "header has B=-1079888360" (the header was read twice from the pipe), and
    `verify <(cat o.bin) t01` that the output "is 0 bytes"."""
    from attnbench.cases.testcase import OutputFile

    valid = struct.pack("<3i", 1, 1, 1) + struct.pack("<3f", 1.0, 2.0, 3.0)  # B = N = d = 1: Q, K, V
    for read in (read_testcase, read_shape, lambda p: read_output(p, Shape(1, 1, 1)),
                 lambda p: OutputFile(p, Shape(1, 1, 1))):
        read_end, write_end = os.pipe()
        os.write(write_end, valid)  # held whole in the pipe's buffer, as `<(cat t.in)` would give it
        os.close(write_end)
        path = f"/proc/self/fd/{read_end}"
        try:
            with pytest.raises(TestcaseError, match=rf"^{path}: is a pipe, not a file"):
                read(path)
        finally:
            os.close(read_end)
    with pytest.raises(TestcaseError, match=r"^/dev/zero: is a device, not a file"):
        read_testcase("/dev/zero")
