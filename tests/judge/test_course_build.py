"""attnbench.judge.course_build: submissions built as the course builds them (make hw4, the example's flags,
old architectures on a new toolkit), on a class made like the real ones."""

import shutil

import pytest

from attnbench.errors import UsageError
from attnbench.judge.course_build import (
    APPEND_ENV,
    BuildRules,
    build_rules,
    c_program,
    course_example,
    make_steps,
    no_hw4_target,
    oldest_arch,
    refused_architecture,
    user_command,
)
from attnbench.judge.submissions import HIP_NOT_JUDGED, build, find_submissions
from tests.judge.classes import class_sandbox
from tests.judge.course_class import make_course_class

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None or shutil.which("make") is None,
                                reason="nvcc and make build the course-style class")


def test_nvccs_refusal_of_an_architecture_is_read_in_both_wordings():
    assert refused_architecture("nvcc fatal   : Unsupported gpu architecture 'sm_61'\n") == "sm_61"
    assert refused_architecture("nvcc fatal   : Unsupported gpu architecture 'compute_61'") == "compute_61"
    assert refused_architecture("nvcc fatal : Value 'sm_20' is not defined for option 'gpu-architecture'") == "sm_20"
    assert refused_architecture("hw4.cu(3): error: expected a ';'") is None


def test_only_makes_own_no_rule_for_hw4_means_the_makefile_has_no_hw4_target():
    assert no_hw4_target("make: *** No rule to make target 'hw4'.  Stop.")
    assert not no_hw4_target("make: *** No rule to make target 'hw4.cu', needed by 'hw4'.  Stop.")
    assert not no_hw4_target("make: *** No rule to make target 'seq-attention.c', needed by 'seq-attention'.  Stop.")


def test_the_steps_keep_the_students_flags_and_append_the_architecture():
    make, plain = make_steps(BuildRules("sm_90"))
    assert make.argv == ("make", "hw4") and plain.argv == ("make",) and not make.env
    appended = make.appending("sm_90")
    assert appended.argv == ("make", "hw4") and appended.env == {APPEND_ENV: "-arch=sm_90"}
    given, _ = make_steps(BuildRules("sm_90", arch_given=True))
    assert given.env == {APPEND_ENV: "-arch=sm_90"}  # --arch: appended from the start
    example = course_example("hw4.cu", BuildRules("sm_90"))
    assert example.argv == ("nvcc", "-std=c++11", "-O3", "-Xptxas=-v", "-arch=sm_90", "-o", "hw4", "hw4.cu", "-lm")
    assert user_command(BuildRules("native", True, "make hw4")).argv == ("/bin/sh", "-c", "make hw4")


def test_an_architecture_that_is_not_one_is_refused_in_one_line():
    assert build_rules("sm_90").arch == "sm_90" and build_rules("native").arch_given
    for bad in ("sm_90; rm -rf /", "", "-O3", "sm 90"):
        with pytest.raises(UsageError, match="--arch"):
            build_rules(bad)


def test_an_architecture_this_nvcc_does_not_build_is_refused_before_any_build(monkeypatch):
    """--arch sm_61 on CUDA 13 failed every CUDA build, each row blaming its student for the TA's option."""
    import attnbench.judge.course_build as course_build

    monkeypatch.setattr(course_build, "nvcc_architectures", lambda: frozenset({"sm_75", "sm_90", "sm_120"}))
    with pytest.raises(UsageError, match="--arch sm_61: this nvcc does not build for it .it builds sm_75 to sm_120"):
        build_rules("sm_61")
    assert build_rules("sm_90a").arch == "sm_90a" and build_rules("compute_90").arch == "compute_90"
    assert build_rules("native").arch == "native"
    monkeypatch.setattr(course_build, "nvcc_architectures", lambda: frozenset())  # no nvcc: nothing to say
    assert build_rules("sm_61").arch == "sm_61"


def test_the_rule_says_how_a_makefile_and_a_lone_file_are_built():
    text = BuildRules("sm_90").describe()
    assert "`make hw4`" in text and "-arch=sm_90 appended when nvcc refuses" in text and "-lm" in text
    assert "--build-command" in BuildRules("sm_90", True, "make").describe()


def test_a_hip_folder_is_a_row_and_hip_beside_cuda_is_noted(tmp_path):
    make_course_class(tmp_path)
    found = {s.name: s for s in find_submissions([tmp_path])}
    assert len(found) == 8  # every folder given is a row
    assert found["hip_only"].how == "hip" and not found["hip_only"].unjudged
    assert found["hip_beside"].how == "nvcc" and "hw4.hip is not judged" in found["hip_beside"].unjudged
    built = build(found["hip_only"], tmp_path / "builds")
    assert not built.ok and built.message == HIP_NOT_JUDGED


@pytest.fixture(scope="module")
def course_builds(tmp_path_factory):
    """Every submission of the course-style class built as the judge builds them (nvcc's oldest architecture
    here, without a GPU), in the class's sandbox."""
    if shutil.which("nvcc") is None or shutil.which("make") is None:
        pytest.skip("nvcc and make build the course-style class")
    folder = make_course_class(tmp_path_factory.mktemp("course"))
    rules = build_rules()
    return rules, {s.name: build(s, folder / ".." / "builds", settings=class_sandbox(), rules=rules)
                   for s in find_submissions([folder])}


