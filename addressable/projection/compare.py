"""Two runs side by side (`addressable compare A B`), and a projection made from A beside what B measured.

Each side is a run folder (written by `addressable profile`) or a Kineto trace file. Its step time is a
statistic (`median`, the run folder's own step_time_ms, or `q25`, the lower quartile that
gpu/replay_validation.py uses) of its step times: the unprofiled steps of steps.csv for a run folder; for a
trace, the times given (--step-ms-a/-b, one or more) or else its ProfilerStep spans, marked as profiled.
The spread shown is the quartiles of those steps, and the measured wall speedup A→B (step A / step B)
carries the bracket [q25(A) / q75(B), q75(A) / q25(B)].

Per step, both sides: kernel time (summed over streams, the kernel basis), GPU busy time (the union of
kernel intervals, where known), the addressable fraction on the kernel basis (replaceable / summed kernel
time) and on the wall basis (classify.breakdown.wall_fraction, the one definition), kernels (GPU ops) and
kernel launches (runtime calls in the kept trace, where one is kept). Then the deltas per category
(summed category times, ms per step and share) and per module (by qualified name, where both runs have
module scopes).

With a wins file, A alone is projected (projection.project: the replay where A's trace is kept, and
Amdahl's law always) and set beside what B measured: wall (step A / step B) and kernel (GPU busy A / B,
or summed kernel time where busy time is unknown), with error = projected / measured − 1.

Runs that cannot be compared are refused with one line: another device or GPU, another time basis (GPU
kernel time against CPU op time), or step times of another kind (unprofiled against profiled spans).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from addressable.classify.breakdown import wall_fraction
from addressable.core.errors import AddressableError
from addressable.core.jsonutil import records, to_jsonable
from addressable.projection.project import project
from addressable.runs.folder import Run, checked_times, load_run, read_steps, run_from_trace
from addressable.trace.reader import load_trace, trace_format

STEP_STATS = ("median", "q25")
SECTIONS = ("summary", "category", "module", "projection")


@dataclass(frozen=True)
class StepTimes:
    """A run's step times (ms), where they came from, and whether they are profiled steps."""

    samples: np.ndarray
    source: str  # "steps.csv", "breakdown.json", "--step-ms", "ProfilerStep spans", "trace span" or "none"
    profiled: bool = False

    @property
    def kind(self) -> str:
        """unprofiled, profiled, or none: only step times of one kind compare."""
        return "none" if not len(self.samples) else "profiled" if self.profiled else "unprofiled"

    def stat(self, how: str) -> float:
        """The step time: the median or the lower quartile of the samples (NaN without samples)."""
        return float(np.quantile(self.samples, 0.25 if how == "q25" else 0.5)) if len(self.samples) else math.nan

    def quartiles(self) -> tuple[float, float]:
        """(q25, q75) of the samples; NaN without samples."""
        if not len(self.samples):
            return math.nan, math.nan
        lo, hi = np.quantile(self.samples, [0.25, 0.75])
        return float(lo), float(hi)


@dataclass
class Side:
    """One side of a comparison: the run (its step time set to the chosen statistic) and its step times."""

    run: Run
    steps: StepTimes
    launches_per_step: float = math.nan


