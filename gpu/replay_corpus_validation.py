"""The replay against the validation corpus (gpu/replay_corpus.py), dev and held-out halves apart (CPU).

For each pair (PART/NAME.json with NAME.{A,B}[.rR].json.gz), from A alone (its traces, its unprofiled
step times, its profiler-free swap-group CPU time, the part's profiler cost per event) and the group's
k and kernels per call measured from A and B (as gpu/replay_validation.py does), four ways of taking
the profiler's CPU overhead out are replayed (dispatch rule "typical" for kept launches):
  uniform  one cpu_scale for every CPU call, fitted so the replayed step is A's unprofiled step;
  own      the same, each kept launch keeping its own CPU time (dispatch "own");
  module   the swap group's CPU calls scaled by their measured unprofiled / profiled time
           (perf_counter around the module against its record_function ranges), the rest fitted;
  event    each CPU gap less the profiler's measured cost per recorded event (cpu_ops started in the
           gap, and the runtime call itself), then one scale fitted.
The model is chosen on the dev half only (lowest median |error|, then the lowest max), its error model
(intervals.fit_error_model: the 80% quantile of |log error| per detected regime) fitted on dev only,
and only then are the held-out pairs scored: error, and whether the 80% interval (model error, step
noise, the spread of the projection over the profiled rounds) holds the measured speedup.
The measured speedup is the lower quartile of A's unprofiled steps over B's (as gpu/replay_validation.py).

    python gpu/replay_corpus_validation.py CORPUS [--out results/h200/replay_corpus/validation.csv]
        [--error-model addressable/projection/replay_error.yaml]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_validation as rv

from addressable.core.atomic import write_text
from addressable.core.errors import AddressableError
from addressable.projection import intervals
from addressable.projection.replay import (
    Change,
    Graph,
    calls_in_ranges,
    fit_cpu_scale,
    regime_of,
    replay,
    scales,
)
from addressable.trace.reader import Trace

MODELS = ("uniform", "own", "module", "event", "given", "given_uniform")
PROJECT_MODEL = "uniform"  # what `project` runs today (one cpu_scale, dispatch "typical"): its error model is written
Q = rv.STEP_QUANTILE


def group_scale(trace: Trace, g: Graph, swap_cpu_ms: list[float]) -> tuple[np.ndarray, float, float]:
    """The swap group's CPU calls, their scale (unprofiled CPU per step / profiled range time per step),
    and the share of the ranges' profiled time that sits in those calls (gaps and calls)."""
    ev = trace.events
    r = ev[(ev["name"] == rv.SCOPE).to_numpy() & (ev["kind"] == "cpu_annotation").to_numpy()]
    lo, hi = g.steps["start"].min(), g.steps["end"].max()  # the graph's clock
    t0 = float(ev["ts"].iloc[g.cpu_row[0]]) - float(g.cpu_ts[0])
    ts = r["ts"].to_numpy(float) - t0
    prof = float(r["dur"].to_numpy(float)[(ts >= lo) & (ts <= hi)].sum()) / max(len(g.steps), 1)
    unprof = float(np.quantile(swap_cpu_ms, Q)) * 1e3
    mask = calls_in_ranges(g, trace, rv.SCOPE)
    in_calls = float((g.cpu_gap + g.cpu_dur)[mask].sum()) / max(len(g.steps), 1)
    return mask, (unprof / prof if prof > 0 else 1.0), (in_calls / prof if prof > 0 else 1.0)


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
    t0 = float(ev["ts"].iloc[g.cpu_row[0]]) - float(g.cpu_ts[0])
    ops = np.sort(ev.loc[(ev["kind"] == "cpu_op").to_numpy(), "ts"].to_numpy(float) - t0)
    prev_end = np.r_[g.cpu_ts[:1], (g.cpu_ts + g.cpu_dur)[:-1]]
    n_ops = np.searchsorted(ops, g.cpu_ts, "right") - np.searchsorted(ops, prev_end, "right")
    return dataclasses.replace(g, cpu_gap=np.maximum(g.cpu_gap - per_op * n_ops - per_launch, 0.0))


def speedup(g: Graph, changes: list[Change], scale: float | np.ndarray) -> float:
    return replay(g, changes, scale).speedup_over(replay(g, cpu_scale=scale))[0]


