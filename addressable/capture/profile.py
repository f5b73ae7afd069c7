"""Stage 2: run a workload, time its steps, profile some of them, and write a run folder.

Each repeat runs timed unprofiled steps (CUDA events, or perf_counter on the CPU), then
profiled steps under torch.profiler (each one a ProfilerStep#N). A breakdown is computed
per repeat for the spread; the run's breakdown is over all profiled steps. Models too big
for one GPU can be profiled at two depths and extrapolated linearly to their full depth.
Under torchrun (`--nproc N`) every rank profiles itself (profile_ranks); addressable.capture.distributed
aggregates. The measuring itself is addressable.capture.measure.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.distributed as dist
import yaml

from addressable.capture import distributed
from addressable.capture.measure import (
    Measured,
    Measurement,
    basis_words,
    combine,
    cudnn_benchmark,
    default_measurement,
    manifest,
    measure,
    measurement,
    memory_errors,
    over_budget,
    run_keys,
)
from addressable.capture.workload import WorkloadConfig, WorkloadSpec, get_workload
from addressable.classify.breakdown import BASIS_GPU, Breakdown, breakdown_from_tables
from addressable.classify.modules import format_candidates
from addressable.classify.ranks import TOP_LEVEL, aggregate_breakdowns
from addressable.classify.taxonomy import Taxonomy, load_taxonomy
from addressable.core.atomic import atomic_dir, free_path
from addressable.core.device import resolve_device
from addressable.core.errors import AddressableError
from addressable.roofline.calibrate import session_peaks
from addressable.roofline.model import format_fusion, roofline_of_trace, stored_fusion
from addressable.runs.folder import TRACE_FILE, load_run, write_ranks_table, write_run


@dataclass
class ProfileResult:
    """What `profile_workload` measured and where it wrote it."""

    breakdown: Breakdown  # over all profiled steps (extrapolated to full depth when asked)
    run: dict[str, Any]  # the run keys of breakdown.json
    path: Path  # the run folder
    manifest: dict[str, Any] = field(default_factory=dict)


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
    if mode not in spec.modes:
        raise AddressableError(f"{spec.name} has no mode '{mode}' (modes: {', '.join(spec.modes)})")
    if dtype is None:
        dtype = "fp32" if dev == "cpu" and "fp32" in spec.dtypes else spec.default_dtype
    if dtype not in spec.dtypes:
        raise AddressableError(f"{spec.name} does not run in {dtype} (dtypes: {', '.join(spec.dtypes)})")
    if seq_len is not None and spec.default_seq_len is None:
        raise AddressableError(f"{spec.name} takes no --seq-len")
    spec.check_options(options or {})
    batch = spec.default_batch if batch is None else batch
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
    return breakdown_from_tables(kernels[kernels["time_us"] > 0], b2.basis, steps,
                                 f"extrapolated {l1},{l2} -> {n} layers", phases=phases,
                                 categories=cats[cats["time_us"] > 0])


def check_depth_fit(l1: int, l2: int, n: int, step1: list[float], step2: list[float], work1: list[float],
                    work2: list[float], medians: tuple[float, float] | None = None) -> dict[str, Any]:
    """Check two measured depths before their line is extrapolated to n layers (docs/extrapolation.md).

    step1, step2: each repeat's median unprofiled step time (ms) at l1 and l2 layers; work1, work2: each
    repeat's work per profiled step (µs); `medians`: the step times the run's line goes through (default: the
    medians of step1 and step2). A deeper model is not faster, so a step time that does not grow
    with depth (the medians, or any one repeat's pair) is refused: its line extrapolates to a step
    at or below the shallow model's, down to 0. Returns {"step_time_ms_range": [lo, hi], "warnings": [...]}:
    the extrapolated step time at the two extreme slopes the repeats allow, and what makes a fit shaky
    (depths whose repeats overlap, work that does not grow, time per layer that grows with depth).
    """
    s1, s2 = np.asarray(step1, float), np.asarray(step2, float)
    advice = ("the extra layers' time is below the timing noise: raise --steps or --repeats, choose depths "
              "further apart, or profile on a quieter machine")
    med1, med2 = medians or (float(np.median(s1)), float(np.median(s2)))
    falls = [(f"repeat {i + 1}'s step", a, b) for i, (a, b) in enumerate(zip(s1, s2, strict=True)) if b <= a]
    if med2 <= med1 or falls:
        which, a, b = ("the median step", med1, med2) if med2 <= med1 else falls[0]
        raise AddressableError(f"--layers-subset {l1},{l2}: {which} at {l2} layers ({b:,.1f} ms) is not slower "
                               f"than at {l1} ({a:,.1f} ms), so no line through them extrapolates to {n} layers; "
                               + advice)
    warnings = []
    if s1.max() >= s2.min():
        warnings.append(f"the step times at {l1} layers ({_ms_span(s1)}) and at {l2} ({_ms_span(s2)}) overlap across "
                        f"repeats: {advice}")
    if np.median(work2) <= np.median(work1):
        warnings.append(f"the work per step does not grow from {l1} to {l2} layers ({np.median(work1) / 1e3:,.1f} "
                        f"-> {np.median(work2) / 1e3:,.1f} ms): the extrapolated breakdown is noise; {advice}")
    if s1.max() / l1 < s2.min() / l2:
        warnings.append(f"the time per layer grows with depth ({s1.max() / l1:,.1f} ms/layer at {l1} layers, "
                        f"{s2.min() / l2:,.1f} at {l2}, at the least favourable repeats): no line with a "
                        "non-negative fixed cost fits, so the extrapolation is unreliable")
    lo, hi = extrapolate(s1.max(), s2.min(), l1, l2, n), extrapolate(s1.min(), s2.max(), l1, l2, n)
    return {"step_time_ms_range": [lo, hi], "warnings": warnings}


def _median_step(m: Measured) -> float:
    """The median unprofiled step time (ms) over all of m's repeats."""
    return float(m.steps.loc[~m.steps["profiled"], "time_ms"].median())


def _extrapolated(measured: list[Measured], layers_subset: tuple[int, int], n: int, progress: Callable[[str], None]
                  ) -> tuple[Breakdown, list[Breakdown], list[float], float, pd.DataFrame, dict[str, Any]]:
    """The two depths' runs, checked (check_depth_fit) and extrapolated to n layers: the breakdown, each repeat's,
    each repeat's step time, the step time, the steps table of both depths, and the fit's range and warnings."""
    (l1, l2), (a, c) = layers_subset, measured
    fit = check_depth_fit(l1, l2, n, a.step_time_ms, c.step_time_ms, _work_per_step(a), _work_per_step(c),
                          medians=(_median_step(a), _median_step(c)))
    for w in fit["warnings"]:
        progress(f"warning: {w}")
    b = extrapolate_breakdown(combine(a.repeats), combine(c.repeats), l1, l2, n)
    reps = [extrapolate_breakdown(x, y, l1, l2, n) for x, y in zip(a.repeats, c.repeats, strict=True)]
    rep_ms = [extrapolate(x, y, l1, l2, n) for x, y in zip(a.step_time_ms, c.step_time_ms, strict=True)]
    steps = pd.concat([a.steps.assign(layers=l1), c.steps.assign(layers=l2)], ignore_index=True)
    return b, reps, rep_ms, extrapolate(_median_step(a), _median_step(c), l1, l2, n), steps, fit


def _work_per_step(m: Measured) -> list[float]:
    return [b.total_time_us / (b.n_steps or 1) for b in m.repeats]


def _ms_span(x: np.ndarray) -> str:
    return f"{x.min():,.1f}–{x.max():,.1f} ms" if len(x) > 1 else f"{x[0]:,.1f} ms"


def profile_workload(config: WorkloadConfig, measurement: Measurement, out: str | Path = "outputs", *,
                     name: str | None = None, layers_subset: tuple[int, int] | None = None,
                     adapters: tuple[str, ...] = (), taxonomy: Taxonomy | str | Path | None = None,
                     argv: list[str] | None = None, progress: Callable[[str], None] | None = None,
                     force: bool = False, module_cpu: bool | None = None) -> ProfileResult:
    """Measure one workload (`config`: what runs; `measurement`: how, e.g. from measure.measurement)
    and write its run folder `out/<name>` atomically.

    The counts `measurement.fixed` leaves free are lowered after warm-up to fit its budget. An existing
    run folder of the same name is kept (the run goes to NAME-2, ...) unless `force`. With
    `layers_subset=(L1, L2)` the model is measured at both depths (options["layers"]) and
    every category's time per step is extrapolated linearly to the workload's full_layers;
    the two measured depths are kept as sub-runs layers<L>/ of the run folder. Under torchrun
    (WORLD_SIZE > 1) each rank writes `<run>/rank<k>/` and rank 0 the aggregate: see profile_ranks.
    `module_cpu` runs the profiler-free module pass (module_cpu.csv, for the replay); None: on a GPU only.
    """
    spec = get_workload(config.name, adapters)
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
    if world > 1:  # one of several torchrun processes: see addressable.capture.distributed
        if layers_subset:
            raise AddressableError("--layers-subset cannot be combined with several processes (--nproc)")
        folder = run_folder(config, out, name, world=world, force=True)  # the launcher chose a free name
        return profile_ranks(spec, config, measurement, folder, tax, argv, progress)
    folder = run_folder(config, out, name, layers_subset, force=force, progress=progress)
    man = manifest(config, measurement, argv)
    if config.device == "cuda":  # the roofline's peaks (addressable.roofline.calibrate), measured once per process
        man["peaks"] = session_peaks().to_dict()

    with atomic_dir(folder) as tmp, memory_errors(config, layers_subset), cudnn_benchmark(config.device == "cuda"):
        measured = []
        for layers in depths:
            cfg = config if layers is None else replace(config, options={**config.options, "layers": layers})
            sub = tmp if layers is None else tmp / f"layers{layers}"
            sub.mkdir(exist_ok=True)
            res = measure(spec, cfg, measurement, sub, tax, progress,
                          record_io=layers_subset is None and config.device == "cuda",
                          kept_in=folder / sub.relative_to(tmp),
                          record_cpu=layers_subset is None and (config.device == "cuda" if module_cpu is None else module_cpu))
            measured.append(res)
            if layers is not None:
                b = combine(res.repeats)
                write_run(sub, b, run_keys(spec, cfg, b, res.repeats, res.step_time_ms, _median_step(res)),
                          res.steps, {**man, "config": asdict(cfg), "measurement": asdict(res.measurement)})
        if layers_subset is None:
            res = measured[0]
            b, reps, rep_ms, step_ms = combine(res.repeats), res.repeats, res.step_time_ms, _median_step(res)
            steps_table, host_ms = res.steps, res.host_ms
            fit: dict[str, Any] = {}  # no extrapolation
        else:
            assert spec.full_layers, "checked with layers_subset above"
            b, reps, rep_ms, step_ms, steps_table, fit = _extrapolated(measured, layers_subset, spec.full_layers,
                                                                       progress)
            host_ms = None  # measured at the subset's depths: the full model's CPU time is not
        keys = run_keys(spec, config, b, reps, rep_ms, step_ms, host_ms)
        man["measurement"] = asdict(measured[-1].measurement)  # the counts run (the deeper model's, extrapolating)
        if layers_subset:
            keys["layers"] = spec.full_layers
            keys["extrapolated"] = {"from_layers": list(layers_subset), "to_layers": spec.full_layers, **fit}
        elif config.device == "cuda":  # the last repeat's trace against the calibrated peaks
            keys["roofline"] = roofline_of_trace(tmp / TRACE_FILE, tax, manifest=man, step_time_ms=step_ms,
                                                 module_io=measured[0].module_io).to_dict()
        write_run(tmp, b, keys, steps_table, man, module_io=measured[0].module_io if layers_subset is None else None,
                  module_cpu=measured[0].module_cpu if layers_subset is None else None)
    return ProfileResult(b, keys, folder, man)


def profile_ranks(spec: WorkloadSpec, config: WorkloadConfig, m: Measurement, folder: Path, tax: Taxonomy,
                  argv: list[str] | None, progress: Callable[[str], None]) -> ProfileResult:
    """Profile this rank into `<folder>/rank<k>/`; rank 0 then writes the aggregate into `folder`.

    Every rank returns its own ProfileResult, except rank 0, which returns the top-level one.
    """
    with distributed.process_group(config.device):
        r, n = dist.get_rank(), dist.get_world_size()
        distributed.check_workload(spec, n)
        backend = dist.get_backend()
        man = manifest(config, m, argv)  # after process_group: the GPU named is this rank's
        with atomic_dir(folder) if r == 0 else nullcontext() as tmp:
            box = [str(tmp) if r == 0 else None]
            dist.broadcast_object_list(box, src=0)
            assert box[0] is not None  # rank 0's folder, broadcast to every rank
            sub = Path(box[0]) / f"rank{r}"
            sub.mkdir()
            with memory_errors(config), cudnn_benchmark(config.device == "cuda"):
                res = measure(spec, config, m, sub, tax, lambda line: progress(f"[rank {r}] {line}"),
                              kept_in=folder / sub.name)
            b = combine(res.repeats)
            keys = run_keys(spec, config, b, res.repeats, res.step_time_ms,
                            float(res.steps.loc[~res.steps["profiled"], "time_ms"].median()), res.host_ms)
            info = {"world_size": n, "rank": r, "local_rank": distributed.local_rank(), "backend": backend,
                    "strategy": distributed.strategy()}
            keys = {**keys, **info}
            man["measurement"] = asdict(res.measurement)
            rank_man = {**man, "distributed": info,
                        "device_index": torch.cuda.current_device() if config.device == "cuda" else None}
            write_run(sub, b, keys, res.steps, rank_man)
            distributed.barrier()
            gathered: list[Any] = [None] * n  # filled in on rank 0 only
            dist.gather_object((b, keys), gathered if r == 0 else None, dst=0)
            if r != 0:
                return ProfileResult(b, keys, folder / f"rank{r}", rank_man)
            assert tmp is not None  # rank 0 writes in the atomic folder
            breakdowns = [g[0] for g in gathered]
            agg = aggregate_breakdowns(breakdowns, [g[1] for g in gathered])
            top = {**{k: v for k, v in keys.items() if k not in ("rank", "local_rank")},
                   "distributed": {**agg, "backend": backend, "strategy": distributed.strategy(),
                                   "top_level": TOP_LEVEL}}
            top_man = {**man, "distributed": {"world_size": n, "backend": backend, "strategy": distributed.strategy(),
                                              "top_level": TOP_LEVEL}}
            write_run(tmp, b, top, res.steps, top_man)
            write_ranks_table(tmp, pd.DataFrame(agg["ranks"]))
    return ProfileResult(b, top, folder, top_man)


# --------------------------------------------------------------------------- the profile command


def profile_command(workload: str, *, mode: str | None = None, batch: int | None = None, seq_len: int | None = None,
                    dtype: str | None = None, device: str = "auto", warmup: int | None = None,
                    steps: int | None = None, profile_steps: int | None = None, repeats: int | None = None,
                    out: str | Path = "outputs", name: str | None = None, compile: bool = False,
                    adapters: tuple[str, ...] = (), options: tuple[str, ...] = (), layers_subset: str | None = None,
                    nproc: int | None = None, force: bool = False, budget: float | None = None,
                    ncu_top: int | None = None, ncu_flops: bool = True, relaunch: list[str] | None = None,
                    argv: list[str] | None = None, echo: Callable[[str], None] = print,
                    progress: Callable[[str], None] | None = None) -> int:
    """`addressable profile`: check the request, then profile one process, or re-launch `relaunch` (the
    command's own arguments, less --nproc, --name and --force) under torchrun in `nproc` processes, or
    (with `ncu_top`) also measure the top kernels with Nsight Compute. Prints through `echo`; returns
    the exit code. A torchrun child whose run is written ends here (distributed.end_child)."""
    cfg = resolve_config(workload, mode, batch, seq_len, dtype, device, compile, parse_options(options), adapters)
    m = measurement(cfg.device, warmup, steps, profile_steps, repeats, budget)
    subset = parse_layers_subset(layers_subset) if layers_subset else None
    if ncu_top is not None:
        _check_ncu_request(cfg, nproc, subset)
    if nproc is not None and distributed.check_nproc(get_workload(workload, adapters), nproc, subset):
        # re-launch this command under torchrun, into a folder chosen here; the children see WORLD_SIZE
        folder = run_folder(cfg, out, name, world=nproc, force=force, progress=progress)
        return distributed.launch(nproc, [*(relaunch or ["profile", workload]), "--name", folder.name])
    res = profile_workload(cfg, m, out, name=name, layers_subset=subset, adapters=adapters, argv=argv,
                           progress=progress, force=force)
    if distributed.rank() == 0:
        echo(format_profile(res, device))
        if "distributed" in res.run:
            from addressable.classify.ranks import format_ranks

            echo("\n" + format_ranks(res.run["distributed"]))
    if ncu_top is not None:
        from addressable.capture.ncu import check_run
        from addressable.roofline.ncu_check import format_check

        check = check_run(res.path, cfg, ncu_top, adapters, ncu_flops, progress=progress)
        echo("\n" + format_check(check) + f"\n(per kernel: {res.path / 'ncu.csv'})")
    distributed.end_child()
    return 0


def _check_ncu_request(cfg: WorkloadConfig, nproc: int | None, subset: tuple[int, int] | None) -> None:
    """--ncu runs on one CUDA process at full depth, with Nsight Compute on PATH."""
    from addressable.capture.ncu import find_ncu

    if cfg.device != "cuda":
        raise AddressableError("--ncu needs a CUDA GPU (Nsight Compute measures GPU kernels)")
    if nproc is not None or subset:
        raise AddressableError("--ncu measures one process at full depth: drop --nproc and --layers-subset")
    find_ncu()


# --------------------------------------------------------------------------- validation


def _run_doc(run: ProfileResult | str | Path) -> dict[str, Any]:
    """breakdown.json's keys of a profiled run (read with addressable.runs.folder.load_run for a folder)."""
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


def _spread(n: int, lo: float, hi: float) -> str:
    return f"all profiled steps; {n} repeats range {lo:.1%}–{hi:.1%}" if n > 1 else "1 repeat: no spread"


def _wall_basis_words(run: dict[str, Any], b: Breakdown) -> str:
    """How the wall-time fraction was taken (classify.breakdown.wall_fraction), for a breakdown."""
    basis = b.basis
    words = ("exposed " if b.timeline is not None and b.timeline.streams_overlap else "") + basis_words(basis)
    if any(x.get("wall_basis") == "work" for x in run["repeats"]) or run.get("wall_basis") == "work":
        what = "kernels on several streams" if basis == BASIS_GPU else "CPU ops on several threads"
        return (f"{what} overlap in time, so their summed time exceeds the step's wall time; the fraction is "
                f"then over the summed {words} instead, and never above 100%")
    return f"replaceable {words} per step over the step's wall time"


def format_profile(res: ProfileResult, requested_device: str = "auto") -> str:
    """What the `profile` command prints: device, step counts, breakdown, fractions, run folder."""
    from addressable.report.text import format_breakdown

    r, m = res.run, Measurement(**res.manifest["measurement"])
    if r["device"] == "cuda":
        dev = f"Device: cuda ({res.manifest.get('gpu')}); the breakdown is over GPU kernel time."
    else:
        why = "no CUDA GPU found, so --device auto ran it on the CPU" if requested_device == "auto" else "as asked"
        dev = f"Device: cpu ({why}); the breakdown is over CPU-op self time, not GPU kernels."
    counts = f"warm-up {m.warmup}, then {m.plan()}"
    if m.budget_s is not None and math.isfinite(m.budget_s) and len(m.fixed) < 3:
        d = default_measurement(r["device"])
        fit = (f"lowered as far as they go, which could not fit the {m.budget_s:g} s budget" if over_budget(m) else
               f"lowered where needed to fit the {m.budget_s:g} s budget")
        counts += (f"; counts not given are the {r['device']} defaults ({d.repeats} × ({d.steps} + "
                   f"{d.profile_steps})), {fit}; set them with --steps/--profile-steps/--repeats")
    reps = r["repeats"]  # the headline fractions are breakdown.json's, over all profiled steps
    kern, wall = res.breakdown.addressable_fraction, r["addressable_fraction_wall"]
    (klo, khi), (wlo, whi) = r["addressable_fraction_range"], r["addressable_fraction_wall_range"]
    basis = basis_words(res.breakdown.basis)
    what = f"{r['workload']} {r['mode']}, batch {r['batch']}" + (f", seq {r['seq_len']}" if r.get("seq_len") else "")
    lines = [dev, f"Steps: {counts}", "", format_breakdown(res.breakdown, 5), ""]
    if "extrapolated" in r:
        x = r["extrapolated"]
        lines.append(f"Extrapolated linearly from {x['from_layers'][0]} and {x['from_layers'][1]} layers "
                     f"to {x['to_layers']} (measured depths in layers<L>/ of the run folder)"
                     + (", step time {:,.2f}–{:,.2f} ms at the repeats' extreme slopes".format(*x["step_time_ms_range"])
                        if "step_time_ms_range" in x else ""))
        lines += [f"warning: {w}" for w in x.get("warnings", [])]
    lines += [
        f"{what}, {r['dtype']} on {r['device']}: step time {r['step_time_ms']:,.2f} ms ("
        + ("extrapolated from the depths' median unprofiled steps)" if "extrapolated" in r else "median unprofiled step)")
        + (f"; its CPU returns after {r['host_time_ms']:,.2f} ms (median, from an idle GPU)" if r.get("host_time_ms") else ""),
        f"{basis[0].upper() + basis[1:]} per profiled step: {r['kernel_time_per_step_us'] / 1e3:,.2f} ms "
        f"({r['kernel_time_per_step_us'] / 1e3 / max(r['step_time_ms'], 1e-9):.0%} of the step time"
        + ("; summed over overlapping threads or streams" if r.get("wall_basis") == "work" else "") + ")",
        f"Addressable fraction of {basis}: {kern:.1%}  ({_spread(len(reps), klo, khi)})",
        f"Addressable fraction of wall time: {wall:.1%}  ({_spread(len(reps), wlo, whi)}); "
        + _wall_basis_words(r, res.breakdown),
    ]
    phases = res.breakdown.to_dict().get("phases")
    if phases:
        total = sum(p["time_us"] for p in phases.values()) or 1.0
        lines.append("Phases: " + ", ".join(f"{k} {v['time_us'] / total:.0%} of time ({v['addressable_fraction']:.1%} "
                                            "addressable)" for k, v in phases.items()))
    mods = res.breakdown.modules
    if mods is not None and mods.has_scopes:
        lines += ["", f"Modules: {mods.coverage:.1%} of {basis} attributed to an nn.Module "
                  f"(`addressable modules {res.path}` for the table)",
                  *format_candidates(mods.fusion_candidates(5), "kernels" if r["device"] == "cuda" else "CPU ops"), ""]
        fusion, note = stored_fusion(r)
        if fusion is not None or note:
            lines += [*format_fusion(fusion, note, 5), ""]
    lines.append(f"Run folder: {res.path}")
    return "\n".join(lines)
