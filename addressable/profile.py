"""Stage 2: run a workload, time its steps, profile some of them, and write a run folder.

Each repeat runs timed unprofiled steps (CUDA events, or perf_counter on the CPU), then
profiled steps under torch.profiler (each one a ProfilerStep#N). A breakdown is computed
per repeat for the spread; the run's breakdown is over all profiled steps. Models too big
for one GPU can be profiled at two depths and extrapolated linearly to their full depth.
Under torchrun (`--nproc N`) every rank profiles itself; addressable.distributed aggregates.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import yaml

from addressable import distributed
from addressable.atomic import atomic_dir, free_path, write_text
from addressable.breakdown import BASIS_GPU, Breakdown, breakdown_of_trace
from addressable.errors import AddressableError
from addressable.quiet import quiet_profiler
from addressable.taxonomy import Taxonomy, load_taxonomy
from addressable.timeline import TimelineResult
from addressable.trace import load_trace
from addressable.workload import DTYPES, MODES, Step, WorkloadConfig, WorkloadSpec, get_workload

DEVICES = ("auto", "cuda", "cpu")


@dataclass(frozen=True)
class Measurement:
    """How many steps to run: warm-up once, then per repeat timed and profiled steps."""

    warmup: int
    steps: int  # timed, unprofiled steps per repeat
    profile_steps: int  # profiled steps per repeat
    repeats: int


GPU_DEFAULTS = Measurement(warmup=10, steps=20, profile_steps=5, repeats=3)
CPU_DEFAULTS = Measurement(warmup=1, steps=1, profile_steps=1, repeats=2)  # a CPU step can take seconds


@dataclass
class ProfileResult:
    """What `profile_workload` measured and where it wrote it."""

    breakdown: Breakdown  # over all profiled steps (extrapolated to full depth when asked)
    run: dict[str, Any]  # the run keys of breakdown.json
    path: Path  # the run folder
    manifest: dict[str, Any] = field(default_factory=dict)


def default_measurement(device: str) -> Measurement:
    """The default warm-up, steps, profiled steps and repeats for a device (GPU or CPU)."""
    return GPU_DEFAULTS if device == "cuda" else CPU_DEFAULTS


def parse_options(values: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """KEY=VALUE strings -> dict, values read as YAML scalars (32 -> int, true -> bool)."""
    out = {}
    for v in values:
        key, sep, raw = v.partition("=")
        if not sep or not key.strip():
            raise AddressableError(f"--option takes KEY=VALUE, got '{v}'")
        try:
            out[key.strip()] = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            out[key.strip()] = raw
    return out


def parse_layers_subset(value: str) -> tuple[int, int]:
    """'L1,L2' -> (L1, L2) with 0 < L1 < L2."""
    try:
        l1, l2 = (int(x) for x in value.split(","))
    except ValueError:
        raise AddressableError(f"--layers-subset takes two depths L1,L2, got '{value}'") from None
    if not 0 < l1 < l2:
        raise AddressableError(f"--layers-subset needs 0 < L1 < L2, got {l1},{l2}")
    return l1, l2


def resolve_device(device: str) -> str:
    """"cuda" or "cpu" from "auto", "cuda" or "cpu"; refuses cuda without a CUDA GPU."""
    if device not in DEVICES:
        raise AddressableError(f"unknown device '{device}' (use one of {', '.join(DEVICES)})")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise AddressableError("--device cuda was asked for but no CUDA GPU is available (use --device auto or cpu)")
    return device


def resolve_config(workload: str, mode: str | None = None, batch: int | None = None,
                   seq_len: int | None = None, dtype: str | None = None, device: str = "auto",
                   compile: bool = False, options: dict[str, Any] | None = None,
                   adapters: tuple[str, ...] = ()) -> WorkloadConfig:
    """Fill in a workload's defaults and check the combination; bad input raises AddressableError.

    On the CPU the default dtype is fp32 (bf16 can still be asked for; fp16 cannot).
    """
    spec = get_workload(workload, adapters)
    dev = resolve_device(device)
    mode = mode or spec.default_mode
    if mode not in MODES or mode not in spec.modes:
        raise AddressableError(f"{spec.name} has no mode '{mode}' (modes: {', '.join(spec.modes)})")
    if dtype is None:
        dtype = "fp32" if dev == "cpu" and "fp32" in spec.dtypes else spec.default_dtype
    if dtype not in DTYPES or dtype not in spec.dtypes:
        raise AddressableError(f"{spec.name} does not run in {dtype} (dtypes: {', '.join(spec.dtypes)})")
    if dtype == "fp16" and dev == "cpu":
        raise AddressableError("fp16 is not supported on the CPU; use --dtype bf16 or fp32")
    if seq_len is not None and spec.default_seq_len is None:
        raise AddressableError(f"{spec.name} takes no --seq-len")
    spec.check_options(options or {})
    batch = spec.default_batch if batch is None else batch
    if batch < 1 or (seq_len is not None and seq_len < 1):
        raise AddressableError("--batch and --seq-len must be positive")
    return WorkloadConfig(name=spec.name, mode=mode, batch=batch, dtype=dtype, device=dev,
                          seq_len=spec.default_seq_len if seq_len is None else seq_len,
                          compile=compile, options=dict(options or {}))


def run_name(config: WorkloadConfig, layers_subset: tuple[int, int] | None = None) -> str:
    """Default run folder name, e.g. resnet50-train-b64-bf16-cuda."""
    parts = [config.name, config.mode, f"b{config.batch}"]
    if config.seq_len is not None:
        parts.append(f"s{config.seq_len}")
    parts += [config.dtype, config.device]
    if config.compile:
        parts.append("compile")
    parts += [f"{k}{v}" for k, v in sorted(config.options.items())]
    if layers_subset:
        parts.append(f"extrap{layers_subset[0]}-{layers_subset[1]}")
    return "-".join(str(p).replace(os.sep, "_").replace(" ", "") for p in parts)


def run_folder(config: WorkloadConfig, out: str | Path = "outputs", name: str | None = None,
               layers_subset: tuple[int, int] | None = None, world: int = 1, force: bool = False,
               progress: Callable[[str], None] | None = None) -> Path:
    """The run folder `out/NAME`: an existing one is replaced only with `force`, else NAME-2, NAME-3, ... is used."""
    if name is None:
        name = f"{run_name(config)}-np{world}" if world > 1 else run_name(config, layers_subset)
    folder = Path(out) / name
    if force:
        return folder
    free = free_path(folder)
    if free != folder and progress:
        progress(f"{folder} exists: writing {free} (--force replaces it)")
    return free


# --------------------------------------------------------------------------- measuring


@dataclass
class _Measured:
    """One workload instance measured: a breakdown per repeat, step times, the last trace."""

    config: WorkloadConfig
    repeats: list[Breakdown]
    step_time_ms: list[float]  # median unprofiled step time per repeat
    steps: pd.DataFrame  # repeat, step, time_ms, profiled
    trace: Path


def _timed(step: Step, n: int, cuda: bool, after: Callable[[int], None] | None = None,
           sync: bool = True) -> list[float]:
    """Run n steps, return each one's time in ms (CUDA events on the GPU, perf_counter on the CPU).

    Under several processes (and with `sync`) the steps are bracketed by synchronize + barrier and
    each step's time is the maximum across ranks.
    """
    if sync:
        distributed.barrier()
    times = _timed_steps(step, n, cuda, after)
    if sync:
        distributed.barrier()
        times = distributed.max_across_ranks(times)
    return times


def _timed_steps(step: Step, n: int, cuda: bool, after: Callable[[int], None] | None) -> list[float]:
    if cuda:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
        torch.cuda.synchronize()
        for i, (start, end) in enumerate(events):
            start.record()
            step()
            end.record()
            if after:
                if i == n - 1:
                    torch.cuda.synchronize()
                after(i)
        torch.cuda.synchronize()
        return [start.elapsed_time(end) for start, end in events]
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
        if after:
            after(i)
    return times


def _profiled(step: Step, n: int, cuda: bool, path: Path) -> list[float]:
    """Run n steps under torch.profiler, one ProfilerStep#N each; export the trace to path."""
    acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
    warm = 1 if cuda else 0  # a CUPTI warm-up step on the GPU; the CPU profiler needs none
    distributed.barrier()  # outside the profiler, so no barrier collective lands in the trace
    with quiet_profiler(), torch.profiler.profile(
            activities=acts, schedule=torch.profiler.schedule(wait=0, warmup=warm, active=n, repeat=1),
            on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
        for _ in range(warm):
            step()
            torch.cuda.synchronize()  # the warm-up step's kernels must not spill into the recorded steps
            prof.step()
        times = _timed(step, n, cuda, after=lambda _: prof.step(), sync=False)
    distributed.barrier()
    if not path.is_file():
        raise AddressableError(f"the profiler wrote no trace for {path.parent.name}")
    return distributed.max_across_ranks(times)


def _measure(spec: WorkloadSpec, cfg: WorkloadConfig, m: Measurement, workdir: Path, tax: Taxonomy,
             progress: Callable[[str], None]) -> _Measured:
    cuda = cfg.device == "cuda"
    torch.manual_seed(0)
    step = spec.build(cfg)
    label = f"{cfg.name}" + (f" ({cfg.options['layers']} layers)" if "layers" in cfg.options else "")
    progress(f"{label}: warm-up, {m.warmup} step{'s' * (m.warmup != 1)}")
    _timed(step, m.warmup, cuda)
    repeats, medians, rows, trace = [], [], [], workdir / "trace.json.gz"
    for r in range(m.repeats):
        timed = _timed(step, m.steps, cuda)
        path = workdir / f".trace.r{r}.json.gz"
        prof = _profiled(step, m.profile_steps, cuda, path)
        b = breakdown_of_trace(load_trace(path), tax)
        b.n_steps = m.profile_steps
        if r == m.repeats - 1:
            os.replace(path, trace)
        else:
            path.unlink()
        repeats.append(b)
        medians.append(float(np.median(timed)))
        rows += [(r, i, t, False) for i, t in enumerate(timed)]
        rows += [(r, m.steps + i, t, True) for i, t in enumerate(prof)]
        rec = _repeat_record(b, medians[-1])
        progress(f"{label}: repeat {r + 1}/{m.repeats}: step {medians[-1]:,.1f} ms, addressable "
                 f"{rec['addressable_fraction']:.1%} of {_basis_words(b.basis)}, "
                 f"{rec['addressable_fraction_wall']:.1%} of wall time")
    steps = pd.DataFrame(rows, columns=["repeat", "step", "time_ms", "profiled"])
    return _Measured(cfg, repeats, medians, steps, trace)


def _basis_words(basis: str) -> str:
    return "GPU kernel time" if basis == BASIS_GPU else "CPU-op self time"


# --------------------------------------------------------------------------- aggregating


def _assemble(kernels: pd.DataFrame, phases: pd.DataFrame | None, n_steps: int, basis: str,
              source: str, categories: pd.DataFrame | None = None) -> Breakdown:
    """A Breakdown from per-kernel totals (and optionally per-category totals, else summed)."""
    kernels = kernels[kernels["time_us"] > 0]
    if categories is None:
        categories = kernels.groupby(["category", "class"], sort=False)[["time_us", "count"]].sum().reset_index()
    categories = categories[categories["time_us"] > 0]
    total = float(categories["time_us"].sum())
    cats = categories.assign(share=categories["time_us"] / total if total else 0.0,
                             count=categories["count"].round().astype("int64"))
    cats = cats.sort_values(["class", "time_us"], ascending=[True, False]).reset_index(drop=True)
    kern = kernels.assign(share=kernels["time_us"] / total if total else 0.0,
                          count=kernels["count"].round().astype("int64"))
    kern = kern.sort_values("time_us", ascending=False).reset_index(drop=True)
    return Breakdown(cats[["category", "class", "time_us", "share", "count"]],
                     kern[["name", "category", "class", "time_us", "count", "share"]],
                     total, basis, n_steps, phases, source)


def combine(repeats: list[Breakdown]) -> Breakdown:
    """One Breakdown over the profiled steps of all repeats."""
    kernels = (pd.concat([b.kernels for b in repeats], ignore_index=True)
               .groupby(["name", "category", "class"], sort=False)[["time_us", "count"]].sum().reset_index())
    phases = [b.phases for b in repeats if b.phases is not None and not b.phases.empty]
    ph = (pd.concat(phases, ignore_index=True).astype({"phase": str, "category": str, "class": str})
          .groupby(["phase", "category", "class"], sort=False)["time_us"].sum().reset_index()) if phases else None
    b = _assemble(kernels, ph, sum(b.n_steps or 0 for b in repeats), repeats[0].basis, repeats[-1].source)
    if all(r.timeline is not None for r in repeats):
        b.timeline = combine_timelines([r.timeline for r in repeats])
    return b


def combine_timelines(ts: list[TimelineResult]) -> TimelineResult:
    """Timeline accounting of several traces taken one after another (each device's times add up)."""
    dev = pd.concat([t.devices for t in ts], ignore_index=True)
    dev = dev.assign(repl_summed=dev["addressable_fraction_summed"] * dev["summed_us"],
                     repl_exposed=dev["addressable_fraction_exposed"] * dev["busy_us"])
    add = ["n_kernels", "span_us", "busy_us", "idle_us", "summed_us", "cross_stream_overlap_us",
           "repl_summed", "repl_exposed"]
    dev = dev.groupby("device").agg({**dict.fromkeys(add, "sum"), "n_streams": "max"}).reset_index()
    dev["addressable_fraction_summed"] = (dev["repl_summed"] / dev["summed_us"]).where(dev["summed_us"] > 0, 0.0)
    dev["addressable_fraction_exposed"] = (dev["repl_exposed"] / dev["busy_us"]).where(dev["busy_us"] > 0, 0.0)
    cats = (pd.concat([t.categories for t in ts], ignore_index=True)
            .groupby(["category", "class"], sort=False)[["summed_us", "active_us", "exclusive_us",
                                                         "overlapped_us", "exposed_us"]].sum().reset_index())
    busy, summed = sum(t.busy_us for t in ts), sum(t.summed_us for t in ts)
    cats["exposed_share"] = cats["exposed_us"] / busy if busy else 0.0
    cats = cats.sort_values(["class", "exposed_us"], ascending=[True, False]).reset_index(drop=True)
    repl = cats["class"] == "replaceable"
    cross = sum(t.cross_stream_overlap_us for t in ts)
    return TimelineResult(
        devices=dev[list(ts[0].devices.columns)], categories=cats, busy_us=busy,
        idle_us=sum(t.idle_us for t in ts), span_us=sum(t.span_us for t in ts), summed_us=summed,
        cross_stream_overlap_us=cross, streams_overlap=cross > 0,
        addressable_fraction_exposed=float(cats.loc[repl, "exposed_us"].sum() / busy) if busy else 0.0,
        addressable_fraction_summed=float(cats.loc[repl, "summed_us"].sum() / summed) if summed else 0.0,
        communication_exposed_us=sum(t.communication_exposed_us for t in ts),
        communication_overlapped_us=sum(t.communication_overlapped_us for t in ts))


def _per_step(b: Breakdown) -> dict[str, float]:
    n = b.n_steps or 1
    return {str(c): float(t) / n for c, t in zip(b.categories["category"], b.categories["time_us"], strict=True)}


def _repeat_record(b: Breakdown, step_time_ms: float) -> dict[str, Any]:
    per_step_us = b.total_time_us / (b.n_steps or 1)
    repl_us = b.time_of("replaceable") / (b.n_steps or 1)
    return {"step_time_ms": step_time_ms, "kernel_time_per_step_us": per_step_us,
            "addressable_fraction": b.addressable_fraction,
            "addressable_fraction_wall": repl_us / (step_time_ms * 1e3) if step_time_ms > 0 else 0.0,
            "category_time_per_step_us": _per_step(b)}


def run_keys(spec: WorkloadSpec, cfg: WorkloadConfig, b: Breakdown, repeats: list[Breakdown],
             repeat_step_ms: list[float], step_time_ms: float) -> dict[str, Any]:
    """The run keys of breakdown.json (see docs/CONVENTIONS.md)."""
    recs = [_repeat_record(r, s) for r, s in zip(repeats, repeat_step_ms, strict=True)]
    frac = [r["addressable_fraction"] for r in recs]
    wall = [r["addressable_fraction_wall"] for r in recs]
    n = b.n_steps or 1
    keys: dict[str, Any] = {
        "workload": cfg.name, "family": spec.family, "mode": cfg.mode, "device": cfg.device,
        "batch": cfg.batch, "seq_len": cfg.seq_len, "dtype": cfg.dtype, "compile": cfg.compile,
        "options": cfg.options,
        "step_time_ms": step_time_ms,
        "kernel_time_per_step_us": b.total_time_us / n,
        "addressable_fraction_wall": b.time_of("replaceable") / n / (step_time_ms * 1e3) if step_time_ms > 0 else 0.0,
        "repeats": recs,
        "addressable_fraction_range": [min(frac), max(frac)],
        "addressable_fraction_wall_range": [min(wall), max(wall)],
    }
    if spec.full_layers:
        keys["layers"] = cfg.options.get("layers", spec.full_layers)
    return keys


# --------------------------------------------------------------------------- extrapolating


def extrapolate(y1: Any, y2: Any, l1: int, l2: int, n: int) -> Any:
    """The line through (l1, y1) and (l2, y2), evaluated at n and clipped at 0 (scalars or pandas)."""
    y = y1 + (y2 - y1) * ((n - l1) / (l2 - l1))
    return y.clip(lower=0) if isinstance(y, pd.Series | pd.DataFrame) else max(float(y), 0.0)


def extrapolate_breakdown(b1: Breakdown, b2: Breakdown, l1: int, l2: int, n: int) -> Breakdown:
    """Fit each category's (and kernel's, phase's) time per step as a + b·layers; evaluate at n.

    The result has b2's number of steps; its categories come from the per-category fits.
    """
    steps = b2.n_steps or 1

    def fit(d1: pd.DataFrame, d2: pd.DataFrame, keys: list[str], cols: list[str]) -> pd.DataFrame:
        t1 = d1.astype({k: str for k in keys}).groupby(keys)[cols].sum() / (b1.n_steps or 1)
        t2 = d2.astype({k: str for k in keys}).groupby(keys)[cols].sum() / steps
        t1, t2 = t1.align(t2, join="outer", fill_value=0.0)
        return (extrapolate(t1, t2, l1, l2, n) * steps).reset_index()

    cats = fit(b1.categories, b2.categories, ["category", "class"], ["time_us", "count"])
    kernels = fit(b1.kernels, b2.kernels, ["name", "category", "class"], ["time_us", "count"])
    phases = None
    if b1.phases is not None and b2.phases is not None and not (b1.phases.empty or b2.phases.empty):
        phases = fit(b1.phases, b2.phases, ["phase", "category", "class"], ["time_us"])
    return _assemble(kernels, phases, steps, b2.basis, f"extrapolated {l1},{l2} -> {n} layers", cats)


# --------------------------------------------------------------------------- the run folder


def _git_revision() -> str | None:
    root = Path(__file__).resolve().parents[1]
    try:
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return rev + ("-dirty" if dirty else "")


def _driver_version() -> str | None:
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.splitlines()[0].strip() if out.strip() else None


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    except OSError:
        names = []
    return names[0] if names else (platform.processor() or platform.machine())


def manifest(cfg: WorkloadConfig, m: Measurement, argv: list[str] | None = None) -> dict[str, Any]:
    """Versions, hardware, git revision, argv and date of a run."""
    cuda = cfg.device == "cuda"
    return {
        "config": asdict(cfg),
        "measurement": asdict(m),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "driver": _driver_version() if cuda else None,
        "gpu": torch.cuda.get_device_name() if cuda else None,
        "cpu": _cpu_name(),
        "cpu_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "host": platform.node(),
        "git_revision": _git_revision(),
        "argv": list(sys.argv if argv is None else argv),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def _write_run(folder: Path, b: Breakdown, keys: dict[str, Any], steps: pd.DataFrame, man: dict[str, Any]) -> None:
    from addressable.runs import write_breakdown

    write_breakdown(b, folder, extra=keys)
    write_text(folder / "steps.csv", steps.to_csv(index=False))
    write_text(folder / "manifest.json", json.dumps(man, indent=2, default=str) + "\n")


@contextmanager
def _memory_errors(cfg: WorkloadConfig) -> Iterator[None]:
    """Out of memory -> one line naming the batch size that failed."""
    hint = f"out of memory running {cfg.name} {cfg.mode} at batch {cfg.batch} on {cfg.device}; " \
           f"try --batch {max(1, cfg.batch // 2)}"
    try:
        yield
    except torch.cuda.OutOfMemoryError:
        raise AddressableError(hint) from None
    except MemoryError:
        raise AddressableError(hint) from None
    except RuntimeError as e:
        if "can't allocate memory" in str(e) or "out of memory" in str(e).lower():
            raise AddressableError(hint) from None
        raise


@contextmanager
def _cudnn_benchmark(on: bool) -> Iterator[None]:
    old = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = on or old
    try:
        yield
    finally:
        torch.backends.cudnn.benchmark = old


def profile_workload(config: WorkloadConfig, warmup: int | None = None, steps: int | None = None,
                     repeats: int | None = None, out: str | Path = "outputs", *,
                     profile_steps: int | None = None, name: str | None = None,
                     layers_subset: tuple[int, int] | None = None, adapters: tuple[str, ...] = (),
                     taxonomy: Taxonomy | str | Path | None = None, argv: list[str] | None = None,
                     progress: Callable[[str], None] | None = None, force: bool = False) -> ProfileResult:
    """Measure one workload and write its run folder `out/<name>` atomically.

    Step counts left None take the device's defaults (GPU_DEFAULTS / CPU_DEFAULTS). An existing
    run folder of the same name is kept (the run goes to NAME-2, ...) unless `force`. With
    `layers_subset=(L1, L2)` the model is measured at both depths (options["layers"]) and
    every category's time per step is extrapolated linearly to the workload's full_layers;
    the two measured depths are kept as sub-runs layers<L>/ of the run folder. Under torchrun
    (WORLD_SIZE > 1) each rank writes `<run>/rank<k>/` and rank 0 the aggregate: see
    addressable.distributed.profile_ranks.
    """
    spec = get_workload(config.name, adapters)
    d = default_measurement(config.device)
    m = Measurement(d.warmup if warmup is None else warmup, d.steps if steps is None else steps,
                    d.profile_steps if profile_steps is None else profile_steps,
                    d.repeats if repeats is None else repeats)
    if min(m.steps, m.profile_steps, m.repeats) < 1 or m.warmup < 0:
        raise AddressableError("--steps, --profile-steps and --repeats must be at least 1, --warmup at least 0")
    depths: list[int | None] = [None]
    if layers_subset:
        l1, l2 = layers_subset
        if not spec.full_layers:
            raise AddressableError(f"{spec.name} cannot be profiled on a subset of layers (no full_layers)")
        if "layers" in config.options:
            raise AddressableError("give either --layers-subset or --option layers=N, not both")
        if not 0 < l1 < l2 <= spec.full_layers:
            raise AddressableError(f"--layers-subset needs 0 < L1 < L2 <= {spec.full_layers}, got {l1},{l2}")
        depths = [l1, l2]
    tax = taxonomy if isinstance(taxonomy, Taxonomy) else load_taxonomy(taxonomy)
    progress = progress or (lambda _: None)
    world = distributed.world_size()
    if world > 1:  # one of several torchrun processes: see addressable.distributed
        if layers_subset:
            raise AddressableError("--layers-subset cannot be combined with several processes (--nproc)")
        folder = run_folder(config, out, name, world=world, force=True)  # the launcher chose a free name
        return distributed.profile_ranks(spec, config, m, folder, tax, argv, progress)
    folder = run_folder(config, out, name, layers_subset, force=force, progress=progress)
    man = manifest(config, m, argv)

    with atomic_dir(folder) as tmp, _memory_errors(config), _cudnn_benchmark(config.device == "cuda"):
        measured = []
        for layers in depths:
            cfg = config if layers is None else replace(config, options={**config.options, "layers": layers})
            sub = tmp if layers is None else tmp / f"layers{layers}"
            sub.mkdir(exist_ok=True)
            res = _measure(spec, cfg, m, sub, tax, progress)
            measured.append(res)
            if layers is not None:
                b = combine(res.repeats)
                _write_run(sub, b, run_keys(spec, cfg, b, res.repeats, res.step_time_ms,
                                            float(res.steps.loc[~res.steps["profiled"], "time_ms"].median())),
                           res.steps, {**man, "config": asdict(cfg)})
        if layers_subset is None:
            res = measured[0]
            b, reps, rep_ms = combine(res.repeats), res.repeats, res.step_time_ms
            step_ms = float(res.steps.loc[~res.steps["profiled"], "time_ms"].median())
            steps_table = res.steps
        else:
            (l1, l2), n, (a, c) = layers_subset, spec.full_layers, measured
            b = extrapolate_breakdown(combine(a.repeats), combine(c.repeats), l1, l2, n)
            reps = [extrapolate_breakdown(x, y, l1, l2, n) for x, y in zip(a.repeats, c.repeats, strict=True)]
            rep_ms = [extrapolate(x, y, l1, l2, n) for x, y in zip(a.step_time_ms, c.step_time_ms, strict=True)]
            med = [float(r.steps.loc[~r.steps["profiled"], "time_ms"].median()) for r in measured]
            step_ms = extrapolate(med[0], med[1], l1, l2, n)
            steps_table = pd.concat([r.steps.assign(layers=L) for r, L in zip(measured, depths, strict=True)],
                                    ignore_index=True)
        keys = run_keys(spec, config, b, reps, rep_ms, step_ms)
        if layers_subset:
            keys["layers"] = spec.full_layers
            keys["extrapolated"] = {"from_layers": list(layers_subset), "to_layers": spec.full_layers}
        _write_run(tmp, b, keys, steps_table, man)
    return ProfileResult(b, keys, folder, man)


# --------------------------------------------------------------------------- validation


def _run_doc(run: ProfileResult | str | Path) -> dict[str, Any]:
    """breakdown.json's keys of a profiled run (read with addressable.runs.load_run for a folder)."""
    from addressable.runs import load_run

    if isinstance(run, ProfileResult):
        return {**run.breakdown.to_dict(), **run.run}
    return load_run(run).info


def validate_extrapolation(extrapolated: ProfileResult | str | Path, full: ProfileResult | str | Path) -> pd.DataFrame:
    """Compare an extrapolated run with a full-depth run of the same workload.

    One row per metric (`share:<category>` for every category, then addressable_fraction,
    addressable_fraction_wall, kernel_time_per_step_us, step_time_ms) with the extrapolated
    and full values, their difference and the relative error.
    """
    x, f = _run_doc(extrapolated), _run_doc(full)
    if "extrapolated" not in x:
        raise AddressableError("the first run is not an extrapolated run (no 'extrapolated' key)")
    sx = {c["category"]: c["share"] for c in x["categories"]}
    sf = {c["category"]: c["share"] for c in f["categories"]}
    cats = sorted(set(sx) | set(sf), key=lambda c: -max(sx.get(c, 0.0), sf.get(c, 0.0)))
    rows = [(f"share:{c}", sx.get(c, 0.0), sf.get(c, 0.0)) for c in cats]
    rows += [(k, x[k], f[k]) for k in ("addressable_fraction", "addressable_fraction_wall",
                                       "kernel_time_per_step_us", "step_time_ms")]
    df = pd.DataFrame(rows, columns=["metric", "extrapolated", "full"])
    df["error"] = df["extrapolated"] - df["full"]
    df["rel_error"] = np.where(df["full"] != 0, df["error"] / df["full"].where(df["full"] != 0, 1.0), np.nan)
    return df


# --------------------------------------------------------------------------- printing


def format_profile(res: ProfileResult, requested_device: str = "auto") -> str:
    """What the `profile` command prints: device, step counts, breakdown, fractions, run folder."""
    from addressable.report import format_breakdown

    r, m = res.run, Measurement(**res.manifest["measurement"])
    if r["device"] == "cuda":
        dev = f"Device: cuda ({res.manifest.get('gpu')}); the breakdown is over GPU kernel time."
    else:
        why = "no CUDA GPU found, so --device auto ran it on the CPU" if requested_device == "auto" else "as asked"
        dev = f"Device: cpu ({why}); the breakdown is over CPU-op self time, not GPU kernels."
    d = default_measurement(r["device"])
    counts = f"warm-up {m.warmup}, then {m.repeats} repeats × ({m.steps} timed + {m.profile_steps} profiled steps)"
    if m == d and r["device"] == "cpu":
        g = GPU_DEFAULTS
        counts += (f" — the CPU defaults, kept small because a CPU step can take a minute (GPU defaults: "
                   f"warm-up {g.warmup}, {g.repeats} × ({g.steps} + {g.profile_steps})); change with "
                   "--warmup/--steps/--profile-steps/--repeats")
    reps = r["repeats"]
    kern = float(np.median([x["addressable_fraction"] for x in reps]))
    wall = float(np.median([x["addressable_fraction_wall"] for x in reps]))
    (klo, khi), (wlo, whi) = r["addressable_fraction_range"], r["addressable_fraction_wall_range"]
    basis = _basis_words(res.breakdown.basis)
    what = f"{r['workload']} {r['mode']}, batch {r['batch']}" + (f", seq {r['seq_len']}" if r.get("seq_len") else "")
    lines = [dev, f"Steps: {counts}", "", format_breakdown(res.breakdown, 5), ""]
    if "extrapolated" in r:
        x = r["extrapolated"]
        lines.append(f"Extrapolated linearly from {x['from_layers'][0]} and {x['from_layers'][1]} layers "
                     f"to {x['to_layers']} (measured depths in layers<L>/ of the run folder)")
    lines += [
        f"{what}, {r['dtype']} on {r['device']}: step time {r['step_time_ms']:,.2f} ms (median unprofiled step)",
        f"{basis[0].upper() + basis[1:]} per profiled step: {r['kernel_time_per_step_us'] / 1e3:,.2f} ms "
        f"({r['kernel_time_per_step_us'] / 1e3 / max(r['step_time_ms'], 1e-9):.0%} of the step time)",
        f"Addressable fraction of {basis}: {kern:.1%}  (median of {len(reps)} repeats, range {klo:.1%}–{khi:.1%})",
        f"Addressable fraction of wall time: {wall:.1%}  (median of {len(reps)} repeats, range {wlo:.1%}–{whi:.1%})",
    ]
    phases = res.breakdown.to_dict().get("phases")
    if phases:
        total = sum(p["time_us"] for p in phases.values()) or 1.0
        lines.append("Phases: " + ", ".join(f"{k} {v['time_us'] / total:.0%} of time ({v['addressable_fraction']:.1%} "
                                            "addressable)" for k, v in phases.items()))
    lines.append(f"Run folder: {res.path}")
    return "\n".join(lines)
