"""The public Python API, one module per group of commands: `single` (run, compare, sweep), `matrix`
(the compare command's selection, run and verdicts), `files` (verify, generate, saved results),
`explain` (info, profile, ceilings), `programs` (judge, new) and `spread` (over GPUs and Slurm).

This module only hands the public names on.
"""

from __future__ import annotations

from attnbench.api.files import against_saved, generate, load_results, results_for_report, suite_cases, verify
from attnbench.api.matrix import CompareOptions, CompareOutcome, ComparePlan, exit_status, parse_percent, plan_compare
from attnbench.api.single import (
    RunOutcome,
    TimingOptions,
    case_names,
    check_same_gpu,
    check_same_inputs,
    common_selection,
    compare,
    expected_inputs,
    open_gpu,
    open_gpu_for,
    resume,
    run,
    sweep,
    variant_names,
)
from attnbench.api.spread import EXECUTOR_OPTIONS, slurm_options
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
