"""Several traces of one job (one per rank): find them, classify them in parallel, aggregate them.

A distributed job writes one trace per rank (`tensorboard_trace_handler` writes one
`.pt.trace.json.gz` per worker into one folder). `classify_job(paths)` takes files, folders and
globs, classifies each trace in a process pool (or on a Dask cluster), and returns a `JobResult`:
one `RankResult` per trace, a `RankSummary` (per-rank table, per-category median/min/max across
ranks, the job's addressable fraction on the summed, exposed and compute bases, the straggler
signal), and one `RankError` per file that could not be read. Definitions: docs/accounting.md.

A rank is the trace's `distributedInfo.rank` (Kineto writes it for every traced process of a
process group), else a number in the file name (`rank3`, `rank-3`, `rank_3`), else the file's
position among the traces given.
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from addressable.classify.breakdown import BASIS_GPU, Breakdown, breakdown_of_trace, sum_breakdowns, work_rows
from addressable.classify.taxonomy import Taxonomy, load_taxonomy
from addressable.classify.timeline import COMMUNICATION
from addressable.core.errors import AddressableError
from addressable.core.jsonutil import records, to_jsonable
from addressable.trace.reader import load_trace

TRACE_SUFFIXES = (".json", ".json.gz", ".sqlite")  # .sqlite: Nsight Systems exports (trace.nsys)
_RANK_IN_NAME = re.compile(r"(?:^|[^a-z])rank[-_.]?(\d+)", re.IGNORECASE)
_GLOB = re.compile(r"[*?\[]")
_RUN_FILES = frozenset({"breakdown.json", "manifest.json"})
BASES = ("summed", "exposed", "compute")
_FRACTION_KEY = {"summed": "addressable_fraction", "exposed": "addressable_fraction_exposed",
                 "compute": "addressable_fraction_compute"}
ENGINES = ("serial", "process", "dask")


# --------------------------------------------------------------------------- finding the traces


def find_trace_files(paths: Iterable[str | Path]) -> list[Path]:
    """The trace files named by files, folders (their *.json / *.json.gz files) and globs, in order, each once.

    A missing path, a glob that matches nothing, or no trace at all is an AddressableError.
    """
    return list(dict.fromkeys(_named_files(list(paths))))


def _named_files(paths: list[str | Path]) -> list[Path]:
    """Every trace file the paths name, resolved, in order, repeats kept (find_trace_files)."""
    found: list[Path] = []
    for p in map(str, paths):
        if Path(p).is_dir():
            found += sorted(f for f in Path(p).iterdir() if f.is_file() and _is_trace_name(f.name))
        elif Path(p).exists():
            found.append(Path(p))
        elif _GLOB.search(p):
            hits = sorted(Path(h) for h in glob.glob(p, recursive=True) if Path(h).is_file())
            if not hits:
                raise AddressableError(f"no files match {p}")
            found += hits
        else:
            raise AddressableError(f"no such trace file or folder: {p}")
    if not found:
        raise AddressableError(f"no trace files (*.json, *.json.gz, *.sqlite) in {', '.join(map(str, paths))}")
    return [f.resolve() for f in found]


def _is_trace_name(name: str) -> bool:
    """A trace file in a folder: *.json, *.json.gz or *.sqlite, not hidden, not a run folder's own JSON files."""
    return name.endswith(TRACE_SUFFIXES) and not name.startswith(".") and name not in _RUN_FILES


def rank_of(metadata: dict[str, Any], path: str | Path) -> tuple[int | None, int | None, str]:
    """(rank, world size, where the rank came from): distributedInfo, else the file name, else unknown."""
    info = metadata.get("distributedInfo")
    if isinstance(info, dict) and _int(info.get("rank")) is not None:
        return _int(info["rank"]), _int(info.get("world_size")), "distributedInfo"
    if m := _RANK_IN_NAME.search(Path(path).name):
        return int(m.group(1)), None, "file name"
    return None, None, "unknown"


def _int(v: Any) -> int | None:
    try:
        return int(v) if v is not None and not isinstance(v, bool) else None
    except (TypeError, ValueError):
        return None


# --------------------------------------------------------------------------- one rank


@dataclass
class RankResult:
    """One rank's trace, classified: its Breakdown and its communication kernels (for waiting times)."""

    file: str
    rank: int | None
    world_size: int | None
    rank_source: str
    breakdown: Breakdown
    collectives: pd.DataFrame  # name, ts, dur of each communication kernel, by start time
    device: str = ""  # what it ran on: the GPU's name (deviceProperties), "CPU" for a CPU-op breakdown
    backend: str | None = None  # distributedInfo's process-group backend (nccl, gloo), when recorded


