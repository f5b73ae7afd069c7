"""The dtypes each corpus pair's swapped modules take and return, A and B (the GPU at tiny sizes, a few minutes).

The consumer-cast term (replay.consumer_casts, docs/replay.md; `given` runs it since held-out 38's rule) applies
where a swap removes its module's consumers' casts: A's modules return a dtype other than their input's (an eager
norm returning float32 under bf16 autocast) and B's return their input's. Which way a module goes depends on its
ops and autocast's lists, not on the sizes, so every pair is built at the smoke sizes on the device it ran on, run
for one step with a forward hook on its marked modules, and each side's most common (input dtype, output dtype) is
kept, with how many calls.

    python3 gpu/swap_dtypes.py results/h200/replay_corpus/swap_dtypes.csv [--parts 42,10,...] [--budget-s 500]
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_corpus as rc

from addressable.core.atomic import write_text

FIELDS = ("pair", "part", "a_in", "a_out", "a_calls", "b_in", "b_out", "b_calls", "device", "error")


def first_dtype(x: object) -> str:
    """The dtype of the first floating tensor in x (a tensor, or a tuple, list or dict of them); "" for none."""
    if isinstance(x, torch.Tensor):
        return str(x.dtype).removeprefix("torch.") if x.is_floating_point() else ""
    items = x.values() if isinstance(x, dict) else x if isinstance(x, (tuple, list)) else ()
    for item in items:
        d = first_dtype(item)
        if d:
            return d
    return ""


def side_dtypes(v: rc.Variant) -> tuple[str, str, int]:
    """(input dtype, output dtype, calls) of the variant's marked modules over one step: the most common pair."""
    seen: collections.Counter[tuple[str, str]] = collections.Counter()
    hooks = [m.register_forward_hook(lambda _m, i, o: seen.update([(first_dtype(i), first_dtype(o))]))
             for m in rc.marked_modules(v)]
    try:
        v.step()
        if rc.DEV == "cuda":
            torch.cuda.synchronize()
    finally:
        for h in hooks:
            h.remove()
    if not seen:
        return "", "", 0
    (d_in, d_out), _ = seen.most_common(1)[0]
    return d_in, d_out, sum(seen.values())


def pair_row(p: rc.Pair) -> dict[str, object]:
    row: dict[str, object] = {"pair": p.name, "part": p.part, "device": rc.DEV, "error": ""}
    try:
        a, b, _ = p.build()
        for key, v in (("a", a), ("b", b)):
            row[f"{key}_in"], row[f"{key}_out"], row[f"{key}_calls"] = side_dtypes(v)
    except Exception as e:  # one pair that fails at the smoke sizes must not lose the others
        row["error"] = f"{type(e).__name__}: {str(e)[:200]}".replace("\n", " ")
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--parts", default="", help="comma-separated parts, in the order to probe (default: every part)")
    ap.add_argument("--pairs", default="", help="comma-separated pair names (instead of --parts)")
    ap.add_argument("--budget-s", type=float, default=500.0, help="stop starting pairs after this many seconds")
    args = ap.parse_args(argv)
    rc.SMOKE = True  # the sizes: dtypes follow the ops and autocast, not the shapes
    rc.DEV = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        parts = [int(x) for x in args.parts.split(",") if x]
    except ValueError:
        print(f"--parts: not a list of part numbers: {args.parts!r}", file=sys.stderr)
        return 2
    names = [n for n in args.pairs.split(",") if n]
    unknown = set(names) - {p.name for p in rc.PAIRS} or set(parts) - {p.part for p in rc.PAIRS}
    if unknown:
        print(f"unknown pairs or parts: {', '.join(map(str, sorted(unknown, key=str)))}", file=sys.stderr)
        return 2
    order = {n: i for i, n in enumerate(names or parts)}
    chosen = [p for p in rc.PAIRS if (p.name if names else p.part) in order or not (names or parts)]
    chosen.sort(key=lambda p: order.get(p.name if names else p.part, 0))
    t0, rows = time.time(), []
    for p in chosen:
        if time.time() - t0 > args.budget_s:
            print(f"budget: {len(chosen) - len(rows)} pairs not probed", flush=True)
            break
        rows.append(pair_row(p))
        print(f"{p.name}: {rows[-1].get('a_in')}->{rows[-1].get('a_out')} | {rows[-1].get('b_in')}->"
              f"{rows[-1].get('b_out')} {rows[-1]['error']}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_text(args.out, pd.DataFrame(rows).reindex(columns=list(FIELDS)).to_csv(index=False))
    print(f"wrote {args.out}: {len(rows)} pairs, {sum(bool(r['error']) for r in rows)} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
