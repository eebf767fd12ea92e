"""The public API for explaining the numbers: hardware counters (profile), what a variant asks of
the GPU without one (info), the GPU's measured ceilings, and each cell's roof on a card (roofs). The command line renders what these
return."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from attnbench.api.empty_arguments import refuse_empty
from attnbench.api.notices import Notice
from attnbench.backends import gpu as gpu_backend
from attnbench.cases.inputs import ProgressFactory, inputs_for, no_progress, resolve
from attnbench.cases.testcase import Shape
from attnbench.errors import CompileCheckFailed, GpuUnavailable, ProfilerUnavailable, UsageError
from attnbench.explain.ceiling_benchmarks import get_or_measure
from attnbench.explain.geometry import GpuModel, KernelReport, gpu_model, kernel_reports, launch_geometry
from attnbench.explain.metrics import PROFILABLE_FROM, Metric, metric_table, raw_metric
from attnbench.explain.profile import VariantProfile, profile_variant, require_ncu
from attnbench.kernels.catalogue import all_variants, get_variant, with_flavours
from attnbench.kernels.nvcc import (
    KernelResources,
    compile_report,
    nvcc_architectures,
    nvcc_path,
    report_all,
    source_label,
)
from attnbench.kernels.variant import Variant, capability_of, launch_beyond_limits
from attnbench.results.ceilings import CeilingSet, cached_for
from attnbench.results.metadata import collect
from attnbench.results.resultset import ResultKind, ResultSet, load
from attnbench.results.roof import CardPeaks, card_named, cards


def _shape_of(case: str) -> tuple[str, Shape]:
    """The case's label and shape, without writing its input: a suite case's shape is in the manifest,
    a file's in its header."""
    bench_input = resolve(case)
    return bench_input.label, bench_input.shape


def _gpu_variant(name: str, verb: str) -> Variant:
    variant = get_variant(name)
    if not variant.kind.compiled:
        raise UsageError(f"{variant.name} runs no kernel of attnbench; {verb} takes GPU variants only")
    return variant


@dataclass
class ProfileRun:
    """Counters of one pass of each variant on one case, with what a saved profile records."""

    case: str
    shape: Shape
    arch: str
    metadata: dict[str, Any]
    metrics: list[Metric]
    profiles: list[VariantProfile]

    def to_dict(self) -> dict[str, Any]:
        profiles = self.profiles
        return {
            "kind": "profile", "version": 1, "case": self.case,
            "shape": {"B": self.shape.B, "N": self.shape.N, "d": self.shape.d},
            "metadata": self.metadata, "arch": self.arch,
            "metrics": {m.key: {"label": m.label, "ncu": list(m.ncu), "combine": m.combine, "unit": m.unit}
                        for m in self.metrics},
            "variants": [p.to_dict(self.metrics) for p in profiles],
            "ncu_command": profiles[0].command[:profiles[0].command.index("--metrics") + 2] if profiles else [],
        }


def profile(case: str, variants: Sequence[str], raw_metrics: Sequence[str] = (), *, device: int = 0, warmup: int = 1,
            max_launches: int = 50, command: str | None = None, notice: Notice = lambda text: None) -> ProfileRun:
    """Each variant's pass after warm-up under Nsight Compute (`--clock-control none`), in its own process."""
    refuse_empty("case", case, "a suite case or an input file")
    label, shape = _shape_of(case)
    chosen = [_gpu_variant(v, "profile") for v in variants]
    for variant in chosen:
        variant.require(shape)
    require_ncu()
    gpu = gpu_backend.Gpu(device)
    cached = cached_for(gpu)
    metadata = collect(gpu, command=command, ceilings=cached.to_dict() if cached else None)  # as compare saves it
    arch, capability, name = gpu.arch, gpu.compute_capability, gpu.name
    gpu.close()  # the profiled passes run in their own processes
    if capability < PROFILABLE_FROM:
        raise ProfilerUnavailable(f"Nsight Compute does not profile {name} ({arch}); it needs sm_70 or newer")
    resolve(case).prepare()  # the input is written only once the environment can profile it
    metrics = metric_table(arch) + [raw_metric(m.strip()) for m in raw_metrics if m.strip()]
    profiles = []
    for variant in chosen:
        notice(f"profiling {variant.name} on {label} under ncu")
        found = profile_variant(case, variant.name, metrics, device, warmup, max_launches)
        found.spill_bytes = {k: r.spills for k, r in compile_report(variant, shape, arch).items()}
        if found.unavailable:
            notice(f"ncu has no {', '.join(found.unavailable)} here; shown as -")
        profiles.append(found)
    return ProfileRun(label, shape, arch, metadata, metrics, profiles)


