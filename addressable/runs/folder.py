"""Run folders on disk: writing a breakdown, and reading runs back for projection and plots.

This is the one reader and writer of run folders (their layout: docs/CONVENTIONS.md): `write_run`,
`write_job`, `write_module_io` and `write_ncu_check` write them; `load_run` / `load_runs` / `find_runs` /
`run_from_trace` return `Run`, which project, plot, sweep, report code and notebooks all use;
`read_run_keys`, `read_kernels`, `read_steps`, `load_module_io`, `read_module_cpu`, `load_modules` and `read_ncu_raw` read one file each. What projection needs (category times
on the run's basis, per-repeat times, steps, kernel times) are checked properties of `Run`: a bad file
is one AddressableError naming it (`Run.check()` reads them all at once).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from addressable.classify.breakdown import Breakdown, breakdown_of_trace, classify_trace, wall_fraction
from addressable.classify.modules import DETAIL_COLUMNS, NO_SCOPES_HINT, ModuleBreakdown
from addressable.classify.paths import Classified
from addressable.classify.ranks import JobResult, rank_folder_names
from addressable.classify.taxonomy import default_taxonomy
from addressable.core.atomic import atomic_dir, write_text
from addressable.core.errors import AddressableError
from addressable.core.files import read_csv
from addressable.core.jsonutil import records
from addressable.core.schema import KEY, VERSIONS, check_version
from addressable.trace.reader import Trace, load_trace

DEFAULT_RUNS_ROOT = Path("outputs")
TRACE_FILE = "trace.json.gz"  # the profiled steps' Kineto trace (rank<k>/trace.json.gz per rank of a job)
NCU_RAW_FILE = "ncu_raw.csv"  # Nsight Compute's own CSV, kept so that `addressable roofline RUN` re-checks it
NCU_CHECK_FILE = "ncu.csv"  # the per-kernel check of the roofline's bytes against Nsight Compute's
KERNEL_COLUMNS = ["name", "category", "class", "time_us", "count", "share"]
CATEGORY_COLUMNS = ["category", "class", "time_us", "share", "count"]


def write_breakdown(b: Breakdown, out: str | Path, extra: dict | None = None) -> Path:
    """Write breakdown.json, categories.csv, kernels.csv (and modules.csv) into folder `out` (each atomically)."""
    out = Path(out)
    doc = b.to_dict()
    if extra:
        doc.update(extra)
    write_text(out / "breakdown.json", _json_text(doc))
    write_text(out / "categories.csv", b.categories.to_csv(index=False))
    write_text(out / "kernels.csv", b.kernels.to_csv(index=False))
    if b.modules is not None and b.modules.has_scopes:
        write_text(out / "modules.csv", b.modules.detail.to_csv(index=False))
    return out


def write_run(folder: str | Path, b: Breakdown, keys: dict[str, Any], steps: pd.DataFrame,
              manifest: dict[str, Any], module_io: pd.DataFrame | None = None,
              module_cpu: pd.DataFrame | None = None) -> Path:
    """Write a profiled run folder's files: breakdown.json (with the run keys), categories.csv,
    kernels.csv, steps.csv, manifest.json and, when given, module_io.json and module_cpu.csv (each atomically)."""
    folder = Path(folder)
    write_breakdown(b, folder, extra=keys)
    write_text(folder / "steps.csv", steps.to_csv(index=False))
    write_text(folder / "manifest.json", _json_text(manifest))
    if module_io is not None:
        write_module_io(folder / MODULE_IO_FILE, module_io)
    if module_cpu is not None:
        cols = [*MODULE_CPU_COLUMNS, *(c for c in (*BACKWARD_CPU_COLUMNS, *DTYPE_COLUMNS) if c in module_cpu.columns)]
        write_text(folder / MODULE_CPU_FILE, module_cpu[cols].to_csv(index=False))
    return folder


MODULE_CPU_FILE = "module_cpu.csv"  # each module's CPU time per step, profiler-free (capture.scopes.module_cpu)
MODULE_CPU_COLUMNS = ("module", "class", "calls_per_step", "cpu_us_per_step")
# the backward's (capture.scopes.module_backward_cpu): optional, empty for a module no backward ran through
BACKWARD_CPU_COLUMNS = ("backward_calls_per_step", "backward_cpu_us_per_step")
# the dtypes of the first floating tensor each module's first call took and returned (capture.scopes.ModuleCpu):
# optional, "" where a module took or returned none, and in a file written before they were recorded
DTYPE_COLUMNS = ("input_dtype", "output_dtype")


def read_module_cpu(folder: str | Path) -> pd.DataFrame | None:
    """A run folder's module_cpu.csv (module, class, calls_per_step, cpu_us_per_step, the backward's
    BACKWARD_CPU_COLUMNS: NaN where no backward was timed, and DTYPE_COLUMNS: "" where none was recorded); None
    when it has none."""
    path = Path(folder) / MODULE_CPU_FILE
    if not path.is_file():
        return None
    table = read_csv(path, dtype={"module": str, "class": str}, keep_default_na=False)
    missing = [c for c in MODULE_CPU_COLUMNS if c not in table.columns]
    if missing:
        raise AddressableError(f"{path}: missing column(s) {', '.join(missing)} (needs {', '.join(MODULE_CPU_COLUMNS)})")
    for c in ("calls_per_step", "cpu_us_per_step", *BACKWARD_CPU_COLUMNS):
        if c not in table.columns:  # a file written before the backward was timed
            table[c] = np.nan
            continue
        v = pd.to_numeric(table[c].replace("", np.nan), errors="coerce")
        bad = (table[c].astype(str) != "") & v.isna() | (v < 0) if c in BACKWARD_CPU_COLUMNS else v.isna() | (v < 0)
        if bad.any():
            raise AddressableError(f"{path}: {c} on row {int(bad.to_numpy().argmax()) + 1} is not a number >= 0")
        table[c] = v
    for c in DTYPE_COLUMNS:
        table[c] = table[c].astype(str).str.strip() if c in table.columns else ""
    return table[[*MODULE_CPU_COLUMNS, *BACKWARD_CPU_COLUMNS, *DTYPE_COLUMNS]]


MODULE_IO_FILE = "module_io.json"
MODULE_IO_NEEDS = ("module", "class", "calls", "forward_bytes", "backward_bytes", "complete")


def write_module_io(path: str | Path, table: pd.DataFrame) -> Path:
    """module_io.json: each module's external bytes over one step (addressable.capture.scopes.module_io's table)."""
    doc = {KEY: VERSIONS["module_io"], "steps": 1, "modules": records(table)}
    write_text(path, json.dumps(doc, indent=1) + "\n")
    return Path(path)


def load_module_io(path: str | Path, required: bool = False) -> pd.DataFrame | None:
    """A module_io.json (a file, or a run folder's) as a table, one row per module; None when a run folder has
    none (an AddressableError when `required`)."""
    path = Path(path)
    path = path / MODULE_IO_FILE if path.is_dir() else path
    if not path.is_file():
        if required:
            raise AddressableError(f"no module I/O record {path}")
        return None
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise AddressableError(f"{path} is not valid JSON: {e}") from None
    check_version(doc, "module_io", str(path))
    mods = doc.get("modules") if isinstance(doc, dict) else None
    table = pd.DataFrame(mods) if isinstance(mods, list) else pd.DataFrame()
    missing = [c for c in MODULE_IO_NEEDS if c not in table.columns]
    if not isinstance(mods, list) or (mods and missing):
        raise AddressableError(f"{path}: not a module I/O record (needs modules: [{{{', '.join(MODULE_IO_NEEDS)}}}])")
    if table.empty:
        return pd.DataFrame(columns=list(MODULE_IO_NEEDS))
    table = table.astype({"module": str, "class": str})
    for c in ("calls", "forward_bytes", "backward_bytes"):
        table[c] = pd.to_numeric(table[c], errors="coerce")
    if table[["calls", "forward_bytes", "backward_bytes"]].isna().any().any():
        raise AddressableError(f"{path}: non-numeric calls or bytes")
    table["complete"] = table["complete"].astype(bool)
    return table

def write_job(job: JobResult, out: str | Path) -> Path:
    """A run folder for the job: the job's total as breakdown.json (with the `distributed` aggregate,
    so `project --runs` and `plot` read it), ranks.csv, and one rank<k>/ folder per rank."""
    total = job.total()
    if total is None or job.summary is None:
        raise AddressableError("no trace could be classified: nothing to write")
    out = Path(out)
    doc = job.to_dict()
    agg = {**doc["aggregate"], "ranks": doc["ranks"], "errors": doc["errors"], "warnings": doc["warnings"],
           "top_level": "job (kernel times added over ranks)"}
    extra = {"world_size": len(job.ranks), "addressable_fraction_exposed": agg["addressable_fraction_exposed"]["job"],
             "distributed": agg}
    with atomic_dir(out) as tmp:
        for r, name in zip(job.ranks, rank_folder_names(job), strict=True):
            write_breakdown(r.breakdown, tmp / name, {"rank": r.rank, "world_size": r.world_size})
        write_breakdown(total, tmp, extra)
        write_ranks_table(tmp, job.summary.ranks)
    return out


def write_classified(c: Classified, out: str | Path, extra: dict[str, Any] | None = None) -> Path | None:
    """Write what `classify PATHS` found into folder `out`: one trace's breakdown (write_breakdown, with the
    `extra` keys, e.g. its roofline) or the job's run folder (write_job); None when there is nothing to write
    (an explain table, no rank read)."""
    if c.breakdown is not None:
        return write_breakdown(c.breakdown, out, extra)
    if c.job is not None and c.job.ranks:
        return write_job(c.job, out)
    return None


def write_ranks_table(folder: Path, ranks: pd.DataFrame) -> Path:
    """ranks.csv of a job's run folder: one row per rank (its fractions, times and straggler figures)."""
    return write_text(folder / "ranks.csv", ranks.to_csv(index=False))


