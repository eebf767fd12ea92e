"""attnbench.judge.submissions: what counts as a submission, and builds that fail in one line."""

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from attnbench.judge.submissions import build, find_submissions
from attnbench.kernels.nvcc import first_error_lines as first_errors
from attnbench.sandbox.process import ProgramError


def _exe(path):
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_folders_files_and_folders_of_them(tmp_path):
    (tmp_path / "course").mkdir()
    (tmp_path / "course" / "Makefile").write_text("hw4:\n")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "hw4.cu").write_text("")
    (tmp_path / "ready").mkdir()
    _exe(tmp_path / "ready" / "hw4")
    (tmp_path / "one.c").write_text("")
    (tmp_path / "two.cu").write_text("")
    _exe(tmp_path / "three")
    (tmp_path / "readme.md").write_text("")
    (tmp_path / "junk").mkdir()  # a folder that is no submission is a row that says so (it was dropped unsaid)
    (tmp_path / "junk" / "build.sh").write_text("")
    found = {s.name: s.how for s in find_submissions([tmp_path])}
    assert found == {"course": "make", "plain": "nvcc", "ready": "ready", "one": "cc", "two": "nvcc", "three": "ready",
                     "junk": "none"}
    assert [s.name for s in find_submissions([tmp_path / "course", tmp_path / "one.c"])] == ["course", "one"]


def test_clashing_names_never_stop_the_class_and_each_row_says_why(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.c").write_text("")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.c").write_text("")
    two = find_submissions([tmp_path / "a", tmp_path / "b"])  # a/x.c and b/x.c: a hash of each path
    assert len({s.name for s in two}) == 2 and all(s.name.startswith("x.c~") and "hash" in s.note for s in two)
    assert [s.name for s in two] == [s.name for s in find_submissions([tmp_path / "a", tmp_path / "b"])]
    (tmp_path / "a" / "x").mkdir()  # x/ and x.c in one folder of submissions: named by their file names
    (tmp_path / "a" / "x" / "hw4.cu").write_text("")
    assert sorted(s.name for s in find_submissions([tmp_path / "a"])) == ["x", "x.c"]
    (tmp_path / "nothing.txt").write_text("")
    with pytest.raises(ProgramError, match="not a submission"):
        find_submissions([tmp_path / "a" / "x.c", tmp_path / "nothing.txt"])


def test_a_whole_name_that_clashes_again_and_names_printed_alike_get_distinct_names(tmp_path):
    jam = tmp_path / "jam"
    jam.mkdir()
    (jam / "jam").mkdir()  # jam/, jam.c and jam.c.c: the whole names of the first two clash with the third
    (jam / "jam" / "hw4.cu").write_text("")
    (jam / "jam.c").write_text("")
    (jam / "jam.c.c").write_text("")
    found = find_submissions([jam])
    names = [s.name for s in found]
    assert len(set(names)) == 3 and "jam" in names and any("hash" in s.note for s in found)
    zed = tmp_path / "zed"
    zed.mkdir()
    for raw in (b"zed\x01", b"zed\\x01"):  # a control byte, and the text printable() writes for it
        (zed / os.fsdecode(raw)).mkdir()
        (zed / os.fsdecode(raw) / "hw4.cu").write_text("")
    found = find_submissions([zed])
    assert len({s.name for s in found}) == 2 and all(s.note for s in found)
    assert all(s.name.isprintable() for s in found)
    assert len({s.slug for s in find_submissions([jam, jam])}) == 6  # the very same folder twice: numbered


