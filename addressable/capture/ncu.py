"""Run one step of a workload under Nsight Compute for the roofline's bytes check (addressable.roofline.ncu_check).

`addressable profile ... --ncu N` profiles as usual, then re-runs one step of the same workload in
a subprocess under Nsight Compute (`ncu`), restricted to that step (cudaProfilerStart/Stop), to the
function names of the top N replaceable kernels by time, and to the first K launches of each launch
configuration, which ncu keys by the function's base name, grid and block (not its template
arguments: every `vectorized_elementwise_kernel<...>` with one grid shares a configuration). K is
the smallest that reaches a launch of every top kernel within a launch budget (choose_per_config,
from the trace). The check (reading ncu's CSV, pairing its launches with the trace's, comparing
the bytes) is addressable.roofline.ncu_check's; the run folder's files are written by
addressable.runs.folder.write_ncu_check.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from addressable.classify.taxonomy import Taxonomy
from addressable.core.errors import AddressableError
from addressable.roofline.ncu_check import (
    BYTES_METRICS,
    FLOP_METRICS,
    PER_CONFIG,
    NcuCheck,
    base_name,
    compare,
    config_rank,
    launch_config,
    peak_gbps_of,
    read_ncu_csv,
    step_kernels,
    top_kernel_names,
)
from addressable.runs.folder import NCU_RAW_FILE, TRACE_FILE, load_run, write_ncu_check
from addressable.trace.reader import load_trace

MAX_LAUNCHES = 450  # launch budget of one measured step, bytes only (about 0.1-0.2 s of ncu replay each)
MAX_LAUNCHES_FLOPS = 150  # with FLOP metrics (SASS instrumentation: about 0.5 s each)


def find_ncu() -> str:
    """The `ncu` executable on PATH; AddressableError when there is none."""
    path = shutil.which("ncu")
    if path is None:
        raise AddressableError("--ncu needs Nsight Compute: no `ncu` on PATH (it ships with the CUDA toolkit, "
                               "e.g. /usr/local/cuda/bin)")
    return path


def available_flop_metrics(ncu: str) -> list[str]:
    """The FLOP metrics this GPU's ncu offers (`ncu --query-metrics`); [] when it cannot say."""
    try:
        text = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    names = set(re.findall(r"^(\w+)\s", text, re.MULTILINE))
    return [m for m in FLOP_METRICS if m.removesuffix(".sum") in names]


def kernel_filter(names: list[str]) -> str:
    """ncu's --kernel-name regex for these kernels' function names (function base, as ncu's default)."""
    bases = sorted({re.escape(base_name(n)) for n in names})
    return f"regex:(^|::)({'|'.join(bases)})($|<|\\()"


def choose_per_config(rows: pd.DataFrame, names: list[str], budget: int) -> tuple[int, int]:
    """(K, launches): the smallest K launches per launch configuration that reach a launch of every kernel
    in `names` (the step's launches of their functions), or, when that exceeds `budget` launches, the
    largest K within it (at least PER_CONFIG); launches: how many ncu then measures."""
    r = rows[rows["name"].astype(str).map(base_name).isin({base_name(n) for n in names})]
    rank = config_rank(r)
    need = int(rank[r["name"].astype(str).isin(names)].groupby(r["name"].astype(str)).min().max()) + 1 \
        if r["name"].astype(str).isin(names).any() else PER_CONFIG
    sizes = r.groupby([r["name"].astype(str).map(base_name), launch_config(r["grid"]),
                       launch_config(r["block"])]).size().to_numpy()

    def launches(k: int) -> int:
        return int(np.minimum(sizes, k).sum())

    k = max(need, PER_CONFIG)
    while k > PER_CONFIG and launches(k) > budget:
        k = max(PER_CONFIG, min(k - 1, int(k * 0.9)))
    return k, launches(k)


def ncu_command(ncu: str, config: dict[str, Any], names: list[str], log_file: Path, adapters: tuple[str, ...] = (),
                flop_metrics: list[str] | None = None, per_config: int | None = PER_CONFIG,
                launches: int = 0) -> list[str]:
    """The ncu command line that measures one step of `config` (a WorkloadConfig as a dict): the first
    `per_config` launches of each launch configuration of the kernels' functions (per_config None:
    their first `launches` launches), between the step's cudaProfilerStart and cudaProfilerStop
    (process-wide, so autograd's backward thread is included)."""
    metrics = ",".join([*BYTES_METRICS.values(), *(flop_metrics or [])])
    step = [sys.executable, "-m", "addressable.capture.ncu", json.dumps(config), *adapters]
    return [ncu, "--clock-control", "none", "--cache-control", "all", "--target-processes", "all",
            "--profile-from-start", "off", "--csv", "--print-units", "base", "--metrics", metrics,
            "--kernel-name-base", "function", "--kernel-name", kernel_filter(names),
            *(["--filter-mode", "per-launch-config", "--launch-count", str(per_config)] if per_config else
              ["--launch-count", str(max(launches, 1))]),
            "--log-file", str(log_file), *step]


