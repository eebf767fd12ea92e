"""The row softmax over materialised scores (cuda/softmax_rows.cuh and tiled's own), as launch facts
shared by the variants that write S = Q K^T to memory (tiled, gemm, gemmtc, gemmwg3x)."""

from __future__ import annotations

from typing import Callable

from attnbench.cases.testcase import Shape
from attnbench.kernels.variant import Launch, cdiv, threads


def round_up4(x: int) -> int:
    """x rounded up to a multiple of 4 (a 16-byte row of floats): the padded rows' length."""
    return -(-x // 4) * 4


def softmax_rows(kernel: str, applies: Callable[[Shape], bool] = lambda s: True) -> Launch:
    """One warp per row of S, 8 rows per block."""
    return Launch(kernel=kernel, grid=lambda s: (cdiv(s.N, 8), s.B, 1), block=threads(256), args=("scores", "N"),
                  applies=applies)
