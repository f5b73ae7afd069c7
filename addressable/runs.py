"""Run folders on disk: writing a breakdown, and reading runs back for projection and plots."""

from __future__ import annotations

import json
from pathlib import Path

from addressable.atomic import write_text
from addressable.breakdown import Breakdown


def write_breakdown(b: Breakdown, out: str | Path, extra: dict | None = None) -> Path:
    """Write breakdown.json, categories.csv and kernels.csv into folder `out` (each atomically)."""
    out = Path(out)
    doc = b.to_dict()
    if extra:
        doc.update(extra)
    write_text(out / "breakdown.json", json.dumps(doc, indent=2, default=str) + "\n")
    write_text(out / "categories.csv", b.categories.to_csv(index=False))
    write_text(out / "kernels.csv", b.kernels.to_csv(index=False))
    return out
