"""The tables of one run and of one check: the measurement (times, course clock, TFLOP/s, the verified
passes) and a verify report, each built once as a TableModel (`attnbench.output.tables.result_tables` has the rest)."""

from __future__ import annotations

import math

from attnbench.output.tables.course_clock_rows import course_clock_rows
from attnbench.output.tables.result_tables import format_ms, format_s, noise_text
from attnbench.output.tables.table_model import BAD, GOOD, TableModel, Text, columns
from attnbench.results.ceilings import share_text
from attnbench.results.measurement import Measurement
from attnbench.results.verification import VerifyReport


def measurement_table(m: Measurement) -> TableModel:
    """The table `attnbench run` prints: phase times, kernel statistics, throughput, check."""
    k = m.kernel
    table = TableModel(f"{m.variant} on {m.case} ({m.shape}) — {m.device}", columns("measure", "value", "notes"))
    table.columns[1].right = True
    on_host = m.peak_flops is None
    if m.clock is not None:
        course_clock_rows(table, m.clock, m.compile_s)
    else:
        table.add_row("input", format_s(m.input_s), "reading the testcase file")
        compute_note = "the host computation" if on_host else "device allocation + host-to-device + kernels + device-to-host"
        table.add_row("compute", format_s(m.compute_s), compute_note)
        table.add_row("output", format_s(m.output_s), "writing the output file")
        table.add_row("total", format_s(m.total_s), f"first pass: input + compute + output (compile "
                      f"{m.compile_s:.3f} s not included)")
    _beyond_the_first_pass(table, m)
    timed = "pass" if on_host else "kernel"
    if m.timed_check is None or m.timed_check.passed:
        table.add_row(f"{timed} median", format_ms(k.median), f"{k.count} sample{'s' if k.count != 1 else ''}")
        table.add_row(f"{timed} min / max", f"{format_ms(k.min)} / {format_ms(k.max)}", "")
        noise = f"noise {noise_text(k.noise)} (95% interval of the median)" if math.isfinite(k.noise) else \
            "noise unknown (fewer than 6 samples)"
        if k.count >= 2:
            table.add_row(f"{timed} stddev", format_ms(k.stdev), f"{noise}, {k.outliers} outliers")
        else:  # one sample has no spread: a 0.0000 ms here would claim a perfectly steady clock
            table.add_row(f"{timed} stddev", "-", "one sample: no spread, noise unknown")
        if k.clock is not None:
            table.add_row("SM clock", k.clock.text(), "NVML, after each sample: median (min-max when it moved)")
        impossible = m.impossible_reason()
        if impossible is not None:  # not a speed: no TFLOP/s, no share of a peak
            table.add_row("TFLOP/s", Text("IMPOSSIBLE", BAD), impossible)
        else:
            peak = share_text(m.ceiling) if m.ceiling else ""  # the peak of the variant's unit, measured or datasheet
            table.add_row("TFLOP/s", f"{m.tflops:.3f}", f"4*B*N*N*d / kernel median; {peak}".rstrip("; "))
    else:
        rounding = m.timed_check is not None and m.timed_check.precision is not None
        table.add_row(timed, "-", "no time: " + ("its arithmetic's rounding put an element outside the tolerance"
                                                 if rounding else "a launch did not compute the answer") + " (see below)")
    if m.timed_check is not None:
        t = m.timed_check
        verdict = Text("PASS", GOOD) if t.passed else Text("WRONG", BAD)
        detail = (f"{t.samples} launches checked, {t.fresh_inputs} on fresh inputs, {t.rows_per_sample} rows of "
                  "each computed exactly" if t.fresh_inputs else "verified passes (saved before fresh samples)")
        table.add_row("timed passes", verdict, detail)
    if m.verification is not None:
        v = m.verification
        verdict = Text("PASS", GOOD) if v.passed else Text("FAIL", BAD)
        table.add_row("check", verdict, f"{v.rule()}; max abs {v.max_abs_error:.3g}, relL2 {v.rel_l2_error:.3g}")
    return table


def _beyond_the_first_pass(table: TableModel, m: Measurement) -> None:
    """Where the rest of a run's time went: the samples, the check (its float64 reference can take minutes on the
    host) and the whole cell, so "total" is never read as what the command took."""
    if m.sampling_s is not None:
        table.add_row("samples", format_s(m.sampling_s), "warm-ups and timed passes after the first")
    if m.check_s is not None:
        table.add_row("reference", format_s(m.check_s), "the check: float64 reference (made unless stored), compare")
    if m.wall_s is not None:
        table.add_row("whole run", format_s(m.wall_s),
                      "input made if missing, compile, first pass, samples, check")


def verify_table(report: VerifyReport, title: str) -> TableModel:
    """`attnbench verify`: the verdict, the error metrics, the worst and the first failing elements."""
    table = TableModel(title, columns("metric", "value"))
    table.columns[1].right = True
    verdict = Text(f"PASS ({report.rule()})", GOOD) if report.passed else Text(f"FAIL ({report.rule()})", BAD)
    table.add_row("verdict", verdict)
    table.add_row("max abs error", f"{report.max_abs_error:.6g}")
    if report.rtol:  # only a rule with rtol uses it: near zero crossings of the reference it means nothing
        table.add_row("max relative error", f"{report.max_rel_error:.6g}")
    table.add_row("relative L2 error", f"{report.rel_l2_error:.6g}")
    table.add_row("NaN / Inf", f"{report.nan_count} / {report.inf_count}")
    table.add_row("failing elements", f"{report.failing} of {report.elements}")
    if report.worst is not None:
        table.add_row("worst element", str(report.worst))
    for i, mismatch in enumerate(report.first_failures):
        table.add_row("first failures" if i == 0 else "", str(mismatch))
    return table


