"""What end-to-end speedup do measured kernel speedups buy? (Amdahl over a run's breakdown, or a replay)

For one run, a *group* is the set of kernels one measured win replaces; with s_i the share of step
time the group takes and k_i its measured speedup (groups without a win keep k = 1):

    speedup = 1 / ((1 − Σ s_i) + Σ s_i / k_i)

computed on two bases: kernel time (s_i = group time / total kernel time) and unprofiled wall-clock
time (s_i = group time per step / max(work per step, step_time_ms): classify.breakdown.wall_total,
docs/accounting.md "Wall clock"). The ceiling makes every replaceable kernel infinitely fast:
1 / (1 − addressable_fraction) (kernel) and 1 / (1 − addressable_fraction_wall).

Targets (addressable.projection.wins) resolve to groups. Grouping rule: module targets take their kernels first (in wins.csv row order, each kernel row once),
then regex targets take what is left of each kernel, then categories what is left of their category.
Regex rows are applied in wins.csv row order and a kernel goes to the first regex row that matches
it; rows with the same regex are one group. A category group is its category's time minus the
kernels module and regex groups took.
Times come from categories.csv; a module or regex group's time in a category is the category time
scaled by the fraction of that category's kernel time its kernels take (so it also applies to the
per-repeat and exposed category times, which have no per-kernel detail).

Several wins on one group: `best` (default) uses the largest speedup (with that row's spread),
`median` the median of the speedups (and of the lo and hi bounds). Rows with verified = false are
left out unless include_unverified; a missing or empty `verified` counts as true.

Uncertainty: each projection is an interval [lo, hi]: lo is the smallest projection over the run's
repeats (and the all-steps breakdown) with every k at its speedup_lo, hi the largest with every k at
its speedup_hi (speedup_lo/hi default to speedup). The interval always holds the point estimate.

Replay (model "replay", the default when the run has its trace: trace.json.gz in the run folder, or
rank*/trace.json.gz for a multi-GPU run, or a trace file given as the run): each group becomes a
what-if on the dependency graph replay.py recovers from the trace (CPU runtime calls, GPU streams,
launches, synchronizations, cross-stream waits), and the projected step is the replayed span, so
launch-bound steps, removed launches (`kernels_after`) and overlapping streams are seen. The speedup is
the ratio of replayed spans of the profiled steps; it is applied to the unprofiled step time
(step_time_ms). Where that time was measured (a run folder, or --step-ms), the graph's CPU time is
first scaled (`cpu_scale`) until the unmodified replay takes the unprofiled step time, which takes the
profiler's own CPU overhead out; a trace without it is replayed as profiled (wall basis "profiled step"). A trace that cannot be replayed (no CPU runtime events; CUDA-graph launches) falls
back to Amdahl and says why. `replay_residual` is (replayed span of the unmodified graph − profiled
span) / profiled span. A group's `kernels_after` (wins.csv) replaces each of its calls (a run of
consecutive group kernels on one stream) by that many kernels. module: groups are placed on the graph
through each kernel's launching CPU op and its module scope (modules.attribute).

Overlap: when breakdown.json has `exposed_category_time_us` and `streams_overlap: true`, shares use
the exposed (non-overlapped) category times and the run's basis is "exposed"; otherwise "summed".
Repeats use `exposed_category_time_per_step_us` when present, else their summed category times
scaled by the run's exposed/summed ratio per category.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from addressable.classify.breakdown import wall_total
from addressable.classify.modules import MODULE_PREFIX, NO_SCOPES_HINT, attribute, scope_ranges
from addressable.classify.taxonomy import UNCLASSIFIED, default_taxonomy
from addressable.core.amdahl import amdahl
from addressable.core.errors import AddressableError
from addressable.core.jsonutil import to_jsonable
from addressable.core.names import distinct
from addressable.projection import intervals
from addressable.projection import replay as replay_model
from addressable.projection.wins import (
    Resolver,
    Target,
    load_module_problems,
    load_problem_map,
    load_wins,
    parse_wins,
)
from addressable.runs.folder import Run, load_run, run_from_trace, run_label_parts
from addressable.trace.kernel_names import fit_distinct
from addressable.trace.reader import Trace

COMBINE = ("best", "median")
MODELS = ("replay", "amdahl")
NO_TRACE = "no trace kept with the run (trace.json.gz) to replay"


def _labels(runs: list[Run]) -> list[str]:
    """Unique labels with workload, mode, batch, dtype, device (and compile, strategy, layers) for run
    folders; else the run names."""
    if not all(r.is_folder for r in runs):
        return [r.name for r in runs]
    return [" ".join(p for p in pair if p) for pair in run_label_parts(runs, full=True)]


# ---------------------------------------------------------------------------------------------
# Projection

@dataclass
class Group:
    """One group of kernels and the speedup the wins on it give (after combining)."""

    target: Target
    rows: list[int]
    targets: list[str]
    k: float
    k_lo: float
    k_hi: float
    kernels_after: float = math.nan  # kernels per call after the replacement (NaN: unchanged)
    cpu_us_after: float = math.nan  # the replacement's CPU time per forward call, profiler-free (NaN: not given)
    backward_cpu_us_after: float = math.nan  # its backward's CPU time per call, profiler-free (NaN: not given)
    cpu_ratio_after: float = math.nan  # or its CPU per forward call over the module's (scopes.paired_cpu)
    backward_cpu_ratio_after: float = math.nan  # and its backward's over the module's backward
    output_dtype: str = ""  # the dtype the replacement returns ("": the module's)


@dataclass
class Projection:
    """Projected end-to-end speedups of each run, and what each win contributed."""

    runs: pd.DataFrame  # run, workload, basis, speedup_/ceiling_ {kernel,wall} (+ _lo, _hi), ...
    contributions: pd.DataFrame  # run, target, group, class, share, share_wall, k, ..., gain_kernel, gain_wall
    wins: pd.DataFrame  # the validated wins rows, with group, used and reason
    unmatched: pd.DataFrame  # wins rows that matched nothing in any run: row, target, speedup, reason
    combine: str = "best"
    include_unverified: bool = False
    warnings: list[str] = field(default_factory=list)

    def left_out_unverified(self) -> pd.DataFrame:
        """The wins rows with verified = false that were left out (all of them without include_unverified)."""
        return self.wins[~self.wins["verified"] & (self.wins["group"].isna() | (not self.include_unverified))]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form printed by `project --json` (infinity as the string "inf", undefined as null)."""
        runs = []
        for r in self.runs.to_dict(orient="records"):
            item: dict[str, Any] = {k: r[k] for k in ("run", "label", "workload", "basis", "addressable_fraction",
                                                      "addressable_fraction_wall", "n_repeats")}
            item.update({k: r[k] for k in ("model", "model_reason", "replay_residual", "wall_basis",
                                           "step_time_ms", "profiled_step_ms", "replay_steps", "cpu_scale",
                                           "cpu_scale_basis")})
            for prefix in ("", "amdahl_", "replay_"):
                for m in ("speedup_kernel", "speedup_wall", "ceiling_kernel", "ceiling_wall"):
                    v = r[prefix + m]
                    item[prefix + m] = v
                    item[f"{prefix}{m}_interval"] = None if _nan(v) else [r[f"{prefix}{m}_lo"], r[f"{prefix}{m}_hi"]]
            item.update({k: r[k] for k in ("replay_regime", "replay_model_error", "replay_step_noise",
                                           "replay_coverage", "replay_cpu_model") if k in r})
            if r["replay_ranks"]:
                item["replay_ranks"] = r["replay_ranks"]
            item["ceiling_kernel_roofline"] = r["ceiling_kernel_roofline"]
            c = self.contributions[self.contributions["run"] == r["run"]].drop(columns="run")
            item["contributions"] = c.to_dict(orient="records")
            runs.append(item)
        left_out = self.left_out_unverified()
        return to_jsonable({
            "combine": self.combine,
            "include_unverified": self.include_unverified,
            "runs": runs,
            "unmatched": self.unmatched.to_dict(orient="records"),
            "left_out_unverified": left_out[["row", "target", "speedup"]].to_dict(orient="records"),
            "warnings": self.warnings,
        }, nan_as=None, inf_as="inf")


