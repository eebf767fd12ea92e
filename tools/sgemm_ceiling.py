"""What a vendor float32 GEMM reaches on FFMA alone, as a practical ceiling for fa2simt, as JSON on stdout.

    python3 tools/sgemm_ceiling.py [--sizes 4096,8192] [--repeats 20] [--device 0]

`attnbench ceilings` measures the FFMA peak with independent chains and no memory traffic; no real kernel
gets there. cuBLAS SGEMM (torch.matmul on float32 with TF32 switched off) is the best-kept FFMA kernel
there is, so its share of that peak says how far an FFMA attention kernel (two GEMMs and a softmax
between them) can be expected to go. Each size: C = A B on square float32 matrices, CUDA events around
each call, the median of --repeats after 3 warm-up calls, checked against float64 on a slice so that a
TF32 path cannot pass for FFMA.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attnbench import strict_json  # noqa: E402


def sizes(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 64:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of sizes of at least 64")
    return values


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=sizes, default="4096,8192")
    parser.add_argument("--repeats", type=int, choices=range(1, 1001), metavar="1-1000", default=20)
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("sgemm_ceiling: this needs PyTorch (pip install torch)", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("sgemm_ceiling: no CUDA GPU is visible to PyTorch", file=sys.stderr)
        return 3
    torch.backends.cuda.matmul.allow_tf32 = False  # FFMA, not the tensor cores
    device = torch.device("cuda", args.device)
    rows = []
    for n in args.sizes:
        gen = torch.Generator(device=device).manual_seed(n)
        a = torch.rand((n, n), device=device, generator=gen) * 2 - 1
        b = torch.rand((n, n), device=device, generator=gen) * 2 - 1
        for _ in range(3):
            c = a @ b
        times = []
        for _ in range(args.repeats):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            c = a @ b
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) / 1e3)
        # 64 rows against float64: TF32 would be off by about 1e-3 relative, float32 by about 1e-6
        ref = a[:64].double() @ b.double()
        rel = float(((c[:64].double() - ref).norm() / ref.norm()).item())
        median = statistics.median(times)
        rows.append(
            {
                "n": n,
                "median_s": median,
                "tflops": 2 * n**3 / median / 1e12,
                "rel_l2_vs_float64": rel,
                "float32_accurate": rel < 1e-5,
            }
        )
    props = torch.cuda.get_device_properties(device)
    report = {
        "gpu": props.name,
        "sm_count": props.multi_processor_count,
        "torch_version": torch.__version__,
        "what": "torch.matmul float32, allow_tf32 False (cuBLAS SGEMM)",
        "sizes": rows,
    }
    print(strict_json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
