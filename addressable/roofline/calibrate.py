"""Measure the achievable peaks of this GPU: copy and read-only bandwidth, dense matmul TFLOP/s per dtype.

Each figure is the best of `reps` timed runs (CUDA events) after a warm-up: the roofline asks what
the hardware can reach, so the fastest run is the estimate. Bandwidth counts bytes read plus
bytes written (a copy of n bytes moves 2n). The result is an addressable.roofline.model.Peaks whose
memory roof is the largest of the measured bandwidths (copy, read-only, write-only, add).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from functools import cache

import torch

from addressable.core.errors import AddressableError
from addressable.roofline.model import Peaks

MATMUL_DTYPES = ("bf16", "fp16", "tf32", "fp32", "fp8")


def _best_ms(fn: Callable[[], object], reps: int, warmup: int = 3) -> float:
    """Fastest of reps timed calls, in ms."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return min(times)


def bandwidth_gbps(nbytes: int = 1 << 30, reps: int = 20) -> dict[str, float]:
    """Bandwidth in GB/s over `nbytes` buffers: device-to-device copy, read-only streaming (a sum),
    write-only streaming (a fill) and a three-stream add (two reads, one write)."""
    a = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
    b, c = torch.empty_like(a), torch.empty_like(a)
    n = a.numel() * 4
    def rate(moved: int, fn: Callable[[], object]) -> float:
        return moved / (_best_ms(fn, reps) * 1e6)
    return {"copy_gbps": rate(2 * n, lambda: b.copy_(a)), "read_gbps": rate(n, lambda: a.sum()),
            "write_gbps": rate(n, lambda: b.fill_(1.0)), "add_gbps": rate(3 * n, lambda: torch.add(a, b, out=c))}


def matmul_tflops(dtype: str, n: int = 8192, reps: int = 10) -> float | None:
    """Dense n×n×n matmul TFLOP/s for bf16, fp16, tf32, fp32 or fp8 (None where the GPU has no such matmul)."""
    dev = "cuda"
    if dtype == "fp8":
        if torch.cuda.get_device_capability() < (8, 9) or not hasattr(torch, "float8_e4m3fn"):
            return None
        a = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn).t()  # _scaled_mm wants b column-major
        one = torch.ones((), device=dev)
        def fn() -> object:
            return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        try:
            ms = _best_ms(fn, reps)
        except RuntimeError:
            return None
        return 2 * n**3 / (ms * 1e9)
    torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32, "fp32": torch.float32}[dtype]
    a = torch.randn(n, n, device=dev, dtype=torch_dtype)
    b = torch.randn(n, n, device=dev, dtype=torch_dtype)
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    try:
        ms = _best_ms(lambda: a @ b, reps)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    return 2 * n**3 / (ms * 1e9)


def measure_peaks(nbytes: int = 1 << 30, n: int = 8192, reps: int = 10) -> Peaks:
    """Calibrated peaks of the current CUDA device; AddressableError without one."""
    if not torch.cuda.is_available():
        raise AddressableError("calibrate needs a CUDA GPU (none here); for a trace from elsewhere use the "
                               "datasheet peaks: `addressable roofline TRACE --gpu NAME`")
    bw = bandwidth_gbps(nbytes, 2 * reps)
    tflops = {d: v for d in MATMUL_DTYPES if (v := matmul_tflops(d, n, reps)) is not None}
    torch.cuda.empty_cache()
    name = torch.cuda.get_device_name()
    when = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return Peaks(name, max(bw.values()), tflops,
                 f"calibrated: addressable calibrate on {name}, torch {torch.__version__}, {when}", bw)


@cache
def session_peaks() -> Peaks:
    """measure_peaks() once per process (profile and sweep runs share it)."""
    return measure_peaks()