@dataclass
class RankError:
    """A file that could not be classified, with the one-line reason."""

    file: str
    error: str


def classify_rank_file(path: str | Path, taxonomy: Taxonomy) -> RankResult | RankError:
    """Load and classify one rank's trace; a bad file gives a RankError (never raises for bad input)."""
    try:
        trace = load_trace(path)
        b = breakdown_of_trace(trace, taxonomy)
    except AddressableError as e:
        return RankError(str(path), str(e))
    except MemoryError:
        return RankError(str(path), f"out of memory reading {path}")
    rank, world, source = rank_of(trace.metadata, path)
    comm_names = b.kernels.loc[b.kernels["category"] == COMMUNICATION, "name"]
    rows, _ = work_rows(trace)
    comm = rows[rows["name"].astype(str).isin(comm_names)]
    coll = pd.DataFrame({"name": comm["name"].astype(str).to_numpy(), "ts": comm["ts"].to_numpy(np.float64),
                         "dur": comm["dur"].to_numpy(np.float64)}).sort_values("ts", kind="stable")
    info = trace.metadata.get("distributedInfo")
    backend = info.get("backend") if isinstance(info, dict) else None
    return RankResult(str(path), rank, world, source, b, coll.reset_index(drop=True), _device(trace.metadata, b),
                      str(backend) if backend is not None else None)


def _device(metadata: dict[str, Any], b: Breakdown) -> str:
    """The device a trace's breakdown is of: "CPU" (CPU-op self time), else its GPUs' names."""
    if b.basis != BASIS_GPU:
        return "CPU"
    props = metadata.get("deviceProperties")
    names = sorted({str(d.get("name")) for d in props if isinstance(d, dict) and d.get("name")}) \
        if isinstance(props, list) else []
    return ", ".join(names) or "a GPU not named in the trace"


# --------------------------------------------------------------------------- waiting at collectives


def collective_waits(collectives: list[pd.DataFrame]) -> pd.DataFrame:
    """Per rank: the estimated waiting time inside communication kernels, and who was waited for.

    The k-th communication kernel of one name on every rank is taken to be the same collective
    (kernels of one name run in one order on one process group). A collective cannot finish
    before its last rank arrives, so rank r's share beyond `min(dur, last arrival - its start)`
    is transfer; the part before is waiting. Names whose count differs between ranks are left
    out (`n_matched` counts what was matched). The rank that arrives last at a collective is
    the one the others wait for: `waited_for_us` adds up the others' waiting on it. Start times
    are compared as they are, so ranks must share a clock (one host; across hosts, skew adds up).
    """
    n = len(collectives)
    out = pd.DataFrame({"rank_index": range(n), "communication_waiting_us": 0.0, "waited_for_us": 0.0,
                        "last_arrivals": 0, "n_matched": 0})
    if n < 2:
        return out
    df = pd.concat([c.assign(rank_index=i, k=c.groupby("name", sort=False).cumcount())
                    for i, c in enumerate(collectives)], ignore_index=True)
    counts = df.groupby(["name", "rank_index"]).size().unstack(fill_value=0)
    ok = counts.index[(counts.nunique(axis=1) == 1) & (counts.reindex(columns=range(n)).notna().all(axis=1))
                      & (counts.min(axis=1) > 0)]
    df = df[df["name"].isin(ok)]
    if df.empty:
        return out
    g = df.groupby(["name", "k"], sort=False)["ts"]
    last = g.transform("max")
    df = df.assign(wait=np.minimum(np.maximum(last - df["ts"], 0.0), df["dur"]),
                   is_last=df["ts"] == last)
    # each collective's last arrival (the first rank among ties) is charged the others' waiting
    df["waited"] = df.groupby(["name", "k"], sort=False)["wait"].transform("sum")
    blamed = df[df["is_last"]].drop_duplicates(["name", "k"])
    out["communication_waiting_us"] = df.groupby("rank_index")["wait"].sum().reindex(range(n), fill_value=0.0)
    out["waited_for_us"] = blamed.groupby("rank_index")["waited"].sum().reindex(range(n), fill_value=0.0)
    out["last_arrivals"] = blamed.groupby("rank_index").size().reindex(range(n), fill_value=0).astype(int)
    out["n_matched"] = df.groupby("rank_index").size().reindex(range(n), fill_value=0).astype(int)
    return out


