"""The Triton peer's small autotune: a few tile shapes tried once per shape bucket, GPU, Triton version and
precision, and the choice kept on disk so that a later run or compare does not tune again.

The cache lives beside the ceilings' ($ATTNBENCH_CACHE, else the per-user cache folder), one JSON file per
GPU name and Triton version, its entries keyed by precision, head dimension and the buckets of N and B.
Nothing here imports Triton: the tuner is a function given to `choose_tiles`, so the cache's keying,
reading and writing are tested without a GPU.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from attnbench import strict_json
from attnbench.cases.testcase import Shape
from attnbench.locations import cache_dir

CACHE_VERSION = 1  # 1: first format (gpu, triton, entries of precision/d/N-bucket/B-bucket -> tiles and timings)
SMALLEST_TILE = 16  # tl.dot needs at least 16 rows, columns and reduction depth


def padded(size: int) -> int:
    """The power of two >= 16 that a tile of `size` rows (or a head dimension) is padded to."""
    return max(SMALLEST_TILE, 1 << max(0, size - 1).bit_length())


@dataclass(frozen=True)
class TileConfig:
    """One launch configuration of the kernel: its tile of query and key rows, warps and pipeline stages."""

    block_m: int
    block_n: int
    num_warps: int
    num_stages: int

    @property
    def label(self) -> str:
        return f"{self.block_m}x{self.block_n} w{self.num_warps} s{self.num_stages}"


# Tried in this order; the filter below drops what cannot suit a shape. The last of each fits any head
# dimension the peer takes, so every shape has at least one candidate that compiles. Chosen from ptxas's
# figures on sm_90 (Triton 3.9): on tensor cores 8 warps spill less than 4 with the same tile, and no
# 128-row tile with 64 keys or more is spill-free at d = 64 in 3xTF32; on FFMA (ieee) Triton's dot holds
# whole operand rows in registers, so only small tiles stay spill-free (d = 128: 32 x 16 and 16 x 16).
# A candidate must never fault: an illegal address poisons the CUDA context for every later cell, so the
# tuner cannot step over it as it steps over a compile error. On an H200 with Triton 3.6, 64 x 16 with 8
# warps in 3xTF32 faulted (illegal memory access) at d = 80 and 128, so it is not a candidate;
# 128 x 64 x 8 x 2 asks 256 KiB of shared memory there and is refused cleanly (an error, not a fault).
TENSOR_TILES: tuple[TileConfig, ...] = (
    TileConfig(128, 64, 8, 2),
    TileConfig(128, 32, 8, 3),
    TileConfig(128, 16, 8, 3),
    TileConfig(64, 32, 8, 3),
    TileConfig(64, 32, 4, 3),
    TileConfig(64, 16, 4, 2),
    TileConfig(16, 16, 4, 1),
)
FFMA_TILES: tuple[TileConfig, ...] = (
    TileConfig(64, 32, 4, 2),
    TileConfig(64, 16, 4, 2),
    TileConfig(32, 32, 4, 2),
    TileConfig(32, 16, 4, 2),
    TileConfig(32, 16, 2, 2),
    TileConfig(16, 16, 4, 1),
)
# The BF16 splits are tensor-core products like tf32x3's (not yet measured on a GPU: the same candidates).
TILE_CONFIGS: dict[str, tuple[TileConfig, ...]] = {"tf32x3": TENSOR_TILES, "tf32": TENSOR_TILES, "ieee": FFMA_TILES,
                                                   "bf16x3": TENSOR_TILES, "bf16x6": TENSOR_TILES}
# Elements of a (BLOCK_M + 2 BLOCK_N) x d working set beyond which a config would spill or not fit in
# shared memory: d = 256 keeps 64-row query tiles and 32-key tiles.
MAX_TILE_ELEMENTS = 128 * 256


def candidates(shape: Shape, precision: str) -> list[TileConfig]:
    """The configs worth trying on a shape in a precision: tiles no taller than the sequence (padded)
    needs, with a working set that fits; never empty."""
    rows, head = padded(shape.N), padded(shape.d)
    tiles = TILE_CONFIGS[precision]
    fit = [c for c in tiles
           if c.block_m <= rows and c.block_n <= rows and (c.block_m + 2 * c.block_n) * head <= MAX_TILE_ELEMENTS]
    return fit or [tiles[-1]]


def bucket(value: int) -> int:
    """The power of two at or above `value`: shapes in one bucket share a tuned choice."""
    return 1 << max(0, value - 1).bit_length()


@dataclass(frozen=True)
class TuneKey:
    """What a tuned choice is kept for: the GPU, the Triton version, the precision and the shape's bucket."""

    gpu: str
    triton: str
    precision: str
    head_dim: int
    seq_bucket: int
    batch_bucket: int

    @classmethod
    def of(cls, gpu: str, triton: str, precision: str, shape: Shape) -> TuneKey:
        return cls(gpu, triton, precision, shape.d, bucket(shape.N), bucket(shape.B))

    @property
    def entry(self) -> str:
        """The entry's name inside its GPU and version's file."""
        return f"{self.precision}/d{self.head_dim}/n{self.seq_bucket}/b{self.batch_bucket}"


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-") or "unknown"


