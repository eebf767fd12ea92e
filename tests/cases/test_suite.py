import hashlib
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest

from attnbench import locations
from attnbench.cases import suite
from attnbench.cases.inputs import seeded_testcase, sha256_of_testcase
from attnbench.cases.testcase import Shape, read_output, read_testcase
from attnbench.errors import TestcaseError, UnknownName


# The 2024 course's thirty shapes, as a student's report publishes them (four other reports agree where they
# show a case): the suite's version 3 holds them.
COURSE_2024 = {
    "t01": (320, 128, 32), "t02": (160, 128, 64), "t03": (160, 256, 32), "t04": (80, 256, 64), "t05": (80, 512, 32),
    "t06": (40, 512, 64), "t07": (40, 1024, 32), "t08": (20, 1024, 64), "t09": (20, 2048, 32), "t10": (10, 2048, 64),
    "t11": (13600, 128, 32), "t12": (9600, 128, 64), "t13": (6400, 256, 32), "t14": (2000, 256, 64),
    "t15": (2000, 512, 32), "t16": (800, 512, 64), "t17": (800, 1024, 32), "t18": (300, 1024, 64),
    "t19": (300, 2048, 32), "t20": (100, 2048, 64), "t21": (500, 2048, 32), "t22": (500, 2048, 64),
    "t23": (100, 4096, 32), "t24": (100, 4096, 64), "t25": (30, 8192, 32), "t26": (10, 8192, 64),
    "t27": (10, 16384, 32), "t28": (4, 16384, 64), "t29": (4, 32768, 32), "t30": (2, 32768, 64),
}


def test_the_course_cases_are_the_courses_published_shapes_with_their_source():
    course = suite.cases_in("course")
    assert [c.name for c in course] == [f"t{i:02d}" for i in range(1, 31)]
    assert {c.name: (c.shape.B, c.shape.N, c.shape.d) for c in course} == COURSE_2024
    assert [c.name for c in suite.cases_in("known")] == list(COURSE_2024)
    assert all("hw4_112062519.md" in c.note for c in course)
    assert suite.SUITE_VERSION == 3


def test_t12_is_past_the_2025_specs_bound_and_its_sizes_still_fit_32_bit_offsets():
    t12 = suite.get_case("t12").shape  # B*N*d = 78.6 M, beyond the 2025 spec's 56 M
    assert t12.elements == 9600 * 128 * 64 > 56_000_000
    assert 3 * t12.elements < 2**31 and t12.input_bytes < 2**31


def test_report_workloads_are_present():
    squares = suite.cases_in("square")
    assert len(squares) == 102
    assert [c.shape.N for c in squares[:3]] == [63, 64, 65]
    assert all(c.shape.N == c.shape.d and c.shape.B == 1 for c in squares)
    heads = {c.name: (c.shape.B, c.shape.N, c.shape.d) for c in suite.cases_in("largehead")}
    assert heads == {"hd512": (4, 64, 512), "hd2048": (4, 64, 2048), "hd4096": (2, 32, 4096), "hd8192": (1, 16, 8192)}
    assert suite.get_case("single").shape.N == 262144
    odd = suite.cases_in("odd")
    assert {1, 17, 100, 1000} <= {c.shape.N for c in odd}
    assert {1, 48, 80, 128} <= {c.shape.d for c in odd}


def test_every_case_records_seed_and_sha256():
    seeds = [c.seed for c in suite.SUITE.values()]
    assert len(set(seeds)) == len(seeds)
    assert all(c.input_sha256 and len(c.input_sha256) == 64 for c in suite.SUITE.values())


@pytest.mark.parametrize("name", ["t02", "odd_17x48", "odd_1x32", "sq63", "hd512"])
def test_generation_reproduces_the_recorded_bytes(name):
    case = suite.get_case(name)
    path = suite.generate_input(case)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == case.input_sha256
    tc = read_testcase(path)
    assert tc.shape == case.shape
    assert tc.qkv.min() >= -3 and tc.qkv.max() < 3


