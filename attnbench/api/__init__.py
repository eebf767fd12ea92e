"""The public Python API, one module per group of commands: `single` (run, compare, sweep), `files`
(verify, generate, saved results), `explain` (info, profile, ceilings), `programs` (judge, new) and
`spread` (over GPUs and Slurm).

This module only hands the public names on.
"""

from __future__ import annotations

from attnbench.api.files import against_saved, generate, load_results, verify
from attnbench.bench.matrix import course_check
from attnbench.api.single import (
    SWEEP_AXES,
    TimingOptions,
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
)

__all__ = [
    "SWEEP_AXES", "TimingOptions", "against_saved", "check_same_gpu", "check_same_inputs", "common_selection",
    "compare", "course_check", "expected_inputs", "generate", "load_results", "open_gpu", "open_gpu_for", "resume",
    "run", "sweep", "verify",
]
