"""Where a training swap's step gets faster, by segment (H200; a diagnosis, not a model input).

The replay under-predicts training swaps that halve the step (docs/replay.md, held-out 10): B's step is shorter
than A's less the forward and backward CPU the swap removes. This times each segment of A's and B's steps,
profiler-free and interleaved (A, B, then B, A, ...): zero_grad and entry (step start to the model's forward
pre-hook), forward (the model's forward hooks), loss and backward (to the optimizer's step pre-hook), optimizer
(to the step's return), and the GPU tail (to the synchronised end); with the marked modules' forward CPU
(their SwapTimer). The same again with Python's garbage collector off, to see whether collections are what
speeds up. Pairs are gpu/replay_corpus.py's.

    python3 gpu/spill_segments.py OUT --pairs resnet18-train-b5-bn,gpt-train-b3-s192-block [--steps 60]

Writes OUT/spill_segments.json: per pair and gc setting, each segment's per-step times (ms) for A and B.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_corpus as rc

SEGMENTS = ("entry", "forward", "backward", "optimizer", "tail", "swap_forward")


def segmented(v: rc.Variant) -> dict[str, float]:
    """One step of v, synchronised before and after, split at the model's forward hooks and the optimizer's step
    pre-hook (ms each)."""
    marks: dict[str, float] = {}

    def mark(key: str):
        def hook(*_) -> None:  # returns None: a forward pre-hook's result would replace the inputs
            marks.setdefault(key, time.perf_counter())
        return hook
    model = v.models[0]
    hooks = [model.register_forward_pre_hook(mark("f0")), model.register_forward_hook(mark("f1")),
             register_optimizer_step_pre_hook(mark("o0"))]
    try:
        torch.cuda.synchronize()
        s0 = v.timer.seconds
        t0 = time.perf_counter()
        v.step()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
    finally:
        for h in hooks:
            h.remove()
    ms = 1e3
    return {"entry": (marks["f0"] - t0) * ms, "forward": (marks["f1"] - marks["f0"]) * ms,
            "backward": (marks["o0"] - marks["f1"]) * ms, "optimizer": (t1 - marks["o0"]) * ms,
            "tail": (t2 - t1) * ms, "swap_forward": (v.timer.seconds - s0) * ms}


def run_pair(p: rc.Pair, steps: int) -> dict:
    a, b, _ = p.build()
    for _ in range(5):
        a.step()
        b.step()
    torch.cuda.synchronize()
    out: dict = {}
    for setting in ("gc on", "gc off"):
        if setting == "gc off":
            gc.collect()
            gc.disable()
        rec: dict = {k: {s: [] for s in SEGMENTS} for k in "AB"}
        try:
            for i in range(steps):
                for key, v in (("A", a), ("B", b)) if i % 2 == 0 else (("B", b), ("A", a)):
                    for s, t in segmented(v).items():
                        rec[key][s].append(round(t, 4))
        finally:
            gc.enable()
        out[setting] = rec
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--pairs", required=True, help="comma-separated gpu/replay_corpus.py pair names")
    ap.add_argument("--steps", type=int, default=60, help="interleaved steps of each variant per gc setting")
    args = ap.parse_args(argv)
    by_name = {p.name: p for p in rc.PAIRS}
    names = [n for n in args.pairs.split(",") if n]
    unknown = [n for n in names if n not in by_name]
    if unknown:
        print(f"unknown pairs: {', '.join(unknown)}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    res = {}
    for n in names:
        t0 = time.perf_counter()
        res[n] = run_pair(by_name[n], args.steps)
        med = {k: sum(sorted(res[n]["gc on"][k]["forward"])[args.steps // 2:args.steps // 2 + 1]) for k in "AB"}
        print(f"{n}: {time.perf_counter() - t0:.1f}s, forward median A {med['A']:.2f} B {med['B']:.2f} ms", flush=True)
        (args.out / "spill_segments.json").write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
