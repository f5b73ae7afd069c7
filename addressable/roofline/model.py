"""Stage 5b: how far each kernel is from the roofline, and the end-to-end ceiling physics allows.

Each GPU kernel takes the bytes and FLOPs of the CPU op that launched it (addressable.roofline.op_models,
from the shapes torch.profiler records with record_shapes=True). Its time at the roofline is
max(bytes / memory peak, FLOPs / matmul peak of its dtype); its headroom is that time over its
measured time (1.0: at the roof). The roofline ceiling is the end-to-end speedup if every
replaceable kernel ran at its roofline (kernels without a model keep their measured time), beside
the Amdahl ceiling (every replaceable kernel infinitely fast). docs/roofline.md has the details.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from addressable.classify.breakdown import BASIS_GPU, classify_events, work_rows
from addressable.classify.modules import (
    BACKWARD,
    FORWARD,
    LOSS,
    PSEUDO,
    ancestors,
    attribute,
    module_breakdown,
)
from addressable.classify.taxonomy import Taxonomy, load_taxonomy
from addressable.core.amdahl import amdahl
from addressable.core.atomic import write_text
from addressable.core.errors import AddressableError
from addressable.core.files import read_yaml
from addressable.core.jsonutil import records, to_jsonable
from addressable.roofline import op_models
from addressable.trace.kernel_names import parse_kernel_name, short_names
from addressable.trace.reader import Trace, load_trace

PEAKS_FILE = Path(__file__).with_name("peaks.yaml")
OVER_PEAK = 1.05  # a kernel faster than its roofline by more than this means its bytes or FLOPs model is wrong
_RECORD = ["input_dims", "input_type", "input_strides", "concrete_inputs"]


# ---------------------------------------------------------------- peaks


@dataclass(frozen=True)
class Peaks:
    """The roofs: memory bandwidth (GB/s) and dense matmul throughput per dtype (TFLOP/s)."""

    gpu: str
    memory_gbps: float
    tflops: dict[str, float]
    source: str
    measured: dict[str, float] = field(default_factory=dict)  # calibrate's raw figures (copy, read-only, ...)

    def tflops_of(self, dtype: str) -> float:
        """The matmul peak for a dtype key (bf16, fp16, fp32, fp8); NaN when unknown."""
        return float(self.tflops.get(dtype, math.nan))

    def to_dict(self) -> dict[str, Any]:
        """The JSON form stored in breakdown.json's roofline.peaks."""
        out = {"gpu": self.gpu, "memory_gbps": self.memory_gbps, "tflops": dict(self.tflops), "source": self.source}
        if self.measured:
            out["measured"] = dict(self.measured)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str | None = None) -> Peaks:
        """Peaks from calibrate's JSON (or to_dict's): the memory roof is memory_gbps, else the largest measured
    bandwidth (copy_gbps, read_gbps, add_gbps, ...); tflops (or matmul_tflops) per dtype. Bad input raises
    AddressableError."""
        try:
            measured = {str(k): float(v) for k, v in (d.get("measured") or {}).items() if v is not None}
            measured.update({k: float(v) for k, v in d.items() if k.endswith("_gbps") and k != "memory_gbps"
                             and v is not None})
            mem = d.get("memory_gbps") or max(measured.values(), default=0.0)
            tflops = {str(k): float(v) for k, v in (d.get("tflops") or d.get("matmul_tflops") or {}).items()
                      if v is not None}
            peaks = cls(str(d.get("gpu") or d.get("device") or "unknown GPU"), float(mem), tflops,
                        source or str(d.get("source") or "calibrated"), measured)
        except (AttributeError, TypeError, ValueError) as e:
            raise AddressableError(f"peaks: not a peaks object ({e})") from None
        if not peaks.memory_gbps > 0:
            raise AddressableError("peaks: no memory bandwidth (memory_gbps, copy_gbps or read_gbps)")
        return peaks


def read_peaks(path: str | Path) -> Peaks:
    """A peaks JSON file (write_peaks'; `calibrate --peaks FILE`), for `roofline --peaks FILE`."""
    try:
        return Peaks.from_dict(json.loads(Path(path).read_text()), f"calibrated: {path}")
    except (OSError, ValueError) as e:
        raise AddressableError(f"cannot read peaks file {path}: {e}") from None


def write_peaks(path: str | Path, peaks: Peaks) -> Path:
    """Write the peaks JSON that read_peaks reads (atomically)."""
    return write_text(path, json.dumps(peaks.to_dict(), indent=2, default=str) + "\n")


@cache
def datasheet() -> list[dict[str, Any]]:
    """The GPUs of peaks.yaml."""
    doc = read_yaml(PEAKS_FILE, "peaks table")
    return list(doc["gpus"])


def known_gpus() -> list[str]:
    """Names of the GPUs in the datasheet table."""
    return [g["name"] for g in datasheet()]


def gpu_peaks(name: str, use_calibrated: bool = True) -> Peaks:
    """Peaks of a GPU named like the table (H200) or its device name (NVIDIA H200): its shipped
    calibration when there is one and use_calibrated, else its datasheet."""
    for g in datasheet():
        if re.search(g["match"], name, re.IGNORECASE):
            if use_calibrated and g.get("calibrated"):
                return Peaks.from_dict({"gpu": g["name"], **g["calibrated"]})
            return Peaks(g["name"], float(g["memory_gbps"]), {k: float(v) for k, v in g["tflops"].items()},
                         f"datasheet: {g['source']}")
    raise AddressableError(f"no peaks for GPU '{name}' (known: {', '.join(known_gpus())}); "
                           "give --gpu NAME or --peaks FILE from `addressable calibrate --peaks FILE`")