def _nan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def project(runs: Sequence[Run | str | Path], wins: pd.DataFrame | str | Path, *, combine: str = "best",
            include_unverified: bool = False, problem_map: dict[str, str] | None = None,
            model: str = "replay") -> Projection:
    """Project end-to-end speedups of `runs` (Run objects, run folders or trace files) from measured `wins`.

    model "replay" replays each run's trace where it has one (else Amdahl, with the reason);
    "amdahl" uses Amdahl's law over the breakdown only.
    """
    if combine not in COMBINE:
        raise AddressableError(f"combine must be one of {', '.join(COMBINE)}, not '{combine}'")
    if model not in MODELS:
        raise AddressableError(f"model must be one of {', '.join(MODELS)}, not '{model}'")
    loaded = [r if isinstance(r, Run) else run_from_trace(r)
              if Path(r).is_file() and Path(r).name != "breakdown.json" else load_run(r) for r in runs]
    for r in loaded:
        r.check()
    if not loaded:
        raise AddressableError("no runs to project")
    table = load_wins(wins) if isinstance(wins, str | Path) else parse_wins(wins)
    messages = list(table.attrs.get("warnings", []))
    categories = set(default_taxonomy().classes) | {UNCLASSIFIED} | {c for r in loaded for c in r.times.index}
    resolver = Resolver(categories, load_problem_map() if problem_map is None else problem_map,
                        load_module_problems())

    table = table.copy()
    targets: list[Target | None] = []
    reasons = []
    for row, target in zip(table["row"], table["target"], strict=True):
        t, why = resolver.resolve(target, f"wins row {row}")
        targets.append(t)
        reasons.append(why)
    table["group"] = [t.group if t else None for t in targets]
    table["used"] = [t is not None and (v or include_unverified) for t, v in zip(targets, table["verified"], strict=True)]
    table["reason"] = [why or ("" if t is None or v or include_unverified else "unverified")
                       for t, why, v in zip(targets, reasons, table["verified"], strict=True)]
    groups = _combine(table, targets, combine)

    run_rows, contrib, hit = [], [], dict.fromkeys((g.target.group for g in groups), False)
    for run, label in zip(loaded, _labels(loaded), strict=True):
        weights, matched, counts = _group_weights(run, groups)
        for g, m in matched.items():
            hit[g] = hit[g] or m
        row, c = _project_run(run, groups, weights, counts)
        row.update(_replay_run(run, groups, model), step_time_ms=run.step_time_ms or math.nan, label=label)
        for kind in ("speedup", "ceiling"):  # the headline numbers follow the model used
            for b in ("kernel", "wall"):
                for sfx in ("", "_lo", "_hi"):
                    row[f"amdahl_{kind}_{b}{sfx}"] = row[f"{kind}_{b}{sfx}"]
                    if row["model"] == "replay":
                        row[f"{kind}_{b}{sfx}"] = row[f"replay_{kind}_{b}{sfx}"]
        run_rows.append(row)
        contrib += c
    scoped = any(r.modules is not None and r.modules.has_scopes for r in loaded)
    for g, m in hit.items():
        if not m:  # a win that matched nothing is not used
            sel = table["used"] & (table["group"] == g)
            table.loc[sel, "reason"] = ("matched no kernel time in any run" if scoped or not g.startswith(MODULE_PREFIX)
                                        else NO_SCOPES_HINT.replace("this trace", "any run"))
            table.loc[sel, "used"] = False
    bad = (table["reason"] != "") & (table["reason"] != "unverified")
    unmatched = table.loc[bad, ["row", "target", "speedup", "reason"]].reset_index(drop=True)
    messages += [f"wins row {r.row}: target '{r.target}' {r.reason}; listed as unmatched"
                 for r in unmatched.itertuples()]
    messages += [f"run {r.name}: its work per step exceeds its step time (work on several threads or streams "
                 "overlaps), so its wall-clock shares are over the summed work (docs/accounting.md, \"Wall clock\")"
                 for r in loaded if _work_exceeds_step(r)]
    messages += [f"run {r['run']}: projected with Amdahl's law: {r['model_reason']}" for r in run_rows
                 if model == "replay" and r["model"] == "amdahl" and r["model_reason"] != NO_TRACE]
    messages += [as_profiled_warning(r) for r in run_rows if r["model"] == "replay" and r["wall_basis"] == "profiled step"]
    messages += [f"run {r['run']}: {r['replay_warning']}" for r in run_rows if r.get("replay_warning")]
    messages += [f"run {r['run']}: {UNIDENTIFIED_WORDS}" for r in run_rows if r.get("cpu_scale_basis") == "unidentified"]
    messages += [f"run {r['run']}: {r['replay_cpu_note']}" for r in run_rows if r.get("replay_cpu_note")]
    return Projection(pd.DataFrame(run_rows), pd.DataFrame(contrib, columns=_CONTRIB_COLUMNS), table, unmatched,
                      combine, include_unverified, messages)


