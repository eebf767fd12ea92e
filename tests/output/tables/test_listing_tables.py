"""The listing tables and lines of `attnbench cases` and `attnbench gen`."""

from attnbench.cases import suite
from attnbench.output.tables.listing_tables import cases_table, generated_line, on_disk


def test_a_case_shows_what_of_it_is_on_disk():
    case = suite.get_case("odd_17x1")
    for path in (suite.input_path(case), suite.reference_path(case)):
        path.unlink(missing_ok=True)
    assert on_disk(case) == "-"
    suite.generate_input(case)
    assert on_disk(case) == "input"
    suite.generate_reference(case)
    assert on_disk(case) == "input+ref"
    assert cases_table([case]).rows[0][7].text == "input+ref"


def test_the_gen_line_names_the_input_and_the_reference_when_made():
    case = suite.get_case("odd_17x1")
    assert generated_line(case, False) == f"odd_17x1 ({case.shape}): input {suite.input_path(case)}"
    assert generated_line(case, True).endswith(f", reference {suite.reference_path(case)}")


def _listing_at(monkeypatch, width: int, terminal: bool, wide: bool | None = None) -> list[str]:
    """`attnbench list` as printed at `width` columns, with ptxas-like figures for every built-in kernel."""
    import io

    from rich.console import Console

    from attnbench.api.explain import with_flavours
    from attnbench.kernels.catalogue import all_variants
    from attnbench.kernels.nvcc import KernelResources, representative_shape
    from attnbench.output.render import terminal
    from attnbench.output.tables.listing_tables import variants_table

    variants = with_flavours(all_variants())
    figures = {}
    for variant in variants:
        shape = representative_shape(variant, 64) if variant.kind.compiled else None
        if shape is not None:
            kernels = {launch.kernel: KernelResources(launch.kernel, 128, 49152, 0, 0, 0)
                       for launch in variant.launches_for(shape)}
            figures[variant.name] = (shape, kernels)
    capture = Console(file=io.StringIO(), width=width, force_terminal=terminal, color_system=None)
    monkeypatch.setattr(terminal, "console", capture)
    terminal.print_table(variants_table(variants, figures, "sm_90", 64), wide=wide)
    return capture.file.getvalue().splitlines()


def test_the_variant_list_is_one_compact_table_at_80_120_and_160_columns(monkeypatch):
    """At 80 columns `list` turned into 387 vertical lines, at 120 and 160 into about 590: every kernel name,
    its registers and shared memory in blocks of their own. Now a table of about one line per kernel."""
    from attnbench.api.explain import with_flavours
    from attnbench.kernels.catalogue import all_variants

    kernel_lines = sum(max(1, len(v.launches)) for v in with_flavours(all_variants()))
    for width in (80, 120, 160):
        for terminal in (False, True):
            lines = _listing_at(monkeypatch, width, terminal)
            assert len(lines) <= kernel_lines + 8, (width, terminal, len(lines))
            assert max(len(line.rstrip()) for line in lines) <= width
            header = next(line for line in lines if "variant" in line and "kernel" in line)
            assert "regs" in header and "smem B" in header and "spill B" in header
    assert "arithmetic" in next(line for line in _listing_at(monkeypatch, 120, True) if "kernel" in line)