def write_ncu_check(folder: str | Path, raw: str, kernels: pd.DataFrame, check: dict[str, Any]) -> Path:
    """Record `profile --ncu`'s check in a run folder: ncu_raw.csv (Nsight Compute's CSV), ncu.csv (per
    kernel) and, where breakdown.json has a roofline, its roofline.ncu (`check`); each written atomically."""
    folder = Path(folder)
    doc = read_run_keys(folder)
    write_text(folder / NCU_RAW_FILE, raw)
    write_text(folder / NCU_CHECK_FILE, kernels.to_csv(index=False))
    if isinstance(doc.get("roofline"), dict):
        doc["roofline"]["ncu"] = check
        write_text(folder / "breakdown.json", _json_text(doc))
    return folder


def read_ncu_raw(folder: str | Path) -> str | None:
    """The Nsight Compute CSV a run folder keeps (ncu_raw.csv, from `profile --ncu`); None without one."""
    path = Path(folder) / NCU_RAW_FILE
    return path.read_text() if path.is_file() else None


def _json_text(doc: Any) -> str:
    return json.dumps(doc, indent=2, default=str) + "\n"



@dataclass
class Run:
    """One run read back: breakdown.json's keys, its category and kernel tables, its manifest; or a
    trace file's breakdown (run_from_trace), or category times made in memory (Run.from_times)."""

    path: Path
    info: dict[str, Any]
    categories: pd.DataFrame  # category, class, time_us, share, count
    kernels: pd.DataFrame  # name, category, class, time_us, count, share
    manifest: dict[str, Any] = field(default_factory=dict)
    name: str = ""  # the run folder's name (load_runs names same-named runs by their path)
    trace: Trace | None = None  # the parsed trace of a run read from a trace file
    breakdown: Breakdown | None = None  # the in-memory breakdown of a run read from a trace file
    wall_basis: str = "unprofiled step"  # or "--step-ms", or "profiled step" (a trace without step time)

    def __post_init__(self) -> None:
        self.name = self.name or self.path.name

    @classmethod
    def from_times(cls, name: str, times: Mapping[str, float], classes: Mapping[str, str] | None = None, *,
                   n_steps: float | None = None, step_time_ms: float | None = None) -> Run:
        """A run made in memory from category times (us over n_steps), e.g. for a what-if projection;
        a category missing from `classes` takes the taxonomy's class."""
        t = pd.Series(dict(times), dtype=float)
        cats = pd.DataFrame({"category": [str(c) for c in t.index], "time_us": t.to_numpy()})
        cats["class"] = [(classes or {}).get(c) or default_taxonomy().class_of(c) for c in cats["category"]]
        total = float(t.sum())
        cats["share"] = cats["time_us"] / total if total > 0 else 0.0
        info = {"workload": name, "n_steps": n_steps, "step_time_ms": step_time_ms}
        return cls(Path(name), info, cats[CATEGORY_COLUMNS[:4]], pd.DataFrame(columns=KERNEL_COLUMNS), {}, name)

    @property
    def is_folder(self) -> bool:
        """Whether the run was read from a run folder (not a trace file, not made in memory)."""
        return self.breakdown is None and (self.path / "breakdown.json").is_file()

    @property
    def workload(self) -> str:
        """The workload name (from breakdown.json, else the manifest, else the run's name)."""
        w = self.info.get("workload")
        if not (isinstance(w, str) and w):
            mw = self.manifest.get("workload")
            w = (mw.get("workload") or mw.get("name")) if isinstance(mw, dict) else mw
        return w if isinstance(w, str) and w else self.name

    @property
    def family(self) -> str:
        """The workload family (e.g. transformer, recsys); the workload name when absent."""
        return str(self.info.get("family") or self.workload)

    @property
    def mode(self) -> str:
        """train or infer; '' when absent."""
        return str(self.info.get("mode") or "")

    @property
    def addressable_fraction(self) -> float:
        """Replaceable share of work time (0 when absent)."""
        return float(self.info.get("addressable_fraction", 0.0))

    @property
    def addressable_fraction_compute(self) -> float:
        """Replaceable share of work time less communication (the compute basis); from the categories
        when breakdown.json predates the key."""
        v = self.info.get("addressable_fraction_compute")
        if v is not None:
            return float(v)
        t = pd.to_numeric(self.categories["time_us"], errors="coerce")
        compute = float(t[self.categories["category"] != "communication"].sum())
        repl = float(t[self.categories["class"] == "replaceable"].sum())
        return repl / compute if compute > 0 else 0.0

    @property
    def addressable_fraction_wall(self) -> float | None:
        """Replaceable time per step over the step's wall time, computed from the category times on the
        run's basis by classify.breakdown.wall_fraction (docs/accounting.md, "Wall clock"); breakdown.json's
        value where the run has no step count or step time; None without either."""
        if self.n_steps is None or self.step_time_ms is None:
            v = self.info.get("addressable_fraction_wall")
            return None if v is None else float(v)
        return _wall_of(self.times / self.n_steps, self.class_of, self.step_time_ms)

    def fraction_range(self, wall: bool = False) -> tuple[float, float]:
        """[min, max] of the addressable fraction across repeats (the point value when absent); the wall
        fraction's from each repeat's own times and step time, as addressable_fraction_wall computes it."""
        key = "addressable_fraction_wall_range" if wall else "addressable_fraction_range"
        value = self.addressable_fraction_wall if wall else self.addressable_fraction
        walls = [_wall_of(t, self.class_of, ms) for t, ms in self.repeats if ms] if wall and value is not None else []
        lo, hi = (min(walls), max(walls)) if walls else self.info.get(key) or (value, value)
        return (float(lo), float(hi)) if lo is not None and hi is not None else (float("nan"), float("nan"))

    def share_of(self, *categories: str) -> float:
        """Combined share of work time of some categories (e.g. share_of('gemm', 'attention'))."""
        return float(self.categories.loc[self.categories["category"].isin(categories), "share"].sum())

    @property
    def dtype(self) -> str:
        """The workload dtype (e.g. bf16); '' when absent."""
        return str(self.info.get("dtype") or "")

    @property
    def world_size(self) -> int:
        """Number of processes (GPUs) of a multi-GPU run; 1 for a single-GPU run."""
        for src in (self.info, self.info.get("distributed"), self.manifest.get("distributed")):
            if isinstance(src, dict) and src.get("world_size"):
                return int(src["world_size"])
        return 1

    @property
    def strategy(self) -> str:
        """How a multi-GPU run split its model (ddp, fsdp2, ...); '' for a single-GPU run."""
        if self.world_size <= 1:
            return ""
        for src in (self.info, self.info.get("distributed"), self.manifest.get("distributed")):
            if isinstance(src, dict) and src.get("strategy"):
                return str(src["strategy"])
        return ""

    @property
    def options(self) -> dict[str, Any]:
        """The workload options the run was profiled with (e.g. {"layers": 8})."""
        opts = self.info.get("options")
        if opts is None:
            config = self.manifest.get("config")
            opts = config.get("options") if isinstance(config, dict) else None
        return dict(opts) if isinstance(opts, dict) else {}

    @property
    def extrapolated(self) -> dict[str, Any] | None:
        """{"from_layers": [L1, L2], "to_layers": N} for a run extrapolated from two depths, else None."""
        ex = self.info.get("extrapolated")
        return ex if isinstance(ex, dict) else None

    @property
    def compiled(self) -> bool:
        """Whether the model ran under torch.compile."""
        config = self.manifest.get("config")
        return bool(self.info.get("compile") or (isinstance(config, dict) and config.get("compile")))

    @property
    def device_name(self) -> str:
        """Where the run ran: the GPU's name without its vendor (e.g. "H200"), "cpu", or ''."""
        device = str(self.info.get("device") or "")
        gpu = self.manifest.get("gpu")
        if device == "cuda" and gpu:
            return re.sub(r"^(NVIDIA|AMD)\s+", "", str(gpu))
        return device

    def label_parts(self, dtype: bool = False) -> tuple[str, str]:
        """The label's two halves from the run keys: "workload mode bB sS [dtype]", and its qualifier
        (compile, multi-GPU strategy × world size, the layer subset or the extrapolation), e.g.
        "FSDP2×2 (8 layers)"."""
        parts = [self.workload, self.mode]
        if self.info.get("batch") is not None:
            parts.append(f"b{self.info['batch']}")
        if self.info.get("seq_len") is not None:
            parts.append(f"s{self.info['seq_len']}")
        if dtype:
            parts.append(self.dtype)
        qual = ["compile"] if self.compiled else []
        if self.world_size > 1:
            qual.append(f"{self.strategy.upper()}×{self.world_size}" if self.strategy else f"{self.world_size} GPUs")
        ex = self.extrapolated
        if ex is not None:
            depths = ",".join(str(d) for d in ex.get("from_layers") or [])
            to = ex.get("to_layers") or self.info.get("layers")
            qual.append(f"(extrap. {depths}→{to} layers)" if depths else f"(extrap. to {to} layers)")
        elif self.options.get("layers") is not None:
            qual.append(f"({self.options['layers']} layers)")
        return " ".join(p for p in parts if p), " ".join(qual)

    @property
    def label(self) -> str:
        """A short label from the run keys, e.g. "llama3-8b train b8 s1024 FSDP2×2 (8 layers)"."""
        return " ".join(p for p in self.label_parts() if p)

    # ----------------------------------------------------------------- what projection reads (checked)

    @property
    def _where(self) -> str:
        return str(self.path) if self.breakdown is not None else str(self.path / "breakdown.json")

    @cached_property
    def _checked_categories(self) -> pd.DataFrame:
        csv = self.path / "categories.csv"
        return checked_times(self.categories, ("category", "time_us"),
                             str(csv) if self.is_folder and csv.is_file() else f"{self._where}: categories")

    @cached_property
    def classes(self) -> dict[str, str]:
        """category -> library | replaceable | unclassified, as the run recorded it."""
        cats = self._checked_categories
        return dict(zip(cats["category"], cats["class"].astype(str), strict=True))

    def class_of(self, category: str) -> str:
        """The run's class of a category (the taxonomy's for one the run does not have)."""
        return self.classes.get(category) or default_taxonomy().class_of(category)

    @cached_property
    def n_steps(self) -> float | None:
        """Profiled steps the times are summed over (from n_steps, else total / per-step kernel time)."""
        n = positive_or_none(self.info.get("n_steps"))
        if n is None:
            total, per_step = (positive_or_none(self.info.get(k))
                               for k in ("total_kernel_time_us", "kernel_time_per_step_us"))
            n = total / per_step if total and per_step else None
        return n

    @property
    def step_time_ms(self) -> float | None:
        """Unprofiled step time (or --step-ms, or a trace's profiled step); None when absent or not positive."""
        return positive_or_none(self.info.get("step_time_ms"))

    @property
    def host_time_ms(self) -> float | None:
        """Unprofiled time a step's CPU takes to return (host_time_ms); None when absent or not positive."""
        return positive_or_none(self.info.get("host_time_ms"))

    def unprofiled_steps_ms(self) -> np.ndarray:
        """Each unprofiled step's time from steps.csv (ms); empty for a run without that file."""
        f = self.path / "steps.csv"
        if not self.is_folder or not f.is_file():
            return np.empty(0)
        t = read_csv(f)
        if not {"time_ms", "profiled"} <= set(t.columns):
            return np.empty(0)
        return t.loc[~t["profiled"].astype(bool), "time_ms"].to_numpy(float)

    @cached_property
    def _on_basis(self) -> tuple[str, pd.Series, list[tuple[pd.Series, float | None]]]:
        cats = self._checked_categories
        times = cats["time_us"].groupby(cats["category"], sort=False).sum()
        repeats = _read_repeats(self.info, self._where)
        doc = self.info
        if doc.get("streams_overlap") is True and isinstance(doc.get("exposed_category_time_us"), dict):
            return "exposed", *_exposed_times(doc, self._where, times, repeats)
        return "summed", times, repeats

    @property
    def basis(self) -> str:
        """exposed when streams overlap and breakdown.json has exposed category times, else summed."""
        return self._on_basis[0]

    @property
    def times(self) -> pd.Series:
        """category -> time (us, all profiled steps) on the run's basis."""
        return self._on_basis[1]

    @property
    def repeats(self) -> list[tuple[pd.Series, float | None]]:
        """Per repeat: category -> time per step on the run's basis, and the repeat's step time (ms)."""
        return self._on_basis[2]

    @cached_property
    def kernel_times(self) -> pd.DataFrame | None:
        """name, category, time_us of the run's kernels (summed basis); None for a folder without kernels.csv."""
        csv = self.path / "kernels.csv"
        if self.breakdown is None and not csv.is_file():
            return None
        k = checked_times(self.kernels, ("name", "category", "time_us"),
                          str(csv) if self.breakdown is None else f"{self._where}: kernels")
        return k.assign(name=k["name"].astype(str))[["name", "category", "time_us"]]

    @property
    def ceiling_kernel_roofline(self) -> float:
        """breakdown.json's roofline ceiling (addressable.roofline.model); NaN when absent."""
        roof = self.info.get("roofline")
        return (positive_or_none(roof.get("ceiling_kernel_roofline")) if isinstance(roof, dict) else None) or math.nan

    @cached_property
    def traces(self) -> list[Path | Trace]:
        """The run's trace, or its ranks' traces, for the replay model; [] when none was kept."""
        if self.trace is not None:
            return [self.trace]
        return list(run_traces(self.path)) if self.is_folder else []

    @cached_property
    def module_cpu(self) -> pd.DataFrame | None:
        """Each module's profiler-free CPU time per step (module_cpu.csv), for the replay; None when absent."""
        return read_module_cpu(self.path) if self.is_folder else None

    @cached_property
    def modules(self) -> ModuleBreakdown | None:
        """Time per module and kernel (modules.csv), for module: targets; None when the run has none."""
        if self.breakdown is not None:
            return self.breakdown.modules
        return load_modules(self.path) if self.is_folder and isinstance(self.info.get("modules"), dict) else None

    def check(self) -> Run:
        """Read every checked property now (a bad file fails here, not halfway through); returns self."""
        _ = self.classes, self.n_steps, self.times, self.kernel_times
        return self


