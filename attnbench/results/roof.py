"""The roof of a cell: the least time a card needs for one attention pass of a shape, from the pass's work
and the card's peaks, and which of its resources sets it.

The work of one pass of (B, N, d), as the course's format has it (float32 throughout):
- bytes: Q, K and V read once (12*B*N*d) and O written once (4*B*N*d);
- products: Q K^T and P V, 2*B*N*N*d FLOPs each (4*B*N*N*d);
- exponentials: one per score (B*N*N).
Each resource's time is its work over its peak (`card_peaks.toml`: memory bandwidth, dense FP16 tensor
products, MUFU ex2); the roof is the largest of the three, and a cell reaches roof / its median of it.
Unlike `floor.py` (a bound no honest kernel can beat, with margins), this is the target a kernel is held to.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the dependency is declared for these versions
    import tomli as tomllib

CARD_PEAKS = Path(__file__).with_name("card_peaks.toml")

MEMORY, PRODUCTS, EXPONENTIALS = "memory", "products", "exponentials"


@dataclass(frozen=True)
class CardPeaks:
    """One card's peaks, each with its source."""

    key: str
    label: str
    names: tuple[str, ...]
    memory: str  # the memory's kind: HBM3e, GDDR6, ...
    memory_bytes_per_s: float
    products_per_s: float  # dense FP16 tensor FLOPs per second, or FP32 FFMA's without tensor cores
    tensor: bool  # whether products_per_s is the tensor cores'
    sm_count: int
    boost_clock_hz: float
    mufu_per_sm_clock: int
    sources: tuple[str, ...]

    @property
    def exponentials_per_s(self) -> float:
        """MUFU ex2 results per second: per SM per clock, times the SMs, times the clock."""
        return self.mufu_per_sm_clock * self.sm_count * self.boost_clock_hz

    def resource_label(self, resource: str) -> str:
        """'HBM', 'tensor' or 'exp' (GDDR memory, FP32 products on a card without tensor cores)."""
        if resource == MEMORY:
            return "HBM" if self.memory.startswith("HBM") else "DRAM"
        if resource == PRODUCTS:
            return "tensor" if self.tensor else "FFMA"
        return "exp"

    def peaks_text(self) -> str:
        """'HBM3e 4.8 TB/s, tensor FP16 990 TFLOP/s, MUFU ex2 4.18 T/s'."""
        products = "tensor FP16" if self.tensor else "FP32 FFMA"
        return (f"{self.memory} {self.memory_bytes_per_s / 1e12:.3g} TB/s, {products} "
                f"{self.products_per_s / 1e12:,.4g} TFLOP/s, MUFU ex2 {self.exponentials_per_s / 1e12:.3g} T/s")


def _card(entry: dict) -> CardPeaks:
    tensor = "tensor_fp16_tflops" in entry
    products = entry["tensor_fp16_tflops"] if tensor else entry["products_tflops"]
    return CardPeaks(entry["key"], entry["label"], tuple(entry["names"]), entry["memory"], entry["memory_gbs"] * 1e9,
                     products * 1e12, tensor, int(entry["sm_count"]), entry["boost_clock_mhz"] * 1e6,
                     int(entry["mufu_per_sm_clock"]),
                     (entry["memory_source"], entry["tensor_source"], entry["clock_source"]))


@lru_cache(maxsize=1)
def cards() -> tuple[CardPeaks, ...]:
    """Every card of `card_peaks.toml`, in its order."""
    with CARD_PEAKS.open("rb") as f:
        return tuple(_card(entry) for entry in tomllib.load(f)["card"])


def card_named(name: str) -> CardPeaks | None:
    """The card whose key (`h200`) or device name (`NVIDIA H200`, as results save it) this is; None if none."""
    wanted = name.strip().lower()
    for card in cards():
        if wanted == card.key or wanted in (n.lower() for n in card.names):
            return card
    return None


@dataclass(frozen=True)
class PassWork:
    """What one pass of a shape must do."""

    bytes: int
    flops: int
    exponentials: int

    @classmethod
    def of(cls, B: int, N: int, d: int) -> "PassWork":
        return cls(16 * B * N * d, 4 * B * N * N * d, B * N * N)


@dataclass(frozen=True)
class Roof:
    """The roof of one shape on one card: each resource's time, and the largest."""

    work: PassWork
    card: CardPeaks
    seconds_by_resource: dict[str, float]

    @property
    def bound(self) -> str:
        """The resource that sets the roof (the first of the largest times on a tie)."""
        return max(self.seconds_by_resource, key=lambda r: self.seconds_by_resource[r])

    @property
    def seconds(self) -> float:
        return self.seconds_by_resource[self.bound]

    def bound_text(self) -> str:
        """'bound by HBM'."""
        return f"bound by {self.card.resource_label(self.bound)}"

    def reached(self, median_s: float) -> float:
        """The fraction of the roof a pass of `median_s` seconds reached (1.0: at the roof)."""
        return self.seconds / median_s

    def share_text(self, median_s: float) -> str:
        """'55% (2.62 TB/s)': the share of the roof reached, and the bound resource's rate during the pass."""
        work, unit = {MEMORY: (self.work.bytes, "TB/s"), PRODUCTS: (self.work.flops, "TFLOP/s"),
                      EXPONENTIALS: (self.work.exponentials, "T exp/s")}[self.bound]
        return f"{100 * self.reached(median_s):.0f}% ({work / median_s / 1e12:.3g} {unit})"

    def reached_text(self, median_s: float) -> str:
        """'reached 55% of that roof (2.62 TB/s)'."""
        share, rate = self.share_text(median_s).split(" ", 1)
        return f"reached {share} of that roof {rate}"


def roof_of(B: int, N: int, d: int, card: CardPeaks) -> Roof:
    """The roof of a pass of (B, N, d) on `card`."""
    work = PassWork.of(B, N, d)
    return Roof(work, card, {MEMORY: work.bytes / card.memory_bytes_per_s,
                             PRODUCTS: work.flops / card.products_per_s,
                             EXPONENTIALS: work.exponentials / card.exponentials_per_s})