@dataclass
class Comparison:
    """Two runs side by side; the tables are DataFrames (to_dict and to_frame give the JSON and CSV forms)."""

    a: Side
    b: Side
    step_stat: str
    summary: pd.DataFrame  # metric, a, b, delta (b − a), ratio (a / b)
    measured: pd.DataFrame  # basis (wall, kernel), measured, measured_lo, measured_hi, how
    categories: pd.DataFrame  # category, class, a_ms, b_ms, delta_ms, a_share, b_share, delta_share, a_/b_kernels
    modules: pd.DataFrame  # module, a_class, b_class, a_ms, b_ms, delta_ms, a_share, b_share, a_/b_kernels
    projection: pd.DataFrame | None = None  # model, basis, projected (+ _lo, _hi), measured (+ _lo, _hi), error,
    # covers (the projected interval holds the measured speedup)
    warnings: list[str] = field(default_factory=list)

    def sides(self) -> dict[str, dict[str, Any]]:
        """What each side is: its path, workload, device, step source and kind, profiled steps, basis."""
        out = {}
        for key, s in (("a", self.a), ("b", self.b)):
            r = s.run
            out[key] = {"path": str(r.path), "name": r.name, "workload": r.workload, "mode": r.mode,
                        "device": r.device_name, "step_source": s.steps.source, "step_kind": s.steps.kind,
                        "step_samples": len(s.steps.samples), "n_steps": r.n_steps, "basis": r.basis}
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON form printed by `compare --json` (infinity as "inf", undefined as null)."""
        doc = {"step_stat": self.step_stat, "sides": self.sides(), "summary": records(self.summary),
               "measured": records(self.measured), "categories": records(self.categories),
               "modules": records(self.modules),
               "projection": None if self.projection is None else records(self.projection),
               "warnings": self.warnings}
        return to_jsonable(doc, nan_as=None, inf_as="inf")

    def to_frame(self) -> pd.DataFrame:
        """Every table in one long frame, with a `section` column (summary, category, module, projection)."""
        parts = [self.summary.assign(section="summary"), self.categories.assign(section="category"),
                 self.modules.assign(section="module")]
        if self.projection is not None:
            parts.append(self.projection.assign(section="projection"))
        frame = pd.concat([p for p in parts if not p.empty], ignore_index=True)
        return frame[["section", *[c for c in frame.columns if c != "section"]]]


def compare(a: str | Path, b: str | Path, *, step_ms_a: Sequence[float] = (), step_ms_b: Sequence[float] = (),
            step_stat: str = "median", speedups: str | Path | pd.DataFrame | None = None, model: str = "replay",
            combine: str = "best", include_unverified: bool = False) -> Comparison:
    """Compare run A with run B (run folders or trace files); with `speedups`, project A and set it beside B."""
    if step_stat not in STEP_STATS:
        raise AddressableError(f"step statistic must be one of {', '.join(STEP_STATS)}, not '{step_stat}'")
    sa, sb = side(a, step_ms_a, step_stat, "A"), side(b, step_ms_b, step_stat, "B")
    check_comparable(sa, sb)
    warnings = [f"run {k}: no step count recorded, so its times are read as one step"
                for k, s in (("A", sa), ("B", sb)) if s.run.n_steps is None]
    measured = measured_speedups(sa, sb, step_stat)
    modules, note = module_deltas(sa.run, sb.run)
    warnings += [note] if note else []
    comp = Comparison(sa, sb, step_stat, summary_table(sa, sb, step_stat), measured,
                      category_deltas(sa.run, sb.run), modules, warnings=warnings)
    if speedups is not None:
        comp.projection, more = projection_beside(sa.run, measured, speedups, model, combine, include_unverified)
        comp.warnings += more
    return comp


# ---------------------------------------------------------------------------------------------
# The two sides

def side(path: str | Path, given: Sequence[float], how: str, key: str) -> Side:
    """One side: the run read from a folder or a trace, its step times, its step time set to the statistic."""
    path = Path(path)
    if not path.exists():
        raise AddressableError(f"run {key}: no such run folder or trace file: {path}")
    given = [float(v) for v in given]
    if any(not (math.isfinite(v) and v > 0) for v in given):
        raise AddressableError(f"--step-ms-{key.lower()} must be positive numbers of milliseconds, got {given}")
    if path.is_dir() or path.name == "breakdown.json":
        if given:
            raise AddressableError(f"run {key} is a run folder, whose steps.csv holds its step times; "
                                   f"--step-ms-{key.lower()} is for a trace file")
        run = load_run(path)
        steps = folder_steps(run)
    else:
        run = run_from_trace(path)
        steps = StepTimes(np.array(given), "--step-ms") if given else trace_steps(run)
    run.check()
    step = steps.stat(how)
    info = {**run.info, "step_time_ms": None if math.isnan(step) else step}
    basis = "--step-ms" if given else run.wall_basis
    run = replace(run, info=info, wall_basis=basis)
    return Side(run, steps, launches_per_step(run))


def folder_steps(run: Run) -> StepTimes:
    """A run folder's unprofiled step times (steps.csv), else its breakdown.json step time, else none."""
    steps = read_steps(run.path)
    if steps is not None and (~steps["profiled"]).any():
        return StepTimes(steps.loc[~steps["profiled"], "time_ms"].to_numpy(float), "steps.csv")
    ms = run.step_time_ms
    return StepTimes(np.array([ms]), "breakdown.json") if ms else StepTimes(np.zeros(0), "none")