def _wall_of(per_step: pd.Series, class_of: Callable[[str], str], step_time_ms: float) -> float:
    """The wall-clock fraction of category times per step (us) for a step of step_time_ms."""
    repl = math.fsum(float(t) for c, t in per_step.items() if class_of(str(c)) == "replaceable")
    return wall_fraction(repl, math.fsum(per_step.to_numpy(float)), step_time_ms * 1e3)[0]


def checked_times(df: pd.DataFrame, columns: tuple[str, ...], where: str) -> pd.DataFrame:
    """The table with `category` as str and `time_us` as float; an error naming the first bad row."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise AddressableError(f"{where}: missing column(s) {', '.join(missing)}")
    t = pd.to_numeric(df["time_us"], errors="coerce")
    bad = np.flatnonzero((t.isna() | (t < 0)).to_numpy())
    if len(bad):
        what = df["name"].iloc[bad[0]] if "name" in df.columns else df["category"].iloc[bad[0]]
        raise AddressableError(f"{where}: bad time_us on row {bad[0] + 1} ('{str(what)[:80]}')")
    return df.assign(category=df["category"].astype(str), time_us=t.astype(float))


def _read_repeats(doc: dict, where: str) -> list[tuple[pd.Series, float | None]]:
    reps = doc.get("repeats") or []
    if not isinstance(reps, list):
        raise AddressableError(f"{where}: 'repeats' must be a list")
    out = []
    for i, r in enumerate(reps, 1):
        if not isinstance(r, dict) or not isinstance(r.get("category_time_per_step_us"), dict):
            raise AddressableError(f"{where}: repeat {i} has no category_time_per_step_us")
        out.append((_num_series(r["category_time_per_step_us"], f"{where}: repeat {i}"),
                    positive_or_none(r.get("step_time_ms"))))
    return out


def _exposed_times(doc: dict, where: str, times: pd.Series, repeats: list[tuple[pd.Series, float | None]]
                   ) -> tuple[pd.Series, list[tuple[pd.Series, float | None]]]:
    """Exposed category times, and each repeat's: its own exposed times when recorded, else its summed
    times scaled by the run's exposed/summed ratio per category."""
    exposed = _num_series(doc["exposed_category_time_us"], f"{where}: exposed_category_time_us")
    ratio = (exposed / times.reindex(exposed.index)).replace([np.inf, -np.inf], np.nan).fillna(0.0)
    out = []
    for i, (raw, (summed, step_ms)) in enumerate(zip(doc.get("repeats") or [], repeats, strict=True), 1):
        own = raw.get("exposed_category_time_per_step_us")
        out.append((_num_series(own, f"{where}: repeat {i}") if isinstance(own, dict)
                    else summed.reindex(exposed.index, fill_value=0.0) * ratio, step_ms))
    return exposed, out


