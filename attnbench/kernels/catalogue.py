"""The catalogue: how to find a variant, built-in (`builtin_variants`, in ladder order) or the user's
(`user`), by name, group or as the default for a shape.

The entries themselves are data in `ladder_004`, `gemm_route`, `flash_route` and `peers`; the machinery
that runs them (backends, bench) is elsewhere. Their launch facts follow the ABI in `attnbench.kernels.variant`.
"""

from __future__ import annotations

import difflib

from typing import Callable

from attnbench.cases.testcase import Shape
from attnbench.errors import UnknownName, UsageError
from attnbench.kernels.builtin_variants import REGISTRY
from attnbench.kernels.user import find_user_variant, user_variants
from attnbench.kernels.variant import FLAVOUR_SEPARATOR, Variant, cdiv


def all_variants() -> list[Variant]:
    """The built-ins in ladder order, then the user's from the working directory's attnbench.toml."""
    return [*REGISTRY.values(), *user_variants()]


def with_flavours(variants: list[Variant]) -> list[Variant]:
    """Each variant followed by its flavours (`qreg`, `qreg:fastmath`, ...), as `attnbench list` shows them."""
    return [built for v in variants for built in (v, *(v.flavoured(f) for f in v.flavours))]


def flavoured_variants() -> list[Variant]:
    """Every flavour of every built-in GPU variant, as its own Variant (for the GPU tests)."""
    return [v.flavoured(f) for v in gpu_variants() for f in v.flavours]


def get_variant(name: str) -> Variant:
    """Look a variant up by name, then among the user's (attnbench.toml, or a kernel file's path);
    `name:flavour` is that variant's flavour. An unknown name lists the known ones; an unknown flavour
    names the variant's."""
    base, separator, flavour = name.rpartition(FLAVOUR_SEPARATOR)
    if separator and base and flavour:
        return get_variant(base).flavoured(flavour)
    if name in REGISTRY:
        return REGISTRY[name]
    found = find_user_variant(name)
    if found is not None:
        return found
    known = [*REGISTRY, *(v.name for v in user_variants())]
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    raise UnknownName(f"no variant named {name!r}; {hint}known variants: {', '.join(known)}")


def gpu_variants() -> list[Variant]:
    return [v for v in REGISTRY.values() if v.kind.compiled]


# Which GPU variant is the default: the first in this list that accepts the shape and the GPU.
# Measured on an H200 on 2026-11-21 and 22 (the ladder over the course cases, switch-point sweeps): on Hopper
# wgmma3x leads from N = 512 for d = 32, 64 and 128 (1.1-1.8x tf32x3),
# from N = 65 at d = 128, and below on its short path (d = 32) and its streaming path (d = 64) where enough
# items fill the GPU (_wgmma3x_leads); tf32x3 leads wherever else it applies; among the FFMA variants fa2simt leads for d in {32, 64, 128}
# (25-45 TFLOP/s on the course cases against gemm's 13-24), then gemm from N = 128 to 32768 and on
# square shapes; online takes the large head dimensions gemm cannot hold; singlehead is left out
# (its unsafe softmax can overflow). On the square lab's shapes (d > 128) the exact tensor-core GEMMs
# lead: gemmwg3x on Hopper from n = 1025 (1.3-1.5x gemmtc, 1.9-5.3x torch's math backend from n = 2048),
# gemmtc below that and on sm_80+ (1.0-1.8x gemm from n = 64;
# docs/results/2026-11-24_h200_sweep_square_gemmwg3x_gemmtc_gemm_torch.md).
FASTEST_FIRST: tuple[str, ...] = ("wgmma3x", "tf32x3", "fa2simt", "gemmwg3x", "gemmtc", "gemm", "qreg", "online",
                                  "naive")


def _wgmma3x_leads(shape: Shape) -> bool:
    """wgmma3x leads from N = 512; below that, on the H200:
    - d = 32 in whole 128-row tiles from a full wave of blocks (8 x 132 = 1056 items); on its short path
      (N <= 128, 8 whole items a block) 1.11-1.14x tf32x3 at B = 1056, 4096 and 13600, 0.27-0.48x at B = 5
      and 320 (2026-11-24);
    - d = 32, N = 256 (its persistent streaming path) from 80 units of 128 rows: 1.19x at B = 40, 1.00x at
      80, 1.08x on t03 (B = 160), 1.24-1.25x at 320 and 1056; 0.93x at B = 20
      (2026-11-25);
    - d = 64 up to N = 256 (the same path) from 80 units at N <= 128 and 20 units above: 1.21x on t02
      (160 units), 0.96-0.98x at 5 to 40 units of N = 128 (all about 12 us, launch-bound); at N = 256
      1.44x at 20 units, 1.17x at 40, 1.23x on t04 (the same sweep);
    - d = 128 from N = 65, with its two consumer warpgroups (on an H100,
      2026-11-26): 1.02-1.42x tf32x3 at N = 128, 1.24-1.70x at N = 256 and
      384, for B from 5 to 1000; at N = 64 0.81-0.97x but for B = 80 (1.08x), so it stays with tf32x3."""
    units = shape.B * cdiv(shape.N, 128)
    d32_full_wave = shape.d == 32 and (shape.N <= 128 or shape.N % 128 == 0) and shape.B >= 1056
    d32_streamed = shape.d == 32 and 128 < shape.N <= 256 and shape.N % 128 == 0 and units >= 80
    d64_streamed = shape.d == 64 and shape.N <= 256 and units >= (80 if shape.N <= 128 else 20)
    d128 = shape.d == 128 and shape.N > 64
    return shape.N >= 512 or d32_full_wave or d32_streamed or d64_streamed or d128