def test_names_that_read_alike_are_told_apart(tmp_path):
    import unicodedata

    alike = tmp_path / "alike"
    alike.mkdir()
    for name in (unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café"), "Zed", "zed"):
        (alike / name).mkdir()
        (alike / name / "hw4.cu").write_text("")
    found = find_submissions([alike])
    shown = [unicodedata.normalize("NFKC", s.name).casefold() for s in found]
    assert len(set(shown)) == 4, [s.name for s in found]  # no two rows read the same
    assert all(s.note for s in found)


def test_first_errors_keeps_the_error_lines():
    text = "in file a.c:\na.c:1:22: error: expected ';'\nnote: here\na.c:2:1: error: bad\nmake: *** [hw4] Error 1\n"
    assert first_errors(text, 2) == "a.c:1:22: error: expected ';' | a.c:2:1: error: bad"
    assert first_errors("warning only\nlast") == "warning only | last"


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_a_failed_build_is_one_line_and_a_good_one_gives_the_program(tmp_path):
    (tmp_path / "bad.c").write_text("int main(void) { return 0 }\n")
    (tmp_path / "good.c").write_text("int main(void) { return 0; }\n")
    bad, good = find_submissions([tmp_path / "bad.c", tmp_path / "good.c"])
    failed = build(bad, tmp_path / "builds")
    assert not failed.ok and failed.message.startswith("the build failed: cc -O2 -o hw4 bad.c -lm (exit 1): ") and "error" in failed.message
    assert "\n" not in failed.message
    made = build(good, tmp_path / "builds")
    assert made.ok and made.program == tmp_path / "builds" / good.slug / "program" / "hw4" and made.program.is_file()
    assert (tmp_path / "good.c").read_text().endswith("return 0; }\n")  # the submission itself is untouched


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
@pytest.mark.skipif(any(Path(f, "cublas_v2.h").is_file() for f in ("/usr/include", "/usr/local/include")),
                    reason="this host's system include folder has cuBLAS's header")
def test_a_build_that_fails_on_a_cuda_library_header_this_host_lacks_says_it_is_the_hosts(tmp_path, monkeypatch):
    """A real submission includes cublas_v2.h, which the course's machine has and a host without cuBLAS's
    development files does not: its row blamed the student for the host's toolkit."""
    toolkit = tmp_path / "cuda"  # a toolkit without cuBLAS, whatever this host has (the H200's has it)
    (toolkit / "bin").mkdir(parents=True)
    (toolkit / "targets" / "x86_64-linux" / "include").mkdir(parents=True)
    (toolkit / "bin" / "nvcc").write_text("#!/bin/sh\nexit 1\n")
    (toolkit / "bin" / "nvcc").chmod(0o755)
    monkeypatch.setenv("PATH", f"{toolkit / 'bin'}:{os.environ['PATH']}")
    (tmp_path / "lib.c").write_text("#include <cublas_v2.h>\nint main(void) { return 0; }\n")
    (tmp_path / "own.c").write_text("#include <my_missing_header.h>\nint main(void) { return 0; }\n")
    lib, own = find_submissions([tmp_path / "lib.c", tmp_path / "own.c"])
    failed = build(lib, tmp_path / "builds")
    assert not failed.ok and failed.message.endswith(
        "; its output says cublas_v2.h was not found, a header of a CUDA library this host's toolkit lacks too (the "
        "course's machine has it): install that library's development files and judge it again before blaming the "
        "submission")
    assert failed.host_lacks == "cublas_v2.h" and failed.not_judged.startswith("this host's CUDA toolkit lacks cublas")
    failed = build(own, tmp_path / "builds")
    assert not failed.ok and "toolkit" not in failed.message  # its own missing header is its own
    assert failed.host_lacks == "" and failed.not_judged == ""


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None, reason="no C compiler or make")
def test_a_library_header_this_hosts_toolkit_has_is_the_submissions_doing(tmp_path, monkeypatch):
    """A build that did not find a header this host's toolkit holds (cc does not look in it; a Makefile can print
    the compiler's words itself) was said to be the host's doing, sending the TA to install what is there
    (red team 12)."""
    toolkit = tmp_path / "cuda"
    (toolkit / "bin").mkdir(parents=True)
    (toolkit / "targets" / "x86_64-linux" / "include").mkdir(parents=True)
    (toolkit / "targets" / "x86_64-linux" / "include" / "cublas_v2.h").write_text("/* cuBLAS */\n")
    (toolkit / "bin" / "nvcc").write_text("#!/bin/sh\nexit 1\n")
    (toolkit / "bin" / "nvcc").chmod(0o755)
    monkeypatch.setenv("PATH", f"{toolkit / 'bin'}:{os.environ['PATH']}")
    (tmp_path / "lib.c").write_text("#include <cublas_v2.h>\nint main(void) { return 0; }\n")
    (tmp_path / "spoof").mkdir()
    (tmp_path / "spoof" / "Makefile").write_text(
        "hw4:\n\t@echo 'hw4.cu:1:10: fatal error: cublas_v2.h: No such file or directory' >&2; false\n")
    for submission in find_submissions([tmp_path / "lib.c", tmp_path / "spoof"]):
        failed = build(submission, tmp_path / "builds")
        assert not failed.ok and "cublas_v2.h" in failed.message and "host's doing" not in failed.message
        assert failed.not_judged == ""  # a failed build, graded as one