def cache_path(key: TuneKey) -> Path:
    """The file that holds every choice for this GPU and Triton version."""
    return cache_dir() / f"triton-tiles_{_slug(key.gpu)}_triton-{_slug(key.triton)}.json"


def _read(path: Path, key: TuneKey) -> dict[str, Any]:
    """The file's entries, or none when it is absent, unreadable, of another version or another GPU."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if (not isinstance(data, dict) or data.get("version") != CACHE_VERSION or data.get("gpu") != key.gpu
            or data.get("triton") != key.triton or not isinstance(data.get("entries"), dict)):
        return {}
    return data["entries"]


def load_choice(key: TuneKey) -> TileConfig | None:
    """The cached choice for `key`, or None (absent or unreadable: tune again)."""
    entry = _read(cache_path(key), key).get(key.entry)
    try:
        return TileConfig(**entry["config"])
    except (TypeError, KeyError):
        return None


def save_choice(key: TuneKey, shape: Shape, config: TileConfig, trials: list[dict[str, Any]]) -> Path:
    """Add `key`'s choice to its file, written whole and renamed into place (a concurrent writer may win,
    but the file is never half written); `trials` are the timings it was chosen from."""
    path = cache_path(key)
    entries = _read(path, key)  # read again just before writing: another process may have added its own
    entries[key.entry] = {
        "config": asdict(config),
        "tuned_on": {"B": shape.B, "N": shape.N, "d": shape.d},
        "trials": trials,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    data = {"version": CACHE_VERSION, "gpu": key.gpu, "triton": key.triton, "entries": entries}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    tmp.write_text(strict_json.dumps(data))
    tmp.replace(path)
    return path


class NoTileRuns(Exception):
    """Every candidate failed to compile or run; the message names each one's failure."""


# Times one config on the case at hand: milliseconds of one pass (its first launch compiles it).
Tuner = Callable[[TileConfig], float]


def tune(configs: list[TileConfig], time_config: Tuner) -> tuple[TileConfig, list[dict[str, Any]]]:
    """The fastest config and every trial (milliseconds, or the one-line error that ruled it out)."""
    trials: list[dict[str, Any]] = []
    best: tuple[float, TileConfig] | None = None
    for config in configs:
        try:
            ms = float(time_config(config))
        except Exception as exc:  # a config that does not compile here (shared memory, registers) is skipped
            trials.append({"config": asdict(config), "ms": None, "error": _one_line(exc)})
            continue
        if not math.isfinite(ms):
            trials.append({"config": asdict(config), "ms": None, "error": "no finite time"})
            continue
        trials.append({"config": asdict(config), "ms": ms, "error": None})
        if best is None or ms < best[0]:
            best = (ms, config)
    if best is None:
        raise NoTileRuns("; ".join(f"{t['config']['block_m']}x{t['config']['block_n']}: {t['error']}" for t in trials))
    return best[1], trials


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200]


@dataclass(frozen=True)
class TileChoice:
    """The config a run uses, and whether it was tuned now (else read from the cache)."""

    config: TileConfig
    tuned: bool
    path: Path


def choose_tiles(key: TuneKey, shape: Shape, time_config: Tuner, refresh: bool = False,
                 before_tuning: Callable[[], None] = lambda: None) -> TileChoice:
    """The cached config for `key` (unless `refresh`), else the fastest of the shape's candidates, tuned
    now (after `before_tuning`, which stages the input) and cached."""
    cached = None if refresh else load_choice(key)
    if cached is not None:
        return TileChoice(cached, False, cache_path(key))
    before_tuning()
    config, trials = tune(candidates(shape, key.precision), time_config)
    try:
        path = save_choice(key, shape, config, trials)
    except OSError:  # a read-only cache folder: the choice still holds for this run
        path = cache_path(key)
    return TileChoice(config, True, path)
