"""Measuring one workload instance: time its steps, profile some, and aggregate the repeats.

Each repeat runs timed unprofiled steps (CUDA events, or perf_counter on the CPU), then
profiled steps under torch.profiler (each one a ProfilerStep#N). A breakdown is computed
per repeat for the spread; `combine` makes the run's breakdown over all profiled steps and
`run_keys` the run keys of breakdown.json. Used by addressable.capture.profile (one process, or each
rank under torchrun); below it, above addressable.capture.distributed's process-group helpers.
"""

from __future__ import annotations

import datetime
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from addressable.capture import distributed
from addressable.capture.oom import out_of_memory
from addressable.capture.quiet import quiet_profiler
from addressable.capture.scopes import module_backward_cpu, module_cpu, module_io, module_scopes
from addressable.capture.workload import Step, WorkloadConfig, WorkloadSpec
from addressable.classify.breakdown import (
    BASIS_GPU,
    Breakdown,
    breakdown_from_tables,
    breakdown_of_trace,
    summed_kernels,
    wall_fraction,
)
from addressable.classify.modules import combine_modules
from addressable.classify.taxonomy import Taxonomy
from addressable.classify.timeline import TimelineResult
from addressable.core.errors import AddressableError
from addressable.core.profiler import sync_event_options
from addressable.core.progress import Progress, duration
from addressable.core.schema import KEY, VERSIONS
from addressable.runs.folder import BACKWARD_CPU_COLUMNS, TRACE_FILE
from addressable.trace.reader import load_trace


@dataclass(frozen=True)
class Measurement:
    """How a workload is measured: warm-up once, then per repeat timed and profiled steps.

    With `budget_s`, the counts not named in `fixed` are lowered after warm-up (see `fit_budget`)
    so that the repeats take about that long; `estimate_s` is then what they were expected to take.
    `measurement()` makes one from a device's defaults. Bad counts raise AddressableError.
    """

    warmup: int
    steps: int  # timed, unprofiled steps per repeat
    profile_steps: int  # profiled steps per repeat
    repeats: int
    budget_s: float | None = None  # None: no limit
    fixed: tuple[str, ...] = ()  # counts the user set, which the budget leaves alone
    estimate_s: float | None = None

    def __post_init__(self) -> None:
        if min(self.steps, self.profile_steps, self.repeats) < 1 or self.warmup < 0:
            raise AddressableError("--steps, --profile-steps and --repeats must be at least 1, --warmup at least 0")
        if self.budget_s is not None and not self.budget_s > 0:  # NaN too
            raise AddressableError("--budget must be a positive number of seconds")

    def plan(self) -> str:
        """The plan in words, e.g. "3 repeats × (20 timed + 5 profiled steps), about 40 s of steps" (the
        profiler's start-up and each repeat's trace analysis come on top; the log times them per repeat)."""
        text = f"{self.repeats} repeat{'s' * (self.repeats != 1)} × ({self.steps} timed + {self.profile_steps} " \
               f"profiled step{'s' * (self.profile_steps != 1)})"
        return text + (f", about {duration(self.estimate_s)} of steps" if self.estimate_s is not None else "")


GPU_DEFAULTS = Measurement(warmup=10, steps=20, profile_steps=5, repeats=3)
CPU_DEFAULTS = Measurement(warmup=1, steps=1, profile_steps=1, repeats=2)  # a CPU step can take seconds
DEFAULT_BUDGET_S = 60.0  # seconds of repeats after warm-up, unless --budget says otherwise
PROFILED_STEP_COST = 2.0  # a profiled step, with its trace written and read back, costs about two steps
COUNTS = ("steps", "profile_steps", "repeats")


def default_measurement(device: str) -> Measurement:
    """The default warm-up, steps, profiled steps and repeats for a device (GPU or CPU)."""
    return GPU_DEFAULTS if device == "cuda" else CPU_DEFAULTS


def measurement(device: str, warmup: int | None = None, steps: int | None = None, profile_steps: int | None = None,
                repeats: int | None = None, budget_s: float | None = None) -> Measurement:
    """The device's defaults with the given counts; the budget (None: DEFAULT_BUDGET_S, inf: no limit)
    may later lower those not given."""
    d = default_measurement(device)
    budget_s = DEFAULT_BUDGET_S if budget_s is None else budget_s
    given = {"warmup": warmup, "steps": steps, "profile_steps": profile_steps, "repeats": repeats}
    return Measurement(**{k: getattr(d, k) if v is None else v for k, v in given.items()}, budget_s=budget_s,
                       fixed=tuple(k for k in COUNTS if given[k] is not None))