def _num_series(d: dict, where: str) -> pd.Series:
    s = pd.to_numeric(pd.Series(d, dtype=object), errors="coerce").astype(float)
    if s.isna().any() or (s < 0).any():
        raise AddressableError(f"{where}: non-numeric or negative time for '{s.index[(s.isna() | (s < 0))][0]}'")
    return s


def positive_or_none(v: Any) -> float | None:
    """A finite positive number as float; None for anything else (missing, zero, bool, text)."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
        return None
    return float(v)


def run_label_parts(runs: list[Run], full: bool = False) -> list[tuple[str, str]]:
    """Unique, readable labels from the run keys, each as (base, qualifier): ("gpt2 train b8 s1024", "compile DDP×2").

    `full` puts dtype and device in every label; otherwise the dtype shows where a workload's runs
    here differ in it and the device where the runs here ran on more than one. Runs that still tie
    get their differing options, then their folder's parent, then a number.
    """
    kinds = {str(r.info.get("device") or "") for r in runs} - {""}  # cuda, cpu
    gpus = {r.device_name for r in runs if r.info.get("device") == "cuda"} - {"cuda"}  # GPU names, where known
    show_device = full or len(kinds) > 1 or len(gpus) > 1
    dtypes = pd.DataFrame({"workload": [r.workload for r in runs], "dtype": [r.dtype for r in runs]})
    mixed = set(dtypes.groupby("workload")["dtype"].nunique().loc[lambda n: n > 1].index)
    parts = []
    for r in runs:
        base, qual = r.label_parts(dtype=full or r.workload in mixed)
        if show_device:
            base = " ".join(p for p in (base, r.device_name) if p)
        parts.append([base, qual])

    def options(i: int) -> str:
        return " ".join(f"{k}={v}" for k, v in sorted(runs[i].options.items()) if k != "layers")

    for extra in (options, lambda i: f"({runs[i].path.parent.name})", None):
        full_labels = pd.Series([" ".join(p for p in pair if p) for pair in parts])
        for _, same in full_labels[full_labels.duplicated(keep=False)].groupby(full_labels):
            tags = [extra(i) for i in same.index] if extra else [f"#{n}" for n in range(1, len(same) + 1)]
            if len(set(tags)) > 1:  # only a key that tells them apart
                for i, tag in zip(same.index, tags, strict=True):
                    parts[i][0] = " ".join(p for p in (parts[i][0], tag) if p)
    return [(base, qual) for base, qual in parts]


def load_run(path: str | Path) -> Run:
    """Read one run folder (or its breakdown.json)."""
    path = Path(path)
    folder = path.parent if path.name == "breakdown.json" else path
    doc = read_run_keys(folder)
    categories = read_csv(folder / "categories.csv") if (folder / "categories.csv").is_file() else \
        pd.DataFrame(doc.get("categories") or [], columns=["category", "class", "time_us", "share", "count"])
    if "class" not in categories.columns and "category" in categories.columns:  # older or hand-written runs
        categories["class"] = categories["category"].astype(str).map(default_taxonomy().class_of)
    if "share" not in categories.columns and "time_us" in categories.columns:
        t = pd.to_numeric(categories["time_us"], errors="coerce")
        categories["share"] = t / t.sum() if t.sum() > 0 else 0.0
    kernels = read_csv(folder / "kernels.csv") if (folder / "kernels.csv").is_file() else \
        pd.DataFrame(columns=["name", "category", "class", "time_us", "count", "share"])
    manifest = _read_json(folder / "manifest.json") if (folder / "manifest.json").is_file() else {}
    check_version(manifest, "manifest", f"{folder}/manifest.json")
    return Run(folder, doc, categories, kernels, manifest if isinstance(manifest, dict) else {})


def read_run_keys(folder: str | Path, required: bool = True) -> dict[str, Any]:
    """A run folder's breakdown.json (its classification and run keys), version-checked; {} when the folder
    has none and not `required`."""
    folder = Path(folder)
    if not required and not (folder / "breakdown.json").is_file():
        return {}
    doc = _read_json(folder / "breakdown.json")
    if not isinstance(doc, dict):
        raise AddressableError(f"{folder}/breakdown.json is not a JSON object")
    check_version(doc, "breakdown", f"{folder}/breakdown.json")
    return doc


def read_kernels(folder: str | Path) -> pd.DataFrame:
    """A run folder's kernels.csv (name and time_us at least, time_us numeric), with or without breakdown.json."""
    folder = Path(folder)
    path = folder / "kernels.csv"
    if not folder.is_dir():
        raise AddressableError(f"no such run folder: {folder}")
    if not path.is_file():
        raise AddressableError(f"no kernels.csv in {folder} (run `addressable profile` first)")
    kernels = read_csv(path)
    missing = {"name", "time_us"} - set(kernels.columns)
    if missing:
        raise AddressableError(f"{path} lacks columns {sorted(missing)}")
    t = pd.to_numeric(kernels["time_us"], errors="coerce")
    if t.isna().any():
        raise AddressableError(f"{path}: time_us on row {int(t.isna().to_numpy().argmax()) + 1} is not a number")
    return kernels.assign(time_us=t)


