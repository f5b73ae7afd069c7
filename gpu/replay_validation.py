"""Check the replay and Amdahl projections against real A/B swaps (runs on the CPU, over traces).

Each pair (PAIRS/NAME.A.json.gz, NAME.B.json.gz, NAME.json) is one model profiled twice on the
H200 (gpu/capture_session.py): A with an eager module, B with a fused replacement, nothing else
changed. Both mark the swapped module's forward with record_function('swap_group'). From A and
B alone:
  - the group: GPU ops launched inside a swap_group range (forward), plus those launched by the
    autograd nodes of the ops in it (backward, joined on the ops' sequence numbers); one call per
    swap_group range;
  - k = group time in A / group time in B, and kernels_after = median kernels per call in B,
    forward and backward separately;
Then the projection from A alone (its trace and its unprofiled step time) is compared with B.
A step time is the lower quartile of the variant's unprofiled steps (NAME.json, `step_ms`), for every
pair and for A's calibration alike: host noise (other processes, CPU frequency) and GPU clock
throttling only add time, and on the H200 they come in modes that last several steps (GPT-2
training jumps between ~47 and ~55 ms a step), so the median of 60 steps can land in either mode;
the lower quartile estimates the undisturbed step and is far steadier than the minimum.
A capture may hold several profiled rounds, taken in alternating windows A, B, A, B, ...
(NAME.A.json.gz is round 0, NAME.A.r1.json.gz / NAME.B.r1.json.gz round 1, ...): GPU clocks
drift between windows (the same GEMMs took 8% longer in one window than in the next), so every
per-trace figure is computed per round (A_r with B_r) and reported as the median over rounds,
with the min and max of the speedups in *_min / *_max columns.
  measured_speedup_wall    = step A / step B; measured_speedup_wall_median is the ratio of medians
  measured_speedup_kernel  = median over rounds of GPU busy time per profiled step A_r / B_r (the
                             union of kernel intervals)
  replay_speedup_*         = addressable.projection.replay on A's graph with the two groups changed; the CPU
                             time of the graph is first scaled so its replayed step matches A's
                             unprofiled step (replay.fit_cpu_scale), and kernels that share the GPU
                             across streams are re-timed (replay's sharing model); each kept launch
                             keeps the trace's typical CPU time before a launch
                             (`replay_own_dispatch_speedup_wall`: its own, the low end of the bracket);
                             `replay_raw_speedup_wall` is the
                             ratio of profiled-step spans without that scaling
  amdahl_speedup_*         = Amdahl's law: kernel basis over summed kernel time, wall basis over
                             A's unprofiled step time.
  The projections (replay and Amdahl) use round r's A trace with k and kernels_after from A_r and
  B_r; the *_error_* columns compare their median with the measured speedup.

    python gpu/replay_validation.py /work/wt/gpu1/pairs [--out results/h200/replay_validation.csv]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from addressable.core.atomic import write_text
from addressable.core.errors import AddressableError
from addressable.projection.replay import (
    Change,
    Graph,
    build_graph,
    fit_cpu_scale,
    original,
    replay,
    replayable,
    step_span,
)
from addressable.trace.reader import Trace, iter_event_chunks, load_trace

SCOPE = "swap_group"
COLUMNS = ["pair", "regime", "measured_speedup_wall", "measured_speedup_kernel", "replay_speedup_wall",
           "replay_speedup_kernel", "amdahl_speedup_wall", "amdahl_speedup_kernel"]
STEP_QUANTILE = 0.25  # the statistic of unprofiled step times (see above)
EXTRA = ["measured_speedup_wall_median", "replay_own_dispatch_speedup_wall", "replay_raw_speedup_wall", "replay_error_wall", "replay_error_kernel", "amdahl_error_wall",
         "amdahl_error_kernel", "cpu_scale", "replay_residual", "k_forward", "kernels_forward_a",
         "kernels_after_forward", "k_backward", "kernels_backward_a", "kernels_after_backward",
         "group_share_kernel", "step_ms_a", "step_ms_b", "profiled_step_ms_a", "rounds",
         "kernel_busy_us_a", "kernel_busy_us_b"]
# per-round figures reported with their min and max over the profiled rounds beside the median
RANGED = ["measured_speedup_kernel", "replay_speedup_wall", "replay_speedup_kernel", "amdahl_speedup_wall",
          "amdahl_speedup_kernel"]
EXTRA += [f"{c}_{e}" for c in RANGED for e in ("min", "max")]


def sequence_ops(path: Path) -> pd.DataFrame:
    """CPU ops with an autograd sequence number: name, tid, ts, end, seq."""
    rows = []
    for chunk in iter_event_chunks(path):
        if isinstance(chunk, dict):
            continue
        for e in chunk:
            if e.get("cat") == "cpu_op" and e.get("ph") == "X":
                seq = (e.get("args") or {}).get("Sequence number")
                if isinstance(seq, int):
                    rows.append((e.get("name"), e.get("tid"), e["ts"], e["ts"] + e["dur"], seq))
    return pd.DataFrame(rows, columns=["name", "tid", "ts", "end", "seq"])


def inside(ts: np.ndarray, tid: np.ndarray, starts: np.ndarray, ends: np.ndarray, tids: np.ndarray) -> np.ndarray:
    """Index of the range (same thread) holding each time, -1 for none (ranges of one thread do not overlap)."""
    out = np.full(len(ts), -1)
    for t in np.unique(tids):
        r = np.flatnonzero(tids == t)
        r = r[np.argsort(starts[r])]
        q = np.flatnonzero(tid == t)
        i = np.searchsorted(starts[r], ts[q], "right") - 1
        ok = (i >= 0) & (ts[q] <= ends[r[np.clip(i, 0, None)]])
        out[q[ok]] = r[i[ok]]
    return out


def group_calls(trace: Trace, g: Graph, seq_ops: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per GPU op of g: its forward call (swap_group range index, -1 none), its backward call (-1 none)."""
    ev = trace.events
    scopes = ev[(ev["name"] == SCOPE).to_numpy() & (ev["kind"] == "cpu_annotation").to_numpy()].sort_values("ts")
    s_ts, s_end = scopes["ts"].to_numpy(float), (scopes["ts"] + scopes["dur"]).to_numpy(float)
    s_tid = scopes["tid"].to_numpy(dtype=np.int64, na_value=-1)
    call_ts = ev["ts"].to_numpy(float)[g.cpu_row[g.gpu_anchor]]  # the launch calls, absolute clock
    call_tid = ev["tid"].to_numpy(dtype=np.int64, na_value=-1)[g.cpu_row[g.gpu_anchor]]
    launched = g.gpu_launched
    fwd = np.where(launched, inside(call_ts, call_tid, s_ts, s_end, s_tid), -1)
    # forward ops in a scope: their sequence numbers name the autograd nodes of the backward
    ops = seq_ops
    o_scope = inside(ops["ts"].to_numpy(float), ops["tid"].to_numpy(np.int64), s_ts, s_end, s_tid)
    fwd_ops = ops[(o_scope >= 0) & ~ops["name"].str.startswith("autograd::")]
    scope_of_seq = dict(zip(fwd_ops["seq"], o_scope[(o_scope >= 0) & ~ops["name"].str.startswith("autograd::")],
                            strict=True))
    nodes = ops[ops["name"].str.startswith("autograd::engine::evaluate_function") & ops["seq"].isin(scope_of_seq)]
    bwd = np.full(g.n_gpu, -1)
    if len(nodes):
        n_ts, n_end = nodes["ts"].to_numpy(float), nodes["end"].to_numpy(float)
        n_tid = nodes["tid"].to_numpy(np.int64)
        hit = np.where(launched & (fwd < 0), inside(call_ts, call_tid, n_ts, n_end, n_tid), -1)
        seq = nodes["seq"].to_numpy()
        bwd[hit >= 0] = [scope_of_seq[s] for s in seq[hit[hit >= 0]]]
    return fwd, bwd