def test_a_look_alike_from_another_script_gets_a_hash_and_its_letters_spelled_out(tmp_path):
    """Cyrillic о (U+043E) in "hоnest" survives NFKC and casefold; its row must not read as "honest"'s."""
    for name in ("honest", "h\u043enest"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "hw4.cu").write_text("")
    honest, look_alike = sorted(find_submissions([tmp_path]), key=lambda s: s.name.isascii(), reverse=True)
    assert honest.name == "honest" and not honest.note
    assert look_alike.name.startswith("h\u043enest~") and len(look_alike.name) == len("honest") + 7
    assert "U+043E" in look_alike.note


def test_a_class_folder_that_holds_no_submission_is_a_row_that_says_why(tmp_path):
    """Red team: dropped/ (a build.sh and src/hw4.c) and sec1/ (a submission one folder deeper) got no row."""
    (tmp_path / "dropped" / "src").mkdir(parents=True)
    (tmp_path / "dropped" / "build.sh").write_text("cc -o hw4 src/hw4.c\n")
    (tmp_path / "sec1" / "alice").mkdir(parents=True)
    (tmp_path / "sec1" / "alice" / "hw4.cu").write_text("")
    rows = {s.name: build(s, tmp_path / "builds") for s in find_submissions([tmp_path])}
    assert set(rows) == {"dropped", "sec1"} and not any(b.ok for b in rows.values())
    assert rows["dropped"].message == ("not a submission: no Makefile, hw4.cu, hw4.hip or hw4 in it "
                                       "(it holds build.sh, src/)")
    assert rows["sec1"].message.endswith("(it holds alice/)")
    assert not any(b.attempted for b in rows.values())  # no build ran: its progress line must not say "build failed"


def test_a_folder_of_the_class_that_cannot_be_listed_is_not_called_no_submission(tmp_path, monkeypatch):
    """Judged without root, a student's folder of mode 700 was "not a submission: it cannot be read": it may well
    hold one. (Root lists it anyway: the refusal is played here.)"""
    from attnbench.judge import submissions

    (tmp_path / "gus").mkdir()
    listed = os.listdir

    def listdir(path):
        if str(path).endswith("gus"):
            raise PermissionError(13, "Permission denied")
        return listed(path)

    monkeypatch.setattr(submissions.os, "listdir", listdir)
    message = submissions.not_a_submission(tmp_path / "gus")
    assert message == "cannot be read (Permission denied), so whether it holds a submission is unknown"


