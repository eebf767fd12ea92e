"""Hardware counters per variant: one pass after warm-up under Nsight Compute (`ncu`), parsed from its CSV.

ncu runs `python -m attnbench.explain.profile_target`, which turns the profiler on around one pass only
(`--profile-from-start off` + cuProfilerStart/Stop), always with `--clock-control none` so the clocks
are those a normal run sees. The CSV is kept as ncu wrote it; `parse_ncu_csv` reads both of ncu's
CSV layouts: `--page details` (one row per kernel and metric) and `--page raw` (one row per kernel,
one column per metric, a units row under the header).
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from attnbench.errors import ProfilerUnavailable
from attnbench.explain.metrics import Metric, evaluate, ncu_metric_names

WHAT_STILL_WORKS = "`attnbench info`, `run` and `compare` still work"

# Unit words ncu prints, and the factor to base units (bytes, nanoseconds, bytes/second, ...).
_UNIT_SCALE = {
    "": 1.0, "%": 1.0, "byte": 1.0, "bytes": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
    "kibyte": 1024.0, "mibyte": 1024.0**2, "gibyte": 1024.0**3,
    "nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9,
    "byte/second": 1.0, "kbyte/second": 1e3, "mbyte/second": 1e6, "gbyte/second": 1e9, "tbyte/second": 1e12,
    "byte/s": 1.0, "kb/s": 1e3, "mb/s": 1e6, "gb/s": 1e9, "tb/s": 1e12,
    "hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9, "cycle/nsecond": 1.0, "cycle/usecond": 1e-3,
}
# Metrics that are rates or launch facts: averaged over a kernel's launches; all others are summed.
_AVERAGED_MARKERS = ("pct", "per_second", "launch__", ".ratio", ".avg")


@dataclass
class KernelLaunchRecord:
    """One profiled kernel launch: its name, geometry, and metric values in base units."""

    launch_id: int
    kernel: str
    block: str
    grid: str
    values: dict[str, float] = field(default_factory=dict)


def _number(text: str) -> float | None:
    text = text.strip().replace(",", "")
    if text in ("", "n/a", "N/A", "nan"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _scale(unit: str) -> float:
    return _UNIT_SCALE.get(unit.strip().lower(), 1.0)


def _header_index(lines: list[str]) -> int:
    for i, line in enumerate(lines):
        if line.startswith('"ID",') or line.startswith("ID,"):
            return i
    return -1


def parse_ncu_csv(text: str) -> list[KernelLaunchRecord]:
    """Every kernel launch in ncu's CSV output (==PROF== and program lines around it are skipped)."""
    lines = [line for line in text.splitlines() if not line.startswith("==")]
    start = _header_index(lines)
    if start < 0:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header = rows[0]
    column = {name: i for i, name in enumerate(header)}
    for needed in ("ID", "Kernel Name"):
        if needed not in column:
            raise ProfilerUnavailable(f"ncu CSV has no {needed!r} column: not the output of `ncu --csv`")
    records: dict[int, KernelLaunchRecord] = {}

    def record(row: list[str]) -> KernelLaunchRecord:
        launch_id = int(row[column["ID"]])
        if launch_id not in records:
            get = lambda name: row[column[name]] if name in column and column[name] < len(row) else ""  # noqa: E731
            records[launch_id] = KernelLaunchRecord(launch_id, get("Kernel Name"), get("Block Size"), get("Grid Size"))
        return records[launch_id]

    if "Metric Name" in column:  # --page details: one row per (kernel, metric)
        for row in rows[1:]:
            if len(row) <= column["Metric Value"] or not row[column["ID"]].strip().isdigit():
                continue
            value = _number(row[column["Metric Value"]])
            if value is not None:
                unit = row[column["Metric Unit"]] if "Metric Unit" in column else ""
                record(row).values[row[column["Metric Name"]]] = value * _scale(unit)
        return list(records.values())
    # --page raw: one row per kernel; the row under the header holds the units
    metric_columns = [(i, name) for i, name in enumerate(header) if "__" in name]
    units = rows[1] if len(rows) > 1 and not rows[1][column["ID"]].strip().isdigit() else [""] * len(header)
    for row in rows[1:]:
        if len(row) < len(header) or not row[column["ID"]].strip().isdigit():
            continue
        launch = record(row)
        for i, name in metric_columns:
            value = _number(row[i])
            if value is not None:
                launch.values[name] = value * _scale(units[i] if i < len(units) else "")
    return list(records.values())


@dataclass
class KernelProfile:
    """One kernel of a pass, over all its launches in that pass."""

    kernel: str
    launches: int
    block: str
    grid: str
    values: dict[str, float]  # ncu metric -> value (summed over launches, rates averaged)

    def friendly(self, metric: Metric) -> float | None:
        return evaluate(metric, self.values)


def by_kernel(records: list[KernelLaunchRecord]) -> list[KernelProfile]:
    """Launches grouped by kernel name in first-launch order: counts summed, rates and launch facts averaged."""
    groups: dict[str, list[KernelLaunchRecord]] = {}
    for launch in sorted(records, key=lambda r: r.launch_id):
        groups.setdefault(launch.kernel, []).append(launch)
    profiles = []
    for kernel, launches in groups.items():
        values: dict[str, float] = {}
        names = {name for launch in launches for name in launch.values}
        for name in names:
            found = [launch.values[name] for launch in launches if name in launch.values]
            averaged = any(marker in name for marker in _AVERAGED_MARKERS)
            values[name] = sum(found) / len(found) if averaged else sum(found)
        profiles.append(KernelProfile(kernel, len(launches), launches[0].block, launches[0].grid, values))
    return profiles


