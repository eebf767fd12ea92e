"""The verified passes' check on the device for the peers that hold tensors (torch, triton), in PyTorch.

The same check as the host's (`bench.timed_check.pass_errors`) and the pycuda backend's
(`backends.gpu_output_check`): the output against the first pass's checked output, kept on the device,
moved by the pass's transform, in float32, groups of items at a time so the temporaries stay bounded.
The copy is taken on the GPU right after the first pass's output was read back; its checksum (the sum of
its elements' bits) is taken then and again at each check; a changed copy means the caller checks that
pass on the host.
"""

from __future__ import annotations

from typing import Any, Callable

from attnbench.backends.input_transform import InputTransform

GROUP_ELEMENTS = 1 << 24  # output elements checked at once: a few temporaries of 64 MiB each


class TorchOutputCheck:
    """The first pass's output kept as a tensor, and the check of the current output against it."""

    def __init__(self, torch: Any, kept: Any, current: Callable[[], Any]) -> None:
        self.torch, self._kept, self._current = torch, kept, current
        self._checksum = self._sum_bits()

    @classmethod
    def keep(cls, torch: Any, current: Callable[[], Any]) -> "TorchOutputCheck | None":
        """Copy the output `current()` gives now, where it lies; None when there is no room (the host checks
        instead). `current` gives the execution's output tensor as (B, N, d), at check time too (a pass may
        make a new one)."""
        try:
            kept = current().clone()
        except torch.cuda.OutOfMemoryError:
            return None
        return cls(torch, kept, current)

    def _sum_bits(self) -> int:
        bits = self._kept.view(self.torch.int32).reshape(-1)
        return int(sum(int(part.sum(dtype=self.torch.int64)) for part in bits.split(GROUP_ELEMENTS)))

    def errors(self, transform: InputTransform, atol: float, rtol: float) -> tuple[int, int, float] | None:
        torch = self.torch
        if self._sum_bits() != self._checksum:
            return None
        got_all = self._current()
        B = got_all.shape[0]
        per_group = max(1, GROUP_ELEMENTS // max(1, got_all[0].numel()))
        batch, rows = (torch.as_tensor(p, device=self._kept.device) for p in (transform.batch, transform.q_rows))
        failing = nonfinite = 0
        largest = 0.0
        for b0 in range(0, B, per_group):
            got = got_all[b0 : b0 + per_group]
            want = self._kept.index_select(0, batch[b0 : b0 + per_group]).index_select(1, rows)
            if transform.negate_v:
                want.neg_()
            diff = (got - want).abs_()
            bound = atol + rtol * want.abs_() if rtol else atol
            failing += int((~(diff <= bound)).sum())
            nonfinite += int((~torch.isfinite(got)).sum())
            finite = torch.where(torch.isfinite(diff), diff, torch.zeros_like(diff))
            largest = max(largest, float(finite.max()) if finite.numel() else 0.0)
        return failing, nonfinite, largest

    def free(self) -> None:
        self._kept = None