UNIDENTIFIED_WORDS = ("the GPU alone holds its unprofiled step and it has no host time (host_time_ms), so nothing "
                      "fixes the profiler's CPU overhead: the replay takes its CPU at the fastest, and a win that "
                      "frees the GPU may be projected too high; profile it again to record the host time, or give a "
                      "trace file's with --host-ms (docs/replay.md)")


def as_profiled_warning(row: dict[str, Any]) -> str:
    """Why a trace replayed without its unprofiled step time projects little, and how to give that time."""
    top, kernels = row["replay_ceiling_wall"], row["replay_ceiling_kernel"]
    bound = (f": with every replaceable kernel free the replayed step runs {_x(top)} faster, its kernels "
             f"{_x(kernels)}" if top < kernels * (1 - 1e-3) else "")
    return (f"run {row['run']}: replayed as profiled (cpu_scale 1: no unprofiled step time), so the profiler's own "
            f"CPU overhead stays in and the projection is bounded by the profiled CPU time{bound}; give the "
            "unprofiled step time with --step-ms MS (e.g. the lower quartile of your steps, docs/replay.md)")


def _work_exceeds_step(run: Run) -> bool:
    """Whether the run's work per step, on its basis, exceeds its step time (wall_total's "work")."""
    if not (run.step_time_ms and run.n_steps):
        return False
    return wall_total(math.fsum(run.times.to_numpy()) / run.n_steps, run.step_time_ms * 1e3)[1] == "work"


def _combine(table: pd.DataFrame, targets: list[Target | None], combine: str) -> list[Group]:
    """One Group per group key, in order of first row; k by the combine rule."""
    by_key: dict[str, list[int]] = {}
    for i, (t, used) in enumerate(zip(targets, table["used"], strict=True)):
        if t is not None and used:
            by_key.setdefault(t.group, []).append(i)
    groups = []
    for idx in by_key.values():
        rows = table.iloc[idx]
        after = rows["kernels_after"] if "kernels_after" in rows else pd.Series(math.nan, index=rows.index)
        cpu, bwd, cpu_ratio, bwd_ratio = (rows[c] if c in rows else pd.Series(math.nan, index=rows.index) for c in
                                          ("cpu_us_after", "backward_cpu_us_after", "cpu_ratio_after",
                                           "backward_cpu_ratio_after"))
        if combine == "best":
            i = int(np.argmax(rows["speedup"].to_numpy()))
            best = rows.iloc[i]
            k, lo, hi, names = best["speedup"], best["speedup_lo"], best["speedup_hi"], [best["target"]]
            n_after, cpu_after, bwd_after = after.iloc[i], cpu.iloc[i], bwd.iloc[i]
            ratios = (float(cpu_ratio.iloc[i]), float(bwd_ratio.iloc[i]))
            dtype = str(best["output_dtype"])
        else:
            k, lo, hi = (float(statistics.median(rows[c])) for c in ("speedup", "speedup_lo", "speedup_hi"))
            names = list(dict.fromkeys(rows["target"]))
            n_after = float(round(after.median())) if after.notna().any() else math.nan
            cpu_after, bwd_after = (float(x.median()) if x.notna().any() else math.nan for x in (cpu, bwd))
            ratios = (float(cpu_ratio.median()) if cpu_ratio.notna().any() else math.nan,
                      float(bwd_ratio.median()) if bwd_ratio.notna().any() else math.nan)
            dtypes = set(rows["output_dtype"])
            dtype = dtypes.pop() if len(dtypes) == 1 else ""  # rows that disagree: the module's
        target = targets[idx[0]]
        assert target is not None  # by_key holds used targets only
        groups.append(Group(target, rows["row"].tolist(), names, float(k), float(lo), float(hi),
                            float(n_after), float(cpu_after), float(bwd_after), float(ratios[0]), float(ratios[1]),
                            dtype))
    return groups


