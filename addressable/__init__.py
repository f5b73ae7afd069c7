"""addressable: how much of a GPU workload can a new kernel touch, and what does a speedup buy?

The pipeline, one subpackage per stage (docs/CONVENTIONS.md draws the tree and its contracts):

    capture -> trace -> classify -> runs -> roofline, projection -> report
    verification -> dlrm_bench        core: below them all

The main entry point of each stage is importable from here, so a notebook needs one import::

    import addressable
    b = addressable.classify_trace("trace.json.gz")
    p = addressable.project(addressable.load_runs("outputs"), "wins.csv")

Names load on first use: `import addressable` alone imports no stage (nor torch or matplotlib).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the module that defines it
_EXPORTS = {
    "AddressableError": "addressable.core.errors",
    "Trace": "addressable.trace.reader",
    "load_trace": "addressable.trace.reader",
    "Taxonomy": "addressable.classify.taxonomy",
    "load_taxonomy": "addressable.classify.taxonomy",
    "Breakdown": "addressable.classify.breakdown",
    "breakdown_of_trace": "addressable.classify.breakdown",
    "classify_trace": "addressable.classify.breakdown",
    "classify_job": "addressable.classify.ranks",
    "load_run": "addressable.runs.folder",
    "load_runs": "addressable.runs.folder",
    "load_modules": "addressable.runs.folder",
    "roofline_of_path": "addressable.roofline.model",
    "roofline_of_trace": "addressable.roofline.model",
    "load_wins": "addressable.projection.wins",
    "project": "addressable.projection.project",
    "compare": "addressable.projection.compare",
    "build_graph": "addressable.projection.replay",
    "replay": "addressable.projection.replay",
    "verify": "addressable.verification.runner",
    "verify_batch": "addressable.verification.runner",
    "audit": "addressable.verification.audit",
    "plot_runs": "addressable.report.plot",
    "resolve_config": "addressable.capture.profile",
    "profile_workload": "addressable.capture.profile",
    "measurement": "addressable.capture.measure",
    "sweep": "addressable.capture.sweep",
}

if TYPE_CHECKING:
    from addressable.capture.measure import measurement
    from addressable.capture.profile import profile_workload, resolve_config
    from addressable.capture.sweep import sweep
    from addressable.classify.breakdown import Breakdown, breakdown_of_trace, classify_trace
    from addressable.classify.ranks import classify_job
    from addressable.classify.taxonomy import Taxonomy, load_taxonomy
    from addressable.core.errors import AddressableError
    from addressable.projection.compare import compare
    from addressable.projection.project import project
    from addressable.projection.replay import build_graph, replay
    from addressable.projection.wins import load_wins
    from addressable.report.plot import plot_runs
    from addressable.roofline.model import roofline_of_path, roofline_of_trace
    from addressable.runs.folder import load_modules, load_run, load_runs
    from addressable.trace.reader import Trace, load_trace
    from addressable.verification.audit import audit
    from addressable.verification.runner import verify, verify_batch

__all__ = [
    "AddressableError",
    "Breakdown",
    "Taxonomy",
    "Trace",
    "audit",
    "breakdown_of_trace",
    "build_graph",
    "classify_job",
    "classify_trace",
    "compare",
    "load_modules",
    "load_run",
    "load_runs",
    "load_taxonomy",
    "load_trace",
    "load_wins",
    "measurement",
    "plot_runs",
    "profile_workload",
    "project",
    "replay",
    "resolve_config",
    "roofline_of_path",
    "roofline_of_trace",
    "sweep",
    "verify",
    "verify_batch",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'addressable' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
