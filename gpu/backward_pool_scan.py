"""The scan behind replay.BACKWARD_POOL_CONV (CPU, over gpu/replay_corpus.py's parts; docs/replay.md).

For each weight w, `given` is run with a measured backward's CPU scale pooled toward the uniform fit's,
scale^(1-w) * uniform^w, for every run (replay.BACKWARD_POOL and BACKWARD_POOL_CONV both w), and scored on the pairs
with a measured backward. It prints, per w: pairs within 5%, the median and max |error|, how far the projection
moves between two captures of the same pairs (parts 12 and 13), and the CNN training pairs apart from the others;
then, for the CNN training pairs, the weight chosen on one half of the parts and scored on the other, and each part
left out in turn.

    python gpu/backward_pool_scan.py CORPUS10-17 [--weights 0,0.25,0.5,0.75,1] [--out outputs/replay_corpus/pool_scan]

CORPUS10-17 holds parts 10-17 (part-N folders, copies or hard links of results/h200/replay_corpus's); about 3 min a
weight on this project's 2-core CPU.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_corpus_validation as cv
import replay_repeatability as rr

FIT_ON = "dev2,heldout9,dev3,dev4,heldout10,heldout11,heldout12,heldout13"
EARLY = ("dev2", "heldout9", "dev3", "dev4")  # parts 10-13; the later half is parts 14-17
CNN = "cpu-bound conv training measured backward"


def within(t: pd.DataFrame, col: str = "given") -> int:
    return int(((t[col] / t["measured"] - 1).abs() <= 0.05).sum())


def summary(runs: dict[float, pd.DataFrame], moved: dict[float, pd.Series]) -> pd.DataFrame:
    """One row per weight over the pairs with a measured backward."""
    rows = []
    for w, t in runs.items():
        t = t[t["backward_scale"].notna()]
        e = t["given"] / t["measured"] - 1
        cnn = t["regime_given"] == CNN
        rows.append({"w": w, "pairs": len(t), "within": within(t), "median": e.abs().median(), "max": e.abs().max(),
                     "moved_median": float(np.expm1(moved[w].median())), "moved_max": float(np.exp(moved[w].max())),
                     "cnn_pairs": int(cnn.sum()), "cnn_within": within(t[cnn]), "cnn_signed": e[cnn].median(),
                     "other_within": within(t[~cnn])})
    return pd.DataFrame(rows)


def choose(runs: dict[float, pd.DataFrame], rows: pd.Index) -> float:
    """The weight with the most `rows` within 5%, then the lowest median |error|."""
    def key(w: float) -> tuple[int, float]:
        t = runs[w].loc[rows]
        return -within(t), float((t["given"] / t["measured"] - 1).abs().median())
    return min(runs, key=key)


def held_apart(runs: dict[float, pd.DataFrame]) -> pd.DataFrame:
    """CNN training pairs: the weight chosen on some parts and scored on the rest (halves, then each part left out)."""
    t = next(iter(runs.values()))
    cnn = t[(t["regime_given"] == CNN) & t["backward_scale"].notna()]
    early = cnn.index[cnn["split"].isin(EARLY)]
    late = cnn.index[~cnn["split"].isin(EARLY)]
    folds = [("parts 10-13 -> 14-17", early, late), ("parts 14-17 -> 10-13", late, early)]
    folds += [(f"all but {s} -> {s}", cnn.index[cnn["split"] != s], cnn.index[cnn["split"] == s])
              for s in sorted(cnn["split"].unique())]
    out = []
    for name, fit, score in folds:
        w = choose(runs, fit)
        out.append({"fold": name, "chosen_w": w, "pairs": len(score), "within": within(runs[w].loc[score]),
                     "within_unpooled": within(runs[min(runs)].loc[score])})
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--weights", default="0,0.25,0.5,0.75,1")
    ap.add_argument("--out", type=Path, default=Path("outputs/replay_corpus/pool_scan"))
    args = ap.parse_args(argv)
    weights = [float(x) for x in args.weights.split(",") if x]
    if 0.0 not in weights or not all(0 <= w <= 1 for w in weights):
        print("--weights: give weights in [0, 1], 0 among them (the unpooled model)", file=sys.stderr)
        return 2
    runs, moved = {}, {}
    for w in weights:
        csv = args.out / f"validation_w{w}.csv"
        pool = ["--backward-pool", str(w), "--backward-pool-conv", str(w)]
        if cv.main([str(args.corpus), "--truth", "rounds", "--fit-on", FIT_ON, "--out", str(csv), *pool]) != 0:
            return 2
        runs[w] = pd.read_csv(csv).set_index("pair")
        parts = [rr.part_rows(args.corpus, p, "rounds") for p in ("12", "13")]
        moved[w] = rr.repeatability(*parts)["given"]
    table, folds = summary(runs, moved), held_apart(runs)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print(folds.to_string(index=False))
    table.to_csv(args.out / "summary.csv", index=False, float_format="%.4f")
    folds.to_csv(args.out / "folds.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