def test_a_folder_named_hw4_is_said_to_be_a_folder_not_a_missing_hw4(tmp_path):
    """"no ... hw4 in it (it holds hw4)" read as a contradiction when hw4 was a folder."""
    (tmp_path / "dirhw4" / "hw4").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    (only,) = [s for s in find_submissions([tmp_path]) if s.name == "dirhw4"]
    assert build(only, tmp_path / "builds").message.endswith("(it holds hw4/)")


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("cc") is None, reason="no make or cc")
def test_a_build_that_makes_another_executable_says_which_is_judged(tmp_path):
    """`make hw4` that writes ./main: the course's judge finds no hw4; attnbench judged main without a word."""
    (tmp_path / "mainname").mkdir()
    (tmp_path / "mainname" / "a.c").write_text("int main(void) { return 0; }\n")
    (tmp_path / "mainname" / "Makefile").write_text("hw4: a.c\n\tcc -o main a.c\n")
    (sub,) = find_submissions([tmp_path / "mainname"])
    made = build(sub, tmp_path / "builds")
    assert made.ok and "it made no hw4, so its one new executable main is judged" in made.message


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("cc") is None, reason="no make or cc")
@pytest.mark.parametrize("recipe, said", [
    ("cc -o one a.c && cc -o two a.c", "it made 2 new executables (one, two) and none named hw4, so which one the "
                                       "course would run is not known"),
    ("mkdir -p bin && cc -o bin/hw4 a.c", "its hw4 is at bin/hw4, not in its own folder, where the course runs ./hw4"),
    ("cc -c a.c", "it made no hw4 and no other executable"),
    ("cc -o hw4 a.c && chmod -x hw4", "its hw4 is not executable (the course runs ./hw4)"),
])
def test_a_build_that_makes_no_hw4_says_what_it_made_instead(tmp_path, recipe, said):
    """A build that made two executables was said to have made "no hw4 (nor one other executable)"; one that made
    bin/hw4 was not told where its hw4 went (newcomer pass 15)."""
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "a.c").write_text("int main(void) { return 0; }\n")
    (tmp_path / "s" / "Makefile").write_text(f"hw4: a.c\n\t{recipe}\n")
    (sub,) = find_submissions([tmp_path / "s"])
    made = build(sub, tmp_path / "builds")
    assert not made.ok and made.message.endswith(said), made.message


def test_a_submission_named_as_dot_is_called_by_its_folders_name(tmp_path, monkeypatch):
    """`attnbench judge .` from inside a student's folder made a row with an empty name."""
    (tmp_path / "alice").mkdir()
    _exe(tmp_path / "alice" / "hw4")
    monkeypatch.chdir(tmp_path / "alice")
    assert [s.name for s in find_submissions(["."])] == ["alice"]
    (tmp_path / "alice" / "notes").mkdir()
    monkeypatch.chdir(tmp_path / "alice" / "notes")
    assert [s.name for s in find_submissions([".."])] == ["alice"]


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("cc") is None, reason="no make or cc")
def test_a_prebuilt_hw4_beside_the_sources_is_built_anew_not_judged(tmp_path):
    """A Makefile, its source and a committed hw4 newer than it: `make hw4` said "up to date" and the judge took
    the committed binary (any program at all), though the course builds from the sources."""
    (tmp_path / "stale").mkdir()
    (tmp_path / "stale" / "a.c").write_text("int main(void) { return 7; }\n")
    (tmp_path / "stale" / "Makefile").write_text("hw4: a.c\n\tcc -o hw4 a.c\n")
    prebuilt = _exe(tmp_path / "stale" / "hw4")
    (sub,) = find_submissions([tmp_path / "stale"])
    made = build(sub, tmp_path / "builds")
    assert made.ok and made.program.read_bytes().startswith(b"\x7fELF")  # cc's, not the committed script
    assert "its prebuilt hw4 was set aside" in made.message
    assert prebuilt.read_text().startswith("#!/bin/sh")  # the submission itself is untouched


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("cc") is None, reason="no make or cc")
def test_a_prebuilt_object_beside_its_source_is_built_anew_not_linked(tmp_path):
    """An honest-looking a.c and a committed a.o (any program's, here one that returns 9): the staged copy made
    a.o the newer, `make` called it up to date and the judge linked and judged it, no source of the submission's
    (red team 12). Set aside at any depth, as the committed hw4 is."""
    (tmp_path / "sly" / "lib").mkdir(parents=True)
    (tmp_path / "sly" / "a.c").write_text("int main(void) { return 7; }\n")
    (tmp_path / "sly" / "Makefile").write_text("hw4: a.o\n\tcc -o hw4 a.o\na.o: a.c\n\tcc -c a.c\n")
    (tmp_path / "other.c").write_text("int main(void) { return 9; }\n")
    subprocess.run(["cc", "-c", "-o", str(tmp_path / "sly" / "a.o"), str(tmp_path / "other.c")], check=True)
    shutil.copy(tmp_path / "sly" / "a.o", tmp_path / "sly" / "lib" / "renamed.txt")
    (sub,) = find_submissions([tmp_path / "sly"])
    made = build(sub, tmp_path / "builds")
    assert made.ok and subprocess.run([str(made.program)]).returncode == 7  # a.c's program, not the object's
    assert "its prebuilt a.o, lib/renamed.txt were set aside" in made.message
    assert (tmp_path / "sly" / "a.o").read_bytes().startswith(b"\x7fELF")  # the submission itself is untouched


