"""The course judge for whole programs: built C example, wrong, hanging, crashing and silent programs."""

import json
import os
import shutil
import stat
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from attnbench.backends import kernel_records
from attnbench.cases import suite
from attnbench.cases.inputs import seeded_testcase
from attnbench.cases.testcase import Shape
from attnbench.cli import main
from attnbench.judge import course_judge as judging
from attnbench.results import resultset as results

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SMALL = "odd_17x48,odd_100x32"


@pytest.fixture
def cli():
    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(main, [str(a) for a in args], catch_exceptions=False)

    return invoke


def _cc(tmp: Path, name: str, *flags: str) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    exe = tmp / name
    subprocess.run([compiler, "-O2", *flags, "-o", str(exe), str(EXAMPLES / "cpu_program" / "attention.c"), "-lm"],
                   check=True)
    return exe


def _cc_wrapped(tmp: Path, name: str, wrapper: str) -> Path:
    """The C example behind a main of the test's own (the sandbox sees only the program's one file, so a
    wrapper script that calls another program by its path cannot reach it)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    obj, source, exe = tmp / f"{name}.o", tmp / f"{name}.c", tmp / name
    subprocess.run([compiler, "-O2", "-c", "-Dmain=attention_main", "-o", str(obj),
                    str(EXAMPLES / "cpu_program" / "attention.c")], check=True)
    source.write_text("#include <unistd.h>\nint attention_main(int, char **);\n" + wrapper)
    subprocess.run([compiler, "-O2", "-o", str(exe), str(source), str(obj), "-lm"], check=True)
    return exe


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """The C example built right and built one element off."""
    tmp = tmp_path_factory.mktemp("programs")
    return {"right": _cc(tmp, "attention"), "off": _cc(tmp, "attention_off", "-DOFF_BY_ONE")}


def script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_the_c_example_passes_small_course_cases_and_saves_a_judge_result(cli, programs, tmp_path):
    limits = tmp_path / "limits.toml"  # generous: this test must not depend on the machine's load
    limits.write_text("t01 = 60\n")
    result = cli("judge", programs["right"], "--cases", f"t01,{SMALL}", "--time-limits", limits,
                 "--results-dir", tmp_path / "res")
    assert result.exit_code == 0, result.output
    assert "3 of 3 cases passed" in result.output
    assert "not kernel time" in result.output
    saved = results.load(next((tmp_path / "res").glob("*.json")))
    assert saved.kind == "judge" and saved.variant_names == ["attention"]
    assert [c.status for c in saved.cells] == ["ok", "ok", "ok"]
    t01 = saved.cell("attention", "t01")
    assert t01.extra["limit_s"] == 60.0 and t01.measurement.kernel.count == 1
    assert t01.measurement.compute_s == pytest.approx(t01.extra["wall_s"])
    assert (tmp_path / "res").joinpath(saved.path.stem + ".md").read_text().count("PASS") == 3
    from attnbench.output.render.report import write_report

    report = write_report([saved], tmp_path / "report.md", None, False, 0.02).path.read_text()
    assert "## 1. Judge" in report and "3 of 3 cases passed" in report and "### Kernel time" not in report


def test_one_element_off_fails_and_names_the_worst_element(cli, programs, tmp_path):
    result = cli("judge", programs["off"], "--cases", SMALL, "--no-save")
    assert result.exit_code == 1, result.output
    # -DOFF_BY_ONE adds 0.01 at (batch B-1, row N/2, col 0): odd_100x32 has B=5, N=100
    text = " ".join(result.output.split())
    assert "WRONG" in text and "0 of 2 cases passed" in text
    assert "set for a GTX 1080, not for this machine" in text  # the course's limits, by default
    judged = _judge_directly(programs["off"], "odd_100x32")
    assert judged.verdict == judging.WRONG_ANSWER
    assert (judged.check.worst.batch, judged.check.worst.row, judged.check.worst.col) == (4, 50, 0)
    assert "1 of 16000 elements" in judged.message and "(batch 4, row 50, col 0)" in judged.message


def _judge_directly(program: Path, case: str, limit=None, timeout=30.0, args="{in} {out}") -> judging.JudgedCase:
    prepared = judging.prepare_case(judging.cases_for(case)[0])
    return judging.judge_case(judging.make_program(str(program), None, args), prepared, limit, timeout)


def test_a_hanging_program_is_killed_at_its_timeout_with_everything_it_started(tmp_path):
    hang = script(tmp_path, "hang", "(sleep 7.25; true) &\nsleep 60")
    start = time.perf_counter()
    judged = _judge_directly(hang, "odd_17x48", limit=0.5, timeout=1.0)
    assert time.perf_counter() - start < 8
    assert judged.verdict == judging.TIMEOUT and judged.wall_s is None
    assert "killed (with every process it started)" in judged.message and "1 s" in judged.message
    alive = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline(p) == "sleep 7.25"]
    assert not alive, "a child of the killed program kept running"


def _cmdline(proc: Path) -> str:
    try:
        return proc.joinpath("cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def test_the_timeout_defaults_to_twice_the_limit():
    assert judging.timeout_for(2.0, None) == 4.0
    assert judging.timeout_for(2.0, 0.5) == 0.5
    assert judging.timeout_for(None, None) == judging.NO_LIMIT_TIMEOUT_S


@pytest.mark.parametrize("name, body, verdict, words", [
    ("segv", "echo 'about to crash' >&2\nkill -SEGV $$", judging.CRASH,
     "killed by SIGSEGV; its last words: about to crash"),
    ("status", "echo 'cannot open input' >&2\nexit 3", judging.CRASH, "exited with status 3"),
    ("silent", "exit 0", judging.NO_OUTPUT, "wrote no output file"),
    ("short", "head -c 10 /dev/zero > \"$2\"", judging.SIZE, "the output is 10 bytes"),
    ("nan", "head -c 6528 /dev/zero | tr '\\000' '\\377' > \"$2\"", judging.NAN, "1632 NaN"),
])
def test_each_kind_of_failure_gets_its_own_row(cli, tmp_path, name, body, verdict, words):
    program = script(tmp_path, name, body)
    judged = _judge_directly(program, "odd_17x48")
    assert judged.verdict == verdict
    assert words in judged.message and "\n" not in judged.message
    result = cli("judge", program, "--cases", "odd_17x48", "--no-save")
    assert result.exit_code == 1
    assert verdict in result.output and "Traceback" not in result.output


def test_a_correct_but_slow_program_is_over_its_limit(cli, programs, tmp_path):
    slow = _cc_wrapped(tmp_path, "slow", "int main(int c, char **v) { usleep(600000); return attention_main(c, v); }")
    limits = tmp_path / "limits.toml"
    limits.write_text("odd_17x48 = 0.3\ndefault = 100\n")
    result = cli("judge", slow, "--cases", SMALL, "--time-limits", limits, "--timeout", 10,
                 "--results-dir", tmp_path / "res")
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert "OVER LIMIT" in text and "1 of 2 cases passed" in text
    saved = results.load(next((tmp_path / "res").glob("*.json")))
    cell = saved.cell("slow", "odd_17x48")
    assert cell.status == "wrong" and cell.extra["verdict"] == judging.SLOW and cell.extra["wall_s"] > 0.3
    assert cell.message.startswith("correct, but") and "over the 0.3 s limit by" in cell.message
    assert saved.cell("slow", "odd_100x32").extra["limit_s"] == 100


def test_argument_template_and_launcher(cli, programs, tmp_path):
    swapped = _cc_wrapped(tmp_path, "swapped", "int main(int c, char **v) {\n"
                          "    char *args[] = {v[0], v[4], v[2], 0};\n    return attention_main(3, args);\n}\n")
    result = cli("judge", swapped, "--cases", "odd_17x48", "--args", "-o {out} -i {in}", "--launcher", "env FOO=1",
                 "--no-save")
    assert result.exit_code == 0, result.output
    assert "via env FOO=1" in " ".join(result.output.split())


@pytest.mark.parametrize("args, code, words", [
    (["./no_such_program"], 2, "no such program"),
    (["{dir}"], 2, "no submission found"),  # a folder is a class of submissions (none here)
    (["{plain}"], 2, "is not executable"),
    (["{prog}", "--args", "{in}"], 2, "must name both {in} and {out}"),
    (["{prog}", "--args", "{in} {out} {err}"], 2, "unknown placeholder {err}"),
    (["{prog}", "--launcher", "no-such-launcher-xyz -n1"], 3, "no-such-launcher-xyz is not on this machine's PATH"),
    (["{prog}", "--time-limits", "{missing}"], 2, "no such file"),
    (["{prog}", "--time-limits", "{badlimits}"], 2, "a limit is a positive number of seconds"),
    (["{prog}", "--time-limits", "{badtoml}"], 2, "not valid TOML"),
    (["{prog}", "--cases", "t01-t40"], 2, "t31 is not a suite case"),
    (["{prog}", "--cases", "nosuchcase"], 2, "neither a file nor a suite case"),
    (["{prog}", "--timeout", "0"], 2, "--timeout"),
])
def test_bad_usage_is_one_line_and_exit_2_or_3(cli, tmp_path, args, code, words):
    plain = tmp_path / "plain"
    plain.write_text("not a program")
    prog = script(tmp_path, "prog", "exit 0")
    (tmp_path / "bad.toml").write_text("t01 = -1\n")
    (tmp_path / "broken.toml").write_text("t01 = = 2\n")
    (tmp_path / "empty").mkdir()
    values = {"{dir}": tmp_path / "empty", "{plain}": plain, "{prog}": prog, "{missing}": tmp_path / "none.toml",
              "{badlimits}": tmp_path / "bad.toml", "{badtoml}": tmp_path / "broken.toml"}
    result = CliRunner().invoke(main, ["judge", *[str(values.get(a, a)) for a in args]])
    assert result.exit_code == code, result.output
    assert words in " ".join(result.output.split())
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)


def test_the_judge_takes_case_lists_as_every_command_does():
    assert [i.label for i in judging.cases_for("t28-t30")] == ["t28", "t29", "t30"]
    assert [i.label for i in judging.cases_for(["t28-t29", "odd_17x48"])] == ["t28", "t29", "odd_17x48"]


def test_course_limits_belong_to_t01_to_t30():
    assert [judging.course_limit(n) for n in ("t01", "t10", "t11", "t20", "t21", "t30")] == [2, 2, 6, 6, 10, 10]
    assert judging.course_limit("t31") is None and judging.course_limit("odd_17x48") is None


def test_the_course_limits_sentence_is_made_from_the_suites_limits(monkeypatch):
    from attnbench.judge import time_limits

    assert time_limits.COURSE_LIMITS_TEXT == "t01-t10 2 s, t11-t20 6 s, t21-t30 10 s"
    assert time_limits.COURSE_LIMITS_BRIEF == "2/6/10 s, set for a GTX 1080"
    changed = {**time_limits.SUITE, "t05": replace(time_limits.SUITE["t05"], time_limit_s=3.0)}
    monkeypatch.setattr(time_limits, "SUITE", changed)
    assert time_limits.course_limit("t05") == 3.0
    assert time_limits._course_limits_text() == "t01-t04 2 s, t05 3 s, t06-t10 2 s, t11-t20 6 s, t21-t30 10 s"
    assert "GTX 1080" in judging.load_time_limits("course").describe()
    assert judging.load_time_limits("none").limit_for("t01") is None


def test_an_interrupt_keeps_what_was_judged(programs):
    inputs = judging.cases_for(SMALL)
    program = judging.make_program(str(programs["right"]))

    def stop(event):
        raise KeyboardInterrupt

    judgement = judging.run_judge(program, inputs, judging.load_time_limits("none"), 30.0, listener=stop)
    assert judgement.interrupted and judgement.exit_status == 130
    assert len(judgement.judged) == 1 and judgement.judged[0].passed
    saved = judging.judge_results(judgement, {})
    assert saved.settings.interrupted and len(saved.cells) == 1 and len(saved.cases) == 1


def test_a_user_input_file_is_judged_against_a_fresh_reference(cli, programs, tmp_path):
    suite.generate_input(suite.get_case("odd_33x64"))
    own = tmp_path / "mine.in"
    shutil.copy(suite.input_path(suite.get_case("odd_33x64")), own)
    result = cli("judge", programs["right"], "--cases", own, "--no-save")
    assert result.exit_code == 0, result.output
    assert "mine.in" in result.output


# -- on a GPU ---------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.gpu_alone
def test_the_course_cuda_program_passes_t01_to_t10(cli, gpu, tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc")
    exe = tmp_path / "hw4"
    subprocess.run([nvcc, "-O3", f"-arch={gpu.arch}", "-o", str(exe), str(EXAMPLES / "course_program" / "hw4.cu")],
                   check=True)
    result = cli("judge", exe, "--cases", "t01-t10", "--results-dir", tmp_path / "res")
    assert result.exit_code == 0, result.output
    assert "10 of 10 cases passed" in result.output
    saved = json.loads(next((tmp_path / "res").glob("*.json")).read_text())
    assert [c["extra"]["verdict"] for c in saved["cells"]] == ["PASS"] * 10
    assert os.path.exists(exe)


# -- a program beside kernels in compare --------------------------------------------------------------
def test_compare_puts_a_programs_kernel_time_tflops_and_speedup_beside_its_process_time(cli, programs, tmp_path,
                                                                                         monkeypatch):
    from attnbench.backends import program as program_backend
    from attnbench.results.kernel_time import KernelRecording, KernelSummary, KernelTime

    recorded = KernelTime(2e-6, 3e-6, 3, (KernelSummary("_Z4attnPf", 3, 3e-6),))
    monkeypatch.setattr(program_backend, "record_kernels", lambda *args: KernelRecording(recorded))
    result = cli("compare", "--variants", f"cpu,exe:{programs['right']}", "--cases", "odd_17x48",
                 "--results-dir", tmp_path / "res")
    assert result.exit_code == 0, result.output
    saved = results.load(next((tmp_path / "res").glob("*.json")))
    cell = saved.cell("exe:attention", "odd_17x48")
    flops = saved.case("odd_17x48").shape.flops
    assert cell.extra["kernel"]["busy_s"] == 2e-6 and cell.extra["kernel"]["tflops"] == pytest.approx(flops / 2e-6 / 1e12)
    markdown = next((tmp_path / "res").glob("*.md")).read_text()
    assert "kernels 0.0020 ms in 3 launches; process " in markdown
    assert f"{flops / 2e-6 / 1e12:.3g} (kernels)" in markdown
    base_ms = saved.cell("cpu", "odd_17x48").measurement.kernel.median
    assert f"{base_ms / 2e-3:.2f}x (kernels, one run: no verdict)" in markdown, markdown


def test_compare_puts_a_program_beside_variants_with_process_time_only(cli, programs, tmp_path):
    crash = script(tmp_path, "crash", "kill -SEGV $$")
    result = cli("compare", "--variants", f"exe:{programs['right']},cpu,exe:{programs['off']},exe:{crash}",
                 "--cases", SMALL, "--results-dir", tmp_path / "res")
    assert result.exit_code == 1 and "4 wrong, impossible, suspect or failed cell(s)" in result.output  # two wrong, two crashed
    assert "process" in result.output and "(a program:" in result.output  # no kernel time, no speedup
    if not kernel_records.gpu_present():  # said once why there is none
        assert "exe: programs: no kernel time: no NVIDIA GPU on this machine" in result.output
    saved = results.load(next((tmp_path / "res").glob("*.json")))
    assert saved.baseline == "cpu"  # a program has no kernel time to be a baseline
    program = saved.cell("exe:attention", "odd_100x32")
    assert program.status == "ok" and program.measurement is None and program.extra["process_s"] > 0
    assert program.check["passed"]
    wrong = saved.cell("exe:attention_off", "odd_100x32")
    assert wrong.status == "wrong" and "(batch 4, row 50, col 0)" in wrong.message
    assert saved.cell("exe:crash", "odd_17x48").status == "error"
    assert "killed by SIGSEGV" in saved.cell("exe:crash", "odd_17x48").message
    assert saved.variant("exe:attention").backend == "program"
    markdown = next((tmp_path / "res").glob("*.md")).read_text()
    assert "process " in markdown and "a program: no kernel time" in markdown
    # the program alone: the cpu variant's single samples could differ beyond their (zero) noise
    again = cli("compare", "--variants", f"exe:{programs['right']}", "--cases", SMALL, "--against", saved.path,
                "--no-save")
    assert again.exit_code == 0, again.output
    assert "STILL" not in again.output
    from attnbench.analysis.against import against

    rows = {(row.variant, row.case): row for row in against(saved, saved).rows}
    assert rows[("exe:attention", "odd_17x48")].note == "a program: process time only, not compared"


def test_compare_refuses_a_missing_program_in_one_line(tmp_path):
    result = CliRunner().invoke(main, ["compare", "--variants", f"exe:{tmp_path}/nothing,cpu", "--cases", "odd_17x48"])
    assert result.exit_code == 2 and "nothing: no such program" in " ".join(result.output.split())


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_one_source_file_is_one_program_built_then_judged(cli, tmp_path):
    (tmp_path / "crash.c").write_text('#include <stdio.h>\nint main(void) { fprintf(stderr, "boom\\033[31m\\n"); '
                                      "return 3; }\n")
    (tmp_path / "broken.c").write_text("int main(void) { return 0 }\n")
    crashed = cli("judge", str(tmp_path / "crash.c"), "--cases", "odd_17x48", "--no-save")
    assert crashed.exit_code == 1 and "scoreboard" not in crashed.output, crashed.output
    assert "CRASH" in crashed.output and "exited with status 3" in crashed.output and "\x1b" not in crashed.output
    broken = cli("judge", str(tmp_path / "broken.c"), "--cases", "odd_17x48", "--no-save")
    assert broken.exit_code == 1 and "broken.c: the build failed" in broken.output


def test_judge_json_prints_the_saved_files_records_and_nothing_else(programs, tmp_path):
    one = CliRunner().invoke(main, ["judge", str(programs["right"]), "--cases", "odd_17x48", "--time-limits", "none",
                                    "--results-dir", str(tmp_path / "one"), "--name", "r", "--json"])
    assert one.exit_code == 0, one.output
    assert json.loads(one.stdout) == json.loads((tmp_path / "one" / "r.json").read_text())
    assert "1 of 1 case passed" in one.stderr and "saved" in one.stderr  # not "1 cases"


def test_a_class_judged_with_json_prints_its_scoreboard_records(tmp_path):
    from tests.judge.classes import CLASS_MODE, EXAMPLE, can_build

    if not can_build():
        pytest.skip("needs cc and make")
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "ann.c").write_text(EXAMPLE.read_text())
    board = CliRunner().invoke(main, ["judge", str(tmp_path / "class"), "--cases", "odd_17x48", "--rerun-top", "0",
                                      "--time-limits", "none", "--sandbox", CLASS_MODE, "--results-dir",
                                      str(tmp_path / "res"), "--name", "c", "--json"])
    assert board.exit_code == 0, board.output
    assert json.loads(board.stdout) == json.loads((tmp_path / "res" / "c.json").read_text())
    assert "scoreboard" in board.stderr


def test_after_the_warm_up_every_judged_run_gets_its_own_copy_of_the_sealed_cache(programs, monkeypatch):
    """The one-program judge once left the cache writable after the warm-up: its judged runs then wrote into
    one shared cache (a replay channel), or, as another uid, found it sealed and compiled PTX every case."""
    from attnbench.sandbox.room import SandboxSettings

    seen = []
    judge_case = judging.judge_case

    def spy(program, case, limit, timeout_s, sandbox, beside_check=None):
        paths = sandbox.prepare("spy", None)
        seen.append((sandbox.cache_writable, paths.cache))
        sandbox.finish(paths)
        return judge_case(program, case, limit, timeout_s, sandbox, beside_check)

    monkeypatch.setattr(judging, "judge_case", spy)
    judgement = judging.run_judge(judging.make_program(str(programs["right"])), judging.cases_for(SMALL),
                                  judging.load_time_limits("none"), 30.0, settings=SandboxSettings("none"))
    assert judgement.passed == 2 and len(seen) == 2
    assert all(not writable and cache is not None for writable, cache in seen)


def test_one_program_judged_on_all_of_t01_to_t30_gets_the_courses_grade(cli, programs, tmp_path, monkeypatch):
    """The suite's t01-t30 shrunk to small shapes (the real ones take gigabytes and hours of CPU references)."""
    from attnbench.cases.testcase import Shape

    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "data"))  # shrunk shapes: files of their own

    for i in range(1, 31):
        name = f"t{i:02d}"
        monkeypatch.setitem(suite.SUITE, name, replace(suite.SUITE[name], shape=Shape(1, 3 + i % 4, 8),
                                                       input_sha256=None))
    result = cli("judge", programs["off"], "--cases", "t01-t30", "--results-dir", tmp_path / "res")
    assert result.exit_code == 1 and "0 of 30 cases passed; the course's grade 0 of 60" in result.output
    result = cli("judge", programs["right"], "--cases", "t01-t30", "--results-dir", tmp_path / "res2")
    assert result.exit_code == 0 and "30 of 30 cases passed; the course's grade 60 of 60" in result.output
    saved = results.load(next((tmp_path / "res2").glob("*.json")))
    assert saved.settings.grade == 60 and "max(0, 60 - 3k)" in saved.settings.grade_rule
    assert "the course's grade 60 of 60" in next((tmp_path / "res2").glob("*.md")).read_text()
    assert next((tmp_path / "res2").glob("*.csv")).read_text().splitlines()[1].endswith(",60")
    partial = cli("judge", programs["right"], "--cases", "t01-t29", "--no-save")
    assert partial.exit_code == 0 and "grade" not in partial.output
    # without time limits no case could fail by its time: "the course's grade 60 of 60" was no course's grade
    unlimited = cli("judge", programs["right"], "--cases", "t01-t30", "--time-limits", "none", "--no-save")
    assert unlimited.exit_code == 0 and "30 of 30 cases passed" in unlimited.output and "grade" not in unlimited.output


