"""Timing a candidate that may lie about time: clocks taken before it loads, a wall clock it cannot reach.

In the candidate's process (`time_batch`): timed calls run in batches of `BATCH` calls of one model.
Each call gets fresh inputs (`fresh.FreshInputs`, drawn before the interval starts), then, on a
GPU, a 256 MB L2 flush, a backlog (a kernel that spins for `backlog_ms`, the same for both models,
chosen by the parent), a CUDA event, the call, the output's sketch (below) and a second event, both
on the caller's stream; the time is the GPU time between the two events. On the CPU, `time.perf_counter`
around the call. Then a device-wide synchronize drains whatever the call left running on any stream
before the next call (or the other model) starts; that work cannot have written what the sketch read,
so it is not in the time: its wait beyond the synchronize's idle cost is reported (`left_ms`), and the
parent's wall clock holds it. Charging that host-measured wait, as this harness did before, put host
noise in every call: on the H200 (`gpu/timing_noise.py`) 20-30 us calls whose GPU time between the
events varied by 1-2% had IQRs of 25-50% of their median with it, and two identical processes timed
the same softmax 0.85-0.92x apart. Ending the interval at an event after the synchronize was worse (it
holds the host's wake-up).
The backlog keeps the GPU busy while the host dispatches the call and its output's sketch, so the
interval holds GPU work and not launch latency, which varies with whatever the host did before (a
sketch, a message, the sandbox's audit hook: the Triton examples' speedups moved by up to 2x with it
on the H200, results/h200/verify_timing/).
Dispatch that outlasts the backlog still lands in the interval: each call reports whether the GPU had
already reached it when the host had queued its sketch (`late`), its backlog's GPU time (`spin_ms`) and
its host time to the sketch's dispatch; the parent sizes the backlog from the last (`backlog_for`).
As the call returns, the output's sketch (`checks.sketch`) is taken: it binds every element of the
output, so the reference checker can later compare the outputs of calls the candidate cannot
predict. On a GPU it is queued on the caller's stream at the return, before the synchronize, so
it reads the output as that stream has it then: a write queued later (by a thread the call left
running, or on a stream the caller never waits on) is not in it. It is then inside the interval:
the parent takes the checker's median sketch time out of both models' times (`BatchRecord.net`).
The timing functions (`Clocks`) are taken before the candidate is imported, so patching
`time.perf_counter` or `torch.cuda.Event.elapsed_time` afterwards changes nothing here.

The reference is timed in the checker, a process the candidate never ran in, in batches that
alternate with the candidate's (ABBA), while the candidate's process is frozen (SIGSTOP).

In the verifying parent (`timing_checks`): a patched clock inside the candidate's process, or work
moved outside the timed intervals (a thread, a lazily computed output, a forged reply), still takes
wall-clock time. The parent times each batch with its own clock, from the request to the reply. Per
call, the wall time less the reported time and the backlog (the parent's own choice, so trusted)
is the harness's overhead (input draw, flush, messages; the sketch too on the CPU); the same code runs in both
processes, so the checker's overhead (trusted) is what the candidate's must be. The checks:

- ``clock``: the candidate's lowest per-batch overhead exceeds the checker's lowest, in the
  interleaved batches, by no more than max(clock_tol × its median call, 4 σ, floor / k), σ the spread
  of per-batch overheads pooled over both sides, floor what the wall clock resolves per batch
  (0.2 ms on a GPU, 5 ms on the CPU: messages and scheduling) and k the calls per batch; and its
  median per-batch overhead exceeds the checker's median by no more than the same with σ the
  checker's spread alone (before and while the candidate is loaded): a lie told in only some batches
  leaves a clean lowest batch and widens the pooled spread, but it moves the median. What passes is
  within that allowance (`overhead_allowance_median_ms`): a lie in half the batches or more moves the
  median overhead as far as the median call (the speedup), and one in fewer moves the median call only
  to a lower quantile of the honest calls. When `clock` fails, the parent times a second set of batches
  (`timed_set` 1, `session.py`); the medians and the speedup are then taken over both sets, the lows
  over the second alone (an extreme batch of either set would stay the lowest): a lie told in some
  batches of each set stays in the pooled median, load that hit one set is outvoted by a clean second
  set, and the checker's spread comes from twice the batches, so a load step inside one set widens
  the allowance less (judged alone, a second set once passed a lie in 2 of 4 batches, at 2.1x, on a
  median allowance of 59 ms a call that such a step had set). A load step that widens the checker's
  spread in a first set can still let such a lie pass it (seen once, at load 5.9: 1.6x, a review for
  noisy timing): the clock resolves no lie smaller than its allowance;
- ``reference_timing``: the reference, timed while the candidate is loaded, runs within
  1 + max(clock_tol, 4 × its relative spread) of its time before the candidate was imported
  (beyond it: review, since drift can do it too, and so can a candidate that left work behind);
- ``reuse``: repeated inputs do not speed the candidate up more than the reference. Two rounds of a
  batch per model alternate fresh calls with calls on the same tensors as the call before; it fails
  when in every round (cand fresh / cand repeated) / (ref fresh / ref repeated) > 1 + max(0.25, 4 ×
  the relative spread) and the candidate saves more than floor / k per call.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from addressable.verification.checks import check, finish_sketch, sketch, sketch_rows
from addressable.verification.harness import as_outputs, idle_sync_ms, left_after

BATCH = 5  # calls per timed batch
PARENT_CLOCK = time.perf_counter  # taken at import, before any candidate: the parent's wall clock
_FLOOR_MS = {"cuda": 0.2, "cpu": 5.0}  # the smallest discrepancy per batch the wall clock resolves (messages, scheduling)


@dataclass(frozen=True)
class Clocks:
    """The functions timing relies on, taken before the candidate is imported (see the module docstring)."""

    perf: Callable[[], float]
    no_grad: Any
    event: Any = None  # the CUDA ones: None on the CPU
    record: Any = None
    elapsed: Any = None
    wait: Any = None
    device_sync: Any = None
    zero: Any = None
    spin: Any = None  # torch.cuda._sleep: a kernel that spins for a number of GPU clock cycles
    current_stream: Any = None
    set_stream: Any = None
    query: Any = None  # torch.cuda.Event.query: whether the GPU has passed an event


def take_clocks(device: str) -> Clocks:
    """The timing functions as they are now (call before importing a candidate)."""
    import torch

    if device != "cuda":
        return Clocks(PARENT_CLOCK, torch.no_grad)
    ev: Any = torch.cuda.Event
    return Clocks(PARENT_CLOCK, torch.no_grad, ev, ev.record, ev.__mro__[1].elapsed_time, ev.synchronize,
                  torch.cuda.synchronize, torch.Tensor.zero_, torch.cuda._sleep, torch.cuda.current_stream,
                  torch.cuda.set_stream, ev.query)


def spin_rate(clocks: Clocks, cycles: int = 1_000_000, warm_cycles: int = 40_000_000) -> float:
    """GPU clock cycles per millisecond of `clocks.spin`, at the clock a busy GPU runs at: a long spin first
    (an idle GPU runs at a lower clock, and a rate taken there makes every later spin shorter than asked,
    the backlog too short to hide the dispatch), then the fastest of three."""
    clocks.spin(warm_cycles)
    out = []
    for _ in range(3):
        a, b = clocks.event(enable_timing=True), clocks.event(enable_timing=True)
        clocks.record(a)
        clocks.spin(cycles)
        clocks.record(b)
        clocks.wait(b)
        out.append(clocks.elapsed(a, b))
    return cycles / max(min(out), 1e-6)


class Timer:
    """Timed calls with the clocks, flush buffer and synchronize overhead of one process."""

    def __init__(self, clocks: Clocks, device: str) -> None:
        import torch

        self.clocks, self.cuda = clocks, device == "cuda"
        self.flush = torch.empty(256 << 20, dtype=torch.uint8, device=device) if self.cuda else None
        self.idle_sync_ms = idle_sync_ms(clocks.device_sync, clocks.perf) if self.cuda else 0.0
        self.cycles_per_ms = spin_rate(clocks) if self.cuda else 0.0

    def call(self, fn: Callable, inputs: list, key: int, backlog_ms: float = 0.0) -> Timed:
        """One timed call (see the module docstring)."""
        c = self.clocks
        with c.no_grad():
            if not self.cuda:
                t0 = c.perf()
                out = fn(*inputs)
                ms = (c.perf() - t0) * 1e3
                return Timed(ms, ms, [sketch(o, key) for o in as_outputs(out, "candidate")], 0.0, ms, call_ms=ms)
            stream = c.current_stream()
            c.zero(self.flush)
            spin, a, b, s0, s1 = (c.event(enable_timing=True) for _ in range(5))
            cycles = int(backlog_ms * self.cycles_per_ms)
            c.record(spin)
            if cycles > 0:
                c.spin(cycles)
            c.record(a)
            t0 = c.perf()
            out = fn(*inputs)
            host = (c.perf() - t0) * 1e3
            c.set_stream(stream)
            c.record(s0)
            rows = [sketch_rows(o, key) for o in as_outputs(out, "candidate")]
            c.record(s1)
            dispatch = (c.perf() - t0) * 1e3
            c.record(b)
            late = bool(c.query(a))
            c.wait(b)
            left_ms = left_after(c.device_sync, c.perf, self.idle_sync_ms)
            spun = c.elapsed(spin, a)
            if cycles > 0 and spun > 0.02:  # the clock rises under load: the spins keep the fastest rate seen
                self.cycles_per_ms = max(self.cycles_per_ms, cycles / spun)
            return Timed(max(c.elapsed(a, b), 1e-6), host, [finish_sketch(r) for r in rows],
                         c.elapsed(s0, s1), dispatch, spun, late, c.elapsed(a, s0), left_ms)

    def batch(self, fn: Callable, draw: Callable[[int], list], seeds: list[int], key: int,
              repeat: bool = False, backlog_ms: float = 0.0) -> dict[str, Any]:
        """Time one call per seed; with `repeat`, every odd call gets the same tensors as the call before it
        (fresh, repeated, fresh, repeated ...). Returns the times, host times and sketch times (ms) and each
        output's sketch."""
        calls: list[Timed] = []
        inputs: list = []
        for i, s in enumerate(seeds):
            if not (repeat and i % 2):
                inputs = draw(s)
            calls.append(self.call(fn, inputs, key, backlog_ms))
        return {"times": [t.ms for t in calls], "host": [t.host_ms for t in calls],
                "dispatch": [t.dispatch_ms for t in calls], "sketch_ms": [t.sketch_ms for t in calls],
                "spin_ms": [t.spin_ms for t in calls], "late": [t.late for t in calls],
                "call_ms": [t.call_ms for t in calls], "left_ms": [t.left_ms for t in calls],
                "sketches": [t.sketches for t in calls]}


