"""Where a pipelined run's wall time goes: one `attnbench run CASE OUT` in this process, every stage timestamped.

    python3 tools/lab/pipeline_trace.py CASE OUT [--variant NAME] [--reps N]   (prints one JSON line)

It wraps the pipeline's stages (the ring's setup, each chunk's read, queueing of its copy and kernels, the
main thread's waits for a free input buffer or a finished copy back, the writer's writes) and the output
file's steps (open, the pipeline, close, exchange or link and rename), then runs `attnbench.run` as the command does.
The line holds the course clock, each event as [name, chunk, start, end] in seconds from the pipeline's
start, the idle gaps of the main thread longer than 2 ms, and /proc/meminfo's Dirty and Writeback before
and after. A diagnostic for the course clock's spread (tools/pipeline_steady.sh runs it many times);
nothing in attnbench depends on it.
"""

from __future__ import annotations

import argparse
import builtins
import functools

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

EVENTS: list[list] = []
T0 = [0.0]


def meminfo() -> dict[str, int]:
    found = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("Dirty", "Writeback", "MemFree", "Cached"):
            found[key] = int(rest.split()[0])
    return found


def traced(owner: object, name: str, label: str, chunk_arg: int | None = None) -> None:
    """Replace owner.name by a wrapper that records [label, chunk, start, end]."""
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            chunk = args[chunk_arg] if chunk_arg is not None and len(args) > chunk_arg else None
            EVENTS.append([label, chunk, start - T0[0], time.perf_counter() - T0[0]])

    setattr(owner, name, wrapper)


def install() -> None:
    from attnbench.backends import gpu_pipeline
    from attnbench.bench import pipeline
    from attnbench.cases import streaming
    from attnbench import files

    original_run = pipeline.run_pipeline

    import attnbench.bench.runner as runner

    original_write = runner.atomic_write

    def atomic_write(*args, **kwargs):  # the course clock's wall starts here (file creation included)
        T0[0] = time.perf_counter()
        return original_write(*args, **kwargs)

    def run_pipeline(*args, **kwargs):
        began = time.perf_counter()
        EVENTS.append(["pipeline", None, began - T0[0], began - T0[0]])
        return original_run(*args, **kwargs)

    runner.atomic_write = atomic_write
    runner.run_pipeline = run_pipeline
    stages = gpu_pipeline.GpuStages
    traced(stages, "setup", "setup")
    traced(stages, "upload_and_compute", "queue copy+kernels", 1)
    traced(stages, "input_released", "wait input buffer", 1)
    traced(stages, "download", "queue copy back", 1)
    traced(stages, "wait_downloaded", "wait copy back", 1)
    traced(stages, "release", "release ring")
    traced(streaming.TestcaseFile, "read_items", "read", 1)
    traced(pipeline._Writer, "_write", "write", 1)
    traced(pipeline._Writer, "wait_written", "wait writer", 1)
    traced(pipeline._Writer, "finish", "writer finish")
    traced(os, "replace", "rename")
    traced(files, "_exchange", "exchange")
    traced(os, "link", "link old")
    traced(files, "_release_later", "release old")
    original_open = builtins.open

    def opener(file, mode="r", *args, **kwargs):
        start = time.perf_counter()
        handle = original_open(file, mode, *args, **kwargs)
        if "w" in mode and str(file).endswith(".partial"):
            EVENTS.append(["open output", None, start - T0[0], time.perf_counter() - T0[0]])
            close = handle.close

            def closing():
                began = time.perf_counter()
                close()
                EVENTS.append(["close output", None, began - T0[0], time.perf_counter() - T0[0]])

            handle.close = closing
        return handle

    builtins.open = opener


def main_thread_gaps(events: list[list], end: float) -> list[list]:
    """Spans over 2 ms in which the main thread ran none of the traced steps (writer events excluded)."""
    main = sorted((e for e in events if e[0] not in ("write",)), key=lambda e: e[2])
    gaps, reach = [], 0.0
    for name, chunk, start, stop in main:
        if start - reach > 0.002:
            gaps.append([round(reach, 4), round(start, 4), f"before {name} {'' if chunk is None else chunk}".strip()])
        reach = max(reach, stop)
    if end - reach > 0.002:
        gaps.append([round(reach, 4), round(end, 4), "after the last step"])
    return gaps


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("case")
    parser.add_argument("out")
    parser.add_argument("--variant", default=None)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    install()
    import attnbench
    from attnbench import strict_json
    from attnbench.api import TimingOptions

    before = meminfo()
    started = time.perf_counter()
    m = attnbench.run(args.case, args.variant, args.out, timing=TimingOptions(reps=args.reps)).measurement
    after = meminfo()
    clock = m.clock.to_dict() if m.clock is not None else None
    end = clock["wall_s"] if clock else 0.0
    record = {"case": args.case, "variant": m.variant, "clock": clock,
              "process_api_s": time.perf_counter() - started,
              "events": [[e[0], e[1], round(e[2], 5), round(e[3], 5)] for e in EVENTS],
              "gaps": main_thread_gaps(EVENTS, end), "meminfo_before_kb": before, "meminfo_after_kb": after}
    print(strict_json.dumps(record, indent=None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