def _nan_input(tmp_path: Path) -> Path:
    import numpy as np

    values = np.ones((3, 2, 17, 4), "<f4")  # Q, K, V of B=2, N=17, d=4
    values[1, 0, 3, 2] = np.nan
    path = tmp_path / "nan.in"
    path.write_bytes(np.array([2, 17, 4], "<i4").tobytes() + values.transpose(1, 0, 2, 3).tobytes())
    return path


def test_an_input_holding_nan_is_refused_before_any_program_runs_as_run_refuses_it(tmp_path, monkeypatch):
    """The input is at fault, not the program (one program was judged NaN, a whole class marked NaN)."""
    from tests.judge.classes import CLASS_MODE, EXAMPLE, can_build

    if not can_build():
        pytest.skip("needs cc and make")
    bad = _nan_input(tmp_path)
    ran = tmp_path / "ran"
    program = script(tmp_path, "prog", f'touch "{ran}"; cp "$1" "$2"')
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "ann.c").write_text(EXAMPLE.read_text())
    (tmp_path / "class" / "bob.c").write_text(EXAMPLE.read_text())
    for args in (["run", str(bad), str(tmp_path / "o.bin"), "-v", "cpu"],
                 ["judge", str(program), "--cases", str(bad), "--no-save"],
                 ["judge", str(tmp_path / "class"), "--cases", str(bad), "--sandbox", CLASS_MODE, "--results-dir",
                  str(tmp_path / "res")]):
        result = CliRunner().invoke(main, args)
        said = " ".join(result.output.split())
        assert result.exit_code == 2, (args, result.output)
        assert "holds NaN or Inf values" in said and "fix the input" in said, result.output
    assert not ran.exists() and not (tmp_path / "res").exists()