def trace_steps(run: Run) -> StepTimes:
    """A trace's ProfilerStep spans (ms), marked as profiled; without steps, the span run_from_trace took."""
    assert run.trace is not None  # run_from_trace keeps the trace
    ev = run.trace.events
    spans = ev.loc[(ev["kind"] == "step").to_numpy(), "dur"].to_numpy(float) / 1e3
    if len(spans):
        return StepTimes(spans, "ProfilerStep spans", profiled=True)
    return StepTimes(np.array([run.step_time_ms]), "trace span", profiled=True)


def launches_per_step(run: Run) -> float:
    """Kernel-launch runtime calls per profiled step in the run's kept trace(s) (summed over ranks); NaN
    without a trace."""
    if not run.traces:
        return math.nan
    launch = re.compile(trace_format()["launch_names"].strip('"'))
    total, steps = 0.0, 0
    for t in run.traces:
        trace = t if not isinstance(t, Path) else load_trace(t, runtime=True)
        ev = trace.events
        runtime = ev.loc[(ev["kind"] == "runtime").to_numpy(), "name"].astype(str)
        total += float(runtime.str.fullmatch(launch).sum())
        steps = steps or max(int((ev["kind"] == "step").sum()), 1)
    return total / steps


def check_comparable(a: Side, b: Side) -> None:
    """One line when the two runs cannot be compared: device, time basis or kind of step time."""
    da, db = a.run.device_name, b.run.device_name
    if da and db and da != db:
        raise AddressableError(f"run A ran on {da}, run B on {db}: compare runs of one device")
    ba, bb = (str(s.run.breakdown.basis if s.run.breakdown is not None else s.run.info.get("basis") or "")
              for s in (a, b))
    if ba and bb and ba != bb:
        raise AddressableError(f"run A's times are {ba}, run B's {bb}: not comparable")
    ka, kb = a.steps.kind, b.steps.kind
    if ka != kb:
        key = "A" if ka == "none" or (ka == "profiled" and kb != "none") else "B"
        hint = (f"run {key} has no step time" if (ka if key == "A" else kb) == "none"
                else f"give run {key}'s unprofiled step times with --step-ms-{key.lower()}")
        raise AddressableError(f"run A's step times are {ka}, run B's {kb}: not comparable ({hint})")


# ---------------------------------------------------------------------------------------------
# The tables

def _per_step(run: Run) -> float:
    return run.n_steps or 1.0


def _summed(run: Run) -> pd.DataFrame:
    """The run's summed category times (categories.csv), checked: category, class, time_us, count."""
    cats = checked_times(run.categories, ("category", "time_us"), f"{run.path}: categories")
    count = pd.to_numeric(cats["count"], errors="coerce") if "count" in cats else pd.Series(math.nan, cats.index)
    return cats.assign(count=count.astype(float))[["category", "class", "time_us", "count"]]


