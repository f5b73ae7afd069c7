"""Trace analysis at scale: `addressable classify` vs HolisticTraceAnalysis vs the parse floor.

For each size, a synthetic Kineto trace (benchmarks/synth.py: real kernel names, CPU ops,
cuda_runtime calls and ac2g flows, in Kineto's own pretty-printed layout) is written once
and then, on the same file, each in a fresh subprocess (wall time, CPU time and peak RSS
from os.wait4):

  ours   python -m addressable classify TRACE --json          (end to end, imports included)
  HTA    TraceAnalysis(trace_dir=DIR).get_gpu_kernel_breakdown(visualize=False)
  floor  read (and gunzip) the whole file, then orjson.loads it, GC off, no teardown

HTA 0.5 fails on pandas 3 for traces over ~32k events (it writes row numbers into an int16
column), so it runs from its own environment:
    python -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install HolisticTraceAnalysis "pandas<3" psutil

    python -m benchmarks.trace_scale --sizes 1e5,1e6,4e6,1e7 --hta-python /tmp/hta-venv/bin/python
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.synth import ensure_trace

FLOOR = """
import gc, gzip, os, sys, orjson
gc.disable()
path = sys.argv[1]
with open(path, "rb") as f:
    data = f.read()
if data[:2] == b"\\x1f\\x8b":
    data = gzip.decompress(data)
events = orjson.loads(data)
os._exit(0)
"""
HTA = """
import logging, sys
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
TraceAnalysis(trace_dir=sys.argv[1]).get_gpu_kernel_breakdown(visualize=False)
"""


@dataclass
class Run:
    """One measured subprocess."""

    wall: float
    cpu: float
    rss_mb: float
    ok: bool
    note: str = ""


def measure(cmd: list[str], mem_limit: int, timeout: float, cwd: Path) -> Run:
    """Run cmd in a fresh process; its wall time, user+sys CPU time and peak RSS (children included)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (mem_limit, mem_limit))

    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=limit, cwd=cwd)
    deadline = t0 + timeout
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            p.kill()
            pid, status, usage = os.wait4(p.pid, 0)
            return Run(time.perf_counter() - t0, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, False,
                       f"timeout {timeout:.0f} s")
        time.sleep(0.01)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode(errors="replace").strip().splitlines()
    p.stderr.close()
    note = "" if p.returncode == 0 else (err[-1] if err else f"exit {p.returncode}")
    rss_mb = usage.ru_maxrss / 1024
    # hitting RLIMIT_AS shows as MemoryError, or as a crash in C code that cannot allocate
    if "memory" in note.lower() or (p.returncode < 0 and rss_mb > 0.8 * (mem_limit >> 20)):
        note = f"out of memory at {mem_limit / (1 << 30):.0f} GB"
    return Run(wall, usage.ru_utime + usage.ru_stime, rss_mb, p.returncode == 0, note[:120])


def best(runs: list[Run]) -> Run:
    ok = [r for r in runs if r.ok]
    return min(ok, key=lambda r: r.wall) if ok else runs[-1]


def mem_available() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) << 10
    return 1 << 40


def fmt_s(r: Run | None) -> str:
    if r is None:
        return "skipped"
    return f"{r.wall:.2f}" if r.ok else f"failed: {r.note}"


def fmt_mb(r: Run | None) -> str:
    return "" if r is None or not r.ok else f"{r.rss_mb:,.0f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--sizes", default="1e4,1e5,1e6,1e7", help="trace sizes in events, comma-separated")
    ap.add_argument("--gzip", action=argparse.BooleanOptionalAction, default=True, help="gzipped traces (default)")
    ap.add_argument("--skip-hta", action="store_true", help="do not run HolisticTraceAnalysis at all")
    ap.add_argument("--hta-python", default=sys.executable, help="python of an environment with HTA installed")
    ap.add_argument("--hta-max-events", type=float, default=4e6,
                    help="skip HTA above this many events (it holds the whole trace as Python objects)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/addressable_trace_scale"),
                    help="where the traces are written (and kept for the next run)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of ours and the floor per size, the fastest reported (HTA runs once)")
    ap.add_argument("--mem-limit-gb", type=float, default=16, help="address-space limit of each subprocess")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per subprocess")
    a = ap.parse_args()

    sizes = [int(float(s)) for s in a.sizes.split(",")]
    repo = Path(__file__).resolve().parents[1]
    rows = []
    for n in sizes:
        trace_dir = a.workdir / f"{n}{'_gz' if a.gzip else ''}"
        trace_dir.mkdir(parents=True, exist_ok=True)
        path = trace_dir / ("rank0.json.gz" if a.gzip else "rank0.json")
        t0 = time.perf_counter()
        info = ensure_trace(path, n)
        size_mb, json_mb = path.stat().st_size / 1e6, info.uncompressed_bytes / 1e6
        limit = int(min(a.mem_limit_gb * (1 << 30), mem_available() - (1 << 30)))
        print(f"{info.n_events:,} events: {json_mb:,.0f} MB of JSON, {size_mb:,.0f} MB on disk "
              f"(ready in {time.perf_counter() - t0:.0f} s); memory limit {limit / (1 << 30):.1f} GB", flush=True)
        tools = {"ours": [sys.executable, "-m", "addressable", "classify", str(path), "--json"],
                 "floor": [sys.executable, "-c", FLOOR, str(path)]}
        if not a.skip_hta and n <= a.hta_max_events:
            tools["hta"] = [a.hta_python, "-c", HTA, str(trace_dir)]
        result: dict[str, Run | None] = {"hta": None}
        for tool, cmd in tools.items():
            repeat = 1 if tool == "hta" else a.repeat  # minutes per run at 1 GB; noise cannot change its ratio
            result[tool] = best([measure(cmd, limit, a.timeout, repo) for _ in range(repeat)])
            r = result[tool]
            print(f"  {tool:<6}{fmt_s(r):>10} s  {r.cpu:8.2f} s CPU  {r.rss_mb:9,.0f} MB peak RSS", flush=True)
        rows.append((info.n_events, json_mb, size_mb, result))

    print()
    head = ["events", "JSON MB", "file MB", "ours s", "HTA s", "floor s", "ours/floor", "HTA/ours",
            "ours RSS MB", "HTA RSS MB", "floor RSS MB", "ours RSS / JSON"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---:|" * len(head))
    for n_events, json_mb, size_mb, r in rows:
        ours, hta, floor = r["ours"], r["hta"], r["floor"]
        both_ok = ours.ok and floor.ok
        cells = [f"{n_events:,}", f"{json_mb:,.0f}", f"{size_mb:,.0f}", fmt_s(ours), fmt_s(hta), fmt_s(floor),
                 f"{ours.wall / floor.wall:.2f}x" if both_ok else "",
                 f"{hta.wall / ours.wall:.1f}x" if hta and hta.ok and ours.ok else "",
                 fmt_mb(ours), fmt_mb(hta), fmt_mb(floor),
                 f"{ours.rss_mb / json_mb:.2f}x" if ours.ok else ""]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
