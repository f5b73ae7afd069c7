"""How far a host time read from a few steps lands from the one read over every step, on the corpus (CPU, seconds).

`profile` reads its host time (the step's CPU time to its return, `host_time_ms`) from HOST_STEPS steps after each
of its repeats; the corpus timed it on every step of A. Per pair, A's steps are sampled as `profile` would see them:
the last n/k steps of k rounds spread evenly over the run. The sample's median host time, put at the run's step
speed by the same steps' step times (`same`), or by the round's other steps (`other`, closer to `profile`, which
times its step in steps of their own), or as read (`raw`), is set against the median over every step. Prints and
writes, per (n, k, reading), the median and 90th percentile of the relative error and the pairs off by over 10%.

    python gpu/host_sample_noise.py results/h200/replay_corpus --out results/h200/replay_corpus/host_sample_noise.csv
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from replay_corpus_validation import spread_rounds

from addressable.core.atomic import write_text

SAMPLES = ((12, 3), (12, 6), (12, 12), (24, 3), (24, 12), (48, 3), (48, 12), (96, 12))  # (steps, rounds)
READINGS = ("same", "other", "raw")


def errors(cpu: np.ndarray, step: np.ndarray, rounds: np.ndarray, n: int, k: int) -> dict[str, float]:
    """Each reading's relative error against the median host time over every step."""
    idx = spread_rounds(rounds, n, k)
    each = [np.flatnonzero(rounds == r) for r in np.unique(rounds[idx])]
    rest = np.concatenate([np.setdiff1d(i, idx) if len(i) > len(np.intersect1d(i, idx)) else i for i in each])
    host, every = float(np.median(cpu[idx])), float(np.median(cpu))
    run = float(np.median(step))
    return {"same": host * run / float(np.median(step[idx])) / every - 1,
            "other": host * run / float(np.median(step[rest])) / every - 1,
            "raw": host / every - 1}


def table(root: Path) -> pd.DataFrame:
    """One row per (pair, n, k, reading) over the corpus's pairs with A's host time on every step."""
    rows = []
    for f in sorted(root.glob("part-*/*.json")):
        meta = json.loads(f.read_text())
        cpu = meta.get("cpu_ms", {}).get("A") if isinstance(meta, dict) else None
        if not cpu or len(meta.get("round", [])) != len(cpu):
            continue
        a = np.asarray(cpu, float), np.asarray(meta["step_ms"]["A"], float), np.asarray(meta["round"])
        for n, k in SAMPLES:
            rows += [(f.stem, n, k, r, e) for r, e in errors(*a, n, k).items()]
    return pd.DataFrame(rows, columns=["pair", "steps", "rounds", "reading", "error"])


def summary(t: pd.DataFrame) -> pd.DataFrame:
    """Per (steps, rounds, reading): pairs, median and 90th percentile of |error|, pairs off by over 10%."""
    g = t.assign(abs_error=t.error.abs()).groupby(["steps", "rounds", "reading"], sort=False).abs_error
    return pd.DataFrame({"pairs": g.size(), "median_abs_error": g.median().round(4),
                         "p90_abs_error": g.quantile(0.9).round(4), "over_10pct": g.apply(lambda e: int((e > 0.1).sum()))
                         }).reset_index()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path, help="the corpus (part-*/ folders)")
    ap.add_argument("--out", type=Path, required=True, help="the summary CSV")
    args = ap.parse_args(argv)
    t = table(args.root)
    if t.empty:
        print(f"error: no pair with A's host time on every step under {args.root}", file=sys.stderr)
        return 2
    s = summary(t)
    write_text(args.out, s.to_csv(index=False))
    print(s.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
