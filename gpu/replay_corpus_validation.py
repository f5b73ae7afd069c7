"""The replay against the validation corpus (gpu/replay_corpus.py), dev and held-out halves apart (CPU).

For each pair (PART/NAME.json with NAME.{A,B}[.rR].json.gz), from A alone (its traces, its unprofiled
step times, its profiler-free swap-group CPU time, the part's profiler cost per event) and the group's
k and kernels per call measured from A and B (as gpu/replay_validation.py does), six ways of taking
the profiler's CPU overhead out are replayed (dispatch rule "typical" for kept launches):
  uniform  one cpu_scale for every CPU call, fitted so the replayed step is A's unprofiled step
           (what `project` runs for a target without given's inputs: replay.project_traces);
  own      the same, each kept launch keeping its own CPU time (dispatch "own");
  module   the swap group's CPU calls scaled by their measured unprofiled / profiled time
           (perf_counter around the module against its record_function ranges), the rest fitted;
  event    each CPU gap less the profiler's measured cost per recorded event (cpu_ops started in the
           gap, and the runtime call itself), then one scale fitted;
  given    module, and each forward call keeping the replacement's measured CPU time (B's, per call):
           what `project --model replay` runs where the run has module_cpu.csv and the target
           cpu_us_after, scored through the same function (replay.project_traces, WhatIf.cpu);
  given_uniform  given without the group's measured scale;
  given_v1 given as first committed, before the change chosen on the dev half (a fused call's runtime
           calls other than its kept launches, e.g. an eager BatchNorm's cudaMemsetAsync, stayed);
  given_v2 given as scored on held-outs 2-4, before the change chosen on parts 1-5 (the backward's
           launches at the rest's fitted scale);
  given_v3 given as scored on held-outs 5-6 (the backward's launches at the forward's measured scale).
           given now replays both backward hypotheses: the point is their geometric mean, and its interval
           spans both (chosen on parts 1-7, after held-out 6's resnet18-train-b4-bn read +45% under v3).
           Its error model's regimes are project's (`regime_given`): a training run whose swapped modules'
           backward launches hold at least replay.LARGE_BACKWARD_SHARE of the profiled CPU is
           "... large backward" (chosen on parts 1-8, after held-out 7).
  given_v4 that model (the two hypotheses everywhere), as scored on held-outs 6-8.
  given_v5 where the capture timed the backward (part 10 on), the backward replayed as measured (the least of the
           module_cpu pass's steps) and the rest spilling replay.SPILLOVER (chosen on part 10, dev2): regime
           "... measured backward", as scored on held-out 9. given now reads the backward from the interleaved pass
           where there is one (part 12 on: `interleaved_backward`, each step over the host's speed beside it; chosen
           on parts 10-13, held-out 10 scores it), else as given_v5.
           given pools a measured backward's CPU scale toward the uniform fit's for a CNN (replay.BACKWARD_POOL_CONV,
           chosen on parts 10-17 before held-out 14; --backward-pool and --backward-pool-conv scan it).
           Where the GPU alone holds A's replayed step, given and uniform fit the CPU scale to A's host time
           (cpu_ms, its --host-quantile), within replay.HOST_STEP_SLACK of the least replayed step (--host-step-slack;
           added after held-out 17, scored on held-out 18). A step with no backward fits it to the host time wherever
           one was measured with --host-first 1 (replay.HOST_FIRST, off in `project`: it holds only for a host time read
           at the step's host speed, as the corpus reads it; --host-window reads it as `profile` does; chosen on parts
           1-26, held-out 23 scores it). Where A's replayed step moves little with the CPU scale (the GPU alone nearly
           holds it), the step's fit and the host time's share it, each weighted by its elasticity to the scale,
           squared (replay.HOST_WEIGHTED, --host-weighted 0 turns it off; chosen on parts 1-35, held-out 32 scores it).
Part 47 on, `given` is also scored from B's inputs as a user measures them (`user_inputs`, USER_MODELS, each with
given's interval): given_isolated (the replacement timed alone, scopes.forward_cpu_us and backward_cpu_us),
given_calibrated (the same, times the original's step-over-alone ratio) and given_in_step (read in the step by hooks
on every module); part 49 on, given_paired (B's CPU over A's read in alternating steps, scopes.paired_cpu, carried
onto A's hooks reading); part 51 on, A's hooks reading at the timed steps' speed as `profile` reads module_cpu.csv
from then on (given_paired_raw: as read before); --isolated-from gives earlier captures the alone timings (and paired
readings) of a later study.
The model was chosen on the dev half only (most pairs within 5%, then the lowest median |error|: given);
the error models of given and uniform (intervals.fit_error_model: the 80% quantile of |removed_error|, the error on
the step fraction removed, per detected regime; on the speedup's scale before held-out 13) are fitted on dev only, and only then are the held-out pairs scored, each held-out set
apart (heldout: parts 1-2's half, read once before part 3 was written; heldout2: part 3, new pairs,
read once before part 4 was written; heldout3: part 4, read once before part 5 was written; heldout4:
part 5): error, and whether the 80% interval (model
error, step noise, the spread of the projection over the profiled rounds) holds the measured speedup.
Each row also has `rest_change`: how much B's step outside the swap group changed, over A's step, and
`cpu_share_a`, `cpu_share_b`: each side's CPU time to the step's return over its step (near 1: the CPU held it).
The measured speedup (--truth): "quartile", the lower quartile of A's unprofiled steps over B's (as
gpu/replay_validation.py; the committed figures), or "rounds", the median of the interleaved rounds'
A/B ratios (a paired measure; chosen after held-out 2 showed a pair whose pooled steps are bimodal, so
held-out 3 is its first clean test).

    python gpu/replay_corpus_validation.py CORPUS [--truth quartile|rounds] [--out outputs/replay_corpus/validation.csv]
        [--error-model FILE] [--fit-on dev,heldout,...]
Held-out 4 (part 5) is scored with the error model fitted on parts 1-4 (--fit-on dev,heldout,heldout2,heldout3:
every earlier set had been read), as registered in docs/replay.md before part 5 was captured.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_validation as rv

from addressable.core.atomic import write_text
from addressable.core.errors import AddressableError
from addressable.projection import intervals
from addressable.projection import replay as replay_module
from addressable.projection.replay import (
    Change,
    Graph,
    GroupCpu,
    ReplayProjection,
    WhatIf,
    backward_group_cpu,
    consumer_casts,
    fit_cpu_scale,
    group_cpu,
    has_backward,
    is_convnet,
    project_traces,
    regime_of,
    replay,
    scales,
    takes_host_first,
)
from addressable.trace.reader import Trace

# given from B's inputs as a user measures them (part 47 on, `user_inputs`), scored beside it; their interval prefixes
USER_MODELS = {"given_isolated": "isolated_", "given_calibrated": "calibrated_", "given_in_step": "in_step_",
               "given_paired": "paired_", "given_paired_raw": "paired_raw_"}
MODELS = ("uniform", "own", "module", "event", "given", "given_uniform", "given_v1", "given_v2", "given_v3", "given_v4",
          "given_v5")
PROJECT_MODEL = "given"  # what `project --model replay` runs where a target has both inputs (project_traces)
FALLBACK_MODEL = "uniform"  # what it runs for a target without them; both error models are written
HELD = ("heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "heldout7", "heldout8",
        "heldout9", "heldout10", "heldout11", "heldout12", "heldout13", "heldout14",
        "heldout15", "heldout16", "heldout17", "heldout18", "heldout19", "heldout20", "heldout21", "heldout22",
        "heldout23", "heldout24", "heldout25", "heldout26", "heldout27", "heldout28", "heldout29", "heldout30", "heldout31",
        "heldout32", "heldout33", "heldout34", "heldout35", "heldout36", "heldout37", "heldout38",
        "heldout39", "heldout40", "heldout41", "heldout42", "heldout43", "heldout44",
        "heldout45", "heldout46", "heldout47", "heldout48",
        "heldout49", "heldout50", "heldout51", "heldout52")  # parts 1-2's half, 3-9, 11, 14-39, 41-57
DEV = ("dev", "dev2", "dev3", "dev4", "dev5")  # parts 1-2's half, part 10, part 12, part 13, part 40
# the statistic of A's unprofiled steps and of the swap group's profiler-free CPU the models read: the median, as
# `project` reads a run (step_time_ms and host_time_ms are medians) and as the truth is taken (the median of rounds'
# ratios of medians); the lower quartile (rv.STEP_QUANTILE) until held-out 20, when it was the one input the product
# does not read (changed after held-out 20, scored on held-out 21)
Q = 0.5
# the statistic of the backward pass's steps (min: its steps run apart from the interleaved timing, and a slow mode
# of the host can hold most of them; chosen on part 10, dev2, with replay.SPILLOVER)
BACKWARD_Q = 0.0
# which hooked steps give the backward's profiler-free CPU: "pass", the interleaved pass after the timing (part 12 on),
# "spread", the hooked steps after every timing round (part 40 on; the pass where a capture lacks them), or "both"
# pooled (chosen after held-out 44 on the even parts of 40-49, the odd parts checking: gpu/backward_source_choice.py;
# "pass" before; held-outs 45 and 46 score it)
BACKWARD_SOURCE = "both"
# the consumer-cast term (replay.consumer_casts, taken by the rule registered before held-out 38): where a pair's swap
# removes its module's consumers' casts (swap_dtypes.csv: A's modules return a dtype other than their input's, B's
# their input's), given also removes those casts, as `project` does for a win whose output_dtype says so: each pair's
# verdict (empty: the term is off, --no-consumer-casts or a corpus without swap_dtypes.csv)
CASTS_REMOVED: dict[str, bool] = {}


def swap_ranges(trace: Trace) -> pd.DataFrame:
    """The swap group's forward calls: its record_function ranges (ts, dur, tid)."""
    ev = trace.events
    return ev[(ev["name"] == rv.SCOPE).to_numpy() & (ev["kind"] == "cpu_annotation").to_numpy()]