def device_name(metadata: dict[str, Any]) -> str | None:
    """The first device's name in a trace's deviceProperties, if any."""
    props = metadata.get("deviceProperties")
    if isinstance(props, list) and props and isinstance(props[0], dict) and props[0].get("name"):
        return str(props[0]["name"])
    return None


def resolve_peaks(gpu: str | None = None, peaks: Peaks | dict | str | Path | None = None,
                  manifest: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None,
                  datasheet_only: bool = False) -> Peaks:
    """Which roofs to use, first found: `peaks` (a Peaks, a dict or a calibrate JSON file), the run
    manifest's calibrated peaks, the GPU named by `gpu`, the manifest's GPU, the trace's device."""
    if isinstance(peaks, Peaks):
        return peaks
    if isinstance(peaks, dict):
        return Peaks.from_dict(peaks)
    if peaks is not None:
        return read_peaks(peaks)
    if gpu:
        return gpu_peaks(gpu, not datasheet_only)
    manifest = manifest or {}
    if isinstance(manifest.get("peaks"), dict) and not datasheet_only:
        return Peaks.from_dict(manifest["peaks"])  # keeps calibrate's own source line
    name = manifest.get("gpu") or device_name(metadata or {})
    if not name:
        raise AddressableError("no GPU named in the trace or run; give --gpu NAME "
                               f"({', '.join(known_gpus())}) or --peaks FILE")
    return gpu_peaks(str(name), not datasheet_only)


# ---------------------------------------------------------------- bytes and FLOPs per kernel


def has_shapes(trace: Trace) -> bool:
    """Whether the trace's CPU ops carry record_shapes' Input Dims."""
    return "input_dims" in trace.events and bool(trace.events["input_dims"].notna().any())


def _launch_records(events: pd.DataFrame, rows: pd.DataFrame) -> tuple[np.ndarray, pd.DataFrame]:
    """For each row, the index (into the returned table of unique op records) of its launching op, -1 if none.

    The launching op is the innermost CPU op with the row's External id (the last to start), as
    addressable.trace.reader's `op` column; a record is (op name, Input Dims, Input type, Input Strides,
    Concrete Inputs).
    """
    cpu = events[(events["kind"] == "cpu_op") & events["external_id"].notna()]
    cpu = cpu.drop_duplicates("external_id", keep="last")
    key = pd.MultiIndex.from_arrays([cpu["name"].astype(str)] + [cpu[c].astype(str) for c in _RECORD])
    codes, uniques = pd.factorize(key)
    by_id = pd.Series(codes, index=cpu["external_id"].astype("int64").to_numpy())
    ids = rows["external_id"].astype("Int64")
    found = ids.map(by_id)
    rec = found.fillna(-1).astype(np.int64).to_numpy()
    table = pd.DataFrame(list(uniques), columns=["op", *_RECORD]) if len(uniques) else \
        pd.DataFrame(columns=["op", *_RECORD])
    return rec, table


def _working_itemsize(table: pd.DataFrame) -> int:
    """Bytes per element of the trace's most common floating dtype (for tensor lists, whose dtype is not recorded)."""
    counts: dict[int, int] = {}
    for text in table["input_type"]:
        for t in op_models.json_list(text):
            if t in op_models.FLOAT_DTYPES:
                counts[op_models.DTYPE_BYTES[t]] = counts.get(op_models.DTYPE_BYTES[t], 0) + 1
    return max(counts, key=counts.__getitem__) if counts else 4


OPTIMIZER_LIST_ITEMSIZE = 4  # optimizer tensor lists without known parameters: fp32 (autocast keeps fp32 masters)
ACCUMULATE_GRAD = "torch::autograd::AccumulateGrad"  # one per parameter that gets a gradient; its input: the gradient
MULTI_TENSOR_CHUNK = 65536  # elements per thread block of torch's multi_tensor_apply (foreach and fused optimizers)


def step_parameters(events: pd.DataFrame) -> tuple[op_models.Tensor, ...]:
    """The parameters that got a gradient in the trace's last step with any: each AccumulateGrad op's
    recorded gradient (shape and dtype). () without record_shapes or backward."""
    acc = events[(events["kind"] == "cpu_op") & (events["name"].astype(str) == ACCUMULATE_GRAD)]
    if "input_dims" not in acc or acc.empty:
        return ()
    if "step" in acc and acc["step"].notna().any():
        acc = acc[acc["step"] == acc["step"].max()]
    out = []
    for dims, types in zip(acc["input_dims"].astype(str), acc["input_type"].astype(str), strict=True):
        d, t = op_models.json_list(dims), op_models.json_list(types)
        if d and isinstance(d[0], list) and t and t[0] in op_models.DTYPE_BYTES:
            out.append(op_models.Tensor(tuple(d[0]), op_models.DTYPE_BYTES[t[0]], None, t[0]))
    return tuple(out)


