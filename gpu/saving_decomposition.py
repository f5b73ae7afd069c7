"""Where a training swap's measured saving sits, over the corpus (CPU, seconds; a diagnosis, docs/replay.md).

Per pair whose capture timed the swapped modules' backward interleaved (part 12 on) and whose host holds A's step
(A's host time over its step at least --host-share): A's unprofiled step less B's (the medians) against the swap's
profiler-free forward saving (the swap group's CPU, A's less B's) and its backward saving (the interleaved pass, each
step read at the host's speed beside it, as `given` reads it). The rest is what neither module span holds: work
around the swapped modules that the swap also removed, or what reading the spans and the steps in different passes
misses; `given` models it as replay.SPILLOVER of the CPU the swap removes. With the validation's table (--validation),
each pair's `given` error and the log of its backward's profiler-free CPU scale over the rest's beside it, and a
direct estimate of B's step, A's less (forward + backward saving) x (1 + s), scored on the even and the odd parts
apart against `given`.

    python gpu/saving_decomposition.py results/h200/replay_corpus --validation \\
        results/h200/replay_corpus/validation_fit_all.csv [--out outputs/saving_decomposition.csv]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from replay_corpus_validation import interleaved_backward

from addressable.core.atomic import write_text

SPILLS = (0.0, 0.1, 0.15, 0.2, 0.25)  # the direct estimate's s


def pair_row(meta: dict, host_share: float) -> dict[str, float] | None:
    """One pair's step saving and its parts (ms), or None where the capture lacks them or the GPU holds A's step."""
    need = ("step_ms", "swap_cpu_ms", "cpu_ms")
    if not all(meta.get(k) for k in need):
        return None
    step_a, step_b = (float(np.median(meta["step_ms"][s])) for s in "AB")
    backward = interleaved_backward(meta, step_a)
    share = float(np.median(meta["cpu_ms"]["A"])) / step_a
    if backward is None or share < host_share:
        return None
    calls_b = float(np.median(meta["backward_pass"]["B"]["calls_steps"]))
    forward = float(np.median(meta["swap_cpu_ms"]["A"]) - np.median(meta["swap_cpu_ms"]["B"]))
    back = (backward[0] - backward[1] * calls_b) / 1e3
    saving = step_a - step_b
    return {"host_share": share, "step_ms_a": step_a, "saving_ms": saving, "forward_ms": forward,
            "backward_ms": back, "rest_ms": saving - forward - back,
            "rest_share": (saving - forward - back) / saving if saving else np.nan}


def table(root: Path, host_share: float) -> pd.DataFrame:
    """One row per pair of the corpus with a timed backward whose host holds A's step."""
    rows = []
    for f in sorted(root.glob("part-*/*.json")):
        meta = json.loads(f.read_text())
        row = pair_row(meta, host_share) if isinstance(meta, dict) else None
        if row is not None:
            rows.append({"pair": f.stem, "part": int(f.parent.name.split("-")[1]), **row})
    return pd.DataFrame(rows)


def direct(t: pd.DataFrame, spills: tuple[float, ...] = SPILLS) -> pd.DataFrame:
    """Per half (even, odd parts) and s: pairs within 5% and the median |error| of the direct estimate, `given` beside."""
    out = []
    for half, sel in (("even", t.part % 2 == 0), ("odd", t.part % 2 == 1)):
        h = t[sel]
        for s in spills:
            e = h.step_ms_a / (h.step_ms_a - (h.forward_ms + h.backward_ms) * (1 + s)) / h.measured - 1
            out.append({"half": half, "model": f"direct s={s:g}", "pairs": len(h), "within": int((e.abs() <= 0.05).sum()),
                        "median_abs": float(e.abs().median())})
        g = h.given / h.measured - 1
        out.append({"half": half, "model": "given", "pairs": len(h), "within": int((g.abs() <= 0.05).sum()),
                    "median_abs": float(g.abs().median())})
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--validation", type=Path, default=None, help="a replay_corpus_validation table (given, measured)")
    ap.add_argument("--host-share", type=float, default=0.97, help="A's host time over its step, at least")
    ap.add_argument("--out", type=Path, default=Path("outputs/saving_decomposition.csv"))
    args = ap.parse_args(argv)
    t = table(args.corpus, args.host_share)
    if t.empty:
        print(f"{args.corpus}: no pair with an interleaved backward pass and a CPU-held step", file=sys.stderr)
        return 2
    if args.validation is not None:
        if not args.validation.is_file():
            print(f"--validation: {args.validation} is not a file", file=sys.stderr)
            return 2
        v = pd.read_csv(args.validation, usecols=["pair", "measured", "given", "backward_scale", "rest_scale"])
        t = t.merge(v, on="pair")
        t["given_error"] = t.given / t.measured - 1
        t["log_backward_over_rest_scale"] = np.log(t.backward_scale / t.rest_scale)
    q = t.rest_share.quantile([0.25, 0.5, 0.75])
    print(f"{len(t)} pairs: the rest's share of the step saving, quartiles {q.iloc[0]:.3f} {q.iloc[1]:.3f} {q.iloc[2]:.3f}")
    if "given_error" in t:
        print(f"correlation of the rest's share with given's error: {t.rest_share.corr(t.given_error):+.2f}, with "
              f"log(backward scale / rest scale): {t.rest_share.corr(t.log_backward_over_rest_scale):+.2f}")
        print(direct(t).to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_text(args.out, t.to_csv(index=False, float_format="%.5g"))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