# --------------------------------------------------------------------------- the summary


@dataclass
class Straggler:
    """Which rank the others wait for, from communication times and (when matched) arrival times."""

    communication_us: list[float]  # summed communication time per rank
    communication_spread_us: float  # max - min of it
    communication_spread_share: float  # the spread over the median total work time
    likely_straggler_rank: int | None  # the rank with the least communication time (it waits least); None: none
    waiting_us: list[float] | None = None  # estimated waiting inside communication kernels, per rank
    waited_for_us: list[float] | None = None  # the others' waiting charged to each rank (it arrived last)
    last_arrival_rank: int | None = None  # the rank the others waited for longest

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON."""
        return dict(to_jsonable(self.__dict__, nan_as=None))


@dataclass
class RankSummary:
    """Several ranks' Breakdowns side by side (docs/accounting.md, "Several ranks")."""

    ranks: pd.DataFrame  # one row per rank: times, communication exposed/hidden/waiting, three fractions
    categories: pd.DataFrame  # one row per category: share median/min/max across ranks, summed and exposed
    fractions: pd.DataFrame  # one row per basis: job (pooled over ranks), median, min, max across ranks
    straggler: Straggler

    def fraction(self, basis: str = "compute") -> dict[str, float | None]:
        """{job, median, min, max} addressable fraction on one basis (None where not known)."""
        row = self.fractions.set_index("basis").loc[basis]
        return {k: (None if pd.isna(row[k]) else float(row[k])) for k in ("job", "median", "min", "max")}

    def to_dict(self) -> dict[str, Any]:
        """The `aggregate` object of `classify PATH... --json` (without the per-rank rows)."""
        return {
            "world_size": len(self.ranks),
            **{_FRACTION_KEY[b]: self.fraction(b) for b in BASES},
            "communication_waiting_us": _none_if_nan(self.ranks["communication_waiting_us"].sum(min_count=1)),
            "categories": records(self.categories, double_precision=10),
            "straggler": self.straggler.to_dict(),
        }


def _none_if_nan(v: Any) -> float | None:
    return None if v is None or pd.isna(v) else float(v)


def summarize_ranks(breakdowns: list[Breakdown], ranks: list[int] | None = None,
                    collectives: list[pd.DataFrame] | None = None) -> RankSummary:
    """Per-rank table, per-category spread, job fractions and straggler signal of several ranks.

    `ranks` numbers the breakdowns (default 0, 1, ...); `collectives` (each rank's communication
    kernels: name, ts, dur) adds the estimated waiting time (collective_waits).
    """
    if not breakdowns:
        raise AddressableError("summarizing ranks needs at least one breakdown")
    ranks = list(range(len(breakdowns))) if ranks is None else list(ranks)
    rows = []
    for r, b in zip(ranks, breakdowns, strict=True):
        t = b.timeline
        rows.append({
            "rank": r, "source": b.source, "n_steps": b.n_steps or 1,
            "total_kernel_time_us": b.total_time_us,
            "compute_time_us": b.compute_time_us,
            "busy_time_us": t.busy_us if t else np.nan,
            "communication_us": b.communication_time_us,
            "communication_exposed_us": t.communication_exposed_us if t else np.nan,
            "communication_overlapped_us": t.communication_overlapped_us if t else np.nan,
            "replaceable_us": b.time_of("replaceable"),
            "replaceable_exposed_us": (t.addressable_fraction_exposed * t.busy_us) if t else np.nan,
            "addressable_fraction": b.addressable_fraction,
            "addressable_fraction_exposed": t.addressable_fraction_exposed if t else np.nan,
            "addressable_fraction_compute": b.addressable_fraction_compute,
        })
    df = pd.DataFrame(rows)
    df["communication_share"] = _ratio(df["communication_us"], df["total_kernel_time_us"])
    df["communication_excess_us"] = df["communication_us"] - df["communication_us"].min()
    waits = collective_waits(collectives) if collectives is not None else None
    if waits is not None and waits["n_matched"].sum() > 0:
        for col in ("communication_waiting_us", "waited_for_us", "last_arrivals", "n_matched"):
            df[col] = waits[col].to_numpy()
    else:
        df["communication_waiting_us"] = np.nan
    fractions = pd.DataFrame([
        {"basis": b, "job": job, **_stats(df[_FRACTION_KEY[b]].to_numpy(float))}
        for b, job in (("summed", _pooled(df, "replaceable_us", "total_kernel_time_us")),
                       ("exposed", _pooled(df, "replaceable_exposed_us", "busy_time_us")),
                       ("compute", _pooled(df, "replaceable_us", "compute_time_us")))])
    comm = df["communication_us"].to_numpy(float)
    median_total = float(np.median(df["total_kernel_time_us"]))
    spread = float(comm.max() - comm.min())
    matched = "waited_for_us" in df
    straggler = Straggler(
        communication_us=[float(x) for x in comm], communication_spread_us=spread,
        communication_spread_share=spread / median_total if median_total else 0.0,
        likely_straggler_rank=int(df["rank"].iloc[int(np.argmin(comm))]) if comm.any() else None,
        waiting_us=[float(x) for x in df["communication_waiting_us"]] if matched else None,
        waited_for_us=[float(x) for x in df["waited_for_us"]] if matched else None,
        last_arrival_rank=int(df["rank"].iloc[int(np.argmax(df["waited_for_us"]))]) if matched else None)
    df = df.drop(columns=["replaceable_us", "replaceable_exposed_us"])
    return RankSummary(df, aggregate_ranks(breakdowns), fractions, straggler)