@needs_nvcc
def test_the_courses_own_makefile_builds_with_make_hw4_and_the_judging_architecture(course_builds):
    rules, built = course_builds
    row = built["course_makefile"]
    assert row.ok, row.message
    assert "`make hw4` with -arch=" in row.message and "its output said nvcc refused sm_61" in row.message
    assert "seq-attention" not in row.message  # make hw4, never plain make: the course's seq-* are not there
    assert built["all_hw4"].ok and "`make hw4`" in built["all_hw4"].message


@needs_nvcc
def test_the_students_own_flags_reach_nvcc(course_builds):
    _, built = course_builds
    row = built["own_flags"]  # its hw4.cu stops with #error unless the Makefile's -DSTUDENT_TILE reached nvcc
    assert row.ok and "`make hw4`" in row.message, row.message


@needs_nvcc
def test_a_lone_hw4_cu_and_a_failing_makefile_are_built_with_the_example_flags(course_builds):
    rules, built = course_builds
    assert built["cu_only"].ok and built["cu_only"].message.startswith("built with the course's example flags")
    assert f"-arch={rules.arch}" in built["cu_only"].message and "-Xptxas=-v" in built["cu_only"].message
    fell_back = built["makefile_fails"]
    assert fell_back.ok and fell_back.message.startswith("its Makefile failed, so built with the course's example")
    assert "no-such-compiler" in fell_back.message  # why the Makefile failed is kept in the row


@needs_nvcc
def test_a_submission_nothing_builds_says_why_each_step_failed(course_builds):
    _, built = course_builds
    row = built["nothing_builds"]
    assert not row.ok and row.message.startswith("the build failed: `make hw4` (exit 2)")
    assert "then the course's example flags, -arch=" in row.message and "for the course's sm_61 (nvcc" in row.message
    assert "error" in row.message


@needs_nvcc
def test_build_command_replaces_the_steps(tmp_path):
    make_course_class(tmp_path / "class" if (tmp_path / "class").mkdir() is None else tmp_path)
    (submission,) = find_submissions([tmp_path / "class" / "cu_only"])
    built = build(submission, tmp_path / "builds", settings=class_sandbox(),
                  rules=BuildRules(oldest_arch(), False, "nvcc -O2 -o hw4 hw4.cu"))
    assert built.ok and built.message.startswith("built with --build-command 'nvcc -O2 -o hw4 hw4.cu'")


def test_a_makefile_that_fails_on_purpose_buys_no_time_past_the_build_timeout(tmp_path):
    """Red team: `make hw4` built hw4.tmp, printed make's 'no hw4 target' and nvcc's refusal, then slept past the
    timeout; the judge still ran plain `make` (a second past the deadline each), whose `all:` renamed hw4.tmp,
    and the row read 'built with plain make'. A step stopped at the timeout ends the build."""
    if shutil.which("make") is None or shutil.which("cc") is None:
        pytest.skip("needs make and cc")
    folder = tmp_path / "slow"
    folder.mkdir()
    (folder / "Makefile").write_text(
        "all:\n\tmv hw4.tmp hw4\nhw4:\n\tprintf 'int main(void){return 0;}' > x.c && cc -o hw4.tmp x.c\n"
        "\techo \"make: *** No rule to make target 'hw4'.  Stop.\" >&2\n"
        "\techo \"nvcc fatal   : Unsupported gpu architecture 'sm_61'\" >&2\n\tsleep 30\n")
    (submission,) = find_submissions([folder])
    started = __import__("time").monotonic()
    built = build(submission, tmp_path / "builds", timeout_s=3, settings=class_sandbox(), rules=BuildRules("sm_90"))
    took = __import__("time").monotonic() - started
    assert not built.ok and built.message.startswith("the build ran past 3 s and was stopped"), built.message
    assert took < 3 + 2.5  # one timeout, not one per step


def test_a_missing_cuda_library_header_is_found_in_gcc_and_clang_words_and_no_other_header_is():
    from attnbench.judge.course_build import missing_library_header

    assert missing_library_header("hw4.cu:8:10: fatal error: cublas_v2.h: No such file or directory") == "cublas_v2.h"
    assert missing_library_header("hw4.cu:2:10: fatal error: 'curand_kernel.h' file not found") == "curand_kernel.h"
    assert missing_library_header("hw4.cu:8:10: fatal error: helpers.h: No such file or directory") is None
    assert missing_library_header("make: *** [Makefile:2: hw4] Error 1") is None


def test_a_source_named_with_a_leading_dash_is_a_file_to_the_compiler_not_an_option():
    assert c_program("-x.c").argv == ("cc", "-O2", "-o", "hw4", "./-x.c", "-lm")
    assert course_example("-v.cu", BuildRules("sm_90")).argv[-2] == "./-v.cu"
    assert c_program("@opts.c").argv[-2] == "./@opts.c"
    assert c_program("alice.c").argv[-2] == "alice.c"


@pytest.mark.skipif(shutil.which("cc") is None, reason="cc builds the C submission")
def test_a_class_builds_and_judges_a_c_file_whose_name_starts_with_a_dash(tmp_path):
    from tests.judge.classes import EXAMPLE

    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "-x.c").write_text(EXAMPLE.read_text())
    [submission] = find_submissions([tmp_path / "class"])
    built = build(submission, tmp_path / "built", settings=class_sandbox())
    assert built.ok, built.message