def test_values_do_not_depend_on_chunking(monkeypatch):
    whole = np.concatenate(list(suite.input_values(7, 1000)))
    monkeypatch.setattr(suite, "_GEN_CHUNK", 37)
    chunked = np.concatenate(list(suite.input_values(7, 1000)))
    np.testing.assert_array_equal(whole, chunked)


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_values_filled_by_threads_are_the_streams_bits_whatever_the_chunks(monkeypatch, threads):
    """A class's fresh inputs are filled by several threads, each from the seed's generator advanced to its
    chunk: the same bits as the one stream, for a count that ends mid-chunk."""
    whole = np.concatenate(list(suite.input_values(7, 1000)))
    monkeypatch.setattr(suite, "_GEN_CHUNK", 37)
    filled = np.full(1000, np.nan, dtype="<f4")
    suite.fill_values(7, filled, threads)
    np.testing.assert_array_equal(filled, whole)
    t01 = suite.get_case("t01")
    assert sha256_of_testcase(seeded_testcase(t01.shape, t01.seed)) == t01.input_sha256  # the suite's recorded bytes


def test_a_changed_generator_is_caught(monkeypatch):
    case = suite.get_case("odd_17x1")
    monkeypatch.setitem(suite.SUITE, case.name, case)
    wrong = suite.SuiteCase(**{**case.__dict__, "input_sha256": "0" * 64})
    with pytest.raises(TestcaseError, match="the generator is not reproducing the recorded bytes$"):
        suite.generate_input(wrong, force=True)
    assert not suite.input_path(wrong).exists()


def attention_by_loops(tc) -> list[list[list[float]]]:
    """softmax(QK^T/sqrt(d))V one element at a time in Python floats (float64), sharing no code with attnbench."""
    out = []
    for q, k, v in zip(tc.q.tolist(), tc.k.tolist(), tc.v.tolist()):
        d = len(q[0])
        rows = []
        for q_row in q:
            scores = [sum(a * b for a, b in zip(q_row, k_row)) / math.sqrt(d) for k_row in k]
            top = max(scores)
            weights = [math.exp(s - top) for s in scores]
            total = math.fsum(weights)
            rows.append([math.fsum(w * v_row[c] for w, v_row in zip(weights, v)) / total for c in range(d)])
        out.append(rows)
    return out


def test_reference_file_is_exact_attention_rounded_to_float32(tmp_path):
    """The stored reference against attention computed a second way, by explicit loops."""
    case = suite.get_case("odd_17x48")
    suite.generate_input(case)
    path = suite.generate_reference(case)
    expected = np.array(attention_by_loops(read_testcase(suite.input_path(case))))
    stored = read_output(path, case.shape)
    assert stored.dtype == np.float32
    # Both are float64 attention; the file holds it rounded to float32: within half an ulp, plus
    # float64 summation-order noise far below it.
    np.testing.assert_allclose(stored, expected, rtol=2**-24, atol=1e-12)


def test_resolve_names_paths_and_generates_on_first_use(tmp_path):
    from attnbench.cases.inputs import FileInput, SuiteInput, resolve

    resolved = resolve("odd_100x32")
    assert isinstance(resolved, SuiteInput) and resolved.case.name == "odd_100x32"
    resolved.prepare()
    assert resolved.path.exists()
    mine = tmp_path / "mine.in"
    mine.write_bytes(resolved.path.read_bytes())
    assert isinstance(resolve(str(mine)), FileInput)
    with pytest.raises(UnknownName, match="neither a file nor a suite case"):
        resolve("t99")
    with pytest.raises(TestcaseError, match="no such file"):
        resolve(str(tmp_path / "missing.in"))


def test_selectors_combine_names_and_groups():
    chosen = [c.name for c in suite.cases_in("t10,known,t10")]
    assert chosen[0] == "t10" and chosen.count("t10") == 1 and "t29" in chosen
    assert len(suite.cases_in("all")) == len(suite.SUITE)