def _group_weights(run: Run, groups: list[Group]
                   ) -> tuple[pd.DataFrame, dict[str, bool], dict[str, tuple[float, float]]]:
    """groups × categories: the fraction of each category's time that belongs to each group.

    Module groups claim their kernels first (modules.csv), then regex groups claim what is left of
    each kernel (kernels.csv), then category groups take what is left of their category. Also
    returns, per module group, (kernels per step, calls per step of the matched modules).
    """
    cats = run.times.index
    weights = pd.DataFrame(0.0, index=[g.target.group for g in groups], columns=cats)
    matched: dict[str, bool] = {}
    claimed = pd.Series(0.0, index=cats)
    taken = pd.Series(dtype=float)  # (name, category) -> kernel time module groups took
    counts: dict[str, tuple[float, float]] = {}
    mods = [g for g in groups if g.target.module is not None]
    if mods:
        taken = _module_weights(run, mods, weights, claimed, matched, counts)
    regex = [(g, g.target.regex) for g in groups if g.target.regex is not None]
    if regex:
        k = run.kernel_times
        if k is None:
            raise AddressableError(f"run {run.name} has no kernels.csv, which re: targets need")
        kernel_time = k["time_us"].groupby(k["category"]).sum()
        left = k["time_us"].to_numpy() - taken.reindex(pd.MultiIndex.from_arrays(
            [k["name"], k["category"]]), fill_value=0.0).to_numpy() if len(taken) else k["time_us"].to_numpy()
        left = np.clip(left, 0.0, None)
        free = np.ones(len(k), dtype=bool)
        for g, pattern in regex:
            hit = free & np.fromiter((pattern.search(n) is not None for n in k["name"]), np.bool_, len(k))
            free &= ~hit
            by_cat = pd.Series(left[hit]).groupby(k.loc[hit, "category"].to_numpy()).sum()
            by_cat = by_cat[by_cat.index.isin(cats)]
            share = (by_cat / kernel_time.reindex(by_cat.index)).fillna(0.0)
            weights.loc[g.target.group, share.index] = share.to_numpy()
            claimed = claimed.add(share, fill_value=0.0)
            matched[g.target.group] = bool((left[hit] > 0).any())
    for g in groups:
        c = g.target.category
        if c is None:
            continue
        present = c in cats and run.times[c] > 0
        matched[g.target.group] = bool(present)
        if present:
            weights.loc[g.target.group, c] = max(0.0, 1.0 - claimed[c]) if claimed[c] else 1.0
    return weights, matched, counts


def _module_weights(run: Run, groups: list[Group], weights: pd.DataFrame, claimed: pd.Series,
                    matched: dict[str, bool], counts: dict[str, tuple[float, float]]) -> pd.Series:
    """Fill the module groups' weights (in wins order, each kernel row claimed once); updates `claimed`,
    `matched` and `counts` in place. Returns the kernel time taken per (name, category)."""
    mb = run.modules
    if mb is None or not mb.has_scopes:
        matched.update(dict.fromkeys((g.target.group for g in groups), False))
        return pd.Series(dtype=float)
    d = mb.detail
    cat_time = d["time_us"].groupby(d["category"]).sum()
    free = np.ones(len(d), dtype=bool)
    for g in groups:
        module = g.target.module
        assert module is not None  # module groups only
        hit = free & module.matches(d, mb.modules)
        free &= ~hit
        share = (d.loc[hit, "time_us"].groupby(d.loc[hit, "category"]).sum() / cat_time).dropna()
        share = share[share.index.isin(weights.columns)]
        weights.loc[g.target.group, share.index] = share.to_numpy()
        claimed.loc[share.index] += share.to_numpy()
        matched[g.target.group] = bool(d.loc[hit, "time_us"].sum() > 0)
        calls = mb.modules.loc[mb.modules["module"].isin(module.heads(mb.modules)), "calls"].sum()
        counts[g.target.group] = (float(d.loc[hit, "count"].sum()) / mb.n_steps, float(calls) / mb.n_steps)
    taken = d.loc[~free]
    return taken["time_us"].groupby([taken["name"], taken["category"]]).sum()


_REPLAY_KEYS = [f"replay_{m}_{b}{s}" for m in ("speedup", "ceiling") for b in ("kernel", "wall")
                for s in ("", "_lo", "_hi")]