def aggregate_ranks(breakdowns: list[Breakdown]) -> pd.DataFrame:
    """Each category's share across ranks: median, min, max and spread (summed and exposed basis).

    One row per category; a category absent from a rank counts as zero there. The exposed
    columns are NaN unless every breakdown has a timeline. The per-rank table and the straggler
    signal are summarize_ranks'.
    """
    frames = []
    for rank, b in enumerate(breakdowns):
        c = b.categories[["category", "class", "time_us", "share"]].assign(rank=rank, exposed_share=np.nan)
        if b.timeline is not None:
            exposed = b.timeline.categories.set_index("category")["exposed_share"]
            c["exposed_share"] = c["category"].map(exposed).fillna(0.0).to_numpy()
        frames.append(c)
    if not frames:
        return pd.DataFrame(columns=["category", "class", *_STATS])
    df = pd.concat(frames, ignore_index=True).astype({"category": str})
    out = df.groupby("category")["class"].first().rename_axis("category").reset_index()
    with_timeline = all(b.timeline is not None for b in breakdowns)
    for v in ("share", "time_us", "exposed_share"):
        wide = df.pivot(index="category", columns="rank", values=v).reindex(
            index=out["category"], columns=range(len(breakdowns)))
        m = wide.fillna(0.0).to_numpy() if v != "exposed_share" or with_timeline else wide.to_numpy()
        out[f"{v}_median"], out[f"{v}_min"], out[f"{v}_max"] = np.median(m, axis=1), m.min(axis=1), m.max(axis=1)
    out["share_spread"] = out["share_max"] - out["share_min"]
    out = out[["category", "class", *_STATS]].sort_values(["class", "share_median"], ascending=[True, False])
    out = out.reset_index(drop=True)
    return out


_STATS = ["share_median", "share_min", "share_max", "share_spread", "time_us_median", "time_us_min",
          "time_us_max", "exposed_share_median", "exposed_share_min", "exposed_share_max"]


def _ratio(num: pd.Series, den: pd.Series) -> pd.Series:
    return (num / den).where(den > 0, 0.0)


def _pooled(df: pd.DataFrame, num: str, den: str) -> float:
    """Σ num / Σ den over the ranks (NaN when a rank lacks it)."""
    n, d = df[num].sum(min_count=len(df)), df[den].sum(min_count=len(df))
    return float(n / d) if pd.notna(n) and pd.notna(d) and d > 0 else np.nan


def _stats(v: np.ndarray) -> dict[str, float]:
    if np.isnan(v).any() or not len(v):
        return {"median": np.nan, "min": np.nan, "max": np.nan}
    return {"median": float(np.median(v)), "min": float(v.min()), "max": float(v.max())}


# --------------------------------------------------------------------------- the job


