"""How much of each trace the taxonomy classifies: the library form of `addressable coverage PATHS`.

What a user runs before trusting the numbers on a new stack: per trace, the share of work time no
rule claims (neither the kernel's name nor its launching op); across the traces, the unclassified
kernels with their launching op and a rule that would claim them. A file that cannot be read is a
row with its reason, not the end of the run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from addressable.classify.breakdown import BASIS_GPU, classify_events, gpu_launches, work_rows
from addressable.classify.ranks import TRACE_SUFFIXES, find_trace_files
from addressable.classify.taxonomy import UNCLASSIFIED, Taxonomy, load_taxonomy
from addressable.core.errors import AddressableError
from addressable.core.jsonutil import records
from addressable.trace.reader import load_trace

TRACE_COLUMNS = ["trace", "basis", "kernels", "time_us", "unclassified_us", "unclassified_share",
                 "by_launch_op_share", "error"]
NAME_COLUMNS = ["name", "op", "time_us", "max_trace_share", "traces", "suggested_rule"]
_NOT_TRACES = frozenset({"breakdown.json", "manifest.json", "module_io.json"})  # a run folder's own JSON
_GENERIC = frozenset({"at", "void", "std", "c10", "cuda", "torch", "native", "detail", "kernel", "kernels", "impl"})


@dataclass
class Coverage:
    """Per trace (`traces`, TRACE_COLUMNS), across them (`unclassified`, NAME_COLUMNS, worst first), and each
    trace's unclassified work (`missed`: trace, name, op, time_us, trace_share)."""

    traces: pd.DataFrame
    unclassified: pd.DataFrame
    missed: pd.DataFrame

    @property
    def measured(self) -> pd.DataFrame:
        """The traces that could be read."""
        return self.traces[self.traces["error"] == ""]

    def above(self, share: float) -> pd.DataFrame:
        """The traces read whose unclassified share is above `share`."""
        return self.measured[self.measured["unclassified_share"] > share]

    def to_dict(self, top: int = 20) -> dict[str, Any]:
        return {"traces": records(self.traces), "unclassified": records(self.unclassified.head(top))}


def coverage_files(paths: list[str] | tuple[str, ...]) -> list[Path]:
    """The traces named: files, globs, and every *.json / *.json.gz under a folder (recursively)."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += sorted(f.resolve() for f in p.rglob("*") if f.is_file() and _trace_name(f.name))
        else:
            found += find_trace_files([str(p)])
    if not found:
        raise AddressableError(f"no trace files (*.json, *.json.gz) under {', '.join(map(str, paths))}")
    return list(dict.fromkeys(found))


def _trace_name(name: str) -> bool:
    return name.endswith(TRACE_SUFFIXES) and not name.startswith(".") and name not in _NOT_TRACES


def coverage(paths: list[str] | tuple[str, ...], taxonomy: Taxonomy | str | Path | None = None) -> Coverage:
    """Classify every trace the paths name and measure what no rule claims.

    A trace that cannot be read is a row with its `error`; AddressableError when no trace is named or none
    could be read.
    """
    tax = taxonomy if isinstance(taxonomy, Taxonomy) else load_taxonomy(taxonomy)
    rows, missed = [], []
    files = coverage_files(paths)
    for path in files:
        try:
            row, un = trace_coverage(path, tax)
        except AddressableError as e:
            rows.append({"trace": str(path), "basis": "", "kernels": 0, "time_us": 0.0, "unclassified_us": 0.0,
                         "unclassified_share": float("nan"), "by_launch_op_share": float("nan"), "error": str(e)})
            continue
        rows.append(row)
        missed.append(un.assign(trace=str(path), trace_share=un["time_us"] / row["time_us"] if row["time_us"] else 0.0))
    if not missed:
        first = rows[0]["error"]
        raise AddressableError(first if len(files) == 1 else f"none of the {len(files)} traces could be read "
                               f"(first: {rows[0]['trace']}: {first})")
    per_trace = pd.concat(missed, ignore_index=True)
    return Coverage(pd.DataFrame(rows, columns=TRACE_COLUMNS), top_unclassified(per_trace, tax), per_trace)


def trace_coverage(path: str | Path, tax: Taxonomy) -> tuple[dict[str, Any], pd.DataFrame]:
    """One trace's row (TRACE_COLUMNS) and its unclassified work by name and launching op (name, op, time_us)."""
    trace = load_trace(path)
    if not trace.has_gpu_work and (n := gpu_launches(path)):
        raise AddressableError(f"{n:,} kernel launches but no kernel events (CUDA activity not recorded)")
    work, basis = work_rows(trace)
    classified = classify_events(work, tax, basis)
    total = float(classified["dur"].sum())
    un = classified[classified["category"] == UNCLASSIFIED]
    op = un["op"].astype(object).fillna("").astype(str) if "op" in un else pd.Series("", index=un.index)
    names = (un.assign(op=op, name=un["name"].astype(str)).groupby(["name", "op"], sort=False)["dur"]
             .sum().rename("time_us").reset_index())
    by_op = float(classified.loc[classified["signal"] == "launch_op", "dur"].sum()) if "signal" in classified else 0.0
    row = {"trace": str(path), "basis": basis, "kernels": len(classified) if basis == BASIS_GPU else 0,
           "time_us": total, "unclassified_us": float(names["time_us"].sum()),
           "unclassified_share": float(names["time_us"].sum()) / total if total else 0.0,
           "by_launch_op_share": by_op / total if total else 0.0, "error": ""}
    return row, names


def top_unclassified(missed: pd.DataFrame, tax: Taxonomy) -> pd.DataFrame:
    """The unclassified (name, op) pairs of all traces: summed time, largest share of one trace, trace count."""
    if missed.empty:
        return pd.DataFrame(columns=NAME_COLUMNS)
    out = (missed.groupby(["name", "op"], sort=False)
           .agg(time_us=("time_us", "sum"), max_trace_share=("trace_share", "max"), traces=("trace", "nunique"))
           .reset_index().sort_values(["max_trace_share", "time_us"], ascending=False, ignore_index=True))
    out["suggested_rule"] = [suggest_rule(n, o, tax) for n, o in zip(out["name"], out["op"], strict=True)]
    return out[NAME_COLUMNS]


def suggest_rule(name: str, op: str, tax: Taxonomy) -> str:
    """A rule that would claim this kernel and its kin: its namespace where it has one, else its name's stem;
    a launch_op rule for the op where the op is a library's own (not aten's)."""
    qualified = tax.parse(name).qualified
    parts = [p for p in qualified.split("::") if p and not p.startswith("(")]
    if len(parts) > 1 and parts[0] not in _GENERIC:
        pattern = "^" + re.escape("::".join(parts[:-1])) + "::"
    else:
        pattern = re.escape(re.sub(r"(_\d+)+$|\d+$", "", parts[-1] if parts else qualified))
    rule = f"kernel_rules: - {{category: CATEGORY, patterns: ['{pattern}']}}"
    if op and not op.startswith("aten::"):
        rule += f"; or launch_op_rules: - {{category: CATEGORY, patterns: ['^{re.escape(op)}$']}}"
    return rule
