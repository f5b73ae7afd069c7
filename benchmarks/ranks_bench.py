"""A folder of rank traces: `addressable classify DIR` serial, in a process pool and on a Dask
LocalCluster; one trace against the orjson parse floor; HolisticTraceAnalysis on the same folder
where it fits in memory.

    python -m benchmarks.ranks_bench --ranks 64 --events 1e6 --hta-python /tmp/hta-venv/bin/python

The folder holds `--ranks` gzipped synthetic Kineto traces (benchmarks/synth.py) of `--events`
events each, named rank<k>.pt.trace.json.gz with distributedInfo.rank = k. One trace is generated;
the others reuse its gzipped event list behind their own gzipped head (a multi-member gzip file,
as `cat a.gz b.gz` makes), so building the folder costs one trace and copies. Each command runs
in a fresh subprocess (benchmarks.trace_scale.measure: wall time, CPU time, peak RSS of the
process and its children).
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import sys
import time
from pathlib import Path

from benchmarks.synth import ensure_trace
from benchmarks.trace_scale import FLOOR, HTA, Run, fmt_mb, fmt_s, measure, mem_available

_INFO = re.compile(rb'"distributedInfo": \{[^}]*\}')
_LOAD = """
import gc, sys
gc.disable()
from addressable.trace import load_trace
load_trace(sys.argv[1], schema=sys.argv[2] == "schema")
"""


def build_folder(folder: Path, ranks: int, events: int) -> tuple[int, float]:
    """rank0..rank<ranks-1> traces in folder (kept for the next run); (events per trace, MB of JSON per trace)."""
    folder.mkdir(parents=True, exist_ok=True)
    base = ensure_trace(folder.parent / f"base_{events}.json.gz", events)
    body_path = folder.parent / f"base_{events}.body.gz"
    with gzip.open(base.path, "rb") as f:
        head = f.read(1 << 16)
    start = head.index(b'"traceEvents"')
    if not body_path.exists():
        with gzip.open(base.path, "rb") as f:
            f.seek(start)
            body_path.write_bytes(gzip.compress(f.read(), compresslevel=1, mtime=0))
    body = body_path.read_bytes()
    for k in range(ranks):
        path = folder / f"rank{k}.pt.trace.json.gz"
        if path.exists():
            continue
        info = b'"distributedInfo": {"backend": "nccl", "rank": %d, "world_size": %d}' % (k, ranks)
        tmp = path.with_name(path.name + ".part")
        tmp.write_bytes(gzip.compress(_INFO.sub(info, head[:start]), mtime=0) + body)
        tmp.replace(path)
    for stale in folder.glob("rank*.pt.trace.json.gz"):  # a folder left from a run with more ranks
        if int(stale.name[4:].split(".")[0]) >= ranks:
            stale.unlink()
    return base.n_events, base.uncompressed_bytes / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--ranks", type=int, default=64, help="rank traces in the folder")
    ap.add_argument("--events", type=float, default=1e6, help="events per trace")
    ap.add_argument("--jobs", type=int, default=2, help="pool and Dask workers")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/addressable_ranks_bench"))
    ap.add_argument("--repeat", type=int, default=2, help="runs of the one-trace commands, the fastest reported")
    ap.add_argument("--hta-python", help="python of an environment with HolisticTraceAnalysis (skipped without)")
    ap.add_argument("--hta-ranks", type=int, default=4, help="ranks HTA gets (its own folder; it holds every "
                    "trace in memory)")
    ap.add_argument("--skip", default="", help="comma-separated steps to skip: serial,pool,dask,one,hta")
    ap.add_argument("--timeout", type=float, default=3600)
    a = ap.parse_args()

    skip = set(filter(None, a.skip.split(",")))
    n = int(a.events)
    folder = a.workdir / f"ranks{a.ranks}_{n}"
    t0 = time.perf_counter()
    n_events, json_mb = build_folder(folder, a.ranks, n)
    disk = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
    limit = int(mem_available() - (1 << 30))
    repo = Path(__file__).resolve().parents[1]
    print(f"{a.ranks} traces x {n_events:,} events ({json_mb:,.0f} MB of JSON each, {disk:,.0f} MB on disk in all), "
          f"ready in {time.perf_counter() - t0:.0f} s; {os.cpu_count()} cores", flush=True)

    one = str(folder / "rank0.pt.trace.json.gz")
    py = [sys.executable, "-m", "addressable", "classify"]
    steps: dict[str, list[str]] = {
        "one: classify": [*py, one, "--json"],
        "one: load (schema)": [sys.executable, "-c", _LOAD, one, "schema"],
        "one: load (orjson)": [sys.executable, "-c", _LOAD, one, "orjson"],
        "one: floor": [sys.executable, "-c", FLOOR, one],
        "serial": [*py, str(folder), "--engine", "serial", "--json"],
        "pool": [*py, str(folder), "-j", str(a.jobs), "--json"],
        "dask": [*py, str(folder), "--engine", "dask", "-j", str(a.jobs), "--json"],
    }
    if a.hta_python:
        hta_dir = a.workdir / f"hta{a.hta_ranks}_{n}"
        build_folder(hta_dir, a.hta_ranks, n)
        steps[f"hta ({a.hta_ranks} ranks)"] = [a.hta_python, "-c", HTA, str(hta_dir)]
        steps[f"pool ({a.hta_ranks} ranks)"] = [*py, str(hta_dir), "-j", str(a.jobs), "--json"]
    results: dict[str, Run] = {}
    for name, cmd in steps.items():
        if name.split(" ")[0].rstrip(":") in skip:
            continue
        repeat = a.repeat if name.startswith("one") else 1
        runs = [measure(cmd, limit, a.timeout, repo) for _ in range(repeat)]
        results[name] = min(runs, key=lambda r: (not r.ok, r.wall))
        r = results[name]
        print(f"  {name:<22}{fmt_s(r):>10} s  {r.cpu:9.2f} s CPU  {fmt_mb(r):>9} MB peak RSS  {r.note}", flush=True)

    floor = results.get("one: floor")
    print("\n| run | wall s | CPU s | peak RSS MB | per trace s | vs floor |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        traces = 1 if name.startswith("one") else a.hta_ranks if "ranks)" in name else a.ranks
        per = r.wall / traces
        ratio = f"{per / floor.wall:.2f}x" if floor and floor.ok and r.ok else ""
        print(f"| {name} | {fmt_s(r)} | {r.cpu:.1f} | {fmt_mb(r)} | {per:.2f} | {ratio} |")


if __name__ == "__main__":
    main()