def _generate_in_child(name: str, folder: str) -> tuple[str, int]:
    """Generate a case in a fresh process; returns the path and how many values this process generated."""
    import os

    os.environ["ATTNBENCH_DATA"] = folder
    from attnbench.cases import suite as child_suite

    made = [0]
    path = child_suite.generate_input(child_suite.get_case(name), lambda n: made.__setitem__(0, made[0] + n))
    return str(path), made[0]


def test_two_processes_generating_one_case_leave_one_intact_file(tmp_path):
    import multiprocessing

    name = "sq1025"  # 12 MB: long enough for the two to overlap
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        (path_a, made_a), (path_b, made_b) = pool.starmap(_generate_in_child, [(name, str(tmp_path))] * 2)
    case = suite.get_case(name)
    assert path_a == path_b
    assert made_a + made_b == 3 * case.shape.elements  # the second waited on the lock, then found it made
    assert suite.sha256_file(tmp_path / f"{name}.in") == case.input_sha256
    assert not list(tmp_path.glob("*.partial")) and not list(tmp_path.glob(".*.partial"))

def test_the_suite_file_is_read_field_by_field():
    import json

    raw = {c["name"]: c for c in json.loads(locations.suite_manifest().read_text())["cases"]}
    loaded = suite._load_suite()
    assert loaded == suite.SUITE and list(loaded) == list(raw)
    for name in ("t02", "odd_17x48", "single"):
        c, case = raw[name], loaded[name]
        assert (case.name, case.shape, case.seed) == (c["name"], Shape(c["B"], c["N"], c["d"]), c["seed"])
        assert (case.group, case.provenance, case.note, case.input_sha256) == (
            c["group"], c["provenance"], c.get("note", ""), c.get("input_sha256"))
        assert case.time_limit_s == c.get("time_limit_s")


def test_the_course_cases_carry_their_time_limits_and_no_other_case_has_one():
    limited = {name for name, case in suite.SUITE.items() if case.time_limit_s is not None}
    assert limited == {f"t{i:02d}" for i in range(1, 31)}
    assert [suite.SUITE[n].time_limit_s for n in ("t01", "t10", "t11", "t20", "t21", "t30")] == [2, 2, 6, 6, 10, 10]
    assert suite.TIME_LIMITS_SET_FOR == "GTX 1080"


def test_a_case_without_a_note_gets_an_empty_one(monkeypatch, tmp_path):
    import json

    (tmp_path / "suite.json").write_text(json.dumps({"cases": [
        {"name": "x1", "B": 1, "N": 2, "d": 3, "seed": 4, "group": "odd", "provenance": "test"}]}))
    monkeypatch.setattr(locations, "suite_manifest", lambda: tmp_path / "suite.json")
    assert suite._load_suite() == {"x1": suite.SuiteCase("x1", Shape(1, 2, 3), 4, "odd", "test", "", None)}


def test_data_folder_defaults_to_the_checkout_and_follows_the_variable(monkeypatch, tmp_path):
    monkeypatch.delenv("ATTNBENCH_DATA")
    assert suite.data_dir() == locations.SOURCE_ROOT / "testcases" / "data"  # a writable source tree
    monkeypatch.setattr(locations, "in_source_tree", lambda: False)
    assert "attnbench" in str(suite.data_dir()) and locations.SOURCE_ROOT not in suite.data_dir().parents
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "elsewhere"))
    assert suite.data_dir() == tmp_path / "elsewhere"