# whether the GPU's records of its waits (`cuda_sync` rows, kind "sync") are dropped on load, leaving the waits to be
# inferred from timing as for a trace without them (gpu/replay_corpus_validation.py --drop-sync-records: a reading)
DROP_SYNC_RECORDS = False


def without_sync_records(trace: Trace) -> Trace:
    """The trace as if recorded without the GPU's records of its waits: its waits are then inferred from timing."""
    return dataclasses.replace(trace, events=trace.events[(trace.events["kind"] != "sync").to_numpy()])


def load(path: Path) -> tuple[Trace, Graph, np.ndarray, np.ndarray]:
    trace = load_trace(path, runtime=True)
    if DROP_SYNC_RECORDS:
        trace = without_sync_records(trace)
    why = replayable(trace)
    if why:
        raise AddressableError(f"{path}: cannot replay: {why}")
    g = build_graph(trace)
    fwd, bwd = group_calls(trace, g, sequence_ops(path))
    return trace, g, fwd, bwd


def in_steps(g: Graph) -> np.ndarray:
    """GPU ops launched inside the profiled steps."""
    first, last = g.steps["first_call"].to_numpy(), g.steps["last_call"].to_numpy()
    i = np.searchsorted(first, g.gpu_anchor, "right") - 1
    return (i >= 0) & (g.gpu_anchor <= last[np.clip(i, 0, None)])


