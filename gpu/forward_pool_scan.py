"""The scan behind replay.FORWARD_POOL_CONV and FORWARD_POOL_RATIO (CPU, over gpu/replay_corpus.py's parts 1-48;
docs/replay.md).

A CNN's measured forward group's CPU scale is pooled toward a multiple of the uniform fit's,
scale^(1-w) * (ratio * uniform)^w. The ratio is the median group-over-uniform scale of the CPU-bound CNN training
pairs with a measured backward of the even parts, read from a validation CSV of the corpus as shipped before the
change (FORWARD_POOL_CONV 0). For each weight w, `given` is run on every CNN pair (`--corpus-regime cnn`), and the
weight with the most even-part pairs within ±5% (then the lowest median |error|) is chosen; the odd parts check it.

    python gpu/forward_pool_scan.py CORPUS --before VALIDATION_CSV [--weights 0,0.25,0.5,0.75,1]
        [--out outputs/replay_corpus/forward_pool_scan]

VALIDATION_CSV: results/h200/replay_corpus/validation_fit_all.csv as it was before the change (at f809c44). About
4 min a weight on this project's 2-core CPU.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_corpus_validation as cv

TRAINING = "cpu-bound conv training measured backward"
FIT_ON = ",".join(("dev", *cv.DEV[1:], *(h for h in cv.HELD if h != "heldout44")))


def parts(corpus: Path) -> dict[str, int]:
    """Each captured pair's part number, from its part-N folder (part-46c: 46)."""
    out = {}
    for f in corpus.glob("part-*/*.json"):
        m = re.fullmatch(r"part-(\d+)[a-z]?", f.parent.name)
        if m and "." not in f.stem:
            out[f.stem] = int(m.group(1))
    return out


def typical_ratio(before: pd.DataFrame, part: dict[str, int]) -> float:
    """The median group_scale / cpu_scale (the uniform fit's) of the even parts' CPU-bound CNN training pairs."""
    t = before[(before["regime_given"] == TRAINING) & (before["pair"].map(part) % 2 == 0)]
    return float(np.exp(np.log(t["group_scale"] / t["cpu_scale"]).median()))


def scores(t: pd.DataFrame, part: dict[str, int]) -> dict[str, float]:
    """Pairs within ±5% and the median |error| of given (and pairs inside its interval, where `t` has them), on the
    even and the odd parts."""
    e = (t["given"] / t["measured"] - 1).abs()
    even = t["pair"].map(part) % 2 == 0
    return {f"{half}_{k}": v for half, m in (("even", even), ("odd", ~even))
            for k, v in (("pairs", int(m.sum())), ("within", int((e[m] <= 0.05).sum())), ("median", float(e[m].median())),
                         *((("inside", int(t.loc[m, "inside"].sum())),) if "inside" in t else ()))}


def chosen(rows: list[dict], key: str) -> tuple[pd.DataFrame, object]:
    """The scan's table (one row per candidate, with `scores`) and the `key` of the candidate with the most even-part
    pairs within ±5%, then the lowest even-part median |error|, then the first listed."""
    table = pd.DataFrame(rows)
    ranked = table.assign(listed=range(len(table))).sort_values(["even_within", "even_median", "listed"],
                                                                ascending=[False, True, True])
    return table, ranked.iloc[0][key]


def scan_parser(doc: str, name: str) -> argparse.ArgumentParser:
    """A choice script's parser: CORPUS, --jobs (2) and --out (outputs/replay_corpus/NAME); the script adds its
    candidates."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("outputs/replay_corpus") / name)
    return ap


def only(names: list[str]) -> list[str]:
    """The validation's flags that read these pairs alone."""
    return ["--pairs", "^(" + "|".join(names) + ")$"]


def run_given(corpus: Path, csv: Path, fit_on: str, flags: list[str], jobs: int) -> pd.DataFrame:
    """The validation's rows (`given` and the rest, the truth the interleaved rounds') with these flags, written to
    `csv`."""
    cv.main([str(corpus), "--truth", "rounds", "--fit-on", fit_on, *flags, "--jobs", str(jobs), "--out", str(csv)])
    return pd.read_csv(csv)


def scan(corpus: Path, out: Path, table_name: str, key: str, runs: list[tuple[object, str, list[str]]], fit_on: str,
         jobs: int, **fixed: object) -> object:
    """Runs `given` once per candidate (its `key` value, its CSV's stem under `out`, its flags to the validation),
    scores each on the even and odd parts, prints the table and writes it to OUT/TABLE_NAME.csv (with the `fixed`
    columns); returns the candidate chosen on the even parts (`chosen`)."""
    part = parts(corpus)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for value, stem, flags in runs:
        rows.append({key: value, **fixed, **scores(run_given(corpus, out / f"{stem}.csv", fit_on, flags, jobs), part)})
    table, best = chosen(rows, key)
    print(table.to_string(index=False))
    table.to_csv(out / f"{table_name}.csv", index=False)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = scan_parser(__doc__, "forward_pool_scan")
    ap.add_argument("--before", type=Path, required=True, help="a validation CSV of the corpus before the change")
    ap.add_argument("--weights", default="0,0.25,0.5,0.75,1")
    args = ap.parse_args(argv)
    if not args.before.is_file():
        print(f"--before: {args.before} is not a file", file=sys.stderr)
        return 2
    ratio = round(typical_ratio(pd.read_csv(args.before), parts(args.corpus)), 2)
    print(f"ratio (median group over uniform scale, even parts' CNN training): {ratio}")
    runs = [(w, f"w{w:g}", ["--corpus-regime", "cnn", "--forward-pool-conv", str(w), "--forward-pool-ratio", str(ratio)])
            for w in (float(x) for x in args.weights.split(","))]
    w = scan(args.corpus, args.out, "forward_pool_scan", "w", runs, FIT_ON, args.jobs, ratio=ratio)
    print(f"chosen on the even parts: w {w:g} (ratio {ratio})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
