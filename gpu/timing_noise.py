"""Where the spread of short timed calls comes from, on one GPU: an A/A test of `timing.Timer`.

Two worker processes time the same model through `Timer.batch` (fresh inputs, flush, backlog, sketch,
the interval ending on the caller's stream), in alternating batches of `timing.BATCH` calls, as
`verify`'s two helpers do, the idle worker frozen (SIGSTOP, as `verify` does). The conditions
alternate batch by batch, so drift is shared:
  no gap before a batch, or a random one of up to `--gap-ms` (the GPU idle meanwhile);
  backlog ×1/3 or ×1 (of what `timing.backlog_for` gives from the warm-up's dispatch times).
For each problem and condition it prints the pooled median, the IQR over the median (verify's `review`
line is 1), the A/A ratio of the two workers' medians with verify's interval (the truth is 1), the
medians of the backlog's GPU time and of the host time to the sketch's dispatch (the backlog must
outlast it), the share of calls the GPU started before the host had queued their sketch (`late`), the
median and A/A ratio of the other calls, and the correlation over batches of the median call time with
the median host time, and the median host wait of the synchronize after each call beyond its idle cost
(`left_ms`: not in the time since it was found to be host noise; see `timing`'s docstring).
Then, per problem, `--traced` more batches per worker (frozen, backlog x1) run under torch.profiler (CUDA
activity only), and OUT.trace.jsonl holds each traced batch's GPU events (name,
start, duration in us) beside its reported times.

    python gpu/timing_noise.py OUT.csv [--batches 30] [--gap-ms 20] [--traced 4]
    python gpu/timing_noise.py OUT.csv --device cpu --batches 3 --gap-ms 1   # a dry run of the script

`results/h200/verify_timing/timing_noise4.*` came from this version (e01608a); timing_noise.csv from the
first (88e59f6: an interval ending after the device synchronize against one ending on the caller's
stream), timing_noise2 and 3 from cffa663 and c59614a (the synchronize's wait still in the time; 3 also
compared a backlog of repeated flushes with the spin).
"""

from __future__ import annotations

import argparse
import csv
import json
import multiprocessing as mp
import os
import random
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ["tests/verification/zoo/softmax_long.py", "tests/verification/zoo/embedding_bag.py",
            "addressable/dlrm_bench/problems/10_sigmoid_bce_loss.py", "tests/verification/zoo/matmul.py"]