@dataclass(frozen=True)
class Timed:
    """One timed call: its time (ms, the sketch included on a GPU), its host time (ms, from the call to its
    return), its outputs' sketches, how long the sketch took on the caller's stream (ms, on a GPU), and the
    host time to the sketch's dispatch (ms): the backlog must outlast it, or the interval holds host time,
    how long the backlog spun (GPU ms; its cycles over this are the SM clock before the call), whether the
    GPU had passed the call's start before the host had queued the sketch (`late`: it may have waited for a
    launch inside the interval), the GPU time from the call's start to the sketch's (ms), and how long the
    device-wide synchronize after the interval waited beyond its idle cost (ms, host time: work left
    running on some stream, not in the time)."""

    ms: float
    host_ms: float
    sketches: list
    sketch_ms: float
    dispatch_ms: float
    spin_ms: float = 0.0
    late: bool = False
    call_ms: float = 0.0
    left_ms: float = 0.0

    @property
    def net_ms(self) -> float:
        """The time less the sketch."""
        return max(self.ms - self.sketch_ms, 1e-6)


def backlog_for(host_ms: list[float], device: str) -> float:
    """The backlog (ms) both models' timed calls get: six times the slower model's median host time to the
    sketch's dispatch (`Timed.dispatch_ms`), within [0.05, 2] ms (the cap bounds host work a candidate could
    hide in it); none on the CPU. On the H200 twice left 0.3-23% of 20-30 us calls `late` (the GPU
    reached the call before its sketch was queued, and waited for it inside the interval), six times none
    of them (`gpu/timing_noise.py`)."""
    if device != "cuda":
        return 0.0
    return min(max(6.0 * max(host_ms, default=0.0), 0.05), 2.0)


