"""Classify whatever PATHS name: the library form of `addressable classify PATHS`.

One trace file gives one Breakdown (classify_trace); several files, folders or globs (or any engine
option) give the ranks of one job (ranks.classify_job); `explain` gives, for one trace, how each
matching kernel was classified (breakdown.explain). `runs.folder.write_classified` writes the result,
`report.text.format_classified` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from addressable.classify.breakdown import BASIS_CPU, Breakdown, classify_trace, explain
from addressable.classify.ranks import JobResult, classify_job
from addressable.classify.taxonomy import Taxonomy, load_taxonomy
from addressable.core.errors import AddressableError
from addressable.trace.reader import load_trace

BASES = ("summed", "exposed", "cpu")


@dataclass
class Classified:
    """What `classify_paths` found: one of an explain table, one trace's Breakdown, or a job's ranks."""

    basis: str = "summed"  # the basis asked for: summed, exposed (also overlap-aware times) or cpu
    breakdown: Breakdown | None = None
    job: JobResult | None = None
    explained: pd.DataFrame | None = None

    def messages(self) -> list[str]:
        """The lines for stderr: one per file that failed, then one per warning."""
        if self.breakdown is not None:
            lines = [w for w in [basis_warning(self.breakdown, self.basis), *self.breakdown.warnings] if w]
            return [f"warning: {w}" for w in lines]
        if self.job is None:
            return []
        errors = [f"error: {e.error if Path(e.file).name in e.error else f'{e.file}: {e.error}'}"
                  for e in self.job.errors]
        return errors + [f"warning: {w}" for w in self.job.warnings]

    @property
    def failed(self) -> bool:
        """True when some file could not be classified (the command then exits 2)."""
        return self.job is not None and bool(self.job.errors)


def basis_warning(b: Breakdown, asked_basis: str) -> str:
    """Why classify's --basis changes nothing for this breakdown; "" when it applies."""
    if asked_basis == "exposed" and b.basis != "gpu_kernel_time":
        return ("--basis exposed splits the time of kernels that overlap on GPU streams; this trace has no GPU "
                "kernels, so its CPU-op self times are shown unchanged")
    return ""


def classify_paths(paths: tuple[str, ...] | list[str], taxonomy: Taxonomy | str | Path | None = None,
                   classes: dict[str, str] | None = None, *, basis: str = "summed", jobs: int | None = None,
                   engine: str | None = None, scheduler: str | None = None,
                   explain_pattern: str | None = None) -> Classified:
    """Classify one trace, or several as the ranks of one job, or explain one trace's matching kernels.

    One existing file and no engine option (jobs, engine, scheduler): one Breakdown, on the CPU-op
    basis when `basis` is "cpu"; anything else: classify_job. Bad input raises AddressableError.
    """
    if basis not in BASES:
        raise AddressableError(f"unknown basis {basis!r} (choose from {', '.join(BASES)})")
    if explain_pattern is not None:
        if len(paths) != 1 or not Path(paths[0]).is_file():
            raise AddressableError("--explain takes one trace file")
        tax = (taxonomy if isinstance(taxonomy, Taxonomy) else load_taxonomy(taxonomy)).with_classes(classes or {})
        return Classified(basis, explained=explain(load_trace(paths[0]), tax, explain_pattern))
    if len(paths) == 1 and Path(paths[0]).is_file() and not (engine or scheduler or jobs):
        b = classify_trace(paths[0], taxonomy, classes, basis=BASIS_CPU if basis == "cpu" else None)
        return Classified(basis, breakdown=b)
    return Classified(basis, job=classify_job(paths, taxonomy, classes, jobs=jobs, engine=engine,
                                              scheduler=scheduler))