@pytest.mark.parametrize("budget, order", [
    (None, ["prepare odd_17x48", "prepare odd_100x32", "warm-up", "run odd_17x48", "run odd_100x32"]),
    (1, ["prepare odd_17x48", "warm-up", "run odd_17x48", "prepare odd_100x32", "run odd_100x32"]),
])
def test_a_batch_of_cases_is_prepared_before_any_of_its_runs_and_its_fresh_inputs_are_let_go_once_judged(
        programs, monkeypatch, budget, order):
    """Inputs and references are made before the programs' runs (their GPU context shared, then let go), in
    batches whose inputs fit the budget; a fresh input's file is removed once its case is judged."""
    from attnbench.judge import fresh_inputs
    from attnbench.sandbox.room import SandboxSettings

    monkeypatch.setattr(judging, "warm_up_beside_inputs", lambda: False)  # one thing at a time, as on a CPU
    seen: list[str] = []
    prepare, judge_case, warm_up = judging.prepare_case, judging.judge_case, judging.warm_up
    monkeypatch.setattr(judging, "prepare_case",
                        lambda bench_input, *rest: seen.append(f"prepare {bench_input.label}") or prepare(
                            bench_input, *rest))
    def warmed(program, shape, sandbox, timeout_s, before_launch):  # "warm-up": its program's start
        return warm_up(program, shape, sandbox, timeout_s, lambda: before_launch() or seen.append("warm-up"))

    monkeypatch.setattr(judging, "warm_up", warmed)

    def run(program, case, limit, timeout_s, sandbox, beside_check=None):
        assert case.input_path.exists()
        seen.append(f"run {case.label}")
        judged = judge_case(program, case, limit, timeout_s, sandbox, beside_check)
        files.append(case.input_path)
        return judged

    files: list[Path] = []
    monkeypatch.setattr(judging, "judge_case", run)
    if budget is not None:
        monkeypatch.setattr(judging, "PREPARED_AHEAD_BYTES", budget)
    inputs = fresh_inputs.draw(judging.cases_for(SMALL))
    judgement = judging.run_judge(judging.make_program(str(programs["right"])), inputs,
                                  judging.load_time_limits("none"), 30.0, settings=SandboxSettings("none"))
    assert judgement.passed == 2 and seen == order
    assert all(f.parent == fresh_inputs.private_folder() and not f.exists() for f in files)