def per_call(calls: np.ndarray, dur: np.ndarray) -> tuple[float, float]:
    """(total time, median kernels per call) of the ops with a call id >= 0."""
    m = calls >= 0
    if not m.any():
        return 0.0, math.nan
    return float(dur[m].sum()), float(np.median(np.bincount(calls[m])[np.unique(calls[m])]))


def rounds_of(pairs: Path, name: str) -> list[tuple[Path, Path]]:
    """The (A, B) traces of each profiled round: NAME.A.json.gz is round 0, NAME.A.rR.json.gz round R."""
    out = [(pairs / f"{name}.A.json.gz", pairs / f"{name}.B.json.gz")]
    extra = sorted((int(p.name.removesuffix(".json.gz").rsplit(".r", 1)[1]), p)
                   for p in pairs.glob(f"{name}.A.r*.json.gz")
                   if p.name.removesuffix(".json.gz").rsplit(".r", 1)[1].isdigit())
    for r, a in extra:
        b = pairs / f"{name}.B.r{r}.json.gz"
        if not b.exists():
            raise AddressableError(f"{a}: no matching {b.name}")
        out.append((a, b))
    return out


def group_changes(ga: Graph, fa: np.ndarray, ba: np.ndarray, gb: Graph, fb: np.ndarray, bb: np.ndarray
                  ) -> tuple[list[Change], dict, float]:
    """The what-if measured from A and B (forward and backward: k and kernels per call), its columns,
    and the group's time in A."""
    sa, sb = in_steps(ga), in_steps(gb)
    row: dict = {}
    changes, group_time = [], 0.0
    for part, ca, cb in (("forward", fa, fb), ("backward", ba, bb)):
        ca, cb = np.where(sa, ca, -1), np.where(sb, cb, -1)
        ta, na = per_call(ca, ga.gpu_dur)
        tb, nb = per_call(cb, gb.gpu_dur)
        row[f"kernels_{part}_a"], row[f"kernels_after_{part}"] = na, nb
        row[f"k_{part}"] = ta / tb if tb > 0 else (math.inf if ta > 0 else math.nan)
        if ta > 0:
            changes.append(Change(ca >= 0, row[f"k_{part}"], 0 if math.isnan(nb) else nb, ca))
            group_time += ta
    return changes, row, group_time


