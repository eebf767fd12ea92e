"""The process `attnbench profile` runs under Nsight Compute: one variant, warm-up, then one profiled pass.

ncu runs with `--profile-from-start off`; this program turns the profiler on (cuProfilerStart) only
around the pass after the warm-up, so every kernel launch of exactly that pass is profiled.
Usage: python -m attnbench.explain.profile_target CASE VARIANT [--device N] [--warmup W]
"""

from __future__ import annotations

import argparse
import ctypes
import sys

from attnbench.errors import AttnbenchError, GpuUnavailable


def _profiler_api() -> tuple:
    """cuProfilerStart and cuProfilerStop from the driver library."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise GpuUnavailable(f"the CUDA driver library cannot be loaded ({exc})") from None
    return cuda.cuProfilerStart, cuda.cuProfilerStop


def profile_one_pass(case: str, variant_name: str, device: int, warmup: int) -> None:
    """Upload, run the first pass and `warmup` more, then one pass with the profiler on."""
    from attnbench.backends.registry import make_execution
    from attnbench.backends.gpu import Gpu
    from attnbench.cases.inputs import resolve
    from attnbench.kernels.catalogue import get_variant

    bench_input = resolve(case)
    bench_input.prepare()
    variant = get_variant(variant_name)
    variant.require(bench_input.shape)
    gpu = Gpu(device)
    execution = make_execution(variant, bench_input.load(), gpu, flush_l2=False)
    start, stop = _profiler_api()
    try:
        execution.upload()
        for _ in range(1 + warmup):
            execution.run_pass()
        execution.download()  # synchronises: the warm-up is over before the profiler starts
        start()
        execution.run_pass()
        execution.download()
        stop()
    finally:
        execution.free()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnbench.explain.profile_target")
    parser.add_argument("case")
    parser.add_argument("variant")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        profile_one_pass(args.case, args.variant, args.device, args.warmup)
    except AttnbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