def test_the_next_fresh_input_is_drawn_while_the_caller_makes_this_ones_reference(tmp_path, monkeypatch):
    """drawn_ahead: each fresh input's values as its own load draws them, the next one's drawing begun before
    the caller is done with this one; a user's file is the caller's to read."""
    import threading

    from attnbench.cases.testcase import write_testcase
    from attnbench.judge import fresh_inputs

    write_testcase(tmp_path / "mine.in", seeded_testcase(Shape(1, 8, 4), 1))
    inputs = fresh_inputs.draw(judging.cases_for(["odd_17x48", str(tmp_path / "mine.in"), "odd_100x32", "t01"]))
    started = {bench_input.label: threading.Event() for bench_input in inputs}
    load = fresh_inputs.FreshInput.load

    def watched(self, *progress):
        started[self.label].set()
        return load(self, *progress)

    monkeypatch.setattr(fresh_inputs.FreshInput, "load", watched)
    got = []
    for bench_input, testcase in judging.drawn_ahead(inputs):
        got.append(bench_input)
        if isinstance(bench_input, fresh_inputs.FreshInput):
            assert np.array_equal(testcase.qkv, seeded_testcase(bench_input.shape, bench_input.seed).qkv)
        else:
            assert testcase is None
        following = inputs[len(got)] if len(got) < len(inputs) else None
        if isinstance(following, fresh_inputs.FreshInput):
            assert started[following.label].wait(10)  # begun while this one is still the caller's
    assert got == inputs and not started[inputs[1].label].is_set()


