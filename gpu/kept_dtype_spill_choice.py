"""The choice behind replay.SPILLOVER_CONV_KEPT (CPU, over gpu/replay_corpus.py's parts 10 on; docs/replay.md).

A CNN's measured backward spills nothing (SPILLOVER_CONV 0): the consumer-cast term, which removes the casts a swap
saves its module's consumers, took the place of the spill when both were chosen on every CNN pair together (held-out
38's rule). A swap that keeps its output's dtype (GroupNorm, BatchNorm that returns its input's dtype) has no casts
to remove, so nothing stands in for the spill there. For each candidate spill, `given` is run on the CNN training
pairs whose swap removes no consumer casts (CORPUS/swap_dtypes.csv), and the spill with the most even-part pairs
within ±5% (then the lowest median |error|) is chosen; the odd parts check it. Then, as a diagnosis, each pair's
spill that would zero its error, read linearly between two of the spills (--zero-between), per family (GroupNorm,
dtype-keeping BatchNorm, by the corpus's names) and beside the measured backward's share of the profiled CPU
(OUT/kept_dtype_spill_zero.csv).

    python gpu/kept_dtype_spill_choice.py CORPUS [--spills 0,0.05,0.1,0.15] [--zero-between 0,0.1]
        [--out outputs/replay_corpus/kept_dtype_spill_choice]

About 2 min a spill on this project's 2-core CPU.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_corpus_validation as cv
from forward_pool_scan import only, parts, scan, scan_parser

FIT_ON = ",".join(("dev", *cv.DEV[1:], *cv.HELD))


def kept_dtype_training(corpus: Path) -> list[str]:
    """The captured CNN training pairs with a measured backward whose swap removes no consumer casts."""
    casts = cv.casts_removed(pd.read_csv(corpus / "swap_dtypes.csv"))
    out = []
    for f in corpus.glob("part-*/*.json"):
        if "." in f.stem:
            continue
        meta = json.loads(f.read_text())
        if meta.get("regime") == "cnn" and "-train" in f.stem and meta.get("backward_pass") and not casts.get(f.stem):
            out.append(f.stem)
    return sorted(out)


def zeroing_spill(lo: pd.DataFrame, hi: pd.DataFrame, spills: tuple[float, float]) -> pd.DataFrame:
    """Each pair's spill that would zero `given`'s error, read linearly between its runs at the two `spills` (lo's
    and hi's validation rows), with its family and its measured backward's share of the profiled CPU."""
    lo, hi = lo.set_index("pair"), hi.set_index("pair").reindex(lo["pair"])
    err_lo, err_hi = lo["given"] / lo["measured"] - 1, hi["given"] / hi["measured"] - 1
    slope = (err_hi - err_lo) / (spills[1] - spills[0])
    family = np.select([lo.index.str.contains("-gn-"), lo.index.str.contains("-bnkd")], ["GroupNorm", "BatchNorm"],
                       "other")
    return pd.DataFrame({"family": family, "zero": spills[0] - err_lo / slope.where(slope.abs() > 1e-9),
                         "backward_cpu_share": lo["backward_cpu_share"], "error_lo": err_lo, "error_hi": err_hi,
                         "spill_lo": spills[0], "spill_hi": spills[1]}).reset_index()


def linear_check(zero: pd.DataFrame, part: dict[str, int], spill: float) -> pd.DataFrame:
    """A spill linear in the measured backward's CPU share (clipped at 0), fitted to the zeroing spills of one half's
    parts and scored on both by interpolating each pair's error, beside the constant `spill` (the shipped one): one
    row per fit."""
    z = zero.dropna(subset=["zero", "backward_cpu_share"])
    even = z["pair"].map(part) % 2 == 0

    def scored(spills: pd.Series) -> dict[str, float]:
        at = (spills - z["spill_lo"]) / (z["spill_hi"] - z["spill_lo"])
        e = (z["error_lo"] + (z["error_hi"] - z["error_lo"]) * at).abs()
        return {f"{half}_{k}": v for half, m in (("even", even), ("odd", ~even))
                for k, v in (("within", int((e[m] <= 0.05).sum())), ("median", float(e[m].median())))}

    rows = [{"fit_on": "constant", "intercept": spill, "slope": 0.0, **scored(pd.Series(spill, index=z.index))}]
    for half, m in (("even", even), ("odd", ~even)):
        if z.loc[m, "backward_cpu_share"].nunique() < 2:  # no line through fewer than two shares
            continue
        slope, intercept = np.polyfit(z.loc[m, "backward_cpu_share"], z.loc[m, "zero"], 1)
        rows.append({"fit_on": half, "intercept": intercept, "slope": slope,
                     **scored((intercept + slope * z["backward_cpu_share"]).clip(lower=0))})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = scan_parser(__doc__, "kept_dtype_spill_choice")
    ap.add_argument("--spills", default="0,0.05,0.1,0.15")
    ap.add_argument("--zero-between", default="0,0.1", help="two of --spills")
    args = ap.parse_args(argv)
    try:
        spills = [float(s) for s in args.spills.split(",")]
        between = tuple(float(s) for s in args.zero_between.split(","))
    except ValueError:
        print(f"--spills, --zero-between: {args.spills}, {args.zero_between}: not comma-separated numbers",
              file=sys.stderr)
        return 2
    if len(between) != 2 or between[0] == between[1] or not set(between) <= set(spills):
        print(f"--zero-between: {args.zero_between}: not two different spills of --spills", file=sys.stderr)
        return 2
    if not (args.corpus / "swap_dtypes.csv").is_file():
        print(f"{args.corpus / 'swap_dtypes.csv'} is not a file (gpu/swap_dtypes.py writes it)", file=sys.stderr)
        return 2
    names = kept_dtype_training(args.corpus)
    if not names:
        print(f"no CNN training pair under {args.corpus} keeps its output's dtype", file=sys.stderr)
        return 2
    shipped = cv.replay_module.SPILLOVER_CONV_KEPT  # each run below sets it for itself
    runs = [(spill, f"s{spill:g}", [*only(names), "--spillover-conv-kept", str(spill)]) for spill in spills]
    spill = scan(args.corpus, args.out, "kept_dtype_spill_choice", "spill", runs, FIT_ON, args.jobs)
    zero = zeroing_spill(*(pd.read_csv(args.out / f"s{x:g}.csv") for x in between), (between[0], between[1]))
    zero.to_csv(args.out / "kept_dtype_spill_zero.csv", index=False)
    known = zero.dropna()
    for family, g in known.groupby("family"):
        r = g["zero"].corr(g["backward_cpu_share"])
        print(f"{family}: the spill that zeroes the error, median {g['zero'].median():.3f} over {len(g)} pairs; "
              f"correlation with the measured backward's CPU share {r:.2f}")
    print(f"all: correlation {known['zero'].corr(known['backward_cpu_share']):.2f} over {len(known)} pairs")
    check = linear_check(zero, parts(args.corpus), shipped)
    print("a spill linear in that share, fitted on one half (errors interpolated between the two spills):")
    print(check.to_string(index=False))
    print(f"chosen on the even parts: {spill:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
