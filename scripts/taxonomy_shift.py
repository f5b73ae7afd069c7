"""What a taxonomy change does to the committed H200 runs: each run's kernels (results/h200/*/kernels.csv)
classified by name with an old and the current taxonomy, the addressable fraction of each, and every
(old category -> new category) move with its share of the run's kernel time.

    git show REV:addressable/classify/taxonomy.yaml > /tmp/old.yaml
    python scripts/taxonomy_shift.py /tmp/old.yaml [--min-share 0.0005]

kernels.csv has no launching op, so moves that the launching op decides (the GEMMs cuDNN runs inside a
convolution) show on traces instead: `addressable classify tests/data/resnet50_train.json.gz` before
and after.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from addressable.classify.taxonomy import load_taxonomy

ROOT = Path(__file__).resolve().parents[1]


def shifts(old_path: Path, min_share: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs: run, addressable_old, addressable_new; moves: run, old, new, share) over results/h200."""
    old, new = load_taxonomy(old_path), load_taxonomy()
    runs, moves = [], []
    for path in sorted(ROOT.glob("results/h200/**/kernels.csv")):
        k = pd.read_csv(path, keep_default_na=False)
        if k.empty:
            continue
        k["old"], k["new"] = old.classify(k["name"]).to_numpy(), new.classify(k["name"]).to_numpy()
        total = k["time_us"].sum()
        run = str(path.parent.relative_to(ROOT / "results" / "h200"))
        share = {t: k.loc[k[t].map(tax.class_of) == "replaceable", "time_us"].sum() / total
                 for t, tax in (("old", old), ("new", new))}
        runs.append({"run": run, "addressable_old": share["old"], "addressable_new": share["new"]})
        moved = k[k["old"] != k["new"]].groupby(["old", "new"])["time_us"].sum() / total
        moves += [{"run": run, "old": o, "new": n, "share": s} for (o, n), s in moved.items() if s >= min_share]
    return pd.DataFrame(runs), pd.DataFrame(moves, columns=["run", "old", "new", "share"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path, help="the old taxonomy file")
    ap.add_argument("--min-share", type=float, default=0.0005, help="smallest move to list")
    args = ap.parse_args()
    runs, moves = shifts(args.old, args.min_share)
    runs["change"] = runs["addressable_new"] - runs["addressable_old"]
    print(runs.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print()
    print(moves.to_string(index=False, float_format=lambda v: f"{v:.4f}") if not moves.empty else "no moves")


if __name__ == "__main__":
    main()