def test_drawing_ahead_counts_as_inputs_and_references_not_as_the_rest(programs, monkeypatch):
    """A batch's fresh inputs are drawn outside each case's making (drawn_ahead): that time is still the inputs'
    phase in the judge's cost (it showed as "the rest", 0.3 s to 0.8 s, on an H200)."""
    import time

    from attnbench.judge import fresh_inputs
    from attnbench.judge.phases import timing
    from attnbench.sandbox.room import SandboxSettings

    # one thing at a time, as on a CPU: where the GPU takes a second process the batch is drawn beside the warm-up,
    # and what the warm-up hides is the runs' time (the clock counts its own thread), 0.56 s of 0.6 s on an H200
    monkeypatch.setattr(judging, "warm_up_beside_inputs", lambda: False)
    load = fresh_inputs.FreshInput.load
    monkeypatch.setattr(fresh_inputs.FreshInput, "load", lambda self, *a: time.sleep(0.3) or load(self, *a))
    inputs = fresh_inputs.draw(judging.cases_for(SMALL))
    with timing() as clock:
        judgement = judging.run_judge(judging.make_program(str(programs["right"])), inputs,
                                      judging.load_time_limits("none"), 30.0, settings=SandboxSettings("none"))
        cost = clock.cost(program_runs_s=0.0)
    assert judgement.passed == len(inputs) == 2
    assert cost.phases_s["inputs and references"] >= 0.3 * len(inputs)


