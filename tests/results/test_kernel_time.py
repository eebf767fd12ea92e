"""A program's kernel records (the collector's file, cuda/kernel_records.cpp) read and summed.

The fixture was recorded on an H200 (tools/lab/record_kernel_fixture.sh, 2026-11-28): the course example on t01,
one launch of flash_attention<32>, grid 2 x 320, block 64, 0.059 ms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnbench import strict_json
from attnbench.cases.testcase import Shape
from attnbench.results.kernel_time import (
    CUPTI_SOURCE,
    RECORDS_HEADER,
    KernelRecording,
    KernelRecordsError,
    KernelTime,
    busy_span_ns,
    kernel_time_of,
    parse_records,
)

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "kernel_records_h200_course_t01.txt"
T01 = Shape(320, 128, 32)


def _records(*lines: str) -> str:
    return "\n".join([RECORDS_HEADER, *lines]) + "\n"


def test_the_course_examples_records_give_its_kernel_time_launches_and_tflops():
    time = parse_records(FIXTURE.read_text())
    launch = [line.split() for line in FIXTURE.read_text().splitlines() if line.startswith("kernel ")]
    expected_s = sum(int(w[2]) - int(w[1]) for w in launch) / 1e9
    assert time.launches == len(launch) >= 1
    assert time.busy_s == pytest.approx(expected_s) and time.total_s == pytest.approx(expected_s)
    assert time.kernels[0].name.startswith("_Z15flash_attention") and time.kernels[0].launches == len(launch)
    assert time.tflops(T01.flops) == pytest.approx(4 * 320 * 128 * 128 * 32 / expected_s / 1e12)
    assert time.dropped == 0 and time.source == CUPTI_SOURCE


def test_launches_are_summed_per_kernel_most_time_first():
    time = parse_records(_records("kernel 100 400 1 1 1 32 1 1 0 7 small", "kernel 500 1500 8 1 1 128 1 1 0 7 big",
                                  "kernel 1600 1700 1 1 1 32 1 1 0 7 small", "kernel 1800 3800 8 1 1 128 1 1 0 7 big",
                                  "dropped 0", "end 4"))
    assert time.launches == 4
    assert [(k.name, k.launches) for k in time.kernels] == [("big", 2), ("small", 2)]
    assert time.kernels[0].total_s == pytest.approx(3000e-9) and time.kernels[1].total_s == pytest.approx(400e-9)
    assert time.total_s == pytest.approx(3400e-9) and time.busy_s == pytest.approx(3400e-9)


def test_overlapping_kernels_count_once_in_the_busy_span():
    assert busy_span_ns([(0, 100), (50, 150), (300, 400), (320, 350)]) == 250
    assert busy_span_ns([(10, 20), (20, 30)]) == 20 and busy_span_ns([]) == 0
    time = parse_records(_records("kernel 0 1000 1 1 1 32 1 1 0 7 a", "kernel 500 1500 1 1 1 32 1 1 0 8 b",
                                  "dropped 0", "end 2"))
    assert time.busy_s == pytest.approx(1500e-9) and time.total_s == pytest.approx(2000e-9)
    assert time.tflops(3000) == pytest.approx(3000 / 1500e-9 / 1e12)


def test_a_program_with_no_kernels_has_no_time_and_no_tflops():
    time = parse_records(_records("dropped 0", "end 0"))
    assert (time.launches, time.busy_s, time.total_s, time.kernels) == (0, 0.0, 0.0, ())
    assert time.tflops(T01.flops) is None


@pytest.mark.parametrize("text, words", [
    ("", "not a kernel-records file"),
    ("hello\nend 0\n", "not a kernel-records file"),
    (_records("kernel 0 10 1 1 1 32 1 1 0 7 a"), "cut short"),
    (_records("kernel 0 10 1 1 1 32 1 1 0 7 a", "end 2"), "counts 2 launches, the file holds 1"),
    (_records("kernel 10 0 1 1 1 32 1 1 0 7 a", "end 1"), "line 2: a launch that ends before it starts"),
    (_records("kernel 0 x 1 1 1 32 1 1 0 7 a", "end 1"), "line 2: a number that is not a whole number"),
    # written by a program (it can): numbers that int() takes but sums in floats cannot
    (_records("kernel 0 1" + "0" * 4000 + " 1 1 1 32 1 1 0 7 a", "end 1"), "line 2: a number that is not a whole"),
    (_records("kernel 0 99999999999999999999 1 1 1 32 1 1 0 7 a", "end 1"), "line 2: a number that is not a whole"),
    (_records("kernel 0 10 1 1 1 32 1 1 0 7 a", "dropped -99999999999999", "end 1"), "line 3: a number that is not"),
    (_records("kernel 0 10 1 1 1 32 1 1 0 7 a", "end -1"), "line 3: a number that is not"),
    (_records("kernel 0 10 1 1 -1 32 1 1 0 7 a", "end 1"), "line 2: a number that is not"),
    (_records("kernel 0 90000000000000 1 1 1 32 1 1 0 7 a", "end 1"), "line 2: a launch that lasts more than a day"),
    (_records("kernel 0 10 1 1 1 32 1 1 0 7 a", "kernel 9000000000000000 9000000000000010 1 1 1 32 1 1 0 7 a",
              "end 2"), "span more than a day"),
    (_records("kernel ０ 10 1 1 1 32 1 1 0 7 a", "end 1"), "line 2: a number that is not"),
    (_records("kernel 0 10 1 1", "end 1"), "line 2: not a record"),
    (_records("end 0", "kernel 0 10 1 1 1 32 1 1 0 7 a"), "line 3: records after the end line"),
])
def test_a_file_the_collector_did_not_write_whole_is_refused_in_one_line(text, words):
    with pytest.raises(KernelRecordsError, match=words):
        parse_records(text)


def test_a_kernel_name_is_kept_printable():
    time = parse_records(_records("kernel 0 10 1 1 1 32 1 1 0 7 evil\x1b[2Jname", "end 1"))
    assert "\x1b" not in time.kernels[0].name and "\\x1b" in time.kernels[0].name


def test_a_recording_is_saved_as_strict_json_and_read_back():
    time = parse_records(FIXTURE.read_text())
    extra = json.loads(strict_json.dumps(KernelRecording(time).to_extra(T01.flops)))
    assert kernel_time_of(extra) == time and extra["kernel"]["tflops"] == pytest.approx(time.tflops(T01.flops))
    none = KernelRecording(None, "no kernel time: no NVIDIA GPU on this machine").to_extra(T01.flops)
    assert none == {"kernel_note": "no kernel time: no NVIDIA GPU on this machine"} and kernel_time_of(none) is None
    no_kernels = KernelRecording(parse_records(_records("end 0"))).to_extra(T01.flops)
    assert json.loads(strict_json.dumps(no_kernels))["kernel"]["tflops"] is None
    assert isinstance(kernel_time_of(no_kernels), KernelTime)
