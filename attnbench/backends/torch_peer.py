"""The PyTorch peer: scaled_dot_product_attention on the same float32 data, in the same process.

pycuda's `Gpu` has already made the device's primary context current, and PyTorch's runtime uses
that same primary context, so one process, one context, one set of timing rules: the sampler's L2
flush and CUDA events (pycuda's, on the legacy default stream where PyTorch launches by default;
PyTorch's own events if it launches on another stream). The
tensors are (B, 1, N, d) float32 and contiguous, built from the testcase outside the timed window.
PyTorch is imported only here, and only when the peer runs; without it, one sentence says so.

The half-precision flavours (`torch:fp16`, `torch:bf16`: the flavour's unit names the type) round the float32
tensors to that type once, outside the timed window, so SDPA runs on half inputs as a user holding half data
would; the output is read back as float32 and checked against float64 like every cell.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnbench.backends import torch_fresh
from attnbench.backends.base import event_ms
from attnbench.backends.device import GpuDevice
from attnbench.cases.fresh_values import InputRange
from attnbench.cases.testcase import Testcase
from attnbench.errors import DeviceMemoryError, KernelLaunchError, PeerUnavailable
from attnbench.kernels.variant import Variant
from attnbench.locations import extra_install_command
from attnbench.results.timed_check import SampleErrors

# The tensors' type for each unit a flavour declares (torch's own float32 peer declares tf32x3, its backend).
DTYPE_OF_UNIT = {"fp16": "float16", "bf16": "bfloat16"}


def dtype_name_of(variant: Variant | None) -> str:
    """The PyTorch type (its attribute name) the variant's inputs are rounded to: float32 unless a flavour says."""
    return DTYPE_OF_UNIT.get(variant.unit, "float32") if variant is not None else "float32"


def import_torch() -> Any:
    """PyTorch with a usable CUDA device, or PeerUnavailable in one sentence."""
    try:
        import torch
    except ImportError:
        raise PeerUnavailable(
            "the torch peer needs PyTorch, which is not installed here: install a CUDA build of torch (the "
            f"triton extra brings one: {extra_install_command('gpu,triton')}), "
            "or leave torch out of --variants"
        ) from None
    if not torch.cuda.is_available():
        raise PeerUnavailable(
            f"PyTorch {torch.__version__} is installed but sees no CUDA device (a CPU-only build, or no driver), "
            "so the torch peer cannot run"
        )
    return torch


def torch_device_index(torch: Any, gpu: GpuDevice) -> int:
    """PyTorch's index of pycuda's device (the runtime may order devices differently)."""
    try:
        bus = gpu.device.pci_bus_id().lower()
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            theirs = getattr(props, "pci_bus_id", None)
            if theirs is not None and f"{props.pci_domain_id:04x}:{theirs:02x}:{props.pci_device_id:02x}" in bus:
                return i
    except Exception:
        pass
    return gpu.index


class TorchEventClock:
    """PyTorch's CUDA events on its current stream, in milliseconds."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self._start: Any = None
        self._end: Any = None

    def start(self) -> None:
        self._start, self._end = (self.torch.cuda.Event(enable_timing=True) for _ in range(2))
        self._start.record()

    def stop(self) -> float:
        self._end.record()
        self._end.synchronize()
        return event_ms(self._start.elapsed_time(self._end))


class TorchExecution:
    """One testcase as PyTorch tensors on the GPU that pycuda holds open."""

    compile_s = 0.0

    def __init__(self, gpu: GpuDevice, testcase: Testcase, variant: Variant | None = None) -> None:
        if gpu is None:
            raise PeerUnavailable("the torch peer needs an open GPU")
        self.torch = import_torch()
        self.gpu = gpu
        self.driver = gpu.driver
        self.testcase = testcase
        self.shape = testcase.shape
        self.device_name = gpu.name
        self.peak_flops = gpu.fp32_peak_flops
        self.limits = gpu.limits
        self.dtype_name = dtype_name_of(variant)
        self.clock: Any = gpu.clock(f"{variant.name if variant is not None else 'torch'} on {self.shape}")
        self._q = self._k = self._v = self._out = None

    def upload(self) -> None:
        torch = self.torch
        # float32 means float32: no TF32 in the math backend's matrix products.
        torch.backends.cuda.matmul.allow_tf32 = False
        index = torch_device_index(torch, self.gpu)
        torch.cuda.set_device(index)
        device = torch.device("cuda", index)
        try:
            qkv = torch.from_numpy(np.ascontiguousarray(self.testcase.qkv)).to(device)
            dtype = getattr(torch, self.dtype_name)  # float32: .to is a no-op, no copy
            self._q, self._k, self._v = (qkv[:, i : i + 1].to(dtype).contiguous() for i in range(3))
            del qkv
        except torch.cuda.OutOfMemoryError:
            self.free()
            raise DeviceMemoryError(
                f"torch: the inputs of {self.shape} ({4 * self.shape.elements * 4 / 2**30:.2f} GiB with the output) "
                f"do not fit in {self.gpu.name}'s free memory"
            ) from None
        current = self.driver.Context.get_current()
        if current is not None and getattr(current, "handle", None) != getattr(self.gpu.context, "handle", None):
            raise PeerUnavailable("PyTorch made a CUDA context current other than the device's primary context")
        # pycuda events record on the legacy default stream; use them only if PyTorch launches there.
        if torch.cuda.current_stream(device).cuda_stream != 0:
            self.clock = TorchEventClock(torch)

    def run_pass(self) -> None:
        torch = self.torch
        try:
            with torch.no_grad():
                self._out = torch.nn.functional.scaled_dot_product_attention(self._q, self._k, self._v)
        except torch.cuda.OutOfMemoryError:
            raise DeviceMemoryError(f"torch: scaled_dot_product_attention ran out of device memory on {self.shape}") from None
        except RuntimeError as exc:
            raise KernelLaunchError(f"torch: scaled_dot_product_attention failed on {self.shape}: {exc}") from None

    def download(self) -> np.ndarray:
        assert self._out is not None
        s = self.shape
        # float32 on the host: numpy has no bfloat16, and the check compares in float32 whatever the type
        return self._out.reshape(s.B, s.N, s.d).cpu().float().numpy()

    def flush_l2(self) -> None:
        self.gpu.flush_l2()

    def poison_output(self, value: float = float("nan")) -> None:
        if self._out is not None:  # each pass makes a new output tensor: this poisons only the last one
            self._out.fill_(value)

    def _inputs(self) -> list[Any]:
        s = self.shape
        return [x.view(s.B, s.N, s.d) for x in (self._q, self._k, self._v)]

    def refresh_inputs(self, seed: int, ranges: InputRange) -> None:
        """Q, K and V filled in place on the device from `seed` (`backends.torch_fresh`)."""
        torch_fresh.refresh(self.torch, self._inputs(), seed, ranges)

    def check_sample(self, seed: int, ranges: InputRange, rows: np.ndarray, atol: float,
                     rtol: float) -> SampleErrors:
        s = self.shape
        return torch_fresh.check(self.torch, *self._inputs(), self._out.reshape(s.B, s.N, s.d).float(), rows,
                                 atol, rtol)

    def output_digest(self) -> np.ndarray:
        return torch_fresh.digest(self.torch, self._out.float())

    def synchronize(self) -> None:
        self.torch.cuda.synchronize()

    def free(self) -> None:
        self._q = self._k = self._v = self._out = None
        try:
            self.torch.cuda.empty_cache()  # give the memory back for the next cell's own allocations
        except Exception:
            pass