@pytest.mark.parametrize("mode", ["none", "auto"])
def test_where_the_gpu_takes_a_second_process_the_warm_up_runs_while_the_first_batch_is_made(programs, monkeypatch,
                                                                                             mode):
    """The untimed warm-up ran after the first batch's inputs and references, about 1 s of a one-program judge
    on t21, t22 and t29 on an H200. Where the references leave room for a program beside them, it runs while the
    batch is made: started once the reference kernel is built (its run's sweep of new descendants would kill the
    build's nvcc), and no judged run before the batch is made."""
    import threading

    from attnbench.judge import fresh_inputs
    from attnbench.judge.phases import timing
    from attnbench.sandbox.room import SandboxSettings

    monkeypatch.setattr(judging, "warm_up_beside_inputs", lambda: True)
    seen: list[str] = []
    warming = threading.Event()
    prepare, warm_up, kernel_built = judging.prepare_case, judging.warm_up, judging.kernel_built

    def prepared(bench_input, *rest):
        assert warming.wait(10), "the batch was made before the warm-up began"
        seen.append(f"prepare {bench_input.label}")
        return prepare(bench_input, *rest)

    def warmed(program, shape, sandbox, timeout_s, before_launch):
        def launched():  # the program starts right after: its throwaway input was written before
            before_launch()
            seen.append("warm-up")
            warming.set()

        outcome = warm_up(program, shape, sandbox, timeout_s, launched)
        seen.append("warmed up")
        return outcome

    monkeypatch.setattr(judging, "kernel_built", lambda: seen.append("built") or kernel_built())
    monkeypatch.setattr(judging, "prepare_case", prepared)
    monkeypatch.setattr(judging, "warm_up", warmed)
    monkeypatch.setattr(judging, "judge_case",
                        lambda *a, judge_case=judging.judge_case: seen.append("run") or judge_case(*a))
    inputs = fresh_inputs.draw(judging.cases_for(SMALL))
    with timing() as clock:
        judgement = judging.run_judge(judging.make_program(str(programs["right"])), inputs,
                                      judging.load_time_limits("none"), 30.0, settings=SandboxSettings(mode))
        cost = clock.cost(program_runs_s=judgement.program_runs_s)
    assert judgement.passed == 2 and judgement.warm_up_s > 0
    assert seen[:2] == ["built", "warm-up"] and seen[-2:] == ["run", "run"]
    assert {"prepare odd_17x48", "prepare odd_100x32", "warmed up"} == set(seen[2:-2])
    assert abs(sum(cost.phases_s.values()) - cost.wall_s) < 1e-6  # the phases still add up to the wall time


