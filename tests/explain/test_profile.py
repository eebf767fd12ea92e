"""attnbench.explain.profile and the metric table: ncu's CSV parsed, launches grouped, one sentence per failure.

The samples in tests/data are named *_HANDMADE_* until real captures (tools/profile_capture.sh) replace or
join them; tests that read real captures pick up every tests/data/ncu_*.csv that is not hand-made.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from attnbench.errors import AttnbenchError, ProfilerUnavailable
from attnbench.explain import profile as prof
from attnbench.explain.metrics import Metric, evaluate, metric_table, ncu_metric_names, raw_metric
from attnbench.output.render.markdown import render as markdown
from attnbench.output.tables.explain_tables import format_value, profile_tables
from tests.fakes import FakeDriverVersion

DATA = Path(__file__).parent.parent / "data"
RAW = DATA / "ncu_raw_HANDMADE_sample.csv"
DETAILS = DATA / "ncu_details_HANDMADE_sample.csv"
CAPTURES = sorted(p for p in DATA.glob("ncu_*.csv") if "HANDMADE" not in p.name)


def test_raw_page_parsed_with_units_and_separators():
    records = prof.parse_ncu_csv(RAW.read_text())
    assert [r.kernel for r in records] == ["flash_qreg", "flash_qreg", "helper_kernel"]
    first = records[0]
    assert first.values["gpu__time_duration.sum"] == 1_500_000
    assert first.values["dram__bytes.sum"] == 1_048_576
    assert first.values["launch__shared_mem_per_block_static"] == 49_152
    assert first.grid == "(256, 4, 1)" and first.block == "(128, 1, 1)"
    assert "dram__bytes.sum.per_second" not in records[2].values  # n/a is absent, not zero


def test_details_page_scaled_to_base_units():
    (launch,) = prof.parse_ncu_csv(DETAILS.read_text())
    assert launch.kernel == "flash_bankfree"
    assert launch.values["gpu__time_duration.sum"] == pytest.approx(1.25e6)  # msecond -> ns
    assert launch.values["dram__bytes.sum"] == pytest.approx(2.5e6)  # Mbyte -> bytes
    assert launch.values["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"] == 1234
    assert "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active" not in launch.values


def test_output_without_csv_gives_no_records():
    assert prof.parse_ncu_csv("==PROF== Connected\n==WARNING== No kernels were profiled.\n") == []


def test_launches_of_one_kernel_summed_and_rates_averaged():
    kernels = prof.by_kernel(prof.parse_ncu_csv(RAW.read_text()))
    assert [k.kernel for k in kernels] == ["flash_qreg", "helper_kernel"]
    qreg = kernels[0]
    assert qreg.launches == 2
    assert qreg.values["gpu__time_duration.sum"] == 4_000_000  # summed
    assert qreg.values["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 20  # summed
    assert qreg.values["sm__warps_active.avg.pct_of_peak_sustained_active"] == pytest.approx(25.0)  # averaged
    assert qreg.values["dram__bytes.sum.per_second"] == pytest.approx(1.5e12)  # averaged
    assert qreg.values["launch__registers_per_thread"] == 121  # a launch fact, not 242
    table = {m.key: m for m in metric_table("sm_90")}
    assert qreg.friendly(table["global_ld_sectors_per_request"]) == pytest.approx(1200 / 200)
    assert qreg.friendly(table["smem_per_block"]) == 49_152
    assert kernels[1].friendly(table["smem_per_block"]) == 1024


def test_metric_table_per_architecture():
    hopper = [m.key for m in metric_table("sm_90a")]
    ampere = [m.key for m in metric_table("sm_80")]
    assert hopper == ampere  # Hopper's wgmma is counted in the same row, labelled for both
    labels = {m.key: m.label for m in metric_table("sm_90a")}
    assert "wgmma" in labels["tensor_pipe"] and "wgmma" not in {m.key: m.label for m in metric_table("sm_80")}["tensor_pipe"]
    assert {"xu_pipe", "issue_active"} <= set(ampere)
    for key in ("duration", "achieved_occupancy", "sm_throughput", "fma_pipe", "tensor_pipe", "dram_bytes",
                "dram_throughput", "l2_hit_rate", "shared_ld_wavefronts", "shared_st_wavefronts",
                "shared_ld_conflicts", "shared_st_conflicts", "global_ld_sectors_per_request",
                "global_st_sectors_per_request", "registers", "smem_per_block", "local_bytes"):
        assert key in ampere
    names = ncu_metric_names(metric_table("sm_90") + [raw_metric("gpu__time_duration.sum")])
    assert len(names) == len(set(names))


def test_evaluate_sum_ratio_and_missing():
    ratio = Metric("r", "r", ("a", "b"), combine="ratio")
    total = Metric("s", "s", ("a", "b"), combine="sum")
    assert evaluate(ratio, {"a": 6.0, "b": 2.0}) == 3.0
    assert evaluate(ratio, {"a": 6.0, "b": 0.0}) is None
    assert evaluate(ratio, {"a": 6.0}) is None
    assert evaluate(total, {"a": 6.0}) == 6.0
    assert evaluate(total, {}) is None


def test_tables_side_by_side_and_markdown():
    kernels = prof.by_kernel(prof.parse_ncu_csv(RAW.read_text()))
    a = prof.VariantProfile("qreg", "t29", kernels, "", [])
    b = prof.VariantProfile("bankfree", "t29", prof.by_kernel(prof.parse_ncu_csv(DETAILS.read_text())), "", [])
    metrics = metric_table("sm_90")
    tables = profile_tables([a, b], metrics, "t29")
    assert len(tables) == 2 and [c.name for c in tables[0].columns] == ["metric", "qreg", "bankfree"]

    def texts(table):
        return {row[0].text: [cell.text for cell in row[1:]] for row in table.rows}

    rows = texts(tables[0])
    assert rows["kernel"] == ["flash_qreg", "flash_bankfree"]
    assert rows["duration"] == ["4.000 ms", "1.250 ms"]
    assert rows["shared store bank conflicts"] == ["0", "1,234"]
    assert texts(tables[1])["kernel"] == ["helper_kernel", "-"]
    assert "spill bytes (ptxas)" not in rows
    a.spill_bytes = {"flash_qreg": 0}
    spills = texts(profile_tables([a, b], metrics, "t29")[0])["spill bytes (ptxas)"]
    assert spills == ["0", "-"]
    text = markdown(tables[0])
    assert "| duration | 4.000 ms | 1.250 ms |" in text


@pytest.mark.parametrize("value, unit, text", [
    (None, "%", "-"), (1.5e6, "ns", "1.500 ms"), (2500.0, "ns", "2.50 us"), (2.5e9, "B", "2.5 GB"),
    (3.2e12, "B/s", "3200.0 GB/s"), (97.14, "%", "97.1%"), (1234.0, "", "1,234"), (6.0, "", "6"), (4.25, "", "4.25"),
])
def test_format_value(value, unit, text):
    assert format_value(value, unit) == text


def test_ncu_command_profiles_one_pass_at_normal_clocks():
    command = prof.ncu_command("/x/ncu", metric_table("sm_80"), "t29", "qreg", 1, 2, 50)
    joined = " ".join(command)
    assert command[0] == "/x/ncu"
    assert "--clock-control none" in joined and "--profile-from-start off" in joined
    assert "--launch-count 50" in joined and "--csv --page raw" in joined
    assert command[command.index("-m") + 1:] == ["attnbench.explain.profile_target", "t29", "qreg", "--device", "1",
                                                 "--warmup", "2"]


def test_find_ncu_under_cuda_home(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "ncu"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert prof.find_ncu() == str(fake)


def test_missing_ncu_is_one_sentence_exit_3(monkeypatch):
    monkeypatch.setattr(prof, "find_ncu", lambda: None)
    with pytest.raises(ProfilerUnavailable) as caught:
        prof.require_ncu()
    assert caught.value.exit_code == 3
    assert "still work" in str(caught.value) and "\n" not in str(caught.value)


def test_counter_permission_error(monkeypatch):
    stdout = ("==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to "
              "access NVIDIA GPU Performance Counters on the target device 0.\n")
    with pytest.raises(ProfilerUnavailable, match="ERR_NVGPUCTRPERM.*info`, `run` and `compare` still work"):
        prof.check_ncu_output(0, stdout, "", "qreg")


def test_program_error_and_ncu_error_and_status():
    with pytest.raises(AttnbenchError, match="qreg under ncu: qreg needs d in"):
        prof.check_ncu_output(2, "", "error: qreg needs d in {32, 64}, and the case has d=48\n", "qreg")
    with pytest.raises(ProfilerUnavailable, match="Failed to find metric"):
        prof.check_ncu_output(1, "==ERROR== Failed to find metric sm__nothing\n", "", "qreg")
    with pytest.raises(ProfilerUnavailable, match="status 9"):
        prof.check_ncu_output(9, "", "killed\n", "qreg")
    prof.check_ncu_output(0, "", "", "qreg")


def test_profile_variant_through_a_stand_in_ncu(tmp_path, monkeypatch):
    """The subprocess path end to end, with a script in ncu's place that prints the sample CSV."""
    script = tmp_path / "ncu"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.stdout.write(open({str(RAW)!r}).read())\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ.get("PATH", ""))
    result = prof.profile_variant("t29", "qreg", metric_table("sm_90"))
    assert [k.kernel for k in result.kernels] == ["flash_qreg", "helper_kernel"]
    assert result.csv_text == RAW.read_text()
    assert "--clock-control" in result.command
    data = result.to_dict(metric_table("sm_90"))
    assert data["kernels"][0]["metrics"]["duration"] == 4_000_000


