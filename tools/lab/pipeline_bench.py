"""The course clock with and without the pipeline, beside the machine's copy ceilings.

    python3 tools/lab/pipeline_bench.py OUTDIR [--cases t10,t11,t22,t29,t30] [--variants tf32x3,qreg,torch]
                                    [--repeats 3] [--reps 5]
    python3 tools/lab/pipeline_bench.py OUTDIR --summary-only

Runs `attnbench run CASE OUT --variant V --json` with the pipeline and with `--no-pipeline` (the torch
peer has no pipeline: it runs once per repeat, unpipelined), `--repeats` times each, alternating the
two paths. Each run is one line of OUTDIR/runs.jsonl, written as it ends, so a run cut short still
leaves what it measured. After a case's runs, the pipelined and unpipelined outputs are compared byte
for byte and the pipelined one is verified against the suite's float64 reference (when it exists),
and the outputs are deleted. Then OUTDIR/summary.json and OUTDIR/summary.md: the medians over the
repeats and, with OUTDIR/ceilings.json (tools/lab/copy_ceilings.py), the ratios to the issue's targets.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from attnbench import strict_json

STAGES = ("read", "h2d", "kernel", "d2h", "write")
RUN_TIMEOUT_S = 300


def attnbench(*args: str, timeout: float = RUN_TIMEOUT_S) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([sys.executable, "-m", "attnbench", *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(exc.cmd, 124, exc.stdout or "", f"timed out after {timeout} s")


def run_once(case: str, variant: str, path: str, out: Path, reps: int) -> dict:
    args = ["run", case, str(out), "--variant", variant, "--json", "--reps", str(reps)]
    if path == "no-pipeline":
        args.append("--no-pipeline")
    start = time.perf_counter()
    done = attnbench(*args)
    record = {"case": case, "variant": variant, "path": path, "exit": done.returncode,
              "process_s": time.perf_counter() - start, "measurement": None}
    if done.returncode in (0, 1):
        try:
            record["measurement"] = json.loads(done.stdout)
        except json.JSONDecodeError:
            record["error"] = "unreadable JSON: " + done.stdout[-300:]
    else:
        record["error"] = (done.stderr.strip() or done.stdout.strip())[-500:]
    return record


def paths_for(variant: str) -> list[str]:
    return ["no-pipeline"] if variant == "torch" else ["pipeline", "no-pipeline"]


def bench_case(outdir: Path, case: str, variant: str, repeats: int, reps: int, log, verify: bool = True) -> None:
    work = outdir / "tmp"
    work.mkdir(parents=True, exist_ok=True)
    outs = {path: work / f"{case}.{variant}.{path}.out" for path in paths_for(variant)}
    for repeat in range(repeats):
        for path, out in outs.items():
            record = run_once(case, variant, path, out, reps)
            record["repeat"] = repeat
            log(record)
            if record["exit"] not in (0, 1):
                print(f"{case} {variant} {path}: exit {record['exit']}: {record.get('error', '')}", file=sys.stderr)
                return
    check = {"case": case, "variant": variant, "kind": "check"}
    if all(out.exists() for out in outs.values()) and len(outs) == 2:
        check["identical"] = filecmp.cmp(outs["pipeline"], outs["no-pipeline"], shallow=False)
    first = next(iter(outs.values()))
    if first.exists() and verify:
        verified = attnbench("verify", str(first), case, "--json")
        check["verify_exit"] = verified.returncode
        try:
            report = json.loads(verified.stdout)
            check["verify"] = {k: report.get(k) for k in ("passed", "max_abs_error", "rel_l2_error")}
        except json.JSONDecodeError:
            check["verify_error"] = (verified.stderr or verified.stdout)[-300:]
    log(check)
    for out in outs.values():
        out.unlink(missing_ok=True)


def median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def spread(values: list) -> dict | None:
    """min, median, p90 (nearest rank) and max: a median alone hides the runs that stall."""
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    p90 = values[min(len(values) - 1, max(0, -(-9 * len(values) // 10) - 1))]
    return {"min": values[0], "median": statistics.median(values), "p90": p90, "max": values[-1],
            "p90_over_median": p90 / statistics.median(values) if statistics.median(values) else None}


def summarize(records: list[dict], ceilings: dict | None) -> dict:
    """Medians over repeats per (case, variant, path), the checks, and the ratios to the targets."""
    groups: dict[tuple[str, str, str], list[dict]] = {}
    checks: dict[tuple[str, str], dict] = {}
    for r in records:
        if r.get("kind") == "check":
            checks[(r["case"], r["variant"])] = r
        elif r.get("measurement"):
            groups.setdefault((r["case"], r["variant"], r["path"]), []).append(r["measurement"])
    rows = []
    for (case, variant, path), ms in groups.items():
        row = {"case": case, "variant": variant, "path": path, "runs": len(ms), "shape": ms[0]["shape"]}
        for key in ("input_s", "compute_s", "output_s", "total_s"):
            row[key] = median([m.get(key) for m in ms])
        row["total_spread"] = spread([m.get("total_s") for m in ms])
        row["kernel_median_ms"] = median([m["kernel"]["median_ms"] for m in ms if m.get("kernel")])
        clocks = [m["pipeline"] for m in ms if m.get("pipeline")]
        if clocks:
            clock = {key: median([c.get(key) for c in clocks]) for key in
                     ("wall_s", "setup_s", "device_alloc_s", "device_busy_s", "keep_s", "h2d_gbps", "d2h_gbps",
                      "read_gbps", "write_gbps", *(f"{s}_s" for s in STAGES))}
            clock.update({key: clocks[0][key] for key in ("chunks", "items_per_chunk", "ring_depth", "ring_bytes")})
            clock["bound"] = statistics.mode([c["bound"] for c in clocks])
            row["clock"] = clock
        check = checks.get((case, variant), {})
        row["identical"] = check.get("identical")
        row["verified"] = (check.get("verify") or {}).get("passed")
        row["targets"] = targets(row, (ceilings or {}).get("files", {}).get(case), (ceilings or {}).get("gpu", {}))
        rows.append(row)
    failures = [{k: r.get(k) for k in ("case", "variant", "path", "exit", "error")} for r in records
                if r.get("kind") != "check" and not r.get("measurement")]
    return {"rows": rows, "failures": failures, "ceilings": ceilings}


def targets(row: dict, file: dict | None, gpu: dict) -> dict:
    """The issue's targets for a pipelined row: compute against max(H2D, kernels) + one chunk's D2H,
    input against cat, output against one write, and t22's whole run against 0.25 s."""
    clock = row.get("clock")
    if row["path"] != "pipeline" or clock is None:
        return {}
    shape = row["shape"]
    out_bytes = 4 * shape["B"] * shape["N"] * shape["d"]
    result: dict = {}
    h2d, d2h = gpu.get("h2d_pinned_gbps"), gpu.get("d2h_pinned_gbps")
    if h2d and d2h and row["kernel_median_ms"] is not None:
        chunk_out = 4 * clock["items_per_chunk"] * shape["N"] * shape["d"]
        limit = max(3 * out_bytes / (h2d * 1e9), row["kernel_median_ms"] / 1e3) + chunk_out / (d2h * 1e9)
        result["compute_limit_s"] = limit
        result["compute_over_limit"] = row["compute_s"] / limit
    if file and file.get("cat_s"):
        result["input_over_cat"] = row["input_s"] / file["cat_s"]
    if file and file.get("write_s"):
        result["output_over_write"] = row["output_s"] / file["write_s"]
    if row["case"] == "t22":
        result["total_under_0_25_s"] = row["total_s"] <= 0.25
    return result