def event_costs(overhead: dict) -> tuple[float, float]:
    """(us per recorded cpu_op, us per runtime call) from profiler_overhead.json's tiny-op loops."""
    k = overhead["kinds"]
    per_op = k["view"]["cost_us_per_op"] / max(k["view"]["events_per_op"].get("cpu_op", 1.0), 1e-9)
    add = k["add"]
    per_launch = add["cost_us_per_op"] - per_op * add["events_per_op"].get("cpu_op", 0.0)
    return max(per_op, 0.0), max(per_launch, 0.0)


def deprofiled(trace: Trace, g: Graph, per_op: float, per_launch: float) -> Graph:
    """The graph with each CPU gap less the profiler's cost of what it recorded in it (never below 0)."""
    ev = trace.events
    t0 = float(ev["ts"].iloc[g.cpu_row[0]]) - float(g.cpu_ts[0])  # the trace's clock minus the graph's
    ops = np.sort(ev.loc[(ev["kind"] == "cpu_op").to_numpy(), "ts"].to_numpy(float) - t0)
    prev_end = np.r_[g.cpu_ts[:1], (g.cpu_ts + g.cpu_dur)[:-1]]
    n_ops = np.searchsorted(ops, g.cpu_ts, "right") - np.searchsorted(ops, prev_end, "right")
    return dataclasses.replace(g, cpu_gap=np.maximum(g.cpu_gap - per_op * n_ops - per_launch, 0.0))


def speedup(g: Graph, changes: list[Change], scale: float | np.ndarray) -> float:
    return replay(g, changes, scale).speedup_over(replay(g, cpu_scale=scale))[0]


def casts_removed(dtypes: pd.DataFrame) -> dict[str, bool]:
    """Per pair of swap_dtypes.csv: whether its swap removes its module's consumers' casts (A's modules return a dtype
    other than their input's, B's return their input's; a pair whose probe failed removes none)."""
    d = dtypes.astype(object).fillna("")
    ok = (d["error"] == "") & (d["a_in"] != "") & (d["b_in"] != "")
    return dict(zip(d["pair"], ok & (d["a_out"] != d["a_in"]) & (d["b_out"] == d["b_in"]), strict=True))


def cast_whatif() -> WhatIf:
    """The consumers' casts of the swap group's output (`consumer_casts`) gone, with their launches."""
    return WhatIf(lambda t, g: consumer_casts(g, t, swap_ranges(t)), 1.0, 1.0, 1.0, 0.0, casts=True)


def whatifs(changes: list[Change], forward: bool, cpu: Callable[[Trace, Graph], GroupCpu] | None,
            after: float | None, casts: bool = False) -> list[WhatIf]:
    """The measured what-if as project_traces takes it: one WhatIf per part (forward first, when the group
    has forward kernels), the forward one with the group's CPU calibration and the replacement's CPU per call,
    the backward one's launches at the forward's measured scale; with `casts`, the consumers' casts removed
    before them (`cast_whatif`)."""
    parts = [WhatIf(lambda t, g, c=c: c.mask, c.k, c.k, c.k, c.kernels_after, lambda t, g, c=c: c.calls,
                    cpu if forward and i == 0 else None, after if forward and i == 0 else None,
                    cpu if forward and i > 0 else None)
             for i, c in enumerate(changes)]
    return [cast_whatif(), *parts] if casts else parts