def test_a_batch_that_fails_before_its_kernel_is_built_runs_no_warm_up(programs, monkeypatch):
    from attnbench.judge import fresh_inputs

    monkeypatch.setattr(judging, "warm_up_beside_inputs", lambda: True)
    monkeypatch.setattr(judging, "kernel_built", lambda: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    from attnbench.sandbox import room

    # its warm-up is prepared beside the batch; the program never starts
    monkeypatch.setattr(room, "run_process", lambda *a, **k: pytest.fail("a warm-up for a batch that could not be made"))
    with pytest.raises(OSError, match="No space left"):
        judging.run_judge(judging.make_program(str(programs["right"])), fresh_inputs.draw(judging.cases_for(SMALL)),
                          judging.load_time_limits("none"), 30.0)


def test_ctrl_c_in_a_warm_up_beside_the_batch_waits_for_the_batch_and_leaves_nothing_staged(programs, monkeypatch):
    from attnbench.judge import fresh_inputs
    from attnbench.sandbox import staged_inputs
    from attnbench.sandbox.room import SandboxSettings

    monkeypatch.setattr(judging, "warm_up_beside_inputs", lambda: True)
    made: list[str] = []
    prepare = judging.prepare_case
    monkeypatch.setattr(judging, "prepare_case", lambda b, *rest: made.append(b.label) or prepare(b, *rest))

    def interrupted(program, shape, sandbox, timeout_s, before_launch):
        before_launch()  # the batch begun beside it, then Ctrl-C in its run
        raise KeyboardInterrupt

    monkeypatch.setattr(judging, "warm_up", interrupted)
    monkeypatch.setattr(judging, "judge_case", lambda *a: pytest.fail("a run after Ctrl-C"))
    judgement = judging.run_judge(judging.make_program(str(programs["right"])),
                                  fresh_inputs.draw(judging.cases_for(SMALL)), judging.load_time_limits("none"), 30.0,
                                  settings=SandboxSettings("auto"))  # staged where a box and root allow it
    assert judgement.interrupted and judgement.exit_status == 130 and not judgement.judged
    assert made == ["odd_17x48", "odd_100x32"] and staged_inputs._slots == {}  # the batch finished, nothing held


def test_on_a_machine_without_a_gpu_the_warm_up_waits_for_the_batch():
    from attnbench.cases.gpu_reference import why_not_gpu

    if not why_not_gpu():
        pytest.skip("this machine makes references on its GPU")
    assert not judging.warm_up_beside_inputs()  # a program beside the CPU's references would take its cores


def test_cases_are_prepared_together_up_to_the_budget_in_their_order():
    inputs = judging.cases_for("t01,t02,t03")
    sizes = [i.shape.input_bytes for i in inputs]
    assert judging.prepared_together(inputs, sizes[0] + sizes[1]) == [inputs[:2], inputs[2:]]
    assert judging.prepared_together(inputs, 1) == [[i] for i in inputs]  # one case a batch at least
    assert judging.prepared_together(inputs) == [inputs]
    assert judging.prepared_together([]) == []


def test_in_the_box_a_fresh_input_is_written_where_its_run_binds_it_and_nothing_is_left_mounted(programs,
                                                                                               monkeypatch):
    """As root with the box's filter, a fresh input goes straight into the tmpfs its run binds (staged_inputs):
    never to the judge's private folder and copied again into the box; once judged, it is unmounted."""
    from attnbench.judge import fresh_inputs
    from attnbench.sandbox import staged_inputs
    from attnbench.sandbox.room import SandboxSettings, find_bwrap

    if find_bwrap()[0] is None or not staged_inputs.can_stage():
        pytest.skip("staging needs bwrap, root and the system-call filter")
    monkeypatch.setattr(fresh_inputs.FreshInput, "write", lambda self, testcase: pytest.fail("written to disk"))
    bound, roots = [], set()
    judge_case = judging.judge_case

    def run(program, case, limit, timeout_s, sandbox, beside_check=None):
        bound.append(staged_inputs.staged(case.input_path) == case.input_path)
        roots.add(staged_inputs._staging_root())
        return judge_case(program, case, limit, timeout_s, sandbox, beside_check)

    monkeypatch.setattr(judging, "judge_case", run)
    inputs = fresh_inputs.draw(judging.cases_for(SMALL))
    judgement = judging.run_judge(judging.make_program(str(programs["right"])), inputs,
                                  judging.load_time_limits("none"), 30.0, settings=SandboxSettings("required"))
    assert judgement.passed == 2 and bound == [True, True]
    (root,) = roots
    assert staged_inputs._slots == {} and not root.exists() and f" {root}/" not in Path("/proc/self/mounts").read_text()


@pytest.mark.parametrize("mode", ["none", "auto without bwrap"])
def test_outside_a_box_one_programs_fresh_inputs_are_never_staged_for_every_user_to_read(programs, monkeypatch,
                                                                                          mode):
    """A staged file is readable by any user who finds its path in the mount table: a fallback run (as root, a uid
    of its own on the host) could read the next case's input. One program's are staged only for runs in a box."""
    from attnbench.judge import fresh_inputs
    from attnbench.sandbox import room, staged_inputs
    from attnbench.sandbox.room import SandboxSettings

    monkeypatch.setattr(staged_inputs, "stage_written", lambda *a: pytest.fail("staged outside a box"))
    if mode != "none":
        monkeypatch.setattr(room, "find_bwrap", lambda: (None, "no bwrap here (a test)"))
    inputs = fresh_inputs.draw(judging.cases_for(SMALL))
    judgement = judging.run_judge(judging.make_program(str(programs["right"])), inputs,
                                  judging.load_time_limits("none"), 30.0, settings=SandboxSettings(mode.split()[0]))
    assert judgement.passed == 2 and not judgement.confinement.sandboxed


def test_a_runs_folder_and_input_are_let_go_while_its_output_is_checked_and_their_failure_is_the_judges(programs, monkeypatch):
    """t22's check took 0.1 s on an H200's host and its input's unstaging 0.05 s after it: the input (no later run
    needs it) is let go on a thread while the output is checked, both over before the verdict returns."""
    import threading

    from attnbench.judge import fresh_inputs

    from attnbench.sandbox.room import Sandbox

    let_go, removed = threading.Event(), threading.Event()
    check, finish = judging.judge_outcome, Sandbox.finish

    def checked(*args):
        assert removed.wait(10), "the case folder was not removed while the output was checked"
        assert let_go.wait(10), "the input was not let go while the output was checked"
        return check(*args)

    order: list[str] = []

    def finished(room, case):
        finish(room, case)
        order.append("folder")
        removed.set()

    monkeypatch.setattr(Sandbox, "finish", finished)

    monkeypatch.setattr(judging, "judge_outcome", checked)
    monkeypatch.setattr(judging, "_let_go", lambda case: order.append("input") or let_go.set())
    program = judging.make_program(str(programs["right"]))
    case = judging.prepare_case(fresh_inputs.draw(judging.cases_for("odd_17x48"))[0])
    try:
        judged = judging.judge_case(program, case, None, 30.0, None, lambda: judging._let_go(case))
        assert judged.passed and order == ["folder", "input"]  # the folder holds the staged input's lend: first

        def full_disk() -> None:
            raise OSError(28, "No space left on device")

        with pytest.raises(OSError, match="No space left"):
            judging.judge_case(program, case, None, 30.0, None, full_disk)
    finally:
        fresh_inputs.release(case.input_path)