def _replay_run(run: Run, groups: list[Group], model: str) -> dict[str, Any]:
    """The replay model's projection of one run (model, replay_* speedups, residual), or why not."""
    out: dict[str, Any] = dict.fromkeys(_REPLAY_KEYS, math.nan)
    out.update({"model": "amdahl", "model_reason": "", "replay_residual": math.nan, "replay_steps": 0,
                "cpu_scale": math.nan, "cpu_scale_basis": "",
                "profiled_step_ms": math.nan, "wall_basis": run.wall_basis, "replay_ranks": []})
    if model == "amdahl":
        out["model_reason"] = "--model amdahl"
        return out
    if not run.traces:
        out["model_reason"] = NO_TRACE
        return out
    tax = default_taxonomy()
    cache: dict[int, tuple[np.ndarray, pd.Series]] = {}

    def groups_of(trace: Trace, g: replay_model.Graph) -> tuple[np.ndarray, pd.Series]:
        """Each GPU op's group (index into groups, -1: none), and each op's category."""
        if id(g) not in cache:
            codes, names = distinct(g.gpu_name)  # each distinct name classified and matched once
            category = pd.Series(tax.classify(names).astype(str).to_numpy()[codes])
            owner = np.full(g.n_gpu, -1)
            mods = [(i, grp.target.module) for i, grp in enumerate(groups) if grp.target.module is not None]
            if mods:  # module groups claim first: each op's module, through its launching CPU op
                attr = attribute(trace.events, trace.events.iloc[g.gpu_row], gpu=True)
                for i, module in mods:
                    owner[(owner < 0) & module.matches(attr.rows, attr.modules)] = i
            for i, grp in enumerate(groups):  # then regex groups, in row order
                if grp.target.regex is not None:
                    hit = np.fromiter((grp.target.regex.search(n) is not None for n in names), bool, len(names))
                    owner[(owner < 0) & hit[codes]] = i
            for i, grp in enumerate(groups):
                if grp.target.category is not None:
                    owner[(owner < 0) & (category.to_numpy() == grp.target.category)] = i
            cache[id(g)] = owner, category
        return cache[id(g)]

    whatifs, cpu_model, note = _whatifs(run, groups, lambda t, g: groups_of(t, g)[0])
    out.update(replay_cpu_model=cpu_model, replay_cpu_note=note)

    def ceiling(t: Trace, g: replay_model.Graph) -> np.ndarray:
        cats = groups_of(t, g)[1]
        return cats.map(run.class_of).to_numpy() == "replaceable"

    unprofiled = run.step_time_ms if run.wall_basis != "profiled step" else None
    host = run.host_time_ms * 1e3 if unprofiled and run.host_time_ms else None
    res = replay_model.project_traces(run.traces, whatifs, ceiling, unprofiled * 1e3 if unprofiled else None, host)
    if isinstance(res, str):
        out["model_reason"] = res
        return out
    out.update({"model": "replay", "replay_residual": res.residual, "replay_steps": res.n_steps,
                "cpu_scale": res.cpu_scale, "cpu_scale_basis": res.cpu_scale_basis,
                "profiled_step_ms": res.profiled_step_ms,
                # a module's backward, unmeasured: its launches at the forward's scale, and fitted with the rest
                "replay_speedup_wall_backward_like": res.speedup_wall_hypotheses[0],
                "replay_speedup_wall_backward_rest": res.speedup_wall_hypotheses[1],
                "replay_ranks": res.ranks.to_dict(orient="records") if len(res.ranks) > 1 else []})
    for b, v in (("wall", res.speedup_wall), ("kernel", res.speedup_kernel)):
        out[f"replay_speedup_{b}"] = v
        out[f"replay_speedup_{b}_lo"] = getattr(res, f"speedup_{b}_lo")
        out[f"replay_speedup_{b}_hi"] = getattr(res, f"speedup_{b}_hi")
        top = getattr(res, f"ceiling_{b}")
        out[f"replay_ceiling_{b}"] = out[f"replay_ceiling_{b}_lo"] = out[f"replay_ceiling_{b}_hi"] = top
    if not run.step_time_ms:  # no wall basis: the profiled step is the wall clock here
        out["wall_basis"] = "profiled step"
    out.update(_model_error(run, res, unprofiled, cpu_model))
    return out


Calibration = Callable[[Trace, replay_model.Graph], replay_model.GroupCpu]
GIVEN_WORDS = "given (the module's measured CPU, the replacement's cpu_us_after)"
UNIFORM_WORDS = "uniform (one fitted cpu_scale, kept launches at the trace's typical dispatch)"


@dataclass(frozen=True)
class GivenInputs:
    """A module group's head modules, their profiler-free CPU time per step and their backward's (module_cpu.csv;
    NaN where the pass timed no backward for one of them), and the replacement's CPU per call, forward and backward
    (the win's cpu_us_after, or its cpu_ratio_after times the heads' CPU per call; NaN where not given)."""

    heads: set[str]
    forward_us: float
    backward_us: float
    after_us: float
    backward_after_us: float


def _given_inputs(run: Run, grp: Group) -> GivenInputs | str:
    """`GivenInputs` for a module group, or why the replay's CPU model `given` does not apply to it (it then runs
    `uniform`)."""
    module = grp.target.module
    if module is None:
        return "not a module: target"
    if module.direction == "backward":
        return "a @backward target (the profiler-free pass times forwards only)"
    if math.isnan(grp.cpu_us_after) and math.isnan(grp.cpu_ratio_after):
        return "no cpu_us_after or cpu_ratio_after in its wins row"
    cpu, mb = run.module_cpu, run.modules
    if cpu is None:
        return "the run has no module_cpu.csv (profile it again to get one)"
    heads = module.heads(mb.modules) if mb is not None and mb.has_scopes else set()
    missing = sorted(heads - set(cpu["module"]))
    if not heads or missing:
        return f"module_cpu.csv has no row for {missing[0] if missing else module.pattern}"
    rows = cpu[cpu["module"].isin(heads)]
    forward, backward = float(rows["cpu_us_per_step"].sum()), rows["backward_cpu_us_per_step"]
    backward_us = float(backward.sum()) if backward.notna().all() else math.nan

    def per_call(us: float, calls: pd.Series) -> float:
        n = float(calls.sum()) if calls.notna().all() else math.nan
        return us / n if n > 0 else math.nan
    after = (grp.cpu_us_after if not math.isnan(grp.cpu_us_after)
             else grp.cpu_ratio_after * per_call(forward, rows["calls_per_step"]))
    backward_after = (grp.backward_cpu_us_after if not math.isnan(grp.backward_cpu_us_after)
                      else grp.backward_cpu_ratio_after * per_call(backward_us, rows["backward_calls_per_step"]))
    if math.isnan(after):
        return "module_cpu.csv counts no calls of it to carry cpu_ratio_after onto"
    return GivenInputs(heads, forward, backward_us, after, backward_after)


def _casts_removed(run: Run, heads: set[str], output_dtype: str) -> bool | str:
    """Whether the replacement removes the casts the heads' consumers made of their output: each head module
    returned a dtype other than the one it took (module_cpu.csv's dtypes) and the replacement returns the one it
    took (the win's output_dtype); or why that cannot be told."""
    if not output_dtype or run.module_cpu is None:
        return False
    rows = run.module_cpu[run.module_cpu["module"].isin(heads)]
    took, returned = set(rows["input_dtype"]), set(rows["output_dtype"])
    if "" in took | returned:
        return "output_dtype given, but module_cpu.csv records no dtypes for it (profile it again to get them)"
    if returned == {output_dtype}:
        return False
    if took != {output_dtype}:
        return (f"output_dtype {output_dtype} is not the dtype the module took ({', '.join(sorted(took))}): "
                "its consumers' casts are left as they are")
    return True