def measure_step(config: dict[str, Any], rows: pd.DataFrame, top: int, workdir: Path,
                 adapters: tuple[str, ...] = (), flops: bool = True, timeout_s: float = 900,
                 progress: Callable[[str], None] | None = None) -> tuple[str, int | None]:
    """Run one step of the workload under ncu, restricted to the top kernels' names; return ncu's CSV text
    and the launches per configuration it measured.

    FLOPs (flops=True) need more replay passes per kernel (SASS instrumentation), so they cost time
    and get a smaller launch budget (MAX_LAUNCHES_FLOPS instead of MAX_LAUNCHES). Should ncu measure
    nothing per launch configuration, it measures the same number of launches as the first of the
    step's instead (per_config None)."""
    ncu = find_ncu()
    names = top_kernel_names(rows, top)
    if not names:
        raise AddressableError("--ncu: the profiled step has no replaceable kernels to measure")
    bases = {base_name(n) for n in names}
    k, sampled = choose_per_config(rows, names, MAX_LAUNCHES_FLOPS if flops else MAX_LAUNCHES)
    flop_metrics = available_flop_metrics(ncu) if flops else []
    say = progress or (lambda _: None)
    say(f"Nsight Compute: about {sampled} launches (the first {k} of each launch configuration of {len(bases)} "
        "kernel functions), one step")
    for per_config in (k, None):
        log = workdir / f"{per_config}.{NCU_RAW_FILE}"
        cmd = ncu_command(ncu, config, names, log, adapters, flop_metrics, per_config, sampled)
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=os.environ.copy())
        except subprocess.TimeoutExpired:
            raise AddressableError(f"Nsight Compute took longer than {timeout_s:.0f} s") from None
        text = log.read_text() if log.is_file() else ""
        if p.returncode != 0:
            tail = (p.stderr or p.stdout or text).strip().splitlines()[-1:] or [f"exit {p.returncode}"]
            raise AddressableError(f"Nsight Compute failed: {tail[0][:300]}")
        if '"ID"' in text:
            return text, per_config
        say("Nsight Compute measured no launch per launch configuration: measuring the step's first launches")
    raise AddressableError("Nsight Compute measured no launch of the top kernels in the step")


def check_run(folder: str | Path, config: Any, top: int, adapters: tuple[str, ...] = (), flops: bool = True,
              taxonomy: Taxonomy | None = None, progress: Callable[[str], None] | None = None) -> NcuCheck:
    """Measure the top `top` replaceable kernels of a profiled GPU run folder with ncu and record the check
    (addressable.runs.folder.write_ncu_check: ncu_raw.csv, ncu.csv and breakdown.json's roofline.ncu)."""
    import torch

    folder = Path(folder)
    rows = step_kernels(load_trace(folder / TRACE_FILE), taxonomy)
    torch.cuda.empty_cache()  # the measured process needs the memory, not this one's cache
    with tempfile.TemporaryDirectory(prefix="addressable-ncu-") as tmp:
        text, per_config = measure_step(config_dict(config), rows, top, Path(tmp), adapters, flops,
                                        progress=progress)
    check = compare(rows, read_ncu_csv(text), top, peak_gbps=peak_gbps_of(load_run(folder).manifest),
                    per_config=per_config)
    write_ncu_check(folder, text, check.kernels, check.to_dict())
    return check


def run_step(config: dict[str, Any], adapters: tuple[str, ...] = (), warmup: int = 3) -> None:
    """Build the workload, warm it up, run one step between cudaProfilerStart and Stop (the ncu subprocess's work)."""
    import torch

    from addressable.capture.measure import cudnn_benchmark
    from addressable.capture.workload import WorkloadConfig, get_workload

    cfg = WorkloadConfig(**config)
    with cudnn_benchmark(True):
        step = get_workload(cfg.name, adapters).build(cfg)
        for _ in range(warmup):
            step()
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        step()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


def config_dict(config: Any) -> dict[str, Any]:
    """A WorkloadConfig as the JSON-able dict the subprocess rebuilds it from."""
    return asdict(config)


if __name__ == "__main__":
    run_step(json.loads(sys.argv[1]), tuple(sys.argv[2:]))