# ---------------------------------------------------------------- the parent's side: walls against reported times


@dataclass(frozen=True)
class BatchRecord:
    """One timed batch as the parent saw it: which model and phase, its wall time, the reported call times."""

    model: str  # "ref" or "cand"
    phase: str  # "baseline" (before the candidate loaded), "timed" or "repeat"
    wall_ms: float
    times: list[float]  # as reported: on a GPU each includes the output's sketch
    backlog_ms: float = 0.0  # the spin before each call, the parent's choice
    host: list[float] | None = None  # reported host time of each call
    sketch_ms: list[float] | None = None  # reported time of each call's sketch
    spin_ms: list[float] | None = None  # reported GPU time of each call's backlog spin
    dispatch_ms: list[float] | None = None  # reported host time of each call to its sketch's dispatch
    late: list[bool] | None = None  # reported: the GPU reached the call before the host had queued its sketch
    left_ms: list[float] | None = None  # reported host wait of the synchronize after each interval, beyond idle
    sketch_cost: float = 0.0  # what the sketch adds to each time, from the checker's batches (`with_sketch_cost`)
    timed_set: int = 0  # 1 for timed batches of the second set, taken when `clock` failed on the first

    @property
    def overhead(self) -> float:
        """Per-call wall time less the mean reported time and the backlog (ms)."""
        return self.wall_ms / len(self.times) - statistics.fmean(self.times) - self.backlog_ms

    @property
    def net(self) -> list[float]:
        """The call times less the sketch's cost (ms)."""
        return [max(t - self.sketch_cost, 1e-6) for t in self.times]