@pytest.mark.skipif(not CAPTURES, reason="no real ncu capture in tests/data yet (tools/profile_capture.sh)")
@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_real_captures_parse_with_every_table_metric(path):
    kernels = prof.by_kernel(prof.parse_ncu_csv(path.read_text()))
    assert kernels, f"{path.name}: no kernel parsed"
    arch = "sm_90"
    for kernel in kernels:
        # the captures predate the XU and issue rows
        missing = [m.key for m in metric_table(arch)
                   if kernel.friendly(m) is None and m.key not in ("xu_pipe", "issue_active")]
        assert not missing, f"{path.name} {kernel.kernel}: no value for {missing}"
        assert kernel.values["gpu__time_duration.sum"] > 0


@pytest.mark.gpu
@pytest.mark.skipif(prof.find_ncu() is None, reason="Nsight Compute (ncu) is not installed")
def test_profile_a_real_pass(gpu):
    """On a GPU with ncu: one pass of qreg on t02 has one launch with every table metric."""
    metrics = metric_table(gpu.arch)
    result = prof.profile_variant("t02", "qreg", metrics, max_launches=5)
    (kernel,) = result.kernels
    assert kernel.kernel == "flash_qreg" and kernel.launches == 1
    missing = [m.key for m in metrics if kernel.friendly(m) is None]
    assert not missing, missing


