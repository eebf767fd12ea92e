"""The registry of built-in variants, in ladder order: the entries of `ladder_004`,
`gemm_route`, `flash_route` and `peers`.

The bottom of the variant lookups: the user's variants (`kernels.user`) check their names against these,
and `catalogue` finds a name among these first, then among the user's.
"""

from __future__ import annotations

from attnbench.kernels import flash_route, gemm_route, ladder_004, peers
from attnbench.kernels.variant import Variant

REGISTRY: dict[str, Variant] = {}


def register(variant: Variant) -> Variant:
    if variant.name in REGISTRY:
        raise ValueError(f"variant {variant.name} registered twice")
    REGISTRY[variant.name] = variant
    return variant


for _variant in (*ladder_004.VARIANTS, *gemm_route.VARIANTS, *flash_route.VARIANTS, *peers.VARIANTS):
    register(_variant)
