"""How far the hooks pass ran from the timed steps, against the user-input models' errors (issue 27; CPU).

`project` reads the original module's forward CPU from module_cpu.csv, a pass with hooks on every module whose steps
are not put at the timed steps' speed (its backward's are: measure.host_normalized); the corpus's captures hold the
same pass (module_cpu). Per pair: A's hooks-pass step over A's timed step (`pass_slow`), beside the signed error of
`given` and of each user-input model in the validation CSVs given; then the Spearman correlation of each error with
log(pass_slow) and the pairs within ±5% by quartile of it. A lead read after held-out 44, nothing chosen on it.

    python gpu/hooks_pass_speed.py CSV [CSV ...] [--corpus results/h200/replay_corpus]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

MODELS = ("given", "given_in_step", "given_paired")


def pass_slow(meta: dict) -> float:
    """A's hooks-pass median step over A's timed median step; NaN without the pass."""
    steps = (meta.get("module_cpu") or {}).get("A", {}).get("step_ms")
    return float(np.median(steps) / np.median(meta["step_ms"]["A"])) if steps else float("nan")


def table(csvs: list[Path], corpus: Path) -> pd.DataFrame:
    """The pairs with a paired reading (given_paired), first CSV first, with their pass_slow."""
    t = pd.concat([pd.read_csv(c) for c in csvs], ignore_index=True)
    t = (t[t["given_paired"].notna()].drop_duplicates("pair") if "given_paired" in t else t.iloc[0:0]).copy()
    captures = {p.stem: p for p in corpus.glob("part-*/*.json")}
    slow = {n: pass_slow(json.loads(captures[n].read_text())) for n in t["pair"] if n in captures}
    return t.assign(pass_slow=t["pair"].map(slow)).dropna(subset=["pass_slow"])


def summary(t: pd.DataFrame) -> str:
    lines = [f"{len(t)} pairs; pass_slow median {t['pass_slow'].median():.2f} "
             f"({t['pass_slow'].min():.2f}-{t['pass_slow'].max():.2f})"]
    slow_rank = t["pass_slow"].rank()  # Spearman: Pearson of the ranks (no scipy in a plain install)
    lines += [f"{m}: Spearman of the signed error with log(pass_slow) {t[f'{m}_error'].rank().corr(slow_rank):+.2f}"
              for m in MODELS]
    quart = pd.qcut(t["pass_slow"], 4)
    for q, part in t.groupby(quart, observed=True):
        cells = ", ".join(f"{m} {int((part[f'{m}_error'].abs() <= 0.05).sum())} within (median signed "
                          f"{part[f'{m}_error'].median():+.1%})" for m in MODELS)
        lines.append(f"pass_slow {q}: {len(part)} pairs; {cells}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csvs", type=Path, nargs="+", help="validation CSVs with given_paired")
    ap.add_argument("--corpus", type=Path, default=Path("results/h200/replay_corpus"))
    args = ap.parse_args(argv)
    missing = [c for c in args.csvs if not c.is_file()]
    if missing:
        print(f"{missing[0]}: not a file", file=sys.stderr)
        return 2
    t = table(args.csvs, args.corpus)
    if len(t) < 4:
        print(f"{len(t)} pairs with a paired reading and a capture under {args.corpus}: too few to split", file=sys.stderr)
        return 2
    print(summary(t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