@dataclass
class JobResult:
    """Every trace of one job: the classified ranks (by rank), their summary, and the files that failed."""

    ranks: list[RankResult]
    summary: RankSummary | None
    errors: list[RankError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    engine: str = "serial"

    def total(self) -> Breakdown | None:
        """The job as one Breakdown: every rank's kernel times added up."""
        return sum_breakdowns([r.breakdown for r in self.ranks]) if self.ranks else None

    def to_dict(self) -> dict[str, Any]:
        """`classify PATH... --json`: {"ranks": [...], "aggregate": {...}, "errors": [...], "warnings": [...]}."""
        rows = []
        if self.summary is not None:
            table = records(self.summary.ranks.drop(columns=["source"]), double_precision=10)
            for r, row in zip(self.ranks, table, strict=True):
                rows.append({"rank": row.pop("rank"), "file": r.file, "world_size": r.world_size,
                             "rank_source": r.rank_source, **row,
                             "categories": records(r.breakdown.categories[["category", "class", "time_us",
                                                                           "share", "count"]])})
        total = self.total()
        agg = self.summary.to_dict() if self.summary is not None else {}
        if total is not None:
            agg["total_kernel_time_us"] = total.total_time_us
        return {"ranks": rows, "aggregate": agg, "errors": [e.__dict__ for e in self.errors],
                "warnings": list(self.warnings)}


def classify_job(paths: Iterable[str | Path], taxonomy: Taxonomy | str | Path | None = None,
                 classes: dict[str, str] | None = None, jobs: int | None = None, engine: str | None = None,
                 scheduler: str | None = None) -> JobResult:
    """Classify every trace the paths name, in parallel, and summarize them as the ranks of one job.

    engine: "process" (default: a pool of `jobs` processes, default the number of cores, each
    holding one trace at a time), "serial", or "dask" (on the cluster at `scheduler`, e.g.
    tcp://host:8786, else a LocalCluster of `jobs` workers; the files must be readable there).
    The results do not depend on the engine.
    """
    named = _named_files(list(paths))
    files = list(dict.fromkeys(named))
    tax = taxonomy if isinstance(taxonomy, Taxonomy) else load_taxonomy(taxonomy)
    if classes:
        tax = tax.with_classes(classes)
    asked = engine or ("dask" if scheduler else "process")
    if asked not in ENGINES:
        raise AddressableError(f"unknown engine {asked!r} (choose from {', '.join(ENGINES)})")
    if scheduler and asked != "dask":
        raise AddressableError("--scheduler needs the dask engine")
    n_jobs = max(1, jobs or os.cpu_count() or 1)
    ran = "serial" if asked == "process" and (n_jobs == 1 or len(files) == 1) else asked
    job = assemble_job(_RUNNERS[ran](files, tax, n_jobs, scheduler), ran)
    counts = Counter(named)
    job.warnings += [f"{f.name} is named {counts[f]} times: classified once" for f in files if counts[f] > 1]
    if ran != asked and (engine == "process" or (jobs or 1) > 1):  # a pool was asked for: say why not
        why = (f"one trace file (-j {jobs} needs several)" if jobs and jobs > 1 else "one trace file") \
            if len(files) == 1 else "-j 1" if jobs == 1 else "this machine has one core (set -j)"
        job.warnings.append(f"classified serially, not in a process pool: {why}")
    return job


def _run_serial(files: list[Path], tax: Taxonomy, jobs: int, scheduler: str | None) -> list:
    return [classify_rank_file(f, tax) for f in files]


def _run_pool(files: list[Path], tax: Taxonomy, jobs: int, scheduler: str | None) -> list:
    # fork: the children inherit the imported modules instead of importing pandas again
    ctx = get_context("fork") if "fork" in _start_methods() else None
    with ProcessPoolExecutor(max_workers=min(jobs, len(files)), mp_context=ctx) as pool:
        return list(pool.map(classify_rank_file, files, [tax] * len(files)))


def _start_methods() -> list[str]:
    from multiprocessing import get_all_start_methods

    return get_all_start_methods()


def _run_dask(files: list[Path], tax: Taxonomy, jobs: int, scheduler: str | None) -> list:
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise AddressableError("the dask engine needs dask[distributed]: pip install 'addressable[dask]'") from None
    try:
        if scheduler:
            client, cluster = Client(scheduler, timeout="30s"), None
        else:
            cluster = LocalCluster(n_workers=min(jobs, len(files)), threads_per_worker=1, processes=True,
                                   dashboard_address=None)
            client = Client(cluster)
    except (OSError, TimeoutError) as e:
        raise AddressableError(f"cannot reach the Dask scheduler {scheduler}: {e}") from None
    try:
        futures = client.map(classify_rank_file, [str(f) for f in files], taxonomy=tax, pure=False)
        return client.gather(futures)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


_RUNNERS: dict[str, Callable[[list[Path], Taxonomy, int, str | None], list]] = {
    "serial": _run_serial, "process": _run_pool, "dask": _run_dask}


def assemble_job(results: list[RankResult | RankError], engine: str = "serial") -> JobResult:
    """Order the classified ranks, number the unnumbered, note duplicates and mixed world sizes, summarize."""
    good = [r for r in results if isinstance(r, RankResult)]
    errors = [r for r in results if isinstance(r, RankError)]
    warnings = []
    known = [r.rank for r in good if r.rank is not None]
    unknown = [r for r in good if r.rank is None]
    if unknown:
        start = max(known, default=-1) + 1
        for i, r in enumerate(unknown):
            r.rank, r.rank_source = start + i, "file order"
        if known:
            warnings.append(f"{len(unknown)} trace(s) carry no rank (no distributedInfo, no rank in the file "
                            f"name): numbered {start}-{start + len(unknown) - 1} by file order")
    good.sort(key=lambda r: (r.rank, r.file))
    ranks = [r.rank for r in good if r.rank is not None]
    assert len(ranks) == len(good)  # every trace is numbered now
    seen: dict[int, list[str]] = {}
    for r, rank in zip(good, ranks, strict=True):
        seen.setdefault(rank, []).append(Path(r.file).name)
    for rank, names in seen.items():
        if len(names) > 1:
            warnings.append(f"rank {rank} appears {len(names)} times: {', '.join(names)}")
    worlds = sorted({r.world_size for r in good if r.world_size is not None})
    if len(worlds) > 1:
        warnings.append(f"mixed world sizes: {', '.join(map(str, worlds))} (traces of different jobs?)")
    elif worlds and worlds[0] != len(good) + len(errors):
        warnings.append(f"world size {worlds[0]} but {len(good) + len(errors)} trace(s) given")
    warnings += one_job_warnings(good) + [w for r in good for w in r.breakdown.warnings]
    summary = summarize_ranks([r.breakdown for r in good], ranks,
                              [r.collectives for r in good]) if good else None
    return JobResult(good, summary, errors, warnings, engine)


def one_job_warnings(ranks: list[RankResult]) -> list[str]:
    """What says several traces are not the ranks of one job: different bases (CPU-op and GPU kernel time
    do not add up), different devices, traces without distributedInfo, different process-group backends."""
    if len(ranks) < 2:
        return []
    out = []
    bases = Counter("CPU-op self time" if r.breakdown.basis != BASIS_GPU else "GPU kernel time" for r in ranks)
    if len(bases) > 1:
        out.append(f"the traces are on different bases ({_counted(bases)}), whose times do not add up: the job's "
                   "pooled figures mix them")
    devices = Counter(r.device for r in ranks)
    if len(devices) > 1:
        out.append(f"the traces ran on different devices ({_counted(devices)})")
    bare = sum(r.rank_source != "distributedInfo" for r in ranks)
    if bare == len(ranks):
        out.append(f"none of the {bare} traces carries distributedInfo (Kineto records it for each rank of a "
                   "process group), so nothing shows they are ranks of one job")
    elif bare:
        out.append(f"{bare} of the {len(ranks)} traces carry no distributedInfo: they may not be ranks of this job")
    backends = Counter(r.backend for r in ranks if r.backend is not None)
    if len(backends) > 1:
        out.append(f"mixed process-group backends ({_counted(backends)}): traces of different jobs?")
    return out


def _counted(c: Counter) -> str:
    return ", ".join(f"{k} ×{n}" for k, n in c.most_common())


# --------------------------------------------------------------------------- writing and printing


def rank_folder_names(job: JobResult) -> list[str]:
    """rank<k> per rank; a repeated rank gets rank<k>-2, rank<k>-3, ..."""
    names: list[str] = []
    used: dict[int | None, int] = {}
    for r in job.ranks:
        used[r.rank] = used.get(r.rank, 0) + 1
        names.append(f"rank{r.rank}" + (f"-{used[r.rank]}" if used[r.rank] > 1 else ""))
    return names


def format_job(job: JobResult, top: int = 8) -> str:
    """The per-rank table, the job's fractions on three bases, the categories across ranks, the straggler."""
    s = job.summary
    if s is None:
        return "No trace could be classified."

    def ms(v: Any) -> str:
        return "-" if v is None or pd.isna(v) else f"{v / 1e3:,.3f}"

    def pct(v: Any) -> str:
        return "-" if v is None or pd.isna(v) else f"{v:.1%}"

    lines = [f"{len(job.ranks)} rank trace(s), classified with the {job.engine} engine. All times in ms, "
             "over each whole trace.",
             f"{'rank':>5}{'kernels':>11}{'busy':>11}{'comm':>10}{'exposed':>10}{'hidden':>10}{'waiting':>10}"
             f"{'summed':>9}{'exposed':>9}{'compute':>9}  file"]
    for r, row in zip(job.ranks, s.ranks.itertuples(index=False), strict=True):
        lines.append(f"{row.rank:>5}{ms(row.total_kernel_time_us):>11}{ms(row.busy_time_us):>11}"
                     f"{ms(row.communication_us):>10}{ms(row.communication_exposed_us):>10}"
                     f"{ms(row.communication_overlapped_us):>10}{ms(row.communication_waiting_us):>10}"
                     f"{pct(row.addressable_fraction):>9}{pct(row.addressable_fraction_exposed):>9}"
                     f"{pct(row.addressable_fraction_compute):>9}  {Path(r.file).name}")
    lines.append("  (comm = communication kernels; exposed = alone on the GPU, hidden = under other kernels, "
                 "waiting = estimated wait for the last rank; addressable fraction on the summed, exposed "
                 "and compute bases)")
    for b, words in (("summed", "summed basis (all kernel time)"), ("exposed", "exposed basis (busy time)"),
                     ("compute", "compute basis (kernel time less communication)")):
        f = s.fraction(b)
        lines.append(f"Addressable fraction, {words}: job {pct(f['job'])}; across ranks median "
                     f"{pct(f['median'])}, range {pct(f['min'])}–{pct(f['max'])}")
    lines += ["", f"{'category':<15}{'class':<13}{'share med':>10}{'min':>8}{'max':>8}"]
    for c in s.categories.sort_values("share_median", ascending=False).head(top).itertuples(index=False):
        lines.append(f"{c.category:<15}{c[1]:<13}{pct(c.share_median):>10}{pct(c.share_min):>8}{pct(c.share_max):>8}")
    st = s.straggler
    lines += ["", NO_STRAGGLER if st.likely_straggler_rank is None else "Straggler signal: communication " + ", ".join(
        f"rank {r} {ms(v)}" for r, v in zip(s.ranks["rank"], st.communication_us, strict=True))
        + f" ms; spread {ms(st.communication_spread_us)} ms = {st.communication_spread_share:.1%} of the median "
        f"kernel time; rank {st.likely_straggler_rank} waits least"]
    if st.last_arrival_rank is not None and st.waited_for_us is not None:
        lines.append(f"Matched collectives: the other ranks wait {ms(max(st.waited_for_us))} ms in all for rank "
                     f"{st.last_arrival_rank}, the last to arrive (waiting: the 'waiting' column)")
    return "\n".join(lines)


def job_json(job: JobResult) -> str:
    """`classify PATH... --json` text."""
    return json.dumps(job.to_dict(), indent=2, default=str)


NO_STRAGGLER = "Straggler signal: none (no communication kernels in any trace)"
TOP_LEVEL = "rank 0"  # whose breakdown the top-level run keys and tables are


def aggregate_breakdowns(breakdowns: list[Breakdown], keys: list[dict[str, Any]]) -> dict[str, Any]:
    """The `distributed` key of a multi-rank breakdown.json, from each rank's Breakdown and run keys.

    ranks: one row per rank (`ranks.summarize_ranks`' table plus step time, wall fraction, and
    kernel / busy / communication time per step); categories: the median / min / max share on the
    summed and exposed bases; addressable_fraction(_exposed, _compute, _wall): median / min / max
    across ranks (and the job's, pooled over ranks); straggler: the straggler signal.
    """
    if not breakdowns or len(breakdowns) != len(keys):
        raise AddressableError("aggregating ranks needs one breakdown and one set of run keys per rank")
    summary = summarize_ranks(breakdowns)
    ranks = summary.ranks.copy()
    steps = ranks["n_steps"].to_numpy(float)
    ranks["step_time_ms"] = [float(k.get("step_time_ms", np.nan)) for k in keys]
    ranks["addressable_fraction_wall"] = [float(k.get("addressable_fraction_wall", np.nan)) for k in keys]
    for col in ("total_kernel_time_us", "compute_time_us", "busy_time_us", "communication_us",
                "communication_exposed_us", "communication_overlapped_us"):
        ranks[col.removesuffix("_us") + "_per_step_us"] = ranks[col] / steps
    wall = ranks["addressable_fraction_wall"].to_numpy(float)
    no_wall = np.isnan(wall).any()
    doc = summary.to_dict()
    return {
        "world_size": len(breakdowns),
        "ranks": records(ranks, double_precision=10),
        "categories": doc["categories"],
        "addressable_fraction": doc["addressable_fraction"],
        "addressable_fraction_exposed": doc["addressable_fraction_exposed"],
        "addressable_fraction_compute": doc["addressable_fraction_compute"],
        "addressable_fraction_wall": {"median": None if no_wall else float(np.median(wall)),
                                      "min": None if no_wall else float(wall.min()),
                                      "max": None if no_wall else float(wall.max())},
        "straggler": doc["straggler"],
    }


def format_ranks(dist_doc: dict[str, Any], top: int = 8) -> str:
    """The per-rank report: one row per rank, then each category's share across ranks, then the straggler."""
    def ms(v: float | None) -> str:
        return "-" if v is None or np.isnan(v) else f"{v / 1e3:,.3f}"

    def pct(v: float | None) -> str:
        return "-" if v is None or np.isnan(v) else f"{v:.1%}"

    d = dist_doc
    lines = [f"Ranks: {d['world_size']} ({d.get('strategy', '?')}, {d.get('backend', '?')}); the run keys above "
             f"are {d.get('top_level', TOP_LEVEL)}'s. Per profiled step:",
             f"{'rank':>4}{'step ms':>10}{'work ms':>10}{'busy ms':>10}{'comm ms':>10}{'exposed':>10}"
             f"{'overlap':>10}{'addr sum':>10}{'addr exp':>10}{'addr cmp':>10}"]
    for r in d["ranks"]:
        lines.append(f"{r['rank']:>4}{r['step_time_ms']:>10,.2f}{ms(r['total_kernel_time_per_step_us']):>10}"
                     f"{ms(r['busy_time_per_step_us']):>10}{ms(r['communication_per_step_us']):>10}"
                     f"{ms(r['communication_exposed_per_step_us']):>10}"
                     f"{ms(r['communication_overlapped_per_step_us']):>10}"
                     f"{pct(r['addressable_fraction']):>10}{pct(r['addressable_fraction_exposed']):>10}"
                     f"{pct(r['addressable_fraction_compute']):>10}")
    lines.append("  (comm = communication (NCCL) time; exposed = running alone, overlap = hidden behind other kernels;"
                 " addr = addressable fraction, summed / exposed / compute basis)")
    for key, words in (("addressable_fraction", "summed basis"), ("addressable_fraction_exposed", "exposed basis"),
                       ("addressable_fraction_compute", "compute basis, communication left out"),
                       ("addressable_fraction_wall", "wall time")):
        s = d[key]
        lines.append(f"Addressable fraction ({words}) across ranks: median {pct(s['median'])}, "
                     f"range {pct(s['min'])}–{pct(s['max'])}")
    lines += ["", f"{'category':<15}{'class':<13}{'share med':>10}{'min':>8}{'max':>8}{'exposed med':>12}"
                  f"{'min':>8}{'max':>8}"]
    for c in sorted(d["categories"], key=lambda c: -(c["share_median"] or 0.0))[:top]:
        lines.append(f"{c['category']:<15}{c['class']:<13}{pct(c['share_median']):>10}{pct(c['share_min']):>8}"
                     f"{pct(c['share_max']):>8}{pct(c['exposed_share_median']):>12}{pct(c['exposed_share_min']):>8}"
                     f"{pct(c['exposed_share_max']):>8}")
    s = d["straggler"]
    lines.append("")
    if s.get("likely_straggler_rank") is None:
        lines.append(NO_STRAGGLER)
        return "\n".join(lines)
    lines.append("Straggler signal: communication " + ", ".join(f"rank {i} {ms(v)} ms" for i, v in
                                                                 enumerate(s["communication_us"]))
                 + f" (all profiled steps); spread {ms(s['communication_spread_us'])} ms = "
                 f"{s['communication_spread_share']:.1%} of the median work time; rank "
                 f"{s['likely_straggler_rank']} waits least (the others likely wait for it)")
    return "\n".join(lines)
