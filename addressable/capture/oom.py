"""What to say when a workload runs out of memory: what ran, the memory asked for and there, what would fit.

`out_of_memory(cfg, error)` is the one line `measure.memory_errors` raises. The advice is what can shrink
the run on this machine: a smaller batch or sequence, fewer layers (`--layers-subset`, profiled at two
depths and extrapolated to the full one), or a smaller workload of the same family.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from addressable.capture.workload import WorkloadConfig, WorkloadSpec, registry

_GPU_ASKED = re.compile(r"Tried to allocate ([\d.]+ [KMGT]?i?B)")
_GPU_HAS = re.compile(r"total capacity of ([\d.]+ [KMGT]?i?B) of which ([\d.]+ [KMGT]?i?B) is free")
_CPU_ASKED = re.compile(r"tried to allocate (\d+) bytes")
GIB = 2.0 ** 30


def out_of_memory(cfg: WorkloadConfig, error: BaseException, layers_subset: tuple[int, int] | None = None) -> str:
    """One line: the run that ran out of memory, what it asked for against what the device has, and what
    to try (memory_tips)."""
    what = f"out of memory running {cfg.name} {cfg.mode} at batch {cfg.batch}" + (
        f", seq {cfg.seq_len}" if cfg.seq_len else "") + f" on {cfg.device}"
    sizes = "; ".join(x for x in (asked_for(str(error)), memory_here(cfg.device, str(error))) if x)
    tips = memory_tips(cfg, layers_subset)
    advice = (f"try {', '.join(tips[:-1])} or {tips[-1]}" if len(tips) > 1 else f"try {tips[0]}") if tips else \
        "nothing here is smaller: it needs a device with more memory"
    return f"{what}" + (f" ({sizes})" if sizes else "") + f"; {advice}"


def asked_for(message: str) -> str:
    """'it asked for 2.00 GiB more' from PyTorch's CUDA or CPU allocator message; '' when it says nothing."""
    if m := _GPU_ASKED.search(message):
        return f"it asked for {m.group(1)} more"
    if m := _CPU_ASKED.search(message):
        return f"it asked for {int(m.group(1)) / GIB:,.2f} GiB more"
    return ""


def memory_here(device: str, message: str = "") -> str:
    """The device's memory and how much was free: from the CUDA message, else asked of the device."""
    if m := _GPU_HAS.search(message):
        return f"the GPU has {m.group(1)}, {m.group(2)} free"
    if device == "cuda":
        import torch

        try:
            free, total = torch.cuda.mem_get_info()
        except RuntimeError:
            return ""
        return f"the GPU has {total / GIB:,.1f} GiB, {free / GIB:,.1f} GiB free"
    host, available = _host_memory()
    return f"this machine has {host / GIB:,.1f} GiB, {available / GIB:,.1f} GiB available" if host else ""


def _host_memory() -> tuple[float, float]:
    """(total, available) bytes of this machine's memory; (0, 0) where it cannot be read."""
    try:
        total = float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        with open("/proc/meminfo") as f:
            avail = next((float(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:")), 0.0)
    except (OSError, ValueError, AttributeError):
        return 0.0, 0.0
    return total, avail


def memory_tips(cfg: WorkloadConfig, layers_subset: tuple[int, int] | None = None) -> list[str]:
    """What makes the run smaller, in the order to try: batch, sequence, layers, a smaller workload (of the
    workloads registered so far, user adapters included)."""
    known = registry()
    spec = known.get(cfg.name)
    tips = [f"--batch {cfg.batch // 2}"] if cfg.batch > 1 else []
    if cfg.seq_len and cfg.seq_len > 1:
        tips.append(f"--seq-len {cfg.seq_len // 2}")
    layers = cfg.options.get("layers")
    if layers_subset:
        tips.append(f"smaller depths than --layers-subset {layers_subset[0]},{layers_subset[1]}")
    elif isinstance(layers, int) and layers > 1:
        tips.append(f"--option layers={layers // 2}")
    elif spec is not None and spec.full_layers:
        l1, l2 = max(1, spec.full_layers // 16), max(2, spec.full_layers // 8)
        tips.append(f"--layers-subset {l1},{l2} (two depths, extrapolated to {spec.full_layers} layers)")
    smaller = _smaller_workloads(spec, cfg.mode, known.values()) if spec is not None else []
    if smaller:
        tips.append(f"a smaller workload ({', '.join(smaller)})")
    return tips


def _smaller_workloads(spec: WorkloadSpec, mode: str, specs: Iterable[WorkloadSpec]) -> list[str]:
    """Workloads of spec's family that run `mode` with fewer layers (the size the registry knows), smallest first."""
    if not spec.full_layers:
        return []
    same = [s for s in specs if s.family == spec.family and s.full_layers and s.full_layers < spec.full_layers
            and mode in s.modes]
    return [s.name for s in sorted(same, key=lambda s: s.full_layers or 0)]