def test_generation_makes_missing_folders_reports_progress_and_hashes_as_recorded(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "a" / "b"))
    case = suite.get_case("odd_17x1")  # B=2, N=17, d=1: 102 values
    done = []
    path = suite.generate_input(case, done.append)
    assert path == tmp_path / "a" / "b" / "odd_17x1.in" and sum(done) == 3 * case.shape.elements
    assert suite.sha256_file(path) == case.input_sha256 == suite.input_sha256(case)
    assert suite.sha256_file(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert suite.is_generated(case) and not suite.has_reference(case)
    rows = []
    ref = suite.generate_reference(case, rows.append)
    assert sum(rows) == case.shape.B * case.shape.N
    assert ref.stat().st_size == case.shape.output_bytes and suite.has_reference(case)
    ref.write_bytes(b"\0" * 8)  # a wrong size is not a reference
    path.write_bytes(path.read_bytes()[:-4])
    assert not suite.has_reference(case) and not suite.is_generated(case)



def test_resolve_tells_files_from_names(monkeypatch, tmp_path):
    from attnbench.cases.inputs import FileInput, SuiteInput, resolve

    monkeypatch.chdir(tmp_path)
    for name in ("missing.in", "missing.bin", "missing.dat", f"sub{os.sep}missing", "./t02"):
        with pytest.raises(TestcaseError, match=f"^{re.escape(name)}: no such file$"):
            resolve(name)
    source = resolve("odd_17x1")
    source.prepare()
    (tmp_path / "mine").write_bytes(source.path.read_bytes())  # no folder, no suffix: a file all the same
    mine = resolve("mine")
    assert isinstance(mine, FileInput) and (mine.label, mine.path) == ("mine", Path("mine"))
    assert mine.load().shape == Shape(2, 17, 1)
    assert isinstance(source, SuiteInput) and (source.label, source.path) == ("odd_17x1", suite.input_path(source.case))


def test_resolve_leaves_generation_to_prepare(monkeypatch, tmp_path):
    from attnbench.cases.inputs import resolve

    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path))  # an empty data folder
    resolved = resolve("odd_33x64")
    assert resolved.case == suite.get_case("odd_33x64") and not resolved.path.exists()
    made = []
    resolved.prepare(lambda what, total: _Recorder(made))
    assert resolved.path.exists() and sum(made) == 3 * resolved.shape.elements


class _Recorder:
    """A progress factory's context manager that records the units advanced."""

    def __init__(self, made: list[int]) -> None:
        self.made = made

    def __enter__(self):
        return self.made.append

    def __exit__(self, *exc: object) -> None:
        pass


def test_files_already_made_are_kept_unless_forced_but_a_changed_reference_is_remade(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path))
    case = suite.get_case("odd_17x1")
    path, ref = suite.generate_input(case), suite.generate_reference(case)
    made, rows = [], []
    assert suite.generate_input(case, made.append) == path and suite.generate_reference(case, rows.append) == ref
    assert made == rows == []  # neither made again
    good = ref.read_bytes()
    ref.write_bytes(b"\0" * case.shape.output_bytes)  # the right size, but not the bytes recorded
    assert suite.reference_state(case) == "changed"
    with pytest.raises(TestcaseError, match="regenerate it with `attnbench gen odd_17x1`"):
        suite.stored_reference(case)
    suite.generate_reference(case, rows.append)
    assert sum(rows) == case.shape.B * case.shape.N and ref.read_bytes() == good
    path.write_bytes(b"\0" * case.shape.input_bytes)  # the right size: taken as made (gen checks its sha256)
    assert suite.generate_input(case, made.append) == path and made == []
    suite.generate_input(case, made.append, force=True)
    assert sum(made) == 3 * case.shape.elements and suite.sha256_file(path) == case.input_sha256


def test_a_reference_without_its_record_is_not_trusted(monkeypatch, tmp_path):
    """A reference left by an older attnbench (or one whose record was lost) is computed again."""
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path))
    case = suite.get_case("odd_17x1")
    suite.generate_input(case)
    suite.generate_reference(case)
    record = suite.reference_record_path(case)
    assert record.read_text().split() == [suite.sha256_file(suite.reference_path(case)), "odd_17x1.ref"]
    record.unlink()
    assert not suite.has_reference(case) and suite.stored_reference(case) is None


def test_a_reference_is_held_in_float32_before_it_is_written(monkeypatch, tmp_path):
    """Half the memory of float64 for a long case: the array handed to write_output is already float32."""
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path))
    case = suite.get_case("odd_17x1")
    suite.generate_input(case)
    handed = []
    real_write_output = suite.write_output
    monkeypatch.setattr(suite, "write_output", lambda path, out: (handed.append(out.dtype), real_write_output(path, out)))
    suite.generate_reference(case)
    assert handed == [np.float32] and suite.has_reference(case)


