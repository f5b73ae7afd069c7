"""Stages 3-4: classify a trace's work rows and aggregate them into a Breakdown."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from addressable.classify.modules import ModuleBreakdown, attribute, module_breakdown
from addressable.classify.taxonomy import UNCLASSIFIED, Taxonomy, load_taxonomy
from addressable.classify.timeline import COMMUNICATION, TimelineResult, timeline_accounting
from addressable.core.errors import AddressableError
from addressable.core.jsonutil import records
from addressable.core.schema import KEY, VERSIONS
from addressable.trace.reader import Trace, count_matches, load_trace, trace_format, unread_categories

BASIS_GPU = "gpu_kernel_time"
BASIS_CPU = "cpu_op_time"


def work_rows(trace: Trace, basis: str | None = None) -> tuple[pd.DataFrame, str]:
    """The rows that are work: GPU kernels/memcpy/memset, or CPU ops' self time when there are none
    (or when `basis` is BASIS_CPU)."""
    ev = trace.events
    if trace.has_gpu_work and basis != BASIS_CPU:
        return recorded_gpu_work(ev), BASIS_GPU
    return cpu_self_time(ev), BASIS_CPU


def gpu_launches(path: str | Path) -> int:
    """Kernel-launch runtime calls (trace_format's launch_names) in a trace file: a byte scan, no parsing."""
    return count_matches(path, trace_format()["launch_names"].encode())


def recorded_gpu_work(events: pd.DataFrame) -> pd.DataFrame:
    """GPU rows, less work launched before recording began.

    With a profiler schedule, kernels launched in an unrecorded warm-up step can still be
    running when recording starts: they have no External id (their launch was not recorded)
    and start before the first kernel whose launching op is in the trace. They belong to no
    profiled step, so they are dropped. Traces without CPU ops keep every GPU row.
    """
    gpu = events[events["kind"] == "gpu"]
    launched = gpu["op"].notna()
    if not launched.any():
        return gpu
    spill = gpu["external_id"].isna() & (gpu["ts"] < gpu.loc[launched, "ts"].min())
    return gpu[~spill]


def cpu_self_time(events: pd.DataFrame) -> pd.DataFrame:
    """CPU ops with `dur` replaced by their self time (duration minus their direct children's).

    Self times partition each top-level op's time, so oneDNN work done inside an op without
    child ops (aten::convolution_backward, aten::native_batch_norm) is counted where it happens.
    Ops with no self time are dropped.
    """
    cpu = events[events["kind"] == "cpu_op"].sort_values(["pid", "tid", "ts", "dur"],
                                                         ascending=[True, True, True, False])
    pid, tid = (cpu[c].fillna(-1).astype("int64").to_numpy() for c in ("pid", "tid"))  # no id: a thread of its own
    thread = (pid << 32) + tid
    ts, dur = cpu["ts"].to_numpy(), cpu["dur"].to_numpy()
    end = ts + dur
    children = np.zeros(len(cpu))
    stack: list[int] = []
    for i in range(len(cpu)):  # one pass with an open-op stack per thread (ops are properly nested)
        while stack and (thread[stack[-1]] != thread[i] or end[stack[-1]] <= ts[i]):
            stack.pop()
        if stack:
            children[stack[-1]] += min(dur[i], end[stack[-1]] - ts[i])
        stack.append(i)
    out = cpu.assign(dur=np.maximum(dur - children, 0.0))
    return out[out["dur"] > 0]


def classify_events(rows: pd.DataFrame, taxonomy: Taxonomy, basis: str) -> pd.DataFrame:
    """Add `category` and `class` columns to work rows (each unique name classified once).

    GPU rows also get `signal` (name, launch_op or none) and `op_category`: a kernel that no
    kernel rule claims takes the category of the CPU op that launched it (launch_op_rules).
    """
    out = rows.copy()
    if basis == BASIS_GPU:
        signals = taxonomy.classify_kernels(out["name"], out.get("op"))
        for col in ("category", "op_category"):
            out[col] = signals[col].cat.remove_unused_categories().array
        out["signal"] = signals["signal"].array
    else:
        out["category"] = taxonomy.classify(out["name"].astype("string"), "cpu_op").astype("category").values
    classes = {c: taxonomy.class_of(c) for c in out["category"].cat.categories}
    out["class"] = out["category"].map(classes).astype("category")
    return out


def signal_summary(rows: pd.DataFrame, taxonomy: Taxonomy) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Time each signal classified, and the kernels whose name and launching op disagree on the class.

    Returns (signals: signal, time_us, count, share; disagreements: name, op, category, class,
    op_category, op_class, time_us, count), from rows that `classify_events` gave a `signal`.
    """
    total = float(rows["dur"].sum())
    signals = (rows.groupby("signal", observed=False)["dur"].agg(time_us="sum", count="size")
               .reset_index())
    signals["signal"] = signals["signal"].astype(str)
    signals["share"] = signals["time_us"] / total if total else 0.0
    named = rows[(rows["signal"] == "name") & (rows["op_category"] != UNCLASSIFIED)]
    op_class = named["op_category"].astype(str).map(taxonomy.class_of)
    differ = named[op_class.to_numpy() != named["class"].astype(str).to_numpy()]
    dis = (differ.groupby(["name", "op", "category", "op_category"], observed=True, sort=False)["dur"]
           .agg(time_us="sum", count="size").reset_index())
    for col in ("name", "op", "category", "op_category"):
        dis[col] = dis[col].astype(str)
    dis["class"] = dis["category"].map(taxonomy.class_of)
    dis["op_class"] = dis["op_category"].map(taxonomy.class_of)
    dis = dis.sort_values("time_us", ascending=False).reset_index(drop=True)
    return signals, dis[["name", "op", "category", "class", "op_category", "op_class", "time_us", "count"]]


def unclassified_kernels(rows: pd.DataFrame) -> pd.DataFrame:
    """Unclassified work by name and launching op: name, op, time_us, count (most time first)."""
    un = rows[rows["category"] == UNCLASSIFIED]
    op = un["op"].astype(object).fillna("") if "op" in un else pd.Series("", index=un.index)
    out = (un.assign(op=op.astype(str)).groupby(["name", "op"], observed=True, sort=False)["dur"]
           .agg(time_us="sum", count="size").reset_index())
    out["name"] = out["name"].astype(str)
    return out.sort_values("time_us", ascending=False).reset_index(drop=True)


@dataclass
class Breakdown:
    """Where the work time of one trace goes, by category and by class."""

    categories: pd.DataFrame  # category, class, time_us, share, count
    kernels: pd.DataFrame  # name, category, class, time_us, count, share  (one row per unique name)
    total_time_us: float
    basis: str
    n_steps: int | None = None
    phases: pd.DataFrame | None = None  # phase, category, class, time_us (when annotated)
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    timeline: TimelineResult | None = None  # overlap-aware accounting (docs/accounting.md)
    signals: pd.DataFrame | None = None  # signal, time_us, count, share (GPU traces)
    disagreements: pd.DataFrame | None = None  # kernels whose name and launching op disagree on the class
    unclassified: pd.DataFrame | None = None  # name, op, time_us, count of unclassified work
    suggested_rule: str = ""  # a taxonomy.yaml line that would claim the unclassified kernels
    modules: ModuleBreakdown | None = None  # work time by nn.Module (addressable/classify/modules.py)
    warnings: list[str] = field(default_factory=list)  # what the figures leave out (unread device events)

    def time_of(self, cls: str) -> float:
        """Total work time (µs) of the categories of one class."""
        return float(self.categories.loc[self.categories["class"] == cls, "time_us"].sum())

    @property
    def addressable_fraction(self) -> float:
        """Replaceable time over total work time."""
        return self.time_of("replaceable") / self.total_time_us if self.total_time_us else 0.0

    @property
    def communication_time_us(self) -> float:
        """Summed time of the communication (NCCL/RCCL) category."""
        return float(self.categories.loc[self.categories["category"] == COMMUNICATION, "time_us"].sum())

    @property
    def compute_time_us(self) -> float:
        """All work time except communication: the denominator of the compute basis."""
        return self.total_time_us - self.communication_time_us

    @property
    def addressable_fraction_compute(self) -> float:
        """Replaceable time over work time less communication (the compute basis, docs/accounting.md).

        NCCL kernels spin while they wait for the other ranks, so their time moves with the
        slowest rank; leaving them out gives a fraction that the ranks of one job agree on.
        """
        compute = self.compute_time_us
        return self.time_of("replaceable") / compute if compute > 0 else 0.0

    @property
    def library_fraction(self) -> float:
        """Library time over total work time."""
        return self.time_of("library") / self.total_time_us if self.total_time_us else 0.0

    @property
    def unclassified_fraction(self) -> float:
        """Unclassified time over total work time."""
        return self.time_of(UNCLASSIFIED) / self.total_time_us if self.total_time_us else 0.0

    def wall_times(self) -> tuple[float, float]:
        """(replaceable, all) work time (µs, all steps) on the basis of the wall-clock fraction: the exposed
        times where kernels on several streams overlap (the basis `project` reads), else the summed times."""
        t = self.timeline
        if t is not None and t.streams_overlap:
            c = t.categories
            return float(c.loc[c["class"] == "replaceable", "exposed_us"].sum()), float(t.busy_us)
        return self.time_of("replaceable"), self.total_time_us

    def share_of(self, *categories: str) -> float:
        """Combined share of some categories (e.g. share_of('gemm', 'attention'))."""
        hit = self.categories["category"].isin(categories)
        return float(self.categories.loc[hit, "share"].sum())

    def top_kernels(self, category: str | None = None, n: int = 10) -> pd.DataFrame:
        """The n kernels with the most time, of one category or of all."""
        k = self.kernels if category is None else self.kernels[self.kernels["category"] == category]
        return k.nlargest(n, "time_us").reset_index(drop=True)

    def top_unclassified(self, n: int = 10) -> pd.DataFrame:
        """The n unclassified kernels with the most time (with their launching op, when known)."""
        if self.unclassified is not None:
            return self.unclassified.head(n).reset_index(drop=True)
        return self.top_kernels(UNCLASSIFIED, n)

    def to_dict(self, top: int = 10) -> dict[str, Any]:
        """The JSON form printed by `classify --json` and stored as breakdown.json."""
        cats = self.categories[["category", "class", "time_us", "share", "count"]]
        out: dict[str, Any] = {
            KEY: VERSIONS["breakdown"],
            "source": self.source,
            "basis": self.basis,
            "addressable_fraction": self.addressable_fraction,
            "addressable_fraction_compute": self.addressable_fraction_compute,
            "library_fraction": self.library_fraction,
            "unclassified_fraction": self.unclassified_fraction,
            "total_kernel_time_us": self.total_time_us,
            "communication_time_us": self.communication_time_us,
            "n_steps": self.n_steps,
            "categories": records(cats),
            "top_unclassified": records(self.top_unclassified(top).drop(columns=["category", "class", "share"],
                                                                        errors="ignore")),
            "top_kernels": {
                c: records(self.top_kernels(c, 3)[["name", "time_us", "count"]])
                for c in self.categories["category"]
            },
        }
        if self.phases is not None and not self.phases.empty:
            out["phases"] = phase_summary(self.phases)
        if self.signals is not None:
            out["signals"] = {r["signal"]: {"time_us": r["time_us"], "share": r["share"], "count": r["count"]}
                              for r in records(self.signals)}
        if self.suggested_rule:
            out["suggested_rule"] = self.suggested_rule
        if self.disagreements is not None:
            out["n_disagreements"] = len(self.disagreements)
            out["disagreements"] = records(self.disagreements.head(top))
        if self.timeline is not None:
            out.update(self.timeline.to_dict())
        if self.modules is not None:
            out["modules"] = self.modules.to_dict(top)
        out.update(self.extra)
        return out


def wall_total(work_us: float, step_us: float) -> tuple[float, str]:
    """The wall-clock denominator of one step and its name: the step's wall time ("step"), or the summed
    work where that exceeds it ("work": CPU ops on several threads, or kernels on several streams, overlap,
    and are taken to share the wall time in proportion to their summed time). docs/accounting.md."""
    return (work_us, "work") if work_us > step_us else (step_us, "step")


def wall_fraction(replaceable_us: float, work_us: float, step_us: float) -> tuple[float, str]:
    """The addressable fraction of wall time, replaceable / max(work, step) per step, and its basis
    (wall_total). The one definition every command uses: never above 1, nor above the work fraction."""
    total, basis = wall_total(work_us, step_us)
    return (replaceable_us / total if total > 0 else 0.0), basis


def phase_summary(phases: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per phase: total time and addressable fraction."""
    out = {}
    for phase, g in phases.groupby("phase", observed=True, sort=False):
        total = float(g["time_us"].sum())
        repl = float(g.loc[g["class"] == "replaceable", "time_us"].sum())
        out[str(phase)] = {"time_us": total, "addressable_fraction": repl / total if total else 0.0}
    return out


def breakdown_from_tables(kernels: pd.DataFrame, basis: str, n_steps: int | None = None, source: str = "",
                          phases: pd.DataFrame | None = None, categories: pd.DataFrame | None = None,
                          total_time_us: float | None = None) -> Breakdown:
    """The one way to build a Breakdown from tables: per-kernel totals (name, category, class, time_us,
    count), optionally per-category totals (else summed from the kernels) and the total work time
    (else the categories' sum). Shares and sorting are done here."""
    if categories is None:
        categories = kernels.groupby(["category", "class"], sort=False)[["time_us", "count"]].sum().reset_index()
    total = float(categories["time_us"].sum()) if total_time_us is None else float(total_time_us)
    cats = categories.assign(share=categories["time_us"] / total if total else 0.0,
                             count=categories["count"].round().astype("int64"))
    cats = cats.sort_values(["class", "time_us"], ascending=[True, False], kind="stable").reset_index(drop=True)
    kern = kernels.assign(share=kernels["time_us"] / total if total else 0.0,
                          count=kernels["count"].round().astype("int64"))
    kern = kern.sort_values("time_us", ascending=False, kind="stable").reset_index(drop=True)
    return Breakdown(cats[["category", "class", "time_us", "share", "count"]],
                     kern[["name", "category", "class", "time_us", "count", "share"]],
                     total, basis, n_steps, phases, source)


def breakdown_from_classified(rows: pd.DataFrame, basis: str, taxonomy: Taxonomy,
                              n_steps: int | None = None, source: str = "",
                              annotations: pd.DataFrame | None = None,
                              when: np.ndarray | None = None) -> Breakdown:
    """Aggregate classified work rows into a Breakdown."""
    per_kernel = (rows.groupby(["name", "category"], observed=True, sort=False)["dur"]
                  .agg(time_us="sum", count="size").reset_index())
    per_kernel["name"] = per_kernel["name"].astype(str)
    per_kernel["category"] = per_kernel["category"].astype(str)
    per_kernel["class"] = per_kernel["category"].map(taxonomy.class_of)
    # sorted first, so the category sums add up in the same order as before
    per_kernel = per_kernel.sort_values("time_us", ascending=False).reset_index(drop=True)
    phases = phase_times(rows, annotations, when) if annotations is not None else None
    return breakdown_from_tables(per_kernel, basis, n_steps, source, phases=phases,
                                 total_time_us=float(rows["dur"].sum()))


def phase_times(rows: pd.DataFrame, annotations: pd.DataFrame, when: np.ndarray | None = None) -> pd.DataFrame:
    """Time per (phase, category) of the rows whose time `when` (default: their start) falls in a phase.

    Phases are the record_function ranges written by addressable's own workloads
    ("phase:forward", "phase:backward", ...); other annotations are ignored. For GPU kernels,
    `when` is the CPU time of the op that launched them, so kernels launched by autograd's
    worker thread during the main thread's "phase:backward" range count as backward.
    """
    ann = annotations[annotations["name"].astype(str).str.startswith("phase:")]
    if ann.empty or rows.empty:
        return pd.DataFrame(columns=["phase", "category", "class", "time_us"])
    ann = ann.sort_values("ts")
    starts, ends = ann["ts"].to_numpy(), (ann["ts"] + ann["dur"]).to_numpy()
    names = ann["name"].astype(str).str.removeprefix("phase:").to_numpy()
    ts = rows["ts"].to_numpy() if when is None else when
    i = np.searchsorted(starts, ts, side="right") - 1
    inside = (i >= 0) & (ts < ends[np.clip(i, 0, None)])
    tagged = rows[inside].assign(phase=names[i[inside]])
    return (tagged.groupby(["phase", "category", "class"], observed=True, sort=False)["dur"]
            .sum().rename("time_us").reset_index())


def launch_times(events: pd.DataFrame, rows: pd.DataFrame) -> np.ndarray:
    """CPU start time of the op that launched each GPU row (its own start where unknown)."""
    cpu = events[(events["kind"] == "cpu_op") & events["external_id"].notna()]
    cpu = cpu.drop_duplicates("external_id", keep="last")
    ts = pd.Series(cpu["ts"].to_numpy(), index=cpu["external_id"].astype("int64").to_numpy())
    launched = rows["external_id"].astype("Int64").map(ts).astype("float64")
    return launched.fillna(rows["ts"]).to_numpy()


def explain(trace: Trace, taxonomy: Taxonomy, pattern: str) -> pd.DataFrame:
    """Why each work row whose name matches `pattern` got its category, one row per (name, launching op).

    Columns: name, qualified, template, params, op, name_rule, op_rule, signal, category, class,
    time_us, count. Rules are written as 'FILE KEY #INDEX: 'PATTERN''.
    """
    try:
        wanted = re.compile(pattern, re.IGNORECASE)
    except re.error as e:
        raise AddressableError(f"--explain: invalid regex {pattern!r}: {e}") from None
    rows, basis = work_rows(trace)
    names = rows["name"].astype(str)
    rows = rows[names.str.contains(wanted)]
    if rows.empty:
        raise AddressableError(f"no {'kernel' if basis == BASIS_GPU else 'CPU op'} in {trace.path} matches {pattern!r}")
    classified = classify_events(rows, taxonomy, basis)
    if "signal" not in classified:
        classified = classified.assign(signal="name", op_category=UNCLASSIFIED)
    op = classified["op"].astype(object).fillna("") if "op" in classified else ""
    table = (classified.assign(op=op).groupby(["name", "op", "category", "class", "signal"], observed=True)["dur"]
             .agg(time_us="sum", count="size").reset_index().sort_values("time_us", ascending=False))
    table["name"], table["op"] = table["name"].astype(str), table["op"].astype(str)
    kind = "kernel" if basis == BASIS_GPU else "cpu_op"
    uniq = list(dict.fromkeys(table["name"]))
    name_rules = dict(zip(uniq, taxonomy.match_rules(uniq, kind), strict=True))
    ops = [o for o in dict.fromkeys(table["op"]) if o]
    op_rules = dict(zip(ops, taxonomy.match_rules(ops, "launch_op"), strict=True)) if kind == "kernel" else {}
    parsed = {n: taxonomy.parse(n) for n in uniq} if kind == "kernel" else {}
    table["qualified"] = [parsed[n].qualified if parsed else n for n in table["name"]]
    table["template"] = [parsed[n].template if parsed else "" for n in table["name"]]
    table["params"] = [parsed[n].params if parsed else "" for n in table["name"]]
    table["name_rule"] = [taxonomy.describe(name_rules[n], q) for n, q in zip(table["name"], table["qualified"],
                                                                               strict=True)]
    table["op_rule"] = [taxonomy.describe(op_rules.get(o), o) if o else "no launching op" for o in table["op"]]
    table["decision"] = [_decision(taxonomy, name_rules[n], op_rules.get(o)) for n, o in zip(table["name"], table["op"],
                                                                                            strict=True)]
    cols = ["name", "qualified", "template", "params", "op", "name_rule", "op_rule", "decision", "signal", "category",
            "class", "time_us", "count"]
    return table[cols].reset_index(drop=True)


def _decision(taxonomy: Taxonomy, name_rule: Any, op_rule: Any) -> str:
    """Which `disagreements` entry settled a kernel whose name rule and op rule name different categories ('' if none)."""
    if name_rule is None or op_rule is None or name_rule.category == op_rule.category:
        return ""
    if name_rule.launch_op_wins:
        return "the name rule defers to the launching op (launch_op_wins)"
    entry = taxonomy.disagreement(name_rule.category, op_rule.category)
    if entry is None:
        return "no disagreements entry: the name decides"
    return f"disagreements #{entry.index}: the {entry.decide} decides ({entry.why})"


def breakdown_of_trace(trace: Trace, taxonomy: Taxonomy | None = None, basis: str | None = None) -> Breakdown:
    """Classify a loaded trace and aggregate it (`basis=BASIS_CPU`: CPU-op self time even on a GPU trace).

    A trace with kernel launches but no kernel rows is a GPU run whose CUDA activity was not
    recorded: an AddressableError unless the CPU basis is asked for.
    """
    taxonomy = taxonomy or load_taxonomy()
    if basis is None and not trace.has_gpu_work and trace.path and (n := gpu_launches(trace.path)):
        raise AddressableError(f"{trace.path} holds {n:,} CUDA/HIP kernel launches but no kernel events: the "
                               "profiler's CUDA activity was not recorded (add ProfilerActivity.CUDA); "
                               "--basis cpu gives the CPU-op breakdown")
    asked, (rows, basis) = basis, work_rows(trace, basis)
    classified = classify_events(rows, taxonomy, basis)
    ev = trace.events
    when = launch_times(ev, classified) if basis == BASIS_GPU else None
    b = breakdown_from_classified(classified, basis, taxonomy, trace.n_steps or None,
                                  trace.path, ev[ev["kind"] == "cpu_annotation"], when)
    b.unclassified = unclassified_kernels(classified)
    if basis == BASIS_GPU and not b.unclassified.empty:
        b.suggested_rule = taxonomy.rule_for(list(b.unclassified["name"].head(10)))
    if basis == BASIS_GPU:  # self times of nested CPU ops are not intervals on a timeline
        b.timeline = timeline_accounting(classified)
        b.signals, b.disagreements = signal_summary(classified, taxonomy)
    b.modules = module_breakdown(attribute(ev, classified, basis == BASIS_GPU), b.total_time_us, b.n_steps, basis)
    if basis != BASIS_GPU and asked is None and trace.path:
        b.warnings += unread_device_warning(trace.path)
    return b


def unread_device_warning(path: str | Path) -> list[str]:
    """The line that says a trace on the CPU-op basis holds events of categories this tool does not read
    (perhaps an accelerator's device work); none when every category is known."""
    unread = unread_categories(path)
    if not unread:
        return []
    named = ", ".join(f"{c} ×{n:,}" for c, n in list(unread.items())[:5]) + (", ..." if len(unread) > 5 else "")
    return [f"{path}: no device events read, so CPU-op self time is shown; {sum(unread.values()):,} events are of "
            f"categories this tool does not read ({named}): if they are device work, add their category to "
            "gpu_work_categories in addressable/trace/trace_format.yaml"]


def classify_trace(path: str | Path, taxonomy: Taxonomy | str | Path | None = None,
                   classes: dict[str, str] | None = None, basis: str | None = None) -> Breakdown:
    """Load, classify and aggregate one trace file: the library form of `addressable classify`."""
    tax = taxonomy if isinstance(taxonomy, Taxonomy) else load_taxonomy(taxonomy)
    if classes:
        tax = tax.with_classes(classes)
    return breakdown_of_trace(load_trace(path), tax, basis)


def summed_kernels(breakdowns: list[Breakdown]) -> pd.DataFrame:
    """The kernels of several breakdowns (ranks, repeats), each kernel's time and count added up, in first-seen order."""
    return (pd.concat([b.kernels for b in breakdowns], ignore_index=True)
            .groupby(["name", "category", "class"], sort=False)[["time_us", "count"]].sum().reset_index())


def sum_breakdowns(breakdowns: list[Breakdown], source: str = "") -> Breakdown:
    """One Breakdown whose kernel times are those of several (e.g. every rank of a job) added up.

    Steps are the largest step count among them (ranks run the same steps side by side); no
    timeline (the ranks' devices are not one time line) and no phases.
    """
    kernels = summed_kernels(breakdowns)
    steps = [b.n_steps for b in breakdowns if b.n_steps]
    return breakdown_from_tables(kernels.sort_values("time_us", ascending=False), breakdowns[0].basis,
                                 max(steps) if steps else None, source)
