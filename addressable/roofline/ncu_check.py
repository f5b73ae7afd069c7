"""Check the roofline's bytes and FLOPs against Nsight Compute, kernel by kernel.

`addressable profile ... --ncu N` re-runs one step of the workload under Nsight Compute
(addressable.capture.ncu, the runner: the top N replaceable kernels' functions, the first K launches of
each launch configuration, which ncu keys by the function's base name, grid and block, not its
template arguments). This module reads ncu's CSV, pairs its launches with the trace's (by base name,
grid, block and order) and compares, per kernel, the estimated bytes (addressable.roofline.op_models),
summed over the measured launches, with the measured ones:

    measured bytes = DRAM bytes read + bytes the kernel's stores wrote into L2

ncu flushes the caches before each kernel it measures, so every read comes from DRAM; writes,
though, stay dirty in L2 (up to its 50-60 MB on an H200) when the kernel ends and reach DRAM only
later, so ncu's DRAM write counter misses them. The stores' L2 write sectors
(lts__t_sectors_srcunit_tex_op_write) count every byte written, wherever it lands; the larger of
that and the DRAM write count is taken. Measured FLOPs are the SASS floating-point instructions
(an FMA counts two) plus the tensor-core math ops, where the GPU offers those metrics.
docs/roofline.md has the details.
"""

from __future__ import annotations

import difflib
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from addressable.classify.breakdown import classify_events, work_rows
from addressable.classify.taxonomy import Taxonomy, load_taxonomy
from addressable.core.errors import AddressableError
from addressable.core.jsonutil import records, to_jsonable
from addressable.roofline.model import OVER_PEAK, kernel_costs, resolve_peaks
from addressable.roofline.op_models import SECTOR
from addressable.runs.folder import TRACE_FILE, load_run, read_ncu_raw
from addressable.trace.kernel_names import parse_kernel_name
from addressable.trace.reader import Trace, load_trace

PER_CONFIG = 2  # the least launches measured per launch configuration (function base name, grid, block) of the step
TOLERANCE = 0.20  # the bytes check: estimate within ±20% of the measurement
SMALL_BYTES = 1e6  # kernels moving less than this per launch are listed apart (latency, not bytes, rules them)
BYTES_METRICS = {"dram_read": "dram__bytes_read.sum", "dram_write": "dram__bytes_write.sum",
                 "l2_write_sectors": "lts__t_sectors_srcunit_tex_op_write.sum", "time_ns": "gpu__time_duration.sum"}
# FLOPs: metric -> FLOPs per count; kept only where `ncu --query-metrics` lists them
FLOP_METRICS = {
    **{f"sm__sass_thread_inst_executed_op_{p}{op}_pred_on.sum": (2 if op == "fma" else 1)
       for p in ("f", "h", "d") for op in ("add", "mul", "fma")},
    **{f"sm__ops_path_tensor_src_{s}.sum": 1 for s in ("bf16_dst_fp32", "fp16_dst_fp32", "fp16_dst_fp16", "tf32",
                                                        "fp8", "fp64")},
}


def base_name(kernel: str) -> str:
    """A kernel's function name without namespaces, template arguments, parameters or return type.

    ncu spells the anonymous namespace `unnamed>::` (`void unnamed>::multi_tensor_apply_kernel<...>`)."""
    return parse_kernel_name(kernel.replace("unnamed>::", "(anonymous namespace)::")).qualified.split("::")[-1].strip()


# ---------------------------------------------------------------- reading ncu's CSV