def _totals(s: Side, how: str) -> dict[str, float]:
    """One side's figures per step (the summary's rows)."""
    r, n = s.run, _per_step(s.run)
    cats = _summed(r)
    total = float(cats["time_us"].sum())
    repl = float(cats.loc[cats["class"] == "replaceable", "time_us"].sum())
    q25, q75 = s.steps.quartiles()
    step = s.steps.stat(how)
    on_basis = r.times / n  # the wall fraction is over the run's basis (exposed where streams overlap)
    wall_repl = float(on_basis[[r.class_of(str(c)) == "replaceable" for c in on_basis.index]].sum())
    wall = wall_fraction(wall_repl, float(on_basis.sum()), step * 1e3)[0] if not math.isnan(step) else math.nan
    kernels = pd.to_numeric(r.kernels["count"], errors="coerce").sum() if "count" in r.kernels else math.nan
    return {"step_ms": step, "step_ms_q25": q25, "step_ms_q75": q75, "step_samples": float(len(s.steps.samples)),
            "kernel_ms_per_step": total / n / 1e3, "busy_ms_per_step": _busy_us(r) / n / 1e3,
            "addressable_fraction_kernel": repl / total if total > 0 else math.nan,
            "addressable_fraction_wall": wall, "kernels_per_step": float(kernels) / n,
            "launches_per_step": s.launches_per_step}


def _busy_us(run: Run) -> float:
    """GPU busy time (the union of kernel intervals) over the profiled steps; NaN where unknown."""
    if run.breakdown is not None:
        t = run.breakdown.timeline
        return float(t.busy_us) if t is not None else math.nan
    v = run.info.get("busy_time_us")
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else math.nan


def summary_table(a: Side, b: Side, how: str) -> pd.DataFrame:
    """metric, a, b, delta (b − a), ratio (a / b: a speedup for times)."""
    ta, tb = _totals(a, how), _totals(b, how)
    t = pd.DataFrame({"metric": list(ta), "a": list(ta.values()), "b": [tb[k] for k in ta]})
    t["delta"] = t["b"] - t["a"]
    with np.errstate(divide="ignore", invalid="ignore"):
        t["ratio"] = t["a"] / t["b"]
    return t


def _ratio(x: float, y: float) -> float:
    return x / y if y > 0 else math.nan


def measured_speedups(a: Side, b: Side, how: str) -> pd.DataFrame:
    """What B measured against A: wall (step A / step B, with the quartile bracket) and kernel (GPU busy
    A / B, or summed kernel time where busy time is unknown)."""
    (qa25, qa75), (qb25, qb75) = a.steps.quartiles(), b.steps.quartiles()
    wall = _ratio(a.steps.stat(how), b.steps.stat(how))
    busy = [_busy_us(s.run) / _per_step(s.run) for s in (a, b)]
    how_kernel = "GPU busy time per step"
    if not all(v > 0 for v in busy):
        busy = [float(_summed(s.run)["time_us"].sum()) / _per_step(s.run) for s in (a, b)]
        how_kernel = "summed kernel time per step"
    kernel = _ratio(busy[0], busy[1])
    return pd.DataFrame({"basis": ["wall", "kernel"], "measured": [wall, kernel],
                         "measured_lo": [_ratio(qa25, qb75), kernel], "measured_hi": [_ratio(qa75, qb25), kernel],
                         "how": [f"{how} step time A / B ({a.steps.source})", how_kernel + " A / B"]})


def category_deltas(a: Run, b: Run) -> pd.DataFrame:
    """Per category (summed times): ms per step and share of each side, and B − A; largest change first."""
    ca, cb = (_summed(r).groupby(["category", "class"], sort=False)[["time_us", "count"]].sum() for r in (a, b))
    t = ca.add_suffix("_a").join(cb.add_suffix("_b"), how="outer").fillna(0.0).reset_index()
    out = pd.DataFrame({"category": t["category"], "class": t["class"]})
    for k, r in (("a", a), ("b", b)):
        out[f"{k}_ms"] = t[f"time_us_{k}"] / _per_step(r) / 1e3
        total = t[f"time_us_{k}"].sum()
        out[f"{k}_share"] = t[f"time_us_{k}"] / total if total > 0 else 0.0
        out[f"{k}_kernels"] = t[f"count_{k}"] / _per_step(r)
    out["delta_ms"] = out["b_ms"] - out["a_ms"]
    out["delta_share"] = out["b_share"] - out["a_share"]
    out = out.iloc[np.argsort(-out["delta_ms"].abs().to_numpy(), kind="stable")].reset_index(drop=True)
    return out[["category", "class", "a_ms", "b_ms", "delta_ms", "a_share", "b_share", "delta_share",
                "a_kernels", "b_kernels"]]


