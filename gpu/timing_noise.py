"""Where the spread of short timed calls comes from, on one GPU: an A/A test of `timing.Timer`.

Two worker processes time the same model through `Timer.batch` (fresh inputs, flush, backlog, sketch,
the interval ending on the caller's stream), in alternating batches of `timing.BATCH` calls, as
`verify`'s two helpers do. The conditions alternate batch by batch, so drift is shared:
  backlog ×1 or ×3 (of what `timing.backlog_for` gives from the warm-up's dispatch times);
  the idle worker frozen (SIGSTOP, as `verify` does) or not, with a gap of up to `--gap-ms` before each batch.
For each problem and condition it prints the pooled median, the IQR over the median (verify's `review`
line is 1), the A/A ratio of the two workers' medians with verify's interval (the truth is 1), the
medians of the backlog spin's GPU time and of the host time to the sketch's dispatch (the backlog must
outlast it), and the correlation over batches of the median call time with the median host time.
Then, per problem, `--traced` more batches per worker (frozen, backlog x1) run under torch.profiler (CUDA
activity only), and a second table (OUT.trace.csv) gives each traced call's reported time beside what the
trace saw after its backlog spin: the GPU's idle gap before the call's first kernel (a wait for the
launch), that kernel's duration (a slower kernel), and the span to the last kernel before the next flush.

    python gpu/timing_noise.py OUT.csv [--batches 30] [--gap-ms 20] [--traced 4]
    python gpu/timing_noise.py OUT.csv --device cpu --batches 3 --gap-ms 1   # a dry run of the script

`results/h200/verify_timing/timing_noise.csv` came from this script's first version (88e59f6), which
compared an interval ending after the device synchronize with one ending on the caller's stream.
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
    """Serve timed batches of `problem`'s model: (seeds, backlog_ms, traced) -> `Timer.batch`'s lists, sketches
    left out; traced, with the profiled GPU events too (`kernels`: name, start and duration in us)."""
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


def traced_calls(res: dict[str, Any]) -> list[dict[str, float]]:
    """Per call of a traced batch: the reported time beside the trace's idle gap after the backlog spin, the
    duration of the first kernel after it and the span to the last event before the next call's flush (us)."""
    ks = res["kernels"]
    spins = [i for i, k in enumerate(ks) if "spin_kernel" in k[0]]
    out = []
    for n, i in enumerate(spins):
        end = spins[n + 1] - 1 if n + 1 < len(spins) else len(ks)  # the event before the next spin is its flush
        after = ks[i + 1:end]
        if not after or n >= len(res["times"]):
            continue
        spin_end = ks[i][1] + ks[i][2]
        out.append({"reported_us": 1e3 * res["times"][n], "gap_us": after[0][1] - spin_end, "first_us": after[0][2],
                    "first": after[0][0][:60], "span_us": max(k[1] + k[2] for k in after) - spin_end,
                    "host_us": 1e3 * res["host"][n], "dispatch_us": 1e3 * res["dispatch"][n],
                    "spin_us": 1e3 * res["spin_ms"][n]})
    return out


def _corr(xs: list[float], ys: list[float]) -> float:
    return statistics.correlation(xs, ys) if len(xs) > 2 and len(set(xs)) > 1 and len(set(ys)) > 1 else float("nan")


def summary(batches: dict[int, list[dict[str, list[float]]]]) -> dict[str, float]:
    """Pooled figures of both workers' batches (see the module docstring)."""
    net = {w: [t - s for b in bs for t, s in zip(b["times"], b["sketch_ms"], strict=True)] for w, bs in batches.items()}
    qa, qb, both = (statistics.quantiles(x, n=4) for x in (net[0], net[1], net[0] + net[1]))
    per_batch = [b for bs in batches.values() for b in bs]
    return {"median_us": 1e3 * both[1], "iqr_over_median": (both[2] - both[0]) / both[1],
            "ratio": qa[1] / qb[1], "ratio_lo": qa[0] / qb[2], "ratio_hi": qa[2] / qb[0],
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
        conditions = [(m, frozen) for m in (1, 3) for frozen in (False, True)]
        got: dict[tuple[int, bool], dict[int, list[dict[str, list[float]]]]] = {c: {0: [], 1: []} for c in conditions}
        seed = 100
        for i in range(args.batches):
            for cond in rng.sample(conditions, len(conditions)):
                m, frozen = cond
                for w in (0, 1, 1, 0) if i % 2 else (1, 0, 0, 1):
                    time.sleep(rng.uniform(0.0, args.gap_ms) / 1e3)
                    if frozen:
                        os.kill(pids[1 - w], signal.SIGSTOP)
                    try:
                        pipes[w].send((list(range(seed, seed + BATCH)), m * base, False))
                        got[cond][w].append(pipes[w].recv())
                    finally:
                        if frozen:
                            os.kill(pids[1 - w], signal.SIGCONT)
                    seed += BATCH
        for i in range(args.traced if args.device == "cuda" else 0):
            for w in (0, 1, 1, 0) if i % 2 else (1, 0, 0, 1):
                os.kill(pids[1 - w], signal.SIGSTOP)
                try:
                    pipes[w].send((list(range(seed, seed + BATCH)), base, True))
                    calls = traced_calls(pipes[w].recv())
                finally:
                    os.kill(pids[1 - w], signal.SIGCONT)
                seed += BATCH
                for c in calls:
                    trace_rows.append({"problem": Path(problem).stem, "worker": w, "batch": i,
                                       **{k: round(v, 2) if isinstance(v, float) else v for k, v in c.items()}})
                    print(" ".join(f"{k}={v}" for k, v in trace_rows[-1].items()), flush=True)
        for p in pipes:
            p.send(None)
        for (m, frozen), batches in got.items():
            rows.append({"problem": Path(problem).stem, "backlog_x": m, "backlog_ms": round(m * base, 3), "frozen": frozen,
                         "calls": sum(len(b["times"]) for bs in batches.values() for b in bs),
                         **{k: round(v, 4) for k, v in summary(batches).items()}})
            print(" ".join(f"{k}={v}" for k, v in rows[-1].items()), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    if trace_rows:
        with open(args.out.with_suffix(".trace.csv"), "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=list(trace_rows[0]))
            wr.writeheader()
            wr.writerows(trace_rows)


if __name__ == "__main__":
    main()
