"""Stage 4b: which nn.Module owns each kernel (or CPU op): module breakdown and fusion candidates.

Module scopes are CPU ranges in the trace (module_scopes.yaml says which names): the
`nn.Module: <qualname> (<Class>)` record_function ranges `addressable profile` opens, the
`nn.Module: <Class>_<n>` python_function events torch.profiler writes with `with_stack=True`,
or a user's own record_function ranges of either form.

A work row (a GPU kernel, or a CPU op's self time on CPU-only traces) is attributed through the
CPU op that launched it (joined on External id) and that op's place on its thread's timeline:

1. the innermost module scope around the op (innermost module wins);
2. else, on autograd's side, the backward node around the op (an op with a "Sequence number"
   and a nonzero "Fwd thread id"): the forward op that created node s is the last forward op
   that carries sequence number s, and the backward work goes to that op's module;
3. else a pseudo-scope: `<optimizer>` inside an optimizer range (Optimizer.step#…,
   Optimizer.zero_grad#…, phase:optimizer), `<loss>` when the outermost op (or outermost module)
   is a loss computed outside the model, `<other>` for the rest.

Every interval query is vectorised: scopes are sorted per thread, each gets its nesting depth
from two searchsorted calls, and a point's innermost enclosing scope is the last scope of depth
D-1 that starts before it, where D is the number of scopes open at the point.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from addressable.core.files import read_yaml
from addressable.core.jsonutil import records
from addressable.trace.reader import lookup

SCOPES_FILE = Path(__file__).with_name("module_scopes.yaml")
OPTIMIZER, LOSS, OTHER = "<optimizer>", "<loss>", "<other>"
PSEUDO = (OPTIMIZER, LOSS, OTHER)
FORWARD, BACKWARD = "forward", "backward"
ROOT = "(root)"  # how the model's own (top-level) module is shown; its qualname is ""
NO_SCOPES_HINT = ("no module scopes in this trace: profile with `addressable profile` (it records them) "
                  "or capture with torch.profiler.profile(with_stack=True)")
DETAIL_COLUMNS = ["module", "module_class", "direction", "name", "category", "class", "time_us", "count"]
MODULE_COLUMNS = ["module", "module_class", "calls", "dispatch_us"]
BY_COLUMNS = ["module", "class", "time_us", "share", "replaceable_time_us", "library_time_us", "forward_time_us",
              "backward_time_us", "kernels", "calls", "dispatch_per_step_us", "categories"]
CANDIDATE_COLUMNS = ["scope", "module", "class", "time_per_step_us", "replaceable_per_step_us", "replaceable_share",
                     "share", "kernels", "calls", "kernels_per_call", "dispatch_per_step_us"]


@dataclass(frozen=True)
class ScopeRules:
    """module_scopes.yaml, compiled."""

    patterns: tuple[re.Pattern, ...]  # range name -> (qualname, cls) or (cls, instance)
    optimizer: re.Pattern
    loss_op: re.Pattern
    loss_module: re.Pattern
    backward_op: re.Pattern
    fusion_min_replaceable: float


@cache
def scope_rules(path: str | Path = SCOPES_FILE) -> ScopeRules:
    """The packaged rules for module-scope names and pseudo-scopes."""
    doc = read_yaml(Path(path), "module scopes")
    return ScopeRules(tuple(re.compile(p) for p in doc["module_patterns"]), re.compile(doc["optimizer"]),
                      re.compile(doc["loss_op"]), re.compile(doc["loss_module"]), re.compile(doc["backward_op"]),
                      float(doc["fusion_min_replaceable"]))


# ---------------------------------------------------------------------------------------------
# Interval nesting (one thread's ranges, properly nested)


@dataclass
class _Nest:
    """One thread's ranges sorted by (start, longer first), with each range's nesting depth."""

    index: np.ndarray  # the ranges' own ids, in sorted order
    start: np.ndarray
    end: np.ndarray
    depth: np.ndarray
    end_sorted: np.ndarray
    by_depth: list[np.ndarray]  # sorted positions of the ranges of each depth

    @classmethod
    def build(cls, index: np.ndarray, start: np.ndarray, end: np.ndarray) -> _Nest:
        keep = end > start
        index, start, end = index[keep], start[keep], end[keep]
        order = np.lexsort((-end, start))
        index, start, end = index[order], start[order], end[order]
        end_sorted = np.sort(end)
        # ranges open when range p starts = ranges started before it minus ranges ended by then
        depth = np.arange(len(start)) - np.searchsorted(end_sorted, start, side="right")
        depth = np.clip(depth, 0, None)
        levels = [np.flatnonzero(depth == d) for d in range(int(depth.max(initial=-1)) + 1)]
        return cls(index, start, end, depth, end_sorted, levels)

    def enclosing(self, t: np.ndarray, outermost: bool = False) -> np.ndarray:
        """Id of the innermost (or outermost) range with start <= t < end, -1 where none."""
        out = np.full(len(t), -1, dtype=np.int64)
        if not len(self.start) or not len(t):
            return out
        open_ = np.searchsorted(self.start, t, side="right") - np.searchsorted(self.end_sorted, t, side="right")
        want = np.zeros_like(open_) if outermost else open_ - 1
        for d, pos in enumerate(self.by_depth):
            q = np.flatnonzero((want == d) & (open_ > 0))
            if not len(q):
                continue
            k = np.searchsorted(self.start[pos], t[q], side="right") - 1
            ok = k >= 0
            p = pos[np.clip(k, 0, None)]
            ok &= (self.start[p] <= t[q]) & (t[q] < self.end[p])  # guards against ranges that overlap
            out[q[ok]] = self.index[p[ok]]
        return out


def _column(df: pd.DataFrame, name: str) -> np.ndarray:
    """An integer column as int64, -1 where missing."""
    col = df[name]
    if isinstance(col.dtype, pd.CategoricalDtype) or col.dtype == object:
        col = pd.to_numeric(col, errors="coerce")
    return col.to_numpy(dtype=np.float64, na_value=-1).astype(np.int64)


def _thread_keys(df: pd.DataFrame) -> np.ndarray:
    return (_column(df, "pid") << 32) ^ (_column(df, "tid") & 0xFFFFFFFF)


@dataclass
class Ranges:
    """CPU ranges as arrays: thread key, start and end."""

    key: np.ndarray
    start: np.ndarray
    end: np.ndarray

    @classmethod
    def of(cls, df: pd.DataFrame) -> Ranges:
        """The ranges of events (ts, dur, pid, tid)."""
        start = df["ts"].to_numpy(np.float64)
        return cls(_thread_keys(df), start, start + df["dur"].to_numpy(np.float64))

    def take(self, mask: np.ndarray) -> Ranges:
        return Ranges(self.key[mask], self.start[mask], self.end[mask])


def enclosing(ranges: Ranges | pd.DataFrame, threads: np.ndarray, t: np.ndarray, outermost: bool = False) -> np.ndarray:
    """For points (thread key, time): the position in `ranges` of the innermost (or outermost) range on
    the same thread that holds the point, -1 where none."""
    r = ranges if isinstance(ranges, Ranges) else Ranges.of(ranges)
    out = np.full(len(t), -1, dtype=np.int64)
    if not len(r.start) or not len(t):
        return out
    ids = np.arange(len(r.start))
    for key in np.intersect1d(np.unique(r.key), np.unique(threads)):
        mine = r.key == key
        q = np.flatnonzero(threads == key)
        out[q] = _Nest.build(ids[mine], r.start[mine], r.end[mine]).enclosing(t[q], outermost)
    return out


def _name_mask(names: pd.Series, pattern: re.Pattern) -> np.ndarray:
    """Which (categorical) names match a regex; each distinct name is matched once."""
    cat = names.astype("category").cat
    hit = np.array([bool(pattern.search(str(n))) for n in cat.categories] + [False])
    return hit[cat.codes.to_numpy()]


# ---------------------------------------------------------------------------------------------
# Scopes of a trace


def scope_ranges(events: pd.DataFrame, rules: ScopeRules | None = None) -> pd.DataFrame:
    """The module-scope ranges of a trace: ts, dur, pid, tid, module (qualified name), module_class.

    Names written by with_stack=True (`nn.Module: Linear_3`) carry no attribute path, so their
    qualified name is the chain of enclosing module instances, e.g. `Sequential_0.Blk_1.Linear_1`.
    A top-level module whose class is a loss (e.g. CrossEntropyLoss called outside the model) is
    the `<loss>` pseudo-scope.
    """
    rules = rules or scope_rules()
    ann = events[events["kind"] == "cpu_annotation"]
    codes, uniq = pd.factorize(ann["name"].astype(str).to_numpy())
    parsed = [_parse_scope(n, rules) for n in uniq]  # each distinct range name is parsed once
    ok = np.array([p is not None for p in parsed] + [False])
    hit = ok[codes]
    scopes = ann[hit][["ts", "dur", "pid", "tid"]].reset_index(drop=True)
    if scopes.empty:
        return scopes.assign(module=pd.Series(dtype=str), module_class=pd.Series(dtype=str))
    table = pd.DataFrame([p or ("", "", "", False, False) for p in parsed],
                         columns=["qual", "label", "cls", "explicit", "loss"]).iloc[codes[hit]]
    qual, label, cls = (table[c].to_numpy(dtype=object) for c in ("qual", "label", "cls"))
    explicit, is_loss = table["explicit"].to_numpy(bool), table["loss"].to_numpy(bool)
    keys = _thread_keys(scopes)
    start = scopes["ts"].to_numpy(np.float64)
    end = start + scopes["dur"].to_numpy(np.float64)
    parent = np.full(len(scopes), -1, dtype=np.int64)
    depth = np.zeros(len(scopes), dtype=np.int64)
    for key in np.unique(keys):
        mine = np.flatnonzero(keys == key)
        nest = _Nest.build(mine, start[mine], end[mine])
        depth[nest.index] = nest.depth
        # a range's parent is the innermost range open just after it starts, other than itself
        for d in range(1, len(nest.by_depth)):
            pos = nest.by_depth[d]
            up = nest.by_depth[d - 1]
            k = np.searchsorted(up, pos) - 1
            parent[nest.index[pos[k >= 0]]] = nest.index[up[k[k >= 0]]]
    # with_stack names: qualified name = path of enclosing instances, built one depth at a time
    path = np.where(explicit, qual, label).astype(object)
    for d in range(1, int(depth.max(initial=0)) + 1):
        sel = np.flatnonzero((depth == d) & ~explicit & (parent >= 0))
        path[sel] = [f"{a}.{b}" for a, b in zip(path[parent[sel]], label[sel], strict=True)]
    loss = (depth == 0) & is_loss
    return scopes.assign(module=np.where(loss, LOSS, path).astype(str),
                         module_class=np.where(loss, LOSS, cls).astype(str))


def _parse_scope(name: str, rules: ScopeRules) -> tuple[str, str, str, bool, bool] | None:
    """(qualname, instance label, class, qualname given?, loss class?) of a module-scope name, else None."""
    for p in rules.patterns:
        if m := p.match(name):
            g = m.groupdict()
            cls = g["cls"]
            label = cls if "qualname" in g else f"{cls}_{g['instance']}"
            return g.get("qualname") or "", label, cls, "qualname" in g, bool(rules.loss_module.search(cls))
    return None


@dataclass
class Attribution:
    """Module, class and direction of each work row, and the calls and CPU dispatch time per module."""

    rows: pd.DataFrame  # the work rows with module, module_class, direction
    modules: pd.DataFrame  # module, module_class, calls, dispatch_us (every module seen, and pseudo-scopes)
    has_scopes: bool


def attribute(events: pd.DataFrame, rows: pd.DataFrame, gpu: bool, rules: ScopeRules | None = None) -> Attribution:
    """Attribute classified work rows to modules (see the module docstring).

    GPU rows go through their launching CPU op (External id); CPU rows (CPU-only traces) are ops.
    """
    rules = rules or scope_rules()
    scopes = scope_ranges(events, rules)
    ops = events[events["kind"] == "cpu_op"]
    op_pos = pd.Series(np.arange(len(ops)), index=ops.index)
    if gpu:
        ext = ops["external_id"]
        has = ext.notna().to_numpy()
        ids, pos = ext[has].astype("int64").to_numpy(), np.arange(len(ops))[has]
        last = ~pd.Series(ids).duplicated(keep="last").to_numpy()  # the innermost op of an External id
        want = rows["external_id"].astype("Int64")
        op, found = lookup(ids[last], pos[last], want.to_numpy(np.int64, na_value=0))
        launch = np.where(found & want.notna().to_numpy(), op, -1)
    else:
        launch = op_pos.reindex(rows.index).fillna(-1).to_numpy(np.int64)
    op_ranges = Ranges.of(ops)
    mid = (op_ranges.start + op_ranges.end) / 2
    root = enclosing(op_ranges, op_ranges.key, mid, outermost=True)  # each op's outermost op
    labels, direction = _label_ops(ops, op_ranges, mid, root, scopes, _optimizer_ranges(events, rules), rules)
    found = launch >= 0
    module = np.full(len(rows), OTHER, dtype=object)
    mclass = np.full(len(rows), OTHER, dtype=object)
    where = np.full(len(rows), FORWARD, dtype=object)
    module[found], mclass[found] = labels[0][launch[found]], labels[1][launch[found]]
    where[found] = direction[launch[found]]
    out = rows.assign(module=module, module_class=mclass, direction=where)  # object arrays of str: no fixed-width copy
    return Attribution(out, _module_table(ops, root, scopes, labels), not scopes.empty)


def _label_ops(ops: pd.DataFrame, r: Ranges, mid: np.ndarray, root: np.ndarray, scopes: pd.DataFrame,
               optimizer: pd.DataFrame, rules: ScopeRules) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    """(module, class) and direction of every CPU op (mid: its midpoint, root: its outermost op)."""
    keys = r.key
    # pseudo-scopes first, then modules over them, then backward nodes for ops outside every module
    module = np.full(len(ops), OTHER, dtype=object)
    mclass = np.full(len(ops), OTHER, dtype=object)
    is_loss = (root >= 0) & _name_mask(ops["name"], rules.loss_op)[np.clip(root, 0, None)]
    module[is_loss] = mclass[is_loss] = LOSS
    in_opt = enclosing(optimizer, keys, mid) >= 0
    module[in_opt] = mclass[in_opt] = OPTIMIZER
    scope = enclosing(scopes, keys, mid)
    inside = scope >= 0
    module[inside] = scopes["module"].to_numpy()[scope[inside]]
    mclass[inside] = scopes["module_class"].to_numpy()[scope[inside]]

    nan = np.full(len(ops), np.nan)
    seq = ops["sequence"].to_numpy(np.float64) if "sequence" in ops else nan
    fwd = ops["fwd_thread"].to_numpy(np.float64) if "fwd_thread" in ops else nan
    node = (seq >= 0) & (fwd > 0)  # autograd backward nodes
    direction = np.full(len(ops), FORWARD, dtype=object)
    engine = _name_mask(ops["name"], rules.backward_op)
    direction[enclosing(r.take(node | engine), keys, mid) >= 0] = BACKWARD
    if node.any():
        b = enclosing(r.take(node), keys, mid)
        bwd = (b >= 0) & ~inside
        # forward op that created node s: the last op with sequence number s on a forward thread
        fwd_ops = np.flatnonzero((seq >= 0) & (fwd == 0))
        last = pd.Series(fwd_ops, index=seq[fwd_ops]).groupby(level=0).max()
        creator = pd.Series(seq[node][b[bwd]]).map(last).fillna(-1).to_numpy(np.int64)
        sel = np.flatnonzero(bwd)
        ok = creator >= 0
        module[sel[ok]] = module[creator[ok]]
        mclass[sel[ok]] = mclass[creator[ok]]
    return (module, mclass), direction  # object arrays of str: astype(str) would copy them at fixed width


def backward_nodes(events: pd.DataFrame, calls: pd.DataFrame) -> pd.DataFrame:
    """The backward of forward `calls` (CPU ranges: ts, dur, pid, tid, one per call): the outermost autograd
    node ops (a "Sequence number" and a nonzero "Fwd thread id") whose sequence number a forward op inside a
    call carries (inner ranges' ops included), as ts, dur, pid, tid and `call` (the position in `calls`)."""
    cols = ["ts", "dur", "pid", "tid", "call"]
    ops = events[(events["kind"] == "cpu_op").to_numpy()]
    if calls.empty or "sequence" not in ops or "fwd_thread" not in ops:
        return pd.DataFrame(columns=cols)
    seq = ops["sequence"].to_numpy(np.float64)
    fwd = ops["fwd_thread"].to_numpy(np.float64)
    r = Ranges.of(ops)
    mid = (r.start + r.end) / 2
    forward = np.flatnonzero((seq >= 0) & ~(fwd > 0))
    call = enclosing(calls, r.key[forward], mid[forward], outermost=True)
    made = pd.Series(call[call >= 0], index=seq[forward][call >= 0])
    made = made[~made.index.duplicated(keep="last")]  # the last forward op with the number made the node
    node = np.flatnonzero((seq >= 0) & (fwd > 0))
    outer = enclosing(r.take(node), r.key[node], mid[node], outermost=True) == np.arange(len(node))
    node = node[outer]
    owner = pd.Series(seq[node]).map(made).to_numpy(np.float64)
    keep = ~np.isnan(owner)
    out = ops.iloc[node[keep]][["ts", "dur", "pid", "tid"]].reset_index(drop=True)
    return out.assign(call=owner[keep].astype(np.int64))


def backward_spans(nodes: pd.DataFrame) -> pd.DataFrame:
    """Per forward call, the span of its backward nodes (`backward_nodes`): from the first one's start to the
    last one's end on their thread (ts, dur, pid, tid, call), what capture.scopes.ModuleBackwardCpu times."""
    if nodes.empty:
        return pd.DataFrame(columns=["ts", "dur", "pid", "tid", "call"])
    end = nodes["ts"] + nodes["dur"]
    g = nodes.assign(end=end).groupby(["call", "pid", "tid"], as_index=False).agg(ts=("ts", "min"), end=("end", "max"))
    return g.assign(dur=g["end"] - g["ts"])[["ts", "dur", "pid", "tid", "call"]]


def _optimizer_ranges(events: pd.DataFrame, rules: ScopeRules) -> pd.DataFrame:
    """CPU ranges that mark optimizer work (Optimizer.step#…, phase:optimizer), annotations or ops."""
    ranges = events[events["kind"].isin(["cpu_annotation", "cpu_op"])]
    return ranges[_name_mask(ranges["name"], rules.optimizer)][["ts", "dur", "pid", "tid"]]


def _module_table(ops: pd.DataFrame, root: np.ndarray, scopes: pd.DataFrame, labels: tuple[np.ndarray, np.ndarray]
                  ) -> pd.DataFrame:
    """Calls (module-scope ranges) and CPU dispatch time (outermost CPU ops' time) per module."""
    calls = scopes.groupby(["module", "module_class"], sort=False).size().rename("calls")
    top = root == np.arange(len(ops))
    disp = (pd.DataFrame({"module": labels[0][top], "module_class": labels[1][top],
                          "dispatch_us": ops["dur"].to_numpy(np.float64)[top]})
            .groupby(["module", "module_class"], sort=False)["dispatch_us"].sum())
    out = pd.concat([calls, disp], axis=1).fillna(0.0).reset_index()
    out["calls"] = out["calls"].astype(np.int64)
    return out[MODULE_COLUMNS]


# ---------------------------------------------------------------------------------------------
# Breakdown by module


@dataclass
class ModuleBreakdown:
    """Work time by module: the detail table and the module table, and what is derived from them."""

    detail: pd.DataFrame  # DETAIL_COLUMNS: time per (module, direction, kernel name)
    modules: pd.DataFrame  # MODULE_COLUMNS: every module seen
    total_time_us: float
    n_steps: int = 1
    basis: str = ""
    has_scopes: bool = True
    note: str = NO_SCOPES_HINT  # what to say when there are no scopes
    min_replaceable: float = field(default_factory=lambda: scope_rules().fusion_min_replaceable)

    @property
    def coverage(self) -> float:
        """Share of work time attributed to a real module (pseudo-scopes excluded)."""
        real = ~self.detail["module"].isin(PSEUDO)
        return float(self.detail.loc[real, "time_us"].sum() / self.total_time_us) if self.total_time_us else 0.0

    def by(self, key: str = "name") -> pd.DataFrame:
        """One row per module (key "name": qualified name) or per module class (key "class").

        Columns: module, class, time_us, share, replaceable_time_us, library_time_us,
        forward_time_us, backward_time_us, kernels (launches per step), calls (per step),
        dispatch_per_step_us (outermost CPU ops' time), categories {category: µs}. Times are over
        all steps, like the breakdown's; counts and dispatch time are per step. Sorted by time.
        """
        cols = ["module", "module_class"] if key == "name" else ["module_class"]
        d = self.detail
        if d.empty:
            return pd.DataFrame(columns=BY_COLUMNS)
        t = d["time_us"]
        parts = pd.DataFrame({**{c: d[c] for c in cols}, "time_us": t, "count": d["count"],
                              "replaceable_time_us": t.where(d["class"] == "replaceable", 0.0),
                              "library_time_us": t.where(d["class"] == "library", 0.0),
                              "forward_time_us": t.where(d["direction"] == FORWARD, 0.0),
                              "backward_time_us": t.where(d["direction"] == BACKWARD, 0.0)})
        out = parts.groupby(cols, sort=False).sum()
        cats = d.groupby([*cols, "category"], sort=False)["time_us"].sum()
        per = cats.reset_index().groupby(cols, sort=False)
        out["categories"] = per.apply(lambda g: dict(zip(g["category"], g["time_us"].astype(float), strict=True)),
                                      include_groups=False)
        m = self.modules.groupby(cols, sort=False)[["calls", "dispatch_us"]].sum()
        out = out.join(m, how="outer").fillna({"time_us": 0.0, "count": 0, "calls": 0, "dispatch_us": 0.0,
                                               "replaceable_time_us": 0.0, "library_time_us": 0.0,
                                               "forward_time_us": 0.0, "backward_time_us": 0.0})
        out["categories"] = out["categories"].apply(lambda c: c if isinstance(c, dict) else {})
        out = out.reset_index()
        n = max(self.n_steps, 1)
        out["share"] = out["time_us"] / self.total_time_us if self.total_time_us else 0.0
        out["kernels"] = out.pop("count") / n
        out["calls"] = out["calls"] / n
        out["dispatch_per_step_us"] = out.pop("dispatch_us") / n
        if key == "name":
            out = out.rename(columns={"module_class": "class"})
        else:
            out["module"] = out["module_class"]
            out = out.rename(columns={"module_class": "class"})
        out = out.sort_values("time_us", ascending=False, kind="stable").reset_index(drop=True)
        return out[BY_COLUMNS]

    def inclusive(self) -> pd.DataFrame:
        """Per real module: its time with all its submodules' (what replacing the whole module covers).

        Columns: module, class, depth (0: a top-level module), time_us, replaceable_time_us,
        kernels, calls, dispatch_us, all per step.
        """
        n = max(self.n_steps, 1)
        d = self.detail[~self.detail["module"].isin(PSEUDO)]
        d = d.assign(repl=d["time_us"].where(d["class"] == "replaceable", 0.0))
        own = d.groupby("module", sort=False)[["time_us", "repl", "count"]].sum()
        mods = self.modules[~self.modules["module"].isin(PSEUDO)].set_index("module")
        own = own.join(mods["dispatch_us"], how="outer").fillna(0.0)
        anc = ancestors(own.index)
        inc = anc.join(own, on="module").groupby("ancestor", sort=False)[["time_us", "repl", "count",
                                                                             "dispatch_us"]].sum()
        out = mods[["module_class", "calls"]].join(inc, how="inner").rename_axis("module").reset_index()
        tops = set(mods.index) - set(anc.loc[anc["ancestor"] != anc["module"], "module"])
        parents = anc[(anc["ancestor"] != anc["module"]) & anc["ancestor"].isin(mods.index)]
        depth = parents.groupby("module").size()
        return pd.DataFrame({
            "module": out["module"], "class": out["module_class"],
            "depth": out["module"].map(depth).fillna(0).astype(int).where(~out["module"].isin(tops), 0),
            "time_us": out["time_us"] / n, "replaceable_time_us": out["repl"] / n, "kernels": out["count"] / n,
            "calls": out["calls"] / n, "dispatch_us": out["dispatch_us"] / n})

    def fusion_candidates(self, top: int = 10) -> pd.DataFrame:
        """Module classes and modules whose kernels are all or mostly replaceable, by replaceable time.

        Time includes submodules (a fused kernel replaces the whole module); all per step.
        kernels_per_call = kernels / calls. Top-level modules (the model itself) are left out,
        and so is a module inside another candidate; `<loss>` is listed when it qualifies. The
        `top` classes come first, then the `top` modules.
        """
        inc = self.inclusive()
        inc = inc[(inc["time_us"] > 0) & (inc["depth"] > 0)]
        loss = self.by("name")
        loss = loss[loss["module"] == LOSS]
        n = max(self.n_steps, 1)
        if not loss.empty:
            inc = pd.concat([inc, pd.DataFrame({
                "module": [LOSS], "class": [LOSS], "depth": [0], "time_us": loss["time_us"].to_numpy() / n,
                "replaceable_time_us": loss["replaceable_time_us"].to_numpy() / n,
                "kernels": loss["kernels"].to_numpy(), "calls": [np.nan],
                "dispatch_us": loss["dispatch_per_step_us"].to_numpy()})], ignore_index=True)
        mostly = inc["replaceable_time_us"] >= self.min_replaceable * inc["time_us"]
        ok = inc[mostly]
        listed = set(ok["module"])
        outer = ok[np.array([not any(m.startswith(p + ".") for p in listed if p != m) for m in ok["module"]],
                            dtype=bool)]
        by_class = inc[inc["class"].isin(set(outer["class"]))].groupby("class", sort=False)[
            ["time_us", "replaceable_time_us", "kernels", "calls", "dispatch_us"]].sum(min_count=1).reset_index()
        by_class = by_class[by_class["replaceable_time_us"] >= self.min_replaceable * by_class["time_us"]]
        by_class = by_class[by_class["class"] != LOSS]
        total = self.total_time_us / n
        parts = []
        for scope, df in (("class", by_class.assign(module=by_class["class"])), ("module", outer)):
            df = df.assign(scope=scope, replaceable_share=df["replaceable_time_us"] / df["time_us"],
                           share=df["time_us"] / total if total else 0.0,
                           kernels_per_call=(df["kernels"] / df["calls"]).where(df["calls"] > 0))
            parts.append(df.sort_values("replaceable_time_us", ascending=False, kind="stable").head(top))
        out = pd.concat(parts, ignore_index=True) if any(len(p) for p in parts) else pd.DataFrame(
            columns=["scope", "module", "class", "time_us", "replaceable_time_us", "replaceable_share", "share",
                     "kernels", "calls", "kernels_per_call", "dispatch_us"])
        out = out.rename(columns={"time_us": "time_per_step_us", "replaceable_time_us": "replaceable_per_step_us",
                                  "dispatch_us": "dispatch_per_step_us"})
        return out[CANDIDATE_COLUMNS].reset_index(drop=True)

    def to_dict(self, top: int = 10) -> dict[str, Any]:
        """The `modules` key of breakdown.json."""
        if not self.has_scopes:
            return {"coverage": 0.0, "note": self.note}
        def items(df: pd.DataFrame) -> list[dict[str, Any]]:
            return records(df, nan_as=None)
        return {"coverage": self.coverage, "n_steps": self.n_steps,
                "by_class": items(self.by("class")), "by_name": items(self.by("name")),
                "fusion_candidates": items(self.fusion_candidates(top))}


def ancestors(modules: Iterable[str]) -> pd.DataFrame:
    """Each real module with every module it is inside, itself included: columns module, ancestor.

    Ancestors are the dotted prefixes of the qualified name, and "" (the model itself, as
    `addressable profile` names it).
    """
    rows = []
    for m in modules:
        if m in PSEUDO:
            continue
        parts = m.split(".") if m else []
        rows += [(m, ".".join(parts[:i])) for i in range(len(parts) + 1)]
    return pd.DataFrame(rows, columns=["module", "ancestor"])


def module_breakdown(attribution: Attribution, total_time_us: float, n_steps: int | None, basis: str = ""
                     ) -> ModuleBreakdown:
    """Aggregate attributed work rows into a ModuleBreakdown."""
    r = attribution.rows
    detail = (r.groupby(["module", "module_class", "direction", "name", "category", "class"], observed=True,
                        sort=False)["dur"].agg(time_us="sum", count="size").reset_index())
    detail = detail.astype({c: str for c in ("module", "module_class", "direction", "name", "category", "class")})
    return ModuleBreakdown(detail[DETAIL_COLUMNS], attribution.modules, float(total_time_us), n_steps or 1, basis,
                           attribution.has_scopes)


def combine_modules(parts: list[ModuleBreakdown], n_steps: int) -> ModuleBreakdown:
    """One ModuleBreakdown over the profiled steps of several traces."""
    detail = (pd.concat([p.detail for p in parts], ignore_index=True)
              .groupby(DETAIL_COLUMNS[:6], sort=False)[["time_us", "count"]].sum().reset_index())
    mods = (pd.concat([p.modules for p in parts], ignore_index=True)
            .groupby(["module", "module_class"], sort=False)[["calls", "dispatch_us"]].sum().reset_index())
    return ModuleBreakdown(detail, mods, sum(p.total_time_us for p in parts), n_steps, parts[0].basis,
                           all(p.has_scopes for p in parts))


# ---------------------------------------------------------------------------------------------
# Module targets (wins.csv `module:CLASS`, `module:GLOB`, with @forward / @backward)


MODULE_PREFIX = "module:"


@dataclass(frozen=True)
class ModuleTarget:
    """A parsed `module:` target: a class name or a glob over qualified names, and a direction."""

    pattern: str
    direction: str | None = None  # forward, backward or None (both)

    @classmethod
    def parse(cls, target: str) -> ModuleTarget:
        body = target[len(MODULE_PREFIX):].strip()
        direction = None
        if "@" in body:
            body, _, direction = body.rpartition("@")
            direction = direction.strip().lower()
            if direction not in (FORWARD, BACKWARD):
                raise ValueError(f"'@{direction}' is not @forward or @backward")
        if not body:
            raise ValueError("empty module name")
        return cls(body.strip(), direction)

    def heads(self, modules: pd.DataFrame) -> set[str]:
        """Qualified names of the modules the target names: of its class, else matching its glob."""
        real = modules[~modules["module"].isin(PSEUDO)]
        heads = set(real.loc[real["module_class"] == self.pattern, "module"])
        heads = heads or {m for m in real["module"] if fnmatch.fnmatchcase(m or ROOT, self.pattern)}
        anc = ancestors(heads)
        inner = anc.loc[(anc["ancestor"] != anc["module"]) & anc["ancestor"].isin(heads), "module"]
        return heads - set(inner)  # a matching module inside another is covered by it

    def matches(self, detail: pd.DataFrame, modules: pd.DataFrame) -> np.ndarray:
        """Mask of detail rows inside a matching module (see heads), in the target's direction."""
        heads = self.heads(modules)
        anc = ancestors(pd.unique(detail["module"]))
        inside = set(anc.loc[anc["ancestor"].isin(heads), "module"])
        hit = detail["module"].isin(inside).to_numpy().copy()
        if self.direction:
            hit &= detail["direction"].to_numpy(dtype=str) == self.direction
        return hit


def format_modules(mb: ModuleBreakdown, by: str = "name", top: int = 15) -> str:
    """The `addressable modules` table: top modules (or module classes) by time, then the top fusion
    candidates (at most `top`, and at most 10 classes and 10 modules)."""
    if not mb.has_scopes:
        return mb.note
    unit = "kernels" if mb.basis != "cpu_op_time" else "CPU ops"
    basis = "GPU kernel time" if mb.basis != "cpu_op_time" else "CPU-op self time"
    t = mb.by(by).head(top)
    n = max(mb.n_steps, 1)
    def second(text: str) -> str:  # the class column; by class the first column is the class already
        return f"{_cut(text, 21):<22}" if by == "name" else ""

    lines = [f"Attributed to a module: {mb.coverage:.1%} of {basis} "
             f"({mb.total_time_us / n / 1e3:,.3f} ms per step over {mb.n_steps} step(s)); the rest is in "
             f"{', '.join(PSEUDO)}.", "",
             f"{'module' if by == 'name' else 'class':<44}{second('class')}{'ms/step':>10}{'share':>7}{'repl.':>7}"
             f"{unit + '/step':>14}{'calls':>7}{'CPU ms':>10}"]
    for name, cls, time, share, repl, kernels, calls, cpu in zip(
            t["module"], t["class"], t["time_us"], t["share"], t["replaceable_time_us"], t["kernels"], t["calls"],
            t["dispatch_per_step_us"], strict=True):
        lines.append(f"{_cut(name or ROOT, 43):<44}{second(cls)}{time / n / 1e3:>10.3f}{share:>7.1%}"
                     f"{repl / time if time else 0.0:>7.0%}{kernels:>14.1f}{calls:>7.1f}{cpu / 1e3:>10.3f}")
    lines += ["", *format_candidates(mb.fusion_candidates(10).head(top), unit)]
    return "\n".join(lines)


def format_candidates(c: pd.DataFrame, unit: str = "kernels") -> list[str]:
    """Lines listing fusion candidates (shared by `modules` and the profile summary)."""
    if c.empty:
        return ["Top fusion candidates: none (no module is mostly replaceable work)"]
    lines = ["Top fusion candidates (modules whose work is mostly replaceable; time includes submodules):",
             f"  {'scope':<7}{'module / class':<42}{'ms/step':>9}{'repl.':>7}{unit + '/step':>14}"
             f"{'/call':>7}{'CPU ms/step':>13}"]
    for r in c.itertuples():
        name = ROOT if r.module == "" else r.module
        per_call = "-" if pd.isna(r.kernels_per_call) else f"{r.kernels_per_call:.1f}"
        lines.append(f"  {r.scope:<7}{_cut(name, 41):<42}{r.time_per_step_us / 1e3:>9.3f}{r.replaceable_share:>7.0%}"
                     f"{r.kernels:>14.1f}{per_call:>7}{r.dispatch_per_step_us / 1e3:>13.3f}")
    return lines


def _cut(s: str, n: int) -> str:
    return s if len(s) <= n else "…" + s[-(n - 1):]