def _square_lab_shape(shape: Shape) -> bool:
    """The head dimensions the flash variants leave to the GEMM variants, as the square lab's."""
    return shape.d > 128 and shape.N >= 64


# Where a variant is the default only on some shapes (others fall to the next in FASTEST_FIRST).
DEFAULT_ONLY_WHERE: dict[str, Callable[[Shape], bool]] = {
    "wgmma3x": _wgmma3x_leads,
    "gemmwg3x": lambda s: _square_lab_shape(s) and s.N > 1024,
    "gemmtc": _square_lab_shape,
}


# The accuracies a default can be asked for: "float32" (the default: the course rule and relL2 <= 1e-5) and
# "course" (the course rule with margin: half its tolerance), whose own variants are tried first.
ACCURACIES = ("float32", "course")
COURSE_FASTEST_FIRST: tuple[str, ...] = ("wgmma16s",)


def _wgmma16s_leads(shape: Shape) -> bool:
    """wgmma16s leads wgmma3x from N = 2048, on an H100 (docs/results/2026-11-26_h100_wgmma16s_first_runs.md):
    1.61x on t10, 1.51x at (20, 2048, 32), 1.91x on t22, 1.70x on t29, 2.18x on t30, 2.63x at (8, 4096, 128);
    at N = 128 it lost (t02 0.82x, t11 0.68x: its pre-pass is a launch of its own). Between, unmeasured: the
    float32 default stays."""
    return shape.N >= 2048


COURSE_DEFAULT_ONLY_WHERE: dict[str, Callable[[Shape], bool]] = {"wgmma16s": _wgmma16s_leads}


def default_variant(shape: Shape, gpu_usable: bool, compute_capability: tuple[int, int] | None = None,
                    accuracy: str = "float32") -> Variant:
    """The fastest built-in GPU variant that takes `shape` on this GPU when one is usable, else `cpu`. With
    accuracy "course" the course-accuracy variants come first where they lead, then the float32 ones."""
    if accuracy not in ACCURACIES:
        raise UsageError(f"no accuracy {accuracy!r}; one of {', '.join(ACCURACIES)}")
    orders = [(FASTEST_FIRST, DEFAULT_ONLY_WHERE)] if gpu_usable else []
    if gpu_usable and accuracy == "course":
        orders.insert(0, (COURSE_FASTEST_FIRST, COURSE_DEFAULT_ONLY_WHERE))
    for names, only_where in orders:
        for name in names:
            variant = REGISTRY.get(name)
            if variant is None or not only_where.get(name, lambda _: True)(shape):
                continue
            if variant.refusal(shape) is None and variant.runs_on(compute_capability):
                return variant
    return REGISTRY["cpu"]


# The ladder of the reports, in the order the reports climb it (report 004 first, then the others);
# `--variants ladder` takes the registered ones, in registry order.
LADDER_VARIANTS = (
    "kernels", "fused", "maxsmem", "splitq", "float4", "restructure", "coalesced", "reglm", "bankfree", "qreg",
    "tiled", "gemm", "online", "singlehead", "naive",
)


def variants_for(selector: str) -> list[Variant]:
    """Variants named by a comma list: names, `all` (every GPU variant), `ladder`, `torch` (programs, `exe:PATH`,
    are the bench layer's: see attnbench.api.variants_from)."""
    chosen: list[Variant] = []
    for part in (p.strip() for p in selector.split(",") if p.strip()):
        if part == "all":
            group = [v for v in REGISTRY.values() if v.kind.compiled]
        elif part == "ladder":
            group = [v for v in REGISTRY.values() if v.name in LADDER_VARIANTS]
            if not group:
                raise UnknownName("no ladder variant is registered yet (see `attnbench list`)")
        else:
            group = [get_variant(part)]
        chosen.extend(v for v in group if v not in chosen)
    if not chosen:
        raise UnknownName("no variant named; give --variants, e.g. --variants naive,bankfree,torch")
    return chosen


def baseline_name(baseline: str | None, chosen: list[Variant]) -> str | None:
    """The --baseline's variant name among the chosen ones, spelled as --variants may spell it (a kernel
    file's path names its variant); a baseline that is not among them is bad usage."""
    names = [v.name for v in chosen]
    if baseline is None or baseline in names:
        return baseline
    try:
        resolved: str | None = get_variant(baseline).name
    except UnknownName:
        resolved = None
    if resolved not in names:
        raise UsageError(f"--baseline {baseline} is not among --variants ({', '.join(names)})")
    return resolved