def round_models(a: Path, b: Path, meta: dict, step_a: float, costs: tuple[float, float]) -> dict:
    """One profiled round: every model's wall speedup from A_r (k, kernels_after from A_r and B_r)."""
    ta, ga, fa, ba = rv.load(a)
    _, gb, fb, bb = rv.load(b)
    changes, row, _ = rv.group_changes(ga, fa, ba, gb, fb, bb)
    own = [Change(c.mask, c.k, c.kernels_after, c.calls, "own") for c in changes]
    s = fit_cpu_scale(ga, step_a * 1e3)
    row.update(uniform=speedup(ga, changes, s), own=speedup(ga, own, s), cpu_scale=s)
    swap = meta.get("swap_cpu_ms", {})  # older captures have no profiler-free swap time: scale 1
    mask, s_group, share = group_scale(ta, ga, swap["A"]) if swap else (np.zeros(ga.n_cpu, bool), 1.0, 1.0)
    fixed = [(mask, s_group)]
    rest = fit_cpu_scale(ga, step_a * 1e3, fixed=fixed)
    sc = scales(ga, rest, fixed)
    row.update(module=speedup(ga, changes, sc), group_scale=s_group, rest_scale=rest, group_share=share)
    # given: each forward call keeps B's measured CPU time per call (the replacement's, like k), the
    # part of it that sits in launches as in A's ranges
    after = (float(np.quantile(swap["B"], Q)) * 1e3 / max(meta["swap_calls_per_step"]["B"], 1) * share
             if swap else None)
    given = [dataclasses.replace(c, cpu_after_us=after) if i == 0 and swap else c for i, c in enumerate(changes)]
    row["given"] = speedup(ga, given, sc)
    row["given_uniform"] = speedup(ga, given, s)  # the same without A's profiler-free module time
    ge = deprofiled(ta, ga, *costs)
    row.update(event=speedup(ge, changes, fit_cpu_scale(ge, step_a * 1e3)))
    row["regime_detected"] = regime_of(ga, step_a * 1e3)
    return row


def validate_pair(folder: Path, name: str, costs: tuple[float, float]) -> dict:
    meta = json.loads((folder / f"{name}.json").read_text())
    step_a, step_b = (float(np.quantile(meta["step_ms"][x], Q)) for x in "AB")
    per_round = pd.DataFrame([round_models(a, b, meta, step_a, costs) for a, b in rv.rounds_of(folder, name)])
    row = {"pair": name, "regime": meta["regime"], "swap": meta.get("swap", ""), "split": meta.get("split", "dev"),
           "regime_detected": per_round["regime_detected"].iloc[0], "measured": step_a / step_b,
           "measured_ci95": meta.get("ratio_ci95", np.nan), "step_ms_a": step_a, "step_ms_b": step_b,
           "step_noise": intervals.step_noise(np.asarray(meta["step_ms"]["A"]), Q),
           "rounds": len(per_round)}
    for col in (*MODELS, "cpu_scale", "group_scale", "rest_scale", "group_share", "k_forward", "k_backward",
                "kernels_forward_a", "kernels_after_forward"):
        if col in per_round:
            row[col] = float(per_round[col].median())
    for m in MODELS:
        row[f"{m}_min"], row[f"{m}_max"] = per_round[m].min(), per_round[m].max()
        row[f"{m}_error"] = row[m] / row["measured"] - 1
    return row


def choose(dev: pd.DataFrame) -> str:
    """The model with the most dev pairs within 5%, then the lowest median |error| on the dev half."""
    score = {m: (-(dev[f"{m}_error"].abs() <= 0.05).sum(), dev[f"{m}_error"].abs().median()) for m in MODELS}
    return min(score, key=lambda m: score[m])


def score(t: pd.DataFrame, m: str, inside: bool = True) -> str:
    e = t[f"{m}_error"].abs()
    if not inside:
        return f"median |error| {e.median():.1%}, max {e.max():.1%}, within 5%: {(e <= 0.05).sum()}/{len(t)}"
    col = "inside" if m == t["model"].iloc[0] else "project_inside" if m == PROJECT_MODEL else None
    return (f"median |error| {e.median():.1%}, max {e.max():.1%}, within 5%: {(e <= 0.05).sum()}/{len(t)}"
            + (f", inside the 80% interval: {t[col].sum()}/{len(t)}" if inside and col and col in t else ""))