def cost_s(m: Measurement, step_s: float, cuda: bool) -> float:
    """Expected seconds of m's repeats for a step of `step_s` (a profiled step costs PROFILED_STEP_COST steps), on a
    GPU with each repeat's HOST_STEPS steps timed to their return among them."""
    per_repeat = m.steps + PROFILED_STEP_COST * (m.profile_steps + (1 if cuda else 0))  # + CUPTI's warm-up step
    return m.repeats * (per_repeat + (HOST_STEPS if cuda else 0)) * step_s


def fit_budget(m: Measurement, step_s: float, cuda: bool) -> Measurement:
    """Lower the counts the user did not fix until the repeats fit m.budget_s, in this order:
    timed steps down to the profiled steps, repeats down to 2, profiled steps to 1, timed steps
    to 1, repeats to 1. The defaults are the most it runs; the estimate is recorded."""
    if m.budget_s is None:
        return replace(m, estimate_s=cost_s(m, step_s, cuda))
    floors = [("steps", lambda m: max(1, m.profile_steps)), ("repeats", lambda m: 2),
              ("profile_steps", lambda m: 1), ("steps", lambda m: 1), ("repeats", lambda m: 1)]
    for key, floor in floors:
        if key in m.fixed:
            continue
        while cost_s(m, step_s, cuda) > m.budget_s and getattr(m, key) > floor(m):
            m = replace(m, **{key: max(floor(m), getattr(m, key) // 2 if key != "repeats" else getattr(m, key) - 1)})
    return replace(m, estimate_s=cost_s(m, step_s, cuda))



def over_budget(m: Measurement) -> bool:
    """Whether m's plan (after fit_budget) is expected to take longer than its budget: its counts are then the
    least they can be (those not fixed at their floors), and still do not fit."""
    return m.budget_s is not None and m.estimate_s is not None and m.estimate_s > m.budget_s


def budget_words(m: Measurement, cut: bool) -> str:
    """What fit_budget did, for the plan's line: cut to fit, or could not fit (and the least it takes)."""
    if over_budget(m):
        assert m.estimate_s is not None  # over_budget needs an estimate
        given = [f"--{k.replace('_', '-')} {getattr(m, k)}" for k in COUNTS if k in m.fixed]
        return (f"; this cannot fit the {m.budget_s:g} s budget (--budget): about {duration(m.estimate_s)} is the least"
                + (f" with {', '.join(given)} as given" if given else "") + " (it runs anyway; --budget inf lifts the limit)")
    return f", cut to fit the {m.budget_s:g} s budget (--budget)" if cut else ""


# --------------------------------------------------------------------------- measuring


@dataclass
class Measured:
    """One workload instance measured: a breakdown per repeat, step times, the last trace."""

    config: WorkloadConfig
    repeats: list[Breakdown]
    step_time_ms: list[float]  # median unprofiled step time per repeat
    steps: pd.DataFrame  # repeat, step, time_ms, profiled
    trace: Path
    measurement: Measurement  # the counts run (after the budget)
    module_io: pd.DataFrame | None = None  # each module's external bytes over one step (scopes.module_io)
    module_cpu: pd.DataFrame | None = None  # each module's CPU time per step, profiler-free (scopes.module_cpu)
    # each host step's CPU time to its return, at the run's step speed (`host_times`, `at_step_speed`; GPU only)
    host_ms: list[float] | None = None


def timed(step: Step, n: int, cuda: bool, after: Callable[[int], None] | None = None,
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


def profiled(step: Step, n: int, cuda: bool, path: Path) -> list[float]:
    """Run n steps under torch.profiler, one ProfilerStep#N each; export the trace to path."""
    acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
    warm = 1 if cuda else 0  # a CUPTI warm-up step on the GPU; the CPU profiler needs none
    distributed.barrier()  # outside the profiler, so no barrier collective lands in the trace
    with quiet_profiler(), torch.profiler.profile(
            activities=acts, schedule=torch.profiler.schedule(wait=0, warmup=warm, active=n, repeat=1),
            record_shapes=True,  # input shapes: the roofline's bytes and FLOPs (addressable.roofline.model)
            on_trace_ready=lambda p: p.export_chrome_trace(str(path)),
            **sync_event_options(cuda)) as prof:  # the replay reads the GPU's waits from them
        for _ in range(warm):
            step()
            torch.cuda.synchronize()  # the warm-up step's kernels must not spill into the recorded steps
            prof.step()
        times = timed(step, n, cuda, after=lambda _: prof.step(), sync=False)
    distributed.barrier()
    if not path.is_file():
        raise AddressableError(f"the profiler wrote no trace for {path.parent.name}")
    return distributed.max_across_ranks(times)


def measure(spec: WorkloadSpec, cfg: WorkloadConfig, m: Measurement, workdir: Path, tax: Taxonomy,
            progress: Callable[[str], None], record_io: bool = False, kept_in: Path | None = None,
            record_cpu: bool = False) -> Measured:
    """Build the workload, warm it up, then per repeat: timed steps (on the GPU with HOST_STEPS steps spread through
    them, each timed to its return, `host_times`; put at the run's step speed, `at_step_speed`: the run's
    host_time_ms), profiled steps and a breakdown.

    The last repeat's trace is kept as workdir/trace.json.gz; its breakdown's source names it where it
    will be once the run folder is in place, `kept_in` (default: workdir, e.g. a temporary folder).

    With `record_io` (and an eager nn.Module model), one more step after warm-up runs under
    scopes.module_io: each module's external bytes, for the roofline's fusion headroom. With
    `record_cpu` (and an eager nn.Module model), CPU_STEPS more steps after the profiled ones run under
    scopes.module_cpu: each module's CPU time per step without the profiler, for the replay (module_cpu.csv).
    """
    cuda = cfg.device == "cuda"
    torch.manual_seed(0)
    step = spec.build(cfg)
    model = getattr(step, "model", None)  # names the module scopes; read before the step is wrapped
    label = f"{cfg.name}" + (f" ({cfg.options['layers']} layers)" if "layers" in cfg.options else "")
    progress(f"{label}: warm-up, {m.warmup} step{'s' * (m.warmup != 1)}")
    meter = Progress(m.warmup, f"{label}: warm-up")
    warm = timed(meter.counting(step), m.warmup, cuda)  # the maximum across ranks: every rank plans alike
    meter.close()
    if warm:
        counts = [getattr(m, k) for k in COUNTS]
        m = fit_budget(m, warm[-1] / 1e3, cuda)  # the last warm-up step: compiled, autotuned
        progress(f"{label}: warm-up step {warm[-1] / 1e3:,.2f} s; plan: {m.plan()}"
                 + budget_words(m, counts != [getattr(m, k) for k in COUNTS]))
    else:
        progress(f"{label}: plan: {m.plan()} (no warm-up step to time, so no --budget)")
    io = None
    if record_io and not cfg.compile and isinstance(model, torch.nn.Module):
        progress(f"{label}: one step recording each module's inputs and outputs (fusion headroom)")
        with module_io(model) as recorder:
            step()
        if cuda:
            torch.cuda.synchronize()
        io = recorder.table()
    per_repeat = m.steps + m.profile_steps + (1 if cuda else 0)
    meter = Progress(m.repeats * per_repeat, label)
    say = meter.log(progress)
    plain, step = step, meter.counting(step)
    repeats, medians, rows, trace = [], [], [], workdir / TRACE_FILE
    hosts: list[list[float]] = []  # one host step after each chunk of timed steps (`host_chunks`)
    host_refs: list[float] = []  # ... and that chunk's median step: the host's speed then
    if cuda:
        progress(f"{label}: among each repeat's timed steps, {HOST_STEPS} more spread through them, each timed from an "
                 f"idle GPU to its return (the step's CPU time)")
    for r in range(m.repeats):
        started = time.perf_counter()
        times, these, refs = timed_with_hosts(step, m.steps, cuda, lambda: host_times(plain, 1)[0],
                                              HOST_STEPS if cuda else 0)
        hosts, host_refs = hosts + these, host_refs + refs
        path = workdir / f".trace.r{r}.json.gz"
        with _scopes(cfg, model):
            prof = profiled(step, m.profile_steps, cuda, path)
        b = breakdown_of_trace(load_trace(path), tax)
        b.n_steps = m.profile_steps
        if b.modules is not None:
            b.modules.n_steps = m.profile_steps
            if cfg.compile:
                b.modules.note = COMPILE_NOTE
        if r == m.repeats - 1:
            os.replace(path, trace)
            b.source = str((kept_in or workdir) / trace.name)
        else:
            path.unlink()
        repeats.append(b)
        medians.append(float(np.median(times)))
        rows += [(r, i, t, False) for i, t in enumerate(times)]
        rows += [(r, m.steps + i, t, True) for i, t in enumerate(prof)]
        rec = _repeat_record(b, medians[-1])
        took = time.perf_counter() - started
        left = f"; about {duration(took * (m.repeats - r - 1))} left" if r < m.repeats - 1 else ""
        say(f"{label}: repeat {r + 1}/{m.repeats}: step {medians[-1]:,.1f} ms, addressable "
            f"{rec['addressable_fraction']:.1%} of {basis_words(b.basis)}, "
            f"{rec['addressable_fraction_wall']:.1%} of wall time ({duration(took)} with its trace analysis{left})")
    meter.close()
    run_step_ms = float(np.median([t for _, _, t, was_profiled in rows if not was_profiled]))
    host = at_step_speed(hosts, host_refs, run_step_ms) if hosts else None
    cpu = None
    if record_cpu and not cfg.compile and isinstance(model, torch.nn.Module):
        progress(f"{label}: {CPU_STEPS} steps without the profiler, timing each module's CPU dispatch, and "
                 f"{BACKWARD_CPU_STEPS} its backward's where it has one (module_cpu.csv)")
        cpu = _module_cpu(plain, model, CPU_STEPS, cuda, float(np.median(medians)))
    steps = pd.DataFrame(rows, columns=["repeat", "step", "time_ms", "profiled"])
    return Measured(cfg, repeats, medians, steps, trace, m, io, cpu, host)


# steps timed from an idle GPU to their return, spread through each repeat's timed steps: the CPU's own time per step
# (host_time_ms), which the step time of a step the GPU holds does not show; the replay fits the profiler's CPU
# overhead to it there (replay.fit_cpu_scale). The host's speed moves by up to 2x from second to second, and steps
# timed apart from the step time missed it by 9% (robust SD) where the same steps agree to 0.1%; a slow mode lasts
# seconds, so the moments sampled count more than the steps (gpu/host_sample_noise.py, docs/replay.md)
HOST_STEPS = 4


def host_chunks(n_steps: int, host_steps: int) -> list[np.ndarray]:
    """A repeat's timed steps cut into `host_steps` chunks as even as can be (none empty): a host step runs after
    each chunk's last step."""
    return list(np.array_split(np.arange(n_steps), min(host_steps, n_steps))) if host_steps and n_steps else []


def timed_with_hosts(step: Step, n: int, cuda: bool, host: Callable[[], float], host_steps: int
                     ) -> tuple[list[float], list[list[float]], list[float]]:
    """n timed steps (`timed`) with a host step (`host`: its time) after each chunk of them (`host_chunks`): the step
    times, each chunk's host times and the chunk's median step."""
    chunks = host_chunks(n, host_steps)
    chunk_of = {int(c[-1]): k for k, c in enumerate(chunks)}
    hosts: list[list[float]] = [[] for _ in chunks]

    def after(i: int) -> None:
        if i in chunk_of:
            hosts[chunk_of[i]].append(host())
    times = timed(step, n, cuda, after=after if chunks else None)
    return times, hosts, [float(np.median([times[i] for i in c])) for c in chunks]


def at_step_speed(hosts: list[list[float]], ref_step_ms: list[float], step_ms: float) -> list[float]:
    """Host times put at the run's step speed: each list times the run's step time over its reference, the median of
    the timed steps just before it (a step its CPU holds runs as fast as its host, so a slow host reads both slow)."""
    return [h * step_ms / r for hs, r in zip(hosts, ref_step_ms, strict=True) for h in hs if r > 0]


def host_times(step: Step, n: int) -> list[float]:
    """n steps' host times (ms), each from its call to its return, each started on an idle GPU (the maximum across
    ranks)."""
    times = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    torch.cuda.synchronize()
    return distributed.max_across_ranks(times)


# steps of the profiler-free module CPU pass (module_cpu.csv), forward and backward apart (the backward's hooks cost
# forward CPU), each step timed apart and beside a plain step that says how fast the host was then (the host's speed
# moves by up to 2x from step to step; the validation corpus chose this reading for the backward, and its held-out 46
# checks it for the forward, docs/replay.md)
CPU_STEPS = 5
BACKWARD_CPU_STEPS = 10


def host_normalized(tables: list[pd.DataFrame], speed: list[float],
                    column: str = "backward_cpu_us_per_step") -> pd.DataFrame:
    """A hooked pass's per-step tables (module, class, then the pass's columns) as one: each step's CPU time
    (`column`) over the host's speed in that step (a plain step beside it over the run's step time: 1.3 means the
    host ran 1.3x slower then), the median over the steps a module ran in (other columns: the median if numeric,
    else the first step's)."""
    table = pd.concat([t.assign(**{column: t[column] / s}) for t, s in zip(tables, speed, strict=True)])
    numeric = set(table.select_dtypes("number").columns)
    how = {c: "median" if c in numeric else "first" for c in table.columns if c not in ("module", "class")}
    return table.groupby(["module", "class"], as_index=False, sort=False).agg(how)


def recorded_at_speed(step: Step, record: Callable[[], Any], n: int, cuda: bool, step_ms: float
                      ) -> tuple[list[Any], list[float]]:
    """n steps, each under its own recorder (`record()`, a context manager) and started on an idle GPU (synchronised),
    each followed by a plain step: the recorders, and the host's speed in each step (the plain step over the run's
    step time `step_ms`; 1.0 where that is not known)."""
    recorders, speed = [], []
    for _ in range(n):
        with record() as rec:
            if cuda:
                torch.cuda.synchronize()
            step()
            if cuda:
                torch.cuda.synchronize()
        recorders.append(rec)
        speed.append(_timed_steps(step, 1, cuda, None)[0] / step_ms if step_ms > 0 else 1.0)
    return recorders, speed


def _module_cpu(step: Step, model: torch.nn.Module, n: int, cuda: bool, step_ms: float) -> pd.DataFrame:
    """Each module's CPU time per step under scopes.module_cpu (no profiler), n steps, then its backward's under
    scopes.module_backward_cpu, BACKWARD_CPU_STEPS steps, each step followed by a plain one and read at the run's
    speed (`recorded_at_speed`, `host_normalized`; `step_ms` the run's step time; the backward empty where none ran),
    as the corpus's pass (gpu/replay_corpus.py) does."""
    recorders, speed = recorded_at_speed(step, lambda: module_cpu(model), n, cuda, step_ms)
    forward = host_normalized([r.table(1) for r in recorders], speed, "cpu_us_per_step")
    try:
        recorders, speed = recorded_at_speed(step, lambda: module_backward_cpu(model), BACKWARD_CPU_STEPS, cuda,
                                             step_ms)
        backward = [r.table(1) for r in recorders]
    except (AttributeError, RuntimeError):  # a torch without autograd's sequence counter: the forward's still count
        backward = []
    if not any(len(t) for t in backward):
        return forward.assign(**{c: np.nan for c in BACKWARD_CPU_COLUMNS})
    return forward.merge(host_normalized(backward, speed), on=["module", "class"], how="left")


COMPILE_NOTE = "no module scopes: a --compile run is not scoped (its fused kernels span modules)"


@contextmanager
def _scopes(cfg: WorkloadConfig, model: Any) -> Iterator[None]:
    """Module scopes (addressable.capture.scopes) around the profiled steps only; none for compiled models."""
    if cfg.compile:
        yield
        return
    with module_scopes(model if isinstance(model, torch.nn.Module) else None):
        yield


def basis_words(basis: str) -> str:
    """What a breakdown's times are, in words: GPU kernel time or CPU-op self time."""
    return "GPU kernel time" if basis == BASIS_GPU else "CPU-op self time"


# --------------------------------------------------------------------------- aggregating


def combine(repeats: list[Breakdown]) -> Breakdown:
    """One Breakdown over the profiled steps of all repeats."""
    kernels = summed_kernels(repeats)
    phases = [b.phases for b in repeats if b.phases is not None and not b.phases.empty]
    ph = (pd.concat(phases, ignore_index=True).astype({"phase": str, "category": str, "class": str})
          .groupby(["phase", "category", "class"], sort=False)["time_us"].sum().reset_index()) if phases else None
    b = breakdown_from_tables(kernels[kernels["time_us"] > 0], repeats[0].basis, sum(b.n_steps or 0 for b in repeats),
                              repeats[-1].source, phases=ph)
    timelines = [r.timeline for r in repeats if r.timeline is not None]
    if len(timelines) == len(repeats):
        b.timeline = combine_timelines(timelines)
    modules = [r.modules for r in repeats if r.modules is not None]
    if len(modules) == len(repeats):
        b.modules = combine_modules(modules, b.n_steps or 1)
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


def _wall(b: Breakdown, step_time_ms: float) -> tuple[float, str]:
    """b's addressable fraction of wall time for a step of step_time_ms (classify.breakdown.wall_fraction)."""
    n = b.n_steps or 1
    repl_us, work_us = b.wall_times()
    return wall_fraction(repl_us / n, work_us / n, step_time_ms * 1e3)


def _repeat_record(b: Breakdown, step_time_ms: float) -> dict[str, Any]:
    wall, basis = _wall(b, step_time_ms)
    rec = {"step_time_ms": step_time_ms, "kernel_time_per_step_us": b.total_time_us / (b.n_steps or 1),
           "addressable_fraction": b.addressable_fraction,
           "addressable_fraction_wall": wall, "wall_basis": basis,
           "category_time_per_step_us": _per_step(b)}
    t = b.timeline
    if t is not None and t.streams_overlap:  # the times the wall fraction is over (project reads them)
        rec["exposed_category_time_per_step_us"] = {
            str(c): float(x) / (b.n_steps or 1) for c, x in zip(t.categories["category"], t.categories["exposed_us"],
                                                               strict=True)}
    return rec


def run_keys(spec: WorkloadSpec, cfg: WorkloadConfig, b: Breakdown, repeats: list[Breakdown],
             repeat_step_ms: list[float], step_time_ms: float, host_ms: list[float] | None = None) -> dict[str, Any]:
    """The run keys of breakdown.json (see docs/CONVENTIONS.md); host_time_ms, the median of `host_ms`, where
    given."""
    recs = [_repeat_record(r, s) for r, s in zip(repeats, repeat_step_ms, strict=True)]
    frac = [r["addressable_fraction"] for r in recs]
    wall = [r["addressable_fraction_wall"] for r in recs]
    n = b.n_steps or 1
    wall_now, wall_basis = _wall(b, step_time_ms)
    keys: dict[str, Any] = {
        "workload": cfg.name, "family": spec.family, "mode": cfg.mode, "device": cfg.device,
        "batch": cfg.batch, "seq_len": cfg.seq_len, "dtype": cfg.dtype, "compile": cfg.compile,
        "options": cfg.options,
        "step_time_ms": step_time_ms,
        "kernel_time_per_step_us": b.total_time_us / n,
        "addressable_fraction_wall": wall_now, "wall_basis": wall_basis,
        "repeats": recs,
        "addressable_fraction_range": [min(frac), max(frac)],
        "addressable_fraction_wall_range": [min(wall), max(wall)],
    }
    if host_ms:
        keys["host_time_ms"] = float(np.median(host_ms))
    if spec.full_layers:
        keys["layers"] = cfg.options.get("layers", spec.full_layers)
    return keys


# --------------------------------------------------------------------------- the manifest


def _git_revision() -> str | None:
    root = Path(__file__).resolve().parents[2]
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
        KEY: VERSIONS["manifest"],
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


@contextmanager
def memory_errors(cfg: WorkloadConfig, layers_subset: tuple[int, int] | None = None) -> Iterator[None]:
    """Out of memory -> one line: what ran, the memory asked for and there, what would fit (oom.out_of_memory);
    a model that rejects the configuration (a ValueError, e.g. BatchNorm training on one value per
    channel) -> its first line."""
    try:
        yield
    except (torch.cuda.OutOfMemoryError, MemoryError) as e:
        raise AddressableError(out_of_memory(cfg, e, layers_subset)) from None
    except ValueError as e:
        reason = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise AddressableError(f"{cfg.name} {cfg.mode} at batch {cfg.batch} on {cfg.device} failed: {reason}") from None
    except RuntimeError as e:
        if "can't allocate memory" in str(e) or "out of memory" in str(e).lower():
            raise AddressableError(out_of_memory(cfg, e, layers_subset)) from None
        raise


@contextmanager
def cudnn_benchmark(on: bool) -> Iterator[None]:
    old = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = on or old
    try:
        yield
    finally:
        torch.backends.cudnn.benchmark = old