def validate_round(path_a: Path, path_b: Path, step_a: float) -> dict:
    """Measured kernel speedup, k, and the projections from one profiled round (A's trace, B's trace)."""
    _, ga, fa, ba = load(path_a)
    _, gb, fb, bb = load(path_b)
    sa = in_steps(ga)
    changes, row, group_time = group_changes(ga, fa, ba, gb, fb, bb)
    oa, ob = original(ga), original(gb)
    kernel_a = float(ga.gpu_dur[sa].sum())
    n_a = max(len(ga.steps), 1)
    row["group_share_kernel"] = group_time / kernel_a
    row["profiled_step_ms_a"] = step_span(oa) / 1e3
    row["kernel_busy_us_a"] = oa.busy / n_a
    row["kernel_busy_us_b"] = ob.busy / max(len(gb.steps), 1)
    row["measured_speedup_kernel"] = row["kernel_busy_us_a"] / row["kernel_busy_us_b"]
    base = replay(ga)
    row["replay_residual"] = (base.span - oa.span) / oa.span
    row["replay_raw_speedup_wall"] = base.span / replay(ga, changes).span
    scale = fit_cpu_scale(ga, step_a * 1e3)
    row["cpu_scale"] = scale
    scaled = replay(ga, cpu_scale=scale)
    wall, kernel = replay(ga, changes, scale).speedup_over(scaled)
    row["replay_speedup_wall"], row["replay_speedup_kernel"] = wall, kernel
    own = [Change(c.mask, c.k, c.kernels_after, c.calls, "own") for c in changes]
    row["replay_own_dispatch_speedup_wall"] = replay(ga, own, scale).speedup_over(scaled)[0]
    saved = group_time - sum(float(ga.gpu_dur[c.mask].sum()) / c.k for c in changes)
    row["amdahl_speedup_kernel"] = kernel_a / (kernel_a - saved)
    row["amdahl_speedup_wall"] = step_a / (step_a - saved / n_a / 1e3)
    return row


def validate(pairs: Path, name: str) -> dict:
    """One table row: every round's figures, the median over rounds, and the range of the speedups."""
    meta = json.loads((pairs / f"{name}.json").read_text())
    step_a, step_b = (float(np.quantile(meta["step_ms"][x], STEP_QUANTILE)) for x in "AB")
    per_round = pd.DataFrame([validate_round(a, b, step_a) for a, b in rounds_of(pairs, name)])
    row: dict = {"pair": name, "regime": meta.get("regime", ""), "step_ms_a": step_a, "step_ms_b": step_b,
                 "rounds": len(per_round)}
    row.update(per_round.median().to_dict())
    for col in RANGED:
        row[f"{col}_min"], row[f"{col}_max"] = per_round[col].min(), per_round[col].max()
    row["measured_speedup_wall"] = step_a / step_b
    row["measured_speedup_wall_median"] = float(np.median(meta["step_ms"]["A"]) / np.median(meta["step_ms"]["B"]))
    for m in ("replay", "amdahl"):
        for b in ("wall", "kernel"):
            row[f"{m}_error_{b}"] = row[f"{m}_speedup_{b}"] / row[f"measured_speedup_{b}"] - 1
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pairs", type=Path, help="folder of NAME.A.json.gz, NAME.B.json.gz, NAME.json")
    ap.add_argument("--out", type=Path, default=Path("results/h200/replay_validation.csv"))
    args = ap.parse_args(argv)
    names = sorted(p.name.removesuffix(".A.json.gz") for p in args.pairs.glob("*.A.json.gz"))
    if not names:
        print(f"no pairs (NAME.A.json.gz) in {args.pairs}", file=sys.stderr)
        return 2
    rows = []
    for n in names:
        try:
            rows.append(validate(args.pairs, n))
        except AddressableError as e:
            print(e, file=sys.stderr)
            return 2
        r = rows[-1]
        print(f"{n}: wall measured {r['measured_speedup_wall']:.3f} replay {r['replay_speedup_wall']:.3f} "
              f"({r['replay_error_wall']:+.1%}) amdahl {r['amdahl_speedup_wall']:.3f} ({r['amdahl_error_wall']:+.1%}); "
              f"kernel measured {r['measured_speedup_kernel']:.3f} replay {r['replay_speedup_kernel']:.3f} "
              f"({r['replay_error_kernel']:+.1%}) amdahl {r['amdahl_speedup_kernel']:.3f}", flush=True)
    table = pd.DataFrame(rows)[COLUMNS + EXTRA]
    write_text(args.out, table.to_csv(index=False, float_format="%.4f"))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