MODULE_COLUMNS = ["module", "a_class", "b_class", "a_ms", "b_ms", "delta_ms", "a_share", "b_share",
                  "a_kernels", "b_kernels"]


def module_deltas(a: Run, b: Run) -> tuple[pd.DataFrame, str]:
    """Per module (qualified name; a swapped module keeps its name, its class may change): ms per step,
    share and kernels per step of each side, largest change first; and a note where a side has no scopes."""
    mods = [r.modules for r in (a, b)]
    missing = [k for k, m in zip("AB", mods, strict=True) if m is None or not m.has_scopes]
    if missing:
        note = ("" if len(missing) == 2 else f"run {missing[0]} has no module scopes: no per-module deltas")
        return pd.DataFrame(columns=MODULE_COLUMNS), note
    parts = []
    for k, m in zip("ab", mods, strict=True):
        assert m is not None  # checked above
        t = m.by("name")
        n = max(m.n_steps, 1)
        parts.append(pd.DataFrame({f"{k}_class": t["class"].to_numpy(), f"{k}_ms": (t["time_us"] / n / 1e3).to_numpy(),
                                   f"{k}_share": t["share"].to_numpy(), f"{k}_kernels": t["kernels"].to_numpy()},
                                  index=t["module"].to_numpy()))
    t = parts[0].join(parts[1], how="outer")
    t = t.fillna({c: 0.0 for c in t.columns if not c.endswith("_class")}).fillna("")
    t["delta_ms"] = t["b_ms"] - t["a_ms"]
    t = t.rename_axis("module").reset_index()
    t = t.iloc[np.argsort(-t["delta_ms"].abs().to_numpy(), kind="stable")].reset_index(drop=True)
    return t[MODULE_COLUMNS], ""


def projection_beside(a: Run, measured: pd.DataFrame, speedups: str | Path | pd.DataFrame, model: str,
                      combine: str, include_unverified: bool) -> tuple[pd.DataFrame, list[str]]:
    """A projected from the wins (each model that ran) beside what B measured, with the error."""
    p = project([a], speedups, model=model, combine=combine, include_unverified=include_unverified)
    if not p.wins["used"].any():
        why = p.unmatched["reason"].iloc[0] if not p.unmatched.empty else "every win is unverified"
        raise AddressableError(f"{speedups if not isinstance(speedups, pd.DataFrame) else 'the wins'}: "
                               f"no win applies to run A ({why})")
    row = p.runs.iloc[0]
    got = measured.set_index("basis")
    models = ["replay", "amdahl"] if row["model"] == "replay" else ["amdahl"]
    rows = []
    for m in models:
        for basis in ("wall", "kernel"):
            v = row[f"{m}_speedup_{basis}"]
            meas = got.loc[basis]
            rows.append({"model": m, "basis": basis, "projected": v, "projected_lo": row[f"{m}_speedup_{basis}_lo"],
                         "projected_hi": row[f"{m}_speedup_{basis}_hi"], "measured": meas["measured"],
                         "measured_lo": meas["measured_lo"], "measured_hi": meas["measured_hi"],
                         "error": v / meas["measured"] - 1 if meas["measured"] > 0 else math.nan,
                         "covers": bool(row[f"{m}_speedup_{basis}_lo"] <= meas["measured"]
                                        <= row[f"{m}_speedup_{basis}_hi"])})
    return pd.DataFrame(rows), [w.replace("--step-ms MS", "--step-ms-a MS") for w in p.warnings]


# ---------------------------------------------------------------------------------------------
# Text

def _f(v: Any, spec: str) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else "inf" if v == math.inf else format(v, spec)


