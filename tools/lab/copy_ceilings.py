"""The machine's copy ceilings beside a pipeline benchmark, as JSON on stdout.

    python3 tools/lab/copy_ceilings.py FILE... [--mib 256] [--device 0]

For each FILE (a course input): `cat FILE > /dev/null` from the page cache (best of 3, after one warm
read; `cat /dev/null` beside it, the cost of starting cat) and one `write` call of its output's bytes (4*B*N*d, best of 3, into a file beside it, removed
afterwards). For the GPU (when pycuda can open one): host-to-device and device-to-host bandwidth from
pinned and from pageable memory (CUDA events around one copy of --mib MiB, best of 5), and the time
to pin (cuMemHostAlloc) the largest FILE's size in one piece. A part that cannot run says why in its
field instead of failing the whole report.
"""

from __future__ import annotations

import argparse
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from attnbench import strict_json

REPEATS = 3


def best_of(repeats: int, work) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def file_ceilings(path: Path) -> dict:
    B, N, d = struct.unpack("<iii", path.open("rb").read(12))
    out_bytes = 4 * B * N * d
    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)  # into the page cache
    cat_s = best_of(REPEATS, lambda: subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True))
    # Starting a process costs a few ms, which matters only for small files: recorded beside it.
    spawn_s = best_of(REPEATS, lambda: subprocess.run(["cat", "/dev/null"], stdout=subprocess.DEVNULL, check=True))
    data = np.ones(out_bytes // 4, dtype=np.float32)  # touched, so the write measures the copy, not page faults
    target = path.with_name(f".{path.name}.write-ceiling")

    def one_write() -> None:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view, done = memoryview(data).cast("B"), 0
            while done < out_bytes:  # one call for up to 2 GiB; Linux caps a single write just below that
                done += os.write(fd, view[done:])
        finally:
            os.close(fd)

    try:
        write_s = best_of(REPEATS, one_write)
    finally:
        target.unlink(missing_ok=True)
    size = path.stat().st_size
    return {"file": str(path), "shape": [B, N, d], "input_bytes": size, "output_bytes": out_bytes,
            "cat_s": cat_s, "cat_spawn_s": spawn_s, "cat_gbps": size / cat_s / 1e9, "write_s": write_s, "write_gbps": out_bytes / write_s / 1e9}


def gpu_ceilings(mib: int, device: int, pin_bytes: int) -> dict:
    try:
        import pycuda.driver as cuda

        cuda.init()
        context = cuda.Device(device).retain_primary_context()
        context.push()
    except Exception as exc:  # no pycuda, no driver, no GPU
        return {"error": f"no GPU measured: {exc}"}
    try:
        nbytes = mib << 20
        device_buffer = cuda.mem_alloc(nbytes)
        pinned = cuda.pagelocked_empty(nbytes, np.uint8)
        pinned[:] = 1
        pageable = np.ones(nbytes, dtype=np.uint8)

        def timed(copy) -> float:
            best = float("inf")
            for _ in range(5):
                start, end = cuda.Event(), cuda.Event()
                start.record()
                copy()
                end.record()
                end.synchronize()
                best = min(best, start.time_till(end) / 1e3)
            return best

        result = {"copy_bytes": nbytes, "device": cuda.Device(device).name()}
        for name, host in (("pinned", pinned), ("pageable", pageable)):
            h2d = timed(lambda: cuda.memcpy_htod(device_buffer, host))
            d2h = timed(lambda: cuda.memcpy_dtoh(host, device_buffer))
            result[f"h2d_{name}_gbps"] = nbytes / h2d / 1e9
            result[f"d2h_{name}_gbps"] = nbytes / d2h / 1e9
        pinned.base.free()
        device_buffer.free()
        start = time.perf_counter()
        big = cuda.pagelocked_empty(pin_bytes, np.uint8)
        result["pin_bytes"] = pin_bytes
        result["pin_s"] = time.perf_counter() - start
        big.base.free()
        return result
    except Exception as exc:
        return {"error": f"copy measurement failed: {exc}"}
    finally:
        context.pop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args()
    files = {}
    for path in args.files:
        try:
            files[path.stem] = file_ceilings(path)
        except Exception as exc:
            files[path.stem] = {"file": str(path), "error": str(exc)}
    largest = max((p.stat().st_size for p in args.files if p.exists()), default=256 << 20)
    report = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host_cpus": os.cpu_count(),
              "files": files, "gpu": gpu_ceilings(args.mib, args.device, largest)}
    sys.stdout.write(strict_json.dumps(report))  # strict JSON, as every JSON attnbench writes
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