def intervals_of(t: pd.DataFrame, m: str, prefix: str, source: str) -> intervals.ErrorModel:
    """Model m's error model fitted on the dev rows of t, its 80% intervals on every row (columns
    PREFIXlo, PREFIXhi, PREFIXinside, PREFIXhalf_width), and the held-out max |error| per regime."""
    dev, held = t[t["split"] == "dev"], t[t["split"] == "heldout"]
    model = intervals.fit_error_model({r: list(g[f"{m}_error"]) for r, g in dev.groupby("regime_detected")},
                                      source=source)
    t[f"{prefix}half_width"] = [model.width(r) for r in t["regime_detected"]]
    bounds = [intervals.widen(r[m], r[f"{m}_min"], r[f"{m}_max"], r[f"{prefix}half_width"], r["step_noise"])
              for _, r in t.iterrows()]
    t[f"{prefix}lo"], t[f"{prefix}hi"] = [b[0] for b in bounds], [b[1] for b in bounds]
    t[f"{prefix}inside"] = (t[f"{prefix}lo"] <= t["measured"]) & (t["measured"] <= t[f"{prefix}hi"])
    model.heldout_max = {r: float(g[f"{m}_error"].abs().max()) for r, g in held.groupby("regime_detected")}
    return model


def corpus_pairs(root: Path) -> list[tuple[Path, str]]:
    return sorted((p.parent, p.name.removesuffix(".A.json.gz")) for p in root.rglob("*.A.json.gz"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--out", type=Path, default=Path("results/h200/replay_corpus/validation.csv"))
    ap.add_argument("--error-model", type=Path, default=None, help="write the fitted error model here")
    ap.add_argument("--dev-only", action="store_true", help="read the dev half alone (to develop on it)")
    args = ap.parse_args(argv)
    pairs = corpus_pairs(args.corpus)
    if args.dev_only:
        pairs = [(f, n) for f, n in pairs if json.loads((f / f"{n}.json").read_text()).get("split", "dev") == "dev"]
    if not pairs:
        print(f"no pairs (NAME.A.json.gz) under {args.corpus}", file=sys.stderr)
        return 2
    rows = []
    try:
        for folder, name in pairs:
            over = folder / "profiler_overhead.json"
            costs = event_costs(json.loads(over.read_text())) if over.exists() else (0.0, 0.0)
            rows.append(validate_pair(folder, name, costs))
            r = rows[-1]
            print(f"{name} [{r['split']}, {r['regime_detected']}]: measured {r['measured']:.3f} "
                  + " ".join(f"{m} {r[m]:.3f} ({r[f'{m}_error']:+.1%})" for m in MODELS), flush=True)
    except AddressableError as e:
        print(e, file=sys.stderr)
        return 2
    t = pd.DataFrame(rows)
    dev, held = t[t["split"] == "dev"], t[t["split"] == "heldout"]
    for m in MODELS:
        print(f"dev {m}: {score(dev, m, False)}")
    best = choose(dev)
    t["model"] = best
    chosen = intervals_of(t, best, "", f"{args.out} (dev half, model {best})")
    ours = intervals_of(t, PROJECT_MODEL, "project_", f"{args.out} (dev half, model {PROJECT_MODEL}: what project runs)")
    dev, held = t[t["split"] == "dev"], t[t["split"] == "heldout"]
    print(f"chosen on dev: {best}; dev: {score(dev, best)}")
    if len(held):
        print(f"HELD-OUT ({best}): {score(held, best)}")
        for m in (m for m in MODELS if m != best):
            print(f"  held-out {m} (not chosen): {score(held, m, m == PROJECT_MODEL)}")
    print(f"error model ({PROJECT_MODEL}): " + ", ".join(f"{r} {ours.width(r):.1%}" for r in sorted(ours.n_dev))
          + f"; chosen ({best}): " + ", ".join(f"{r} {chosen.width(r):.1%}" for r in sorted(chosen.n_dev)))
    write_text(args.out, t.to_csv(index=False, float_format="%.4f"))
    if args.error_model:
        write_text(args.error_model, intervals.error_model_yaml(ours))
    print(f"wrote {args.out}" + (f" and {args.error_model}" if args.error_model else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