STEP_COLUMNS = ["repeat", "step", "time_ms", "profiled"]


def read_steps(folder: str | Path) -> pd.DataFrame | None:
    """A run folder's steps.csv (repeat, step, time_ms, profiled: every timed and profiled step), checked;
    None when the folder has none."""
    path = Path(folder) / "steps.csv"
    if not path.is_file():
        return None
    steps = read_csv(path)
    missing = [c for c in STEP_COLUMNS if c not in steps.columns]
    if missing:
        raise AddressableError(f"{path} lacks column(s) {', '.join(missing)}")
    t = pd.to_numeric(steps["time_ms"], errors="coerce")
    bad = np.flatnonzero((t.isna() | ~(t > 0)).to_numpy())
    if len(bad):
        raise AddressableError(f"{path}: time_ms on row {bad[0] + 1} is not a positive number")
    profiled = steps["profiled"].astype(str).str.lower().map({"true": True, "false": False, "1": True, "0": False})
    if profiled.isna().any():
        raise AddressableError(f"{path}: profiled on row {int(profiled.isna().to_numpy().argmax()) + 1} is not true/false")
    return steps.assign(time_ms=t.astype(float), profiled=profiled.astype(bool))[STEP_COLUMNS]


def find_runs(paths: str | Path | Iterable[str | Path] | None = None) -> list[Path]:
    """Runs: the given run folders and trace files, or every run folder below a given folder, in
    natural order; default outputs/. A missing path, or one with no run in or below it, is an
    AddressableError. Hidden (temporary) folders and runs nested inside another run are skipped."""
    given = [paths] if isinstance(paths, str | Path) else list(paths or [])
    out: list[Path] = []
    for p in map(Path, given or [DEFAULT_RUNS_ROOT]):
        if p.is_file() and p.name != "breakdown.json":  # a trace file
            out += [p] if p not in out else []
            continue
        found = runs_below(p.parent if p.name == "breakdown.json" else p) if p.exists() else []
        if not found and not given:
            raise AddressableError(f"no runs found under {p}/ (no breakdown.json); "
                                   "profile a workload first or pass --runs RUN_DIR")
        if not p.exists():
            raise AddressableError(f"no such run folder: {p}")
        if not found:
            raise AddressableError(f"no runs (folders with breakdown.json) found in {p}: no breakdown.json in it or below it")
        out += [f for f in found if f not in out]
    return out


