"""Variant flavours (`qreg:fastmath`): lookup, unknown options, constraints, `attnbench list`, saved names,
user flavours in attnbench.toml, and report 004's transcriptions in tools/report004 (nvcc, no GPU)."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from attnbench.cases.testcase import Shape
from attnbench.cli import main
from attnbench.errors import ShapeNotSupported, UnknownName
from attnbench.kernels.catalogue import REGISTRY, flavoured_variants, get_variant, variants_for, with_flavours
from attnbench.kernels.nvcc import compile_report, nvcc_path, variant_info
from attnbench.kernels.user import UserVariantError, find_launch_facts, load_variants
from tests.kernels.test_user_variants import GOOD, write_facts

REPORT004 = Path(__file__).resolve().parents[2] / "tools" / "report004"
LADDER_STEPS = ("float4", "restructure", "coalesced", "reglm", "bankfree", "qreg")
needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="no nvcc")


def test_every_report_004_step_offers_the_reports_fast_math_build():
    for name in LADDER_STEPS:
        assert "fastmath" in REGISTRY[name].flavours
    assert set(REGISTRY["qreg"].flavours) == {"fastmath", "fulltiles", "report"}


@pytest.mark.parametrize("variant", flavoured_variants(), ids=lambda v: v.name)
def test_a_flavour_is_its_variant_with_more_options_defines_and_constraints(variant):
    base_name, _, flavour = variant.name.partition(":")
    base, chosen = REGISTRY[base_name], REGISTRY[base_name].flavours[flavour]
    assert get_variant(variant.name).name == variant.name
    assert variant.options == (*base.options, *chosen.options)
    shape = Shape(2, 256, 64)
    assert variant.defines(shape) == {**base.defines(shape), **chosen.defines}
    assert variant.technique.startswith(base.technique) and chosen.description in variant.technique
    assert variant.launches == base.launches and variant.source == base.source and not variant.flavours


def test_fastmath_adds_the_nvcc_option_and_the_report_flavour_both_restrictions():
    assert "--use_fast_math" in get_variant("qreg:fastmath").options
    assert "--use_fast_math" not in get_variant("qreg").options
    report = get_variant("qreg:report")
    assert "--use_fast_math" in report.options and report.defines(Shape(1, 128, 32))["FULL_TILES"] == 1


def test_an_unknown_option_is_one_line_naming_it_and_the_offered_ones():
    with pytest.raises(UnknownName, match=r"qreg has no option 'fast'; its options: fastmath, fulltiles, report"):
        get_variant("qreg:fast")
    with pytest.raises(UnknownName, match=r"naive has no option 'fastmath'; its options: none"):
        variants_for("naive:fastmath")
    with pytest.raises(UnknownName, match=r"no variant named 'nope'"):
        get_variant("nope:fastmath")


def test_the_cli_refuses_an_unknown_option_with_exit_2(tmp_path):
    result = CliRunner().invoke(main, ["run", "odd_17x48", str(tmp_path / "o.bin"), "--variant", "qreg:nope"])
    assert result.exit_code == 2, result.output
    assert "qreg has no option 'nope'" in " ".join(result.output.split()) and "Traceback" not in result.output


def test_fulltiles_refuses_n_not_a_multiple_of_the_tile():
    variant = get_variant("qreg:fulltiles")
    assert variant.refusal(Shape(4, 32768, 32)) is None and variant.refusal(Shape(13600, 128, 32)) is None
    with pytest.raises(ShapeNotSupported, match=r"qreg:fulltiles needs N a multiple of 128, and the case has N=100"):
        variant.require(Shape(1, 100, 64))
    plain = get_variant("qreg").refusal(Shape(1, 256, 48)).sentence()
    assert variant.refusal(Shape(1, 256, 48)).sentence() == plain.replace("qreg", "qreg:fulltiles")
    assert "N a multiple of 128" in variant.constraints.describe()
    assert get_variant("qreg:fastmath").refusal(Shape(1, 100, 64)) is None  # fast math takes any N, as qreg does


def test_list_shows_each_flavour_after_its_variant():
    names = [v.name for v in with_flavours(list(REGISTRY.values()))]
    assert names[names.index("qreg") + 1:names.index("qreg") + 4] == ["qreg:fastmath", "qreg:fulltiles", "qreg:report"]
    result = CliRunner().invoke(main, ["list", "--no-resources", "--wide"], terminal_width=250)
    assert result.exit_code == 0, result.output
    # side by side, or one block per variant where the console is too narrow for the wide columns
    names = {words[1] if words[:1] == ["variant"] else words[0] for words in map(str.split, result.output.splitlines())
             if len(words) > 1}
    assert "qreg:fastmath" in names and "bankfree:fastmath" in names
    assert "--use_fast_math" in result.output


def test_results_record_the_flavour_under_its_full_name():
    info = variant_info(get_variant("qreg:fastmath"), "sm_90")
    assert info.name == "qreg:fastmath" and "--use_fast_math" in info.nvcc_options
    assert variant_info(get_variant("qreg"), "sm_90").nvcc_options == tuple(o for o in info.nvcc_options
                                                                           if o != "--use_fast_math")


@needs_nvcc
@pytest.mark.parametrize("variant", [v for v in flavoured_variants() if v.name.split(":")[0] in LADDER_STEPS],
                         ids=lambda v: v.name)
@pytest.mark.parametrize("d", [32, 64])
def test_every_flavour_compiles_without_spills(variant, d):
    figures = compile_report(variant, Shape(1, 1024, d), "sm_90")
    assert figures, f"{variant.name} did not compile for d={d}"
    assert all(k.spills == 0 and k.stack_frame == 0 for k in figures.values()), figures


# -- flavours of a user's variant -------------------------------------------------------------------------------
FLAVOURED = GOOD + """
[variants.mine.flavours.fast]
description = "fast math and whole tiles"
options = ["--use_fast_math"]
defines = { FULL_TILES = 1 }
seq_len_multiple = 64
"""


def test_a_users_variant_declares_flavours_in_its_table(tmp_path, monkeypatch):
    write_facts(tmp_path, FLAVOURED)
    monkeypatch.chdir(tmp_path)
    fast = get_variant("mine:fast")
    assert fast.name == "mine:fast" and fast.options == ("--use_fast_math",)
    assert fast.defines(Shape(1, 64, 32)) == {"HEAD_DIM": 32, "FULL_TILES": 1}
    assert "needs N a multiple of 64" in fast.refusal(Shape(1, 100, 32)).sentence()
    assert get_variant(str(tmp_path / "mine.cu") + ":fast").name == "mine:fast"


@pytest.mark.parametrize("extra, key, words", [
    ('[variants.mine.flavours.fast]\nspeed = 2\n', "variants.mine.flavours.fast.speed", "unknown key"),
    ('[variants.mine.flavours.fast]\noptions = "-O3"\n', "variants.mine.flavours.fast.options", "list of strings"),
    ('[variants.mine.flavours.fast]\nseq_len_multiple = 0\n', "variants.mine.flavours.fast.seq_len_multiple", ">= 1"),
    ('seq_len_multiple = "x"\n', None, None),
])
def test_bad_flavour_facts_are_one_line_naming_the_key(tmp_path, extra, key, words):
    if key is None:  # a top-level seq_len_multiple must be a whole number too
        write_facts(tmp_path, GOOD.replace('source = "mine.cu"', 'source = "mine.cu"\n' + extra))
        with pytest.raises(UserVariantError, match=r"variants\.mine\.seq_len_multiple: must be a whole number"):
            load_variants(find_launch_facts(tmp_path))
        return
    write_facts(tmp_path, GOOD + "\n" + extra)
    with pytest.raises(UserVariantError) as caught:
        load_variants(find_launch_facts(tmp_path))
    assert f"{key}: " in str(caught.value) and words in str(caught.value) and "\n" not in str(caught.value)


# -- report 004 written the report's way (tools/report004) -------------------------------------------------------
def report_kernels() -> dict:
    facts = find_launch_facts(REPORT004)
    assert facts is not None and facts.path.parent == REPORT004
    return load_variants(facts)


def test_the_transcriptions_refuse_what_the_report_cannot_take():
    kernels = report_kernels()
    assert set(kernels) == {f"{step}_report" for step in LADDER_STEPS}  # one transcription per step
    for variant in kernels.values():
        assert variant.refusal(Shape(500, 2048, 64)) is None and variant.refusal(Shape(4, 32768, 32)) is None
        assert "multiple of 128" in variant.refusal(Shape(2, 1000, 64)).sentence()
        assert variant.refusal(Shape(2, 1024, 48)) is not None
        assert "--use_fast_math" in variant.options
    qreg = kernels["qreg_report"]
    assert qreg.launches[0].grid(Shape(10, 2048, 64)) == (10, 16, 1)  # grid (B, N / br), as the report's
    assert [qreg.launches[0].smem(Shape(1, 128, d)) for d in (32, 64)] == [49152, 32768]
    for step in LADDER_STEPS[:-1]:  # Q, K, V and S in shared memory with §4.2.3's bc: 48 KB (d = 64), 40 KB (d = 32)
        variant = kernels[f"{step}_report"]
        assert [variant.launches[0].smem(Shape(1, 128, d)) for d in (32, 64)] == [40960, 49152]
        assert variant.launches[0].grid(Shape(10, 2048, 64)) == (10, 16, 1)
    for step in ("float4", "restructure", "coalesced"):  # m and l in global arrays until §4.2.8
        assert set(kernels[f"{step}_report"].workspace) == {"l", "m"}
    assert not kernels["reglm_report"].workspace and not kernels["bankfree_report"].workspace


@needs_nvcc
@pytest.mark.parametrize("d", [32, 64])
def test_the_transcriptions_compile_without_spills(d):
    for variant in report_kernels().values():
        figures = compile_report(variant, Shape(1, 1024, d), "sm_90")
        assert figures and all(k.spills == 0 for k in figures.values()), (variant.name, figures)