def _consumer_casts(heads: set[str]) -> replay_model.Select:
    """The casts the heads' consumers made of their output (replay.consumer_casts over the heads' scopes)."""
    cache: dict[int, np.ndarray] = {}

    def select(trace: Trace, g: replay_model.Graph) -> np.ndarray:
        if id(g) not in cache:
            sc = scope_ranges(trace.events)
            cache[id(g)] = replay_model.consumer_casts(g, trace, sc[sc["module"].isin(heads)])
        return cache[id(g)]
    return select


def _calibration(heads: set[str], unprofiled_us: float, backward: bool = False) -> Calibration:
    """The group's forward calls (the head modules' scopes) against their profiler-free CPU time, per graph; with
    `backward`, the backward of those calls against the backward's (replay.backward_group_cpu)."""
    cache: dict[int, replay_model.GroupCpu] = {}

    def cal(trace: Trace, g: replay_model.Graph) -> replay_model.GroupCpu:
        if id(g) not in cache:
            sc = scope_ranges(trace.events)
            calls = sc[sc["module"].isin(heads)]
            cache[id(g)] = (replay_model.backward_group_cpu(g, trace, calls, unprofiled_us) if backward
                            else replay_model.group_cpu(g, trace, calls, unprofiled_us))
        return cache[id(g)]
    return cal


def _select(owner: Callable[[Trace, replay_model.Graph], np.ndarray], i: int, cal: Calibration | None = None,
            forward: bool = True) -> replay_model.Select:
    """Group i's GPU ops; with `cal`, only those its forward calls launched (or, not `forward`, the others)."""
    def select(t: Trace, g: replay_model.Graph) -> np.ndarray:
        mine = owner(t, g) == i
        if cal is None:
            return mine
        launched = cal(t, g).op_call >= 0
        return mine & (launched if forward else ~launched)
    return select


def _calls(cal: Calibration) -> Callable[[Trace, replay_model.Graph], np.ndarray]:
    """Each GPU op's forward call (the head module call that launched it) as the what-if's call ids."""
    return lambda t, g: cal(t, g).op_call


def _whatifs(run: Run, groups: list[Group], owner: Callable[[Trace, replay_model.Graph], np.ndarray]
             ) -> tuple[list[replay_model.WhatIf], str, str]:
    """The replay's what-ifs, the CPU model they run (given, uniform or mixed) and, where a target falls
    back to uniform in a run that has one of given's inputs, one line saying which and why.

    Model given (docs/replay.md): a module group's forward calls (one per head module call) keep their
    measured profiler-free CPU scale and each takes the replacement's cpu_us_after; its other kernels
    (the backward) are a second what-if: measured like the forward where module_cpu.csv timed the heads'
    backward and the win gives backward_cpu_us_after (the rest of the CPU then spills, replay.SPILLOVER; in a CNN's run
    SPILLOVER_CONV with the consumer-cast term below, SPILLOVER_CONV_KEPT without; a CNN's measured backward scale is
    pooled toward the step's, replay.BACKWARD_POOL_CONV, and its measured forward group's toward a multiple of it,
    replay.FORWARD_POOL_CONV), else replayed under two hypotheses (its launches at the forward's measured scale, and
    the rest's). Where the win's output_dtype says the replacement returns the dtype the module took and the module
    returned another, the casts its consumers made of its output go too (`_casts_removed`, replay.consumer_casts)."""
    whatifs, given, fallback, untold = [], [], [], []
    for i, grp in enumerate(groups):
        after = None if math.isnan(grp.kernels_after) else grp.kernels_after
        inputs = _given_inputs(run, grp)
        if isinstance(inputs, str):
            whatifs.append(replay_model.WhatIf(_select(owner, i), grp.k, grp.k_lo, grp.k_hi, after))
            fallback.append(f"{grp.target.group} ({inputs})")
            continue
        cal = _calibration(inputs.heads, inputs.forward_us)
        whatifs.append(replay_model.WhatIf(_select(owner, i, cal, True), grp.k, grp.k_lo, grp.k_hi, after,
                                           _calls(cal), cal, inputs.after_us))
        if math.isnan(inputs.backward_us) or math.isnan(inputs.backward_after_us):
            whatifs.append(replay_model.WhatIf(_select(owner, i, cal, False), grp.k, grp.k_lo, grp.k_hi, after,
                                               scale_like=cal))
        else:
            bcal = _calibration(inputs.heads, inputs.backward_us, backward=True)
            whatifs.append(replay_model.WhatIf(_select(owner, i, cal, False), grp.k, grp.k_lo, grp.k_hi, after,
                                               _calls(bcal), bcal, inputs.backward_after_us, backward=True))
        casts = _casts_removed(run, inputs.heads, grp.output_dtype)
        if isinstance(casts, str):
            untold.append(f"{grp.target.group}: {casts}")
        elif casts:
            whatifs.append(replay_model.WhatIf(_consumer_casts(inputs.heads), 1.0, 1.0, 1.0, 0.0, casts=True))
        given.append(grp.target.group)
    model = "given" if given and not fallback else "mixed" if given else "uniform"
    wanted = run.module_cpu is not None or any(not (math.isnan(g.cpu_us_after) and math.isnan(g.cpu_ratio_after))
                                               for g in groups)
    note = "" if not fallback or not wanted else (
        "replay CPU model " + (f"{GIVEN_WORDS} for {', '.join(given)}; " if given else "")
        + f"{UNIFORM_WORDS} for {'; '.join(fallback)}")
    return whatifs, model, "; ".join(x for x in (note, *untold) if x)