def test_one_parser_of_case_lists_expands_ranges(tmp_path, monkeypatch):
    assert suite.case_parts("t01-t03, odd_17x48,,") == ["t01", "t02", "t03", "odd_17x48"]
    assert suite.case_parts("t09-10") == ["t09", "t10"]
    assert suite.case_parts(["t09-t10", "course"]) == ["t09", "t10", "course"]
    for bad in ("t29-t31", "t03-t01", "t01-sq63"):
        with pytest.raises(UnknownName, match=bad):
            suite.case_parts(bad)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t01-t03").write_bytes(b"")
    assert suite.case_parts("t01-t03") == ["t01-t03"]  # a file named like a range is the file


def test_every_command_takes_the_same_case_lists(tmp_path):
    from click.testing import CliRunner

    import attnbench
    from attnbench.cases.inputs import inputs_for
    from attnbench.cli import main

    assert [c.name for c in suite.cases_in(["t01-t02"])] == ["t01", "t02"]
    assert [i.label for i in inputs_for(["t01-t02", "t02"])] == ["t01", "t02"]
    result = CliRunner().invoke(main, ["gen", "t01-t02", "--no-reference"])
    assert result.exit_code == 0, result.output
    assert suite.is_generated(suite.SUITE["t01"]) and suite.is_generated(suite.SUITE["t02"])
    result = CliRunner().invoke(main, ["cases", "t01-t03"])
    assert result.exit_code == 0 and all(n in result.output for n in ("t01", "t02", "t03"))
    rs = attnbench.compare(["cpu"], ["odd_17x48"], timing=attnbench.api.TimingOptions(reps=2))
    assert [c.case for c in rs.cells] == ["odd_17x48"]


def test_generation_leaves_no_lock_file(private_data_dir):
    case = suite.get_case("odd_17x48")
    suite.generate_input(case, force=True)
    suite.generate_reference(case, force=True)
    assert not list(Path(private_data_dir).glob(".*.lock"))


def test_an_input_changed_in_place_is_named(private_data_dir):
    case = suite.get_case("odd_33x64")
    path = suite.generate_input(case, force=True)
    suite.check_input_bytes(case)  # as generated: nothing to say
    data = bytearray(path.read_bytes())
    data[100] ^= 0x40  # same size, one bit changed
    path.write_bytes(bytes(data))
    with pytest.raises(TestcaseError, match=f"{re.escape(str(path))}: its bytes are not those recorded"):
        suite.check_input_bytes(case)
    suite.generate_input(case, force=True)


def test_gen_makes_a_reference_on_the_gpu_where_there_is_one(monkeypatch):
    """t21-t30's references take minutes on a CPU: `attnbench gen` makes them on the GPU when it can."""
    from attnbench.cases import gpu_reference
    from attnbench.cases.reference import reference_output

    made = []
    monkeypatch.setattr(gpu_reference, "_availability", [""])
    monkeypatch.setattr(gpu_reference, "gpu_reference_output",
                        lambda testcase, progress, dtype: made.append(dtype) or reference_output(testcase, progress, dtype))
    case = suite.get_case("odd_17x48")
    suite.generate_input(case)
    suite.generate_reference(case, force=True)
    assert made == [np.float32] and suite.reference_state(case) == "ok"