def projected(ta: Trace, wis: list[WhatIf], step_us: float, host_us: float | None) -> ReplayProjection:
    """project_traces on A's trace: the code `addressable project --model replay` runs."""
    res = project_traces([ta], wis, lambda t, g: np.zeros(g.n_gpu, bool), step_us, host_us)
    if isinstance(res, str):
        raise AddressableError(f"{ta.path}: {res}")
    return res


def round_models(a: Path, b: Path, meta: dict, step_a: float, costs: tuple[float, float]) -> dict:
    """One profiled round: every model's wall speedup from A_r (k, kernels_after from A_r and B_r)."""
    ta, ga, fa, ba = rv.load(a)
    _, gb, fb, bb = rv.load(b)
    changes, row, _ = rv.group_changes(ga, fa, ba, gb, fb, bb)
    forward = bool(row["k_forward"] > 0)  # changes[0] is the forward part (group_changes keeps parts with time)
    own = [Change(c.mask, c.k, c.kernels_after, c.calls, "own") for c in changes]
    host = host_us(meta)
    uniform = projected(ta, whatifs(changes, forward, None, None), step_a * 1e3, host)
    s = uniform.cpu_scale
    row.update(uniform=uniform.speedup_wall, own=speedup(ga, own, s), cpu_scale=s)
    swap = meta.get("swap_cpu_ms", {})  # older captures have no profiler-free swap time: uniform
    unprof = float(np.quantile(swap["A"], Q)) * 1e3 if swap else None
    gc = group_cpu(ga, ta, swap_ranges(ta), unprof) if swap else GroupCpu(np.zeros(ga.n_cpu, bool), 1.0, 1.0, fa)
    fixed = [(gc.calls, gc.scale)]
    host_first = takes_host_first(ta)  # fitted as project_traces fits it
    rest = fit_cpu_scale(ga, step_a * 1e3, fixed=fixed, host_us=host, host_first=host_first)
    sc = scales(ga, rest, fixed)
    row.update(module=speedup(ga, changes, sc), group_scale=gc.scale, rest_scale=rest, group_share=gc.share)
    # given (what project runs): the group's calls at their measured scale, and each forward call keeping B's
    # measured CPU time per call (the replacement's, like k), the part of it in launches as in A's ranges
    after = float(np.quantile(swap["B"], Q)) * 1e3 / max(meta["swap_calls_per_step"]["B"], 1) if swap else None
    cal = (lambda t, g: group_cpu(g, t, swap_ranges(t), unprof)) if swap else None
    casts = CASTS_REMOVED.get(meta["pair"], False)
    res = projected(ta, whatifs(changes, forward, cal, after, casts), step_a * 1e3, host)
    row["given_v4"] = res.speedup_wall  # the geometric mean of the two backward hypotheses (held-outs 6-8)
    row["given_v3"] = res.speedup_wall_hypotheses[0]  # the backward at the forward's scale (scored on held-outs 5-6)
    row["given_lo"], row["given_hi"] = min(res.speedup_wall_hypotheses), max(res.speedup_wall_hypotheses)
    given = [dataclasses.replace(c, cpu_after_us=after * gc.share, cpu_calls=gc.calls) if i == 0 and forward and swap
             else c for i, c in enumerate(changes)]
    row["given_uniform"] = speedup(ga, given, s)  # the same without A's profiler-free module time
    # given before the change chosen on dev (a fused call's other runtime calls, e.g. memsets, stayed)
    row["given_v1"] = speedup(ga, [dataclasses.replace(c, cpu_calls=None) for c in given], sc)
    row["given_v2"] = speedup(ga, given, sc)  # given before the backward took the forward's scale (chosen on parts 1-5)
    # given (what project runs): where the capture timed the backward (part 10 on: module_cpu's backward pass), the
    # backward's nodes at their own profiler-free scale, each backward call keeping B's measured backward CPU per
    # call, and the rest spilling (replay.SPILLOVER); elsewhere the two hypotheses (given_v4)
    row["given"], row["regime_given"], row["backward_cpu_share"] = res.speedup_wall, res.regime, res.backward_cpu_share
    row["backward_scale"] = np.nan
    def measured(bwd: tuple[float, float], after: float | None = after) -> tuple[ReplayProjection, float]:
        """given with the backward measured: (A's backward per step, B's per call); B's forward per call `after`."""
        def bcal(t: Trace, g: Graph) -> GroupCpu:
            return backward_group_cpu(g, t, swap_ranges(t), bwd[0])
        wis = whatifs(changes, forward, cal, after, casts)
        wis[-1] = dataclasses.replace(wis[-1], cpu=bcal, cpu_after_us=bwd[1], scale_like=None, backward=True)
        return projected(ta, wis, step_a * 1e3, host), bcal(ta, ga).scale

    backward = bool(swap) and len(changes) > 1
    # given where the backward was timed: from the interleaved pass (part 12 on), each step read at the host's speed
    # beside it (chosen on parts 10-13, dev2-dev4); else the least of module_cpu's backward pass (given_v5, as
    # scored on held-out 9)
    row["given_v5"] = row["given"]  # the two hypotheses, where nothing timed the backward
    least = backward_inputs(meta) if backward else None
    interleaved = interleaved_backward(meta, step_a) if backward else None
    if least is not None:
        rb, row["backward_scale"] = measured(least)
        row["given_v5"] = rb.speedup_wall
    if interleaved is not None:
        rb, row["backward_scale"] = measured(interleaved)
    if least is not None or interleaved is not None:
        row["given"], row["regime_given"], row["backward_cpu_share"] = rb.speedup_wall, rb.regime, rb.backward_cpu_share
        row["given_lo"] = row["given_hi"] = rb.speedup_wall  # one hypothesis: the backward was measured
    # USER_MODELS: given with B's inputs as a user measures a win's (part 47 on, `user_inputs`)
    step_bwd = interleaved if interleaved is not None else least
    for kind, (fwd_us, bwd_us) in (user_inputs(meta, after, step_bwd) if swap and forward else {}).items():
        if step_bwd is None:
            row[f"given_{kind}"] = projected(ta, whatifs(changes, forward, cal, fwd_us, casts), step_a * 1e3,
                                             host).speedup_wall
        elif not np.isnan(bwd_us):
            row[f"given_{kind}"] = measured((step_bwd[0], bwd_us), fwd_us)[0].speedup_wall
    ge = deprofiled(ta, ga, *costs)
    row.update(event=speedup(ge, changes, fit_cpu_scale(ge, step_a * 1e3, host_us=host, host_first=host_first)))
    row["regime_detected"] = regime_of(ga, step_a * 1e3, has_backward(ta), is_convnet(ta))
    row["cpu_scale_basis"] = res.cpu_scale_basis
    return row