def _model_error(run: Run, res: replay_model.ReplayProjection, unprofiled: float | None,
                 cpu_model: str = "uniform") -> dict[str, Any]:
    """The wall interval widened by the replay's validated error (of the CPU model it ran; mixed: the wider
    of given and uniform) in the run's regime and its step noise (docs/replay.md#intervals), and the
    warning for a regime whose held-out error stayed above 5%."""
    if not intervals.ERROR_MODEL.is_file():
        return {"replay_regime": res.regime}
    names = ("given", "uniform") if cpu_model == "mixed" else (cpu_model,)
    errors = max((intervals.read_error_model(model=m) for m in names), key=lambda e: e.width(res.regime))
    noise = intervals.step_noise(run.unprofiled_steps_ms()) if unprofiled else 0.0
    width = errors.width(res.regime)
    lo, hi = intervals.widen(res.speedup_wall, res.speedup_wall_lo, res.speedup_wall_hi, width, noise,
                             errors.floor)
    return {"replay_regime": res.regime, "replay_model_error": width, "replay_step_noise": noise,
            "replay_coverage": errors.coverage, "replay_speedup_wall_lo": lo, "replay_speedup_wall_hi": hi,
            "replay_warning": errors.warning(res.regime)}


_CONTRIB_COLUMNS = ["run", "target", "group", "class", "share", "share_wall", "k", "k_interval", "rows",
                    "gain_kernel", "gain_wall", "group_time_us", "kernels_per_step", "kernels_per_step_after"]


def _project_run(run: Run, groups: list[Group], weights: pd.DataFrame,
                 counts: dict[str, tuple[float, float]]) -> tuple[dict[str, Any], list[dict]]:
    """Speedups and ceilings of one run (point and interval), and one contribution per group."""
    replaceable = [c for c in run.times.index if run.class_of(c) == "replaceable"]
    ks = [[g.k for g in groups], [g.k_lo for g in groups], [g.k_hi for g in groups]]
    inf = [math.inf] * len(replaceable)

    def bases(times: pd.Series, step_ms: float | None, per_step: float | None) -> dict[str, tuple]:
        """(group times, replaceable times, total) per basis for one set of category times."""
        times = times.reindex(weights.columns, fill_value=0.0)
        gt = (weights.to_numpy() @ times.to_numpy()) if len(groups) else np.zeros(0)
        out = {"kernel": (gt, times[replaceable].to_numpy(), math.fsum(times))}
        if step_ms and per_step:  # over max(work, step): classify.breakdown.wall_total
            total, _ = wall_total(math.fsum(times.to_numpy()) / per_step, step_ms * 1e3)
            out["wall"] = (gt / per_step, times[replaceable].to_numpy() / per_step, total)
        return out

    point = bases(run.times, run.step_time_ms, run.n_steps)
    samples = [point] + [bases(t, ms, 1.0) for t, ms in run.repeats]
    row: dict[str, Any] = {"run": run.name, "workload": run.workload, "basis": run.basis,
                           "n_repeats": len(run.repeats), "ceiling_kernel_roofline": run.ceiling_kernel_roofline}
    for b in ("kernel", "wall"):
        if b not in point:
            row.update({f"{m}_{b}{s}": math.nan for m in ("speedup", "ceiling") for s in ("", "_lo", "_hi")})
            row[f"addressable_fraction{'_wall' if b == 'wall' else ''}"] = math.nan
            continue
        gt, rt, total = point[b]
        row[f"addressable_fraction{'_wall' if b == 'wall' else ''}"] = math.fsum(rt) / total if total > 0 else math.nan
        row[f"speedup_{b}"] = amdahl(gt, ks[0], total)
        row[f"ceiling_{b}"] = amdahl(rt, inf, total)
        lows = [amdahl(s[b][0], ks[1], s[b][2]) for s in samples if b in s] + [row[f"speedup_{b}"]]
        highs = [amdahl(s[b][0], ks[2], s[b][2]) for s in samples if b in s] + [row[f"speedup_{b}"]]
        ceilings = [amdahl(s[b][1], inf, s[b][2]) for s in samples if b in s]
        row[f"speedup_{b}_lo"], row[f"speedup_{b}_hi"] = _nanmin(lows), _nanmax(highs)
        row[f"ceiling_{b}_lo"], row[f"ceiling_{b}_hi"] = _nanmin(ceilings), _nanmax(ceilings)

    contrib = []
    for i, g in enumerate(groups):
        cats = [g.target.category] if g.target.category else weights.columns[weights.iloc[i].to_numpy() > 0]
        classes = {run.class_of(cat) for cat in cats}
        c: dict[str, Any] = {"run": run.name, "target": "; ".join(g.targets), "group": g.target.group,
                             "class": classes.pop() if len(classes) == 1 else "mixed" if classes else "",
                             "k": g.k, "k_interval": [g.k_lo, g.k_hi], "rows": g.rows}
        for b, key in (("kernel", "share"), ("wall", "share_wall")):
            if b in point:
                gt, _, total = point[b]
                c[key] = gt[i] / total if total > 0 else math.nan
                c[f"gain_{b}"] = amdahl([gt[i]], [g.k], total)
            else:
                c[key], c[f"gain_{b}"] = math.nan, math.nan
        c["group_time_us"] = float(point["kernel"][0][i])
        kernels, calls = counts.get(g.target.group, (math.nan, math.nan))
        c["kernels_per_step"] = kernels
        c["kernels_per_step_after"] = g.kernels_after * calls if not math.isnan(g.kernels_after) else kernels
        contrib.append(c)
    contrib.sort(key=lambda c: (-c["gain_kernel"], -_or0(c["gain_wall"])))
    return row, contrib


def _or0(v: float) -> float:
    return 0.0 if math.isnan(v) else v


