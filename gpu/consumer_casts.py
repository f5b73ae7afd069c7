"""Casts a swap removes outside its module (CPU, a minute; a diagnosis, docs/replay.md).

An eager module that returns a wider dtype than its input under autocast (the corpus's EagerBatchNorm returns
float32 from bf16 activations) makes its consumers cast that output back (`aten::_to_copy` in the next
convolution's autocast dispatch). A replacement that returns the input's dtype removes those casts too, outside the
swapped module's spans, where `given` has no term for them but its spill. Per pair (profiled round 0 of A and of B):
the forward's `aten::_to_copy` ops outside the swap group's ranges, per step, their count and profiled µs (the
forward: before the step's first autograd engine op). With the validation's table (--validation), each pair's
`given` error beside them, and the error of CPU-bound CNN training pairs whose swap removed such casts against
those whose swap removed none, on the even and the odd parts apart.

    python gpu/consumer_casts.py results/h200/replay_corpus --validation \\
        results/h200/replay_corpus/validation_fit_all.csv [--out outputs/consumer_casts.csv]
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_validation as rv

from addressable.core.atomic import write_text
from addressable.trace.reader import load_trace

CAST = "aten::_to_copy"


def forward_casts(path: Path) -> tuple[float, float]:
    """(count, profiled µs) per step of the forward's casts outside the swap group's ranges in one trace."""
    ev = load_trace(path).events
    steps = ev[ev["kind"] == "step"]
    ops = ev[ev["kind"] == "cpu_op"]
    groups = ev[(ev["name"] == rv.SCOPE).to_numpy() & (ev["kind"] == "cpu_annotation").to_numpy()]
    engine = ops[ops["name"].str.startswith("autograd::engine")]
    casts = ops[ops["name"] == CAST]
    ts, tid = casts["ts"].to_numpy(float), casts["tid"].to_numpy(np.int64)
    outside = rv.inside(ts, tid, groups["ts"].to_numpy(float), (groups["ts"] + groups["dur"]).to_numpy(float),
                        groups["tid"].to_numpy(np.int64)) < 0
    e, dur = engine["ts"].to_numpy(float), casts["dur"].to_numpy(float)
    n = us = 0.0
    for s0, d in zip(steps["ts"].to_numpy(float), steps["dur"].to_numpy(float), strict=True):
        forward_end = float(e[(e >= s0) & (e < s0 + d)].min(initial=s0 + d))
        hit = outside & (ts >= s0) & (ts < forward_end)
        n += float(hit.sum())
        us += float(dur[hit].sum())
    k = max(len(steps), 1)
    return n / k, us / k


def pair_row(job: tuple[Path, str]) -> dict[str, float | str | int]:
    folder, name = job
    (na, ua), (nb, ub) = (forward_casts(folder / f"{name}.{k}.json.gz") for k in "AB")
    return {"pair": name, "part": int(folder.name.split("-")[1]), "casts_a": na, "casts_b": nb,
            "cast_us_a": ua, "cast_us_b": ub, "removed_casts": na - nb}


def table(root: Path, jobs: int) -> pd.DataFrame:
    """One row per pair of the corpus with both profiled traces."""
    pairs = sorted((f.parent, f.name.removesuffix(".A.json.gz")) for f in root.glob("part-*/*.A.json.gz"))
    pairs = [(d, n) for d, n in pairs if (d / f"{n}.B.json.gz").is_file()]
    with ProcessPoolExecutor(jobs) as pool:
        return pd.DataFrame(list(pool.map(pair_row, pairs)))


def by_cast(t: pd.DataFrame) -> pd.DataFrame:
    """CPU-bound CNN training pairs (`given`'s regime) whose swap removed forward casts outside it against those
    whose swap removed none: pairs, median signed and |error| of `given`, per half (even, odd parts)."""
    conv = t[t["regime_given"].astype(str).str.contains("cpu-bound conv training")]
    out = []
    for half, sel in (("even", conv.part % 2 == 0), ("odd", conv.part % 2 == 1)):
        for label, mask in (("casts removed", conv.removed_casts >= 1), ("none removed", conv.removed_casts < 1)):
            e = conv.loc[sel & mask, "given_error"]
            out.append({"half": half, "swap": label, "pairs": len(e), "median_signed": float(e.median()),
                        "median_abs": float(e.abs().median()), "within": int((e.abs() <= 0.05).sum())})
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--validation", type=Path, default=None, help="a replay_corpus_validation table (given, measured)")
    ap.add_argument("--jobs", type=int, default=2, help="pairs read at once (processes; default 2)")
    ap.add_argument("--out", type=Path, default=Path("outputs/consumer_casts.csv"))
    args = ap.parse_args(argv)
    if args.jobs < 1:
        print("--jobs: must be at least 1", file=sys.stderr)
        return 2
    if args.validation is not None and not args.validation.is_file():
        print(f"--validation: {args.validation} is not a file", file=sys.stderr)
        return 2
    t = table(args.corpus, args.jobs)
    if t.empty:
        print(f"{args.corpus}: no pair with both profiled traces (NAME.A.json.gz, NAME.B.json.gz)", file=sys.stderr)
        return 2
    print(f"{len(t)} pairs; the swap removed forward casts outside its module in {int((t.removed_casts >= 1).sum())}")
    if args.validation is not None:
        v = pd.read_csv(args.validation, usecols=["pair", "measured", "given", "regime_given"])
        t = t.merge(v, on="pair")
        t["given_error"] = t.given / t.measured - 1
        print(by_cast(t).to_string(index=False, float_format=lambda x: f"{x:+.4f}"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_text(args.out, t.to_csv(index=False, float_format="%.5g"))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
