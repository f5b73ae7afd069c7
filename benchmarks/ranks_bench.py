"""A folder of rank traces: `addressable classify DIR` serial, in a process pool and on a Dask
LocalCluster; one trace's loader against the orjson parse floor; HolisticTraceAnalysis on the
same folder where it fits in memory.

    python -m benchmarks.ranks_bench --ranks 64 --events 1e6 --hta-python /tmp/hta-venv/bin/python

The folder holds `--ranks` gzipped synthetic Kineto traces (benchmarks/synth.py) of `--events`
events each, named rank<k>.pt.trace.json.gz with distributedInfo.rank = k. One trace is generated;
the others reuse its gzipped event list behind their own gzipped head (a multi-member gzip file,
as `cat a.gz b.gz` makes), so building the folder costs one trace and copies. Each command runs
in a fresh subprocess (benchmarks.trace_scale.measure: wall time, CPU time, peak RSS of the
process and its children); the machine's 1-minute load average is sampled while it runs.

The parse ratio: each side in its own fresh process, the CPU time (process_time: every thread of
the process, user + system) of the call alone, imports and interpreter start left out, best of
`--repeat`:
  floor          orjson.loads(data), data = the whole decompressed trace, already read into memory
  load_trace     addressable.trace.reader.load_trace(rank0.json): reading the plain file included
  ratio          load_trace / floor: decompression counted on neither side
and, decompression counted on both sides: gzip.decompress + orjson.loads against
load_trace(rank0.pt.trace.json.gz) (which un-gzips with zlib-ng where installed, else zlib).
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from benchmarks.synth import ensure_trace
from benchmarks.trace_scale import FLOOR, HTA, Run, fmt_mb, fmt_s, measure, mem_available

_INFO = re.compile(rb'"distributedInfo": \{[^}]*\}')
_CALL_CPU = """
import gc, gzip, os, sys, time
gc.disable()
what, path = sys.argv[1], sys.argv[2]
if what == "load_trace":
    from addressable.trace.reader import load_trace
    t = time.process_time()
    load_trace(path)
else:
    import orjson
    with open(path, "rb") as f:
        data = f.read()
    t = time.process_time()
    if what == "gunzip+loads":
        data = gzip.decompress(data)
    elif what == "gunzip":
        t, data = time.process_time(), gzip.decompress(data)
        print(time.process_time() - t)
        os._exit(0)
    orjson.loads(data)
print(time.process_time() - t)
os._exit(0)
"""


class LoadAverage:
    """The 1-minute load average, sampled every few seconds on a thread while a step runs."""

    def __init__(self, every: float = 5.0) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._every = every
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while True:
            with open("/proc/loadavg") as f:
                self.samples.append(float(f.read().split()[0]))
            if self._stop.wait(self._every):
                return

    def __enter__(self) -> LoadAverage:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def __str__(self) -> str:
        return f"{statistics.fmean(self.samples):.1f} (max {max(self.samples):.1f})" if self.samples else ""


def call_cpu(what: str, path: Path, repeat: int, repo: Path) -> float:
    """Best CPU seconds of one call (_CALL_CPU) over `repeat` fresh processes."""
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", _CALL_CPU, what, str(path)], cwd=repo, capture_output=True,
                             text=True, check=True)
        runs.append(float(out.stdout.split()[-1]))
    return min(runs)


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
    ap.add_argument("--repeat", type=int, default=3, help="runs of the one-trace commands, the fastest reported")
    ap.add_argument("--hta-python", help="python of an environment with HolisticTraceAnalysis (skipped without)")
    ap.add_argument("--hta-ranks", type=int, default=2, help="ranks HTA gets (its own folder; it holds every "
                    "trace in memory)")
    ap.add_argument("--skip", default="", help="comma-separated steps to skip: ratio,one,serial,pool,dask,hta")
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

    one = folder / "rank0.pt.trace.json.gz"
    if "ratio" not in skip:
        plain = a.workdir / f"rank0_{n}.json"  # the same trace decompressed: the floor's input, and ours
        if not plain.exists():
            with gzip.open(one) as f, open(plain.with_suffix(".part"), "wb") as out:
                shutil.copyfileobj(f, out)
            plain.with_suffix(".part").replace(plain)
        with LoadAverage() as load:
            cpu = {(what, p.name): call_cpu(what, p, a.repeat, repo)
                   for what, p in [("loads", plain), ("load_trace", plain), ("gunzip", one),
                                   ("gunzip+loads", one), ("load_trace", one)]}
        floor, ours = cpu["loads", plain.name], cpu["load_trace", plain.name]
        floor_gz, ours_gz = cpu["gunzip+loads", one.name], cpu["load_trace", one.name]
        print(f"\nparse ratio, CPU s of the call alone, best of {a.repeat} fresh processes (load average {load}):\n"
              f"| decompression | floor (orjson.loads) | load_trace | ratio |\n|---|---:|---:|---:|\n"
              f"| on neither side (plain file) | {floor:.2f} | {ours:.2f} | {ours / floor:.2f}x |\n"
              f"| on both sides (gzip file; gunzip alone {cpu['gunzip', one.name]:.2f}) | {floor_gz:.2f} | "
              f"{ours_gz:.2f} | {ours_gz / floor_gz:.2f}x |\n", flush=True)

    py = [sys.executable, "-m", "addressable", "classify"]
    steps: dict[str, list[str]] = {
        "one: classify": [*py, str(one), "--json"],
        "one: floor": [sys.executable, "-c", FLOOR, str(one)],
        "serial": [*py, str(folder), "--engine", "serial", "--json"],
        "pool": [*py, str(folder), "-j", str(a.jobs), "--json"],
        "dask": [*py, str(folder), "--engine", "dask", "-j", str(a.jobs), "--json"],
    }
    if a.hta_python:
        hta_dir = a.workdir / f"hta{a.hta_ranks}_{n}"
        build_folder(hta_dir, a.hta_ranks, n)
        steps[f"hta ({a.hta_ranks} ranks)"] = [a.hta_python, "-c", HTA, str(hta_dir)]
        steps[f"pool ({a.hta_ranks} ranks)"] = [*py, str(hta_dir), "-j", str(a.jobs), "--json"]
    results: dict[str, tuple[Run, LoadAverage]] = {}
    for name, cmd in steps.items():
        if name.split(" ")[0].rstrip(":") in skip:
            continue
        repeat = a.repeat if name.startswith("one") else 1
        runs = []
        for _ in range(repeat):
            with LoadAverage() as load:
                runs.append((measure(cmd, limit, a.timeout, repo), load))
        r, load = results[name] = min(runs, key=lambda x: (not x[0].ok, x[0].wall))
        print(f"  {name:<22}{fmt_s(r):>10} s  {r.cpu:9.2f} s CPU  {fmt_mb(r):>9} MB peak RSS  "
              f"load {load}  {r.note}", flush=True)

    print("\n| run | wall s | CPU s | peak RSS MB | wall s per trace | CPU s per trace | load average (max) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, (r, load) in results.items():
        traces = 1 if name.startswith("one") else a.hta_ranks if "ranks)" in name else a.ranks
        print(f"| {name} | {fmt_s(r)} | {r.cpu:.1f} | {fmt_mb(r)} | {r.wall / traces:.2f} | {r.cpu / traces:.2f} "
              f"| {load} |")


if __name__ == "__main__":
    main()
