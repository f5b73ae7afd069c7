"""The replay's kernel-sharing model against the corpus's two-stream pairs: each GEMM's solo duration as A's trace
gives it, beside what B measured for the same GEMM running alone (CPU, seconds).

In A the main stream's GEMMs share the GPU with the swapped eager kernels; in B (the swap fused) they mostly run
alone. Per pair (first profiled round), the median over A's GEMMs of:

  measured   A's duration (the reading that takes no loss to sharing for a kernel that never ran alone);
  model      `Graph.gpu_solo` (replay._sharing: a known solo sample, else the work-conserving split of its cluster);
  regressed  A's duration less the slope (0..1) of duration on overlap fitted over A's GEMMs, times the overlap
             (where the overlap varies by more than 1 us);

each against the median duration of B's GEMMs that overlapped nothing. Writes a CSV and prints the medians.

    python gpu/sharing_solo_check.py results/h200/replay_corpus --out results/h200/replay_corpus/sharing_solo_check.csv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_validation as rv

from addressable.core.atomic import write_text
from addressable.projection.replay import Graph, _overlap

GEMM_NAMES = ("nvjet", "gemm", "cutlass")


def gemms(g: Graph) -> tuple[np.ndarray, np.ndarray]:
    """Each GEMM's index and its overlap with other streams' kernels."""
    over = _overlap(g.gpu_ts, g.gpu_ts + g.gpu_dur, g.gpu_stream, g.gpu_device, g.gpu_kernel)
    m = np.flatnonzero([any(k in n.lower() for k in GEMM_NAMES) for n in g.gpu_name])
    return m, over[m]


def check_pair(folder: Path, name: str) -> dict:
    (a, b), = rv.rounds_of(folder, name)[:1]
    _, ga, _, _ = rv.load(a)
    _, gb, _, _ = rv.load(b)
    ia, oa = gemms(ga)
    ib, ob = gemms(gb)
    alone_b = gb.gpu_dur[ib][ob < 1.0]
    row = {"pair": name, "part": folder.name, "gemms_a": len(ia), "overlap_a_us": float(np.median(oa)) if len(ia) else np.nan,
           "overlap_range_a_us": float(np.ptp(oa)) if len(ia) else np.nan,
           "alone_b_us": float(np.median(alone_b)) if len(alone_b) else np.nan}
    if not len(ia):
        return row
    d = ga.gpu_dur[ia]
    row["measured_us"], row["model_us"] = float(np.median(d)), float(np.median(ga.gpu_solo[ia]))
    if np.ptp(oa) > 1.0:
        slope = float(np.polyfit(oa, d, 1)[0])
        row["regressed_us"] = float(np.median(d - np.clip(slope, 0.0, 1.0) * oa))
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--out", type=Path, default=Path("outputs/replay_corpus/sharing_solo_check.csv"))
    args = ap.parse_args(argv)
    pairs = sorted(p for p in args.corpus.glob("part-*/two-stream-*.json"))
    if not pairs:
        print(f"error: no two-stream pairs under {args.corpus} (part-*/two-stream-*.json)", file=sys.stderr)
        return 2
    t = pd.DataFrame([check_pair(p.parent, p.stem) for p in pairs])
    for c in ("measured", "model", "regressed"):
        t[f"{c}_error"] = t[f"{c}_us"] / t["alone_b_us"] - 1
        e = t[f"{c}_error"].dropna()
        print(f"{c}: {len(e)} pairs, median |error| {e.abs().median():.1%}, signed {e.median():+.1%}, "
              f"max |error| {e.abs().max():.1%}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_text(args.out, t.to_csv(index=False, float_format="%.4g"))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
