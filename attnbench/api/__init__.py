"""The public Python API: what the command line does, for notebooks and scripts.

    import attnbench
    outcome = attnbench.run("t02", variant="cpu", out="t02.out", check=True)
    m = outcome.measurement
    print(m.kernel.median, m.tflops, m.verification.passed, outcome.exit_status)
    rs = attnbench.compare(["cpu"], ["odd_17x48", "odd_100x32"])
    report, reference = attnbench.verify("t02.out", "t02")
    saved = attnbench.load_results("docs/results/2026-11-26_h100_final_default_peers_t01-t30.json")

Every function raises `attnbench.errors.AttnbenchError` subclasses for expected failures (their
`exit_code` is what the command line exits with). The command line only parses options, calls these
and renders what they return.

One module per command or group of commands: `run_command` (run), `compare_command` (compare's matrix, the
variant and case names, the GPU), `compare_plan` (the compare command's selection, run and verdicts),
`sweep_command` (sweep), `timing_options` (how passes are timed), `file_commands` (verify, generate, saved
results), `explain` (info, profile, ceilings), `programs` (judge, new) and `spread` (over GPUs and Slurm).
This module only hands the public names on.
"""

from __future__ import annotations

from attnbench.analysis.against import check_same_gpu, check_same_inputs, common_selection, expected_inputs
from attnbench.analysis.run_verdict import RunOutcome
from attnbench.api.compare_command import case_names, compare, open_gpu, open_gpu_for, variant_names
from attnbench.api.compare_plan import (
    CompareOptions,
    CompareOutcome,
    ComparePlan,
    exit_status,
    parse_percent,
    plan_compare,
)
from attnbench.api.file_commands import against_saved, generate, load_results, results_for_report, suite_cases, verify
from attnbench.api.run_command import run
from attnbench.api.spread import EXECUTOR_OPTIONS, resume, slurm_options
from attnbench.api.sweep_command import sweep
from attnbench.api.timing_options import TimingOptions
from attnbench.bench.matrix import MatrixInterrupted, course_check
from attnbench.bench.verify import COURSE_ATOL
from attnbench.cases.sweeps import SWEEP_AXES, SWEEP_AXIS_WORDS, sweep_axis
from attnbench.results.resultset import ResultSet

__all__ = [
    "COURSE_ATOL", "EXECUTOR_OPTIONS", "SWEEP_AXES", "SWEEP_AXIS_WORDS", "CompareOptions", "CompareOutcome", "ComparePlan", "MatrixInterrupted", "ResultSet", "RunOutcome",
    "TimingOptions", "against_saved", "case_names", "check_same_gpu", "check_same_inputs", "common_selection", "compare",
    "course_check", "exit_status", "expected_inputs", "generate", "load_results", "results_for_report", "open_gpu", "open_gpu_for",
    "parse_percent", "plan_compare", "resume", "run", "slurm_options", "suite_cases", "sweep", "sweep_axis", "variant_names", "verify",
]
