"""Where the course clock's stalls come from: back-to-back runs of one case under conditions that each
remove one suspect, with every stage's busy time beside the wall.

    python3 tools/lab/pipeline_stalls.py OUTDIR [--case t22] [--variant wgmma3x] [--runs 10]

Conditions, each `--runs` back-to-back `attnbench run CASE OUT --json` (the pipelined path):
  replace   the same OUT every run (the default use: the new file is renamed over the last one)
  fresh     OUT removed before each run (no old file's pages to free at the rename)
  synced    `sync` before each run (no dirty pages of the last output left to write back)
  tmpfs     OUT on /dev/shm (no disk writeback at all)
Writes OUTDIR/stalls.jsonl (a line per run) and OUTDIR/stalls.md (min / median / p90 / max of the total
and of wall / busiest stage per condition, and the kernel's time, so a reader sees which suspect moves it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tools/lab/pipeline_bench.py
from pipeline_bench import STAGES, run_once, spread  # noqa: E402

from attnbench import strict_json  # noqa: E402

CONDITIONS = ("replace", "fresh", "synced", "tmpfs")


def out_path(outdir: Path, condition: str, case: str) -> Path:
    base = Path("/dev/shm") if condition == "tmpfs" and Path("/dev/shm").is_dir() else outdir / "tmp"
    base.mkdir(parents=True, exist_ok=True)
    return base / f"stalls_{condition}_{case}.out"


def one_condition(outdir: Path, condition: str, case: str, variant: str, runs: int, log) -> None:
    out = out_path(outdir, condition, case)
    for index in range(runs):
        if condition == "fresh":
            out.unlink(missing_ok=True)
        if condition == "synced":
            os.sync()
        record = run_once(case, variant, "pipeline", out, reps=3)
        record.update(condition=condition, index=index, at=time.time())
        log(record)
    out.unlink(missing_ok=True)


def summary_lines(records: list[dict]) -> list[str]:
    lines = ["| condition | runs | total min / median / p90 / max (s) | wall / busiest stage, median and max | "
             "busiest stage | read / write busy, median (s) |", "| --- | ---: | --- | --- | --- | --- |"]
    for condition in CONDITIONS:
        rows = [r for r in records if r.get("condition") == condition and r.get("measurement")]
        clocks = [r["measurement"].get("pipeline") for r in rows if r["measurement"].get("pipeline")]
        if not clocks:
            continue
        totals = spread([r["measurement"].get("total_s") for r in rows])
        ratios = spread([c["wall_s"] / max(c[f"{s}_s"] for s in STAGES) for c in clocks])
        bounds = sorted({c["bound"] for c in clocks})
        reads = spread([c["read_s"] for c in clocks])
        writes = spread([c["write_s"] for c in clocks])
        lines.append(f"| {condition} | {len(rows)} | {totals['min']:.3f} / {totals['median']:.3f} / {totals['p90']:.3f} / "
                     f"{totals['max']:.3f} | {ratios['median']:.2f}x, {ratios['max']:.2f}x | {', '.join(bounds)} | "
                     f"{reads['median']:.3f} / {writes['median']:.3f} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--case", default="t22")
    parser.add_argument("--variant", default="wgmma3x")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--conditions", default=",".join(CONDITIONS))
    args = parser.parse_args()
    args.outdir.mkdir(parents=True, exist_ok=True)
    lines_file = args.outdir / "stalls.jsonl"
    subprocess.run([sys.executable, "-m", "attnbench", "gen", args.case], check=False, capture_output=True)

    def log(record: dict) -> None:
        with open(lines_file, "a") as f:
            f.write(strict_json.dumps(record, indent=None) + "\n")

    for condition in args.conditions.split(","):
        one_condition(args.outdir, condition, args.case, args.variant, args.runs, log)
    records = [json.loads(line) for line in lines_file.read_text().splitlines() if line.strip()]
    text = "\n".join([f"# Course clock stalls: {args.case}, {args.variant}, {args.runs} back-to-back runs per condition",
                      "", *summary_lines(records)]) + "\n"
    (args.outdir / "stalls.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
