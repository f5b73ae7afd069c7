"""Time of the replay model on a large synthetic trace: build the graph, replay it, replay a what-if.

The trace (benchmarks/synth.py) has 1,000,000 GPU rows by default, each with its launching
cuda_runtime/cuda_driver call (joined by correlation id), runtime calls that launch nothing, and a
ProfilerStep#N every 2,000 kernels. Loading the trace with its runtime calls is timed on its own;
"replay" is what `project --model replay` adds for one what-if: the graph, the unmodified replay, and
a replay with every elementwise kernel 2x faster and its calls fused to one kernel (kernels_after=1).

    python -m benchmarks.replay_bench                  # 1M kernels
    python -m benchmarks.replay_bench --kernels 100000 --trace /tmp/r100k.json
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.synth import ensure_trace


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=1_000_000, help="GPU rows in the trace")
    ap.add_argument("--trace", type=Path, help="reuse (or keep) the trace at this path")
    a = ap.parse_args()


    from addressable.classify.taxonomy import load_taxonomy
    from addressable.core.names import distinct
    from addressable.projection.replay import (
        Change,
        build_graph,
        has_backward,
        is_convnet,
        replay,
        replayable,
        residual,
    )
    from addressable.trace.reader import load_trace

    with tempfile.TemporaryDirectory(prefix="replay_bench_") as tmp:
        path = a.trace or Path(tmp) / "trace.json"
        t0 = time.perf_counter()
        info = ensure_trace(path, n_kernels=a.kernels)
        print(f"{path}: {info.n_events:,} events, {info.n_kernels:,} GPU rows, {info.n_steps} steps "
              f"(ready in {time.perf_counter() - t0:.1f} s)")
        t0, c0 = time.perf_counter(), time.process_time()
        trace = load_trace(path, runtime=True)
        print(f"load_trace(runtime=True): {time.perf_counter() - t0:.2f} s wall, {time.process_time() - c0:.2f} s CPU, "
              f"{len(trace.events):,} rows")

        t0, c0 = time.perf_counter(), time.process_time()
        why = replayable(trace)
        g = build_graph(trace)
        t_graph = (time.perf_counter() - t0, time.process_time() - c0)
        t0, c0 = time.perf_counter(), time.process_time()
        base = replay(g)
        t_base = (time.perf_counter() - t0, time.process_time() - c0)
        codes, names = distinct(g.gpu_name)
        category = load_taxonomy().classify(names).to_numpy()[codes]
        t0, c0 = time.perf_counter(), time.process_time()
        regime_inputs = (has_backward(trace), is_convnet(trace))  # what project reads to name the run's regime
        t_regime = (time.perf_counter() - t0, time.process_time() - c0)
        t0, c0 = time.perf_counter(), time.process_time()
        what_if = replay(g, [Change(category == "elementwise", k=2.0, kernels_after=1)])
        t_what = (time.perf_counter() - t0, time.process_time() - c0)
        wall, kernel = what_if.speedup_over(base)
        print(f"replayable: {why or 'yes'}; {g.n_cpu:,} CPU calls, {g.n_gpu:,} GPU ops, {len(g.waits)} waiting calls")
        for what, i in (("wall", 0), ("CPU", 1)):
            total = t_graph[i] + t_base[i] + t_regime[i] + t_what[i]
            print(f"{what}: graph {t_graph[i]:.2f} s + replay {t_base[i]:.2f} s + regime {t_regime[i]:.2f} s + "
                  f"what-if {t_what[i]:.2f} s = {total:.2f} s")
        print(f"training, CNN: {regime_inputs}; residual {residual(g, base):+.2e}; what-if: wall {wall:.3f}x, kernel {kernel:.3f}x")
        print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")


if __name__ == "__main__":
    main()