def test_a_class_folder_with_a_makefile_of_its_own_says_its_folders_are_submissions(tmp_path):
    """A TA's helper Makefile at the class's top made the class one submission, one failed row, its students
    never named."""
    (tmp_path / "class" / "ada").mkdir(parents=True)
    _exe(tmp_path / "class" / "ada" / "hw4")
    (tmp_path / "class" / "Makefile").write_text("all:\n\techo judge them\n")
    (whole,) = find_submissions([tmp_path / "class"])
    assert whole.how == "make" and "1 of its folders are submissions too (ada)" in whole.unjudged  # on its row


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("cc") is None, reason="no make or cc")
def test_a_precompiled_header_beside_an_honest_header_is_set_aside(tmp_path):
    """gcc compiles a.h.gch in place of the a.h beside it: a committed one, made from another a.h (returning 9),
    was what the judge built, though the a.h it shows returns 7 (red team 12)."""
    (tmp_path / "pch").mkdir()
    (tmp_path / "pch" / "a.h").write_text("static int value(void) { return 9; }\n")
    subprocess.run(["cc", "-x", "c-header", "-o", str(tmp_path / "pch" / "a.h.gch"), str(tmp_path / "pch" / "a.h")],
                   check=True)
    (tmp_path / "pch" / "a.h").write_text("static int value(void) { return 7; }\n")
    (tmp_path / "pch" / "a.c").write_text('#include "a.h"\nint main(void) { return value(); }\n')
    (tmp_path / "pch" / "Makefile").write_text("hw4: a.c\n\tcc -o hw4 a.c\n")
    (sub,) = find_submissions([tmp_path / "pch"])
    made = build(sub, tmp_path / "builds")
    assert made.ok and subprocess.run([str(made.program)]).returncode == 7
    assert "its prebuilt a.h.gch was set aside" in made.message


def test_the_class_command_offered_names_the_folder_as_it_was_given(tmp_path, monkeypatch):
    """`attnbench judge .` from such a class folder was told to run `attnbench judge /*/` (every folder at the
    machine's root, for a judge run as root), and `judge ../class` was told `judge class/*/` (red team 12)."""
    (tmp_path / "my class" / "ada").mkdir(parents=True)
    _exe(tmp_path / "my class" / "ada" / "hw4")
    (tmp_path / "my class" / "Makefile").write_text("all:\n\techo judge them\n")
    monkeypatch.chdir(tmp_path / "my class")
    (here,) = find_submissions(["."])
    assert "`attnbench judge ./*/`" in here.unjudged
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    (there,) = find_submissions(["../my class"])
    assert "`attnbench judge '../my class'/*/`" in there.unjudged


def test_an_hw4_that_lost_its_executable_bit_is_said_so_not_missing(tmp_path):
    """"no ... hw4 in it (it holds hw4)" contradicted itself for a plain hw4 without its x bit (unzipped)."""
    (tmp_path / "bob").mkdir()
    (tmp_path / "bob" / "hw4").write_bytes(b"\x7fELF")
    (tmp_path / "other").mkdir()
    (bob,) = [s for s in find_submissions([tmp_path]) if s.name == "bob"]
    message = build(bob, tmp_path / "builds").message
    assert "hw4 is not executable" in message and "no Makefile, hw4.cu" not in message