def worker(conn: Any, problem: str, device: str) -> None:
    """Serve timed batches of `problem`'s model: (seeds, backlog_ms, traced) -> `Timer.batch`'s
    lists, sketches left out; traced, with the profiled GPU events too (`kernels`: name, start and duration in us)."""
    sys.path.insert(0, str(ROOT))
    from addressable.verification.fresh import FreshInputs
    from addressable.verification.harness import load_module, make_inputs
    from addressable.verification.timing import Timer, take_clocks

    timer = Timer(take_clocks(device), device)
    mod = load_module(ROOT / problem)
    model = mod.Model(*mod.get_init_inputs()).to(device)
    fresh = FreshInputs(make_inputs(mod, 0, "native", device), "redraw")
    conn.send(os.getpid())
    while (msg := conn.recv()) is not None:
        seeds, backlog_ms, traced = msg
        if not traced:
            res = timer.batch(model, fresh.draw, seeds, key=7, backlog_ms=backlog_ms)
            conn.send({k: v for k, v in res.items() if k != "sketches"})
            continue
        import torch.profiler as tp

        with tp.profile(activities=[tp.ProfilerActivity.CUDA]) as prof:
            res = timer.batch(model, fresh.draw, seeds, key=7, backlog_ms=backlog_ms)
        path = Path(f"/tmp/timing_noise_{os.getpid()}.json")
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text())["traceEvents"]
        res["kernels"] = sorted(((e["name"], float(e["ts"]), float(e.get("dur", 0))) for e in events
                                 if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")), key=lambda k: k[1])
        conn.send({k: v for k, v in res.items() if k != "sketches"})





def frozen_batch(pipe: Any, other: int, msg: tuple) -> dict[str, Any]:
    """One batch from a worker while the other (pid `other`) is frozen, as `verify` times its two helpers."""
    os.kill(other, signal.SIGSTOP)
    try:
        pipe.send(msg)
        return pipe.recv()
    finally:
        os.kill(other, signal.SIGCONT)


def _corr(xs: list[float], ys: list[float]) -> float:
    return statistics.correlation(xs, ys) if len(xs) > 2 and len(set(xs)) > 1 and len(set(ys)) > 1 else float("nan")


def summary(batches: dict[int, list[dict[str, list[float]]]]) -> dict[str, float]:
    """Pooled figures of both workers' batches (see the module docstring)."""
    net = {w: [t - s for b in bs for t, s in zip(b["times"], b["sketch_ms"], strict=True)] for w, bs in batches.items()}
    clean = {w: [t - s for b in bs for t, s, late in zip(b["times"], b["sketch_ms"], b["late"], strict=True) if not late]
             for w, bs in batches.items()}
    qa, qb, both = (statistics.quantiles(x, n=4) for x in (net[0], net[1], net[0] + net[1]))
    per_batch = [b for bs in batches.values() for b in bs]
    ca, cb = (statistics.median(clean[w]) if clean[w] else float("nan") for w in (0, 1))
    return {"median_us": 1e3 * both[1], "iqr_over_median": (both[2] - both[0]) / both[1],
            "ratio": qa[1] / qb[1], "ratio_lo": qa[0] / qb[2], "ratio_hi": qa[2] / qb[0],
            "late": statistics.fmean(x for b in per_batch for x in b["late"]),
            "clean_median_us": 1e3 * statistics.median(clean[0] + clean[1]) if clean[0] + clean[1] else float("nan"),
            "clean_ratio": ca / cb,
            "call_us": 1e3 * statistics.median(x for b in per_batch for x in b["call_ms"]),
            "sketch_us": 1e3 * statistics.median(x for b in per_batch for x in b["sketch_ms"]),
            "left_us": 1e3 * statistics.median(x for b in per_batch for x in b["left_ms"]),
            "spin_ms": statistics.median(s for b in per_batch for s in b["spin_ms"]),
            "dispatch_ms": statistics.median(d for b in per_batch for d in b["dispatch"]),
            "corr_call_host": _corr([statistics.median(b["times"]) for b in per_batch],
                                    [statistics.median(b["host"]) for b in per_batch])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--batches", type=int, default=30, help="batches per worker and condition")
    ap.add_argument("--gap-ms", type=float, default=20.0, help="the longest random gap before a batch")
    ap.add_argument("--traced", type=int, default=4, help="profiled batches per worker and problem (GPU only)")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from addressable.verification.timing import BATCH, backlog_for

    ctx = mp.get_context("spawn")
    rows, trace_rows, rng = [], [], random.Random(0)
    for problem in PROBLEMS:
        pipes, pids = [], []
        for _ in range(2):
            parent, child = ctx.Pipe()
            ctx.Process(target=worker, args=(child, problem, args.device), daemon=True).start()
            pipes.append(parent)
        pids = [p.recv() for p in pipes]
        for p in pipes:  # warm-up, as verify's: its dispatch times size the backlog
            p.send((list(range(2 * BATCH)), 0.0, False))
        warm = [p.recv() for p in pipes]
        base = backlog_for([statistics.median(w["dispatch"][BATCH:]) for w in warm], args.device)
        conditions = [(m, gap) for m in (1 / 3, 1.0) for gap in (0.0, args.gap_ms)]
        got: dict[tuple[float, float], dict[int, list[dict[str, list[float]]]]] = {c: {0: [], 1: []} for c in conditions}
        seed = 100
        for i in range(args.batches):
            for cond in rng.sample(conditions, len(conditions)):
                m, gap = cond
                for w in (0, 1, 1, 0) if i % 2 else (1, 0, 0, 1):
                    time.sleep(rng.uniform(0.0, gap) / 1e3)
                    got[cond][w].append(frozen_batch(pipes[w], pids[1 - w], (list(range(seed, seed + BATCH)),
                                                                              m * base, False)))
                    seed += BATCH
        for i in range(args.traced if args.device == "cuda" else 0):
            for w in (0, 1):
                res = frozen_batch(pipes[w], pids[1 - w], (list(range(seed, seed + BATCH)), base, True))
                seed += BATCH
                trace_rows.append({"problem": Path(problem).stem, "worker": w, "batch": i, **res})
        for p in pipes:
            p.send(None)
        for (m, gap), batches in got.items():
            rows.append({"problem": Path(problem).stem, "backlog_x": round(m, 3), "backlog_ms": round(m * base, 3),
                         "gap_ms": gap,
                         "calls": sum(len(b["times"]) for bs in batches.values() for b in bs),
                         **{k: round(v, 4) for k, v in summary(batches).items()}})
            print(" ".join(f"{k}={v}" for k, v in rows[-1].items()), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    if trace_rows:
        args.out.with_suffix(".trace.jsonl").write_text("".join(json.dumps(r) + "\n" for r in trace_rows))


if __name__ == "__main__":
    main()
