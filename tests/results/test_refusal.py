"""attnbench.results.refusal: a refusal as a record, its sentence, and its saved form."""

from __future__ import annotations

import pytest

from attnbench.cases.testcase import Shape
from attnbench.kernels.catalogue import get_variant
from attnbench.results import resultset as results
from attnbench.results.refusal import Refusal, RefusalKind
from attnbench.results.resultset import REFUSED, Cell


def test_a_shape_refusal_is_a_record_of_the_limit_and_the_case_value():
    refusal = get_variant("bankfree").refusal(Shape(2, 17, 48))
    assert refusal == Refusal("bankfree", RefusalKind.HEAD_DIMS, (32, 64), 48)
    assert not refusal.about_device and refusal.requirement() == "bankfree needs d in {32, 64}"
    assert refusal.group() == Refusal("bankfree", RefusalKind.HEAD_DIMS, (32, 64), None)


def test_a_gpu_refusal_records_the_architectures_and_groups_with_its_value():
    refusal = get_variant("wgmma3x").gpu_refusal((8, 0))
    assert refusal == Refusal("wgmma3x", RefusalKind.ARCH, "sm_90a", "sm_80")
    assert refusal.about_device and refusal.group() == refusal and refusal.group_text() == refusal.sentence()


@pytest.mark.parametrize("refusal, sentence", [
    (Refusal("v", RefusalKind.HEAD_DIM_RANGE, (1, None), 0), "v needs d in [1, any], and the case has d=0"),
    (Refusal("v", RefusalKind.HEAD_DIM_RANGE, (1, 64), 128), "v needs d in [1, 64], and the case has d=128"),
    (Refusal("v", RefusalKind.MAX_SEQ_LEN, 16384, 32768), "v needs N <= 16384, and the case has N=32768"),
    (Refusal("v", RefusalKind.SEQ_LEN_MULTIPLE, 128, 100), "v needs N a multiple of 128, and the case has N=100"),
    (Refusal("v", RefusalKind.UNIT_CAPABILITY, "sm_80", "sm_61", "tf32x3"),
     "v needs sm_80 or newer for its tf32x3 instructions, and this GPU is sm_61"),
    (Refusal("v", RefusalKind.MIN_CAPABILITY, "sm_80", "sm_61"), "v needs sm_80 or newer, and this GPU is sm_61"),
])
def test_every_kind_renders_its_sentence(refusal, sentence):
    assert refusal.sentence() == sentence
    assert Refusal.from_dict(refusal.to_dict()) == refusal


def test_a_refused_cell_keeps_its_record_and_sentence_through_a_saved_file():
    refusal = Refusal("naive", RefusalKind.MAX_SEQ_LEN, 16384, 32768)
    cell = Cell.refused("t29", refusal)
    assert cell.status == REFUSED and cell.message == refusal.sentence()
    back = Cell.from_dict(results.loads(results.dumps(_one_cell_set(cell))).cells[0].to_dict())
    assert back.refusal == refusal and back.message == cell.message


def test_a_refused_cell_saved_without_a_record_loads_with_its_message():
    data = Cell("naive", "t29", REFUSED, "naive needs N <= 16384, and the case has N=32768").to_dict()
    del data["refusal"]  # as schema versions 1 to 3 wrote it
    back = Cell.from_dict(data)
    assert back.refusal is None and back.message == "naive needs N <= 16384, and the case has N=32768"


def _one_cell_set(cell: Cell) -> results.ResultSet:
    return results.ResultSet("compare", {}, {}, [], [], [cell])


def test_a_precision_refusal_is_one_sentence_with_its_numbers_and_survives_saving():
    from attnbench.results.refusal import Refusal, RefusalKind

    refusal = Refusal("wgmma16s", RefusalKind.PRECISION, 0.005,
                      "|V| up to 1000 gives FP16 rounding errors up to 0.74 per element (V 0.25, P 0.49)")
    assert refusal.sentence() == ("wgmma16s cannot meet 0.005 on this input: |V| up to 1000 gives FP16 rounding "
                                  "errors up to 0.74 per element (V 0.25, P 0.49); use a float32 variant (the "
                                  "default, --accuracy float32)")
    assert not refusal.about_device and "\n" not in refusal.sentence()
    assert Refusal.from_dict(refusal.to_dict()) == refusal