@dataclass
class InfoReport:
    """What a variant asks of a GPU for a shape: resources, geometry, occupancy, defines (no GPU needed)."""

    variant: str
    case: str
    shape: Shape
    model: GpuModel
    reports: list[KernelReport]
    defines: dict[str, int]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant, "case": self.case,
            "shape": {"B": self.shape.B, "N": self.shape.N, "d": self.shape.d},
            "arch": self.model.arch, "gpu_model": self.model.name, "sm_count": self.model.sm_count,
            "defines": self.defines,
            "kernels": [{
                "kernel": r.geometry.kernel, "grid": r.geometry.grid, "block": r.geometry.block,
                "dynamic_smem": r.geometry.dynamic_smem, "static_smem": r.static_smem,
                "smem_per_block": r.smem_per_block, "registers": r.registers, "spill_bytes": r.spills,
                "launches_per_pass": r.geometry.launches_per_pass, "blocks_per_sm": r.occupancy.blocks_per_sm,
                "occupancy": r.occupancy.fraction, "limiter": r.occupancy.limiter,
                "blocks_per_sm_by_limit": r.occupancy.by_limit,
                "waves": r.geometry.waves(self.model, r.occupancy.blocks_per_sm)} for r in self.reports],
            "notes": self.notes,
            "misfits": self.misfits(),
        }

    def misfits(self) -> list[str]:
        """One sentence per kernel whose block does not fit on this architecture's SM (info exits 1 on any)."""
        return [line for r in self.reports if (line := r.misfit(self.model)) is not None]


def info(variant_name: str, case: str | None = None, shape: Shape | None = None, arch: str = "sm_90",
         progress: ProgressFactory = no_progress) -> InfoReport:
    """The compiler's figures, launch geometry and theoretical occupancy of a variant on a shape."""
    if case is not None and shape is not None:  # the shape won and the case was dropped without a word
        raise UsageError("--case and --shape both give the shape; give one of them")
    refuse_empty("case", case, "a suite case or an input file")
    variant = _gpu_variant(variant_name, "info")
    model = gpu_model(arch)
    refusal = variant.gpu_refusal(capability_of(model.arch))
    if refusal is not None:  # never another architecture's figures under this one's title
        raise UsageError(f"--arch {arch}: {refusal.requirement()}; info describes it only for a GPU that can run it")
    label, shape = ("given shape", shape) if shape is not None else _shape_of(case or "t29")
    variant.require(shape)
    for geometry in launch_geometry(variant, shape):
        beyond = launch_beyond_limits(variant.name, geometry.kernel, geometry.grid, geometry.block)
        if beyond is not None:
            raise UsageError(beyond)
    variant.workspace_bytes(shape)  # a workspace of -1 bytes: info said nothing, exit 0, where run refuses it
    resources: dict = {}
    notes: list[str] = []
    built_for = nvcc_architectures()
    if nvcc_path() is None:
        notes.append("nvcc is not on PATH: no ptxas figures, so static shared memory is unknown; occupancy counts "
                     "dynamic shared memory and threads only, an upper bound")
    else:
        compile_for = model.arch
        if built_for and model.arch not in built_for:
            # Registers are the architecture's own, but static shared memory is the source's arrays: an older
            # architecture this nvcc still builds gives it, so occupancy never forgets 48 KB of tiles.
            compile_for = min(built_for, key=_arch_number)
            notes.append(f"this nvcc no longer builds for {model.arch}: no registers or spills; static shared "
                         f"memory from its {compile_for} build (the same arrays); occupancy counts shared memory "
                         "and threads")
        with progress(f"compiling {variant.name} for {compile_for}", 1) as advance:
            resources = compile_report(variant, shape, compile_for)  # nvcc's error, if any, is the user's answer
            advance(1)
        missing = sorted({launch.kernel for launch in variant.launches_for(shape)} - set(resources))
        if missing:
            raise CompileCheckFailed(f"{source_label(variant)}: no kernel named {', '.join(missing)} in it "
                                     f"(it defines {', '.join(sorted(resources)) or 'none'}); "
                                     "check the kernel names in attnbench.toml")
    static_only = nvcc_path() is not None and bool(built_for) and model.arch not in built_for
    return InfoReport(variant.name, label, shape, model, kernel_reports(variant, shape, model, resources, static_only),
                      variant.defines(shape), notes)