def with_sketch_cost(batches: list[BatchRecord]) -> list[BatchRecord]:
    """The batches with `sketch_cost` set to the median sketch time the checker reported: the candidate's
    outputs have the reference's shapes, so their sketches cost the same, and the candidate's own report
    of it is not trusted."""
    ref = [t for b in batches if b.model == "ref" for t in b.sketch_ms or []]
    cost = statistics.median(ref) if ref else 0.0
    return [replace(b, sketch_cost=cost) for b in batches]


def _spread(xs: list[float]) -> float:
    """A robust standard deviation (1.4826 MAD; half the range below 4 values)."""
    if len(xs) < 2:
        return 0.0
    if len(xs) < 4:
        return (max(xs) - min(xs)) / 2
    med = statistics.median(xs)
    return 1.4826 * statistics.median(abs(x - med) for x in xs)


def times_of(batches: list[BatchRecord], model: str, phase: str) -> list[float]:
    """The call times, less the sketch's cost, of one model's batches of one phase."""
    return [t for b in batches if b.model == model and b.phase == phase for t in b.net]


def _overheads(batches: list[BatchRecord], model: str, phase: str) -> list[float]:
    return [b.overhead for b in batches if b.model == model and b.phase == phase]


def _reuse(batches: list[BatchRecord], floor: float) -> tuple[dict[str, Any], list[float]] | None:
    """The `reuse` check from the repeat batches (fresh and repeated calls alternate within each, so load
    changes cancel), in rounds of a reference batch and a candidate batch: it fails when every round shows
    repeats speeding the candidate up beyond a limit times what they do for the reference, and by more
    than `floor` ms per call. The limit is 1 + max(0.25, 4 x the noise of a batch's median fresh/repeated
    ratio), that noise from the reference's own pairs (the within-batch noise, not the batch-to-batch one)."""
    def effect(b: BatchRecord) -> tuple[float, float]:
        fresh, again = statistics.median(b.net[0::2]), statistics.median(b.net[1::2])
        return fresh / again if again > 0 else 1.0, fresh - again

    ref = [effect(b) for b in batches if b.model == "ref" and b.phase == "repeat" and len(b.times) >= 2]
    cand = [effect(b) for b in batches if b.model == "cand" and b.phase == "repeat" and len(b.times) >= 2]
    rounds = list(zip(cand, ref, strict=False))
    if not rounds:
        return None
    ratios = [f / a for b in batches if b.model == "ref" and b.phase == "repeat"
              for f, a in zip(b.net[0::2], b.net[1::2], strict=False) if a > 0]
    per_batch = max(len(ratios) // len(ref), 1)
    rel = _spread(ratios) / (statistics.median(ratios) or 1.0) if ratios else 0.0
    limit = 1 + max(0.25, 4 * rel / math.sqrt(per_batch))
    gains = [c[0] / r[0] for c, r in rounds]
    hits = [g > limit and c[1] - r[1] > floor for g, (c, r) in zip(gains, rounds, strict=True)]
    return check(min(gains), limit, not all(hits)), gains


def timing_checks(batches: list[BatchRecord], tol: float, device: str) -> tuple[dict[str, dict[str, Any]], dict]:
    """The `clock`, `reference_timing` and `reuse` checks (see the module docstring), and the figures behind them."""
    batches = with_sketch_cost(batches)
    base_o, ref_o, cand_o = (_overheads(batches, m, p) for m, p in
                             (("ref", "baseline"), ("ref", "timed"), ("cand", "timed")))
    t_base, t_ref, t_cand = (times_of(batches, m, p) for m, p in (("ref", "baseline"), ("ref", "timed"), ("cand", "timed")))
    newest = max(b.timed_set for b in batches)
    last = [b for b in batches if b.timed_set == newest]  # the lows: the last set alone
    low_ref, low_cand = _overheads(last, "ref", "timed"), _overheads(last, "cand", "timed")  # (an extreme stays)
    o_ref = min(low_ref)  # sigma pools both sides: load that lengthens the candidate's batches widens it, a lie only shifts them
    sigma = math.sqrt((_spread(low_ref + base_o) ** 2 + _spread(low_cand) ** 2) / 2)
    tc, tr, tr0 = statistics.median(t_cand), statistics.median(t_ref), statistics.median(t_base)
    excess = min(low_cand) - o_ref  # lows: a load spike lengthens some batches, a lie every one
    per_batch = max(len(b.times) for b in batches if b.model == "cand" and b.phase == "timed")
    floor = _FLOOR_MS.get(device, 5.0) / per_batch
    allow = max(tol * tc, 4 * sigma, floor)
    # medians, over every set, the tolerance from the checker's spread alone: a lie told in only some batches
    # leaves a clean low, and a candidate's own spread of overheads is its to widen
    excess_med = statistics.median(cand_o) - statistics.median(ref_o)
    allow_med = max(tol * tc, 4 * _spread(ref_o + base_o), floor)
    checks = {"clock": check(excess, allow, True) if excess <= allow and excess_med <= allow_med
              else check(excess, allow, False) if excess > allow else check(excess_med, allow_med, False)}
    rel = _spread(t_base + t_ref) / (tr0 or 1.0)
    slower, limit = (tr / tr0 if tr0 > 0 else 1.0), 1 + max(tol, 4 * rel)
    checks["reference_timing"] = check(slower, limit, True if slower <= limit else None)
    figures: dict[str, Any] = {"overhead_ms_reference": o_ref, "overhead_ms_candidate": min(low_cand),
               "overhead_excess_median_ms": excess_med, "overhead_allowance_median_ms": allow_med,
               "overhead_ms_baseline": statistics.median(base_o), "overhead_spread_ms": sigma, "ref_ms_baseline": tr0}
    reuse = _reuse(batches, _FLOOR_MS.get(device, 5.0) / per_batch)
    if reuse is not None:
        checks["reuse"], figures["reuse_gains"] = reuse
    return checks, figures