_SCALE = {"byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "kb": 1e3, "mb": 1e6, "gb": 1e9,
          "nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9, "ns": 1, "us": 1e3, "ms": 1e6}


def read_ncu_csv(text: str) -> pd.DataFrame:
    """`ncu --csv --print-units base` (the details page) -> one row per launch, in launch order:
    kernel, grid, block, dram_read, dram_write, l2_write, time_ns, flops (NaN without FLOP metrics)."""
    start = text.find('"ID"')
    if start < 0:
        raise AddressableError("Nsight Compute wrote no measurements (no CSV header in its output)")
    df = pd.read_csv(io.StringIO(text[start:]), dtype=str)
    value = pd.to_numeric(df["Metric Value"].str.replace(",", "", regex=False), errors="coerce")
    unit = df["Metric Unit"].fillna("").str.lower().map(_SCALE).fillna(1.0)
    df = df.assign(value=value * unit, ID=pd.to_numeric(df["ID"]))
    wide = df.pivot_table(index=["ID", "Kernel Name", "Grid Size", "Block Size"], columns="Metric Name", values="value",
                          aggfunc="first").reset_index().sort_values("ID")
    missing = [m for m in BYTES_METRICS.values() if m not in wide]
    if missing:
        raise AddressableError(f"Nsight Compute's output lacks {', '.join(missing)}")
    flop_cols = [m for m in FLOP_METRICS if m in wide]
    flops = sum((wide[m].fillna(0.0) * FLOP_METRICS[m] for m in flop_cols), pd.Series(0.0, index=wide.index))
    return pd.DataFrame({
        "kernel": wide["Kernel Name"].astype(str), "grid": wide["Grid Size"], "block": wide["Block Size"],
        "dram_read": wide[BYTES_METRICS["dram_read"]], "dram_write": wide[BYTES_METRICS["dram_write"]],
        "l2_write": wide[BYTES_METRICS["l2_write_sectors"]] * SECTOR, "time_ns": wide[BYTES_METRICS["time_ns"]],
        "flops": flops if flop_cols else np.nan,
    }).reset_index(drop=True)


def measured_bytes(ncu: pd.DataFrame) -> pd.Series:
    """DRAM reads plus the bytes written (into L2 by the kernel's stores, or to DRAM if more)."""
    return ncu["dram_read"] + np.fmax(ncu["dram_write"], ncu["l2_write"])


# ---------------------------------------------------------------- the trace side


def step_kernels(trace: Trace, taxonomy: Taxonomy | None = None) -> pd.DataFrame:
    """The costed kernels (addressable.roofline.model.kernel_costs) of the trace's last profiled step, in launch order."""
    rows, basis = work_rows(trace)
    rows = kernel_costs(trace, classify_events(rows, taxonomy or load_taxonomy(), basis))
    rows = rows[rows["cat"].astype(str) == "kernel"]
    if "step" in rows and rows["step"].notna().any():
        rows = rows[rows["step"] == rows["step"].max()]
    return rows.sort_values("ts").reset_index(drop=True)


def top_kernel_names(rows: pd.DataFrame, n: int) -> list[str]:
    """Names of the top n replaceable kernels by summed time (a name: the full kernel name, as `roofline` lists it)."""
    r = rows[rows["class"] == "replaceable"]
    return list(r.groupby(r["name"].astype(str))["dur"].sum().sort_values(ascending=False).head(n).index)


def launch_config(values: pd.Series) -> pd.Series:
    """A grid or block as "x,y,z" from the trace's "[x,y,z]" or ncu's "(x, y, z)"."""
    return values.astype(str).str.findall(r"\d+").str.join(",")


def config_rank(rows: pd.DataFrame) -> pd.Series:
    """Each launch's place (0, 1, ...) among the step's launches of its ncu launch configuration: function
    base name, grid and block, as ncu's --filter-mode per-launch-config counts them."""
    names = rows["name"].astype(str)
    return rows.groupby([names.map(base_name), launch_config(rows["grid"]), launch_config(rows["block"])]).cumcount()


def match(rows: pd.DataFrame, ncu: pd.DataFrame, per_config: int | None = PER_CONFIG) -> pd.DataFrame:
    """Trace kernels with ncu's figures beside each (NaN where ncu measured none): dram_read, dram_write,
    l2_write, ncu_time_ns, ncu_flops and measured_bytes.

    ncu measured the first `per_config` launches of each launch configuration (function base name,
    grid, block: config_rank) of the step; the same launches of the trace, in launch order, are
    paired with ncu's by the longest runs of equal base name, grid and block
    (difflib.SequenceMatcher: a launch seen on one side only shifts nothing else). per_config None:
    ncu measured the first launches of the kernels' functions in the step, whatever their configuration.
    """
    t = rows.reset_index(drop=True)
    grid, block = launch_config(t["grid"]), launch_config(t["block"])
    first = config_rank(t) < (per_config or len(t) + 1)
    bases = set(ncu["kernel"].map(base_name))
    idx = np.flatnonzero(first & t["name"].astype(str).map(base_name).isin(bases))
    a = list(t["name"].astype(str).map(base_name).iloc[idx] + "|" + grid.iloc[idx] + "|" + block.iloc[idx])
    b = list(ncu["kernel"].map(base_name) + "|" + launch_config(ncu["grid"]) + "|" + launch_config(ncu["block"]))
    cols = {"dram_read": "dram_read", "dram_write": "dram_write", "l2_write": "l2_write",
            "time_ns": "ncu_time_ns", "flops": "ncu_flops"}
    out = {c: np.full(len(t), np.nan) for c in cols.values()}
    for i, j, k in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_matching_blocks():
        for src, dst in cols.items():
            out[dst][idx[i:i + k]] = ncu[src].to_numpy(dtype=float)[j:j + k]
    t = t.assign(**out)
    t["measured_bytes"] = measured_bytes(t)
    return t


# ---------------------------------------------------------------- the check


@dataclass
class NcuCheck:
    """Estimated against measured bytes and FLOPs of the top replaceable kernels of one step."""

    kernels: pd.DataFrame  # one row per kernel name (see compare)
    n_trace: int  # kernels in the trace's step
    n_ncu: int  # launches ncu measured
    n_matched: int
    top: int
    tolerance: float = TOLERANCE
    small_bytes: float = SMALL_BYTES
    over_peak: pd.DataFrame | None = None  # measured launches faster than the memory roof by > 5%: kernel, gbps
    peak_gbps: float | None = None
    per_config: int | None = PER_CONFIG  # launches ncu measured per launch configuration (None: a prefix of all)

    @property
    def checked(self) -> pd.DataFrame:
        """The kernels the bytes check counts: modelled, measured, at least small_bytes per launch."""
        k = self.kernels
        return k[k["modelled"] & k["measured_bytes"].notna() & ~k["small"]]

    @property
    def misses(self) -> pd.DataFrame:
        """Every top kernel outside the tolerance, unmodelled, unmeasured or small (with the reason)."""
        return self.kernels[~self.kernels["within"]]

    def to_dict(self) -> dict[str, Any]:
        """breakdown.json's roofline.ncu."""
        c = self.checked
        cols = ["name", "kernel", "category", "launch_op", "launches", "launches_in_step", "time_us", "est_bytes", "measured_bytes",
                "dram_read", "dram_write", "l2_write", "ratio", "est_flops", "measured_flops", "within", "status"]
        return to_jsonable({
            "top": self.top, "per_config": self.per_config, "tolerance": self.tolerance, "small_bytes_per_launch": self.small_bytes,
            "measured_bytes": "DRAM bytes read + max(L2 bytes written by the kernel's stores, DRAM bytes written)",
            "kernels_in_step": self.n_trace, "launches_measured": self.n_ncu, "launches_matched": self.n_matched,
            "checked": len(c), "within": int(c["within"].sum()),
            "kernels": records(self.kernels[cols]), "peak_gbps": self.peak_gbps,
            "over_peak": records(self.over_peak) if self.over_peak is not None else None,
        }, nan_as=None)


def _status(k: pd.DataFrame, tolerance: float) -> pd.Series:
    ok = (k["ratio"] - 1).abs() <= tolerance
    return pd.Series(np.select(
        [k["measured_bytes"].isna() & ~k["sampled"], k["measured_bytes"].isna(), ~k["modelled"], k["small"], ok],
        ["unsampled", "unmeasured", "unmodelled", np.where(ok, "small, within", "small, outside"), "within"],
        "outside"), index=k.index)


def compare(rows: pd.DataFrame, ncu: pd.DataFrame, top: int, tolerance: float = TOLERANCE,
            small_bytes: float = SMALL_BYTES, peak_gbps: float | None = None,
            per_config: int | None = PER_CONFIG) -> NcuCheck:
    """The check of the top `top` replaceable kernels (by summed time in the step) against ncu's launches.

    Per kernel name: launches measured (of launches_in_step), time in the step, estimated and measured
    bytes (and FLOPs) summed over the measured launches, their ratio, and a
    status: within, outside, unmodelled (its op has no model), unsampled (none of its launches is among
    the first `per_config` of its launch configuration, so ncu was not asked to measure it), unmeasured
    (asked, but no ncu launch paired with it) or small (under `small_bytes` measured per launch: listed,
    not counted). With `peak_gbps`, every
    measured launch whose DRAM bandwidth beats it by more than 5% is listed in over_peak.
    """
    m = match(rows, ncu, per_config)
    names = top_kernel_names(rows, top)
    r = m[m["name"].astype(str).isin(names) & m["measured_bytes"].notna()]
    g = r.groupby(r["name"].astype(str)).agg(
        category=("category", lambda s: str(s.iloc[0])), launch_op=("launch_op", lambda s: str(s.iloc[0])),
        launches=("dur", "size"), time_us=("dur", "sum"), est_bytes=("bytes", "sum"),
        measured_bytes=("measured_bytes", "sum"), dram_read=("dram_read", "sum"), dram_write=("dram_write", "sum"),
        l2_write=("l2_write", "sum"), est_flops=("flops", "sum"), measured_flops=("ncu_flops", lambda s: s.sum(min_count=1)),
        modelled=("modelled", "all")) if not r.empty else None
    k = pd.DataFrame({"name": names}).merge(g.reset_index() if g is not None else pd.DataFrame(columns=["name"]),
                                            on="name", how="left")
    in_step = rows[rows["name"].astype(str).isin(names)].groupby(rows["name"].astype(str))["dur"].agg(["sum", "size"])
    k["time_us"] = k["name"].map(in_step["sum"])  # the ranking: all the step's launches
    k["launches_in_step"] = k["name"].map(in_step["size"]).astype(int)
    first = rows.groupby(rows["name"].astype(str))[["category", "launch_op"]].first()
    for col in ("category", "launch_op"):  # also for the kernels ncu did not measure
        k[col] = k[col].where(k[col].notna(), k["name"].map(first[col].astype(str)))
    rank = config_rank(rows)
    k["sampled"] = k["name"].map(rank.groupby(rows["name"].astype(str)).min()) < (per_config or len(rows) + 1)
    k["modelled"] = k["modelled"].fillna(False).astype(bool)
    k["launches"] = k["launches"].fillna(0).astype(int)
    k["kernel"] = k["name"].map(base_name)
    k["ratio"] = np.where(k["modelled"], k["est_bytes"] / k["measured_bytes"].where(k["measured_bytes"] > 0), np.nan)
    k["small"] = (k["measured_bytes"] / k["launches"].where(k["launches"] > 0)).fillna(np.inf) < small_bytes
    k["status"] = _status(k, tolerance)
    k["within"] = k["status"] == "within"
    over = None
    if peak_gbps:
        gbps = m["measured_bytes"] / m["ncu_time_ns"]  # bytes per ns = GB/s
        fast = m[gbps > OVER_PEAK * peak_gbps]
        over = pd.DataFrame({"kernel": fast["name"].astype(str).map(base_name), "launch_op": fast["launch_op"],
                             "measured_bytes": fast["measured_bytes"], "gbps": gbps[fast.index]}).reset_index(drop=True)
    return NcuCheck(k.reset_index(drop=True), len(rows), len(ncu), int(m["measured_bytes"].notna().sum()), top,
                    tolerance, small_bytes, over, peak_gbps, per_config)


def check_of_run(folder: str | Path, taxonomy: Taxonomy | str | Path | None = None) -> NcuCheck | None:
    """The check of a run folder that holds ncu_raw.csv, recomputed with the current models (taxonomy: the
    rules or a rule file); None without one."""
    folder = Path(folder)
    raw, trace = read_ncu_raw(folder), folder / TRACE_FILE
    if raw is None or not trace.is_file():
        return None
    run = load_run(folder)
    try:
        recorded = run.info["roofline"]["ncu"]
        top, per_config = int(recorded["top"]), recorded.get("per_config", PER_CONFIG)
    except (ValueError, KeyError, TypeError):
        top, per_config = 20, PER_CONFIG
    tax = taxonomy if isinstance(taxonomy, Taxonomy) else load_taxonomy(taxonomy)
    return compare(step_kernels(load_trace(trace), tax), read_ncu_csv(raw), top,
                   peak_gbps=peak_gbps_of(run.manifest), per_config=per_config)


def peak_gbps_of(manifest: dict[str, Any]) -> float | None:
    """The memory roof of a run (its manifest's calibrated peaks, else its GPU's), None if unknown."""
    try:
        return resolve_peaks(manifest=manifest).memory_gbps
    except AddressableError:
        return None


STATUS_LEGEND = (
    "within/outside: estimate within/outside ±tolerance of the measured bytes, summed over the measured launches; "
    "small: under 1 MB per launch (latency rules it), listed apart; unmodelled: its op has no bytes model; "
    "unsampled: none of its launches is among the first K of its launch configuration (function base name, grid, "
    "block), so ncu was not asked for it; unmeasured: asked, but no ncu launch paired with it")


def format_check(c: NcuCheck, title: str = "", all_kernels: bool = False) -> str:
    """The check in words: the count within tolerance, then every miss (every top kernel with all_kernels)."""
    checked = c.checked
    sampled = f"the first {c.per_config} of each launch configuration" if c.per_config else "the step's first launches"
    lines = [f"Nsight Compute check{' of ' + title if title else ''}: {c.n_trace} kernels in the step, "
             f"{c.n_ncu} launches measured ({sampled}), {c.n_matched} paired with the trace's",
             f"Top {len(c.kernels)} replaceable kernels by time: {int(checked['within'].sum())} of {len(checked)} "
             f"checked within ±{c.tolerance:.0%} of the measured bytes (DRAM reads + bytes written); "
             f"{int(c.kernels['small'].sum())} under {c.small_bytes / 1e6:g} MB per launch listed apart"]
    if all_kernels:
        lines.append(f"  {'status':<15} {'kernel':<50} {'launch op':<30} {'launches':>9} {'est/ncu':>7} "
                     f"{'est MB':>9} {'ncu MB':>9} {'step us':>8}")
    for x in (c.kernels if all_kernels else c.misses).itertuples():
        measured = not math.isnan(x.measured_bytes)
        if all_kernels:
            ratio = f"{x.ratio:7.2f}" if x.modelled and measured else f"{'-':>7}"
            est = f"{x.est_bytes / 1e6:9.1f}" if x.modelled and measured else f"{'-':>9}"
            ncu_mb = f"{x.measured_bytes / 1e6:9.1f}" if measured else f"{'-':>9}"
            lines.append(f"  {x.status.upper():<15} {x.kernel[:50]:<50} {str(x.launch_op)[:30]:<30} "
                         f"{f'{x.launches}/{x.launches_in_step}':>9} {ratio} {est} {ncu_mb} {x.time_us:8.0f}")
            continue
        est = f"est/ncu {x.ratio:5.2f} ({x.est_bytes / 1e6:,.1f} vs {x.measured_bytes / 1e6:,.1f} MB)" \
            if x.modelled and measured else f"({x.measured_bytes / 1e6:,.1f} MB measured)" if measured else ""
        lines.append(f"  {x.status.upper():<15} {x.kernel[:50]:<50} {str(x.launch_op)[:30]:<30} {est}")
    if c.over_peak is not None:
        lines.append(f"Launches whose measured bandwidth beats the memory roof ({c.peak_gbps:,.0f} GB/s) by more than "
                     f"{OVER_PEAK - 1:.0%}: {len(c.over_peak)}")
        lines += [f"  OVER {o.kernel[:50]:<50} {str(o.launch_op)[:30]:<30} {o.gbps:,.0f} GB/s"
                  for o in c.over_peak.head(10).itertuples()]
    return "\n".join(lines)
