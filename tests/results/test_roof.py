"""The roof of a cell against hand-computed cases, and the card data's shape."""

from __future__ import annotations

import pytest

from attnbench.results.roof import EXPONENTIALS, MEMORY, PRODUCTS, PassWork, card_named, cards, roof_of


def test_t11_on_an_h200_is_bound_by_hbm_and_84_tflops_reach_55_percent():
    # t11 = (13600, 128, 32). bytes: 16*B*N*d = 16 * 13600 * 128 * 32 = 891,289,600 (Q, K, V read, O written);
    # FLOPs: 4*B*N^2*d = 4 * 13600 * 16384 * 32 = 28,521,267,200; exponentials: B*N^2 = 222,822,400.
    # H200: 4.8 TB/s -> 185.685 us; 989.5 TFLOP/s -> 28.824 us; MUFU 16 * 132 * 1.98 GHz = 4.18176 T/s -> 53.284 us.
    h200 = card_named("h200")
    roof = roof_of(13600, 128, 32, h200)
    assert roof.work == PassWork(891_289_600, 28_521_267_200, 222_822_400)
    assert roof.seconds_by_resource[MEMORY] == pytest.approx(185.685e-6, rel=1e-5)
    assert roof.seconds_by_resource[PRODUCTS] == pytest.approx(28.824e-6, rel=1e-4)
    assert roof.seconds_by_resource[EXPONENTIALS] == pytest.approx(53.284e-6, rel=1e-4)
    assert roof.bound == MEMORY and roof.bound_text() == "bound by HBM"
    # the 84.0 TFLOP/s: 28.5213 GFLOP / 84e12 = 339.54 us; 185.685 / 339.54 = 54.7%; 891.29 MB / 339.54 us = 2.63 TB/s
    median = 28_521_267_200 / 84.0e12
    assert roof.reached(median) == pytest.approx(0.5469, abs=1e-4)
    assert roof.reached_text(median) == "reached 55% of that roof (2.62 TB/s)"


def test_t29_is_bound_by_the_exponentials_and_t30_by_the_tensor_cores():
    # t29 = (4, 32768, 32): 549,755,813,888 FLOPs -> 555.59 us at 989.5 TFLOP/s; 4 * 2^30 = 4,294,967,296
    # exponentials -> 1027.08 us at 4.18176 T/s: the exponential unit bounds it (one exp per 128 FLOPs).
    h200 = card_named("NVIDIA H200")
    t29 = roof_of(4, 32768, 32, h200)
    assert t29.bound == EXPONENTIALS and t29.bound_text() == "bound by exp"
    assert t29.seconds == pytest.approx(1027.08e-6, rel=1e-5)
    # 195 TFLOP/s: 549.756 GFLOP / 195e12 = 2819.26 us; 1027.08 / 2819.26 = 36.4%
    assert t29.reached(549_755_813_888 / 195e12) == pytest.approx(0.3643, abs=1e-4)
    # t30 = (2, 32768, 64): the same FLOPs, half the exponentials (513.54 us): the tensor cores bound it
    t30 = roof_of(2, 32768, 64, h200)
    assert t30.bound == PRODUCTS and t30.bound_text() == "bound by tensor"
    assert t30.seconds == pytest.approx(555.59e-6, rel=1e-5)


def test_a_card_without_tensor_cores_is_held_to_ffma_and_its_gddr():
    # t01 = (320, 128, 32) on a GTX 1080: 671,088,640 FLOPs / 8.873 TFLOP/s = 75.63 us; 20,971,520 bytes / 320 GB/s
    # = 65.54 us; 5,242,880 exponentials / (32 * 20 * 1.733 GHz = 1.10912 T/s) = 4.73 us
    gtx = card_named("gtx1080")
    roof = roof_of(320, 128, 32, gtx)
    assert roof.seconds_by_resource[PRODUCTS] == pytest.approx(75.632e-6, rel=1e-4)
    assert roof.seconds_by_resource[MEMORY] == pytest.approx(65.536e-6, rel=1e-5)
    assert roof.seconds_by_resource[EXPONENTIALS] == pytest.approx(4.7271e-6, rel=1e-4)
    assert roof.bound_text() == "bound by FFMA"
    assert gtx.resource_label(MEMORY) == "DRAM"


def test_every_card_has_its_peaks_and_a_source_for_each():
    keys = [card.key for card in cards()]
    assert {"h200", "h100-sxm", "a100", "gtx1080", "rtx3070"} <= set(keys)
    assert len(keys) == len(set(keys))
    names = [name for card in cards() for name in card.names]
    assert len(names) == len(set(names))
    for card in cards():
        assert card.memory_bytes_per_s > 0 and card.products_per_s > 0 and card.exponentials_per_s > 0
        assert len(card.sources) == 3 and all(len(source) > 20 for source in card.sources)


def test_an_unknown_card_is_none():
    assert card_named("NVIDIA B200 (not in the table)") is None