def _arch_number(arch: str) -> int:
    """sm_75 -> 75, for the oldest architecture an nvcc builds (sm_90a counts as 90)."""
    digits = "".join(c for c in arch.removeprefix("sm_") if c.isdigit())
    return int(digits) if digits else 1 << 30


def ceilings(device: int = 0, refresh: bool = False) -> tuple[CeilingSet, bool]:
    """This GPU's measured ceilings, from the cache for its name and driver or measured now; and
    whether they came from the cache."""
    try:
        gpu = gpu_backend.Gpu(device)
    except GpuUnavailable as exc:  # its remedy names --variant, which ceilings does not take
        raise GpuUnavailable(f"ceilings are measured on this machine's GPU: {exc.reason}") from None
    return get_or_measure(gpu, refresh)


@dataclass
class VariantListing:
    """The variants `attnbench list` shows, and ptxas's figures for `arch` where nvcc compiled them."""

    variants: list[Variant]
    figures: dict[str, tuple[Shape | None, dict[str, KernelResources]]]
    arch: str
    uncompiled: list[str] = field(default_factory=list)  # the variants nvcc refused (a user's kernel with an error)


def variant_listing(head_dim: int = 64, resources: bool = True, progress: ProgressFactory = no_progress) -> VariantListing:
    """The built-in variants in ladder order, then the user's, each followed by its flavours; with
    `resources` and nvcc present, each compiled kernel's registers, shared memory and spills for
    `head_dim` on the GPU found (sm_90 when there is none)."""
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 1:  # as --head-dim's range
        raise UsageError(f"head_dim={head_dim!r}: give a whole number >= 1")
    variants = with_flavours(all_variants())
    figures: dict[str, tuple[Shape | None, dict[str, KernelResources]]] = {}
    uncompiled: list[str] = []
    arch = "sm_90"
    if resources and nvcc_path():
        if gpu_backend.gpu_probe() is None:
            arch = gpu_backend.Gpu(0).arch
        compiled = [v for v in variants if v.kind.compiled]
        with progress(f"ptxas figures for {arch} (compiled once, cached)", len(compiled)) as advance:
            figures = report_all(compiled, head_dim, arch, advance, uncompiled)
    return VariantListing(variants, figures, arch, uncompiled)


@dataclass
class RoofReport:
    """The roof of each input on one card, and the saved run whose cells are set against it (or None)."""

    card: CardPeaks
    inputs: list[tuple[str, Shape]]
    result: ResultSet | None = None


def _card(name: str, where: str) -> CardPeaks:
    card = card_named(name)
    if card is None:
        known = ", ".join(c.key for c in cards())
        raise UsageError(f"{where}: no peaks for {name!r} in attnbench's card table; one of {known}")
    return card


def roofs(cases: Sequence[str] = (), gpu: str | None = None, saved: str | None = None) -> RoofReport:
    """Each case's roof on the card `gpu` names (a key of `card_peaks.toml`, or a device name); with `saved`, a
    saved compare's inputs (or those of `cases` it holds) and the share of the roof each of its cells reached,
    on the card it was measured on unless `gpu` says another. No GPU needed."""
    refuse_empty("saved", saved, "a saved compare's JSON file")
    if saved is None:
        if gpu is None or not cases:
            raise UsageError("give the cases and --gpu (the card), or --saved RESULT.json")
        # a case list as compare's --cases reads it (groups, ranges, comma lists, each input once): `roof course`
        # was "'course' is neither a file nor a suite case; did you mean course?"
        return RoofReport(_card(gpu, "--gpu"), [(item.label, item.shape) for item in inputs_for(list(cases))])
    result = load(saved)
    if result.kind is ResultKind.JUDGE:  # its cells hold process times, and a roof is held to kernel times
        raise UsageError(f"{saved}: a judge's results: whole-program process times (launch to exit), not kernel "
                         "times, so no share of a roof; give its cases and --gpu for the roofs alone")
    device = (result.metadata.get("gpu") or {}).get("name")
    if gpu is None and not device:
        raise UsageError(f"{saved}: it was measured on no GPU; give --gpu for the card to hold it to")
    card = _card(gpu, "--gpu") if gpu is not None else _card(device, saved)
    labels = list(cases) or result.case_labels
    missing = [label for label in labels if result.case(label) is None]
    if missing:
        raise UsageError(f"{saved}: it holds no {', '.join(missing)}")
    return RoofReport(card, [(label, result.case(label).shape) for label in labels], result)  # type: ignore[union-attr]