def test_an_archive_beside_the_submissions_is_a_row_not_dropped(tmp_path):
    """A student's tarball left packed in the class folder vanished from the scoreboard without a word."""
    (tmp_path / "alice").mkdir()
    _exe(tmp_path / "alice" / "hw4")
    (tmp_path / "bob.tar.gz").write_bytes(b"\x1f\x8b")
    (tmp_path / "README.txt").write_text("the class\n")
    rows = {s.name: s for s in find_submissions([tmp_path])}
    assert set(rows) == {"alice", "bob.tar.gz"}
    built = build(rows["bob.tar.gz"], tmp_path / "builds")
    assert not built.ok and not built.attempted and "an archive left packed" in built.message
    (tmp_path / "carol").mkdir()
    (tmp_path / "carol" / "hw4.zip").write_bytes(b"PK")
    (carol,) = [s for s in find_submissions([tmp_path]) if s.name == "carol"]
    assert build(carol, tmp_path / "builds").message.endswith("(it holds hw4.zip) (unpack its archive in it to judge it)")


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_a_refused_build_says_refused_once(tmp_path):
    """"refused: the built hw4 is not a plain file: refused" said it twice."""
    (tmp_path / "gina").mkdir()
    (tmp_path / "gina" / "Makefile").write_text("hw4:\n\tmkdir -p hw4\n")
    (gina,) = find_submissions([tmp_path / "gina"])
    built = build(gina, tmp_path / "builds")
    assert not built.ok and built.message == "refused: the built hw4 is not a plain file"


def test_names_that_differ_in_white_space_only_never_print_alike(tmp_path):
    """Red team: 'honest ' beside 'honest' printed as two rows named honest."""
    for name in ("honest", "honest "):
        (tmp_path / name).mkdir()
        (tmp_path / name / "hw4.cu").write_text("")
    names = [s.name for s in find_submissions([tmp_path])]
    assert len(names) == 2 and len({n.strip() for n in names}) == 2 and all("~" in n for n in names)


def test_ascii_look_alike_names_never_print_alike(tmp_path):
    """Red team: wiII.c (capital I) beside will.c got no hash: two rows that read alike in many fonts."""
    for name in ("will.c", "wiII.c", "b0b.c", "bob.c"):
        (tmp_path / name).write_text("")
    names = [s.name for s in find_submissions([tmp_path])]
    assert len(names) == 4 and all("~" in n for n in names)


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_a_build_that_reads_an_endless_file_is_stopped_by_its_memory_cap_not_the_hosts_oom_killer(tmp_path):
    """`#include "/dev/zero"` grew one cc1 to 24 GB, and the host's OOM killer stopped it (red team 16): each build
    process has an address-space cap, so it fails on its own, in seconds."""
    import time

    (tmp_path / "zero.c").write_text('#include "/dev/zero"\nint main(void) { return 0; }\n')
    (submission,) = find_submissions([tmp_path / "zero.c"])
    started = time.monotonic()
    failed = build(submission, tmp_path / "builds")
    assert not failed.ok and failed.message.startswith("the build failed: ")
    assert time.monotonic() - started < 120


def test_a_dot_entry_of_a_class_folder_is_skipped_but_judged_when_named(tmp_path):
    for name in ("alice", ".git", ".hidden"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "hw4.cu").write_text("int main() { return 0; }\n")
    (tmp_path / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    assert [s.name for s in find_submissions([tmp_path])] == ["alice"]  # as docs/judging.md says
    assert [s.name for s in find_submissions([tmp_path / ".hidden"])] == [".hidden"]


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None, reason="no C compiler or make")
def test_a_build_cannot_make_memory_files(tmp_path):
    """Red team 24: a Makefile held the host's memory in memfd pages (no limit of a build sees them, no RSS shows
    them) while the class's other builds ran beside it. The build's filter refuses the call; the same program
    outside a build makes one."""
    from attnbench.sandbox import syscall_filter

    if not syscall_filter.supported():
        pytest.skip("no system-call filter on this machine")
    folder = tmp_path / "hog"
    folder.mkdir()
    (folder / "hog.c").write_text("#define _GNU_SOURCE\n#include <sys/mman.h>\n"
                                  "int main(void) { return memfd_create(\"hog\", 0) < 0 ? 3 : 0; }\n")
    (folder / "hw4.c").write_text("int main(void) { return 0; }\n")
    (folder / "Makefile").write_text("hw4: hog.c hw4.c\n\tcc -o hog hog.c\n\t./hog\n\tcc -o hw4 hw4.c\n")
    (submission,) = find_submissions([folder])
    failed = build(submission, tmp_path / "builds")
    assert not failed.ok and "Error 3" in failed.message, failed.message
    made = subprocess.run(["make", "-C", str(folder), "hw4"], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr  # the control: outside a build the call is made