def host_us(meta: dict) -> float | None:
    """A's unprofiled CPU time per step to the step's return (µs), its HOST_QUANTILE (the median, as `addressable
    profile` records host_time_ms); None for a capture without it. With HOST_SAMPLE, the median over that sample of
    A's steps instead (`host_sample`), and with HOST_AT_STEP_SPEED that times A's median step over the sample's own
    median step."""
    cpu = meta.get("cpu_ms", {}).get("A")
    if not cpu:
        return None
    if not HOST_SAMPLE:
        return float(np.quantile(cpu, HOST_QUANTILE)) * 1e3
    steps, step = host_sample(np.asarray(meta["round"]), *HOST_SAMPLE), np.asarray(meta["step_ms"]["A"], float)
    speed = float(np.median(step) / np.median(step[steps])) if HOST_AT_STEP_SPEED else 1.0
    return float(np.median(np.asarray(cpu, float)[steps])) * speed * 1e3


def spread_rounds(rounds: np.ndarray, n: int, k: int) -> np.ndarray:
    """Indices of the last n/k steps of each of k rounds spread evenly over the run (`rounds`: each step's round)."""
    ran = np.unique(rounds)
    kept = ran[np.linspace(0, len(ran) - 1, min(k, len(ran))).round().astype(int)]
    return np.concatenate([np.flatnonzero(rounds == r)[-max(n // k, 1):] for r in kept])


def host_sample(rounds: np.ndarray, kind: str, n: int) -> np.ndarray:
    """Indices of A's steps (`rounds`: each step's round) in a sample: the first n of the last round ("window", as
    `profile` reads its host time, in steps of their own apart from the timed ones), the first or last n of every
    round ("first", "last": host steps spread over the run, as `profile` could time them), or n drawn at random,
    seeded ("random")."""
    if kind == "random":
        return np.random.default_rng(0).choice(len(rounds), min(n, len(rounds)), replace=False)
    if kind == "window":
        return np.flatnonzero(rounds == rounds.max())[:n]
    if kind == "repeats":  # three rounds spread over the run, n/3 steps after each: `profile`'s host steps per repeat
        return spread_rounds(rounds, n, 3)
    each = [np.flatnonzero(rounds == r) for r in np.unique(rounds)]
    return np.concatenate([i[:n] if kind == "first" else i[-n:] for i in each])


def backward_inputs(meta: dict) -> tuple[float, float] | None:
    """(A's swap-group backward CPU per step, B's per call), µs, profiler-free (module_cpu's backward pass: the
    span of the Marked wrapper's nodes, the BACKWARD_Q-quantile of its steps); None for a capture without it
    (parts 1-9, and part 10 as first captured, which timed each node and kept no steps)."""
    passes = meta.get("module_cpu", {})  # older captures (the committed pairs of tests/data) ran no pass
    a, b = (passes.get(k, {}).get("backward_modules", {}).get("Marked") for k in "AB")
    if not a or not b or not b["calls_per_step"] or "cpu_us_steps" not in a:
        return None
    qa, qb = (float(np.quantile(x["cpu_us_steps"], BACKWARD_Q)) for x in (a, b))
    return qa, qb / b["calls_per_step"]


def hooks_per_call(side: dict, classes: set[str]) -> float:
    """A module_cpu pass's inclusive forward CPU per call (µs) over the modules of these classes; NaN if none ran."""
    rows = [side.get("modules", {}).get(c) for c in classes]
    rows = [r for r in rows if r and r["calls_per_step"]]
    return (sum(r["cpu_us_per_step"] for r in rows) / sum(r["calls_per_step"] for r in rows)) if rows else float("nan")


def at_speed_per_call(side: dict, classes: set[str]) -> float:
    """The forward CPU per call (µs) of the modules of these classes as `profile` reads module_cpu.csv from part 51 on
    (the capture's forward_at_speed): per class, each step's CPU over the host's speed then and its calls, the medians
    over the steps it ran in, read as `hooks_per_call` reads a pass; NaN without the reading or where none ran."""
    read = side.get("forward_at_speed") or {}
    speed = np.asarray(read.get("speed") or [], float)

    def steps(row: dict, key: str) -> np.ndarray:
        return np.asarray([np.nan if x is None else x for x in row[key]], float)
    return hooks_per_call({"modules": {c: {"calls_per_step": float(np.nanmedian(steps(row, "calls_per_step"))),
                                           "cpu_us_per_step": float(np.nanmedian(steps(row, "cpu_us_per_step") / speed))}
                                       for c, row in read.get("modules", {}).items()}}, classes)


def timer_per_call(meta: dict, side: str) -> float:
    """The swap group's timer over the timed steps (their Q quantile) per call of `side`'s swapped modules, µs."""
    return float(np.quantile(meta["swap_cpu_ms"][side], Q)) * 1e3 / max(meta["swap_calls_per_step"][side], 1)


def user_inputs(meta: dict, after: float | None, step_bwd: tuple[float, float] | None) -> dict[str, tuple[float, float]]:
    """B's forward and backward CPU per call (µs) as a user's path gives them, on the basis `given` reads (the forward
    on the swap group's timer, `after`), where the capture timed the swapped modules alone (`isolated_cpu`, part 47 on):
      isolated    the replacement timed alone (`scopes.forward_cpu_us`, `backward_cpu_us`: what wins.csv asks for):
                  `after` less what the step's hooks pass (module_cpu, as `profile` times the original) read of it
                  beyond its time alone; the backward as timed alone;
      calibrated  the same, each alone time multiplied by the original's in the step (the hooks pass; the backward pass)
                  over the original's alone: the original module, timed alone by the same method, says how far
                  timing alone reads under the step on that host;
      in_step     the replacement read in the step by `scopes.in_step_cpu_us` (part 48 on: `in_step_cpu`, hooks on it
                  alone; part 47: the capture's module_cpu pass, hooks on every module, as the first in_step_cpu_us
                  read it) beside the original read by module_cpu's pass, as module_cpu.csv has it (`project` removes
                  that): B's reading plus what the timer read of A beyond its hooks reading; the backward as
                  in_step_cpu_us read it (part 48 on) or as the step's pass read it;
      paired      B's CPU over A's, read in alternating steps by `scopes.paired_cpu` (part 49 on: `paired_cpu`), carried
                  onto A's hooks reading as `project` carries it onto module_cpu.csv's (A's timer reading less what
                  the ratio removes of the hooks reading); the backward ratio onto A's backward as `given` reads it;
      paired_raw  the same on the hooks pass as read before part 51 (its steps not put at the timed steps' speed).
    A's hooks reading in in_step and paired is module_cpu.csv's as `profile` reads it: at the timed steps' speed
    where the capture read it so (part 51 on, `at_speed_per_call`), else the pass as it ran.
    {} without the timings; a backward NaN where none was timed."""
    iso, passes = meta.get("isolated_cpu") or {}, meta.get("module_cpu") or {}
    if after is None or not iso.get("A") or not iso.get("B") or not iso["B"].get("forward_us_per_call"):
        return {}
    hook, alone, back = {}, {}, {}
    for side in "AB":
        hook[side] = hooks_per_call(passes.get(side, {}), {c["module"] for c in iso[side]["calls"]})
        alone[side] = float(iso[side]["forward_us_per_call"] or np.nan)
        back[side] = float(iso[side].get("backward_us_per_call") or np.nan)
    if np.isnan(hook["B"]):
        return {}
    hook_a = at_speed_per_call(passes.get("A", {}), {c["module"] for c in iso["A"]["calls"]})
    hook_a = hook["A"] if np.isnan(hook_a) else hook_a  # module_cpu.csv's reading of the original
    a_step_back = step_bwd[0] / max(meta["swap_calls_per_step"]["A"], 1) if step_bwd is not None else np.nan
    a_timer = timer_per_call(meta, "A")
    b_step = (meta.get("in_step_cpu") or {}).get("B") or {}  # part 48 on: as `scopes.in_step_cpu_us` reads it
    b_fwd = b_step.get("forward_us_per_call") or hook["B"]
    b_bwd = b_step.get("backward_us_per_call") or (step_bwd[1] if step_bwd is not None else np.nan)
    paired = meta.get("paired_cpu") or {}
    ratio, ratio_back = (paired.get(k) for k in ("forward_ratio", "backward_ratio"))
    return {"in_step": (b_fwd + a_timer - hook_a, b_bwd if step_bwd is not None else np.nan),
            "isolated": (after - (hook["B"] - alone["B"]), back["B"]),
            "calibrated": (after - (hook["B"] - alone["B"] * hook["A"] / alone["A"]),
                           back["B"] * a_step_back / back["A"]),
            **({kind: (a_timer - (1 - ratio) * a_hooks, ratio_back * a_step_back if ratio_back is not None else np.nan)
                for kind, a_hooks in (("paired", hook_a), ("paired_raw", hook["A"]))} if ratio is not None else {})}


def hooked_backward_steps(meta: dict) -> dict:
    """The capture's hooked steps BACKWARD_SOURCE names: those after every timing round ("spread", where the capture
    has them), the interleaved pass after the timing ("pass"), or both pooled ("both", each variant's steps of the
    two one after the other; the pass alone where a capture has no spread); {} for a capture with neither."""
    spread, passed = meta.get("backward_spread") or {}, meta.get("backward_pass") or {}
    if BACKWARD_SOURCE == "both" and spread and passed:
        return {k: {c: list(passed[k][c]) + list(spread[k][c]) for c in ("cpu_us_steps", "calls_steps", "step_ms")}
                for k in "AB"}
    return (BACKWARD_SOURCE == "spread" and spread) or passed


def interleaved_backward(meta: dict, step_a: float) -> tuple[float, float] | None:
    """(A's swap-group backward CPU per step, B's per call), µs, from the interleaved backward pass (part 12 on;
    with BACKWARD_SOURCE "spread", the hooked steps after every timing round where the capture has them, part 40
    on): each step's reading over the host's speed in that A/B pair of steps (A's step there over its timed steps'
    median, `step_a` ms), the median over the pairs; None for a capture without the pass. B is read
    against A's step beside it, not its own: B's unprofiled step is what the projection is scored on."""
    bp = hooked_backward_steps(meta)
    a, b = bp.get("A"), bp.get("B")
    if not a or not b or not a["cpu_us_steps"] or not b["calls_steps"][0]:
        return None
    mode = np.asarray(a["step_ms"], float) / step_a
    per = [float(np.median(np.asarray(x["cpu_us_steps"], float) / mode)) for x in (a, b)]
    return per[0], per[1] / float(np.median(b["calls_steps"]))


def rest_change(meta: dict) -> float:
    """How much the step outside the swap group changed from A to B, over A's step (Q-quantiles of
    the unprofiled steps and of the group's profiler-free CPU time): `given` takes it as unchanged."""
    if not meta.get("swap_cpu_ms"):
        return float("nan")
    (sa, sb), (ta, tb) = ([float(np.quantile(meta[k][x], Q)) for x in "AB"] for k in ("swap_cpu_ms", "step_ms"))
    return ((tb - sb) - (ta - sa)) / ta


def cpu_share(meta: dict, side: str) -> float:
    """The side's unprofiled CPU time per step (to the step's return, before its sync) over its step, medians: near 1,
    the CPU held the step; well under 1, the GPU did (NaN for captures without cpu_ms)."""
    cpu = meta.get("cpu_ms", {}).get(side)
    return float(np.median(cpu) / np.median(meta["step_ms"][side])) if cpu else float("nan")


def with_study(meta: dict, study: dict) -> dict:
    """A capture's record with a later study's readings (`--isolated`: isolated_cpu, paired_cpu) where it has none."""
    return {**meta, **{key: meta.get(key) or study.get(key) or {} for key in ("isolated_cpu", "paired_cpu")}}


def validate_pair(folder: Path, name: str, costs: tuple[float, float], truth: str = "quartile") -> dict:
    """One pair's row: what each model projects from A, against the measured speedup (`truth`: "quartile",
    the lower quartile of A's pooled unprofiled steps over B's; "rounds", the median of the interleaved
    rounds' A/B ratios)."""
    meta = json.loads((folder / f"{name}.json").read_text())
    study = ISOLATED_FROM / f"{name}.isolated.json" if ISOLATED_FROM is not None else None
    if study is not None and study.is_file():  # read later, in another call
        meta = with_study(meta, json.loads(study.read_text()))
    step_a = float(np.quantile(meta["step_ms"]["A"], Q))
    qa, qb = (float(np.quantile(meta["step_ms"][x], rv.STEP_QUANTILE)) for x in "AB")  # the "quartile" truth's
    per_round = pd.DataFrame([round_models(a, b, meta, step_a, costs) for a, b in rv.rounds_of(folder, name)])
    row = {"pair": name, "regime": meta["regime"], "swap": meta.get("swap", ""), "split": meta.get("split", "dev"),
           "regime_detected": per_round["regime_detected"].iloc[0],
           "regime_given": per_round["regime_given"].iloc[0], "cpu_scale_basis": per_round["cpu_scale_basis"].iloc[0],
           "measured_quartile": qa / qb,
           "measured_ci95": meta.get("ratio_ci95", np.nan),
           "measured_rounds": float(np.median(meta["ratio_rounds"])) if meta.get("ratio_rounds") else np.nan,
           "step_ms_a": step_a, "step_ms_b": float(np.quantile(meta["step_ms"]["B"], Q)), "cpu_share_a": cpu_share(meta, "A"),
           "cpu_share_b": cpu_share(meta, "B"), "rest_change": rest_change(meta),
           "step_noise": intervals.step_noise(np.asarray(meta["step_ms"]["A"])),  # as `project` reads it
           "rounds": len(per_round)}
    row["measured"] = row[f"measured_{truth}"]
    for col in (*MODELS, "cpu_scale", "group_scale", "rest_scale", "group_share", "backward_cpu_share", "backward_scale", "k_forward", "k_backward",
                "kernels_forward_a", "kernels_after_forward"):
        if col in per_round:
            row[col] = float(per_round[col].median())
    for m in MODELS:
        row[f"{m}_min"], row[f"{m}_max"] = per_round[m].min(), per_round[m].max()
        row[f"{m}_error"] = row[m] / row["measured"] - 1
    for m in USER_MODELS:  # NaN where the capture did not time the modules alone
        x = per_round[m] if m in per_round else pd.Series(np.nan, index=per_round.index)
        row[m], row[f"{m}_min"], row[f"{m}_max"] = float(x.median()), x.min(), x.max()
        row[f"{m}_error"] = row[m] / row["measured"] - 1
    if "given_lo" in per_round:  # given's own interval spans both backward hypotheses
        row["given_min"] = min(row["given_min"], per_round["given_lo"].min())
        row["given_max"] = max(row["given_max"], per_round["given_hi"].max())
    return row


def validate_one(pair: tuple[Path, str], truth: str) -> dict:
    """`validate_pair` for one (folder, name), with its part's profiler cost per event."""
    folder, name = pair
    over = folder / "profiler_overhead.json"
    costs = event_costs(json.loads(over.read_text())) if over.exists() else (0.0, 0.0)
    return validate_pair(folder, name, costs, truth)


def choose(dev: pd.DataFrame) -> str:
    """The model with the most dev pairs within 5%, then the lowest median |error| on the dev half."""
    score = {m: (-(dev[f"{m}_error"].abs() <= 0.05).sum(), dev[f"{m}_error"].abs().median()) for m in MODELS}
    return min(score, key=lambda m: score[m])


def score(t: pd.DataFrame, m: str, inside: str | None = None) -> str:
    """Median and max |error|, pairs within 5% and (given the column) inside the 80% interval."""
    e = t[f"{m}_error"].abs()
    return (f"median |error| {e.median():.1%}, max {e.max():.1%}, within 5%: {(e <= 0.05).sum()}/{len(t)}"
            + (f", inside the 80% interval: {int(t[inside].sum())}/{len(t)}" if inside and inside in t else ""))


def intervals_of(t: pd.DataFrame, m: str, prefix: str, source: str, fit_on: tuple[str, ...] = ("dev",),
                 regime: str = "regime_detected") -> intervals.ErrorModel:
    """Model m's error model fitted on the rows of t whose split is in `fit_on` (the development data), its
    80% intervals on every row (columns PREFIXlo, PREFIXhi, PREFIXinside, PREFIXhalf_width), and the max
    |error| per regime over every held-out set (reported, for `project`'s warnings; fitted on only where
    `fit_on` names the set)."""
    dev, held = t[t["split"].isin(fit_on)], t[t["split"].isin(HELD)]
    model = intervals.fit_error_model({r: list(intervals.removed_error(g[m], g["measured"]))
                                       for r, g in dev.groupby(regime)}, source=source)
    t[f"{prefix}half_width"] = [model.width(r) for r in t[regime]]
    bounds = [intervals.widen(r[m], r[f"{m}_min"], r[f"{m}_max"], r[f"{prefix}half_width"], r["step_noise"],
                              model.floor) for _, r in t.iterrows()]
    t[f"{prefix}lo"], t[f"{prefix}hi"] = [b[0] for b in bounds], [b[1] for b in bounds]
    t[f"{prefix}inside"] = (t[f"{prefix}lo"] <= t["measured"]) & (t["measured"] <= t[f"{prefix}hi"])
    errors = held[f"{m}_error"].abs().groupby(held[regime])
    model.heldout_max = {r: float(e) for r, e in errors.max().items()}
    model.heldout_n = {r: int(n) for r, n in errors.size().items()}
    return model


def user_intervals(t: pd.DataFrame, floor: float) -> None:
    """Each user-input model's 80% interval (PREFIXlo, PREFIXhi, PREFIXinside; USER_MODELS' prefixes): given's
    half-width for the pair's regime around its point, as `project` widens a projection from a user's inputs; NaN
    where it was not measured."""
    for m, prefix in USER_MODELS.items():
        bounds = [intervals.widen(r[m], r[f"{m}_min"], r[f"{m}_max"], r["half_width"], r["step_noise"], floor)
                  if pd.notna(r[m]) else (np.nan, np.nan) for _, r in t.iterrows()]
        t[f"{prefix}lo"], t[f"{prefix}hi"] = [b[0] for b in bounds], [b[1] for b in bounds]
        t[f"{prefix}inside"] = ((t[f"{prefix}lo"] <= t["measured"]) & (t["measured"] <= t[f"{prefix}hi"])).where(
            t[m].notna())


def report(t: pd.DataFrame, truth: str = "quartile", fit_on: tuple[str, ...] = ("dev",)) -> None:
    """Each half's scores: dev (fitted on), held-out 1 (read before part 3 existed), held-out 2 (read before
    part 4 existed), held-out 3 (read before part 5 existed), held-out 4; the sets fitted on say so."""
    dev = t[t["split"].isin(fit_on)]
    for m in MODELS:
        print(f"development data {m}: {score(dev, m)}")
    print(f"the choice rule on the development data (most within 5%, then median) picks {choose(dev)}; "
          f"project runs {PROJECT_MODEL} (where a target falls back: {FALLBACK_MODEL})")
    names = (("dev", "dev"), ("heldout", "HELD-OUT 1 (already seen)"),
             ("heldout2", "HELD-OUT 2" if truth == "quartile" else "HELD-OUT 2 (already seen)"),
             ("heldout3", "HELD-OUT 3"), ("heldout4", "HELD-OUT 4"), ("heldout5", "HELD-OUT 5"),
             ("heldout6", "HELD-OUT 6"), ("heldout7", "HELD-OUT 7"), ("heldout8", "HELD-OUT 8"),
             ("dev2", "dev2 (parts 1-9's training pairs again, the backward timed)"), ("heldout9", "HELD-OUT 9"),
             ("dev3", "dev3 (held-out 9's pairs again, the backward also timed interleaved)"),
             ("dev4", "dev4 (held-out 9's pairs a third time)"), ("heldout10", "HELD-OUT 10"),
             ("heldout11", "HELD-OUT 11"), ("heldout12", "HELD-OUT 12"),
             ("heldout13", "HELD-OUT 13"))
    named = {split for split, _ in names}
    for split, words in (*names, *((s, f"HELD-OUT {s.removeprefix('heldout')}") for s in HELD if s not in named)):
        words = words.split(" (")[0].lower() + " (fitted on)" if split in fit_on and split != "dev" else words
        h = t[t["split"] == split]
        if not len(h):
            continue
        print(f"{words} ({PROJECT_MODEL}, what project runs): {score(h, PROJECT_MODEL, 'inside')}")
        if truth == "quartile":
            e = (h[PROJECT_MODEL] / h["measured_rounds"] - 1).abs()
            inside = ((h["lo"] <= h["measured_rounds"]) & (h["measured_rounds"] <= h["hi"])).sum()
            print(f"  {words} {PROJECT_MODEL} against the median of the interleaved rounds' A/B ratios (--truth "
                  f"rounds, added after held-out 2 was read; its error model is not refitted here): median |error| "
                  f"{e.median():.1%}, max {e.max():.1%}, within 5%: {(e <= 0.05).sum()}/{len(h)}, inside the 80% "
                  f"interval: {inside}/{len(h)}")
        print(f"  {words} {FALLBACK_MODEL} (its fallback): {score(h, FALLBACK_MODEL, 'uniform_inside')}")
        if split != "dev":
            for m in (m for m in MODELS if m not in (PROJECT_MODEL, FALLBACK_MODEL)):
                print(f"  {words} {m} (not run by project): {score(h, m)}")
    if len(fit_on) > 1:
        d = t[t["split"].isin(fit_on)]
        print(f"development data (fitted on: {', '.join(fit_on)}; {PROJECT_MODEL}): {score(d, PROJECT_MODEL, 'inside')}")
        print(f"  development data {FALLBACK_MODEL}: {score(d, FALLBACK_MODEL, 'uniform_inside')}")


def parse_host_sample(text: str) -> tuple[str, int] | None:
    """"first:3" -> ("first", 3); None where it names no sample (`--host-sample`)."""
    kind, _, n = text.partition(":")
    return (kind, int(n)) if kind in ("first", "last", "random", "repeats") and n.isdigit() and int(n) >= 1 else None


def corpus_pairs(root: Path) -> list[tuple[Path, str]]:
    return sorted((p.parent, p.name.removesuffix(".A.json.gz")) for p in root.rglob("*.A.json.gz"))


# the replay's constants a run may set, to scan them on the development data (default: the shipped ones)
MODEL_CONSTANTS = {"spillover": "SPILLOVER", "spillover_conv": "SPILLOVER_CONV",
                   "spillover_conv_kept": "SPILLOVER_CONV_KEPT", "backward_pool": "BACKWARD_POOL", "backward_pool_conv": "BACKWARD_POOL_CONV",
                   "forward_pool_conv": "FORWARD_POOL_CONV", "forward_pool_ratio": "FORWARD_POOL_RATIO",
                   "host_step_slack": "HOST_STEP_SLACK", "host_first": "HOST_FIRST", "host_weighted": "HOST_WEIGHTED",
                   "concurrent_work": "CONCURRENT_WORK"}
# a folder of `gpu/replay_corpus.py --isolated` readings (NAME.isolated.json) for captures without isolated_cpu
ISOLATED_FROM: Path | None = None
# the statistic of A's host times (cpu_ms) the validation passes as host_us: the median, as `profile` records it
HOST_QUANTILE = 0.5
# A's host time over a sample of its steps (`host_sample`, `host_us`): (kind, n), None for every step; and whether
# put at the step's host speed
HOST_SAMPLE: tuple[str, int] | None = None
HOST_AT_STEP_SPEED = False


def add_model_constants(ap: argparse.ArgumentParser) -> None:
    """--spillover, --spillover-conv (the same for a CNN's measured backward), --spillover-conv-kept (a CNN's without
    the consumer-cast term), --backward-pool (a measured backward's weight on the uniform CPU scale, runs other than CNNs),
    --backward-pool-conv (the same for a CNN), --forward-pool-conv (a CNN's measured forward group's),
    --forward-pool-ratio (its target over the uniform fit's scale),
    --host-step-slack, --host-first (1: a step with no backward fits
    its scale to its host time wherever one was measured), --host-weighted (0: the step alone fits its scale
    wherever it can) and --concurrent-work (1: sharing is work-conserving): replay's constants for this run."""
    for dest, name in MODEL_CONSTANTS.items():
        ap.add_argument(f"--{dest.replace('_', '-')}", dest=dest, type=float, default=None,
                        help=f"replay.{name} for this run (default {getattr(replay_module, name)})")


def set_model_constants(args: argparse.Namespace) -> None:
    for dest, name in MODEL_CONSTANTS.items():
        if getattr(args, dest) is not None:
            setattr(replay_module, name, getattr(args, dest))


def main(argv: list[str] | None = None) -> int:
    global HOST_QUANTILE, Q, HOST_AT_STEP_SPEED, HOST_SAMPLE, BACKWARD_SOURCE, CASTS_REMOVED, ISOLATED_FROM
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--out", type=Path, default=Path("outputs/replay_corpus/validation.csv"))
    ap.add_argument("--truth", choices=["quartile", "rounds"], default="quartile",
                    help="the measured speedup: the lower quartiles' ratio (what the committed figures use) or the "
                         "median of the interleaved rounds' ratios")
    ap.add_argument("--error-model", type=Path, default=None, help="write the fitted error model here")
    ap.add_argument("--dev-only", action="store_true", help="read the development data alone (to develop on it)")
    ap.add_argument("--fit-on", default="dev", help="comma-separated splits the error model is fitted on, the "
                    "development data (held-out 4 is scored with dev,heldout,heldout2,heldout3)")
    ap.add_argument("--host-quantile", type=float, default=HOST_QUANTILE,
                    help="the quantile of A's host times passed as the host time (default: the median)")
    ap.add_argument("--step-quantile", type=float, default=Q,
                    help="the quantile of the unprofiled steps and the swap group's CPU times every model reads "
                         f"(default {Q}, the median, as `project` reads a run)")
    ap.add_argument("--jobs", type=int, default=1, help="pairs validated at once (processes; default 1)")
    ap.add_argument("--host-window", type=int, default=0, help="read A's host time over this many steps of its last "
                    "round, as `profile` reads it apart from its timed steps (default 0: every step)")
    ap.add_argument("--host-at-step-speed", action="store_true", help="with --host-window or --host-sample: times "
                    "A's median step over those steps' own median step")
    ap.add_argument("--host-sample", default=None, metavar="KIND:N", help="read A's host time over a sample of its "
                    "steps spread over the run: first:N or last:N (of every round), random:N (seeded), repeats:N "
                    "(the last N/3 of three rounds spread over the run, as `profile` read it after each repeat until its host steps "
                    "were spread through them)")
    ap.add_argument("--drop-sync-records", action="store_true", help="drop the traces' records of the GPU's waits "
                    "(part 30 on) on load, their waits then inferred from timing: a reading beside the score")
    ap.add_argument("--backward-source", choices=["pass", "spread", "both"], default=BACKWARD_SOURCE,
                    help="the hooked steps a measured backward is read from: the interleaved pass after the timing "
                    "(part 12 on), the steps after every timing round (part 40 on; the pass where a capture lacks "
                    f"them) or both pooled; default {BACKWARD_SOURCE}")
    ap.add_argument("--corpus-regime", default=None, help="read only the pairs the corpus files under this regime "
                    "(their JSON's `regime`, split.csv's: cnn, train-small, ...), to scan a constant that touches them alone")
    ap.add_argument("--pairs", default=None, metavar="REGEX", help="read only the pairs whose name this matches "
                    "(re.search)")
    ap.add_argument("--consumer-casts", action=argparse.BooleanOptionalAction, default=None,
                    help="given also removes the casts a swap saves its module's consumers, where CORPUS/swap_dtypes.csv "
                         "says it does (replay.consumer_casts; default: on where the corpus has that file)")
    ap.add_argument("--isolated-from", type=Path, default=None, metavar="DIR", help="the swapped modules timed alone "
                    "and read in alternating steps (gpu/replay_corpus.py --isolated: DIR/NAME.isolated.json) for "
                    "captures that did not read them, for given_isolated, given_calibrated and given_paired")
    add_model_constants(ap)
    args = ap.parse_args(argv)
    if args.jobs < 1:
        print("--jobs: must be at least 1", file=sys.stderr)
        return 2
    if args.host_window < 0:
        print("--host-window: must be 0 or more", file=sys.stderr)
        return 2
    sample = parse_host_sample(args.host_sample) if args.host_sample else None
    if args.host_sample and (sample is None or args.host_window):
        print(f"--host-sample: expected first:N, last:N, random:N or repeats:N with N at least 1, and no --host-window; got "
              f"{args.host_sample}", file=sys.stderr)
        return 2
    dtypes = args.corpus / "swap_dtypes.csv"
    if args.consumer_casts and not dtypes.is_file():
        print(f"--consumer-casts: {dtypes} is not a file (gpu/swap_dtypes.py writes it)", file=sys.stderr)
        return 2
    casts = dtypes.is_file() if args.consumer_casts is None else args.consumer_casts
    CASTS_REMOVED = casts_removed(pd.read_csv(dtypes, dtype=str)) if casts else {}
    set_model_constants(args)
    HOST_QUANTILE, Q = args.host_quantile, args.step_quantile
    HOST_AT_STEP_SPEED = args.host_at_step_speed
    BACKWARD_SOURCE = args.backward_source
    HOST_SAMPLE = ("window", args.host_window) if args.host_window else sample
    rv.DROP_SYNC_RECORDS = args.drop_sync_records
    if args.isolated_from is not None and not args.isolated_from.is_dir():
        print(f"--isolated-from: {args.isolated_from} is not a folder", file=sys.stderr)
        return 2
    ISOLATED_FROM = args.isolated_from
    pairs = corpus_pairs(args.corpus)
    fit_on = tuple(x for x in args.fit_on.split(",") if x)
    unknown = set(fit_on) - {*DEV, *HELD}
    if unknown or not fit_on:
        print(f"--fit-on: unknown splits {', '.join(sorted(unknown)) or '(none given)'}; known: {', '.join((*DEV, *HELD))}",
              file=sys.stderr)
        return 2
    try:
        named = re.compile(args.pairs) if args.pairs else None
    except re.error as e:
        print(f"--pairs: not a regular expression: {e}", file=sys.stderr)
        return 2
    def kept(folder: Path, name: str) -> bool:
        if named is not None and not named.search(name):
            return False
        if not args.dev_only and args.corpus_regime is None:
            return True
        meta = json.loads((folder / f"{name}.json").read_text())
        return ((not args.dev_only or meta.get("split", "dev") in fit_on)
                and (args.corpus_regime is None or meta.get("regime") == args.corpus_regime))

    pairs = [(f, n) for f, n in pairs if kept(f, n)]
    if not pairs:
        print(f"no pairs (NAME.A.json.gz) under {args.corpus}"
              + (" that --dev-only, --corpus-regime and --pairs keep" if args.dev_only or args.corpus_regime or named else ""),
              file=sys.stderr)
        return 2
    if args.consumer_casts is None and not casts:
        print(f"no {dtypes.name} under {args.corpus}: given runs without the consumer-cast term", file=sys.stderr)
    rows = []
    try:
        # workers are forked after the constants above are set, so they replay with them
        with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
            for r in pool.map(validate_one, pairs, [args.truth] * len(pairs)):
                rows.append(r)
                print(f"{r['pair']} [{r['split']}, {r['regime_detected']}]: measured {r['measured']:.3f} "
                      + " ".join(f"{m} {r[m]:.3f} ({r[f'{m}_error']:+.1%})" for m in MODELS), flush=True)
    except AddressableError as e:
        print(e, file=sys.stderr)
        return 2
    t = pd.DataFrame(rows)
    t["model"] = PROJECT_MODEL
    src = f"{args.out} (fitted on {'+'.join(fit_on)}, model {{}}, truth {args.truth})"
    # given's regimes are project's for it (" large backward": replay.LARGE_BACKWARD_SHARE); uniform's the trace's
    try:
        ours = {m: intervals_of(t, m, p, src.format(m), fit_on, col)
                for m, p, col in ((PROJECT_MODEL, "", "regime_given"), (FALLBACK_MODEL, "uniform_", "regime_detected"))}
    except AddressableError as e:  # e.g. no pair of the --fit-on splits under the corpus
        print(f"{e} (--fit-on {args.fit_on}; splits under {args.corpus}: {', '.join(sorted(set(t.split)))})",
              file=sys.stderr)
        return 2
    user_intervals(t, ours[PROJECT_MODEL].floor)
    report(t, args.truth, fit_on)
    print("error model (dev): " + "; ".join(f"{m}: " + ", ".join(f"{r} {e.width(r):.1%}" for r in sorted(e.n_dev))
                                            for m, e in ours.items()))
    write_text(args.out, t.to_csv(index=False, float_format="%.4f"))
    if args.error_model:
        write_text(args.error_model, intervals.error_model_yaml(ours))
    print(f"wrote {args.out}" + (f" and {args.error_model}" if args.error_model else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
