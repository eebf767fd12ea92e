"""The catalogue: how to find a variant, built-in (`builtin_variants`, in ladder order) or the user's
(`user`), by name, group or as the default for a shape.

The entries themselves are data in `ladder_004`, `gemm_route`, `flash_route` and `peers`; the machinery
that runs them (backends, bench) is elsewhere. Their launch facts follow the ABI in `attnbench.kernels.variant`.
"""

from __future__ import annotations

import difflib
from typing import Callable

from attnbench.cases.fresh_values import InputRange
from attnbench.cases.testcase import Shape
from attnbench.printable import printable
from attnbench.errors import UnknownName, UsageError
from attnbench.kernels.builtin_variants import REGISTRY
from attnbench.kernels.default_rules import ACCURACIES, DEFAULT_RULES
from attnbench.kernels.user import find_launch_facts, find_user_variant, user_variants
from attnbench.kernels.variant import FLAVOUR_SEPARATOR, Variant
from attnbench.results.refusal import Refusal


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
    if name.startswith("exe:"):  # a whole program (api.variants_from's): read as variant "exe", flavour "./att"
        raise UnknownName(f"{name}: a whole program, which compare runs (--variants {name}) and judge judges; "
                          "this command takes kernel variants (see `attnbench list`)")
    base, separator, flavour = name.rpartition(FLAVOUR_SEPARATOR)
    if separator and base and flavour:
        return get_variant(base).flavoured(flavour)
    if name in REGISTRY:
        return _builtin(name)
    found = find_user_variant(name)
    if found is not None:
        return found
    known = [*REGISTRY, *(v.name for v in user_variants())]
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    raise UnknownName(f"no variant named {name!r}; {hint}known variants: {', '.join(known)}")


def _builtin(name: str) -> Variant:
    """A built-in variant, after the user's launch facts are read: a file that declares a variant of a
    built-in's name is refused (by find_launch_facts) whichever variant is asked for."""
    find_launch_facts()
    return REGISTRY[name]


def gpu_variants() -> list[Variant]:
    return [v for v in REGISTRY.values() if v.kind.compiled]


def default_variant(shape: Shape, gpu_usable: bool, compute_capability: tuple[int, int] | None = None,
                    accuracy: str = "float32", ranges: InputRange | None = None,
                    tolerance: tuple[float, float] | None = None,
                    refused: Callable[[Refusal], None] = lambda refusal: None) -> Variant:
    """The fastest built-in GPU variant that takes `shape` on this GPU when one is usable, else `cpu`: the
    first of `DEFAULT_RULES` that leads on the shape and runs here. With accuracy "course" the rules of the
    course-accuracy variants come first, then the float32 ones. Given the input's value `ranges` and the check's
    `tolerance`, a variant whose arithmetic cannot hold it there is passed over (told to `refused`)."""
    if accuracy not in ACCURACIES:
        raise UsageError(f"no accuracy {accuracy!r}; one of {', '.join(ACCURACIES)}")
    if not gpu_usable:
        return _builtin("cpu")
    asked = ("course", "float32") if accuracy == "course" else ("float32",)
    for rule in (rule for wanted in asked for rule in DEFAULT_RULES if rule.accuracy == wanted):
        variant = REGISTRY.get(rule.variant)
        if variant is None or not rule.applies(shape):
            continue
        if variant.refusal(shape) is None and variant.runs_on(compute_capability):
            out_of_reach = (variant.precision_refusal(ranges, shape, tolerance)
                            if ranges is not None and tolerance is not None else None)
            if out_of_reach is not None:
                refused(out_of_reach)
                continue
            return _builtin(variant.name)
    return _builtin("cpu")


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
    find_launch_facts()  # a file that takes a built-in's name is refused, whichever group is asked for
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
        shown = printable(baseline) if baseline.strip() else repr(baseline)  # an empty name shows as ''
        raise UsageError(f"--baseline {shown} is not among --variants ({', '.join(names)})")
    return resolved