def test_an_input_an_earlier_suite_generated_under_another_b_is_replaced_and_a_users_file_is_not(monkeypatch, tmp_path):
    """Version 2 had t12 as (6800, 128, 64): its generated file must not block version 3's (9600, 128, 64)."""
    from dataclasses import replace

    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path))  # files of its own: it leaves a user's file behind

    from attnbench.cases.testcase import Shape

    now = replace(suite.get_case("odd_17x48"), input_sha256=None)
    monkeypatch.setitem(suite.SUITE, now.name, now)
    earlier = replace(now, shape=Shape(now.shape.B + 3, now.shape.N, now.shape.d))
    monkeypatch.setitem(suite.SUITE, now.name, earlier)
    suite.generate_input(earlier)
    monkeypatch.setitem(suite.SUITE, now.name, now)
    assert not suite.is_generated(now)
    path = suite.generate_input(now)  # the earlier suite's own file: replaced
    assert path.stat().st_size == now.shape.input_bytes
    mine = bytearray(Shape(now.shape.B + 3, now.shape.N, now.shape.d).input_bytes)
    mine[:12] = np.array([now.shape.B + 3, now.shape.N, now.shape.d], "<i4").tobytes()
    path.write_bytes(bytes(mine))  # a user's file of the same header, other values: never replaced unasked
    with pytest.raises(TestcaseError, match="attnbench did not write it"):
        suite.generate_input(now)


def test_every_value_is_the_float64_formula_rounded_once(monkeypatch):
    """The generator's whole-number arithmetic gives, for each of the 2^24 values a draw can take, the bits of
    top * 6 / 2^24 - 3 computed in float64 and rounded to float32 (the suite's recorded bytes depend on it)."""
    tops = np.arange(1 << suite._VALUE_BITS, dtype=np.uint64)

    class EveryTop:
        def __init__(self, seed):
            self.done = 0

        def random_raw(self, n):
            raw = tops[self.done : self.done + n] << np.uint64(64 - suite._VALUE_BITS)
            self.done += n
            return raw | np.uint64(12345)  # the low bits are dropped

    monkeypatch.setattr(suite.np.random, "PCG64", EveryTop)
    got = np.concatenate(list(suite.input_values(0, tops.size)))
    want = (tops.astype(np.float64) * (6.0 / (1 << suite._VALUE_BITS)) - 3.0).astype("<f4")
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_a_case_named_without_its_zero_is_offered_first():
    """`--cases t1` suggested "t21 or t19 or t18"; a TA meant t01."""
    with pytest.raises(suite.UnknownName, match=r"did you mean t01\b"):
        suite.get_case("t1")


@pytest.mark.parametrize("kind", ["dangling link", "file"])
def test_a_data_folder_that_is_a_dangling_link_or_a_file_is_named_so_not_file_exists(tmp_path, monkeypatch, kind):
    """ATTNBENCH_DATA as a symbolic link to a folder removed since: mkdir said "File exists" of a folder that is not."""
    from attnbench.errors import OutputError

    data = tmp_path / "data"
    if kind == "file":
        data.write_text("not a folder")
    else:
        data.symlink_to(tmp_path / "gone")
    monkeypatch.setenv(locations.DATA_ENV, str(data))
    expected = "not a folder" if kind == "file" else f"a symbolic link to '{tmp_path / 'gone'}', which does not exist"
    with pytest.raises(OutputError, match=re.escape(f"{data}: the suite's generated files cannot be written there "
                                                    f"({expected})")):
        suite.generate_input(suite.SUITE["odd_17x1"])


def test_a_manifest_this_user_may_not_read_is_said_so_not_called_damaged(tmp_path, monkeypatch):
    """Root reads any file, so the refusal is the test's: "damaged: restore it" sent a user to restore a file that
    only needed read permission."""
    from attnbench.errors import SuiteManifestDamaged

    manifest = tmp_path / "suite.json"
    manifest.write_text("{}")
    real_read = Path.read_text

    def refused(self, *args, **kwargs):
        if self == manifest:
            raise PermissionError(13, "Permission denied")
        return real_read(self, *args, **kwargs)

    monkeypatch.setattr(locations, "suite_manifest", lambda: manifest)
    monkeypatch.setattr(Path, "read_text", refused)
    with pytest.raises(SuiteManifestDamaged) as raised:
        suite._read_manifest()
    assert str(raised.value) == (f"{manifest}: cannot be read (Permission denied); the suite's manifest must be "
                                 "readable by the user running attnbench")