_SUMMARY = [("step time (ms)", "step_ms", ".3f"), ("  q25 (ms)", "step_ms_q25", ".3f"),
            ("  q75 (ms)", "step_ms_q75", ".3f"), ("  steps", "step_samples", ".0f"),
            ("kernel time / step (ms)", "kernel_ms_per_step", ".3f"), ("GPU busy / step (ms)", "busy_ms_per_step", ".3f"),
            ("addressable (kernel)", "addressable_fraction_kernel", ".1%"),
            ("addressable (wall)", "addressable_fraction_wall", ".1%"), ("kernels / step", "kernels_per_step", ".1f"),
            ("launches / step", "launches_per_step", ".1f")]


def format_comparison(c: Comparison, top: int = 10) -> str:
    """The comparison as readable tables: the two runs, what B measured, the category and module deltas
    (the `top` largest changes) and the projection beside B."""
    s = c.sides()
    lines = [f"A: {s['a']['name']} ({s['a']['step_source']}, {s['a']['step_kind']})",
             f"B: {s['b']['name']} ({s['b']['step_source']}, {s['b']['step_kind']})", "",
             f"{'':<26}{'A':>12}{'B':>12}{'B - A':>12}{'A / B':>9}"]
    t = c.summary.set_index("metric")
    for label, key, spec in _SUMMARY:
        r = t.loc[key]
        pct = spec.endswith("%")
        delta = _f(r["delta"] * 100, "+.1f") + " pp" if pct else _f(r["delta"], "+" + spec)
        ratio = "" if pct or key == "step_samples" else _f(r["ratio"], ".3f")
        lines.append(f"{label:<26}{_f(r['a'], spec):>12}{_f(r['b'], spec):>12}{delta:>12}{ratio:>9}")
    lines += ["", "Measured speedup A→B (the step bracket: q25(A)/q75(B) to q75(A)/q25(B)):"]
    for r in c.measured.itertuples():
        lines.append(f"  {r.basis:<7}{_f(r.measured, '.3f')}x [{_f(r.measured_lo, '.3f')}-{_f(r.measured_hi, '.3f')}]"
                     f"  {r.how}")
    lines += _delta_lines("Per category (summed kernel time)", c.categories, "category", "class", top)
    lines += _delta_lines("Per module", c.modules, "module", "b_class", top)
    if c.projection is not None:
        lines += ["", "Projected from A (the wins) beside what B measured:",
                  f"  {'model':<8}{'basis':<8}{'projected':<26}{'measured':<26}{'error':>8}"]
        for r in c.projection.itertuples():
            proj = f"{_f(r.projected, '.3f')}x [{_f(r.projected_lo, '.3f')}-{_f(r.projected_hi, '.3f')}]"
            meas = f"{_f(r.measured, '.3f')}x [{_f(r.measured_lo, '.3f')}-{_f(r.measured_hi, '.3f')}]"
            lines.append(f"  {r.model:<8}{r.basis:<8}{proj:<26}{meas:<26}{_f(r.error, '+.1%'):>8}  {'yes' if r.covers else 'no'}")
    return "\n".join(lines)


def _delta_lines(title: str, t: pd.DataFrame, key: str, cls: str, top: int) -> list[str]:
    if t.empty:
        return []
    w = min(max(len(str(k)) for k in t[key].head(top)) + 2, 50)
    lines = ["", f"{title}: the {min(top, len(t))} largest changes of {len(t)}, ms per step and share",
             f"  {key:<{w}}{'class':<14}{'A ms':>10}{'B ms':>10}{'B - A':>10}{'A share':>9}{'B share':>9}"
             f"{'A kern.':>9}{'B kern.':>9}"]
    for r in t.head(top).to_dict(orient="records"):
        lines.append(f"  {str(r[key])[:w - 2]:<{w}}{str(r[cls])[:13]:<14}{_f(r['a_ms'], '.3f'):>10}"
                     f"{_f(r['b_ms'], '.3f'):>10}{_f(r['delta_ms'], '+.3f'):>10}{_f(r['a_share'], '.1%'):>9}"
                     f"{_f(r['b_share'], '.1%'):>9}{_f(r['a_kernels'], '.1f'):>9}{_f(r['b_kernels'], '.1f'):>9}")
    return lines
