"""How far the replay's projections move between two captures of the same pairs, beside how far the truth moves
(CPU, over gpu/replay_corpus.py's parts).

A pair captured again carries its first name with a suffix (`NAME-r12`: part 12 again). For each pair in both
parts, every model of gpu/replay_corpus_validation.py is projected from each capture's own inputs, and the
table gives |log(second / first)| of the measured speedup and of each model's projection. A model can be no more
accurate than its inputs repeat: check this on development pairs captured twice before fitting anything to them.

    python gpu/replay_repeatability.py CORPUS --parts 11,12 [--truth rounds] [--spillover X] [--backward-pool W] [--backward-pool-conv W] [--out outputs/replay_corpus/repeat.csv]
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
import replay_corpus_validation as cv

from addressable.core.atomic import write_text
from addressable.core.errors import AddressableError

SUFFIX = re.compile(r"-r\d+$")


def base_name(name: str) -> str:
    """A pair's first name: a capture-again suffix (-r10, -r12) taken off."""
    return SUFFIX.sub("", name)


def part_rows(root: Path, part: str, truth: str) -> pd.DataFrame:
    """validate_pair's row for every pair of part PART, indexed by the pair's first name."""
    folder = root / f"part-{part}"
    if not folder.is_dir():
        raise AddressableError(f"no folder {folder}")
    over = folder / "profiler_overhead.json"
    costs = cv.event_costs(json.loads(over.read_text())) if over.exists() else (0.0, 0.0)
    rows = [cv.validate_pair(folder, name, costs, truth) for _, name in cv.corpus_pairs(folder)]
    if not rows:
        raise AddressableError(f"no pairs (NAME.A.json.gz) in {folder}")
    return pd.DataFrame(rows).assign(base=lambda t: t["pair"].map(base_name)).set_index("base")


def repeatability(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """Per pair in both: |log(second / first)| of the measured speedup (`measured`) and of each model's projection."""
    both = first.index.intersection(second.index)
    if both.empty:
        raise AddressableError("the two parts share no pair (a pair captured again is NAME-rNN)")
    cols = ["measured", *cv.MODELS]
    moved = np.abs(np.log(second.loc[both, cols].astype(float) / first.loc[both, cols].astype(float)))
    return moved.rename_axis("pair").reset_index()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--parts", required=True, help="two parts, first,second (e.g. 11,12)")
    ap.add_argument("--truth", choices=["quartile", "rounds"], default="rounds")
    ap.add_argument("--out", type=Path, default=Path("outputs/replay_corpus/repeat.csv"))
    cv.add_model_constants(ap)
    args = ap.parse_args(argv)
    cv.set_model_constants(args)
    parts = [p for p in args.parts.split(",") if p]
    if len(parts) != 2:
        print(f"--parts: give two parts, first,second (got {args.parts!r})", file=sys.stderr)
        return 2
    try:
        moved = repeatability(*(part_rows(args.corpus, p, args.truth) for p in parts))
    except AddressableError as e:
        print(e, file=sys.stderr)
        return 2
    for col in ["measured", *cv.MODELS]:
        x = moved[col]
        worst = moved.loc[x.idxmax(), "pair"]
        print(f"{col}: moved {np.expm1(x.median()):.1%} at the median, at most a factor of {np.exp(x.max()):.2f} ({worst})")
    write_text(args.out, moved.to_csv(index=False, float_format="%.4f"))
    print(f"{len(moved)} pairs in both parts; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