# -- running ncu -----------------------------------------------------------------------------------
def find_ncu() -> str | None:
    """ncu on PATH, else under $CUDA_HOME/bin or /usr/local/cuda/bin."""
    found = shutil.which("ncu")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "ncu").is_file():
            return str(Path(root) / "bin" / "ncu")
    return None


def require_ncu() -> str:
    ncu = find_ncu()
    if ncu is None:
        raise ProfilerUnavailable(
            f"Nsight Compute (ncu) is not on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin, so no counters can be "
            f"taken; {WHAT_STILL_WORKS}"
        )
    return ncu


def ncu_command(ncu: str, metrics: list[Metric], case: str, variant: str, device: int, warmup: int,
                max_launches: int) -> list[str]:
    """The ncu command line that profiles one pass of `variant` on `case`."""
    return [
        ncu, "--clock-control", "none", "--profile-from-start", "off", "--csv", "--page", "raw",
        "--print-units", "base", "--launch-count", str(max_launches),
        "--metrics", ",".join(ncu_metric_names(metrics)),
        sys.executable, "-m", "attnbench.explain.profile_target", case, variant,
        "--device", str(device), "--warmup", str(warmup),
    ]


def check_ncu_output(returncode: int, stdout: str, stderr: str, variant: str) -> None:
    """One sentence for what went wrong under ncu, or nothing."""
    both = stdout + "\n" + stderr
    if "ERR_NVGPUCTRPERM" in both:
        raise ProfilerUnavailable(
            "ncu may not read this GPU's performance counters (ERR_NVGPUCTRPERM): an administrator must allow "
            f"it (driver option NVreg_RestrictProfilingToAdminUsers=0) or run as root; {WHAT_STILL_WORKS}"
        )
    program_error = next((line for line in stderr.splitlines() if line.startswith("error: ")), None)
    if program_error:
        raise ProfilerUnavailable(f"{variant} under ncu: {program_error[len('error: '):]}")
    ncu_error = next((line for line in both.splitlines() if line.startswith("==ERROR==")), None)
    if ncu_error:
        raise ProfilerUnavailable(f"ncu failed profiling {variant}: {ncu_error[len('==ERROR=='):].strip()}")
    if returncode != 0:
        tail = (stderr.strip().splitlines() or ["no message"])[-1]
        raise ProfilerUnavailable(f"ncu exited with status {returncode} profiling {variant}: {tail}")


def unknown_metrics(output: str, asked: list[str]) -> list[str]:
    """The asked-for ncu metrics that ncu says it cannot find on this GPU.

    ncu prints `==ERROR== Failed to find metric regex:^name...` (the name escaped as a regular expression).
    """
    missing = []
    for line in output.splitlines():
        if "Failed to find metric" not in line:
            continue
        text = line.split("Failed to find metric", 1)[1].replace("\\", "")
        missing += [name for name in asked if name.split(".")[0] in text and name not in missing]
    return missing


@dataclass
class VariantProfile:
    """A variant's profiled pass: its kernels in launch order, and ncu's CSV as written."""

    variant: str
    case: str
    kernels: list[KernelProfile]
    csv_text: str
    command: list[str]
    unavailable: list[str] = field(default_factory=list)  # ncu metrics this GPU or ncu does not have
    spill_bytes: dict[str, int] = field(default_factory=dict)  # kernel -> ptxas spill stores + loads

    def to_dict(self, metrics: list[Metric]) -> dict:
        return {
            "variant": self.variant,
            "case": self.case,
            "unavailable_metrics": self.unavailable,
            "kernels": [
                {"kernel": k.kernel, "launches": k.launches, "block": k.block, "grid": k.grid,
                 "metrics": {m.key: k.friendly(m) for m in metrics}, "ncu": k.values,
                 "ptxas_spill_bytes": self.spill_bytes.get(k.kernel)}
                for k in self.kernels
            ],
        }


def profile_variant(case: str, variant: str, metrics: list[Metric], device: int = 0, warmup: int = 1,
                    max_launches: int = 50, timeout_s: float = 1800.0) -> VariantProfile:
    """Run one variant's pass under ncu and parse the counters.

    Metrics ncu cannot find on this GPU are dropped once and the pass profiled again without them;
    the table shows '-' for them and `unavailable` names them.
    """
    ncu = require_ncu()
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # the target must import this same attnbench
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    dropped: list[str] = []
    while True:
        kept = [Metric(m.key, m.label, tuple(n for n in m.ncu if n not in dropped), m.combine, m.unit) for m in metrics]
        command = ncu_command(ncu, [m for m in kept if m.ncu], case, variant, device, warmup, max_launches)
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env)
        except subprocess.TimeoutExpired:
            raise ProfilerUnavailable(f"ncu did not finish profiling {variant} on {case} within {timeout_s:.0f} s") from None
        missing = [] if dropped else unknown_metrics(done.stdout + "\n" + done.stderr, ncu_metric_names(metrics))
        if not missing:
            break
        dropped = missing
    check_ncu_output(done.returncode, done.stdout, done.stderr, variant)
    records = parse_ncu_csv(done.stdout)
    if not records:
        raise ProfilerUnavailable(f"ncu profiled no kernel of {variant} on {case} (no CSV rows in its output)")
    return VariantProfile(variant, case, by_kernel(records), done.stdout, command, dropped)
