"""Changes to a testcase's inputs whose answer is known without a new reference, for the verified passes.

Attention per batch item is O = softmax(Q K^T / sqrt(d)) V, so:
- permuting the batch items permutes O's items;
- permuting Q's rows permutes O's rows the same way;
- permuting K's and V's rows together (one permutation) leaves O unchanged;
- negating V negates O exactly (IEEE rounding is symmetric in sign, so every product, sum and FMA of
  an honest kernel gives the same magnitude with the other sign).

An `InputTransform` holds one of each, drawn fresh from the operating system's entropy (not the suite's
seed), so a kernel cannot predict it. Each permutation is a single cycle through every index (Sattolo's
form), so when there are two or more items or rows every one of them moves. Degenerate shapes:
- B = 1: the batch permutation is the identity; Q rows and K/V rows still move when N >= 2;
- N = 1: both row permutations are the identities; the batch items still move when B >= 2;
- B = 1 and N = 1: only the negation of V changes the input (and the output's sign).
The negation always changes V's bytes (even a zero becomes -0), so every transform changes the input.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from attnbench.cases.testcase import Shape

GATHER_ELEMENTS = 1 << 20  # items gathered at once when the expected output is built: bounded temporaries


def entropy_rng() -> np.random.Generator:
    """A generator seeded from the operating system (never the suite's seed)."""
    return np.random.default_rng(int.from_bytes(os.urandom(16), "little"))


def single_cycle(n: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random permutation of range(n) made of one cycle: no index stays put when n >= 2."""
    order = rng.permutation(n)
    cycle = np.empty(n, dtype=np.int64)
    cycle[order] = np.roll(order, -1)
    return cycle


@dataclass(frozen=True)
class InputTransform:
    """New item b is old item `batch[b]`; in it, new Q row r is old row `q_rows[r]`, new K and V row r are
    old rows `kv_rows[r]`; V is negated when `negate_v`."""

    batch: np.ndarray
    q_rows: np.ndarray
    kv_rows: np.ndarray
    negate_v: bool = True

    @classmethod
    def draw(cls, shape: Shape, rng: np.random.Generator | None = None) -> "InputTransform":
        """Fresh permutations of every kind, with V negated."""
        rng = rng or entropy_rng()
        return cls(single_cycle(shape.B, rng), single_cycle(shape.N, rng), single_cycle(shape.N, rng), True)

    @classmethod
    def identity(cls, shape: Shape) -> "InputTransform":
        return cls(np.arange(shape.B), np.arange(shape.N), np.arange(shape.N), False)

    def then(self, later: "InputTransform") -> "InputTransform":
        """This transform followed by `later`, as one transform of the original input."""
        return InputTransform(self.batch[later.batch], self.q_rows[later.q_rows], self.kv_rows[later.kv_rows],
                              self.negate_v != later.negate_v)

    def kinds(self) -> list[str]:
        """What this transform changes, by name (the identities left out)."""
        named = [("batch items permuted", self.batch), ("Q rows permuted", self.q_rows),
                 ("K and V rows permuted together", self.kv_rows)]
        kinds = [name for name, perm in named if not np.array_equal(perm, np.arange(perm.size))]
        return kinds + (["V negated"] if self.negate_v else [])

    def apply(self, qkv: np.ndarray) -> np.ndarray:
        """The transformed (B, 3, N, d) input, as a new array (the host backends; the GPU gathers on the device)."""
        out = np.empty_like(qkv)
        out[:, 0] = qkv[self.batch[:, None], 0, self.q_rows[None, :]]
        out[:, 1] = qkv[self.batch[:, None], 1, self.kv_rows[None, :]]
        out[:, 2] = qkv[self.batch[:, None], 2, self.kv_rows[None, :]]
        if self.negate_v:
            np.negative(out[:, 2], out=out[:, 2])
        return out

    def expected_items(self, output: np.ndarray, b0: int, b1: int) -> np.ndarray:
        """Items [b0, b1) of the output this input must give, from `output`, the untransformed input's output."""
        # two takes (items, then rows) are ~8x faster than one fancy index with two index arrays
        items = np.take(np.take(output, self.batch[b0:b1], axis=0), self.q_rows, axis=1)
        return np.negative(items, out=items) if self.negate_v else items

    def item_groups(self, shape: Shape) -> list[tuple[int, int]]:
        """[b0, b1) groups of about GATHER_ELEMENTS output elements, for bounded work on big cases."""
        per_group = max(1, GATHER_ELEMENTS // max(1, shape.N * shape.d))
        return [(b0, min(shape.B, b0 + per_group)) for b0 in range(0, shape.B, per_group)]


def batch_cycles(batch: np.ndarray) -> list[list[int]]:
    """The cycles of a batch permutation longer than one item, each as [b, batch[b], batch[batch[b]], ...]:
    the order in which an in-place permutation moves items (new item b takes old item batch[b])."""
    seen = np.zeros(batch.size, dtype=bool)
    cycles = []
    for start in range(batch.size):
        if seen[start] or batch[start] == start:
            seen[start] = True
            continue
        cycle, b = [], start
        while not seen[b]:
            seen[b] = True
            cycle.append(b)
            b = int(batch[b])
        cycles.append(cycle)
    return cycles