def _nanmin(xs: list[float]) -> float:
    xs = [x for x in xs if not math.isnan(x)]
    return min(xs) if xs else math.nan


def _nanmax(xs: list[float]) -> float:
    xs = [x for x in xs if not math.isnan(x)]
    return max(xs) if xs else math.nan


# ---------------------------------------------------------------------------------------------
# Text

def _num(v: float, digits: int = 3) -> str:
    return "n/a" if math.isnan(v) else "inf" if math.isinf(v) else f"{v:.{digits}f}"


def _x(v: float, digits: int = 3) -> str:
    s = _num(v, digits)
    return s if s in ("n/a", "inf") else s + "x"


def _with_interval(v: float, lo: float, hi: float) -> str:
    return "n/a" if math.isnan(v) else f"{_x(v)} [{_num(lo)}-{_num(hi)}]"


def _contribution_tables(p: Projection, top: int) -> list[str]:
    """Each run's wins by gain; the target and group columns as wide as their longest entry (up to 48
    characters), longer entries cut so that no two look the same."""
    c = p.contributions
    names = {col: list(pd.unique(c[col].astype(str))) for col in ("target", "group")}
    tw, gw = (min(max([least, *map(len, names[col])]), 48) + 1 for col, least in (("target", 29), ("group", 19)))
    targets = dict(zip(names["target"], fit_distinct(names["target"], tw - 1), strict=True))
    groups = dict(zip(names["group"], fit_distinct(names["group"], gw - 1), strict=True))
    lines = []
    for run, label in zip(p.runs["run"], p.runs["label"], strict=True):
        rows = c[c["run"] == run].head(top)
        if rows.empty:
            continue
        lines += ["", f"{label}: wins by end-to-end gain (that win alone)",
                  f"  {'target':<{tw}}{'group':<{gw}}{'k':>8}{'share':>8}{'gain':>9}{'wall share':>12}{'wall gain':>11}"]
        for r in rows.itertuples():
            share_wall = "n/a" if math.isnan(r.share_wall) else f"{r.share_wall:.1%}"
            lines.append(f"  {targets[str(r.target)]:<{tw}}{groups[str(r.group)]:<{gw}}{_x(r.k, 2):>8}{r.share:>8.1%}"
                         f"{_x(r.gain_kernel):>9}{share_wall:>12}{_x(r.gain_wall):>11}")
    return lines


def format_projection(p: Projection, top: int = 5) -> str:
    """The projection as readable tables: one line per run, then each run's top wins."""
    used = int(p.wins["used"].sum())
    lines = [f"Projected end-to-end speedup: {used} win(s) used, combine={p.combine}. "
             "Intervals: spread over profile repeats and speedup_lo/hi.",
             "Ceiling: every replaceable kernel infinitely fast, the CPU unchanged; roofline: every replaceable kernel "
             "at its roofline (n/a: the run has no roofline).", ""]
    w = max([3, *p.runs["label"].str.len()]) + 2  # labels are unique and never cut
    head = (f"{'run':<{w}}{'basis':<9}{'kernel time':<26}{'wall clock':<26}{'ceiling kernel':<16}{'roofline':<10}"
            f"{'ceiling wall':<14}")
    lines.append(head)
    for r in p.runs.itertuples():
        lines.append(f"{r.label:<{w}}{r.basis:<9}"
                     f"{_with_interval(r.speedup_kernel, r.speedup_kernel_lo, r.speedup_kernel_hi):<26}"
                     f"{_with_interval(r.speedup_wall, r.speedup_wall_lo, r.speedup_wall_hi):<26}"
                     f"{_x(r.ceiling_kernel):<16}{_x(r.ceiling_kernel_roofline):<10}{_x(r.ceiling_wall):<14}")
    if p.runs["basis"].eq("exposed").any():
        lines.append("(basis exposed: shares use exposed, non-overlapped kernel time)")
    above = p.runs[p.runs["speedup_wall"] > p.runs["ceiling_wall"] * 1.001]["label"]
    if len(above):
        lines.append(f"(wall clock above the wall ceiling for {', '.join(above)}: the wins also remove CPU work "
                     "(kernels_after's launches, cpu_us_after) or speed up library kernels, which the ceiling, "
                     "replaceable kernels infinitely fast and nothing else changed, keeps)")
    lines += ["", "Models: replay = the trace's timeline replayed with the wins (CPU, launches, streams); its"
              " speedup is the ratio of replayed step spans (CPU time scaled to match the unprofiled step where it"
              " was measured), applied to the unprofiled step time.",
              f"  {'run':<{w}}{'model':<8}{'residual':>9}  {'replay kernel':<15}{'replay wall':<15}"
              f"{'amdahl kernel':<15}{'amdahl wall':<15}{'wall basis':<16}"]
    for r in p.runs.itertuples():
        res = "-" if math.isnan(r.replay_residual) else f"{r.replay_residual:+.2%}"
        lines.append(f"  {r.label:<{w}}{r.model:<8}{res:>9}  {_x(r.replay_speedup_kernel):<15}"
                     f"{_x(r.replay_speedup_wall):<15}{_x(r.amdahl_speedup_kernel):<15}{_x(r.amdahl_speedup_wall):<15}"
                     f"{r.wall_basis:<16}")
        if r.model_reason and r.model_reason != "--model amdahl":
            lines.append(f"    (Amdahl: {r.model_reason})")
    lines += _contribution_tables(p, top)
    if not p.unmatched.empty:
        lines += ["", "Unmatched wins (matched nothing in any run):"]
        lines += [f"  row {r.row}: {r.target} ({r.reason})" for r in p.unmatched.itertuples()]
    left = p.left_out_unverified()
    if not left.empty:
        lines += ["", f"{len(left)} unverified win(s) left out (use --include-unverified): "
                  + ", ".join(left["target"])]
    return "\n".join(lines)
