"""How well a capture knows the swapped modules' backward CPU (CPU, seconds; a diagnosis, docs/replay.md).

Per pair whose capture timed the marked modules' backward in hooked steps (part 12 on): A's reading as `given` reads
it (`replay_corpus_validation.interleaved_backward`: each hooked step's span over the host's speed in that step, the
median), as a share of A's unprofiled step, and its sampling noise: the standard deviation of that median over
bootstrap resamples of the hooked steps (seeded), relative to it. With --source spread the hooked steps after every
timing round (part 40 on) are read instead, where a capture has them. With --repeats, pairs captured twice under
names that differ by a suffix (part 12's -r12 and part 13's -r13, or a part's pair and part 40's -r40) give how far
the share moved between the captures, against the move the bootstrap noise alone would give.

    python gpu/backward_reading_noise.py results/h200/replay_corpus [--source pass|spread] [--repeats=-r12:-r13]
        [--out outputs/backward_reading_noise.csv]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_corpus_validation as rcv

from addressable.core.atomic import write_text

RESAMPLES = 400


def reading(meta: dict, rng: np.random.Generator) -> dict[str, float] | None:
    """A's backward reading over its step, its relative bootstrap noise and its hooked steps; None without them."""
    if not meta.get("step_ms"):
        return None
    step_a = float(np.median(meta["step_ms"]["A"]))
    read = rcv.interleaved_backward(meta, step_a)
    if read is None:
        return None
    source = rcv.hooked_backward_steps(meta)
    a = source["A"]
    per_step = np.asarray(a["cpu_us_steps"], float) / (np.asarray(a["step_ms"], float) / step_a)
    boot = np.median(rng.choice(per_step, (RESAMPLES, len(per_step))), axis=1)
    return {"steps": len(per_step), "share": read[0] / 1e3 / step_a, "noise": float(np.std(boot) / read[0]),
            "spread": bool(source is meta.get("backward_spread"))}


def table(root: Path) -> pd.DataFrame:
    """One row per pair with a hooked backward reading."""
    rng = np.random.default_rng(0)
    rows = []
    for f in sorted(root.glob("part-*/*.json")):
        meta = json.loads(f.read_text())
        row = reading(meta, rng) if isinstance(meta, dict) else None
        if row is not None:
            rows.append({"pair": f.stem, "part": int(f.parent.name.split("-")[1]), **row})
    return pd.DataFrame(rows)


def repeats(t: pd.DataFrame, first: str, second: str) -> pd.DataFrame:
    """Pairs captured twice (names ending in `second`, the same with `first` or no suffix): the share's relative move
    between the captures, and the move the two readings' bootstrap noise alone gives (their root sum of squares)."""
    by = t.set_index("pair")
    rows = []
    for name in by.index[by.index.str.endswith(second)]:
        base = name.removesuffix(second) + first
        if base in by.index:
            x, y = by.loc[base], by.loc[name]
            rows.append({"pair": re.sub(re.escape(second) + "$", "", name), "share_first": x.share, "share_second": y.share,
                         "move": y.share / x.share - 1, "noise": float(np.hypot(x.noise, y.noise))})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--source", choices=["pass", "spread"], default="pass",
                    help="the hooked steps read: the pass after the timing, or those after every round (part 40 on)")
    ap.add_argument("--repeats", default=None, metavar="FIRST:SECOND",
                    help="name suffixes of a pair's two captures, e.g. -r12:-r13 or :-r40 (no suffix first)")
    ap.add_argument("--out", type=Path, default=Path("outputs/backward_reading_noise.csv"))
    args = ap.parse_args(argv)
    if args.repeats is not None and args.repeats.count(":") != 1:
        print(f"--repeats: expected FIRST:SECOND name suffixes, got {args.repeats}", file=sys.stderr)
        return 2
    rcv.BACKWARD_SOURCE = args.source
    t = table(args.corpus)
    if t.empty:
        print(f"{args.corpus}: no pair with a hooked backward reading", file=sys.stderr)
        return 2
    q = t.noise.quantile([0.25, 0.5, 0.75, 0.9])
    print(f"{len(t)} pairs ({int(t.spread.sum())} read from the steps after every round), {t.steps.median():.0f} hooked "
          f"steps of A at the median; the reading's relative bootstrap noise, quartiles and 90th percentile: "
          + " ".join(f"{x:.3f}" for x in q))
    out = t
    if args.repeats is not None:
        r = repeats(t, *args.repeats.split(":"))
        if r.empty:
            print(f"--repeats {args.repeats}: no pair captured under both suffixes", file=sys.stderr)
            return 2
        print(f"{len(r)} pairs captured twice: |move| of the backward's share of the step, median "
              f"{r.move.abs().median():.3f}, max {r.move.abs().max():.3f}; the readings' bootstrap noise alone, median "
              f"{r.noise.median():.3f}; moves beyond 2 x that noise: {int((r.move.abs() > 2 * r.noise).sum())}")
        out = r
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_text(args.out, out.to_csv(index=False, float_format="%.5g"))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
