"""A held-out set's figures and table, as docs/replay.md quotes them, from the validation's committed CSVs.

    python gpu/replay_heldout_table.py results/h200/replay_corpus/validation_rounds_heldout19.csv --split heldout19 \
        --unpooled results/h200/replay_corpus/validation_rounds_unpooled_heldout19.csv \
        --with results/h200/replay_corpus/validation_rounds_heldout14.csv:heldout14,...

Prints `given`'s median |error|, max, pairs within ±5% and inside the 80% interval over the set, over its pairs by
the scale's basis (step or host), by co-limited or not and by whether the measured speed-up is known to ±2% (issue
27's requirement of the truth), `given_isolated`'s and `given_calibrated`'s (B's inputs timed alone, as a user times a
win's) where the set has them, over the sets given with --with and the set together (split the same way), then one
markdown row per pair (regime, basis, measured, cpu shares, given, unpooled, interval), as the tables of
held-outs 17-19 in docs/replay.md. CPU only, seconds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

WITHIN = 0.05
TRUTH_CI = 0.02  # issue 27: the truth known to ±2% (95%)


INSIDE = {"given": "inside", "given_isolated": "isolated_inside", "given_calibrated": "calibrated_inside",
          "given_in_step": "in_step_inside", "given_paired": "paired_inside", "given_paired_raw": "paired_raw_inside"}
USER = {"given_isolated": "the replacement timed alone, as a user times it",
        "given_calibrated": "timed alone, calibrated by the original's step over alone",
        "given_in_step": "the replacement read in the step by hooks on every module",  # part 47 on
        "given_paired": "the replacement's ratio to the original, read in alternating steps",  # part 49 on
        "given_paired_raw": "the same, on the original's hooks pass as read before part 51"}


def summary(t: pd.DataFrame, label: str, model: str = "given") -> str:
    """One line: n, median and max |error| of `model`, pairs within ±5% and inside its interval."""
    if t.empty:
        return f"{label}: no pairs"
    e = t[f"{model}_error"].abs()
    inside = int(t[INSIDE[model]].astype(bool).sum())
    return (f"{label}: {len(t)} pairs, median |error| {e.median():.1%}, max {e.max():.1%}, "
            f"{int((e <= WITHIN).sum())} of {len(t)} within ±5%, {inside} of {len(t)} ({inside / len(t):.0%}) inside")


def rows(t: pd.DataFrame, unpooled: pd.DataFrame | None) -> list[str]:
    """A markdown row per pair, by name."""
    out = []
    for r in t.sort_values("pair").itertuples():
        u = unpooled.loc[r.pair] if unpooled is not None and r.pair in unpooled.index else None
        up = f"{u['given']:.3f}× ({u['given_error']:+.1%})" if u is not None else "—"
        out.append(f"| {r.pair} | {r.regime} ({r.regime_given}) | {getattr(r, 'cpu_scale_basis', '—')} | {r.measured:.3f}× "
                   f"(±{r.measured_ci95:.1%}) | {r.cpu_share_a:.2f} / {r.cpu_share_b:.2f} | {r.given:.3f}× "
                   f"({r.given_error:+.1%}) | {up} | {r.lo:.3f}–{r.hi:.3f} | {'yes' if r.inside else '**no**'} |")
    return out


def _by_truth(t: pd.DataFrame, lead: str) -> list[str]:
    """Summary lines of the pairs whose measured speed-up is known to TRUTH_CI and of the others."""
    known = t["measured_ci95"] <= TRUTH_CI
    return [summary(t[known], f"{lead}truth known to ±{TRUTH_CI:.0%}"),
            summary(t[~known], f"{lead}truth wider than ±{TRUTH_CI:.0%}")]


def _of_split(t: pd.DataFrame, split: str) -> pd.DataFrame:
    return t[t["split"] == split]


def report(table: Path, split: str, unpooled: Path | None = None, others: list[tuple[Path, str]] | None = None) -> str:
    """The set's summary lines (with `others`, earlier sets as (CSV, split), summed with it) and its table rows."""
    t = _of_split(pd.read_csv(table), split)
    if t.empty:
        raise SystemExit(f"{table}: no pair of split {split}")
    co = t["regime_given"].astype(str).str.startswith("co-limited")
    lines = [summary(t, split)]
    basis = t.get("cpu_scale_basis", pd.Series("", index=t.index))  # scored before the host time: no column
    lines += [summary(t[basis == b], f"  scale from {b}") for b in ("step", "host") if (basis == b).any()]
    lines += [summary(t[co], "  co-limited"), summary(t[~co], "  the others")] if co.any() else []
    lines += _by_truth(t, "  ")
    for m, words in USER.items():  # part 47 on: B's inputs as a user times them
        if m in t and t[m].notna().any():
            lines.append(summary(t[t[m].notna()], f"  {m} ({words})", m))
    if "given_isolated" in t and t["given_isolated"].notna().any():
        lines.append(summary(t[t["given_isolated"].notna()], "  given on the same pairs (the replacement timed in the step)"))
    if others:
        sets = [_of_split(pd.read_csv(p), s) for p, s in others]
        every = pd.concat([*sets, t])
        lines.append(summary(every, f"with {', '.join(s for _, s in others)}"))
        lines += _by_truth(every, "  together, ")
    u = pd.read_csv(unpooled).set_index("pair") if unpooled else None
    return "\n".join([*lines, "", *rows(t, u)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", type=Path, help="the validation's CSV (gpu/replay_corpus_validation.py --out)")
    ap.add_argument("--split", required=True, help="the held-out set, e.g. heldout19")
    ap.add_argument("--unpooled", type=Path, help="the same run with --backward-pool-conv 0")
    ap.add_argument("--with", dest="others", default="", help="earlier sets as CSV:SPLIT, comma-separated")
    args = ap.parse_args(argv)
    others = [(Path(p), s) for p, s in (x.rsplit(":", 1) for x in args.others.split(",") if x)]
    missing = [str(p) for p in (args.table, args.unpooled, *(p for p, _ in others)) if p is not None and not p.is_file()]
    if missing:
        print(f"not a file: {', '.join(missing)}", file=sys.stderr)
        return 2
    print(report(args.table, args.split, args.unpooled, others))
    return 0


if __name__ == "__main__":
    sys.exit(main())
