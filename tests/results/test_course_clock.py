"""The course clock of a pipelined run: busy times, bandwidths, the bound, and its place in a measurement."""

from __future__ import annotations

import json

import pytest

from attnbench.cases.testcase import Shape
from attnbench.output.tables.run_tables import measurement_table
from attnbench.results.course_clock import CourseClock, union_seconds
from attnbench.results.measurement import Measurement
from attnbench.results.stats import KernelStats


def t22_clock(**changes) -> CourseClock:
    values = dict(wall_s=0.2, setup_s=0.012, device_alloc_s=0.002, read_s=0.124, h2d_s=0.0145, kernel_s=0.02,
                  d2h_s=0.0048, write_s=0.08, device_busy_s=0.03, input_bytes=786_432_000, output_bytes=262_144_000,
                  chunks=100, items_per_chunk=5, ring_depth=3, ring_bytes=31_457_280, keep_s=0.03)
    values.update(changes)
    return CourseClock(**values)


def test_bound_compute_and_bandwidths():
    clock = t22_clock()
    assert clock.bound == "read"
    assert clock.compute_s == pytest.approx(0.032)
    assert clock.h2d_gbps == pytest.approx(786.432 / 14.5)
    assert clock.d2h_gbps == pytest.approx(262.144 / 4.8)
    assert clock.write_gbps == pytest.approx(262.144 / 80)
    assert t22_clock(kernel_s=0.5).bound == "kernel"
    assert t22_clock(h2d_s=0.0).h2d_gbps is None


def test_union_of_intervals():
    assert union_seconds([]) == 0
    assert union_seconds([(0, 2), (1, 3), (5, 6)]) == 4
    assert union_seconds([(0, 10), (2, 3), (4, 5)]) == 10
    assert union_seconds([(3, 4), (0, 1)]) == 2


def measurement(clock: CourseClock | None) -> Measurement:
    return Measurement(variant="tf32x3", case="t22", shape=Shape(500, 2048, 64), device="NVIDIA H200",
                       compute_s=clock.compute_s if clock else 0.2, kernel=KernelStats([10.1, 10.2, 10.0]),
                       input_s=0.124, output_s=0.08, peak_flops=6.69e13, clock=clock)


def test_a_pipelined_measurement_totals_the_wall_time_and_round_trips_through_json():
    m = measurement(t22_clock())
    assert m.total_s == 0.2  # the wall, not input + compute + output
    data = json.loads(json.dumps(m.to_dict()))
    assert data["pipeline"]["bound"] == "read" and data["pipeline"]["h2d_gbps"] == pytest.approx(54.24, rel=1e-3)
    assert data["total_s"] == 0.2
    again = Measurement.from_dict(data)
    assert again.clock == m.clock
    unpipelined = measurement(None)
    assert unpipelined.to_dict()["pipeline"] is None
    assert unpipelined.total_s == pytest.approx(0.124 + 0.2 + 0.08)


def test_the_run_table_shows_each_stage_the_wall_and_the_bound():
    table = measurement_table(measurement(t22_clock()))
    rows = {str(row[0]).strip(): [str(cell) for cell in row[1:]] for row in table.rows}
    assert rows["H2D"][0] == "0.015 s" and "54.2 GB/s" in rows["H2D"][1]
    assert rows["D2H"][0] == "0.005 s" and "54.6 GB/s" in rows["D2H"][1]
    assert rows["total"][0] == "0.200 s" and "wall time" in rows["total"][1]
    assert rows["bound by"][0] == "reading the file" and "1.61x" in rows["bound by"][1]
    assert rows["pipeline"][0] == "100 x 5"
    plain = {str(row[0]).strip() for row in measurement_table(measurement(None)).rows}
    assert "H2D" not in plain and "bound by" not in plain


def test_a_pipelined_runs_table_says_its_samples_and_whole_run_once():
    """On an H200 the pipelined run's table printed "samples" and "whole run" twice."""
    m = Measurement(variant="tf32x3", case="t22", shape=Shape(500, 2048, 64), device="GPU", compute_s=0.04,
                    kernel=KernelStats([0.0099] * 5), peak_flops=1e15, clock=t22_clock(), sampling_s=0.25,
                    check_s=1.0, wall_s=2.6)
    names = [row[0].text for row in measurement_table(m).rows]
    assert names.count("samples") == 1 and names.count("whole run") == 1 and names.count("reference") == 1