def test_unknown_metrics_named_from_ncu_errors():
    asked = ["sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active", "gpu__time_duration.sum"]
    output = ("==PROF== Connected to process 9\n==ERROR== Failed to find metric "
              "regex:^sm__pipe_tensor_op_gmma_cycles_active\\.(sum|min|max|avg|pct|ratio|max_rate)$\n")
    assert prof.unknown_metrics(output, asked) == [asked[0]]
    assert prof.unknown_metrics("==PROF== fine\n", asked) == []


def test_a_metric_ncu_lacks_is_dropped_and_the_pass_profiled_again(tmp_path, monkeypatch):
    """The stand-in ncu refuses the XU pipe's metric while it is asked for, as ncu does a metric it lacks."""
    script = tmp_path / "ncu"
    script.write_text(
        f"#!{sys.executable}\nimport sys\n"
        "if any('pipe_xu' in a for a in sys.argv):\n"
        "    print('==ERROR== Failed to find metric regex:^sm__inst_executed_pipe_xu\\\\.(sum)$')\n"
        "    sys.exit(1)\n"
        f"sys.stdout.write(open({str(RAW)!r}).read())\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ.get("PATH", ""))
    result = prof.profile_variant("t29", "qreg", metric_table("sm_90"))
    assert result.unavailable == ["sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"]
    assert not any("pipe_xu" in part for part in result.command)
    assert [k.kernel for k in result.kernels] == ["flash_qreg", "helper_kernel"]


class _FakeGpu:
    """Stands in for attnbench.gpu.Gpu where there is no GPU: the facts the profile command reads."""

    name, arch, compute_capability, index, driver = "NVIDIA H200", "sm_90", (9, 0), 0, FakeDriverVersion()

    def __init__(self, index: int = 0) -> None:
        pass

    def facts(self) -> dict:
        return {"name": self.name, "index": 0, "compute_capability": "9.0", "sm_count": 132,
                "driver_version": 13000}

    def close(self) -> None:
        pass


@pytest.fixture
def stand_in_ncu(tmp_path, monkeypatch):
    script = tmp_path / "bin" / "ncu"
    script.parent.mkdir()
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.stdout.write(open({str(RAW)!r}).read())\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(script.parent) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("ATTNBENCH_CACHE", str(tmp_path / "cache"))
    import attnbench.backends.gpu

    monkeypatch.setattr(attnbench.backends.gpu, "Gpu", _FakeGpu)
    return script


def test_profile_command_tables_json_and_saved_files(stand_in_ncu, tmp_path):
    from click.testing import CliRunner

    from attnbench.cli import main

    runner = CliRunner()
    result = runner.invoke(main, ["profile", "t02", "-v", "qreg", "-v", "bankfree"])
    assert result.exit_code == 0, result.output
    assert "duration" in result.output and "flash_qreg" in result.output and "4.000 ms" in result.output
    result = runner.invoke(main, ["profile", "t02", "-v", "qreg", "--json", "--metrics", "smsp__inst_executed.sum"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output[result.output.index("{"):])
    assert data["metadata"]["gpu"]["name"] == "NVIDIA H200" and "smsp__inst_executed.sum" in data["metrics"]
    assert data["variants"][0]["kernels"][0]["metrics"]["duration"] == 4_000_000
    folder = tmp_path / "saved"
    result = runner.invoke(main, ["profile", "t02", "-v", "qreg", "--save", "--results-dir", str(folder), "--name", "p"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in folder.iterdir()) == ["p.json", "p.md", "p_qreg.ncu.csv"]
    assert (folder / "p_qreg.ncu.csv").read_text() == RAW.read_text()
    assert json.loads((folder / "p.json").read_text())["variants"][0]["csv"] == "p_qreg.ncu.csv"
    assert "| duration | 4.000 ms |" in (folder / "p.md").read_text()
    if shutil.which("nvcc"):  # ptxas's spill bytes beside the counters
        assert json.loads((folder / "p.json").read_text())["variants"][0]["kernels"][0]["ptxas_spill_bytes"] == 0


def test_profile_command_refusals(stand_in_ncu):
    from click.testing import CliRunner

    from attnbench.cli import main

    runner = CliRunner()
    assert runner.invoke(main, ["profile", "t02", "-v", "cpu"]).exit_code == 2
    result = runner.invoke(main, ["profile", "t01", "-v", "tf32x3", "-v", "nope"])
    assert result.exit_code == 2 and "no variant named 'nope'" in result.output