def multi_tensor_blocks(tensors: tuple[op_models.Tensor, ...]) -> int:
    """Thread blocks multi_tensor_apply launches over these tensors: one per chunk of each."""
    return sum(-(-t.numel // MULTI_TENSOR_CHUNK) for t in tensors)


def record_costs(table: pd.DataFrame, params: tuple[op_models.Tensor, ...] = ()) -> list[op_models.Cost | None]:
    """The Cost of each unique op record (None: no model, or not enough recorded).

    Optimizer ops (_foreach_*, _fused_*) whose tensor lists Kineto left out (long lists are
    recorded as []) take the step's parameters as those lists; kernel_costs keeps that only where
    the op's kernels launched the thread blocks those parameters need.
    """
    working = _working_itemsize(table)
    param_size = max(({t.itemsize for t in params}), key=lambda s: sum(t.itemsize == s for t in params)) \
        if params else OPTIMIZER_LIST_ITEMSIZE
    out: list[op_models.Cost | None] = []
    for op, dims, types, strides, concrete in table.itertuples(index=False):
        if dims in ("nan", "<NA>", ""):
            out.append(None)
            continue
        optimizer = op.startswith(("aten::_fused_", "aten::_foreach_"))
        out.append(op_models.cost(op_models.parse_call(op, dims, types, strides, concrete,
                                                       param_size if optimizer else working,
                                                       params if optimizer else ())))
    return out


def _unrecorded_lists(table: pd.DataFrame) -> np.ndarray:
    """Whether each op record is an optimizer op with a tensor list Kineto left out."""
    return np.array([op.startswith(("aten::_fused_", "aten::_foreach_")) and any(
        t == "TensorList" and d == [] for d, t in zip(op_models.json_list(dims), op_models.json_list(types),
                                                       strict=False))
        for op, dims, types in zip(table["op"], table["input_dims"], table["input_type"], strict=True)], dtype=bool)


def _first_int(values: pd.Series) -> np.ndarray:
    """The x of each launch grid text "[x,y,z]"; 0 where none."""
    return pd.to_numeric(values.astype(str).str.extract(r"(\d+)")[0], errors="coerce").fillna(0).to_numpy()


def kernel_costs(trace: Trace, rows: pd.DataFrame) -> pd.DataFrame:
    """Work rows with their launching op and estimated bytes, FLOPs and matmul dtype (`modelled` says which have one).

    An op that launches several kernels splits its bytes by the model's passes when every kernel
    matches exactly one pass name and every pass has a kernel (BatchNorm's statistics and transform
    kernels); otherwise it splits its bytes and FLOPs in proportion to the kernels' durations.
    """
    out = rows.copy()
    n = len(out)
    rec, table = _launch_records(trace.events, out) if has_shapes(trace) else \
        (np.full(n, -1, np.int64), pd.DataFrame(columns=["op", *_RECORD]))
    params = step_parameters(trace.events) if len(table) else ()
    costs = record_costs(table, params)
    if params and "grid" in out:  # parameters stood in for unrecorded lists: keep that where the blocks agree
        blocks = multi_tensor_blocks(params)
        stood_in = np.append(_unrecorded_lists(table), False)[rec]
        call_blocks = pd.Series(_first_int(out["grid"])).groupby(out["external_id"].astype("Int64").fillna(-1)
                                                                 .to_numpy()).transform("sum").to_numpy()
        wrong = stood_in & (call_blocks != blocks)
        costs = [None if c is not None and i in set(rec[wrong]) else c for i, c in enumerate(costs)] \
            if wrong.any() else costs
    nbytes = np.array([c.bytes if c else np.nan for c in costs] + [np.nan])
    flops = np.array([c.flops if c else np.nan for c in costs] + [np.nan])
    dtype = np.array([c.dtype if c else "" for c in costs] + [""], dtype=object)
    ops = np.array([*table["op"], ""], dtype=object)
    out["launch_op"] = ops[rec]
    out["dtype"] = dtype[rec]
    out["modelled"] = rec >= 0
    out["modelled"] &= ~np.isnan(nbytes[rec])
    call = out["external_id"].astype("Int64").fillna(-1).to_numpy(dtype=np.int64)
    dur = out["dur"].to_numpy(dtype=np.float64)
    call_dur = pd.Series(dur).groupby(call).transform("sum").to_numpy()
    share = np.divide(dur, call_dur, out=np.zeros(n), where=call_dur > 0)
    # a call with zero total duration splits evenly
    count = pd.Series(dur).groupby(call).transform("size").to_numpy()
    share = np.where(call_dur > 0, share, 1.0 / count)
    out["bytes"] = np.where(out["modelled"], nbytes[rec] * share, np.nan)
    out["flops"] = np.where(out["modelled"], flops[rec] * share, np.nan)
    _apply_passes(out, rec, costs, call)
    return out


def _apply_passes(out: pd.DataFrame, rec: np.ndarray, costs: list, call: np.ndarray) -> None:
    """Per-kernel bytes from a model's passes, for calls whose kernels match its passes one to one; an
    op's bytes from its variant, for calls whose kernels all match that variant.

    Pass and variant patterns match the kernel's qualified name, not its template arguments (BatchNorm's
    running-stats update is `unrolled_elementwise_kernel_for_multi_outputs<…batch_norm_update_stats…>`)."""
    with_passes = {i for i, c in enumerate(costs) if c is not None and (c.passes or c.variants)}
    if not with_passes:
        return
    sel = np.flatnonzero(np.isin(rec, list(with_passes)) & (call >= 0))
    names = out["name"].astype(str).to_numpy()
    qualified = {n: parse_kernel_name(n).qualified for n in pd.unique(names[sel])}
    bytes_col = out["bytes"].to_numpy().copy()
    dur = out["dur"].to_numpy()

    def spread(members: np.ndarray, b: float) -> None:
        t = dur[members].sum()
        bytes_col[members] = b * (dur[members] / t if t > 0 else 1.0 / len(members))

    for _, idx in pd.Series(sel).groupby(call[sel]):
        idx = idx.to_numpy()
        cost = costs[rec[idx[0]]]
        for pattern, b in cost.variants:
            if all(_pass_regex(pattern).search(qualified[names[i]]) for i in idx):
                spread(idx, b)
                break
        if not cost.passes:
            continue
        which = [_pass_of(qualified[names[i]], cost.passes) for i in idx]
        if any(w < 0 for w in which) or len(set(which)) != len(cost.passes):
            continue
        for p, (_, b) in enumerate(cost.passes):
            spread(idx[np.array(which) == p], b)
    out["bytes"] = bytes_col


@cache
def _pass_regex(pattern: str) -> re.Pattern:
    return re.compile(pattern)


def _pass_of(name: str, passes: tuple[tuple[str, float], ...]) -> int:
    """Index of the first pass whose regex matches the kernel name, -1 if none."""
    for i, (pattern, _) in enumerate(passes):
        if _pass_regex(pattern).search(name):
            return i
    return -1


# ---------------------------------------------------------------- the roofline


def time_at_peak_us(nbytes: np.ndarray, flops: np.ndarray, dtype: np.ndarray, peaks: Peaks) -> tuple[np.ndarray, np.ndarray]:
    """(memory time, compute time) at the peaks, in µs; compute time NaN where FLOPs > 0 have no dtype peak."""
    mem = np.asarray(nbytes, dtype=np.float64) / (peaks.memory_gbps * 1e3)
    tf = np.array([peaks.tflops_of(d) if d else math.nan for d in dtype], dtype=np.float64)
    f = np.asarray(flops, dtype=np.float64)
    comp = np.where(f > 0, f / (tf * 1e6), 0.0)
    return mem, comp


@dataclass
class Roofline:
    """Per-kernel roofline figures and the ceilings of one trace."""

    peaks: Peaks
    rows: pd.DataFrame  # every work row: name, category, class, dur, launch_op, bytes, flops, t_peak_us, ...
    n_steps: int | None = None
    step_time_ms: float | None = None
    has_shapes: bool = True
    fusion: pd.DataFrame | None = None  # FUSION_COLUMNS per fusion candidate, when the trace has module scopes
    fusion_note: str = ""  # why there is no fusion table, or what limits it

    @property
    def total_time_us(self) -> float:
        """All work time."""
        return float(self.rows["dur"].sum())

    def _replaceable(self) -> pd.DataFrame:
        return self.rows[self.rows["class"] == "replaceable"]

    @property
    def replaceable_time_us(self) -> float:
        """Time of the replaceable kernels."""
        return float(self._replaceable()["dur"].sum())

    @property
    def saved_us(self) -> float:
        """Time saved if every modelled replaceable kernel ran at its roofline."""
        r = self._replaceable()
        return float((r["dur"] - r["t_roof_us"]).sum())

    @property
    def unmodelled_time_share(self) -> float:
        """Share of replaceable time whose launching op has no cost model (kept at its measured time)."""
        r = self._replaceable()
        t = float(r["dur"].sum())
        return float(r.loc[~r["modelled"], "dur"].sum()) / t if t else 0.0

    @property
    def ceiling_kernel(self) -> float:
        """Amdahl ceiling on kernel time: every replaceable kernel infinitely fast."""
        return amdahl([self.replaceable_time_us], [math.inf], self.total_time_us)

    @property
    def ceiling_kernel_roofline(self) -> float:
        """End-to-end speedup (kernel time) if every replaceable kernel ran at its roofline."""
        return amdahl([self.saved_us], [math.inf], self.total_time_us)

    @property
    def ceiling_wall_roofline(self) -> float:
        """The same on the wall-clock step time; NaN without a step time or step count, or where the time saved
        per step exceeds the step (kernels overlapping on several streams)."""
        if not self.step_time_ms or not self.n_steps:
            return math.nan
        return amdahl([self.saved_us / self.n_steps], [math.inf], self.step_time_ms * 1e3)

    def kernels(self) -> pd.DataFrame:
        """One row per kernel name: time, bytes, FLOPs, achieved GB/s and TFLOP/s, bound, headroom."""
        return _aggregate(self.rows, ["name", "category", "class"], self.peaks)

    def categories(self) -> pd.DataFrame:
        """One row per category: time, time at the roofline, headroom, and the category's own roofline ceiling."""
        c = _aggregate(self.rows, ["category", "class"], self.peaks)
        total = self.total_time_us
        saved = c["time_us"] - c["time_roof_us"]
        c["ceiling_roofline"] = [amdahl([s], [math.inf], total) for s in saved]
        c["ceiling_amdahl"] = [amdahl([t], [math.inf], total) for t in c["time_us"]]
        return c

    def unmodelled_ops(self) -> pd.DataFrame:
        """Launching ops of replaceable kernels without a model: op, time_us, kernels (launches)."""
        r = self._replaceable()
        r = r[~r["modelled"]]
        op = r["launch_op"].where(r["launch_op"] != "", "(no launching op recorded)")
        t = r.groupby(op)["dur"].agg(time_us="sum", kernels="size").reset_index()
        return t.rename(columns={"launch_op": "op"}).sort_values("time_us", ascending=False).reset_index(drop=True)

    def over_peak(self) -> pd.DataFrame:
        """Kernels measured faster than their roofline by more than 5%: a bytes or FLOPs model is wrong there."""
        k = self.kernels()
        return k[k["headroom"] > OVER_PEAK].reset_index(drop=True)

    def to_dict(self, top: int = 100) -> dict[str, Any]:
        """breakdown.json's `roofline`: peaks, the top kernels by time, ceilings, categories, unmodelled ops."""
        k = self.kernels().head(top)
        cols = ["name", "category", "time_us", "bytes", "flops", "achieved_gbps", "achieved_tflops", "bound", "headroom"]
        out = {
            "peaks": self.peaks.to_dict(),
            "has_shapes": self.has_shapes,
            "kernels": records(k[cols]),
            "ceiling_kernel": self.ceiling_kernel,
            "ceiling_kernel_roofline": self.ceiling_kernel_roofline,
            "ceiling_wall_roofline": self.ceiling_wall_roofline,
            "unmodelled_time_share": self.unmodelled_time_share,
            "categories": records(self.categories()[["category", "class", "time_us", "time_roof_us", "bytes",
                                                     "flops", "headroom", "ceiling_roofline", "ceiling_amdahl"]]),
            "unmodelled_ops": records(self.unmodelled_ops().head(20)),
            "over_peak": records(self.over_peak()[["name", "category", "time_us", "bytes", "flops", "headroom"]]),
        }
        if self.fusion is not None:
            out["fusion_candidates"] = records(self.fusion.head(2 * top))
        if self.fusion_note:
            out["fusion_note"] = self.fusion_note
        return to_jsonable(out, nan_as=None, inf_as="inf")


def _aggregate(rows: pd.DataFrame, keys: list[str], peaks: Peaks) -> pd.DataFrame:
    """Sum time, bytes and FLOPs over groups; achieved rates and headroom over the modelled rows."""
    r = rows.assign(t_mod=np.where(rows["modelled"], rows["dur"], 0.0),
                    t_mem=np.where(rows["modelled"], rows["t_mem_us"], 0.0),
                    t_comp=np.where(rows["modelled"], rows["t_comp_us"], 0.0),
                    t_peak=np.where(rows["modelled"], rows["t_peak_us"], 0.0))
    g = r.groupby(keys, observed=True, sort=False).agg(
        time_us=("dur", "sum"), count=("dur", "size"), modelled_time_us=("t_mod", "sum"),
        bytes=("bytes", "sum"), flops=("flops", "sum"), t_mem=("t_mem", "sum"), t_comp=("t_comp", "sum"),
        t_peak=("t_peak", "sum"), time_roof_us=("t_roof_us", "sum")).reset_index()
    for k in keys:
        g[k] = g[k].astype(str)
    mt = g["modelled_time_us"]
    ok = mt > 0
    g["achieved_gbps"] = np.where(ok, g["bytes"] / mt.where(ok, 1.0) / 1e3, np.nan)
    g["achieved_tflops"] = np.where(ok & (g["flops"] > 0), g["flops"] / mt.where(ok, 1.0) / 1e6, np.nan)
    g["bound"] = np.where(~ok, "unmodelled", np.where(g["t_comp"] > g["t_mem"], "compute", "memory"))
    g["headroom"] = np.where(ok, g["t_peak"] / mt.where(ok, 1.0), np.nan)
    g.loc[~ok, ["bytes", "flops"]] = np.nan
    g = g.sort_values("time_us", ascending=False).reset_index(drop=True)
    return g.drop(columns=["t_mem", "t_comp", "t_peak"])


def roofline_of_rows(rows: pd.DataFrame, peaks: Peaks, n_steps: int | None = None,
                     step_time_ms: float | None = None, shapes: bool = True) -> Roofline:
    """A Roofline from costed, classified work rows (kernel_costs' output)."""
    rows = rows.copy()
    mem, comp = time_at_peak_us(rows["bytes"].to_numpy(), rows["flops"].to_numpy(), rows["dtype"].to_numpy(), peaks)
    rows["modelled"] = rows["modelled"] & ~np.isnan(comp) & ~np.isnan(mem)
    rows["t_mem_us"] = np.where(rows["modelled"], mem, np.nan)
    rows["t_comp_us"] = np.where(rows["modelled"], comp, np.nan)
    rows["t_peak_us"] = np.fmax(rows["t_mem_us"], rows["t_comp_us"])
    dur = rows["dur"].to_numpy()
    rows["t_roof_us"] = np.where(rows["modelled"], np.minimum(dur, rows["t_peak_us"].fillna(0.0)), dur)
    return Roofline(peaks, rows, n_steps, step_time_ms, shapes)


def roofline_of_trace(trace: Trace | str | Path, taxonomy: Taxonomy | str | Path | None = None, *,
                      gpu: str | None = None, peaks: Peaks | dict | str | Path | None = None,
                      manifest: dict[str, Any] | None = None, step_time_ms: float | None = None,
                      datasheet_only: bool = False, module_io: pd.DataFrame | None = None) -> Roofline:
    """The roofline of a GPU trace: classify its kernels, cost them from their launching ops, compare with the
    peaks; with module scopes, the fusion headroom of each fusion candidate (its external bytes from
    `module_io`, the run's module_io.json: see fusion_table)."""
    trace = trace if isinstance(trace, Trace) else load_trace(trace)
    tax = taxonomy if isinstance(taxonomy, Taxonomy) else load_taxonomy(taxonomy)
    rows, basis = work_rows(trace)
    if basis != BASIS_GPU:
        raise AddressableError(f"{trace.path or 'the trace'} has no GPU kernels: a roofline needs a GPU trace")
    p = resolve_peaks(gpu, peaks, manifest, trace.metadata, datasheet_only)
    att = attribute(trace.events, kernel_costs(trace, classify_events(rows, tax, basis)), gpu=True)
    r = roofline_of_rows(att.rows, p, trace.n_steps or None, step_time_ms, has_shapes(trace))
    if not att.has_scopes:
        r.fusion_note = "no module scopes in this trace (profile with `addressable profile`): no fusion candidates"
        return r
    mb = module_breakdown(att, r.total_time_us, r.n_steps, basis)
    r.fusion = fusion_table(r.rows, mb.fusion_candidates(), att.modules, module_io, p, r.n_steps or 1)
    if module_io is None:
        r.fusion_note = NO_IO_NOTE
    return r


# ---------------------------------------------------------------- fusion headroom per module

NO_IO_NOTE = ("no module I/O record (module_io.json, written by `addressable profile`): a fused module's bytes "
              "are not known from a trace, so fusion headroom is not computed")
FUSION_COLUMNS = ["scope", "module", "class", "time_per_step_us", "replaceable_share", "kernel_bytes_per_step",
                  "fused_bytes_per_step", "forward_bytes_per_step", "backward_bytes_per_step", "kernel_roof_us",
                  "fused_roof_us", "bound", "fusion_headroom", "fusion_speedup", "note"]


def fusion_table(rows: pd.DataFrame, candidates: pd.DataFrame, modules: pd.DataFrame, io: pd.DataFrame | None,
                 peaks: Peaks, n_steps: int) -> pd.DataFrame:
    """Fusion headroom of each fusion candidate (modules.ModuleBreakdown.fusion_candidates), per step.

    A candidate (one module, or every module of a class) replaced by one fused kernel per call must
    still move its external bytes: the module I/O record's forward bytes where the trace shows
    forward kernels in it, plus its backward bytes where it shows backward kernels. Its time at the roof is max(those bytes / memory
    peak, the FLOPs of its kernels / their matmul peak); fusion_headroom is that time over the
    candidate's measured kernel time (1.0: at the roof), fusion_speedup its inverse. Beside it:
    the bytes its kernels move now (each op's model) and their time if each ran at its own roof.
    A candidate whose modules are not all in the record (or `<loss>`, which has no module
    boundary) has no fused figures, and its note says why.
    """
    real = modules[~modules["module"].isin(PSEUDO)]
    by_module = io.set_index("module") if io is not None and not io.empty else None
    anc = ancestors(pd.unique(rows["module"]))
    rows = rows.assign(t_comp=np.where(rows["modelled"], rows["t_comp_us"], 0.0),
                       b=np.where(rows["modelled"], rows["bytes"], 0.0))
    out = []
    for c in candidates.to_dict(orient="records"):
        members = set(real.loc[real["module_class"] == c["module"], "module"]) if c["scope"] == "class" \
            else {c["module"]}
        inside = set(anc.loc[anc["ancestor"].isin(members), "module"])
        mine = rows[rows["module"].isin(inside)]
        time = float(mine["dur"].sum()) / n_steps
        rec = {"scope": c["scope"], "module": c["module"], "class": c["class"],
               "time_per_step_us": time, "replaceable_share": c["replaceable_share"],
               "kernel_bytes_per_step": float(mine["b"].sum()) / n_steps,
               "kernel_roof_us": float(mine["t_roof_us"].sum()) / n_steps}
        note = _fused_bytes(rec, members, mine, anc, by_module, io is None)
        if not note:
            t_mem = rec["fused_bytes_per_step"] / (peaks.memory_gbps * 1e3)
            t_comp = float(mine["t_comp"].sum()) / n_steps
            rec["fused_roof_us"] = max(t_mem, t_comp)
            rec["bound"] = "compute" if t_comp > t_mem else "memory"
            rec["fusion_headroom"] = rec["fused_roof_us"] / time if time > 0 else math.nan
            rec["fusion_speedup"] = time / rec["fused_roof_us"] if rec["fused_roof_us"] > 0 else math.inf
        rec["note"] = note
        out.append(rec)
    return pd.DataFrame(out, columns=FUSION_COLUMNS)


def _fused_bytes(rec: dict[str, Any], members: set[str], mine: pd.DataFrame, anc: pd.DataFrame,
                 by_module: pd.DataFrame | None, no_record: bool) -> str:
    """Fill rec's fused, forward and backward bytes per step from the I/O record; else return why not."""
    if rec["module"] == LOSS:
        return "<loss> is work outside every module (no module boundary to fuse)"
    if no_record:
        return "no module I/O record"
    def working(direction: str) -> set[str]:  # members with kernels of that direction (in them or a submodule)
        mods = set(mine.loc[mine["direction"] == direction, "module"])
        return set(anc.loc[anc["module"].isin(mods) & anc["ancestor"].isin(members), "ancestor"])

    fwd, bwd = working(FORWARD), working(BACKWARD)
    need = fwd | bwd  # a member that launches no kernel needs no fused kernel
    missing = need - set(by_module.index) if by_module is not None else need
    if missing or by_module is None:  # None: an empty record
        return f"{len(missing)} of {len(need)} module(s) with kernels not in the module I/O record"
    recs = by_module.loc[sorted(need)]
    if not recs["complete"].all():
        return "a tensor of a layout without a byte count (not strided or sparse COO) at the module boundary"
    rec["forward_bytes_per_step"] = float(recs.loc[recs.index.isin(fwd), "forward_bytes"].sum())
    rec["backward_bytes_per_step"] = float(recs.loc[recs.index.isin(bwd), "backward_bytes"].sum())
    rec["fused_bytes_per_step"] = rec["forward_bytes_per_step"] + rec["backward_bytes_per_step"]
    return ""


def roofline_of_path(path: str | Path, taxonomy: Taxonomy | str | Path | None = None, *, gpu: str | None = None,
                     peaks: Peaks | dict | str | Path | None = None, datasheet_only: bool = False,
                     module_io: str | Path | None = None) -> Roofline:
    """roofline_of_trace for a trace file or a run folder (its trace.json.gz, manifest peaks, step time and
    module_io.json); `module_io`, a module_io.json file, overrides the run's (and gives a trace one)."""
    from addressable.runs.folder import TRACE_FILE, load_module_io, load_run

    path = Path(path)
    io = load_module_io(module_io, required=True) if module_io is not None else None
    if not path.is_dir():
        return roofline_of_trace(path, taxonomy, gpu=gpu, peaks=peaks, datasheet_only=datasheet_only, module_io=io)
    trace = path / TRACE_FILE
    if not trace.is_file():
        raise AddressableError(f"{path} holds no {TRACE_FILE} (a committed run keeps only its tables): "
                               "re-profile it or give a trace file")
    run = load_run(path)
    step = run.info.get("step_time_ms")
    return roofline_of_trace(trace, taxonomy, gpu=gpu, peaks=peaks, manifest=run.manifest,
                             step_time_ms=float(step) if isinstance(step, int | float) else None,
                             datasheet_only=datasheet_only, module_io=io if io is not None else load_module_io(path))


def roofline_keys(trace: Trace | str | Path, taxonomy: Taxonomy | str | Path | None = None,
                  classes: dict[str, str] | None = None, basis: str = BASIS_GPU) -> dict[str, Any]:
    """The `roofline` key of a breakdown.json written from a trace alone (`classify TRACE --out DIR`, which `plot
    roofline DIR` then reads): its roofline against the peaks of the GPU it names, `classes` flipped as in
    classify's --class. {} for a breakdown of CPU-op time (`basis`) or a trace without GPU kernels;
    {"roofline_note": why} where there is no roofline to store (no input shapes, an unknown GPU)."""
    if basis != BASIS_GPU:
        return {}
    trace = trace if isinstance(trace, Trace) else load_trace(trace)
    if not trace.has_gpu_work:
        return {}
    tax = taxonomy if isinstance(taxonomy, Taxonomy) else load_taxonomy(taxonomy)
    taxonomy = tax.with_classes(classes) if classes else tax
    if not has_shapes(trace):
        return {"roofline_note": "no input shapes in the trace, so no kernel's bytes or FLOPs are known (profile "
                                 "with record_shapes=True, as `addressable profile` does)"}
    try:
        return {"roofline": roofline_of_trace(trace, taxonomy).to_dict()}
    except AddressableError as e:
        return {"roofline_note": str(e)}


# ---------------------------------------------------------------- text


def _fmt(v: float, spec: str = ".2f", suffix: str = "") -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else \
        "inf" if isinstance(v, float) and math.isinf(v) else f"{v:{spec}}{suffix}"


def format_peaks(p: Peaks) -> str:
    """One line of peaks: memory GB/s (and the measured copy / read-only figures), matmul TFLOP/s per dtype."""
    tf = ", ".join(f"{k} {v:,.0f}" for k, v in p.tflops.items())
    measured = "".join(f", {k.removesuffix('_gbps')} {v:,.0f}" for k, v in p.measured.items())
    return f"Peaks of {p.gpu} ({p.source}): memory {p.memory_gbps:,.0f} GB/s{measured}; matmul TFLOP/s {tf}"


def format_roofline(r: Roofline, top: int = 15) -> str:
    """What `addressable roofline` prints: peaks, ceilings, categories, top kernels, unmodelled ops."""
    lines = [format_peaks(r.peaks)]
    if not r.has_shapes:
        lines.append("No input shapes in this trace (profile with record_shapes=True, as `addressable profile` "
                     "does): every kernel is unmodelled.")
    lines += [f"Ceiling, kernel time: Amdahl {_fmt(r.ceiling_kernel, '.2f', 'x')}, roofline "
              f"{_fmt(r.ceiling_kernel_roofline, '.2f', 'x')}"
              + (f"; wall clock roofline {_fmt(r.ceiling_wall_roofline, '.2f', 'x')}"
                 if not math.isnan(r.ceiling_wall_roofline) else ""),
              f"Unmodelled: {r.unmodelled_time_share:.1%} of replaceable time (kept at its measured time)", "",
              f"{'category':<20}{'class':<13}{'time ms':>10}{'at roof ms':>12}{'headroom':>10}{'roofline':>10}{'Amdahl':>9}"]
    for c in r.categories().to_dict(orient="records"):
        lines.append(f"{c['category'][:19]:<20}{c['class'][:12]:<13}{c['time_us'] / 1e3:>10.2f}"
                     f"{c['time_roof_us'] / 1e3:>12.2f}{_fmt(c['headroom'], '.0%'):>10}"
                     f"{_fmt(c['ceiling_roofline'], '.2f', 'x'):>10}{_fmt(c['ceiling_amdahl'], '.2f', 'x'):>9}")
    k = r.kernels()
    k = k[k["class"] == "replaceable"].head(top)
    lines += ["", f"Top {len(k)} replaceable kernels by time",
              f"  {'kernel':<60}{'category':<16}{'time ms':>9}{'GB/s':>8}{'TFLOP/s':>9}{'bound':>11}{'headroom':>9}"]
    for x, name in zip(k.itertuples(), short_names(list(k["name"]), 59), strict=True):
        lines.append(f"  {name:<60}{x.category[:15]:<16}{x.time_us / 1e3:>9.2f}{_fmt(x.achieved_gbps, ',.0f'):>8}"
                     f"{_fmt(x.achieved_tflops, '.1f'):>9}{x.bound:>11}{_fmt(x.headroom, '.0%'):>9}")
    u = r.unmodelled_ops().head(10)
    if not u.empty:
        lines += ["", "Unmodelled ops (replaceable time)"]
        lines += [f"  {o.op[:60]:<60}{o.time_us / 1e3:>9.2f} ms{o.kernels:>8} kernels" for o in u.itertuples()]
    over = r.over_peak()
    if not over.empty:
        lines += ["", f"Faster than the roofline by more than {OVER_PEAK - 1:.0%} (a bytes or FLOPs model is wrong):"]
        over = over.head(10)
        lines += [f"  {name:<70} headroom {o.headroom:.0%}"
                  for o, name in zip(over.itertuples(), short_names(list(over["name"]), 70), strict=True)]
    if r.fusion is not None or r.fusion_note:
        lines += ["", *format_fusion(r.fusion, r.fusion_note)]
    return "\n".join(lines)


def stored_fusion(info: dict[str, Any]) -> tuple[pd.DataFrame | None, str]:
    """The fusion table and note stored in a run's breakdown.json (its `roofline` key); (None, "") without one."""
    roof = info.get("roofline")
    if not isinstance(roof, dict) or ("fusion_candidates" not in roof and "fusion_note" not in roof):
        return None, ""
    rows = roof.get("fusion_candidates")
    table = pd.DataFrame(rows, columns=FUSION_COLUMNS) if isinstance(rows, list) else None
    if table is not None:
        num = [c for c in FUSION_COLUMNS if c not in ("scope", "module", "class", "bound", "note")]
        table[num] = table[num].apply(pd.to_numeric, errors="coerce")
        table[["bound", "note"]] = table[["bound", "note"]].fillna("")
    return table, str(roof.get("fusion_note") or "")


def format_fusion(fusion: pd.DataFrame | None, note: str = "", top: int = 10) -> list[str]:
    """Lines of the fusion table (roofline, modules and profile print it): per candidate, its time, the bytes
    its kernels move, the bytes one fused kernel must move, and the fusion headroom."""
    lines = ["Fusion headroom per candidate (one fused kernel per module call moves only the module's external "
             "bytes; per step):"]
    if note:
        lines.append(f"  {note}")
    if fusion is None or fusion.empty:
        return lines if fusion is None else [*lines, "  no fusion candidates (no module is mostly replaceable work)"]
    lines.append(f"  {'scope':<7}{'module / class':<40}{'ms':>8}{'kernel MB':>11}{'fused MB':>10}{'roof ms':>9}"
                 f"{'fused ms':>10}{'headroom':>10}{'speedup':>9}")
    for c in fusion.head(top).to_dict(orient="records"):
        name = c["module"] or "(root)"
        name = name if len(name) <= 39 else "…" + name[-38:]
        lines.append(f"  {c['scope']:<7}{name:<40}{c['time_per_step_us'] / 1e3:>8.3f}"
                     f"{c['kernel_bytes_per_step'] / 1e6:>11.1f}{_fmt(c['fused_bytes_per_step'] / 1e6, '.1f'):>10}"
                     f"{c['kernel_roof_us'] / 1e3:>9.3f}{_fmt(c['fused_roof_us'] / 1e3, '.3f'):>10}"
                     f"{_fmt(c['fusion_headroom'], '.0%'):>10}{_fmt(c['fusion_speedup'], '.1f', 'x'):>9}"
                     + (f"  ({c['note']})" if c["note"] and not note else ""))
    return lines
