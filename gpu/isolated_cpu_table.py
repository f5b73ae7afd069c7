"""A user's timing of a replacement against the step's (issue 27): the corpus pairs' swapped modules timed alone
(`gpu/replay_corpus.py --isolated`: OUT/isolated/NAME.isolated.json; a capture's NAME.json from part 47 on) beside
what the step reads of them.

Per pair and side (A: the eager module, B: its replacement), the CPU time per call:
  forward   in the step: the capture's hooks pass (module_cpu: global forward hooks, as `addressable profile` times
            the original for module_cpu.csv), over the classes timed alone; alone: `scopes.forward_cpu_us` (what
            wins.csv's cpu_us_after asked of a user);
  backward  in the step: the hooked backward pass, each step over the host's speed beside it, the median
            (`interleaved_backward`, as `given` reads it); alone: `scopes.backward_cpu_us`.
Ratios alone / in the step per pair, then their median and 10-90% range over each half of the pairs (the sha256 of
the name, even or odd), so that a rule drawn from them is chosen on one half and checked on the other. With
--corpus, a study's pair takes its hooks pass from its capture (CORPUS/part-*/NAME.json). Where the pairs were also
read in alternating steps (`paired_cpu`, part 49 on and the studies since), the swap group's timer against those
hooks: each side's timer less hooks reading (µs a call), the two readers' A−B differences over each other, and
their B/A ratios. CPU only.

    python gpu/isolated_cpu_table.py OUT/isolated [--corpus results/h200/replay_corpus] [--csv FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_corpus_validation as rcv

from addressable.core.atomic import write_text


def half_of(name: str) -> str:
    """"even" or "odd": the parity of the name's sha256, fixed before any pair is read."""
    return ("even", "odd")[int(hashlib.sha256(name.encode()).hexdigest(), 16) % 2]


def pair_row(meta: dict, hooks: dict) -> dict:
    """One pair's forward and backward CPU per call, in the step and alone, A and B (`hooks`: the module_cpu pass)."""
    row: dict = {"pair": meta["pair"], "part": meta.get("part"), "half": half_of(meta["pair"])}
    for side in "AB":
        alone = meta["isolated_cpu"].get(side) or {}
        classes = {c["module"] for c in alone.get("calls", [])}
        row[f"{side}_step_fwd_us"] = rcv.hooks_per_call(hooks.get(side, {}), classes)
        row[f"{side}_alone_fwd_us"] = alone.get("forward_us_per_call") or np.nan
        row[f"{side}_alone_bwd_us"] = alone.get("backward_us_per_call") or np.nan
    paired = (meta.get("paired_cpu") or {}).get("forward_us_per_call") or {}
    for side in "AB":
        row[f"{side}_timer_fwd_us"] = rcv.timer_per_call(meta, side)
        row[f"{side}_paired_fwd_us"] = paired.get(side) or np.nan
    step_a = float(np.quantile(meta["step_ms"]["A"], rcv.Q))
    back = rcv.interleaved_backward(meta, step_a)
    row["A_step_bwd_us"] = back[0] / max(meta["swap_calls_per_step"]["A"], 1) if back else np.nan
    row["B_step_bwd_us"] = back[1] if back else np.nan
    for side in "AB":
        for part in ("fwd", "bwd"):
            row[f"{side}_{part}_ratio"] = row[f"{side}_alone_{part}_us"] / row[f"{side}_step_{part}_us"]
    return row


def table(folder: Path, corpus: Path | None = None) -> pd.DataFrame:
    """Every NAME.isolated.json (or capture NAME.json with isolated_cpu) under `folder`, one row each; a study's hooks
    pass from its capture under `corpus`, NaN where there is none."""
    captures = {p.stem: p for p in corpus.glob("part-*/*.json")} if corpus is not None else {}
    rows = []
    for path in sorted(folder.rglob("*.json")):
        meta = json.loads(path.read_text())
        if not (isinstance(meta, dict) and meta.get("isolated_cpu") and meta.get("swap_cpu_ms")):
            continue
        hooks = meta.get("module_cpu")
        if not hooks and meta["pair"] in captures:
            hooks = json.loads(captures[meta["pair"]].read_text()).get("module_cpu")
        rows.append(pair_row(meta, hooks or {}))
    return pd.DataFrame(rows)


def summary(t: pd.DataFrame) -> str:
    """The median and 10-90% range of each ratio, over each half and over all pairs."""
    out = []
    for label, part in (("all", t), *((h, t[t["half"] == h]) for h in ("even", "odd"))):
        cells = []
        for col in ("A_fwd_ratio", "B_fwd_ratio", "A_bwd_ratio", "B_bwd_ratio"):
            x = part[col].dropna()
            cells.append(f"{col} {x.median():.2f} ({x.quantile(0.1):.2f}-{x.quantile(0.9):.2f}, n={len(x)})"
                         if len(x) else f"{col} -")
        out.append(f"{label} ({len(part)} pairs): " + ", ".join(cells))
    read = t.dropna(subset=["A_paired_fwd_us", "B_paired_fwd_us"])
    if len(read):
        timer, hooks = (read[f"A_{r}_fwd_us"] - read[f"B_{r}_fwd_us"] for r in ("timer", "paired"))
        out.append(f"timer vs hooks on the marked modules ({len(read)} pairs, medians): timer less hooks A "
                   f"{(read.A_timer_fwd_us - read.A_paired_fwd_us).median():.1f} us a call, B "
                   f"{(read.B_timer_fwd_us - read.B_paired_fwd_us).median():.1f}; A-B by the timer over by the "
                   f"hooks {(timer / hooks).median():.2f}; B/A by the timer "
                   f"{(read.B_timer_fwd_us / read.A_timer_fwd_us).median():.2f}, by the hooks "
                   f"{(read.B_paired_fwd_us / read.A_paired_fwd_us).median():.2f}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="OUT/isolated of gpu/replay_corpus.py --isolated, or a corpus part")
    ap.add_argument("--corpus", type=Path, default=None, help="the corpus whose captures hold a study's hooks pass")
    ap.add_argument("--csv", type=Path, default=None, help="write the per-pair table here")
    args = ap.parse_args(argv)
    if not args.folder.is_dir():
        print(f"{args.folder}: not a folder", file=sys.stderr)
        return 2
    t = table(args.folder, args.corpus)
    if t.empty:
        print(f"no pair under {args.folder} was timed alone (isolated_cpu)", file=sys.stderr)
        return 2
    print(summary(t))
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(t[["pair", "half", "A_step_fwd_us", "A_alone_fwd_us", "A_fwd_ratio", "B_step_fwd_us", "B_alone_fwd_us",
                 "B_fwd_ratio", "B_step_bwd_us", "B_alone_bwd_us", "B_bwd_ratio"]].round(2).to_string(index=False))
    if args.csv:
        write_text(args.csv, t.to_csv(index=False, float_format="%.4f"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
