"""Throughput of `classify_trace` end to end (load + classify + aggregate) on a large synthetic trace.

The trace has 1,000,000 GPU kernel rows by default, with the launching CPU ops, cuda_runtime
calls, ac2g flows and metadata that come with them in a real Kineto trace (benchmarks/synth.py).

    python -m benchmarks.classify_bench                  # 1M kernels, ~6.7M events, ~1.7 GB of JSON
    python -m benchmarks.classify_bench --kernels 100000 --gzip --profile
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
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
    ap.add_argument("--kernels", type=int, default=1_000_000, help="GPU kernel rows in the trace")
    ap.add_argument("--gzip", action="store_true", help="write and read a .json.gz")
    ap.add_argument("--trace", type=Path, help="reuse (or keep) the trace at this path")
    ap.add_argument("--repeat", type=int, default=1, help="runs; the fastest is reported")
    ap.add_argument("--profile", action="store_true", help="print the top functions by own time (cProfile)")
    a = ap.parse_args()

    from addressable.classify.breakdown import classify_trace
    from addressable.classify.taxonomy import load_taxonomy

    tax = load_taxonomy()
    with tempfile.TemporaryDirectory(prefix="classify_bench_") as tmp:
        path = a.trace or Path(tmp) / ("trace.json.gz" if a.gzip else "trace.json")
        t0 = time.perf_counter()
        info = ensure_trace(path, n_kernels=a.kernels)
        print(f"{path}: {info.n_events:,} events, {info.n_kernels:,} GPU rows, "
              f"{info.uncompressed_bytes / 1e6:,.0f} MB of JSON (ready in {time.perf_counter() - t0:.1f} s)")
        size = path.stat().st_size
        best, b = float("inf"), None
        for _ in range(a.repeat):
            prof = cProfile.Profile() if a.profile else None
            t0, c0 = time.perf_counter(), time.process_time()
            if prof:
                prof.enable()
            b = classify_trace(path, tax)
            if prof:
                prof.disable()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            best = min(best, wall)
            print(f"classify_trace: {wall:.2f} s wall, {cpu:.2f} s CPU")
            if prof:
                pstats.Stats(prof).sort_stats("tottime").print_stats(15)
    kernels = int(b.kernels["count"].sum())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\n{kernels:,} GPU rows classified, addressable fraction {b.addressable_fraction:.1%}, "
          f"{b.n_steps} steps")
    print(f"{info.n_events / best:,.0f} events/s  ({info.n_events:,} trace events in {best:.2f} s)")
    print(f"{kernels / best:,.0f} kernel events/s, {size / best / 1e6:,.0f} MB/s of "
          f"{'gzip' if path.suffix == '.gz' else 'JSON'}, peak RSS {rss:,.0f} MB")


if __name__ == "__main__":
    main()
