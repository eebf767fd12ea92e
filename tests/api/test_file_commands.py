"""The API over files on disk: the suite's cases a selector names."""

from attnbench.api import suite_cases


def test_suite_cases_by_group_and_range():
    assert "t29" in [c.name for c in suite_cases("known")]
    assert [c.name for c in suite_cases("t01-t03")] == ["t01", "t02", "t03"]


def test_a_large_gen_says_how_much_it_writes_and_refuses_what_the_disk_cannot_hold(monkeypatch):
    import shutil
    from collections import namedtuple

    import pytest

    from attnbench import api
    from attnbench.api import file_commands as files
    from attnbench.errors import OutputError

    said = []
    monkeypatch.setattr(files, "SIZE_NOTICE_BYTES", 0)
    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10, 10, 100))
    with pytest.raises(OutputError, match="need 0.0 GB, but only 0.0 GB is free"):
        api.generate(["odd_17x1"], force=True, notice=said.append)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10, 10, 1 << 40))
    api.generate(["odd_17x1"], force=True, notice=said.append)
    assert said and said[0].startswith("writing 0.0 GB (1 case(s): inputs and float64 references) to ")


def test_verify_against_a_suite_case_checks_the_output_size_before_making_anything(tmp_path):
    """`verify small.bin t22` wrote t22's 1 GB input and computed its reference before saying the size was wrong:
    the manifest knows the shape, so the size is checked first and nothing is generated."""
    import pytest

    from attnbench import api
    from attnbench.cases import suite
    from attnbench.errors import TestcaseError

    case = suite.get_case("t22")
    for path in (suite.input_path(case), suite.reference_path(case)):
        path.unlink(missing_ok=True)
    small = tmp_path / "small.bin"
    small.write_bytes(b"\0" * 16)
    with pytest.raises(TestcaseError, match=r"small.bin: an output for .* should be"):
        api.verify(small, "t22", progress=lambda *a: pytest.fail("nothing may be generated"))
    assert not suite.input_path(case).exists() and not suite.reference_path(case).exists()
    with pytest.raises(TestcaseError, match="small.bin: an output for"):  # --case gives a shape without generating
        api.verify(small, small, case="t22")
    assert not suite.input_path(case).exists()


def test_a_testcase_input_given_as_verifys_reference_is_refused(tmp_path):
    """`verify case.in case.in` compared an input's bytes with themselves and passed, exit 0."""
    import pytest

    from attnbench import api
    from attnbench.cases.inputs import seeded_testcase
    from attnbench.cases.testcase import Shape, write_testcase
    from attnbench.errors import TestcaseError

    given = tmp_path / "case.in"
    write_testcase(given, seeded_testcase(Shape(1, 4, 8), 7))
    with pytest.raises(TestcaseError, match=r"^.*case\.in: a testcase input \(B=1, N=4, d=8\), not a reference output"):
        api.verify(given, given)


def test_a_damaged_input_beside_the_reference_is_no_error_of_verify(tmp_path):
    """`verify out.bin ref.bin` with a ref.in beside it that is not a testcase (a report written over it) ended in
    an error about ref.in, a file the user never named, and exit 2."""
    import numpy as np

    from attnbench import api

    out, ref = tmp_path / "out.bin", tmp_path / "ref.bin"
    values = np.linspace(-1, 1, 64, dtype=np.float32)
    values.tofile(out)
    values.tofile(ref)
    (tmp_path / "ref.in").write_text("# attnbench report\n\nnot a testcase at all\n")
    report, used = api.verify(out, ref)
    assert report.passed and used == ref


def test_a_reference_holding_nan_is_bad_input_naming_it_not_a_failed_output(tmp_path):
    """`verify out.bin ref.bin` with a NaN in ref.bin said FAIL "got -0.97, want nan" and exited 1, blaming the output."""
    import numpy as np
    import pytest

    from attnbench import api
    from attnbench.errors import ReferenceNotFinite

    out, ref = tmp_path / "out.bin", tmp_path / "ref.bin"
    values = np.linspace(-1, 1, 64, dtype=np.float32)
    values.tofile(out)
    values[5] = np.nan
    values.tofile(ref)
    with pytest.raises(ReferenceNotFinite, match=r"ref\.bin: the reference holds NaN or Inf in 1 of 64 elements") as refused:
        api.verify(out, ref)
    assert refused.value.exit_code == 2


def test_verify_and_load_results_from_python_name_an_empty_argument(tmp_path):
    """From Python verify("", ...) said ": is a directory", verify(..., case="") and load_results("") said
    ".: is a ..." (the command line refuses an empty word already)."""
    import numpy as np
    import pytest

    from attnbench import api
    from attnbench.errors import UsageError

    out = tmp_path / "o.bin"
    np.zeros(8, np.float32).tofile(out)
    for kwargs, said in (({"out": "", "ref": str(out)}, "out is empty"), ({"out": str(out), "ref": ""}, "ref is empty"),
                         ({"out": str(out), "ref": str(out), "case": ""}, "case is empty")):
        with pytest.raises(UsageError, match=said):
            api.verify(**kwargs)
    with pytest.raises(UsageError, match="path is empty"):
        api.load_results("")


def test_verify_says_why_the_input_beside_the_reference_told_no_shape(tmp_path):
    """A damaged t.in beside REF left positions flat with 'B, N, d unknown' and no word of why."""
    import struct

    import numpy as np

    from attnbench.api import file_commands as files

    values = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    values.tofile(tmp_path / "t.out")
    values.tofile(tmp_path / "o.out")
    (tmp_path / "t.in").write_bytes(struct.pack("<3i", 2, 8, 5) + bytes(100))
    said = []
    report, _ = files.verify(tmp_path / "o.out", tmp_path / "t.out", notice=said.append)
    assert report.passed and report.positions == "flat"
    assert said == [f"B, N, d unknown (the input beside it is not read: {tmp_path / 't.in'}: header says B=2, N=8, "
                    "d=5, so the file should be 12 + 12*B*N*d = 972 bytes, but it is 112 bytes): positions are flat "
                    "element indices (pass --case for batch, row, column)"]
    (tmp_path / "t.in").unlink()
    said.clear()
    files.verify(tmp_path / "o.out", tmp_path / "t.out", notice=said.append)
    assert said == ["B, N, d unknown: positions are flat element indices (pass --case for batch, row, column)"]