def runs_below(root: Path) -> list[Path]:
    """Every run folder at or below root, in natural order (none: an empty list)."""
    if (root / "breakdown.json").is_file():
        return [root]
    found = {p.parent for p in root.rglob("breakdown.json")
             if not any(part.startswith(".") for part in p.relative_to(root).parts)}
    # sub-runs inside a run (e.g. the layers<L>/ depths of an extrapolated run) belong to it
    top = [f for f in found if not any(parent in found for parent in f.parents)]
    return sorted(top, key=_natural_key)


def _natural_key(path: Path) -> list[Any]:
    """Sort key that orders numbers by value: run-b8 < run-b16, s512 < s1024."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(path))]


def load_runs(paths: str | Path | Iterable[str | Path] | None = None, step_ms: float | None = None,
              host_ms: float | None = None) -> list[Run]:
    """Load every run find_runs finds (default: under outputs/; trace files through run_from_trace with
    `step_ms` and `host_ms`); runs with the same name are named by their path."""
    found = find_runs(paths)
    runs = [run_from_trace(p, step_ms, host_ms) if p.is_file() else load_run(p) for p in found]
    names = [r.name for r in runs]
    for r, p in zip(runs, found, strict=True):
        if names.count(r.name) > 1:
            r.name = str(p)
    return runs


def run_traces(folder: Path) -> list[Path]:
    """A run folder's trace, or its ranks' traces (rank0/trace.json.gz, ...); [] when not kept."""
    if (folder / TRACE_FILE).is_file():
        return [folder / TRACE_FILE]
    return sorted(folder.glob(f"rank*/{TRACE_FILE}"), key=lambda p: int(re.sub(r"\D", "", p.parent.name) or 0))


def run_from_trace(path: str | Path, step_ms: float | None = None, host_ms: float | None = None) -> Run:
    """A Kineto trace file as a run: its breakdown, and for the wall basis `step_ms` when given, else
    the mean span of its ProfilerStep#N rows (profiled-step time); `host_ms`, a step's measured CPU time to
    its return (host_time_ms), with `step_ms` only."""
    path = Path(path)
    for flag, ms in (("--step-ms", step_ms), ("--host-ms", host_ms)):
        if ms is not None and not (math.isfinite(ms) and ms > 0):
            raise AddressableError(f"{flag} must be a positive number of milliseconds, got {ms}")
    if host_ms is not None and step_ms is None:
        raise AddressableError("--host-ms needs --step-ms: the host time fixes the CPU scale only beside a measured step")
    trace = load_trace(path, runtime=True)
    b = breakdown_of_trace(trace, default_taxonomy())
    steps = trace.events[(trace.events["kind"] == "step").to_numpy()]
    basis = "--step-ms" if step_ms else "profiled step"
    if not step_ms:  # the mean ProfilerStep span; without steps, the whole trace is one step
        ev = trace.events
        step_ms = float(steps["dur"].mean() if not steps.empty else (ev["ts"] + ev["dur"]).max() - ev["ts"].min()) / 1e3
    n_steps = float(len(steps)) if not steps.empty else 1.0
    name = path.name.removesuffix(".gz").removesuffix(".json")
    info = {"workload": name, "n_steps": n_steps, "step_time_ms": step_ms, "host_time_ms": host_ms}
    return Run(path, info, b.categories, b.kernels, {}, name, trace, b, basis)


def runs_table(runs: list[Run]) -> pd.DataFrame:
    """One row per run: workload, mode, addressable fraction (kernel and wall with ranges; compute basis),
    GEMM+attention."""
    rows = []
    for r in runs:
        lo, hi = r.fraction_range()
        wall = r.addressable_fraction_wall
        wlo, whi = r.fraction_range(wall=True) if wall is not None else (None, None)
        rows.append({"run": r.name, "workload": r.workload, "mode": r.mode,
                     "batch": r.info.get("batch"), "seq_len": r.info.get("seq_len"),
                     "dtype": r.dtype, "gpus": r.world_size,
                     "addressable_kernel": r.addressable_fraction, "kernel_min": lo, "kernel_max": hi,
                     "addressable_wall": wall, "wall_min": wlo, "wall_max": whi,
                     "addressable_compute": r.addressable_fraction_compute,
                     "gemm_attention_share": r.share_of("gemm", "attention"),
                     "step_time_ms": r.info.get("step_time_ms")})
    return pd.DataFrame(rows)


def pct_range(v: Any, lo: Any = None, hi: Any = None) -> str:
    """A fraction as a percentage with its [min-max] across repeats when known, e.g. "42.0% [41.5%-42.3%]"."""
    if v is None or pd.isna(v):
        return "-"
    known = lo is not None and hi is not None and pd.notna(lo) and pd.notna(hi)
    return f"{v:.1%} [{lo:.1%}-{hi:.1%}]" if known else f"{v:.1%}"


def runs_summary(runs: list[Run]) -> pd.DataFrame:
    """runs_table for reading: fractions as percentages with their [min-max] across repeats."""
    t = runs_table(runs)
    pct = pct_range
    return pd.DataFrame({
        "workload": t["workload"], "mode": t["mode"],
        "batch": t["batch"].map(lambda v: "-" if pd.isna(v) else f"{int(v)}"),
        "seq_len": t["seq_len"].map(lambda v: "-" if pd.isna(v) else f"{int(v)}"),
        "dtype": t["dtype"].fillna("-"), "gpus": t["gpus"],
        "addressable (kernel)": [pct(*r) for r in zip(t["addressable_kernel"], t["kernel_min"], t["kernel_max"],
                                                      strict=True)],
        "addressable (wall)": [pct(*r) for r in zip(t["addressable_wall"], t["wall_min"], t["wall_max"], strict=True)],
        "addressable (compute)": t["addressable_compute"].map(pct),
        "GEMM+attention": t["gemm_attention_share"].map(lambda v: f"{v:.1%}"),
        "run": t["run"],
    })


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise AddressableError(f"no breakdown.json in {path.parent} (not a run folder)") from None
    except json.JSONDecodeError as e:
        raise AddressableError(f"{path} is not valid JSON: {e}") from None


def load_modules(path: str | Path) -> ModuleBreakdown:
    """The module breakdown of a run folder (breakdown.json's `modules` and modules.csv) or of a trace file."""
    path = Path(path)
    if path.is_file() and path.name != "breakdown.json":
        return cast(ModuleBreakdown, classify_trace(path).modules)  # classify_trace always attributes
    run = load_run(path)
    doc = run.info.get("modules")
    csv = run.path / "modules.csv"
    basis = str(run.info.get("basis") or "")
    total = float(run.info.get("total_kernel_time_us") or 0.0)
    if not isinstance(doc, dict) or "by_name" not in doc or not csv.is_file():
        note = (doc.get("note") if isinstance(doc, dict) else None) or NO_SCOPES_HINT
        empty = pd.DataFrame(columns=DETAIL_COLUMNS)
        return ModuleBreakdown(empty, pd.DataFrame(columns=["module", "module_class", "calls", "dispatch_us"]),
                               total, int(run.info.get("n_steps") or 1), basis, False, note)
    detail = read_csv(csv, dtype={c: str for c in DETAIL_COLUMNS[:6]}, keep_default_na=False)
    missing = [c for c in DETAIL_COLUMNS if c not in detail.columns]
    if missing:
        raise AddressableError(f"{csv}: missing column(s) {', '.join(missing)}")
    detail = detail.assign(time_us=pd.to_numeric(detail["time_us"], errors="coerce"),
                           count=pd.to_numeric(detail["count"], errors="coerce"))
    if detail[["time_us", "count"]].isna().any().any():
        raise AddressableError(f"{csv}: non-numeric time_us or count")
    n = int(doc.get("n_steps") or run.info.get("n_steps") or 1)
    mods = pd.DataFrame(doc["by_name"]) if isinstance(doc["by_name"], list) else pd.DataFrame()
    need = [c for c in ("module", "class", "calls", "dispatch_per_step_us") if c not in mods.columns]
    if need:
        raise AddressableError(f"{run.path}/breakdown.json: modules.by_name lacks {', '.join(need)}")
    mods = pd.DataFrame({"module": mods["module"].astype(str), "module_class": mods["class"].astype(str),
                         "calls": (mods["calls"] * n).round().astype("int64"), "dispatch_us": mods["dispatch_per_step_us"] * n})
    return ModuleBreakdown(detail[DETAIL_COLUMNS], mods, total, n, basis, True)