def fmt(value, spec: str = ".3f", unit: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{unit}"


def markdown(summary: dict) -> str:
    ceilings = summary.get("ceilings") or {}
    gpu = ceilings.get("gpu", {})
    lines = ["# The course clock with and without the pipeline", ""]
    if gpu and "error" not in gpu:
        lines += [f"GPU: {gpu.get('device')}; {ceilings.get('host_cpus')} host CPUs; measured {ceilings.get('date')}.", "",
                  "| copy ceiling | GB/s |", "| --- | ---: |"]
        for key in ("h2d_pinned", "h2d_pageable", "d2h_pinned", "d2h_pageable"):
            lines.append(f"| {key.replace('_', ' ')} | {fmt(gpu.get(key + '_gbps'), '.1f')} |")
        lines += ["", f"Pinning {fmt(gpu.get('pin_bytes', 0) / 2**20, '.0f')} MiB in one piece: "
                      f"{fmt(gpu.get('pin_s'))} s.", ""]
    elif gpu:
        lines += [f"GPU ceilings: {gpu['error']}", ""]
    files = ceilings.get("files", {})
    if files:
        lines += ["| case | input MB | cat s | output MB | one write s |", "| --- | ---: | ---: | ---: | ---: |"]
        for case, f in files.items():
            if "error" in f:
                lines.append(f"| {case} | {f['error']} | | | |")
                continue
            lines.append(f"| {case} | {f['input_bytes'] / 1e6:.0f} | {f['cat_s']:.3f} | {f['output_bytes'] / 1e6:.0f} | "
                         f"{f['write_s']:.3f} |")
        lines.append("")
    lines += ["Times are medians over the repeats, in seconds, beside the spread of the total (p90: the nearest-rank "
              "90th percentile). Pipelined rows: input, output and the stages are "
              "each stage's own busy time (they overlap); compute is device allocation + the GPU's busy time; "
              "total is the wall time of the whole pipeline.", "",
              "| case | variant | path | input | compute | output | total | total min / median / p90 / max (runs) "
              "| kernel ms | read | H2D (GB/s) | kernels | D2H (GB/s) | write | bound | chunks x items, ring | same bits "
              "| verified |",
              "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- "
              "| --- | --- |"]
    for row in sorted(summary["rows"], key=lambda r: (r["case"], r["variant"], r["path"] != "pipeline")):
        c = row.get("clock")
        stage = (lambda s: fmt(c[f"{s}_s"])) if c else (lambda s: "-")
        h2d = f"{stage('h2d')} ({fmt(c['h2d_gbps'], '.1f')})" if c else "-"
        d2h = f"{stage('d2h')} ({fmt(c['d2h_gbps'], '.1f')})" if c else "-"
        plan = f"{c['chunks']} x {c['items_per_chunk']}, {c['ring_depth']}" if c else "-"
        sp = row.get("total_spread")
        spread_text = (f"{fmt(sp['min'])} / {fmt(sp['median'])} / {fmt(sp['p90'])} / {fmt(sp['max'])} ({row['runs']})"
                       if sp else "-")
        lines.append(f"| {row['case']} | {row['variant']} | {row['path']} | {fmt(row['input_s'])} | {fmt(row['compute_s'])} | "
                     f"{fmt(row['output_s'])} | {fmt(row['total_s'])} | {spread_text} | {fmt(row['kernel_median_ms'], '.3f')} | "
                     f"{stage('read')} | {h2d} | {stage('kernel')} | {d2h} | {stage('write')} | "
                     f"{c['bound'] if c else '-'} | {plan} | {row['identical'] if row['identical'] is not None else '-'} | "
                     f"{row['verified'] if row['verified'] is not None else '-'} |")
    target_rows = [r for r in summary["rows"] if r.get("targets")]
    if target_rows:
        lines += ["", "Targets (issue 15): compute / max(H2D pinned, kernel) + one chunk's D2H <= 1.3; input / cat "
                  "<= 1.3; output / one write <= 1.3; t22 total <= 0.25 s.", "",
                  "| case | variant | compute / limit (limit s) | input / cat | output / write | t22 total <= 0.25 s |",
                  "| --- | --- | ---: | ---: | ---: | --- |"]
        for row in sorted(target_rows, key=lambda r: (r["case"], r["variant"])):
            t = row["targets"]
            limit = f"{fmt(t.get('compute_over_limit'), '.2f')} ({fmt(t.get('compute_limit_s'), '.4f')})"
            lines.append(f"| {row['case']} | {row['variant']} | {limit} | {fmt(t.get('input_over_cat'), '.2f')} | "
                         f"{fmt(t.get('output_over_write'), '.2f')} | {t.get('total_under_0_25_s', '-')} |")
    if summary.get("failures"):
        lines += ["", "Runs that gave no measurement:", ""]
        lines += [f"- {f['case']} {f['variant']} {f['path']}: exit {f['exit']}: {f.get('error') or ''}"
                  for f in summary["failures"]]
    return "\n".join(lines) + "\n"


def write_summary(outdir: Path) -> None:
    runs = outdir / "runs.jsonl"
    records = [json.loads(line) for line in runs.read_text().splitlines() if line.strip()] if runs.exists() else []
    ceilings_file = outdir / "ceilings.json"
    ceilings = json.loads(ceilings_file.read_text()) if ceilings_file.exists() else None
    summary = summarize(records, ceilings)
    (outdir / "summary.json").write_text(strict_json.dumps(summary) + "\n")
    (outdir / "summary.md").write_text(markdown(summary))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--cases", default="t22,t11,t10,t29,t30")
    parser.add_argument("--variants", default="tf32x3,qreg,torch")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--reps", type=int, default=5, help="timed kernel passes per run (the kernel statistics)")
    parser.add_argument("--summary-only", action="store_true")
    parser.add_argument("--no-verify", action="store_true",
                        help="do not verify outputs against the float64 references (verify would compute missing ones)")
    args = parser.parse_args()
    args.outdir.mkdir(parents=True, exist_ok=True)
    if not args.summary_only:
        with (args.outdir / "runs.jsonl").open("a") as runs:
            def log(record: dict) -> None:
                runs.write(strict_json.dumps(record, indent=None) + "\n")
                runs.flush()
                write_summary(args.outdir)  # a run cut short still leaves a summary of what it measured

            for case in args.cases.split(","):
                for variant in args.variants.split(","):
                    bench_case(args.outdir, case, variant, args.repeats, args.reps, log, not args.no_verify)
    write_summary(args.outdir)
    print((args.outdir / "summary.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
