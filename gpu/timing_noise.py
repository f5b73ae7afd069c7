"""Where the spread of short timed calls comes from, on one GPU: an A/A test of `timing.Timer`.

Two worker processes time the same model, in alternating batches of `timing.BATCH` calls, the way
`verify`'s two helpers do (fresh inputs, flush, backlog, sketch, device synchronize). Each call records
one more event, on the caller's stream before the synchronize, so every call gives two times:
``sync`` (what the harness reports: to an event after the device-wide synchronize, less its idle cost)
and ``stream`` (to the event before it). Batches alternate between no warming and a warming spin of
`--warm-ms` at the batch's start. For each problem, mode and time, it prints the pooled median, the
IQR over the median (verify's `review` line is 1) and the A/A ratio of the two workers' medians with
its IQR-based interval (verify's speedup interval; the truth is 1).

    python gpu/timing_noise.py OUT.csv [--batches 40] [--warm-ms 2]
"""

from __future__ import annotations

import argparse
import csv
import multiprocessing as mp
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ["tests/verification/zoo/softmax_long.py", "tests/verification/zoo/embedding_bag.py",
            "addressable/dlrm_bench/problems/10_sigmoid_bce_loss.py", "tests/verification/zoo/matmul.py"]


def worker(conn: Any, problem: str) -> None:
    """Serve timed batches of `problem`'s model: ("batch", seeds, backlog_ms, warm_ms) -> per-call times."""
    sys.path.insert(0, str(ROOT))
    import torch

    from addressable.verification.checks import finish_sketch, sketch_rows
    from addressable.verification.fresh import FreshInputs
    from addressable.verification.harness import as_outputs, load_module, make_inputs
    from addressable.verification.timing import Timer, take_clocks

    clocks = take_clocks("cuda")
    timer = Timer(clocks, "cuda")
    mod = load_module(ROOT / problem)
    model = mod.Model(*mod.get_init_inputs()).cuda()
    fresh = FreshInputs(make_inputs(mod, 0, "native", "cuda"), "redraw")
    c = clocks

    def one(inputs: list, backlog_ms: float) -> tuple[float, float, float]:
        with c.no_grad():
            c.zero(timer.flush)
            a, b, b2 = (c.event(enable_timing=True) for _ in range(3))
            cycles = int(backlog_ms * timer.cycles_per_ms)
            if cycles > 0:
                c.spin(cycles)
            c.record(a)
            t0 = c.perf()
            out = model(*inputs)
            rows = [sketch_rows(o, 7) for o in as_outputs(out, "candidate")]
            dispatch = (c.perf() - t0) * 1e3
            c.record(b2)
            c.device_sync()
            c.record(b)
            c.wait(b)
            [finish_sketch(r) for r in rows]
            return c.elapsed(a, b) - timer.overhead, c.elapsed(a, b2), dispatch

    conn.send("ready")
    while True:
        msg = conn.recv()
        if msg is None:
            return
        _, seeds, backlog_ms, warm_ms = msg
        if warm_ms > 0:
            c.spin(int(warm_ms * timer.cycles_per_ms))
        conn.send([one(fresh.draw(s), backlog_ms) for s in seeds])
        torch.cuda.synchronize()


def summary(a: list[float], b: list[float]) -> dict[str, float]:
    """Pooled median and IQR/median of both workers, and the A/A ratio with verify's interval."""
    qa, qb = statistics.quantiles(a, n=4), statistics.quantiles(b, n=4)
    both = statistics.quantiles(a + b, n=4)
    return {"median_us": 1e3 * both[1], "iqr_over_median": (both[2] - both[0]) / both[1],
            "worst_iqr_over_median": max((qa[2] - qa[0]) / qa[1], (qb[2] - qb[0]) / qb[1]),
            "ratio": qa[1] / qb[1], "ratio_lo": qa[0] / qb[2], "ratio_hi": qa[2] / qb[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--batches", type=int, default=40, help="batches per worker and mode")
    ap.add_argument("--warm-ms", type=float, default=2.0)
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    rows = []
    for problem in PROBLEMS:
        pipes = []
        for _ in range(2):
            parent, child = ctx.Pipe()
            ctx.Process(target=worker, args=(child, problem), daemon=True).start()
            pipes.append(parent)
        [p.recv() for p in pipes]
        probe = [pipes[0].send(("batch", [0, 1, 2, 3, 4], 0.0, 0.0)) or pipes[0].recv() for _ in range(3)][-1]
        backlog = min(max(2.0 * statistics.median(d for _, _, d in probe), 0.05), 2.0)
        times: dict[tuple[float, int], list[tuple[float, float, float]]] = {}
        seed, rng = 100, random.Random(0)
        for i in range(args.batches):
            for warm in (0.0, args.warm_ms) if i % 2 else (args.warm_ms, 0.0):
                for w in (0, 1, 1, 0) if i % 2 else (1, 0, 0, 1):
                    time.sleep(rng.uniform(0.0, 0.004))  # the parent's messages and SIGSTOP between batches
                    pipes[w].send(("batch", list(range(seed, seed + 5)), backlog, warm))
                    seed += 5
                    times.setdefault((warm, w), []).extend(pipes[w].recv())
        for p in pipes:
            p.send(None)
        for warm in (0.0, args.warm_ms):
            for k, name in ((0, "sync"), (1, "stream")):
                for drop_first in (False, True):
                    a, b = ([t[k] for j, t in enumerate(times[(warm, w)]) if not (drop_first and j % 5 == 0)]
                            for w in (0, 1))
                    s = summary(a, b)
                    rows.append({"problem": Path(problem).stem, "warm_ms": warm, "time": name,
                                 "drop_first": drop_first, "backlog_ms": round(backlog, 3), "calls": len(a) + len(b),
                                 **{k2: round(v, 4) for k2, v in s.items()}})
                    print(" ".join(f"{k2}={v}" for k2, v in rows[-1].items()), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)


if __name__ == "__main__":
    main()
